/* gpufleet: the verb table and the way into it. */
#include <locale.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/verbs.h"
#include "fleet/bmc.h"
#include "lib/util.h"

enum {
	VERB_PROMETHEUS = 1 << 0, /* can print --format prometheus */
};

struct cli_verb {
	const char *name;
	int (*fn)(struct gf_cli *cli, int argc, char **argv);
	unsigned flags;
	const char *summary;
	const char *usage;
};

/* Sorted by name: usage and --help come from here, and the man page test reads --help. */
static const struct cli_verb verbs[] = {
	{"bios", cmd_bios, 0,
	 "BIOS settings: show the attributes and what is pending, set with a read-back",
	 "usage: gpufleet bios show [--attribute PATTERN] [--pending] TARGETS\n"
	 "       gpufleet bios set NAME=VALUE... [--apply-time on-reset|immediate] [--dry-run] [--yes] TARGETS\n"
	 "       gpufleet bios set --from-baseline FILE [--apply-time ...] [--dry-run] [--yes] TARGETS\n"
	 "Values are checked against the BMC's attribute registry before anything is sent. A node\n"
	 "whose BMC holds another value after the set fails with kind refused.\n"},
	{"boot", cmd_boot, 0,
	 "boot device override: status, pxe, disk, bios, cd, none; read back after setting",
	 "usage: gpufleet boot status TARGETS\n"
	 "       gpufleet boot pxe|disk|bios|cd [--persistent] [--uefi|--legacy] [--dry-run] TARGETS\n"
	 "       gpufleet boot none [--dry-run] TARGETS\n"
	 "One-time (next boot only) unless --persistent. A node whose BMC holds something else\n"
	 "after the set fails with kind refused.\n"},
	{"console", cmd_console, 0,
	 "a node's serial console on the terminal (IPMI Serial over LAN, or SSH)",
	 "usage: gpufleet console [--escape CHAR] [--steal] [--ssh-accept-new] NODE\n"
	 "       gpufleet console log --dir DIR [--duration SECONDS] [--max-size SIZE] [--keep N]\n"
	 "                            [--total-size SIZE] [--metrics FILE] [--steal]\n"
	 "                            [--ssh-accept-new] TARGETS\n"
	 "       gpufleet console grep PATTERN --dir DIR [--since WHEN] TARGETS\n"
	 "       gpufleet console tail --dir DIR [-n N] NODE\n"
	 "Escapes at the start of a line: ~. ends, ~B sends a break, ~~ sends ~, ~? lists them.\n"
	 "A console another session holds fails with kind busy; --steal takes it over.\n"
	 "log keeps every console of TARGETS in DIR/NODE.log, reconnecting by itself.\n"
	 "A BMC that advertises an SSH serial console (Redfish SerialConsole.SSH) is reached\n"
	 "over SSH: its user and password, the host key as for 'host'.\n"},
	{"diff", cmd_diff, 0, "what changed between two sweeps: nodes and components",
	 "usage: gpufleet diff [SWEEP_A [SWEEP_B]] [--component PATTERN] [--ignore PATTERN]\n"
	 "Without sweeps: the last two; with one: that one against the last.\n"},
	{"drift", cmd_drift, 0,
	 "which nodes differ from their peers, a baseline, or what they were",
	 "usage: gpufleet drift [--majority] [--by model|group|fleet] [TARGETS]\n"
	 "       gpufleet drift --baseline FILE | --baseline-node NODE [TARGETS]\n"
	 "       gpufleet drift --since SWEEP|DATE|DURATION [TARGETS]\n"
	 "Compares each node's last sweep. --fail-on-drift exits 3 when anything differs.\n"
	 "--reconcile also compares the BMC's GPUs with the host's (count, serials, firmware).\n"},
	{"events", cmd_events, 0,
	 "every BMC's events as they happen, stored once; list what was stored",
	 "usage: gpufleet events follow [--interval S] [--duration S] [--format table|ndjson] TARGETS\n"
	 "       gpufleet events list [--since DATE|DURATION] [--severity LEVELS] [--source SOURCES]\n"
	 "                            [--fail-on warning|critical] [--format F] [TARGETS]\n"
	 "follow polls each node's event log (IPMI: the SEL, only what is new) every interval until\n"
	 "--duration, Ctrl-C or SIGTERM; prints each new event and stores it once. The first\n"
	 "follow of a node stores what its log already holds as the baseline, without printing it.\n"
	 "list --fail-on exits 3 when such an event is listed.\n"},
	{"firmware", cmd_firmware, 0, "firmware versions the BMC reports (BMC, BIOS, ...)",
	 "usage: gpufleet firmware TARGETS\n"
	 "       gpufleet firmware -H BMCHOSTS [--protocol P] [--profile NAME]\n"},
	{"hardware", cmd_hardware, 0, "model, serials, UUID and FRU data the BMC reports",
	 "usage: gpufleet hardware TARGETS\n"
	 "       gpufleet hardware -H BMCHOSTS [--protocol P] [--profile NAME]\n"},
	{"host", cmd_host, 0, "NVIDIA driver, CUDA, GPUs and their health, over SSH",
	 "usage: gpufleet host [OPTIONS] TARGETS\n"
	 "       gpufleet host -H HOST[:PORT][,...] [--profile NAME]\n"
	 "       gpufleet host --local\n"
	 "       gpufleet host --commands\n"
	 "Runs fixed, read-only commands on each node (see --commands and gpufleet-host(1)).\n"},
	{"inventory", cmd_inventory, 0,
	 "stored sweeps: show, history, export, import, prune; the audit log",
	 "usage: gpufleet inventory show NODE\n"
	 "       gpufleet inventory history NODE [--component PATTERN]\n"
	 "       gpufleet inventory export [--sweep ID] [--format ndjson|json] [TARGETS]\n"
	 "       gpufleet inventory export --baseline NODE\n"
	 "       gpufleet inventory import FILE|-\n"
	 "       gpufleet inventory prune --keep N | --older-than DURATION\n"
	 "       gpufleet inventory sweeps\n"
	 "       gpufleet inventory audit [--pending] [TARGETS]\n"},
	{"metrics", cmd_metrics, VERB_PROMETHEUS,
	 "Prometheus metrics of each node's last sweep and its drift",
	 "usage: gpufleet metrics [--output FILE] [--console-dir DIR] [TARGETS]\n"
	 "The text format, for node_exporter's textfile collector; --output replaces FILE\n"
	 "atomically. --console-dir (or GPUFLEET_CONSOLE_DIR) adds the consoles 'console log'\n"
	 "logs there. Names and labels: gpufleet-metrics(1).\n"},
	{"nodes", cmd_nodes, 0, "the node registry: add, import, list, remove, repin, tag",
	 "usage: gpufleet nodes add NAME --bmc HOST[:PORT] [--protocol P] [--ssh [USER@]HOST[:PORT]]\n"
	 "                          [--profile NAME] [--group G]... [--replace]\n"
	 "       gpufleet nodes import FILE|-\n"
	 "       gpufleet nodes list [TARGETS]\n"
	 "       gpufleet nodes remove TARGETS\n"
	 "       gpufleet nodes repin TARGETS [--expect SHA256]\n"
	 "       gpufleet nodes tag TARGETS [+GROUP | -GROUP | --add-group G | --remove-group G]...\n"},
	{"power", cmd_power, 0, "power status|on|off|cycle|reset|soft|nmi through the BMC",
	 "usage: gpufleet power status|on|off|cycle|reset|soft|nmi [OPTIONS] TARGETS\n"
	 "       gpufleet power ... -H BMCHOSTS [--protocol P] [--profile NAME]\n"
	 "off, cycle, reset, soft and nmi on more than one node need --yes.\n"},
	{"report", cmd_report, 0, "the inventory as one self-contained HTML page",
	 "usage: gpufleet report --html FILE [--baseline FILE | --since WHEN] [TARGETS]\n"
	 "Drift heat map, versions of each component, failed nodes and GPU health of each\n"
	 "node's last sweep; FILE is replaced atomically. See gpufleet-report(1).\n"},
	{"sel", cmd_sel, 0, "the BMCs' system event logs: list, clear",
	 "usage: gpufleet sel list|clear [OPTIONS] TARGETS\n"
	 "       gpufleet sel list [--since DATE|DURATION] [--severity LEVELS] [--last N] TARGETS\n"
	 "       gpufleet sel clear [--yes] [--dry-run] TARGETS\n"
	 "clear on more than one node needs --yes.\n"},
	{"sensors", cmd_sensors, VERB_PROMETHEUS,
	 "sensor readings, states and thresholds from the BMCs",
	 "usage: gpufleet sensors [--type TYPES] [--state STATES] TARGETS\n"
	 "       gpufleet sensors ... -H BMCHOSTS [--protocol P] [--profile NAME]\n"
	 "       gpufleet sensors --format prometheus TARGETS > /var/lib/node_exporter/gpufleet.prom\n"},
	{"sweep", cmd_sweep, 0,
	 "read everything read-only about the nodes and store it as one sweep",
	 "usage: gpufleet sweep [--quiet] [--wait-lock SECONDS] [--no-ssh] [--metrics FILE] [TARGETS]\n"
	 "Firmware, hardware, event log and sensor summaries through each BMC, host facts over\n"
	 "SSH; no TARGETS: every registered node. Exit 0 when every node is ok, 1 when any is\n"
	 "partial or failed (the sweep is stored either way).\n"},
	{"update", cmd_update, 0,
	 "firmware rollouts from a catalog: plan, run, status, resume; verified by read-back",
	 "usage: gpufleet update plan --catalog FILE [--component PATTERN] TARGETS\n"
	 "       gpufleet update run --catalog FILE [--component PATTERN] [--canary N] [--batch N]\n"
	 "                           [--max-failures K] [--reboot] [--update-timeout SECONDS]\n"
	 "                           [--dry-run] [--yes] TARGETS\n"
	 "       gpufleet update status [ROLLOUT]\n"
	 "       gpufleet update resume [ROLLOUT] [--yes]\n"
	 "A component is done only when its new version is read back. run on more than one\n"
	 "node needs --yes. Exit 0 when every node is done or skipped, 1 otherwise.\n"},
};
static const size_t nverbs = sizeof(verbs) / sizeof(verbs[0]);

