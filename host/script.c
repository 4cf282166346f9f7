#include "host/script.h"

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

/*
 * A line of plain words (no quoting, expansion, redirection or operator, no
 * assignment first): timeout(1) runs it as the shell would, without a shell.
 */
static bool simple(const char *line)
{
	/* The shell's own commands, which no program stands in for. */
	static const char *const builtins[] = {
		".",        ":",      "alias",   "break",  "cd",      "command", "continue",
		"eval",     "exec",   "exit",    "export", "getopts", "hash",    "read",
		"readonly", "return", "set",     "shift",  "times",   "trap",    "type",
		"ulimit",   "umask",  "unalias", "unset",  "wait",
	};
	size_t first = strcspn(line, " ");

	if (!*line || strpbrk(line, "|&;<>()$`\\\"'*?[]#~{}\t\n\r!") || memchr(line, '=', first))
		return false;
	for (size_t i = 0; i < NELEM(builtins); i++)
		if (strlen(builtins[i]) == first && strncmp(line, builtins[i], first) == 0)
			return false;
	return true;
}

char *gf_script_build(const struct gf_remote_cmd *cmds, size_t n, double seconds, const char *tag)
{
	struct gf_buf s = GF_BUF_INIT, line = GF_BUF_INIT;
	char *ret;

	if (seconds < 0.1)
		seconds = 0.1;
	/*
	 * A FIFO says which command has ended (its status file written first),
	 * so that its frame is printed then, in the order they end, with no
	 * polling; a clock tells a command stopped by timeout(1) from one
	 * killed otherwise (LATE).
	 */
	gf_buf_addf(&s,
		    "d=$(mktemp -d) || exit 97\ntrap 'rm -rf \"$d\"' EXIT\ncd \"$d\" || exit 97\n"
		    "mkfifo q || exit 97\nexec 9<>q\n"
		    "(sleep %.2f; : >late) </dev/null >/dev/null 2>&1 9>&- & w=$!\n",
		    seconds > 0.2 ? seconds - 0.1 : seconds / 2);
	for (size_t i = 0; i < n; i++) {
		gf_buf_addf(&s, "(ulimit -f %u; timeout -k 1 %.2f ", (unsigned)BLOCKS, seconds);
		if (simple(cmds[i].line)) {
			gf_buf_adds(&s, cmds[i].line);
		} else {
			gf_buf_adds(&s, "/bin/sh -c ");
			add_quoted(&s, cmds[i].line);
		}
		gf_buf_addf(&s, " 9>&-; echo $? >%zus; echo %zu >&9) </dev/null >%zuo 2>%zue &\n",
			    i, i, i, i);
	}
	gf_buf_addf(&s,
		    "k=0\n"
		    "while [ $k -lt %zu ] && read i <&9; do\n"
		    " read s <${i}s; l=0; [ -e late ] && l=1\n"
		    " wc -c ${i}o ${i}e >z; { read o x; read e x; } <z\n"
		    " printf '%s %%s %%s %%s %%s %%s\\n' $i $s $l $o $e\n"
		    " /bin/cat ${i}o ${i}e\n"
		    " k=$((k + 1))\n"
		    "done\n"
		    "kill $w 2>/dev/null; exit 0\n",
		    n, tag);
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

	gf_remote_cmds_reset(cmds, n);
	/* What the login printed first (a profile's echo) is not ours: from the first frame on. */
	while (p + taglen <= end && !((p == out || p[-1] == '\n') && memcmp(p, tag, taglen) == 0))
		p++;
	if (p + taglen > end)
		p = end;
	for (size_t k = 0; k < n && p < end; k++) {
		char head[FRAME_LINE + 1];
		const char *nl = memchr(p, '\n',
					(size_t)(end - p) < FRAME_LINE ? (size_t)(end - p)
								       : FRAME_LINE);
		unsigned long long idx, olen, elen;
		int status, late, used = 0;
		struct gf_remote_cmd *c;

		if (!nl && end - p < FRAME_LINE)
			break; /* cut short: the frames that came are kept */
		if (!nl)
			return bad(err, "a frame without its header line");
		memcpy(head, p, (size_t)(nl - p));
		head[nl - p] = '\0';
		if (strncmp(head, tag, taglen) != 0 ||
		    sscanf(head + taglen, " %llu %d %d %llu %llu%n", &idx, &status, &late, &olen,
			   &elen, &used) != 5 ||
		    head[taglen + (size_t)used] != '\0')
			return bad(err, "a malformed frame header");
		p = nl + 1;
		if (idx >= n || cmds[idx].ran)
			return bad(err, "a frame out of place");
		if (olen > (unsigned long long)(end - p) ||
		    elen > (unsigned long long)(end - p) - olen)
			break; /* cut short: that command's answer did not all come */
		c = &cmds[idx];
		c->ran = true;
		keep(c, &c->out, p, (size_t)olen);
		keep(c, &c->err, p + olen, (size_t)elen);
		p += olen + elen;
		c->timed_out = late && (status == 124 || status == 137);
		/* A shell says 128 + N for signal N (1 to 64); 255 and the like are exits. */
		c->status = (status > 128 && status <= 128 + 64) || c->timed_out ? -1 : status;
	}
	return 0;
}
