/* Sub-verbs: one table type and one dispatcher for every verb that has them. */
#include "cli/common.h"

#include <string.h>

#include "lib/buf.h"

/* "a, b, c" in table order; a pair reads "a or b" in @pair_or. */
static void list_names(const struct cli_subverb *subs, size_t n, bool pair_or, struct gf_buf *b)
{
	for (size_t i = 0; i < n; i++) {
		if (i)
			gf_buf_adds(b, pair_or && n == 2 ? " or " : ", ");
		gf_buf_adds(b, subs[i].name);
	}
}

/* Does @sub take every verb option given? If not, say which one it does not (printed). */
static bool takes_given(const struct gf_cli *cli, const struct cli_subverb *sub)
{
	unsigned long long extra = sub->takes ? cli->verb_opts_given & ~sub->takes : 0;

	for (size_t i = 0; i < cli->nverb_opts && i < 63; i++)
		if (extra & CLI_OPT(i)) {
			cli_error("option '--%s' does not apply to '%s %s'; see 'gpufleet %s --help'",
				  cli->verb_opts[i].lo.name, cli->verb, sub->name, cli->verb);
			return false;
		}
	return true;
}

int cli_subverb_run(struct gf_cli *cli, const struct cli_subverb *subs, size_t n, void *ud,
		    char **args, int nargs)
{
	struct gf_buf b = GF_BUF_INIT;

	if (nargs > 0)
		for (size_t i = 0; i < n; i++)
			if (strcmp(subs[i].name, args[0]) == 0)
				return takes_given(cli, &subs[i])
					       ? subs[i].run(cli, &subs[i], ud, args + 1, nargs - 1)
					       : GF_EXIT_USAGE;
	list_names(subs, n, nargs < 1, &b);
	if (nargs < 1)
		cli_error("%s needs a subverb: %s", cli->verb, gf_buf_str(&b));
	else
		cli_error("unknown subverb '%s %s' (%s)", cli->verb, args[0], gf_buf_str(&b));
	gf_buf_release(&b);
	return GF_EXIT_USAGE;
}
