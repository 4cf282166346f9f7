#include "host/ssh.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/ssh2_dl.h" /* <libssh2.h>, its calls through a table */
#include "lib/bounded.h"
#include "lib/node.h"
#include "lib/util.h"

/* sshd allows 10 sessions per connection by default (MaxSessions). */
#define MAX_CHANNELS 10
#define REOPEN_FOR_S 5.0    /* one open refused while none of ours runs: tried that long */
#define REOPEN_PAUSE_S 0.02 /* between those */

struct gf_ssh {
	const char *node;
	char *host; /* as given, for known_hosts and messages */
	int port;
	char *user;
	int sock;
	LIBSSH2_SESSION *sess;
	bool broken;           /* do not try a clean disconnect */
	bool abandoned;        /* channels of commands still running: freed with the session */
	unsigned long long rx; /* bytes received: tells whether a pass read anything */
	unsigned long ended;   /* channels closed on this session (the server may lag) */
	const gf_cancel_flag *cancel; /* Ctrl-C: stop waiting soon */
	const char *password;         /* during keyboard-interactive only */
	bool keepalive_on;
};

/* How long one wait on the peer lasts at most when Ctrl-C may end it. */
#define CANCEL_SLICE_S 0.05

static bool cancelled(const struct gf_ssh *s)
{
	return s->cancel && *s->cancel;
}

static int interrupted(const struct gf_ssh *s, struct gf_err *err)
{
	return gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL, "interrupted while talking to host '%s'",
			  s->node);
}

/* Milliseconds for poll(): what is left of @left seconds, a short slice when cancellable. */
static int poll_ms(const struct gf_ssh *s, double left)
{
	if (s->cancel && left > CANCEL_SLICE_S)
		left = CANCEL_SLICE_S;
	return (int)(left * 1000) + 1;
}

void gf_remote_cmd_release(struct gf_remote_cmd *c)
{
	gf_buf_release(&c->out);
	gf_buf_release(&c->err);
}

int gf_ssh_global_init(struct gf_err *err)
{
	int rc = gf_dl_load(&gf_ssh2_lib, err);

	if (rc < 0)
		return rc;
	rc = libssh2_init(0);
	if (rc)
		return gf_err_set(err, GF_E_IO, GF_EK_INTERNAL, "libssh2 failed to initialise (%d)",
				  rc);
	return 0;
}

void gf_ssh_global_cleanup(void)
{
	if (!gf_ssh2.p_libssh2_exit)
		return; /* never loaded: nothing to undo */
	libssh2_exit();
}

/* ---- helpers ---------------------------------------------------------- */

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Base64 of @len bytes at @p onto @b, without padding. */
static void b64_add(struct gf_buf *b, const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i += 3) {
		unsigned v = (unsigned)p[i] << 16;
		size_t rest = len - i;

		if (rest > 1)
			v |= (unsigned)p[i + 1] << 8;
		if (rest > 2)
			v |= p[i + 2];
		gf_buf_addc(b, b64chars[(v >> 18) & 63]);
		gf_buf_addc(b, b64chars[(v >> 12) & 63]);
		if (rest > 1)
			gf_buf_addc(b, b64chars[(v >> 6) & 63]);
		if (rest > 2)
			gf_buf_addc(b, b64chars[v & 63]);
	}
}

char *gf_ssh_fingerprint(const unsigned char *sha256, size_t len)
{
	struct gf_buf b = GF_BUF_INIT;

	gf_buf_adds(&b, "SHA256:");
	b64_add(&b, sha256, len);
	return gf_buf_detach(&b);
}

static const char *home_dir(void)
{
	const char *h = getenv("HOME");
	struct passwd pw, *res = NULL;
	static __thread char buf[1024];

	if (h && *h)
		return h;
	if (getpwuid_r(getuid(), &pw, buf, sizeof(buf), &res) == 0 && res)
		return res->pw_dir;
	return "/";
}

char *gf_ssh_known_hosts_path(const struct gf_profile *prof)
{
	struct gf_buf b = GF_BUF_INIT;

	if (prof && prof->ssh_known_hosts) {
		if (prof->ssh_known_hosts[0] == '~' && prof->ssh_known_hosts[1] == '/')
			gf_buf_addf(&b, "%s%s", home_dir(), prof->ssh_known_hosts + 1);
		else
			gf_buf_adds(&b, prof->ssh_known_hosts);
	} else {
		gf_buf_addf(&b, "%s/.ssh/known_hosts", home_dir());
	}
	return gf_buf_detach(&b);
}

static char *login_name(void)
{
	struct passwd pw, *res = NULL;
	char buf[1024];

	if (getpwuid_r(geteuid(), &pw, buf, sizeof(buf), &res) == 0 && res)
		return gf_xstrdup(res->pw_name);
	return gf_xstrdup("root");
}

/* The libssh2 error message of the session's last error. */
static const char *ssh_errmsg(LIBSSH2_SESSION *sess)
{
	char *msg = NULL;

	libssh2_session_last_error(sess, &msg, NULL, 0);
	return msg && *msg ? msg : "unknown error";
}

/* A lost socket is a connection failure; anything else the peer said is protocol. */
static enum gf_errkind rc_kind(int rc)
{
	return rc == LIBSSH2_ERROR_SOCKET_DISCONNECT || rc == LIBSSH2_ERROR_SOCKET_RECV ||
			       rc == LIBSSH2_ERROR_SOCKET_SEND
		       ? GF_EK_CONNECT
		       : GF_EK_PROTOCOL;
}

/*
 * Wait until the socket is ready in the direction libssh2 is blocked on, or
 * until @deadline. GF_E_NODE (timeout) when it passes.
 */
static int wait_socket(struct gf_ssh *s, double deadline, const char *what, struct gf_err *err)
{
	struct pollfd pfd = {.fd = s->sock};
	int dir = libssh2_session_block_directions(s->sess);
	double left = deadline - gf_monotime();
	int rc;

	if (cancelled(s))
		return interrupted(s, err);
	if (left <= 0)
		return gf_err_set(err, GF_E_NODE, GF_EK_TIMEOUT,
				  "ssh '%s' did not finish %s in time", s->node, what);
	if (dir & LIBSSH2_SESSION_BLOCK_INBOUND)
		pfd.events |= POLLIN;
	if (dir & LIBSSH2_SESSION_BLOCK_OUTBOUND)
		pfd.events |= POLLOUT;
	if (!pfd.events)
		pfd.events = POLLIN;
	rc = poll(&pfd, 1, poll_ms(s, left));
	if (rc < 0 && errno != EINTR)
		return gf_err_set(err, GF_E_NODE, GF_EK_CONNECT, "ssh '%s' poll failed (%s)",
				  s->node, strerror(errno));
	return 0;
}