static void main_help(FILE *f)
{
	fputs("usage: gpufleet [GLOBAL OPTIONS] VERB [SUBVERB] [OPTIONS] [TARGETS]\n"
	      "\nDrive the BMCs and hosts of a GPU fleet; keep what they report in one inventory.\n"
	      "\nVerbs:\n",
	      f);
	for (size_t i = 0; i < nverbs; i++)
		fprintf(f, "  %-10s %s\n", verbs[i].name, verbs[i].summary);
	cli_print_global_opts(f);
	fputs("\nTargets: gpu[001-128], r[1-2]n[01-04], @group, ',' union, '!' difference,\n"
	      "'&' intersection, '^' symmetric difference.\n"
	      "Exit codes: 0 all ok, 1 some failed, 2 usage, 3 drift, 4 refused.\n"
	      "See gpufleet(1) and 'gpufleet VERB --help'.\n",
	      f);
}

/* Does the global option @arg (as written on the command line) swallow the next word? */
static bool takes_value(const char *arg)
{
	if (arg[1] == '-') {
		const char *name = arg + 2;
		size_t len = strcspn(name, "=");

		if (name[len] == '=')
			return false;
		for (size_t i = 0; i < cli_nglobal_opts; i++)
			if (strlen(cli_global_opts[i].lo.name) == len &&
			    strncmp(cli_global_opts[i].lo.name, name, len) == 0)
				return cli_global_opts[i].lo.has_arg == required_argument;
		return false;
	}
	for (const char *p = arg + 1; *p; p++) {
		if (*p == 'H')
			return p[1] == '\0';
	}
	return false;
}

