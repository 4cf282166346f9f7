/* Unit tests for lib/node.c: node CSV, host:port, names, protocols. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/buf.h"
#include "lib/node.h"
#include "tests/unit/stub_backends.h"

#define SENTINEL ((struct gf_node *)(uintptr_t)0x1)

static void test_csv_good(void **state)
{
	/* Columns out of order, comments, blank lines, quotes, CRLF line ends. */
	const char *text = "# fleet of the lab\r\n"
			   "\r\n"
			   "groups, name ,ssh,bmc,protocol,profile\r\n"
			   "  # indented comment\n"
			   "rack1;gpu,gpu001,root@10.1.0.1,10.0.0.1,ipmi,lab\r\n"
			   "\"rack1; a100 \",\"gpu002\",\"h2:2222\",\"[fe80::2]:6230\",REDFISH,\r\n"
			   "\n"
			   ",login1,,,,\n"
			   "rack2;;rack2,gpu003,,bmc3.example.org:623,auto,  p.2  ";
	struct gf_node *nodes = NULL;
	struct gf_err err = {0};
	size_t n = 0;

	(void)state;
	assert_int_equal(gf_nodes_parse_csv(text, &nodes, &n, &err), 0);
	assert_int_equal(n, 4);

	assert_string_equal(nodes[0].name, "gpu001");
	assert_string_equal(nodes[0].bmc, "10.0.0.1");
	assert_int_equal(nodes[0].bmc_port, 0);
	assert_ptr_equal(nodes[0].protocol, &stub_ipmi);
	assert_string_equal(nodes[0].ssh, "root@10.1.0.1");
	assert_string_equal(nodes[0].profile, "lab");
	assert_int_equal(nodes[0].ngroups, 2);
	assert_string_equal(nodes[0].groups[0], "rack1");
	assert_string_equal(nodes[0].groups[1], "gpu");

	assert_string_equal(nodes[1].name, "gpu002");
	assert_string_equal(nodes[1].bmc, "fe80::2");
	assert_int_equal(nodes[1].bmc_port, 6230);
	assert_ptr_equal(nodes[1].protocol, &stub_redfish);
	assert_string_equal(nodes[1].ssh, "h2:2222");
	assert_null(nodes[1].profile);
	assert_int_equal(nodes[1].ngroups, 2);
	assert_string_equal(nodes[1].groups[0], "rack1");
	assert_string_equal(nodes[1].groups[1], "a100");

	assert_string_equal(nodes[2].name, "login1");
	assert_null(nodes[2].bmc);
	assert_ptr_equal(nodes[2].protocol, NULL);
	assert_null(nodes[2].ssh);
	assert_null(nodes[2].profile);
	assert_int_equal(nodes[2].ngroups, 0);
	assert_null(nodes[2].groups);

	/* Empty group items dropped, a repeated group kept once, blanks trimmed. */
	assert_string_equal(nodes[3].name, "gpu003");
	assert_string_equal(nodes[3].bmc, "bmc3.example.org");
	assert_int_equal(nodes[3].bmc_port, 623);
	assert_string_equal(nodes[3].profile, "p.2");
	assert_int_equal(nodes[3].ngroups, 1);
	assert_string_equal(nodes[3].groups[0], "rack2");

	gf_nodes_free(nodes, n);
}

static void test_csv_name_only(void **state)
{
	struct gf_node *nodes = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(gf_nodes_parse_csv("\xEF\xBB\xBFNAME\ngpu1\ngpu2\n", &nodes, &n, NULL), 0);
	assert_int_equal(n, 2);
	assert_string_equal(nodes[0].name, "gpu1");
	assert_string_equal(nodes[1].name, "gpu2");
	assert_null(nodes[1].bmc);
	gf_nodes_free(nodes, n);
}

static void test_csv_header_only(void **state)
{
	struct gf_node *nodes = SENTINEL;
	size_t n = 99;

	(void)state;
	assert_int_equal(gf_nodes_parse_csv("# nothing yet\nname,bmc\n\n", &nodes, &n, NULL), 0);
	assert_int_equal(n, 0);
	gf_nodes_free(nodes, n);
}