/*
 * libssh2's receive, counting bytes: a channel read pulls every packet that
 * is waiting, including other channels' data, into the session's queue. A
 * pass over the channels that received nothing has seen all of it, and only
 * then is it safe to sleep in poll().
 */
static ssize_t counting_recv(libssh2_socket_t fd, void *buf, size_t len, int flags, void **abstract)
{
	struct gf_ssh *s = *abstract;
	ssize_t n = recv(fd, buf, len, flags);

	if (n < 0)
		return -errno;
	s->rx += (unsigned long long)n;
	return n;
}

/* ---- connecting ------------------------------------------------------- */

static int split_spec(const char *node, const char *spec, char **ret_user, char **ret_host,
		      int *ret_port, struct gf_err *err)
{
	const char *at = strrchr(spec, '@');
	char *user = NULL, *host = NULL;
	int port = 0;

	if (at) {
		if (at == spec)
			return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
					  "node '%s' has an empty user in its ssh address '%s'",
					  node, spec);
		user = gf_xstrndup(spec, (size_t)(at - spec));
	}
	if (gf_hostport_parse(at ? at + 1 : spec, &host, &port, err) < 0) {
		free(user);
		return GF_E_USAGE;
	}
	if (!host || !*host) {
		free(user);
		free(host);
		return gf_err_set(err, GF_E_USAGE, GF_EK_NONE,
				  "node '%s' has no host in its ssh address '%s'", node, spec);
	}
	*ret_user = user;
	*ret_host = host;
	*ret_port = port ? port : 22;
	return 0;
}

static int tcp_connect(struct gf_ssh *s, double deadline, struct gf_err *err)
{
	struct addrinfo *res = NULL, *ai;
	struct gf_err rerr = {0};
	int rc, last = 0;
	bool timed_out = false, stopped = false;

	/* getaddrinfo() has no timeout of its own: bounded by the deadline. */
	rc = gf_resolve(s->host, s->port, SOCK_STREAM, deadline, s->cancel, &res, &rerr);
	if (rc < 0)
		return gf_err_set(err, rc, rerr.kind, "ssh '%s': %s", s->node, rerr.msg);
	for (ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
				ai->ai_protocol);
		int one = 1, soerr = 0;
		socklen_t sl = sizeof(soerr);

		if (fd < 0) {
			last = errno;
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
			last = errno;
			close(fd);
			continue;
		}
		for (;;) {
			struct pollfd pfd = {.fd = fd, .events = POLLOUT};
			double left = deadline - gf_monotime();

			if (cancelled(s)) {
				stopped = true;
				break;
			}
			if (left <= 0) {
				timed_out = true;
				break;
			}
			rc = poll(&pfd, 1, poll_ms(s, left));
			if (rc > 0 || (rc < 0 && errno != EINTR))
				break;
		}
		if (timed_out || stopped) {
			close(fd);
			break;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
			soerr = errno;
		if (soerr) {
			last = soerr;
			close(fd);
			continue;
		}
		s->sock = fd;
		freeaddrinfo(res);
		return 0;
	}
	freeaddrinfo(res);
	if (stopped)
		return interrupted(s, err);
	if (timed_out)
		return gf_err_set(err, GF_E_NODE, GF_EK_TIMEOUT,
				  "ssh '%s' did not answer on %s port %d in time", s->node, s->host,
				  s->port);
	return gf_err_set(err, GF_E_NODE, GF_EK_CONNECT,
			  "ssh '%s' cannot connect to %s port %d (%s)", s->node, s->host, s->port,
			  strerror(last ? last : ECONNREFUSED));
}

/* ---- known hosts ------------------------------------------------------ */

static pthread_mutex_t known_hosts_lock = PTHREAD_MUTEX_INITIALIZER;

/* Host key types in preference order: libssh2 method name, known_hosts key type. */
static const struct {
	const char *methods;
	int kh; /* LIBSSH2_KNOWNHOST_KEY_* */
	int hk; /* LIBSSH2_HOSTKEY_TYPE_* */
} key_types[] = {
	{"ssh-ed25519", LIBSSH2_KNOWNHOST_KEY_ED25519, LIBSSH2_HOSTKEY_TYPE_ED25519},
	{"ecdsa-sha2-nistp256", LIBSSH2_KNOWNHOST_KEY_ECDSA_256, LIBSSH2_HOSTKEY_TYPE_ECDSA_256},
	{"ecdsa-sha2-nistp384", LIBSSH2_KNOWNHOST_KEY_ECDSA_384, LIBSSH2_HOSTKEY_TYPE_ECDSA_384},
	{"ecdsa-sha2-nistp521", LIBSSH2_KNOWNHOST_KEY_ECDSA_521, LIBSSH2_HOSTKEY_TYPE_ECDSA_521},
	{"rsa-sha2-512,rsa-sha2-256,ssh-rsa", LIBSSH2_KNOWNHOST_KEY_SSHRSA,
	 LIBSSH2_HOSTKEY_TYPE_RSA},
	{"ssh-dss", LIBSSH2_KNOWNHOST_KEY_SSHDSS, LIBSSH2_HOSTKEY_TYPE_DSS},
};

/* The name known_hosts uses: "host" on port 22, "[host]:port" otherwise (as OpenSSH). */
static char *kh_name(const struct gf_ssh *s)
{
	struct gf_buf b = GF_BUF_INIT;

	if (s->port == 22)
		gf_buf_adds(&b, s->host);
	else
		gf_buf_addf(&b, "[%s]:%d", s->host, s->port);
	return gf_buf_detach(&b);
}

/* What known_hosts says beyond the entries libssh2 reads. */
struct kh_extra {
	char **revoked; /* base64 key blobs (unpadded) of the @revoked lines */
	size_t nrevoked;
	bool other_known; /* a line libssh2 cannot read (a key type it lacks) names the host */
};

static void kh_extra_release(struct kh_extra *x)
{
	for (size_t i = 0; i < x->nrevoked; i++)
		free(x->revoked[i]);
	free(x->revoked);
	*x = (struct kh_extra){0};
}

/* The next blank-separated field of *@p (moved past it), or NULL; @len its length. */
static const char *kh_field(const char **p, size_t *len)
{
	const char *f = *p + strspn(*p, " \t");

	*len = strcspn(f, " \t\r\n");
	*p = f + *len;
	return *len ? f : NULL;
}

/* Does the comma list @hosts (@len bytes) name @name as it is, without a pattern? */
static bool kh_names(const char *hosts, size_t len, const char *name)
{
	size_t nl = strlen(name);

	for (const char *h = hosts, *end = hosts + len; h < end;) {
		const char *c = memchr(h, ',', (size_t)(end - h));
		size_t l = c ? (size_t)(c - h) : (size_t)(end - h);

		if (l == nl && memcmp(h, name, nl) == 0)
			return true;
		h += l + 1;
	}
	return false;
}

