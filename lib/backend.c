#include "lib/backend.h"

const char *gf_power_name(enum gf_power p)
{
	switch (p) {
	case GF_POWER_ON: return "on";
	case GF_POWER_OFF: return "off";
	default: return "unknown";
	}
}

const char *gf_power_op_name(enum gf_power_op op)
{
	static const char *const names[] = {
		[GF_POWER_OP_ON] = "on", [GF_POWER_OP_OFF] = "off", [GF_POWER_OP_CYCLE] = "cycle",
		[GF_POWER_OP_RESET] = "reset", [GF_POWER_OP_SOFT] = "soft", [GF_POWER_OP_NMI] = "nmi",
	};

	if ((unsigned)op >= sizeof(names) / sizeof(names[0]))
		return "unknown";
	return names[op];
}
