#include "host/script.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "lib/buf.h"
#include "lib/util.h"

/* ulimit -f counts 512-byte blocks in a POSIX sh: a file may reach one byte past the bound. */
#define BLOCKS ((GF_REMOTE_MAX_OUTPUT + 1 + 511) / 512)
/* What a frame's header line takes at most. */
#define FRAME_LINE 96

void gf_script_tag(char tag[GF_SCRIPT_TAG_SIZE])
{
	uint64_t r = 0;

	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = (uint64_t)(uintptr_t)tag ^ 0x9e3779b97f4a7c15ULL;
	snprintf(tag, GF_SCRIPT_TAG_SIZE, "@gf1-%016llx", (unsigned long long)r);
}

/* @s single-quoted for sh: 'it'\''s'. */
static void add_quoted(struct gf_buf *b, const char *s)
{
	gf_buf_adds(b, "'");
	for (; *s; s++) {
		if (*s == '\'')
			gf_buf_adds(b, "'\\''");
		else
			gf_buf_add(b, s, 1);
	}
	gf_buf_adds(b, "'");
}

/* Is the word @w (@len bytes) one of the shell's own commands, which no program stands in for? */
static bool builtin(const char *w, size_t len)
{
	static const char *const builtins[] = {
		".",        ":",      "alias",   "break",  "cd",      "command", "continue",
		"eval",     "exec",   "exit",    "export", "getopts", "hash",    "read",
		"readonly", "return", "set",     "shift",  "times",   "trap",    "type",
		"ulimit",   "umask",  "unalias", "unset",  "wait",
	};

	for (size_t i = 0; i < NELEM(builtins); i++)
		if (strlen(builtins[i]) == len && strncmp(w, builtins[i], len) == 0)
			return true;
	return false;
}

/*
 * A line of plain words (no quoting, expansion, redirection or operator, no
 * assignment first): the script's shell runs it itself, with no second shell.
 */
static bool simple(const char *line)
{
	size_t first = strcspn(line, " ");

	return *line && !strpbrk(line, "|&;<>()$`\\\"'*?[]#~{}\t\n\r!") &&
	       !memchr(line, '=', first) && !builtin(line, first);
}

/*
 * Where a simple line "env NAME=VALUE... PROGRAM ARGS" has its program:
 * the shell sets the variables for that program itself, as env(1) would,
 * without a process of its own. NULL for any other line.
 */
static const char *env_words(const char *line)
{
	const char *p = line + 4, *name;

	if (strncmp(line, "env ", 4) != 0)
		return NULL;
	for (name = p;; name = p) {
		size_t len = strcspn(p, " ");
		const char *eq = memchr(p, '=', len);

		if (!eq)
			break;
		if (eq == p || !(isalpha((unsigned char)*p) || *p == '_'))
			return NULL;
		for (const char *q = p; q < eq; q++)
			if (!isalnum((unsigned char)*q) && *q != '_')
				return NULL;
		if (!p[len])
			return NULL; /* variables and no program */
		p += len + 1;
	}
	return name == line + 4 || builtin(name, strcspn(name, " ")) ? NULL : line + 4;
}