/*
 * Read known_hosts line by line: libssh2_knownhost_readfile() stops at the
 * first line it cannot parse (a key type it does not know, a @cert-authority
 * marker), which would hide every entry after it. The keys of @revoked lines
 * go to @x (they are refused for every host, as OpenSSH never accepts them),
 * and a line libssh2 cannot read that names @name plainly marks it known.
 */
static LIBSSH2_KNOWNHOSTS *kh_load(struct gf_ssh *s, const char *path, const char *name,
				   struct kh_extra *x)
{
	LIBSSH2_KNOWNHOSTS *kh = libssh2_knownhost_init(s->sess);
	FILE *f;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	if (!kh)
		return NULL;
	f = fopen(path, "re");
	if (!f)
		return kh; /* no file: every host is unknown */
	while ((len = getline(&line, &cap, f)) >= 0) {
		const char *p = line, *hosts, *key;
		size_t hl, kl;

		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '#' || *p == '\n' || !*p)
			continue;
		if (*p == '@') {
			if (strncmp(p, "@revoked", 8) != 0 || (p[8] != ' ' && p[8] != '\t'))
				continue; /* @cert-authority: no certificates here */
			p += 8;
			if (!kh_field(&p, &hl) || !kh_field(&p, &kl) || !(key = kh_field(&p, &kl)))
				continue;
			while (kl && key[kl - 1] == '=')
				kl--;
			x->revoked = gf_xrealloc(x->revoked,
						 (x->nrevoked + 1) * sizeof(*x->revoked));
			x->revoked[x->nrevoked++] = gf_xstrndup(key, kl);
			continue;
		}
		if (libssh2_knownhost_readline(kh, p, strlen(p), LIBSSH2_KNOWNHOST_FILE_OPENSSH) &&
		    (hosts = kh_field(&p, &hl)) && kh_names(hosts, hl, name))
			x->other_known = true;
	}
	free(line);
	fclose(f);
	return kh;
}

/* Is the raw key blob @key one that a @revoked line holds? */
static bool kh_revoked(const struct kh_extra *x, const char *key, size_t keylen)
{
	struct gf_buf b = GF_BUF_INIT;
	bool hit = false;

	if (!x->nrevoked)
		return false;
	b64_add(&b, (const unsigned char *)key, keylen);
	for (size_t i = 0; i < x->nrevoked && !hit; i++)
		hit = strcmp(x->revoked[i], gf_buf_str(&b)) == 0;
	gf_buf_release(&b);
	return hit;
}

/*
 * The host key method preference from what known_hosts holds for this host:
 * libssh2 1.10 offers ECDSA first, so a host known only by its ed25519 key
 * would otherwise present a key we cannot check. Probing each type with a
 * dummy key tells MISMATCH (an entry of that type exists, hashed or not)
 * from NOTFOUND.
 */
static bool kh_holds(LIBSSH2_KNOWNHOSTS *kh, const char *name, int kt)
{
	static const char dummy[] = "gpufleet-probe";

	return libssh2_knownhost_check(kh, name, dummy, sizeof(dummy) - 1,
				       LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW |
					       kt,
				       NULL) == LIBSSH2_KNOWNHOST_CHECK_MISMATCH;
}

static void kh_types(LIBSSH2_KNOWNHOSTS *kh, const char *name, bool held[NELEM(key_types)],
		     size_t *ret_n)
{
	size_t n = 0;

	for (size_t i = 0; i < NELEM(key_types); i++) {
		held[i] = kh_holds(kh, name, key_types[i].kh);
		n += held[i];
	}
	*ret_n = n;
}

/* Keep only the methods of @want (comma list) that this libssh2 supports. */
static void add_supported(LIBSSH2_SESSION *sess, const char *want, struct gf_buf *b)
{
	const char **algs = NULL;
	int n = libssh2_session_supported_algs(sess, LIBSSH2_METHOD_HOSTKEY, &algs);
	const char *p = want;

	while (*p) {
		size_t len = strcspn(p, ",");

		for (int i = 0; i < n; i++) {
			if (strlen(algs[i]) == len && strncmp(algs[i], p, len) == 0) {
				if (b->len)
					gf_buf_addc(b, ',');
				gf_buf_add(b, p, len);
			}
		}
		p += len;
		if (*p == ',')
			p++;
	}
	if (n > 0)
		libssh2_free(sess, algs);
}

static int set_hostkey_pref(struct gf_ssh *s, LIBSSH2_KNOWNHOSTS *kh, const char *name,
			    bool *ret_known)
{
	bool held[NELEM(key_types)];
	struct gf_buf b = GF_BUF_INIT;
	size_t n;
	int rc = 0;

	kh_types(kh, name, held, &n);
	for (size_t i = 0; i < NELEM(key_types); i++)
		if (held[i] || n == 0)
			add_supported(s->sess, key_types[i].methods, &b);
	if (b.len)
		rc = libssh2_session_method_pref(s->sess, LIBSSH2_METHOD_HOSTKEY, gf_buf_str(&b));
	gf_buf_release(&b);
	*ret_known = n > 0;
	return rc;
}

static int kh_type_of(int hostkey_type)
{
	for (size_t i = 0; i < NELEM(key_types); i++)
		if (key_types[i].hk == hostkey_type)
			return key_types[i].kh;
	return LIBSSH2_KNOWNHOST_KEY_UNKNOWN;
}

/* Append one entry to @path (made 0600, its directory 0700), under a lock. */
static int kh_append(struct gf_ssh *s, LIBSSH2_KNOWNHOSTS *kh, const char *path, const char *name,
		     const char *key, size_t keylen, int kt, struct gf_err *err)
{
	struct libssh2_knownhost *entry = NULL;
	char line[8192];
	size_t outlen = 0;
	int fd, rc = 0;

	if (libssh2_knownhost_addc(kh, name, NULL, key, keylen, "added by gpufleet",
				   strlen("added by gpufleet"),
				   LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW | kt,
				   &entry) ||
	    libssh2_knownhost_writeline(kh, entry, line, sizeof(line), &outlen,
					LIBSSH2_KNOWNHOST_FILE_OPENSSH))
		return gf_err_set(err, GF_E_NODE, GF_EK_HOSTKEY,
				  "ssh '%s' host key could not be recorded (%s)", s->node,
				  ssh_errmsg(s->sess));
	pthread_mutex_lock(&known_hosts_lock);
	if (gf_mkdir_parents(path, err) < 0) {
		pthread_mutex_unlock(&known_hosts_lock);
		return GF_E_IO;
	}
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = gf_err_set(err, GF_E_NODE, GF_EK_HOSTKEY, "cannot write '%s' (%s)", path,
				strerror(errno));
	} else {
		flock(fd, LOCK_EX);
		if (write(fd, line, outlen) != (ssize_t)outlen)
			rc = gf_err_set(err, GF_E_NODE, GF_EK_HOSTKEY, "cannot write '%s' (%s)",
					path, strerror(errno));
		flock(fd, LOCK_UN);
		close(fd);
	}
	pthread_mutex_unlock(&known_hosts_lock);
	return rc;
}

