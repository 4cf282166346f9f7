#include "host/hostcollect.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/script.h"
#include "lib/proc.h"
#include "lib/util.h"

/* Time kept back from the node's deadline to close the connection. */
#define CLOSE_MARGIN 0.25
/* Rounds of asking nvidia-smi again without a refused field. */
#define MAX_ROUNDS 8

/* Time kept back from a round's deadline for the script's answer to come back. */
#define SCRIPT_MARGIN 0.4

/*
 * The SSH runner: @ud is an open struct gf_ssh. A round is one session and
 * one shell on the host (host/script.h), each command stopped by the host
 * shortly before @deadline so that what it printed still comes back.
 */
static int run_ssh(void *ud, struct gf_remote_cmd *cmds, size_t n, double deadline,
		   const gf_cancel_flag *cancel, struct gf_err *err)
{
	char tag[GF_SCRIPT_TAG_SIZE];
	struct gf_remote_cmd sc = {.max = gf_script_max_output(n)};
	char *line;
	int rc;

	(void)cancel; /* the session watches its target's */
	gf_script_tag(tag);
	line = gf_script_build(cmds, n, deadline - gf_monotime() - SCRIPT_MARGIN, tag);
	sc.line = line;
	rc = gf_ssh_run(ud, &sc, 1, deadline, err);
	if (rc == 0)
		rc = gf_script_parse(gf_buf_str(&sc.out), sc.out.len, tag, cmds, n, err);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		/* No frame: the host stopped the script, or the answer came too late. */
		if (!cmds[i].ran && (sc.timed_out || sc.cut))
			cmds[i].ran = cmds[i].timed_out = true;
		else if (!cmds[i].ran)
			rc = gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
					"the remote shell ended (status %d) before '%s' ran: %.200s",
					sc.status, cmds[i].line, gf_buf_str(&sc.err));
	}
	gf_remote_cmd_release(&sc);
	free(line);
	return rc;
}

int gf_host_facts_ssh(const struct gf_ssh_target *t, struct gf_hostfacts *ret, struct gf_err *err)
{
	struct gf_host_runner runner = {.run = run_ssh, .cancel = t->cancel};
	struct gf_ssh *ssh = NULL;
	int rc;

	rc = gf_ssh_open(t, &ssh, err);
	if (rc < 0)
		return rc;
	runner.ud = ssh;
	rc = gf_host_collect(&runner, t->deadline, ret, err);
	gf_ssh_close(ssh);
	return rc;
}

/* ---- local processes -------------------------------------------------- */

struct proc {
	pid_t pid;
	int fd[2]; /* stdout, stderr read ends; -1 once closed */
	bool exited;
};

static int spawn(struct gf_remote_cmd *c, struct proc *p, struct gf_err *err)
{
	/* Its own process group, so that a hung command and its children can be killed. */
	static const struct gf_proc_opts how = {
		.in = GF_PROC_NULL,
		.out = GF_PROC_PIPE,
		.err = GF_PROC_PIPE,
		.own_group = true,
	};
	struct gf_proc child;
	int rc = gf_proc_spawn(c->line, &how, &child, err);

	if (rc < 0)
		return rc;
	p->pid = child.pid;
	p->fd[0] = child.out;
	p->fd[1] = child.err;
	fcntl(child.out, F_SETFL, O_NONBLOCK);
	fcntl(child.err, F_SETFL, O_NONBLOCK);
	c->ran = true;
	return 0;
}

static void reap(struct gf_remote_cmd *c, struct proc *p, bool block)
{
	int st;
	pid_t r = waitpid(p->pid, &st, block ? 0 : WNOHANG);

	if (r != p->pid)
		return;
	p->exited = true;
	c->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* How long one wait lasts at most when Ctrl-C may end it. */
#define CANCEL_SLICE_S 0.05

static int stopped(struct gf_err *err)
{
	return gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL, "interrupted while the commands ran");
}