char *gf_script_build(const struct gf_remote_cmd *cmds, size_t n, double seconds, const char *tag)
{
	struct gf_buf s = GF_BUF_INIT, line = GF_BUF_INIT;
	char *ret;

	if (seconds < 0.1)
		seconds = 0.1;
	/*
	 * The script ignores TERM. At the time limit the watchdog marks the round
	 * late and sends TERM to the script's process group (sshd makes the
	 * script a session leader: that is every command and its children),
	 * then, for a command that ignores TERM, ends the script's wait with
	 * USR1. Only a group of the script's own (k, read from Linux's
	 * /proc/PID/stat): under a login wrapper that did not exec it, the group
	 * is the wrapper's too, and a command that hangs is then left running.
	 */
	gf_buf_addf(&s,
		    "d=$(mktemp -d) || exit 97\ntrap 'rm -rf \"$d\"' EXIT\ncd \"$d\" || exit 97\n"
		    "x=; { read x <\"/proc/$$/stat\"; } 2>/dev/null; x=\"${x##*) }\"; set -- $x; "
		    "k=; [ \"$3\" != $$ ] || k=1\n"
		    ": >t; ulimit -f %u; trap '' TERM; g=; trap g=1 USR1\n"
		    "(trap - TERM; sleep %.2f; trap '' TERM; : >late; [ -z \"$k\" ] || kill -TERM 0; "
		    "sleep 0.2; kill -USR1 $$) </dev/null >/dev/null 2>&1 & w=$!\n",
		    (unsigned)BLOCKS, seconds > 0.3 ? seconds - 0.15 : seconds / 2);
	/*
	 * Each command in a subshell that outlives a TERM to add "INDEX STATUS"
	 * to t (one short append: lines do not mix).
	 */
	for (size_t i = 0; i < n; i++) {
		const char *l = cmds[i].line, *env = NULL;
		bool plain = simple(l);

		if (plain && (env = env_words(l)))
			l = env;
		gf_buf_adds(&s, "(trap : TERM; ");
		if (plain) {
			gf_buf_adds(&s, l);
		} else {
			gf_buf_adds(&s, "/bin/sh -c ");
			add_quoted(&s, l);
		}
		gf_buf_addf(&s, "; echo %zu $? >>t) </dev/null >%zuo 2>%zue & p%zu=$!\n", i, i, i,
			    i);
	}
	gf_buf_adds(&s, "wait");
	for (size_t i = 0; i < n; i++)
		gf_buf_addf(&s, " $p%zu", i);
	/*
	 * The watchdog is stopped while it is still the script's child. What
	 * ended is in t; what did not (u) has status 137 and no output, since it
	 * may still write.
	 */
	gf_buf_adds(&s, "\n[ \"$g\" ] || kill -KILL $w\nl=0; [ -e late ] && l=1; u=; f=\n");
	/* Not from the environment: a status is what t says. */
	for (size_t i = 0; i < n; i++)
		gf_buf_addf(&s, "s%zu=%s", i, i + 1 < n ? "; " : "\n");
	gf_buf_adds(&s, "while read i v; do case $i in");
	for (size_t i = 0; i < n; i++)
		gf_buf_addf(&s, " %zu) s%zu=$v;;", i, i);
	gf_buf_adds(&s, " esac; done <t\n");
	for (size_t i = 0; i < n; i++)
		gf_buf_addf(&s, "[ \"$s%zu\" ] && f=\"$f %zuo %zue\" || u=1\n", i, i, i);
	/* Every header, then the outputs of what ended, in order: one wc, one printf, one cat. */
	gf_buf_adds(&s, "set -- 0 x 0 x; [ -z \"$f\" ] || set -- $(wc -c $f)\n");
	for (size_t i = 0; i < n; i++)
		gf_buf_addf(&s,
			    "if [ \"$s%zu\" ]; then o%zu=$1 e%zu=$3; shift 4; else s%zu=137 o%zu=0 "
			    "e%zu=0; fi\n",
			    i, i, i, i, i, i);
	gf_buf_addf(&s, "printf '%s %%s %%s %%s %%s %%s\\n'", tag);
	for (size_t i = 0; i < n; i++)
		gf_buf_addf(&s, " %zu $s%zu $l $o%zu $e%zu", i, i, i, i);
	/*
	 * With a group of its own, a command still running (it ignored TERM) dies
	 * with the group once all is out, and the watchdog's sleep with a TERM.
	 */
	gf_buf_adds(&s,
		    "\n[ -z \"$f\" ] || /bin/cat $f\n"
		    "[ -z \"$k\" ] || { [ -z \"$u\" ] || { cd /; rm -rf \"$d\"; kill -KILL 0; }; "
		    "kill -TERM 0; }\nexit 0\n");
	/* One command line for the login's shell, whatever it is: /bin/sh runs the script. */
	gf_buf_adds(&line, "exec /bin/sh -c ");
	add_quoted(&line, gf_buf_str(&s));
	gf_buf_release(&s);
	ret = gf_xstrdup(gf_buf_str(&line));
	gf_buf_release(&line);
	return ret;
}