/*
 * @known: known_hosts holds keys for the host (of any type). A revoked key is
 * refused before anything else; --ssh-accept-new records a key only for a
 * host that is not known at all, never one of another type beside its keys.
 */
static int check_host_key(struct gf_ssh *s, LIBSSH2_KNOWNHOSTS *kh, const struct kh_extra *x,
			  const char *path, const char *name, bool known, bool accept_new,
			  struct gf_err *err)
{
	size_t keylen = 0;
	int type = 0, kt, rc;
	const char *key = libssh2_session_hostkey(s->sess, &keylen, &type);
	const char *hash = libssh2_hostkey_hash(s->sess, LIBSSH2_HOSTKEY_HASH_SHA256);
	char *fp;

	if (!key || !hash)
		return gf_err_set(err, GF_E_NODE, GF_EK_HOSTKEY, "ssh '%s' sent no host key",
				  s->node);
	kt = kh_type_of(type);
	fp = gf_ssh_fingerprint((const unsigned char *)hash, 32);
	if (kh_revoked(x, key, keylen)) {
		rc = gf_err_set(err, GF_E_NODE, GF_EK_HOSTKEY,
				"host key of '%s' (%s) is revoked: %s is marked @revoked in '%s'; "
				"refusing it",
				s->node, name, fp, path);
		free(fp);
		return rc;
	}
	rc = libssh2_knownhost_check(kh, name, key, keylen,
				     LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW |
					     kt,
				     NULL);
	switch (rc) {
	case LIBSSH2_KNOWNHOST_CHECK_MATCH: rc = 0; break;
	case LIBSSH2_KNOWNHOST_CHECK_MISMATCH:
		rc = gf_err_set(err, GF_E_NODE, GF_EK_HOSTKEY,
				"host key of '%s' (%s) changed: it is now %s, which '%s' does not hold; "
				"refusing it",
				s->node, name, fp, path);
		break;
	case LIBSSH2_KNOWNHOST_CHECK_NOTFOUND:
		if (known) {
			rc = gf_err_set(err, GF_E_NODE, GF_EK_HOSTKEY,
					"host key of '%s' (%s) changed: it offers %s, a key type '%s' "
					"holds none of for it; refusing it (not recorded)",
					s->node, name, fp, path);
			break;
		}
		if (accept_new) {
			rc = kh_append(s, kh, path, name, key, keylen, kt, err);
			break;
		}
		rc = gf_err_set(err, GF_E_NODE, GF_EK_HOSTKEY,
				"host key of '%s' (%s) is unknown: %s is not in '%s' "
				"(check it, then use --ssh-accept-new to record it)",
				s->node, name, fp, path);
		break;
	default:
		rc = gf_err_set(err, GF_E_NODE, GF_EK_HOSTKEY,
				"ssh '%s' host key check failed (%s)", s->node,
				ssh_errmsg(s->sess));
		break;
	}
	free(fp);
	return rc;
}

/* ---- authentication --------------------------------------------------- */

static int auth_agent(struct gf_ssh *s, double deadline, bool *ret_ok, size_t *ret_tried,
		      struct gf_err *err)
{
	LIBSSH2_AGENT *agent = libssh2_agent_init(s->sess);
	struct libssh2_agent_publickey *id = NULL, *prev = NULL;
	int rc = 0;

	*ret_ok = false;
	if (!agent)
		return 0;
	/* No agent (SSH_AUTH_SOCK unset or dead) is not an error: key files come next. */
	if (libssh2_agent_connect(agent) != 0 || libssh2_agent_list_identities(agent) != 0)
		goto out;
	while (libssh2_agent_get_identity(agent, &id, prev) == 0) {
		while ((rc = libssh2_agent_userauth(agent, s->user, id)) == LIBSSH2_ERROR_EAGAIN) {
			if (wait_socket(s, deadline, "authentication", err) < 0) {
				rc = GF_E_NODE;
				goto out;
			}
		}
		(*ret_tried)++;
		if (rc == 0) {
			*ret_ok = true;
			goto out;
		}
		rc = 0;
		prev = id;
	}
out:
	libssh2_agent_disconnect(agent);
	libssh2_agent_free(agent);
	return rc;
}

/* How trying one key file went. */
enum key_try {
	KEY_OK,       /* logged in */
	KEY_REFUSED,  /* the server refused it */
	KEY_ABSENT,   /* no such file */
	KEY_UNUSABLE, /* unreadable, open to others, or a wrong or missing passphrase */
};

/*
 * Try one key file. Returns 0 with *ret set, or GF_E_NODE when the
 * connection failed or the deadline passed. @why gets the reason of
 * KEY_UNUSABLE. A key file that its group or others may read is refused, as
 * OpenSSH does.
 */
static int try_key_file(struct gf_ssh *s, const char *path, const char *passphrase, double deadline,
			enum key_try *ret, struct gf_buf *why, struct gf_err *err)
{
	struct stat st;
	int rc;

	if (stat(path, &st) < 0) {
		*ret = errno == ENOENT ? KEY_ABSENT : KEY_UNUSABLE;
		gf_buf_addf(why, "ssh key '%s' cannot be read (%s)", path, strerror(errno));
		return 0;
	}
	if (st.st_mode & 077) {
		*ret = KEY_UNUSABLE;
		gf_buf_addf(why, "ssh key '%s' is open to group or others (mode %04o); refusing it",
			    path, (unsigned)(st.st_mode & 07777));
		return 0;
	}
	while ((rc = libssh2_userauth_publickey_fromfile_ex(s->sess, s->user,
							    (unsigned)strlen(s->user), NULL, path,
							    passphrase)) == LIBSSH2_ERROR_EAGAIN)
		if (wait_socket(s, deadline, "authentication", err) < 0)
			return GF_E_NODE;
	switch (rc) {
	case 0: *ret = KEY_OK; return 0;
	case LIBSSH2_ERROR_FILE:
		*ret = KEY_UNUSABLE;
		gf_buf_addf(why, "ssh key '%s' cannot be used (%s; a wrong or missing passphrase?)",
			    path, ssh_errmsg(s->sess));
		return 0;
	case LIBSSH2_ERROR_SOCKET_DISCONNECT:
	case LIBSSH2_ERROR_SOCKET_SEND:
	case LIBSSH2_ERROR_SOCKET_RECV:
		return gf_err_set(err, GF_E_NODE, GF_EK_CONNECT,
				  "ssh '%s' dropped the connection (%s)", s->node,
				  ssh_errmsg(s->sess));
	default: *ret = KEY_REFUSED; return 0;
	}
}