static void test_csv_quotes(void **state)
{
	struct gf_node *nodes = NULL;
	struct gf_err err = {0};
	size_t n = 0;

	(void)state;
	/* A quoted field keeps commas; blanks outside the quotes are dropped. */
	assert_int_equal(gf_nodes_parse_csv("name,groups\n  \"gpu1\"  ,\"a,b\"\n", &nodes, &n,
					    &err),
			 GF_E_USAGE);
	/* ... and ',' is not a valid group character, which shows the comma stayed in. */
	assert_non_null(strstr(err.msg, "group 'a,b'"));

	assert_int_equal(gf_nodes_parse_csv("name,groups\n\"gpu1\",\"a;b\"\n", &nodes, &n, &err),
			 0);
	assert_int_equal(n, 1);
	assert_int_equal(nodes[0].ngroups, 2);
	gf_nodes_free(nodes, n);

	/* "" inside quotes is one quote. */
	assert_int_equal(gf_nodes_parse_csv("name\n\"x\"\"y\"\n", &nodes, &n, &err), GF_E_USAGE);
	assert_string_equal(err.msg,
			    "line 2: node name 'x\"y' is not valid: only letters, digits, '.', '_' "
			    "and '-' are allowed");

	/* An empty quoted field is an empty field. */
	assert_int_equal(gf_nodes_parse_csv("name,bmc\ngpu1,\"\"\n", &nodes, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_null(nodes[0].bmc);
	gf_nodes_free(nodes, n);
}

struct bad_case {
	const char *text;
	const char *msg; /* the whole message */
};

static const struct bad_case bad_cases[] = {
	{"",
	 "line 1: no header line (expected columns such as name,bmc,protocol,ssh,profile,groups)"},
	{"# only a comment\n\n",
	 "line 3: no header line (expected columns such as name,bmc,protocol,ssh,profile,groups)"},
	{"bmc,ssh\nh1,h2\n", "line 1: the header has no 'name' column"},
	{"\n#c\nname,rack\n",
	 "line 3: unknown column 'rack' (known: name, bmc, protocol, ssh, profile, groups)"},
	{"name,bmc,Name\n", "line 1: column 'name' appears twice"},
	{"name,bmc\ngpu1,h1\ngpu2\n", "line 3: 1 fields, but the header has 2"},
	{"name,bmc\ngpu1,h1,x\n", "line 2: 3 fields, but the header has 2"},
	{"name,bmc\ngpu1,\"h1\n", "line 2: a quoted field is not closed on its line"},
	{"name,bmc\n#\ngpu1,\"h1\"x\n", "line 3: text after the closing quote of a field"},
	{"name,bmc\ngpu1,h\"1\n", "line 2: a double quote inside an unquoted field"},
	{"name,bmc\n,h1\n", "line 2: the node name is empty"},
	{"name\ngpu1\n-gpu2\n",
	 "line 3: node name '-gpu2' is not valid: it does not start with a letter or digit"},
	{"name\ngpu 1\n",
	 "line 2: node name 'gpu 1' is not valid: only letters, digits, '.', '_' and '-' are allowed"},
	{"name,bmc\r\ngpu1,h1:0\r\n",
	 "line 2: bmc: port '0' in 'h1:0' is not a number from 1 to 65535"},
	{"name,bmc\n\ngpu1,h1:65536\n",
	 "line 3: bmc: port '65536' in 'h1:65536' is not a number from 1 to 65535"},
	{"name,bmc\ngpu1,[::1\n", "line 2: bmc: address '[::1' has no closing ']'"},
	{"name,protocol\ngpu1,ipmi\ngpu2,snmp\n",
	 "line 3: protocol 'snmp' is not one of ipmi, redfish, auto"},
	{"name,ssh\ngpu1,root@h:22x\n",
	 "line 2: ssh: port '22x' in 'h:22x' is not a number from 1 to 65535"},
	{"name,ssh\ngpu1,@h\n", "line 2: ssh user in '@h' is empty"},
	{"name,profile\ngpu1,my lab\n",
	 "line 2: profile 'my lab' is not valid: only letters, digits, '.', '_' and '-' are allowed"},
	{"name,groups\ngpu1,a;@b\n",
	 "line 2: group '@b' is not valid: it does not start with a letter or digit"},
	{"name\ngpu1\n# gap\n\ngpu2\ngpu1\n", "line 6: node 'gpu1' is already on line 2"},
};

static void test_csv_bad_lines(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		struct gf_node *nodes = SENTINEL;
		struct gf_err err = {0};
		size_t n = 77;
		int rc;

		rc = gf_nodes_parse_csv(bad_cases[i].text, &nodes, &n, &err);
		if (rc != GF_E_USAGE || strcmp(err.msg, bad_cases[i].msg) != 0)
			fail_msg("case %zu: rc %d, message '%s', want '%s'", i, rc, err.msg,
				 bad_cases[i].msg);
		/* All or nothing: the out-params are untouched. */
		assert_ptr_equal(nodes, SENTINEL);
		assert_int_equal(n, 77);
	}
}

static void test_csv_many(void **state)
{
	struct gf_buf b = GF_BUF_INIT;
	struct gf_node *nodes = NULL;
	struct gf_err err = {0};
	size_t n = 0;

	(void)state;
	gf_buf_adds(&b, "name,bmc\n");
	for (int i = 0; i < 5000; i++)
		gf_buf_addf(&b, "gpu%05d,10.0.%d.%d\n", i, i / 256, i % 256);
	assert_int_equal(gf_nodes_parse_csv(gf_buf_str(&b), &nodes, &n, &err), 0);
	assert_int_equal(n, 5000);
	assert_string_equal(nodes[4999].name, "gpu04999");
	assert_string_equal(nodes[4999].bmc, "10.0.19.135");
	gf_nodes_free(nodes, n);

	gf_buf_adds(&b, "gpu01234,h\n");
	assert_int_equal(gf_nodes_parse_csv(gf_buf_str(&b), &nodes, &n, &err), GF_E_USAGE);
	assert_string_equal(err.msg, "line 5002: node 'gpu01234' is already on line 1236");
	gf_buf_release(&b);
}

struct hp_case {
	const char *in;
	const char *host;
	int port;
};

static void test_hostport_good(void **state)
{
	static const struct hp_case cases[] = {
		{"bmc1", "bmc1", 0},
		{"bmc1.example.org:623", "bmc1.example.org", 623},
		{"10.0.0.1:1", "10.0.0.1", 1},
		{"10.0.0.1:65535", "10.0.0.1", 65535},
		{"[::1]:623", "::1", 623},
		{"[::1]", "::1", 0},
		{"::1", "::1", 0},
		{"fe80::1%eth0", "fe80::1%eth0", 0},
		{"127.0.0.2:09623", "127.0.0.2", 9623},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *host = NULL;
		int port = -1;

		assert_int_equal(gf_hostport_parse(cases[i].in, &host, &port, NULL), 0);
		assert_string_equal(host, cases[i].host);
		assert_int_equal(port, cases[i].port);
		free(host);
	}
}

static void test_hostport_bad(void **state)
{
	static const char *const cases[] = {
		"",        "host:",       "host:0",  "host:65536", "host:99999999999999999999",
		"host:-1", "host:+1",     "host: 1", "host:0x10",  "[::1",
		"[::1]x",  "[::1]:",      "[]:623",  ":623",       "ho st",
		"a/b",     "[::1]:70000",
	};
	struct gf_err err = {0};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *host = (char *)"untouched";
		int port = -7;

		if (gf_hostport_parse(cases[i], &host, &port, &err) != GF_E_USAGE)
			fail_msg("'%s' was accepted", cases[i]);
		assert_string_equal(host, "untouched");
		assert_int_equal(port, -7);
		assert_true(err.msg[0] != '\0');
	}
	assert_int_equal(gf_hostport_parse(NULL, NULL, NULL, NULL), GF_E_USAGE);
	gf_hostport_parse("h:7x", NULL, NULL, &err);
	assert_string_equal(err.msg, "port '7x' in 'h:7x' is not a number from 1 to 65535");
}

