/*
 * Hardware facts: the main System (model, maker, serial, UUID, BIOS, CPUs,
 * memory), GPUs from the Processors of every System (DGX keeps them on the
 * HGX baseboard's System) or, where a BMC lists them only as PCIe devices
 * (Supermicro), from the Chassis; serials from the System's chassis.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/compkey.h"
#include "redfish/rf.h"

static void add_gpu(struct gf_hardware *h, const json_t *o, const char *firmware_key)
{
	const char *id = rf_str(o, "Id");
	double ord;
	long idx = gf_compkey_first_number(id);
	struct gf_gpu_hw *g;

	if (idx < 0 && rf_num(rf_get(o, "Location.PartLocation"), "LocationOrdinalValue", &ord))
		idx = (long)ord;
	if (idx < 0)
		idx = (long)h->ngpus;
	h->gpus = gf_xrealloc(h->gpus, (h->ngpus + 1) * sizeof(*h->gpus));
	g = &h->gpus[h->ngpus++];
	memset(g, 0, sizeof(*g));
	g->index = (int)idx;
	g->model = rf_dup(rf_str(o, "Model"));
	g->serial = rf_dup(rf_str(o, "SerialNumber"));
	g->firmware = rf_dup(rf_str(o, firmware_key));
}

static void set_num(struct gf_num *n, const json_t *o, const char *dotted)
{
	const json_t *v = rf_get(o, dotted);

	if (json_is_number(v)) {
		n->set = true;
		n->v = json_number_value(v);
	}
}

/* rf_fetch_opt() where @path may be NULL (nothing linked): *ret NULL. */
static int fetch_link(struct rf_client *c, const char *path, json_t **ret, struct gf_err *err)
{
	*ret = NULL;
	return path ? rf_fetch_opt(c, path, ret, err) : 0;
}

static int tri(const json_t *o, const char *dotted)
{
	const json_t *v = rf_get(o, dotted);

	return json_is_boolean(v) ? json_is_true(v) : -1;
}

/*
 * An NVLink port's error counters where its PortMetrics serve them: NVIDIA's
 * Oem (HGX H100, GB200). A vendor that serves them elsewhere is a row here.
 */
static const struct {
	const char *path; /* dotted, in the PortMetrics resource */
	size_t off;       /* of the struct gf_num in struct gf_nvlink */
} nvlink_counters[] = {
	{"Oem.Nvidia.NVLinkErrors.DataCRCCount", offsetof(struct gf_nvlink, data_crc)},
	{"Oem.Nvidia.NVLinkErrors.FlitCRCCount", offsetof(struct gf_nvlink, flit_crc)},
	{"Oem.Nvidia.NVLinkErrors.RecoveryCount", offsetof(struct gf_nvlink, recovery)},
	{"Oem.Nvidia.NVLinkErrors.ReplayCount", offsetof(struct gf_nvlink, replay)},
};

/* One NVLink Port @o (expanded) and its PortMetrics, appended to @g. */
static int nvlink_port(struct rf_client *c, const json_t *o, struct gf_gpu_health *g,
		       struct gf_err *err)
{
	const char *id = rf_str(o, "Id"), *uri = rf_odata_id(o);
	struct gf_nvlink *p;
	json_t *m = NULL;
	int rc;

	if ((rc = fetch_link(c, rf_link(o, "Metrics"), &m, err)) < 0)
		return rc;
	if (!id && uri && strrchr(uri, '/'))
		id = strrchr(uri, '/') + 1;
	g->nvlinks = gf_xrealloc(g->nvlinks, (g->nnvlinks + 1) * sizeof(*g->nvlinks));
	p = &g->nvlinks[g->nnvlinks++];
	memset(p, 0, sizeof(*p));
	p->id = rf_dup(id);
	p->link_status = rf_dup(rf_str(o, "LinkStatus"));
	p->health = rf_dup(rf_get_str(o, "Status.Health"));
	set_num(&p->speed_gbps, o, "CurrentSpeedGbps");
	for (size_t i = 0; i < sizeof(nvlink_counters) / sizeof(nvlink_counters[0]); i++)
		set_num((struct gf_num *)((char *)p + nvlink_counters[i].off), m,
			nvlink_counters[i].path);
	p->runtime_error = tri(m, "Oem.Nvidia.NVLinkErrors.RuntimeError");
	p->training_error = tri(m, "Oem.Nvidia.NVLinkErrors.TrainingError");
	json_decref(m);
	return 0;
}

