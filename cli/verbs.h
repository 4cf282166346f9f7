/* The verb handlers: cmd_<verb>(cli, argc, argv) with argv[0] the verb. */
#ifndef GF_CLI_VERBS_H
#define GF_CLI_VERBS_H

#include "cli/common.h"

int cmd_bios(struct gf_cli *cli, int argc, char **argv);
int cmd_console(struct gf_cli *cli, int argc, char **argv);
int cmd_boot(struct gf_cli *cli, int argc, char **argv);
int cmd_diff(struct gf_cli *cli, int argc, char **argv);
int cmd_drift(struct gf_cli *cli, int argc, char **argv);
int cmd_events(struct gf_cli *cli, int argc, char **argv);
int cmd_firmware(struct gf_cli *cli, int argc, char **argv);
int cmd_hardware(struct gf_cli *cli, int argc, char **argv);
int cmd_host(struct gf_cli *cli, int argc, char **argv);
int cmd_inventory(struct gf_cli *cli, int argc, char **argv);
int cmd_metrics(struct gf_cli *cli, int argc, char **argv);
int cmd_nodes(struct gf_cli *cli, int argc, char **argv);
int cmd_power(struct gf_cli *cli, int argc, char **argv);
int cmd_report(struct gf_cli *cli, int argc, char **argv);
int cmd_sel(struct gf_cli *cli, int argc, char **argv);
int cmd_sensors(struct gf_cli *cli, int argc, char **argv);
int cmd_sweep(struct gf_cli *cli, int argc, char **argv);
int cmd_update(struct gf_cli *cli, int argc, char **argv);

#endif