/* Wait for the list of methods the server accepts for our user; "none" may already pass. */
/* The methods the server takes for our user (*@ret_list), or *@ret_done: no login needed. */
static int auth_list(struct gf_ssh *s, double deadline, char **ret_list, bool *ret_done,
		     struct gf_err *err)
{
	char *l;

	*ret_done = false;
	while (!(l = libssh2_userauth_list(s->sess, s->user, (unsigned)strlen(s->user)))) {
		if (libssh2_userauth_authenticated(s->sess)) {
			*ret_done = true;
			return 0;
		}
		if (libssh2_session_last_errno(s->sess) != LIBSSH2_ERROR_EAGAIN)
			return gf_err_set(err, GF_E_NODE, GF_EK_AUTH,
					  "ssh '%s' refused user '%s' (%s)", s->node, s->user,
					  ssh_errmsg(s->sess));
		if (wait_socket(s, deadline, "authentication", err) < 0)
			return GF_E_NODE;
	}
	*ret_list = l;
	return 0;
}

static int auth_methods(struct gf_ssh *s, double deadline, bool *ret_done, struct gf_err *err)
{
	char *l = NULL;
	int rc = auth_list(s, deadline, &l, ret_done, err);

	if (rc < 0 || *ret_done)
		return rc;
	if (!strstr(l, "publickey"))
		return gf_err_set(err, GF_E_NODE, GF_EK_AUTH,
				  "ssh '%s' does not accept public keys for '%s' (only %s)",
				  s->node, s->user, l);
	return 0;
}

/*
 * ssh-agent first, then the profile's ssh_key alone, or else the default
 * key files (a missing or unusable default is skipped, as OpenSSH does).
 */
static int authenticate(struct gf_ssh *s, const struct gf_profile *prof, double deadline,
			struct gf_err *err)
{
	static const char *const defaults[] = {"id_ed25519", "id_ecdsa", "id_rsa"};
	const char *passphrase = NULL;
	struct gf_buf tried = GF_BUF_INIT, why = GF_BUF_INIT;
	size_t nagent = 0;
	bool ok = false;
	int rc;

	rc = auth_methods(s, deadline, &ok, err);
	if (rc < 0 || ok)
		return rc;
	rc = auth_agent(s, deadline, &ok, &nagent, err);
	if (rc < 0 || ok)
		return rc;
	if (nagent)
		gf_buf_addf(&tried, "%zu agent key%s", nagent, nagent > 1 ? "s" : "");
	/* gf_creds_resolve_ssh() took the variable or ran the command: the environment has no more. */
	if (prof)
		passphrase = prof->ssh_key_passphrase;
	for (size_t i = 0; i < (prof && prof->ssh_key ? 1 : NELEM(defaults)); i++) {
		struct gf_buf path = GF_BUF_INIT, one = GF_BUF_INIT;
		enum key_try got = KEY_ABSENT;

		if (prof && prof->ssh_key)
			gf_buf_adds(&path, prof->ssh_key);
		else
			gf_buf_addf(&path, "%s/.ssh/%s", home_dir(), defaults[i]);
		rc = try_key_file(s, gf_buf_str(&path), passphrase, deadline, &got, &one, err);
		if (rc == 0 && got == KEY_REFUSED)
			gf_buf_addf(&tried, "%s'%s'", tried.len ? ", " : "", gf_buf_str(&path));
		if (rc == 0 && got == KEY_UNUSABLE)
			gf_buf_addf(&why, "%s%s", why.len ? "; " : "", gf_buf_str(&one));
		/* The key the profile names must work: say why it did not. */
		if (rc == 0 && prof && prof->ssh_key && got != KEY_OK && got != KEY_REFUSED)
			rc = gf_err_set(err, GF_E_NODE, GF_EK_AUTH, "%s", gf_buf_str(&one));
		gf_buf_release(&path);
		gf_buf_release(&one);
		if (rc < 0)
			goto out;
		if (got == KEY_OK) {
			ok = true;
			goto out;
		}
	}
	rc = gf_err_set(err, GF_E_NODE, GF_EK_AUTH, "ssh '%s' refused user '%s' with %s%s%s",
			s->node, s->user,
			tried.len ? gf_buf_str(&tried)
				  : "no key at all (no agent key, no key file)",
			why.len ? "; " : "", gf_buf_str(&why));
out:
	gf_buf_release(&tried);
	gf_buf_release(&why);
	return ok ? 0 : rc;
}

/* Keyboard-interactive: every prompt is answered with the password (as OpenSSH's PAM asks it). */
static void kbd_answer(const char *name, int name_len, const char *instruction, int instruction_len,
		       int num_prompts, const LIBSSH2_USERAUTH_KBDINT_PROMPT *prompts,
		       LIBSSH2_USERAUTH_KBDINT_RESPONSE *responses, void **abstract)
{
	const struct gf_ssh *s = *abstract;

	(void)name;
	(void)name_len;
	(void)instruction;
	(void)instruction_len;
	(void)prompts;
	for (int i = 0; i < num_prompts; i++) {
		responses[i].text = s->password ? strdup(s->password) : NULL;
		responses[i].length = responses[i].text ? (unsigned)strlen(responses[i].text) : 0;
	}
}

/* A BMC's login: its user and password, by password or keyboard-interactive. */
static int auth_password(struct gf_ssh *s, const char *password, double deadline,
			 struct gf_err *err)
{
	unsigned ulen = (unsigned)strlen(s->user);
	char *l = NULL;
	bool done;
	int rc = auth_list(s, deadline, &l, &done, err);