/*
 * What the BMC says of one GPU's health: its Status.Health, the ECC counts
 * of its memory (MemorySummary's MemoryMetrics), row remapping (its Memory
 * and that Memory's metrics; NVIDIA's Oem), each NVLink port's LinkStatus
 * and error counters (its PortMetrics: one request per port).
 * A part not served stays unknown; only a failed request that is not a 404
 * fails the read.
 */
static int gpu_health(struct rf_client *c, const json_t *p, struct gf_gpu_health *ret,
		      struct gf_err *err)
{
	struct gf_gpu_health g = {.read = true,
				  .remap_pending = -1,
				  .remap_failed = -1,
				  .nvlinks_up = -1,
				  .nvlinks_down = -1};
	json_t *doc = NULL, *mem = NULL, *ports = NULL, *o;
	size_t i;
	int rc;

	g.health = rf_dup(rf_get_str(p, "Status.Health"));
	if ((rc = fetch_link(c, rf_link(rf_obj(p, "MemorySummary"), "Metrics"), &doc, err)) < 0)
		goto out;
	set_num(&g.ecc_corrected, doc, "LifeTime.CorrectableECCErrorCount");
	set_num(&g.ecc_uncorrected, doc, "LifeTime.UncorrectableECCErrorCount");
	json_decref(doc);
	doc = NULL;
	if ((rc = fetch_link(c,
			     rf_str(json_array_get(rf_arr(rf_obj(p, "Links"), "Memory"), 0),
				    "@odata.id"),
			     &mem, err)) < 0)
		goto out;
	g.remap_pending = tri(mem, "Oem.Nvidia.RowRemappingPending");
	g.remap_failed = tri(mem, "Oem.Nvidia.RowRemappingFailed");
	if ((rc = fetch_link(c, rf_link(mem, "Metrics"), &doc, err)) < 0)
		goto out;
	set_num(&g.remap_corrected, doc, "Oem.Nvidia.RowRemapping.CorrectableRowRemappingCount");
	set_num(&g.remap_uncorrected, doc,
		"Oem.Nvidia.RowRemapping.UncorrectableRowRemappingCount");
	if (rf_link(p, "Ports") &&
	    (rc = rf_collection_of(c, p, "Ports", RF_WALK_EXPAND, &ports, err)) < 0)
		goto out;
	json_array_foreach(ports, i, o) {
		if (!rf_eq(rf_str(o, "PortProtocol"), "NVLink"))
			continue;
		if (g.nvlinks_up < 0)
			g.nvlinks_up = g.nvlinks_down = 0;
		if (rf_eq(rf_str(o, "LinkStatus"), "LinkUp"))
			g.nvlinks_up++;
		else
			g.nvlinks_down++;
		if ((rc = nvlink_port(c, o, &g, err)) < 0)
			goto out;
	}
	*ret = g;
	memset(&g, 0, sizeof(g));
	rc = 0;
out:
	gf_gpu_health_release(&g);
	json_decref(doc);
	json_decref(mem);
	json_decref(ports);
	return rc;
}

static void add_cpu(struct gf_hardware *h, const json_t *p, const json_t *sys)
{
	const char *model = rf_str(p, "Model");

	if (!model || !*model)
		model = rf_get_str(sys, "ProcessorSummary.Model");
	if (!model || !*model)
		model = rf_str(p, "Manufacturer");
	h->cpus = gf_xrealloc(h->cpus, (h->ncpus + 1) * sizeof(*h->cpus));
	h->cpus[h->ncpus++] = rf_dup(model ? model : "unknown");
}

/* CPUs of the main System, GPUs of any System. */
static int processors(struct rf_client *c, const json_t *sys, bool main, struct gf_hardware *h,
		      struct gf_err *err)
{
	json_t *list = NULL;
	size_t i;
	json_t *p;
	int rc = rf_collection_of(c, sys, "Processors", RF_WALK_EXPAND, &list, err);

	if (rc < 0)
		return rc;
	json_array_foreach(list, i, p) {
		const char *type = rf_str(p, "ProcessorType");

		if (rf_eq(type, "GPU")) {
			add_gpu(h, p, "FirmwareVersion");
			if ((rc = gpu_health(c, p, &h->gpus[h->ngpus - 1].bmc, err)) < 0)
				break;
		} else if (main && (rf_eq(type, "CPU") || !type) &&
			   !rf_eq(rf_get_str(p, "Status.State"), "Absent"))
			add_cpu(h, p, sys);
	}
	json_decref(list);
	return rc;
}