static void default_paths(struct gf_cli *cli, char *db, size_t dbsz, char *cred, size_t credsz,
			  char *cache, size_t cachesz)
{
	const char *home = getenv("HOME");
	const char *x;

	if (!home || !*home)
		home = "/";
	if ((x = getenv("GPUFLEET_DB")) && *x)
		snprintf(db, dbsz, "%s", x);
	else if ((x = getenv("XDG_DATA_HOME")) && *x)
		snprintf(db, dbsz, "%s/gpufleet/inventory.db", x);
	else
		snprintf(db, dbsz, "%s/.local/share/gpufleet/inventory.db", home);
	cli->db_path = db;

	if ((x = getenv("GPUFLEET_CREDENTIALS")) && *x) {
		snprintf(cred, credsz, "%s", x);
		cli->creds_explicit = true;
	} else if ((x = getenv("XDG_CONFIG_HOME")) && *x) {
		snprintf(cred, credsz, "%s/gpufleet/credentials", x);
	} else {
		snprintf(cred, credsz, "%s/.config/gpufleet/credentials", home);
	}
	cli->creds_path = cred;

	if ((x = getenv("XDG_CACHE_HOME")) && *x)
		snprintf(cache, cachesz, "%s/gpufleet", x);
	else
		snprintf(cache, cachesz, "%s/.cache/gpufleet", home);
	cli->cache_dir = cache;
}