	if (rc < 0 || done)
		return rc;
	if (strstr(l, "password")) {
		while ((rc = libssh2_userauth_password_ex(s->sess, s->user, ulen, password,
							  (unsigned)strlen(password), NULL)) ==
		       LIBSSH2_ERROR_EAGAIN)
			if (wait_socket(s, deadline, "authentication", err) < 0)
				return GF_E_NODE;
	} else if (strstr(l, "keyboard-interactive")) {
		s->password = password;
		while ((rc = libssh2_userauth_keyboard_interactive_ex(s->sess, s->user, ulen,
								      kbd_answer)) ==
		       LIBSSH2_ERROR_EAGAIN)
			if (wait_socket(s, deadline, "authentication", err) < 0) {
				s->password = NULL;
				return GF_E_NODE;
			}
		s->password = NULL;
	} else {
		return gf_err_set(err, GF_E_NODE, GF_EK_AUTH,
				  "ssh '%s' takes no password for '%s' (only %s)", s->node, s->user,
				  l);
	}
	if (rc == LIBSSH2_ERROR_AUTHENTICATION_FAILED || rc == LIBSSH2_ERROR_PUBLICKEY_UNVERIFIED)
		return gf_err_set(err, GF_E_NODE, GF_EK_AUTH,
				  "ssh '%s' refused the password of user '%s'", s->node, s->user);
	if (rc)
		return gf_err_set(err, GF_E_NODE, rc_kind(rc), "ssh '%s' login failed (%s)",
				  s->node, ssh_errmsg(s->sess));
	return 0;
}

/* ---- the session ------------------------------------------------------ */

int gf_ssh_open(const struct gf_ssh_target *t, struct gf_ssh **ret, struct gf_err *err)
{
	struct gf_ssh *s;
	LIBSSH2_KNOWNHOSTS *kh = NULL;
	struct kh_extra x = {0};
	char *khpath = NULL, *name = NULL;
	bool known = false;
	int rc = gf_dl_load(&gf_ssh2_lib, err); /* gf_ssh_global_init() did, normally */

	if (rc < 0)
		return rc;
	s = gf_xcalloc(1, sizeof(*s));
	s->node = t->node;
	s->sock = -1;
	s->cancel = t->cancel;
	rc = split_spec(t->node, t->spec, &s->user, &s->host, &s->port, err);
	if (rc < 0) {
		/* A bad address in the registry: this node cannot be reached, the others can. */
		if (err) {
			err->code = GF_E_NODE;
			err->kind = GF_EK_UNSUPPORTED;
		}
		rc = GF_E_NODE;
		goto fail;
	}
	if (!s->user)
		s->user = t->prof && t->prof->ssh_user ? gf_xstrdup(t->prof->ssh_user)
						       : login_name();
	rc = tcp_connect(s, t->deadline, err);
	if (rc < 0)
		goto fail;
	s->sess = libssh2_session_init_ex(NULL, NULL, NULL, s);
	if (!s->sess) {
		rc = gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL, "ssh '%s': no memory for a session",
				s->node);
		goto fail;
	}
	libssh2_session_set_blocking(s->sess, 0);
	{
		/* libssh2 takes the callback as a void *; POSIX makes that round trip safe. */
		ssize_t (*fn)(libssh2_socket_t, void *, size_t, int, void **) = counting_recv;
		void *cb;

		memcpy(&cb, &fn, sizeof(cb));
		libssh2_session_callback_set(s->sess, LIBSSH2_CALLBACK_RECV, cb);
	}

	khpath = gf_ssh_known_hosts_path(t->prof);
	name = kh_name(s);
	kh = kh_load(s, khpath, name, &x);
	if (!kh) {
		rc = gf_err_set(err, GF_E_NODE, GF_EK_INTERNAL,
				"ssh '%s': no memory for known hosts", s->node);
		goto fail;
	}
	set_hostkey_pref(s, kh, name, &known);
	/*
	 * Keys of a type libssh2 keeps but cannot use (security keys) make the
	 * host known too: a probe with no key type matches an entry of any.
	 */
	known = known || x.other_known || kh_holds(kh, name, 0);

	while ((rc = libssh2_session_handshake(s->sess, s->sock)) == LIBSSH2_ERROR_EAGAIN) {
		if (wait_socket(s, t->deadline, "the handshake", err) < 0) {
			rc = GF_E_NODE;
			s->broken = true;
			goto fail;
		}
	}
	if (rc) {
		if (rc == LIBSSH2_ERROR_KEX_FAILURE && known)
			rc = gf_err_set(err, GF_E_NODE, GF_EK_HOSTKEY,
					"host key of '%s' (%s) changed: it offers none of the key types "
					"that '%s' holds for it; refusing it",
					s->node, name, khpath);
		else
			rc = gf_err_set(err, GF_E_NODE, rc_kind(rc),
					"ssh '%s' handshake failed (%s)", s->node,
					ssh_errmsg(s->sess));
		s->broken = true;
		goto fail;
	}
	rc = check_host_key(s, kh, &x, khpath, name, known, t->accept_new, err);
	if (rc < 0)
		goto fail;
	rc = t->password ? auth_password(s, t->password, t->deadline, err)
			 : authenticate(s, t->prof, t->deadline, err);
	if (rc < 0)
		goto fail;
	libssh2_knownhost_free(kh);
	kh_extra_release(&x);
	free(khpath);
	free(name);
	*ret = s;
	return 0;
fail:
	if (kh)
		libssh2_knownhost_free(kh);
	kh_extra_release(&x);
	free(khpath);
	free(name);
	gf_ssh_close(s);
	return rc < 0 ? rc : GF_E_NODE;
}

/*
 * After our disconnect: stop writing, and read (and drop) what the server
 * still sends until it closes, for at most CLOSE_WAIT_S. Closing a socket
 * with unread data resets the connection, and a server busy sending output
 * of channels still running may then meet the reset before it reads the
 * disconnect: it ends on a broken pipe and never learns why.
 */
#define CLOSE_WAIT_S 0.5

