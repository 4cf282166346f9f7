/* The safety guard of destructive verbs: --yes or a "y" on a terminal. */
#include "cli/common.h"

#include <stdlib.h>
#include <unistd.h>

#include "lib/nodeset.h"
#include "lib/util.h"

bool cli_confirm(const char *question)
{
	char line[16];

	if (!isatty(STDIN_FILENO) || !isatty(STDERR_FILENO))
		return false;
	fprintf(stderr, "%s [y/N] ", question);
	fflush(stderr);
	if (!fgets(line, sizeof(line), stdin))
		return false;
	return line[0] == 'y' || line[0] == 'Y';
}

int cli_guard(struct gf_cli *cli, const char *what, const struct gf_node *nodes, size_t n, bool yes)
{
	const char **names;
	char q[512];
	char *set;
	bool ok;

	if (n <= 1 || yes)
		return 0;
	names = gf_nodes_names(nodes, n);
	set = gf_nodeset_collapse(names, n);
	free(names);
	snprintf(q, sizeof(q), "%s on %zu nodes (%s)?", what, n, set);
	ok = cli_confirm(q);
	if (!ok)
		cli_error("refusing to %s on %zu nodes (%s) without --yes", what, n, set);
	free(set);
	return ok ? 0 : GF_EXIT_REFUSED;
}