int gf_host_run_local(void *ud, struct gf_remote_cmd *cmds, size_t n, double deadline,
		      const gf_cancel_flag *cancel, struct gf_err *err)
{
	struct proc *ps = gf_xcalloc(n ? n : 1, sizeof(*ps));
	struct pollfd *pfd = gf_xcalloc(2 * (n ? n : 1), sizeof(*pfd));
	char buf[16384];
	int rc = 0;

	gf_remote_cmds_reset(cmds, n);
	for (size_t i = 0; i < n; i++) {
		ps[i].fd[0] = ps[i].fd[1] = -1;
		ps[i].pid = -1;
	}
	for (size_t i = 0; i < n; i++) {
		rc = spawn(&cmds[i], &ps[i], err);
		if (rc < 0)
			goto out;
	}
	for (;;) {
		size_t np = 0;
		double left = deadline - gf_monotime();

		for (size_t i = 0; i < n; i++) {
			for (int k = 0; k < 2; k++) {
				if (ps[i].fd[k] < 0)
					continue;
				pfd[np].fd = ps[i].fd[k];
				pfd[np].events = POLLIN;
				pfd[np].revents = 0;
				np++;
			}
		}
		if (np == 0)
			break;
		if (cancel && *cancel) {
			rc = stopped(err); /* the processes are killed below */
			goto out;
		}
		if (left <= 0)
			break;
		if (cancel && left > CANCEL_SLICE_S)
			left = CANCEL_SLICE_S;
		if (poll(pfd, (nfds_t)np, (int)(left * 1000) + 1) < 0 && errno != EINTR)
			break;
		for (size_t i = 0; i < n; i++) {
			for (int k = 0; k < 2; k++) {
				ssize_t got;

				if (ps[i].fd[k] < 0)
					continue;
				while ((got = read(ps[i].fd[k], buf, sizeof(buf))) > 0 &&
				       gf_remote_keep(&cmds[i], k ? &cmds[i].err : &cmds[i].out,
						      buf, (size_t)got))
					;
				if (cmds[i].cut) {
					/* Printed past the bound: no more of it (reaped below). */
					kill(-ps[i].pid, SIGKILL);
					close(ps[i].fd[0]);
					close(ps[i].fd[1]);
					ps[i].fd[0] = ps[i].fd[1] = -1;
					break;
				}
				if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
					close(ps[i].fd[k]);
					ps[i].fd[k] = -1;
				}
			}
		}
	}
	/* Output closed: the processes end now, or they are hung and get killed at the deadline. */
	for (size_t i = 0; i < n; i++) {
		if (ps[i].pid < 0)
			continue;
		while (!ps[i].exited && ps[i].fd[0] < 0 && ps[i].fd[1] < 0 &&
		       gf_monotime() < deadline && !(cancel && *cancel)) {
			reap(&cmds[i], &ps[i], false);
			if (!ps[i].exited)
				gf_sleep_until(gf_monotime() + 0.002);
		}
		if (!ps[i].exited)
			reap(&cmds[i], &ps[i], false);
		if (!ps[i].exited) {
			cmds[i].timed_out = true;
			kill(-ps[i].pid, SIGKILL);
			reap(&cmds[i], &ps[i], true);
			cmds[i].status = -1;
		}
	}
	if (cancel && *cancel)
		rc = stopped(err);
out:
	for (size_t i = 0; i < n; i++) {
		for (int k = 0; k < 2; k++)
			if (ps[i].fd[k] >= 0)
				close(ps[i].fd[k]);
		if (ps[i].pid > 0 && !ps[i].exited) {
			kill(-ps[i].pid, SIGKILL);
			waitpid(ps[i].pid, NULL, 0);
		}
	}
	free(ps);
	free(pfd);
	return rc;
}

/* ---- the collection --------------------------------------------------- */

struct round {
	struct gf_remote_cmd cmds[GF_HC_COUNT];
	enum gf_hostcmd ids[GF_HC_COUNT];
	size_t n;
};

static void round_add(struct round *r, enum gf_hostcmd id, const char *line)
{
	memset(&r->cmds[r->n], 0, sizeof(r->cmds[r->n]));
	r->cmds[r->n].line = line;
	r->ids[r->n++] = id;
}