static bool is_gpu_device(const json_t *d)
{
	const char *id = rf_str(d, "Id"), *desc = rf_str(d, "Description");

	return (id && strncmp(id, "GPU", 3) == 0) || (desc && strstr(desc, "GPU"));
}

/* Supermicro: Chassis/<id>/PCIeDevices/GPUn. */
static int pcie_gpus(struct rf_client *c, struct gf_hardware *h, struct gf_err *err)
{
	json_t *chassis = NULL;
	size_t i;
	json_t *ch;
	int rc = rf_collection_of(c, c->root, "Chassis", RF_WALK_FETCH | RF_WALK_KEEP, &chassis,
				  err);

	if (rc < 0)
		return rc;
	json_array_foreach(chassis, i, ch) {
		json_t *devs = NULL;
		size_t k;
		json_t *d;

		if (!rf_link(ch, "PCIeDevices"))
			continue;
		rc = rf_collection_of(c, ch, "PCIeDevices", RF_WALK_EXPAND, &devs, err);
		if (rc < 0)
			break;
		json_array_foreach(devs, k, d)
			if (is_gpu_device(d))
				add_gpu(h, d, "FirmwareVersion");
		json_decref(devs);
	}
	json_decref(chassis);
	return rc;
}

static int main_chassis(struct rf_client *c, const json_t *sys, struct gf_hardware *h,
			struct gf_err *err)
{
	json_t *links = rf_arr(rf_obj(sys, "Links"), "Chassis"), *ch = NULL, *list = NULL;
	const char *uri = rf_odata_id(json_array_get(links, 0));
	int rc;

	if (uri) {
		rc = rf_fetch_opt(c, uri, &ch, err);
		if (rc < 0)
			return rc;
	}
	if (!ch) {
		rc = rf_collection_of(c, c->root, "Chassis", RF_WALK_REFS | RF_WALK_KEEP, &list,
				      err);
		if (rc < 0)
			return rc;
		uri = rf_odata_id(json_array_get(list, 0));
		if (uri && (rc = rf_fetch(c, uri, &ch, err)) < 0) {
			json_decref(list);
			return rc;
		}
		json_decref(list);
	}
	if (ch) {
		h->chassis.serial = rf_dup(rf_str(ch, "SerialNumber"));
		h->chassis.part_number = rf_dup(rf_str(ch, "PartNumber"));
		json_decref(ch);
	}
	return 0;
}

int rf_hardware(struct rf_client *c, struct gf_hardware *ret, struct gf_err *err)
{
	struct gf_hardware h = {0};
	json_t *systems = NULL, *sys = NULL;
	double mem;
	size_t i;
	json_t *s;
	int rc;

	rc = rf_main_system(c, &sys, err);
	if (rc < 0)
		return rc;
	h.system.manufacturer = rf_dup(rf_str(sys, "Manufacturer"));
	h.system.model = rf_dup(rf_str(sys, "Model"));
	h.system.serial = rf_dup(rf_str(sys, "SerialNumber"));
	h.system.uuid = rf_dup(rf_str(sys, "UUID"));
	h.system.bios_version = rf_dup(rf_str(sys, "BiosVersion"));
	h.product.manufacturer = rf_dup(rf_str(sys, "Manufacturer"));
	h.product.name = rf_dup(rf_str(sys, "Model"));
	h.product.serial = rf_dup(rf_str(sys, "SerialNumber"));
	h.product.part_number = rf_dup(rf_str(sys, "PartNumber") ? rf_str(sys, "PartNumber")
								 : rf_str(sys, "SKU"));
	h.product.asset_tag = rf_dup(rf_str(sys, "AssetTag"));
	if (rf_num(rf_obj(sys, "MemorySummary"), "TotalSystemMemoryGiB", &mem)) {
		h.memory_gib.set = true;
		h.memory_gib.v = mem;
	}
	rc = rf_collection_of(c, c->root, "Systems", RF_WALK_FETCH | RF_WALK_KEEP, &systems, err);
	if (rc < 0)
		goto out;
	json_array_foreach(systems, i, s) {
		bool is_main = rf_eq(rf_odata_id(s), rf_odata_id(sys));

		rc = processors(c, s, is_main, &h, err);
		if (rc < 0)
			goto out;
	}
	if (h.ngpus == 0 && c->dialect->gpus_in_pcie) {
		rc = pcie_gpus(c, &h, err);
		if (rc < 0)
			goto out;
	}
	rc = main_chassis(c, sys, &h, err);
out:
	json_decref(systems);
	json_decref(sys);
	if (rc < 0) {
		gf_hardware_release(&h);
		return rc;
	}
	*ret = h;
	return 0;
}
