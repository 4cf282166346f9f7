/* The IPMI fleet ping: the Get Channel Authentication Capabilities codec, and the ping on loopback. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ipmi/ping.h"
#include "lib/util.h"

/* IPMI 1.5 spec, section 18.12 (22.13 in 2.0), as ipmiping and FreeIPMI's --debug show it. */
static const uint8_t want_request[GF_IPMI_PING_SIZE] = {
	0x06, 0x00,      0xFF, 0x07, /* RMCP: version, -, no ACK, IPMI */
	0x00, 0,         0,    0,    0,    0,
	0,    0,         0,    0x09,             /* auth none, seq, session ID, length */
	0x20, 0x18,      0xC8,                   /* BMC, NetFn App / LUN 0, checksum */
	0x81, 0x2B << 2, 0x38, 0x0E, 0x04, 0x00, /* software ID, seq 0x2B, cmd, channel, admin */
};

static void request_is_the_specs(void **state)
{
	uint8_t buf[GF_IPMI_PING_SIZE + 4], want[GF_IPMI_PING_SIZE];
	uint8_t sum = 0;

	(void)state;
	memcpy(want, want_request, sizeof(want));
	for (size_t k = 17; k < 22; k++)
		sum = (uint8_t)(sum + want[k]);
	want[22] = (uint8_t)-sum;
	memset(buf, 0xAA, sizeof(buf));
	assert_int_equal(gf_ipmi_ping_encode(0x2B, buf), GF_IPMI_PING_SIZE);
	assert_memory_equal(buf, want, GF_IPMI_PING_SIZE);
	assert_int_equal(buf[GF_IPMI_PING_SIZE], 0xAA); /* nothing written past it */
	/* Only the low 6 bits of the sequence number: it shares a byte with the LUN. */
	gf_ipmi_ping_encode(0xFF, buf);
	assert_int_equal(buf[18], 0x3F << 2);
}

/* An answer as a BMC sends it: @cc and 8 bytes of IPMI 1.5 capabilities. */
static size_t answer(uint8_t seq, uint8_t cc, uint8_t *d)
{
	static const uint8_t caps[] = {0x01, 0x15, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00};
	uint8_t *m = d + 14, sum = 0;
	size_t len = 6 + 1 + sizeof(caps) + 1;

	memset(d, 0, 14);
	d[0] = 0x06, d[2] = 0xFF, d[3] = 0x07, d[13] = (uint8_t)len;
	m[0] = 0x81, m[1] = 0x07 << 2, m[2] = (uint8_t) - (0x81 + (0x07 << 2));
	m[3] = 0x20, m[4] = (uint8_t)(seq << 2), m[5] = 0x38, m[6] = cc;
	memcpy(m + 7, caps, sizeof(caps));
	for (size_t k = 3; k < len - 1; k++)
		sum = (uint8_t)(sum + m[k]);
	m[len - 1] = (uint8_t)-sum;
	return 14 + len;
}

static void answers_decode_and_bad_ones_do_not(void **state)
{
	uint8_t d[64], bad[64], seq = 0, cc = 0xFF;
	size_t n = answer(0x11, 0x00, d);

	(void)state;
	assert_int_equal(gf_ipmi_ping_decode(d, n, &seq, &cc), 0);
	assert_int_equal(seq, 0x11);
	assert_int_equal(cc, 0x00);
	n = answer(0x05, 0xCC, d);
	assert_int_equal(gf_ipmi_ping_decode(d, n, &seq, &cc), 0);
	assert_int_equal(cc, 0xCC);
	/* Every truncation fails, never reads past the end. */
	for (size_t k = 0; k < n; k++)
		assert_int_equal(gf_ipmi_ping_decode(d, k, &seq, &cc), -1);
	/* Any byte of the header or message changed: refused (checksums, fields). */
	for (size_t k = 0; k < n; k++) {
		if ((k >= 1 && k <= 3) || (k >= 5 && k <= 12))
			continue; /* RMCP's reserved, sequence and class bits; session fields */
		if (k >= 21 && k < n - 1)
			continue; /* the capabilities: covered by the second checksum below */
		memcpy(bad, d, n);
		bad[k] ^= 0x40;
		assert_int_equal(gf_ipmi_ping_decode(bad, n, &seq, &cc), -1);
	}
	memcpy(bad, d, n);
	bad[3] = 0x06; /* an ASF message, not IPMI */
	assert_int_equal(gf_ipmi_ping_decode(bad, n, &seq, &cc), -1);
	memcpy(bad, d, n);
	bad[23] ^= 0x01;
	assert_int_equal(gf_ipmi_ping_decode(bad, n, &seq, &cc), -1);
	/* Our own request is not an answer. */
	gf_ipmi_ping_encode(1, bad);
	assert_int_equal(gf_ipmi_ping_decode(bad, GF_IPMI_PING_SIZE, &seq, &cc), -1);
	/* A length byte larger than the datagram. */
	memcpy(bad, d, n);
	bad[13] = 200;
	assert_int_equal(gf_ipmi_ping_decode(bad, n, &seq, &cc), -1);
}