/* Run a round and move its results into @res (indexed by command). */
static int round_run(const struct gf_host_runner *r, struct round *rd, double deadline,
		     struct gf_remote_cmd res[GF_HC_COUNT], struct gf_err *err)
{
	int rc = r->run(r->ud, rd->cmds, rd->n, deadline, r->cancel, err);

	for (size_t i = 0; i < rd->n; i++) {
		struct gf_remote_cmd *dst = &res[rd->ids[i]];

		gf_remote_cmd_release(dst);
		*dst = rd->cmds[i];
	}
	rd->n = 0;
	return rc;
}

/* Drop @field from @fields; false when it is not there (or is the last one). */
static bool drop_field(const char **fields, size_t *n, const char *field)
{
	for (size_t i = 0; i < *n; i++) {
		if (strcmp(fields[i], field) != 0)
			continue;
		if (*n == 1)
			return false;
		memmove(&fields[i], &fields[i + 1], (*n - i - 1) * sizeof(*fields));
		(*n)--;
		return true;
	}
	return false;
}

/* What the parsers read of each command: views into @res, which keeps them. */
static void outs_of(const struct gf_remote_cmd *res, struct gf_cmd_out *outs)
{
	for (int c = 0; c < GF_HC_COUNT; c++) {
		outs[c] = (struct gf_cmd_out){
			.ran = res[c].ran || res[c].timed_out,
			.timed_out = res[c].timed_out,
			.status = res[c].status,
			.out = gf_buf_str(&res[c].out),
			.err = gf_buf_str(&res[c].err),
		};
	}
}

int gf_host_collect(const struct gf_host_runner *r, double deadline, struct gf_hostfacts *ret,
		    struct gf_err *err)
{
	struct gf_remote_cmd res[GF_HC_COUNT];
	struct gf_cmd_out outs[GF_HC_COUNT];
	const char *fields[64];
	size_t nfields = gf_hostfacts_nquery_fields;
	struct round *rd = gf_xcalloc(1, sizeof(*rd));
	char *qline;
	double cdl = deadline - CLOSE_MARGIN;
	int rc = 0;

	memset(res, 0, sizeof(res));
	memcpy(fields, gf_hostfacts_query_fields, nfields * sizeof(*fields));
	qline = gf_hostfacts_query_cmd(fields, nfields);
	res[GF_HC_SMI_QUERY].line = qline;
	for (int c = 0; c <= GF_HC_JOURNAL; c++)
		round_add(rd, (enum gf_hostcmd)c,
			  c == GF_HC_SMI_QUERY ? qline : gf_hostcmd_line(c));
	rc = round_run(r, rd, cdl, res, err);

	for (int i = 0; rc == 0 && i < MAX_ROUNDS; i++) {
		const struct gf_remote_cmd *q = &res[GF_HC_SMI_QUERY];

		outs_of(res, outs);
		if (q->ran && !q->timed_out && q->status != 0) {
			char *bad = gf_hostfacts_invalid_field(gf_buf_str(&q->out));

			/* An older driver does not know a field: ask again without it. */
			if (bad && drop_field(fields, &nfields, bad)) {
				char *line = gf_hostfacts_query_cmd(fields, nfields);

				free(qline);
				qline = line;
				round_add(rd, GF_HC_SMI_QUERY, qline);
			}
			free(bad);
		}
		for (int c = GF_HC_JOURNAL + 1; c < GF_HC_COUNT; c++)
			if (!res[c].ran && !res[c].timed_out && gf_hostfacts_need_fallback(c, outs))
				round_add(rd, (enum gf_hostcmd)c, gf_hostcmd_line(c));
		if (rd->n == 0)
			break;
		rc = round_run(r, rd, cdl, res, err);
	}
	for (int c = 0; rc == 0 && c < GF_HC_COUNT; c++)
		if (res[c].cut)
			rc = gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
					"'%s' printed more than %u MiB; stopped there", res[c].line,
					GF_REMOTE_MAX_OUTPUT >> 20);
	if (rc == 0) {
		outs_of(res, outs);
		rc = gf_hostfacts_build(outs, fields, nfields, ret, err);
	}
	for (int c = 0; c < GF_HC_COUNT; c++)
		gf_remote_cmd_release(&res[c]);
	free(qline);
	free(rd);
	return rc;
}