size_t gf_script_max_output(size_t n)
{
	return n * (2 * ((size_t)BLOCKS * 512) + FRAME_LINE);
}

static int bad(struct gf_err *err, const char *why)
{
	return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
			  "the remote shell's answer is not gpufleet's: %s", why);
}

/* Keep @n bytes of a stream, marked cut past the bound. */
static void keep(struct gf_remote_cmd *c, struct gf_buf *b, const char *p, size_t n)
{
	gf_buf_release(b);
	gf_remote_keep(c, b, p, n);
}

int gf_script_parse(const char *out, size_t len, const char *tag, struct gf_remote_cmd *cmds,
		    size_t n, struct gf_err *err)
{
	const char *p = out, *end = out + len;
	size_t taglen = strlen(tag);
	unsigned long long *olen = gf_xcalloc(n ? n : 1, sizeof(*olen));
	unsigned long long *elen = gf_xcalloc(n ? n : 1, sizeof(*elen));
	int rc = 0;
	size_t k;

	gf_remote_cmds_reset(cmds, n);
	/* What the login printed first (a profile's echo) is not ours: from the first frame on. */
	while (p + taglen <= end && !((p == out || p[-1] == '\n') && memcmp(p, tag, taglen) == 0))
		p++;
	if (p + taglen > end)
		p = end;
	/* Every command's header line, in order. */
	for (k = 0; k < n && p < end; k++) {
		char head[FRAME_LINE + 1];
		const char *nl = memchr(p, '\n',
					(size_t)(end - p) < FRAME_LINE ? (size_t)(end - p)
								       : FRAME_LINE);
		unsigned long long idx;
		int status, late, used = 0;
		struct gf_remote_cmd *c = &cmds[k];

		if (!nl && end - p < FRAME_LINE)
			break; /* cut short */
		if (!nl) {
			rc = bad(err, "a frame without its header line");
			goto out;
		}
		memcpy(head, p, (size_t)(nl - p));
		head[nl - p] = '\0';
		if (strncmp(head, tag, taglen) != 0 ||
		    sscanf(head + taglen, " %llu %d %d %llu %llu%n", &idx, &status, &late, &olen[k],
			   &elen[k], &used) != 5 ||
		    head[taglen + (size_t)used] != '\0') {
			rc = bad(err, "a malformed frame header");
			goto out;
		}
		if (idx != k) {
			rc = bad(err, "a frame out of place");
			goto out;
		}
		p = nl + 1;
		c->timed_out = late && (status == 143 || status == 137);
		/* A shell says 128 + N for signal N (1 to 64); 255 and the like are exits. */
		c->status = (status > 128 && status <= 128 + 64) || c->timed_out ? -1 : status;
	}
	/* Then their outputs, in the same order; what did not all come did not run. */
	for (size_t i = 0; k == n && i < n; i++) {
		struct gf_remote_cmd *c = &cmds[i];

		if (olen[i] > (unsigned long long)(end - p) ||
		    elen[i] > (unsigned long long)(end - p) - olen[i])
			break;
		c->ran = true;
		keep(c, &c->out, p, (size_t)olen[i]);
		keep(c, &c->err, p + olen[i], (size_t)elen[i]);
		p += olen[i] + elen[i];
	}
out:
	/* What did not come (or came wrong) did not run, whatever its header said. */
	for (size_t i = 0; i < n; i++)
		if (!cmds[i].ran) {
			cmds[i].timed_out = false;
			cmds[i].status = 0;
		}
	free(olen);
	free(elen);
	return rc;
}