static int udp_bound(const char *addr, int *ret_port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	assert_true(fd >= 0);
	inet_pton(AF_INET, addr, &sa.sin_addr);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	*ret_port = ntohs(sa.sin_port);
	return fd;
}

/* Receive one datagram on @fd within 5 s; its length, and its source in @from. */
static ssize_t recv_one(int fd, uint8_t *buf, size_t size, struct sockaddr_in *from)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	socklen_t len = sizeof(*from);

	assert_int_equal(poll(&p, 1, 5000), 1);
	return recvfrom(fd, buf, size, 0, (struct sockaddr *)from, &len);
}

static void wait_state(const struct gf_ping *p, struct gf_ping *pw, size_t j, enum gf_ping_state s)
{
	double end = gf_monotime() + 5;

	while (gf_ipmi_ping_ops.state(p, j) != s && gf_monotime() < end)
		gf_ipmi_ping_ops.wait(pw, end);
	assert_int_equal(gf_ipmi_ping_ops.state(p, j), s);
}

/*
 * On 127.0.0.1: a "BMC" that answers with garbage (still answered), one
 * that hears and never answers (retransmitted to), a stranger that sends
 * from another port (ignored), and a host name (not pinged).
 */
static void ping_on_loopback(void **state)
{
	int port_live, port_dead, port_other;
	int live = udp_bound("127.0.0.1", &port_live), dead = udp_bound("127.0.0.1", &port_dead);
	int other = udp_bound("127.0.0.1", &port_other);
	gf_cancel_flag cancel = 0;
	struct gf_bmc_target t[3] = {
		{.node = "live", .host = "127.0.0.1", .port = port_live, .cancel = &cancel},
		{.node = "dead", .host = "127.0.0.1", .port = port_dead, .cancel = &cancel},
		{.node = "named", .host = "localhost", .port = port_live, .cancel = &cancel},
	};
	struct gf_ping *p = NULL;
	struct sockaddr_in from, from2;
	uint8_t buf[128], seq, cc;
	double t0;
	ssize_t n;

	(void)state;
	t0 = gf_monotime();
	assert_int_equal(gf_ipmi_ping_ops.start(t, 3, 1.2, &p, NULL), 0);
	assert_int_equal(gf_ipmi_ping_ops.state(p, 2), GF_PING_SKIPPED);
	n = recv_one(live, buf, sizeof(buf), &from);
	assert_int_equal(n, GF_IPMI_PING_SIZE);
	assert_int_equal(buf[19], 0x38);
	assert_int_equal(gf_ipmi_ping_decode(buf, (size_t)n, &seq, &cc), -1);
	/* The same socket pings the dead one. */
	n = recv_one(dead, buf, sizeof(buf), &from2);
	assert_int_equal(n, GF_IPMI_PING_SIZE);
	assert_int_equal(from.sin_port, from2.sin_port);
	/*
	 * A stranger at the same address, another port: ignored. Sent before the
	 * live one's garbage, so it was read first: were ports not compared, the
	 * dead one (same address) would count as answered too.
	 */
	assert_int_equal(sendto(other, "x", 1, 0, (struct sockaddr *)&from, sizeof(from)), 1);
	/* Garbage from the live one's own port: answered. */
	assert_int_equal(sendto(live, "junk", 4, 0, (struct sockaddr *)&from, sizeof(from)), 4);
	wait_state(p, p, 0, GF_PING_ANSWERED);
	assert_int_equal(gf_ipmi_ping_ops.state(p, 1), GF_PING_WAITING);
	/* The dead one gets it again within the deadline (a sixth of 1.2 s: every 0.2 s). */
	n = recv_one(dead, buf, sizeof(buf), &from2);
	assert_int_equal(n, GF_IPMI_PING_SIZE);
	assert_true(gf_monotime() - t0 < 1.2);
	gf_ipmi_ping_ops.stop(p);
	close(live);
	close(dead);
	close(other);
}

/* Stopped in the middle of a 60 s ping: its thread ends within 0.1 s. */
static void ping_stops_at_once(void **state)
{
	int port;
	int dead = udp_bound("127.0.0.1", &port);
	gf_cancel_flag cancel = 0;
	struct gf_bmc_target t = {.node = "dead",
				  .host = "127.0.0.1",
				  .port = port,
				  .cancel = &cancel};
	struct gf_ping *p = NULL;
	uint8_t buf[64];
	struct sockaddr_in from;
	double t0;

	(void)state;
	assert_int_equal(gf_ipmi_ping_ops.start(&t, 1, 60, &p, NULL), 0);
	assert_int_equal(recv_one(dead, buf, sizeof(buf), &from), GF_IPMI_PING_SIZE);
	t0 = gf_monotime();
	gf_ipmi_ping_ops.stop(p);
	assert_true(gf_monotime() - t0 < 0.1);
	close(dead);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(request_is_the_specs),
		cmocka_unit_test(answers_decode_and_bad_ones_do_not),
		cmocka_unit_test(ping_on_loopback),
		cmocka_unit_test(ping_stops_at_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