static void test_names(void **state)
{
	static const char *const good[] = {"gpu001", "a", "9", "a.b_c-d", "GPU-01.rack2"};
	static const char *const bad[] = {"",      "-gpu",  ".gpu",   "_gpu",  "gpu 1",
					  "gpu/1", "gpu,1", "gpu[1]", "gpu@1", "g\xc3\xa9"};
	char longname[257];
	struct gf_err err = {0};

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_int_equal(gf_node_name_check(good[i], &err), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (gf_node_name_check(bad[i], &err) != GF_E_USAGE)
			fail_msg("'%s' was accepted", bad[i]);
	assert_int_equal(gf_node_name_check(NULL, NULL), GF_E_USAGE);
	gf_node_name_check("gpu/1", &err);
	assert_string_equal(err.msg, "node name 'gpu/1' is not valid: only letters, digits, "
				     "'.', '_' and '-' are allowed");

	memset(longname, 'a', 255);
	longname[255] = '\0';
	assert_int_equal(gf_node_name_check(longname, NULL), 0);
	longname[255] = 'a';
	longname[256] = '\0';
	assert_int_equal(gf_node_name_check(longname, NULL), GF_E_USAGE);
}

static void test_proto(void **state)
{
	const struct gf_backend *p = NULL;
	struct gf_err err = {0};

	(void)state;
	assert_string_equal(gf_proto_name(NULL), "auto");
	assert_string_equal(gf_proto_name(&stub_ipmi), "ipmi");
	assert_string_equal(gf_proto_name(&stub_redfish), "redfish");
	assert_int_equal(gf_proto_parse("redfish", &p, &err), 0);
	assert_ptr_equal(p, &stub_redfish);
	assert_int_equal(gf_proto_parse("IPMI", &p, &err), 0);
	assert_ptr_equal(p, &stub_ipmi);
	assert_int_equal(gf_proto_parse("auto", &p, &err), 0);
	assert_null(p);
	p = &stub_redfish;
	assert_int_equal(gf_proto_parse("", &p, &err), GF_E_USAGE);
	assert_int_equal(gf_proto_parse("ipmi ", &p, &err), GF_E_USAGE);
	assert_ptr_equal(p, &stub_redfish);
	assert_string_equal(err.msg, "protocol 'ipmi ' is not one of ipmi, redfish, auto");
}

static void test_copy(void **state)
{
	struct gf_node *nodes = NULL, c;
	size_t n = 0;

	(void)state;
	assert_int_equal(gf_nodes_parse_csv("name,bmc,groups,ssh\ngpu1,h:623,a;b,u@s\n", &nodes, &n,
					    NULL),
			 0);
	gf_node_copy(&c, &nodes[0]);
	gf_nodes_free(nodes, n);
	/* The copy outlives the original: nothing is shared. */
	assert_string_equal(c.name, "gpu1");
	assert_string_equal(c.bmc, "h");
	assert_int_equal(c.bmc_port, 623);
	assert_string_equal(c.ssh, "u@s");
	assert_null(c.profile);
	assert_int_equal(c.ngroups, 2);
	assert_string_equal(c.groups[1], "b");
	gf_node_release(&c);
	assert_null(c.name);
	assert_int_equal(c.ngroups, 0);
	gf_node_release(NULL);
	gf_nodes_free(NULL, 0);
}

static void test_name_order(void **state)
{
	(void)state;
	assert_true(gf_node_name_cmp("gpu2", "gpu10") < 0);
	assert_true(gf_node_name_cmp("gpu10", "gpu2") > 0);
	assert_true(gf_node_name_cmp("r1n2", "r1n10") < 0);
	assert_true(gf_node_name_cmp("a", "a") == 0);
	assert_true(gf_node_name_cmp("gpu01", "gpu1") != 0);
	assert_true(gf_node_name_cmp("gpu01", "gpu1") == -gf_node_name_cmp("gpu1", "gpu01"));
	assert_true(gf_node_name_cmp("gpu", "gpu1") < 0);
	assert_true(gf_node_name_cmp("b1", "a2") > 0);
}

/* Items of any shape, found by the name they hold: order first, then binary search. */
static void test_name_lookup(void **state)
{
	struct item {
		int tag;
		const char *name;
	} items[] = {{0, "gpu10"}, {1, "gpu2"}, {2, "login1"}, {3, "gpu1"}, {4, "gpu01"}};
	struct gf_names v = {items, 5, sizeof(items[0]), offsetof(struct item, name)};
	const char *sorted[] = {"a", "b2", "b10", "c"};
	struct gf_names plain = {sorted, 4, sizeof(sorted[0]), 0};
	size_t *order = gf_node_name_order(&v);
	static const int want[] = {4, 3, 1, 0, 2}; /* gpu01 gpu1 gpu2 gpu10 login1 */

	(void)state;
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(items[order[i]].tag, want[i]);
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(gf_node_name_find(&v, order, items[i].name), i);
	assert_int_equal(gf_node_name_find(&v, order, "gpu3"), GF_NAME_NONE);
	assert_int_equal(gf_node_name_find(&v, order, "gpu001"), GF_NAME_NONE);
	free(order);
	/* Already in order: no index needed. */
	assert_int_equal(gf_node_name_find(&plain, NULL, "b10"), 2);
	assert_int_equal(gf_node_name_find(&plain, NULL, "a"), 0);
	assert_int_equal(gf_node_name_find(&plain, NULL, "b3"), GF_NAME_NONE);
	plain.n = 0;
	assert_int_equal(gf_node_name_find(&plain, NULL, "a"), GF_NAME_NONE);
	order = gf_node_name_order(&plain);
	free(order);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_csv_good),
		cmocka_unit_test(test_csv_name_only),
		cmocka_unit_test(test_csv_header_only),
		cmocka_unit_test(test_csv_quotes),
		cmocka_unit_test(test_csv_bad_lines),
		cmocka_unit_test(test_csv_many),
		cmocka_unit_test(test_hostport_good),
		cmocka_unit_test(test_hostport_bad),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_proto),
		cmocka_unit_test(test_copy),
		cmocka_unit_test(test_name_order),
		cmocka_unit_test(test_name_lookup),
	};

	stub_backends_register();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
