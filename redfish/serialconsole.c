/*
 * The SSH serial console a BMC advertises: Manager.SerialConsole.SSH
 * (Redfish 2020.3, Manager v1_10), as OpenBMC does for its console on port
 * 2200. The SSH session itself is fleet/'s (host/ssh.c); this only reads
 * where it is.
 */
#include "redfish/rf.h"

int rf_console_ssh(struct rf_client *c, int *ret, struct gf_err *err)
{
	json_t *mgrs = NULL, *m;
	size_t i;
	int port = 0;
	int rc = rf_collection_of(c, c->root, "Managers", RF_WALK_FETCH, &mgrs, err);

	if (rc < 0)
		return rc;
	json_array_foreach(mgrs, i, m) {
		json_t *ssh = rf_get(m, "SerialConsole.SSH");
		double p;

		if (rf_bool(ssh, "ServiceEnabled") == 1 && rf_num(ssh, "Port", &p) && p > 0 &&
		    p < 65536) {
			port = (int)p;
			break;
		}
	}
	json_decref(mgrs);
	*ret = port;
	return 0;
}