static void await_server_close(int sock)
{
	double until = gf_monotime() + CLOSE_WAIT_S;
	char sink[16384];

	if (shutdown(sock, SHUT_WR) < 0)
		return;
	for (;;) {
		struct pollfd pfd = {.fd = sock, .events = POLLIN};
		double left = until - gf_monotime();
		ssize_t got;

		if (left <= 0)
			return;
		if (poll(&pfd, 1, (int)(left * 1000) + 1) < 0 && errno != EINTR)
			return;
		got = recv(sock, sink, sizeof(sink), MSG_DONTWAIT);
		if (got == 0 ||
		    (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			return; /* closed by the server, or reset */
	}
}

void gf_ssh_close(struct gf_ssh *s)
{
	if (!s)
		return;
	if (s->sess) {
		if (!s->broken) {
			double until = gf_monotime() + 0.2;
			int rc;

			while ((rc = libssh2_session_disconnect(s->sess, "done")) ==
				       LIBSSH2_ERROR_EAGAIN &&
			       gf_monotime() < until) {
				struct pollfd pfd = {.fd = s->sock, .events = POLLOUT};

				poll(&pfd, 1, 20);
			}
			if (rc == 0)
				await_server_close(s->sock);
		}
		/*
		 * Freeing a session closes its channels, and closing a channel
		 * waits for the peer's close, which a hung command never sends:
		 * cut the connection first so that nothing here can block.
		 */
		if (s->sock >= 0)
			shutdown(s->sock, SHUT_RDWR);
		for (int i = 0; i < 50 && libssh2_session_free(s->sess) == LIBSSH2_ERROR_EAGAIN;
		     i++)
			;
	}
	if (s->sock >= 0)
		close(s->sock);
	free(s->host);
	free(s->user);
	free(s);
}

/* ---- running commands ------------------------------------------------- */

enum ch_state {
	CH_IDLE = 0, /* not started */
	CH_OPEN,     /* channel being opened */
	CH_EXEC,     /* exec request sent */
	CH_EOF,      /* sending EOF on its stdin */
	CH_READ,     /* reading its output */
	CH_CLOSE,    /* closing */
	CH_WAIT,     /* waiting for the peer's close */
	CH_DONE,
};

struct chan {
	LIBSSH2_CHANNEL *ch;
	enum ch_state st;
};

bool gf_remote_keep(struct gf_remote_cmd *c, struct gf_buf *b, const char *data, size_t n)
{
	size_t max = c->max ? c->max : GF_REMOTE_MAX_OUTPUT;
	size_t room = b->len < max ? max - b->len : 0;

	gf_buf_add(b, data, n < room ? n : room);
	if (n > room)
		c->cut = true;
	return !c->cut;
}

/* Read what is there on both streams; returns >0 progress, 0 nothing, <0 error. */
static int drain(LIBSSH2_CHANNEL *ch, struct gf_remote_cmd *c)
{
	char buf[16384];
	int progress = 0;

	for (int stream = 0; stream < 2; stream++) {
		for (;;) {
			ssize_t n = libssh2_channel_read_ex(ch,
							    stream ? SSH_EXTENDED_DATA_STDERR : 0,
							    buf, sizeof(buf));

			if (n == LIBSSH2_ERROR_EAGAIN || n == 0)
				break;
			if (n < 0)
				return (int)n;
			progress = 1;
			if (!gf_remote_keep(c, stream ? &c->err : &c->out, buf, (size_t)n))
				return progress; /* cut: the caller closes the channel */
		}
	}
	return progress;
}

/* Advance one channel as far as it goes without blocking. */
static int step(struct gf_ssh *s, struct chan *k, struct gf_remote_cmd *c, bool *progress,
		struct gf_err *err)
{
	int rc;

	for (;;) {
		switch (k->st) {
		case CH_OPEN:
			k->ch = libssh2_channel_open_session(s->sess);
			if (!k->ch) {
				rc = libssh2_session_last_errno(s->sess);
				if (rc == LIBSSH2_ERROR_EAGAIN)
					return 0;
				return rc;
			}
			k->st = CH_EXEC;
			*progress = true;
			break;
		case CH_EXEC:
			rc = libssh2_channel_exec(k->ch, c->line);
			if (rc == LIBSSH2_ERROR_EAGAIN)
				return 0;
			if (rc)
				return rc;
			c->ran = true;
			k->st = CH_EOF;
			*progress = true;
			break;
		case CH_EOF:
			/* The commands read nothing: end their stdin as ssh -n does. */
			rc = libssh2_channel_send_eof(k->ch);
			if (rc == LIBSSH2_ERROR_EAGAIN)
				return 0;
			k->st = CH_READ;
			*progress = true;
			break;
		case CH_READ:
			rc = drain(k->ch, c);
			if (rc < 0)
				return rc;
			if (rc > 0)
				*progress = true;
			if (!c->cut && !libssh2_channel_eof(k->ch))
				return 0;
			k->st = CH_CLOSE;
			*progress = true;
			break;
		case CH_CLOSE:
			rc = libssh2_channel_close(k->ch);
			if (rc == LIBSSH2_ERROR_EAGAIN) {
				drain(k->ch, c);
				return 0;
			}
			k->st = CH_WAIT;
			*progress = true;
			break;
		case CH_WAIT: {
			char *sig = NULL;

			rc = libssh2_channel_wait_closed(k->ch);
			if (rc == LIBSSH2_ERROR_EAGAIN)
				return 0;
			c->status = libssh2_channel_get_exit_status(k->ch);
			if (libssh2_channel_get_exit_signal(k->ch, &sig, NULL, NULL, NULL, NULL,
							    NULL) == 0 &&
			    sig) {
				c->status = -1;
				libssh2_free(s->sess, sig);
			}
			libssh2_channel_free(k->ch);
			s->ended++;
			k->ch = NULL;
			k->st = CH_DONE;
			*progress = true;
			return 0;
		}
		case CH_IDLE:
		case CH_DONE: return 0;
		}
	}
}

void gf_remote_cmds_reset(struct gf_remote_cmd *cmds, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		cmds[i].ran = false;
		cmds[i].timed_out = false;
		cmds[i].cut = false;
		cmds[i].status = -1;
	}
}

int gf_ssh_run(struct gf_ssh *s, struct gf_remote_cmd *cmds, size_t n, double deadline,
	       struct gf_err *err)
{
	struct chan *ks = gf_xcalloc(n ? n : 1, sizeof(*ks));
	size_t next = 0, done = 0, limit = MAX_CHANNELS;
	double refused_at = 0; /* an open refused while none of ours ran: see below */
	double reopen_at = 0;  /* no open before this (monotonic) */
	int rc = 0;

	gf_remote_cmds_reset(cmds, n);
	while (done < n) {
		bool progress = false, opening = false;
		size_t running = 0;
		unsigned long long rx = s->rx;

		if (cancelled(s)) {
			/* The session is sound: close it, and leave the commands to the server. */
			s->abandoned = true;
			rc = interrupted(s, err);
			goto out;
		}

		for (size_t i = 0; i < n; i++) {
			enum ch_state before = ks[i].st;

			if (ks[i].st == CH_IDLE || ks[i].st == CH_DONE)
				continue;
			running++;
			opening |= ks[i].st == CH_OPEN;
			rc = step(s, &ks[i], &cmds[i], &progress, err);
			if (rc == LIBSSH2_ERROR_CHANNEL_FAILURE && before == CH_OPEN &&
			    (running > 1 ||
			     (s->ended > 0 &&
			      (!refused_at || gf_monotime() < refused_at + REOPEN_FOR_S)))) {
				/*
				 * The server allows fewer sessions: wait for one to end.
				 * With none of ours left running, the server has not yet
				 * let go of the ones that ended: try again shortly.
				 */
				if (running > 1) {
					limit = running - 1;
				} else {
					if (!refused_at)
						refused_at = gf_monotime();
					reopen_at = gf_monotime() + REOPEN_PAUSE_S;
				}
				ks[i].st = CH_IDLE;
				next = i;
				running--;
				rc = 0;
				continue;
			}
			if (!rc && before == CH_OPEN && ks[i].st != CH_OPEN)
				refused_at = 0; /* opened: the next open has its own tries */
			if (rc) {
				rc = gf_err_set(err, GF_E_NODE, rc_kind(rc),
						"ssh '%s' failed running '%s' (%s)", s->node,
						cmds[i].line, ssh_errmsg(s->sess));
				s->broken = true;
				goto out;
			}
			if (ks[i].st == CH_DONE) {
				done++;
				running--;
			}
		}
		/* One channel open at a time: libssh2 keeps that state per session. */
		if (!opening && next < n && running < limit && running == 0 &&
		    gf_monotime() < reopen_at) {
			/* Nothing of ours to wait on: the pause before the next open. */
			gf_sleep_until(reopen_at < deadline ? reopen_at : deadline);
		}
		if (!opening && next < n && running < limit && gf_monotime() >= reopen_at) {
			while (next < n && ks[next].st != CH_IDLE)
				next++;
			if (next < n) {
				ks[next].st = CH_OPEN;
				progress = true;
				continue;
			}
		}
		if (done >= n)
			break;
		if (gf_monotime() >= deadline) {
			for (size_t i = 0; i < n; i++)
				if (ks[i].st != CH_DONE)
					cmds[i].timed_out = true;
			/* Channels of hung commands cannot be closed cleanly: drop the connection. */
			s->broken = true;
			break;
		}
		if (!progress && rx == s->rx && wait_socket(s, deadline, "the commands", NULL) < 0)
			continue;
	}
out:
	for (size_t i = 0; i < n; i++)
		if (ks[i].ch && !s->broken && !s->abandoned)
			libssh2_channel_free(ks[i].ch);
	free(ks);
	return rc;
}

/* ---- an interactive channel ------------------------------------------- */

struct gf_ssh_chan {
	struct gf_ssh *s;
	LIBSSH2_CHANNEL *ch;
};

/* One try of a channel request: 0 done, 1 to try again (waited), GF_E_NODE refused or late. */
static int chan_step(struct gf_ssh *s, int rc, double deadline, const char *what,
		     struct gf_err *err)
{
	if (rc == 0)
		return 0;
	if (rc != LIBSSH2_ERROR_EAGAIN)
		return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL, "ssh '%s' refused %s (%s)",
				  s->node, what, ssh_errmsg(s->sess));
	return wait_socket(s, deadline, what, err) < 0 ? GF_E_NODE : 1;
}