int main(int argc, char **argv)
{
	static char dbpath[4096], credpath[4096], cachepath[4096];
	struct gf_cli cli = {
		.prog = "gpufleet",
		.format = GF_FMT_TABLE,
		.fanout = 64,
		.timeout = 10,
		.retries = 1,
		.progress = true,
	};
	const struct cli_verb *verb = NULL;
	char **vargv;
	int vargc = 0, verb_at = -1, rc;

	gf_harden_process();
	gf_creds_take_env();
	setlocale(LC_CTYPE, "");
	/*
	 * The time zone read once here, before any thread: glibc does it on first
	 * use (FreeIPMI's localtime(), OpenSSL's gmtime_r() on two workers), under
	 * a lock ThreadSanitizer cannot see, and reports a race.
	 */
	tzset();
	gf_bmc_register(); /* before anything names a protocol */
	signal(SIGPIPE, SIG_IGN);
	default_paths(&cli, dbpath, sizeof(dbpath), credpath, sizeof(credpath), cachepath,
		      sizeof(cachepath));
	cli.color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR");
	cli.progress = isatty(STDERR_FILENO);
	cli.width = cli_term_width();

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		if (argv[i][0] == '-' && argv[i][1]) {
			if (takes_value(argv[i]))
				i++;
			continue;
		}
		verb_at = i;
		break;
	}
	if (verb_at < 0) {
		for (int i = 1; i < argc; i++) {
			if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-V") == 0) {
				printf("gpufleet %s\n", GF_VERSION);
				return GF_EXIT_OK;
			}
			if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
				main_help(stdout);
				return GF_EXIT_OK;
			}
		}
		main_help(stderr);
		return GF_EXIT_USAGE;
	}
	for (size_t i = 0; i < nverbs; i++)
		if (strcmp(verbs[i].name, argv[verb_at]) == 0)
			verb = &verbs[i];
	if (!verb) {
		cli_error("unknown verb '%s'; see 'gpufleet --help'", argv[verb_at]);
		return GF_EXIT_USAGE;
	}
	/* The verb first, then every other word in order: globals may stand anywhere. */
	vargv = calloc((size_t)argc + 1, sizeof(char *));
	if (!vargv)
		return GF_EXIT_FAILED;
	vargv[vargc++] = argv[verb_at];
	for (int i = 1; i < argc; i++)
		if (i != verb_at)
			vargv[vargc++] = argv[i];
	cli.verb = verb->name;
	cli.usage = verb->usage;
	cli.allow_prometheus = verb->flags & VERB_PROMETHEUS;
	rc = verb->fn(&cli, vargc, vargv);
	if (rc < 0)
		rc = GF_EXIT_OK; /* --help or --version was printed */
	cli_release(&cli);
	free(vargv);
	return rc;
}