int gf_ssh_shell(struct gf_ssh *s, const char *term, int cols, int rows, double deadline,
		 struct gf_ssh_chan **ret, struct gf_err *err)
{
	LIBSSH2_CHANNEL *ch;
	struct gf_ssh_chan *c;
	int rc;

	while (!(ch = libssh2_channel_open_session(s->sess))) {
		if (libssh2_session_last_errno(s->sess) != LIBSSH2_ERROR_EAGAIN)
			return gf_err_set(err, GF_E_NODE, GF_EK_PROTOCOL,
					  "ssh '%s' refused a session channel (%s)", s->node,
					  ssh_errmsg(s->sess));
		if (wait_socket(s, deadline, "opening a channel", err) < 0)
			return GF_E_NODE;
	}
	rc = 0;
	while (term &&
	       (rc = chan_step(s,
			       libssh2_channel_request_pty_ex(ch, term, (unsigned)strlen(term),
							      NULL, 0, cols, rows, 0, 0),
			       deadline, "a terminal", err)) > 0)
		;
	while (rc == 0 &&
	       (rc = chan_step(s, libssh2_channel_shell(ch), deadline, "the console", err)) > 0)
		;
	if (rc < 0)
		goto fail;
	c = gf_xcalloc(1, sizeof(*c));
	c->s = s;
	c->ch = ch;
	*ret = c;
	return 0;
fail:
	s->broken = true; /* a half-open channel: no clean disconnect to wait for */
	libssh2_channel_free(ch);
	return GF_E_NODE;
}

static long chan_failed(struct gf_ssh_chan *c, long rc, struct gf_err *err)
{
	return gf_err_set(err, GF_E_NODE, rc_kind((int)rc), "ssh '%s' console failed (%s)",
			  c->s->node, ssh_errmsg(c->s->sess));
}

long gf_ssh_chan_read(struct gf_ssh_chan *c, void *buf, size_t n, struct gf_err *err)
{
	ssize_t rc = libssh2_channel_read(c->ch, buf, n);

	if (rc == LIBSSH2_ERROR_EAGAIN || rc == 0)
		rc = libssh2_channel_read_stderr(c->ch, buf, n);
	if (rc > 0)
		return (long)rc;
	if (rc < 0 && rc != LIBSSH2_ERROR_EAGAIN)
		return chan_failed(c, (long)rc, err);
	if (libssh2_channel_eof(c->ch))
		return gf_err_set(err, GF_E_NODE, GF_EK_CONNECT,
				  "ssh '%s' ended the console session", c->s->node);
	return 0;
}

long gf_ssh_chan_write(struct gf_ssh_chan *c, const void *buf, size_t n, struct gf_err *err)
{
	ssize_t rc = libssh2_channel_write(c->ch, buf, n);

	if (rc == LIBSSH2_ERROR_EAGAIN)
		return 0;
	if (rc < 0)
		return chan_failed(c, (long)rc, err);
	return (long)rc;
}

int gf_ssh_chan_resize(struct gf_ssh_chan *c, int cols, int rows, struct gf_err *err)
{
	int rc;
	double until = gf_monotime() + 1;

	while ((rc = libssh2_channel_request_pty_size(c->ch, cols, rows)) == LIBSSH2_ERROR_EAGAIN)
		if (wait_socket(c->s, until, "a window change", err) < 0)
			return GF_E_NODE;
	return rc ? (int)chan_failed(c, rc, err) : 0;
}

void gf_ssh_chan_free(struct gf_ssh_chan *c)
{
	free(c); /* the channel goes with its session (gf_ssh_close) */
}

int gf_ssh_socket(const struct gf_ssh *s)
{
	return s->sock;
}

short gf_ssh_events(const struct gf_ssh *s)
{
	int dir = libssh2_session_block_directions(s->sess);

	return (short)(POLLIN | (dir & LIBSSH2_SESSION_BLOCK_OUTBOUND ? POLLOUT : 0));
}

unsigned long long gf_ssh_received(const struct gf_ssh *s)
{
	return s->rx;
}

void gf_ssh_keepalive(struct gf_ssh *s, int interval)
{
	int next = 0;

	if (!s->keepalive_on) {
		libssh2_keepalive_config(s->sess, 1, (unsigned)interval);
		s->keepalive_on = true;
	}
	libssh2_keepalive_send(s->sess, &next);
}
