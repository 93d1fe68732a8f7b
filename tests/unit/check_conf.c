// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unit tests for conf.c and auth_key_load(): every class of config error is
 * reported with its exact "file:line: key:" prefix and nothing else, all
 * errors of a file come out at once and in order, defaults are applied,
 * key files are refused unless private, reload refuses what needs a restart,
 * and the shipped examples and man page agree with the code.
 */
#include <sys/stat.h>
#include <sys/wait.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "smcproxyd.h"

#ifndef TOP_SRCDIR
#define TOP_SRCDIR "."
#endif

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define TPATH 256 /* paths under the test's temporary directory */

/* Load text as "t.conf"; *out gets everything written to errors. */
static struct conf *
load_as(const char *text, const char *name, char **out)
{
	struct conf *conf;
	size_t len;
	FILE *f;

	f = open_memstream(out, &len);
	ck_assert_ptr_nonnull(f);
	conf = conf_load_string(text, name, f);
	fclose(f);
	return conf;
}

static struct conf *
load(const char *text, char **out)
{
	return load_as(text, "t.conf", out);
}

static int
count_lines(const char *s)
{
	int n = 0;

	for (; *s != '\0'; s++)
		n += *s == '\n';
	return n;
}

/* Load text, which must fail with exactly nlines lines, one holding want. */
static void
expect_errors(const char *text, const char *want, int nlines)
{
	struct conf *conf;
	char *out = NULL;

	conf = load(text, &out);
	ck_assert_msg(conf == NULL, "accepted:\n%s", text);
	ck_assert_msg(strstr(out, want) != NULL,
		      "wanted \"%s\" in:\n%s\nfor:\n%s", want, out, text);
	ck_assert_msg(count_lines(out) == nlines,
		      "wanted %d lines, got:\n%s\nfor:\n%s", nlines, out, text);
	free(out);
}

static struct conf *
load_ok(const char *text)
{
	struct conf *conf;
	char *out = NULL;

	conf = load(text, &out);
	ck_assert_msg(conf != NULL && out[0] == '\0', "refused:\n%s\nwith:\n%s",
		      text, out);
	free(out);
	return conf;
}

#define PEER_B                                                     \
	"peers = ( { name = \"b\"; address = \"127.0.0.1:7102\"; " \
	"insecure = true; } );\n"
#define RULE(extra)                                               \
	"rules = ( { name = \"r\"; listen = \"127.0.0.1:6380\"; " \
	"peer = \"b\"; export = \"e\"; " extra " } );\n"
#define EXPORT(extra)                                               \
	"exports = ( { name = \"e\"; target = \"127.0.0.1:6379\"; " \
	"peers = [ \"b\" ]; " extra " } );\n"
#define LISTEN "peer_listen: { address = \"127.0.0.1:7101\"; };\n"
#define KSMC(extra) \
	"kernel_smc: { ueids = [ \"SMCPROXYD-LAB\" ]; " extra " };\n"

/* One config with one problem each: text, a line of the output, lines. */
static const struct {
	const char *text;
	const char *want;
	int nlines;
} error_cases[] = {
	/* libconfig syntax */
	{"smcproxyd: { workers = ; };\n", "t.conf:1: syntax: syntax error\n",
	 1},
	{"a = 1;\nb = 2;\na = 3;\n",
	 "t.conf:3: syntax: duplicate setting name\n", 1},
	/* unknown keys, in every section and at the top */
	{"smcproxyd: { wrokers = 4; };\n",
	 "t.conf:1: smcproxyd.wrokers: unknown key; did you mean "
	 "\"workers\"?\n",
	 1},
	{"peer_listen: { address = \"127.0.0.1:7100\"; port = 1; };\n",
	 "t.conf:1: peer_listen.port: unknown key\n", 1},
	{"peers = ( { name = \"b\"; address = \"127.0.0.1:7102\";\n"
	 "  insecure = true; keyfile = \"k\"; } );\n",
	 "t.conf:2: peers[0].keyfile: unknown key; did you mean "
	 "\"key_file\"?\n",
	 1},
	{PEER_B RULE("timeout = 5;"),
	 "t.conf:2: rules[0].timeout: unknown key\n", 1},
	{LISTEN PEER_B EXPORT("allow = 1;"),
	 "t.conf:3: exports[0].allow: unknown key\n", 1},
	{"rdma: { autocrok = false; };\n",
	 "t.conf:1: rdma.autocrok: unknown key; did you mean \"autocork\"?\n",
	 1},
	{"\nrule = ( );\n",
	 "t.conf:2: rule: unknown key; did you mean \"rules\"?\n", 1},
	{"frobnicate = 1;\n", "t.conf:1: frobnicate: unknown key\n", 1},
	/* wrong types */
	{"smcproxyd: { workers = \"4\"; };\n",
	 "t.conf:1: smcproxyd.workers: must be an integer, not a string\n", 1},
	{"smcproxyd: { shutdown_timeout = 1.5; };\n",
	 "t.conf:1: smcproxyd.shutdown_timeout: must be an integer, not a "
	 "float\n",
	 1},
	{"rdma: { autocork = 1; };\n",
	 "t.conf:1: rdma.autocork: must be true or false, not an integer\n", 1},
	{"rdma: { devices = \"mlx5_0\"; };\n",
	 "t.conf:1: rdma.devices: must be an array of strings [ \"a\", \"b\" "
	 "], not a string\n",
	 1},
	{"rdma: { devices = [ 1 ]; };\n",
	 "t.conf:1: rdma.devices[0]: must be a string, not an integer\n", 1},
	{PEER_B "rules = ( { name = \"r\"; listen = 6380; peer = \"b\";\n"
		"  export = \"e\"; } );\n",
	 "t.conf:2: rules[0].listen: must be a string \"ip:port\", not an "
	 "integer\n",
	 1},
	{"rules = { };\n",
	 "t.conf:1: rules: must be a list ( { ... }, ... ), not a group\n", 1},
	{"smcproxyd = ( );\n",
	 "t.conf:1: smcproxyd: must be a group { ... }, not a list\n", 1},
	{PEER_B "rules = ( \"r\" );\n",
	 "t.conf:2: rules[0]: must be a group { ... }, not a string\n", 1},
	{"smcproxyd: { control_mode = true; };\n",
	 "t.conf:1: smcproxyd.control_mode: must be an octal mode like 0660, "
	 "not a boolean\n",
	 1},
	/* out of range */
	{"smcproxyd: { workers = 257; };\n",
	 "t.conf:1: smcproxyd.workers: 257 is out of range 0..256\n", 1},
	{"smcproxyd: { workers = 10000000000L; };\n",
	 "t.conf:1: smcproxyd.workers: 10000000000 is out of range 0..256\n",
	 1},
	{"rdma: { max_links = 3; };\n",
	 "t.conf:1: rdma.max_links: 3 is out of range 1..2\n", 1},
	{"rdma: {\n  sndbuf = 8192;\n};\n",
	 "t.conf:2: rdma.sndbuf: 8192 is out of range 16384..536870912\n", 1},
	{"rdma: { gid_index = -2; };\n",
	 "t.conf:1: rdma.gid_index: -2 is out of range -1..255\n", 1},
	{"rdma: { inline_size = 1025; };\n",
	 "t.conf:1: rdma.inline_size: 1025 is out of range 0..1024\n", 1},
	{"rdma: { max_conns_per_lgr = 15; };\n",
	 "t.conf:1: rdma.max_conns_per_lgr: 15 is out of range 16..255\n", 1},
	{LISTEN PEER_B EXPORT("connect_timeout = 0;"),
	 "t.conf:3: exports[0].connect_timeout: 0 is out of range 1..300\n", 1},
	{PEER_B RULE("idle_timeout = 86401;"),
	 "t.conf:2: rules[0].idle_timeout: 86401 is out of range 0..86400\n",
	 1},
	{"smcproxyd: { control_mode = 1000; };\n",
	 "t.conf:1: smcproxyd.control_mode: 01000 is out of range 0..0777\n",
	 1},
	{"smcproxyd: { control_mode = 0668; };\n",
	 "t.conf:1: smcproxyd.control_mode: 668 is not an octal mode; use "
	 "digits 0-7, like 0660\n",
	 1},
	{"smcproxyd: { control_mode = \"rw\"; };\n",
	 "t.conf:1: smcproxyd.control_mode: invalid mode \"rw\": use octal, "
	 "like 0660\n",
	 1},
	{"rdma: { rmb = 100000; };\n",
	 "t.conf:1: rdma.rmb: 100000 is not a power of two (16384, 32768, "
	 "65536, ...)\n",
	 1},
	{"rdma: { sndbuf = 1048576;\n  rmb = 1048576;\n  max_buffer_memory = "
	 "1; };\n",
	 "t.conf:3: rdma.max_buffer_memory: 1 MiB do not hold one connection's "
	 "sndbuf + rmb (2097152 bytes)\n",
	 1},
	{"rdma: { max_buffer_memory = 0; };\n",
	 "t.conf:1: rdma.max_buffer_memory: 0 is out of range 1..1048576\n", 1},
	{"peers = (\n"
	 "  { name = \"b\"; address = \"127.0.0.1:7102\"; insecure = true;\n"
	 "    max_conns = -1; }\n"
	 ");\n",
	 "t.conf:3: peers[0].max_conns: -1 is out of range 0..1000000\n", 1},
	/* enums */
	{"smcproxyd: { log_level = \"verbose\"; };\n",
	 "t.conf:1: smcproxyd.log_level: invalid value \"verbose\"; use "
	 "error|warning|info|debug\n",
	 1},
	{"rdma: { slot_wait = \"some\"; };\n",
	 "t.conf:1: rdma.slot_wait: invalid value \"some\"; use "
	 "exclusive|all\n",
	 1},
	/* duplicates */
	{"peers = (\n"
	 "  { name = \"b\"; address = \"127.0.0.1:7102\"; insecure = true; },\n"
	 "  { name = \"b\"; address = \"127.0.0.1:7103\"; insecure = true; }\n"
	 ");\n",
	 "t.conf:3: peers[1].name: \"b\" is already used at line 2\n", 1},
	{PEER_B "rules = (\n"
		"  { name = \"r\"; listen = \"127.0.0.1:1\"; peer = \"b\"; "
		"export = \"e\"; },\n"
		"  { name = \"r\"; listen = \"127.0.0.1:2\"; peer = \"b\"; "
		"export = \"e\"; }\n"
		");\n",
	 "t.conf:4: rules[1].name: \"r\" is already used at line 3\n", 1},
	{LISTEN PEER_B
	 "exports = (\n"
	 "  { name = \"e\"; target = \"127.0.0.1:1\"; peers = [ \"b\" ]; },\n"
	 "  { name = \"e\"; target = \"127.0.0.1:2\"; peers = [ \"b\" ]; }\n"
	 ");\n",
	 "t.conf:5: exports[1].name: \"e\" is already used at line 4\n", 1},
	{PEER_B "rules = (\n"
		"  { name = \"r\"; listen = \"127.0.0.1:6380\"; peer = \"b\"; "
		"export = \"e\"; },\n"
		"  { name = \"s\"; listen = \"127.0.0.1:6380\"; peer = \"b\"; "
		"export = \"e\"; }\n"
		");\n",
	 "t.conf:4: rules[1].listen: 127.0.0.1:6380 is already used at line "
	 "3\n",
	 1},
	{PEER_B "rules = (\n"
		"  { name = \"r\"; listen = \"0.0.0.0:6380\"; peer = \"b\"; "
		"export = \"e\"; },\n"
		"  { name = \"s\"; listen = \"127.0.0.1:6380\"; peer = \"b\"; "
		"export = \"e\"; }\n"
		");\n",
	 "t.conf:4: rules[1].listen: 127.0.0.1:6380 overlaps 0.0.0.0:6380 at "
	 "line 3\n",
	 1},
	{PEER_B "rules = (\n"
		"  { name = \"r\"; listen = \"127.0.0.1:6380\"; peer = \"b\"; "
		"export = \"e\"; },\n"
		"  { name = \"s\"; listen = \"[::]:6380\"; peer = \"b\"; "
		"export = \"e\"; }\n"
		");\n",
	 "t.conf:4: rules[1].listen: [::]:6380 overlaps 127.0.0.1:6380 at line "
	 "3\n",
	 1},
	{LISTEN PEER_B "rules = ( { name = \"r\"; listen = \"127.0.0.1:7101\"; "
		       "peer = \"b\"; export = \"e\"; } );\n",
	 "t.conf:3: rules[0].listen: 127.0.0.1:7101 overlaps "
	 "peer_listen.address at line 1\n",
	 1},
	/* references */
	{PEER_B "rules = ( { name = \"r\"; listen = \"127.0.0.1:6380\";\n"
		"  peer = \"c\"; export = \"e\"; } );\n",
	 "t.conf:3: rules[0].peer: no such peer \"c\"\n", 1},
	{RULE(""),
	 "t.conf:1: rules[0].peer: no such peer \"b\" (no peers are defined; "
	 "add a peers section)\n",
	 1},
	{LISTEN PEER_B "exports = ( { name = \"e\"; target = "
		       "\"127.0.0.1:6379\"; peers = [ \"z\" ]; } );\n",
	 "t.conf:3: exports[0].peers: no such peer \"z\"\n", 1},
	{LISTEN PEER_B
	 "exports = ( { name = \"e\"; target = \"127.0.0.1:6379\";\n"
	 "  peers = [ \"y\", \"b\", \"z\" ]; } );\n",
	 "t.conf:4: exports[0].peers: no such peer \"y\", \"z\"\n", 1},
	{LISTEN PEER_B "exports = ( { name = \"e\"; target = "
		       "\"127.0.0.1:6379\"; peers = [ ]; } );\n",
	 "t.conf:3: exports[0].peers: empty; list the peers that may use this "
	 "export\n",
	 1},
	{PEER_B "\n" EXPORT(""),
	 "t.conf:3: exports[0].peers: peers cannot reach export e without a "
	 "peer_listen section\n",
	 1},
	/* the SMC-R dialect: kernel_smc, exports[].smc_listen */
	{KSMC("") "exports = ( { name = \"e\"; target = \"127.0.0.1:6379\"; "
		  "} );\n",
	 "t.conf:2: exports[0]: export e has neither peers nor smc_listen: "
	 "nobody can reach it\n",
	 1},
	{"exports = ( { name = \"e\"; target = \"127.0.0.1:6379\";\n"
	 "  smc_listen = \"127.0.0.1:16379\"; } );\n",
	 "t.conf:2: exports[0].smc_listen: needs a kernel_smc section (the "
	 "SMC-R dialect is off without it)\n",
	 1},
	{"kernel_smc: { ueids = [ \"lab\", \"OK-1\", \".X\" ]; allow = [ "
	 "\"10.0.0.0/8\",\n"
	 "  \"10.0.0.1/8\", \"10.1.0.0\", \"::/0\", \"x\" ]; };\n",
	 "t.conf:1: kernel_smc.ueids[0]: invalid value \"lab\": an EID is 1 "
	 "to 32 of A-Z, 0-9, '.' and '-', starting with a letter or digit "
	 "(upper case, as smc_run and the kernel write it)\n"
	 "t.conf:1: kernel_smc.ueids[2]: invalid value \".X\": an EID is 1 "
	 "to 32 of A-Z, 0-9, '.' and '-', starting with a letter or digit "
	 "(upper case, as smc_run and the kernel write it)\n"
	 "t.conf:2: kernel_smc.allow[1]: invalid value \"10.0.0.1/8\": use "
	 "a numeric network \"ip/prefix\" (host bits zero) or one address\n"
	 "t.conf:2: kernel_smc.allow[4]: invalid value \"x\": use a numeric "
	 "network \"ip/prefix\" (host bits zero) or one address\n",
	 4},
	{KSMC("") "rules = ( { name = \"r\"; listen = \"127.0.0.1:6380\";\n"
		  "  intercept = [ \"192.0.2.0/24:*\" ]; intercept_cgroup = "
		  "\"/sys/fs/cgroup/x\";\n"
		  "  target_smc = \"original\"; accept_proxy = true; } );\n",
	 "t.conf:2: rules[0]: rule r: accept_proxy and intercept do not go "
	 "together: the connects intercept takes come from this host's "
	 "programs, with no PROXY header\n",
	 1},
	{PEER_B RULE("target_smc = \"127.0.0.1:6390\";"),
	 "t.conf:2: rules[0]: rule r: target_smc, or peer and export, not "
	 "both\n",
	 1},
	/* one kernel host's share of a worker's registered memory */
	{KSMC("buffer_share_per_host = 0;"),
	 "t.conf:1: kernel_smc.buffer_share_per_host: 0 is out of range "
	 "1..100\n",
	 1},
	{KSMC("buffer_share_per_host = 101;"),
	 "t.conf:1: kernel_smc.buffer_share_per_host: 101 is out of range "
	 "1..100\n",
	 1},
	{"peers = ( { name = \"smc-r\"; address = \"127.0.0.1:7102\"; "
	 "insecure = true; } );\n",
	 "t.conf:1: peers[0].name: the name smc-r is kept for kernel SMC-R "
	 "peers (kernel_smc); choose another\n",
	 1},
	{"rules = ( { name = \"r\"; listen = \"127.0.0.1:6380\";\n"
	 "  target_smc = \"127.0.0.1:6390\"; } );\n",
	 "t.conf:2: rules[0]: rule r: target_smc needs a kernel_smc section "
	 "(the SMC-R dialect is off without it)\n",
	 1},
	{KSMC("") "rules = ( { name = \"r\"; listen = \"127.0.0.1:6380\"; } "
		  ");\n",
	 "t.conf:2: rules[0]: rule r: needs peer and export (or target_smc)\n",
	 1},
	{KSMC("") "exports = ( { name = \"e\"; target = \"127.0.0.1:6379\";\n"
		  "  smc_listen = \"[::]:16379\"; } );\n",
	 "t.conf:3: exports[0].smc_listen: [::]:16379 is IPv6: kernel SMC-R "
	 "clients connect over IPv4 only; use 0.0.0.0:PORT or an IPv4 "
	 "address\n",
	 1},
	{KSMC("") LISTEN PEER_B RULE("")
		 EXPORT("smc_listen = \"127.0.0.1:6380\";"),
	 "t.conf:5: exports[0].smc_listen: 127.0.0.1:6380 overlaps "
	 "rules[0].listen\n",
	 1},
	/* addresses */
	{PEER_B "rules = ( { name = \"r\"; listen = \"localhost:6380\"; peer = "
		"\"b\"; export = \"e\"; } );\n",
	 "t.conf:2: rules[0].listen: invalid address \"localhost:6380\": use "
	 "IPv4:port or [IPv6]:port, numeric, port 1-65535\n",
	 1},
	{"peers = ( { name = \"b\"; address = \"127.0.0.1\"; insecure = true; "
	 "} );\n",
	 "t.conf:1: peers[0].address: invalid address \"127.0.0.1\"", 1},
	{LISTEN PEER_B "exports = ( { name = \"e\"; target = \"127.0.0.1:0\"; "
		       "peers = [ \"b\" ]; } );\n",
	 "t.conf:3: exports[0].target: invalid address \"127.0.0.1:0\"", 1},
	{"peer_listen: { address = \"[::1]:99999\"; };\n",
	 "t.conf:1: peer_listen.address: invalid address \"[::1]:99999\"", 1},
	{"peers = ( { name = \"b\"; address = \"0.0.0.0:7100\"; insecure = "
	 "true; } );\n",
	 "t.conf:1: peers[0].address: 0.0.0.0:7100 is a wildcard; give the "
	 "address to connect to\n",
	 1},
	{LISTEN PEER_B "exports = ( { name = \"e\"; target = \"[::]:6379\"; "
		       "peers = [ \"b\" ]; } );\n",
	 "t.conf:3: exports[0].target: [::]:6379 is a wildcard", 1},
	/* names */
	{PEER_B "rules = ( { name = \"re dis\"; listen = \"127.0.0.1:6380\"; "
		"peer = \"b\"; export = \"e\"; } );\n",
	 "t.conf:2: rules[0].name: invalid name \"re dis\": use 1 to 63 "
	 "letters, digits, '.', '_' or '-'\n",
	 1},
	{PEER_B "rules = ( { name = \"a\\nb\"; listen = \"127.0.0.1:6380\"; "
		"peer = \"b\"; export = \"e\"; } );\n",
	 "t.conf:2: rules[0].name: invalid name \"a\\x0ab\"", 1},
	{PEER_B "rules = ( { name = \"\"; listen = \"127.0.0.1:6380\"; peer = "
		"\"b\"; export = \"e\"; } );\n",
	 "t.conf:2: rules[0].name: invalid name \"\"", 1},
	{PEER_B "rules = ( { name = \"r\"; listen = \"127.0.0.1:6380\"; peer = "
		"\"b\";\n"
		"  export = "
		"\"012345678901234567890123456789012345678901234567890123456789"
		"0123\"; } );\n",
	 "t.conf:3: rules[0].export: invalid name \"0123456789", 1},
	/* CONN_OPEN names an export in 22 bytes: a longer one is refused */
	{LISTEN PEER_B "exports = ( { name = \"e2345678901234567890123\"; "
		       "target = \"127.0.0.1:6379\"; peers = [ \"b\" ]; } );\n",
	 "t.conf:3: exports[0].name: export name \"e2345678901234567890123\" "
	 "is 23 bytes; over RDMA an export is named in at most 22 (CONN_OPEN): "
	 "use a shorter name\n",
	 1},
	{PEER_B "rules = ( { name = \"r\"; listen = \"127.0.0.1:6380\";\n"
		"  peer = \"b\"; export = \"e2345678901234567890123\"; } );\n",
	 "t.conf:3: rules[0].export: export name \"e2345678901234567890123\" "
	 "is 23 bytes; over RDMA an export is named in at most 22 (CONN_OPEN): "
	 "use a shorter name\n",
	 1},
	{"smcproxyd: { name = \"a/b\"; };\n",
	 "t.conf:1: smcproxyd.name: invalid name \"a/b\"", 1},
	{"rdma: { devices = [ \"mlx5 0\" ]; };\n",
	 "t.conf:1: rdma.devices[0]: invalid name \"mlx5 0\"", 1},
	{LISTEN PEER_B "exports = ( { name = \"e\"; target = "
		       "\"127.0.0.1:6379\"; peers = [ \"b\", \"b\" ]; } );\n",
	 "t.conf:3: exports[0].peers[1]: \"b\" is listed twice\n", 1},
	/* required keys and peer authentication */
	{PEER_B
	 "rules = ( { name = \"r\"; peer = \"b\"; export = \"e\"; } );\n",
	 "t.conf:2: rules[0].listen: missing; it has no default\n", 1},
	{"peers = ( { name = \"b\"; insecure = true; } );\n",
	 "t.conf:1: peers[0].address: missing; it has no default\n", 1},
	{"peers = ( { name = \"b\"; address = \"127.0.0.1:7102\"; } );\n",
	 "t.conf:1: peers[0]: peer b: no key_file; set insecure = true to "
	 "allow unauthenticated peers\n",
	 1},
	{"peers = ( { name = \"b\"; address = \"127.0.0.1:7102\";\n"
	 "  key_file = \"/nonexistent/k\"; insecure = true; } );\n",
	 "t.conf:2: peers[0].insecure: peer b: both key_file and insecure = "
	 "true; remove one\n",
	 1},
	{"peers = ( { name = \"b\"; address = \"127.0.0.1:7102\"; key_file = "
	 "\"\"; } );\n",
	 "t.conf:1: peers[0].key_file: must not be empty\n", 1},
	{"peers = ( { name = \"b\"; address = \"127.0.0.1:7102\"; key_file = "
	 "1; } );\n",
	 "t.conf:1: peers[0].key_file: must be a string, not an integer\n", 1},
	{"peers = ( { name = \"b\"; address = \"127.0.0.1:7102\";\n"
	 "  key_file = \"/nonexistent/k\"; } );\n",
	 "t.conf:2: peers[0].key_file: key file /nonexistent/k: No such file "
	 "or directory\n",
	 1},
	/* paths */
	{"smcproxyd: { control_socket = \"run/x.sock\"; };\n",
	 "t.conf:1: smcproxyd.control_socket: must be an absolute path\n", 1},
	{"smcproxyd: { control_socket = "
	 "\"/0123456789012345678901234567890123456789"
	 "012345678901234567890123456789012345678901234567890123456789012345678"
	 "90\"; };\n",
	 "t.conf:1: smcproxyd.control_socket: longer than 107 bytes", 1},
	/* routed RoCE v2: the rdma defaults and each peer's own */
	{"rdma: { dscp = 64; };\n",
	 "t.conf:1: rdma.dscp: 64 is out of range 0..63\n", 1},
	{"rdma: { priority = 8; };\n",
	 "t.conf:1: rdma.priority: 8 is out of range 0..7\n", 1},
	{"rdma: {\n  qp_timeout = 32; };\n",
	 "t.conf:2: rdma.qp_timeout: 32 is out of range 0..31\n", 1},
	{"rdma: { retry_count = -1; };\n",
	 "t.conf:1: rdma.retry_count: -1 is out of range 0..7\n", 1},
	{"rdma: { rnr_retry = 8; };\n",
	 "t.conf:1: rdma.rnr_retry: 8 is out of range 0..7\n", 1},
	{"rdma: { hop_limit = 64; };\n",
	 "t.conf:1: rdma.hop_limit: unknown key", 1},
	{"peers = ( { name = \"b\"; address = \"10.0.0.2:7102\";\n"
	 "  insecure = true;\n  dscp = 99; } );\n",
	 "t.conf:3: peers[0].dscp: 99 is out of range -1..63\n", 1},
	{"peers = ( { name = \"b\"; address = \"10.0.0.2:7102\";\n"
	 "  insecure = true; retry_count = 8; } );\n",
	 "t.conf:2: peers[0].retry_count: 8 is out of range -1..7\n", 1},
	{"peers = ( { name = \"b\"; address = \"10.0.0.2:7102\";\n"
	 "  insecure = true; source = \"10.0.0.1:7000\"; } );\n",
	 "t.conf:2: peers[0].source: invalid address \"10.0.0.1:7000\": use a "
	 "numeric IPv4 or IPv6 address, no port\n",
	 1},
	{"peers = ( { name = \"b\"; address = \"10.0.0.2:7102\";\n"
	 "  insecure = true; source = \"0.0.0.0\"; } );\n",
	 "t.conf:2: peers[0].source: a wildcard; give a local address\n", 1},
	{"peers = ( { name = \"b\"; address = \"[2001:db8::2]:7102\";\n"
	 "  insecure = true; source = \"fe80::1\"; } );\n",
	 "t.conf:2: peers[0].source: not a routable unicast address", 1},
	{"peers = ( { name = \"b\"; address = \"10.0.0.2:7102\";\n"
	 "  insecure = true;\n  source = \"2001:db8::1\"; } );\n",
	 "t.conf:3: peers[0].source: peer b: an IPv6 source for an IPv4 "
	 "address\n",
	 1},
	{"rdma: { gid_index = 3; };\n"
	 "peers = ( { name = \"b\"; address = \"10.0.0.2:7102\";\n"
	 "  insecure = true; source = \"10.0.0.1\"; } );\n",
	 "t.conf:3: peers[0].source: peer b: rdma.gid_index 3 fixes the GID, "
	 "whatever the source; set it to -1\n",
	 1},
	{"peers = ( { name = \"b\"; address = \"10.0.0.2:7102\";\n"
	 "  insecure = true; device = \"mlx5 0\"; } );\n",
	 "t.conf:2: peers[0].device: invalid name \"mlx5 0\"", 1},
	{"peers = ( { name = \"b\"; address = \"10.0.0.2:7102\";\n"
	 "  insecure = true; source = 10; } );\n",
	 "t.conf:2: peers[0].source: must be a string \"ip\", not an integer\n",
	 1},
};

START_TEST(test_error_case)
{
	expect_errors(error_cases[_i].text, error_cases[_i].want,
		      error_cases[_i].nlines);
}
END_TEST

START_TEST(test_all_errors_at_once)
{
	static const char text[] =
		"rdma: { max_links = 9; };\n" /* range */
		PEER_B			      /* ok */
		"smcproxyd: {\n"
		"  workers = \"many\";\n"   /* type */
		"  colour = 1;\n"	    /* unknown */
		"  log_level = \"loud\";\n" /* enum */
		"};\n"
		"rules = ( { name = \"r\"; listen = \"127.0.0.1:6380\";\n"
		"  peer = \"nobody\"; export = \"e\"; } );\n"; /* peer */
	static const char *const want[] = {
		"t.conf:1: rdma.max_links: 9 is out of range 1..2\n",
		"t.conf:4: smcproxyd.workers: must be an integer, not a "
		"string\n",
		"t.conf:5: smcproxyd.colour: unknown key\n",
		"t.conf:6: smcproxyd.log_level: invalid value \"loud\"; use "
		"error|warning|info|debug\n",
		"t.conf:9: rules[0].peer: no such peer \"nobody\"\n",
	};
	char *out = NULL, *at;
	size_t i;

	ck_assert_ptr_null(load(text, &out));
	ck_assert_int_eq(count_lines(out), (int)NELEM(want));
	/* in file order, whatever order the sections were checked in */
	at = out;
	for (i = 0; i < NELEM(want); i++) {
		ck_assert_msg(strncmp(at, want[i], strlen(want[i])) == 0,
			      "line %zu: wanted %s got:\n%s", i + 1, want[i],
			      out);
		at += strlen(want[i]);
	}
	free(out);
}
END_TEST

START_TEST(test_defaults)
{
	struct conf *conf = load_ok("");
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	char host[256];

	ck_assert_str_eq(conf->path, "t.conf");
	ck_assert_str_eq(conf->control_socket, "/run/smcproxyd/control.sock");
	ck_assert_int_eq(conf->control_mode, 0660);
	ck_assert_int_eq(conf->control_uid, -1);
	ck_assert_int_eq(conf->control_gid, -1);
	ck_assert_int_eq(conf->workers, cpus > 256 ? 256 : cpus);
	ck_assert_int_eq(conf->log_level, LOG_LEVEL_INFO);
	ck_assert_int_eq(conf->shutdown_timeout, 10);
	ck_assert_int_eq(conf->max_conns, 0);
	ck_assert(!conf->has_peer_listen);
	ck_assert_int_eq(conf->npeers + conf->nrules + conf->nexports, 0);
	ck_assert_int_eq(conf->rdma.ndevices, 0);
	ck_assert_int_eq(conf->rdma.gid_index, -1);
	ck_assert_int_eq(conf->rdma.max_links, 2);
	ck_assert_int_eq(conf->rdma.max_conns_per_lgr, 255);
	ck_assert_int_eq(conf->rdma.max_send_wr, 16);
	ck_assert_int_eq(conf->rdma.max_recv_wr, 48);
	ck_assert_int_eq(conf->rdma.sndbuf, 262144);
	ck_assert_int_eq(conf->rdma.rmb, 262144);
	ck_assert_int_eq(conf->rdma.max_buffer_memory, 1024);
	ck_assert(conf->rdma.autocork);
	ck_assert_int_eq(conf->rdma.autocork_size, 65536);
	ck_assert(conf->rdma.inline_enabled);
	ck_assert(conf->rdma.cdc_data);
	ck_assert(conf->rdma.lazy_completions);
	ck_assert_int_eq(conf->rdma.inline_size, 256);
	ck_assert_int_eq(conf->rdma.slot_wait, CONF_SLOT_WAIT_EXCLUSIVE);
	ck_assert_int_eq(conf->rdma.lgr_idle_timeout, 600);
	ck_assert_int_eq(conf->rdma.test_link_time, 30);
	ck_assert_int_eq(conf->rdma.route.dscp, 0);
	ck_assert_int_eq(conf->rdma.route.priority, 0);
	ck_assert_int_eq(conf->rdma.route.qp_timeout, 15);
	ck_assert_int_eq(conf->rdma.route.retry_count, 7);
	ck_assert_int_eq(conf->rdma.route.rnr_retry, 7);
	ck_assert_int_eq(gethostname(host, sizeof(host)), 0);
	host[strcspn(host, ".")] = '\0';
	ck_assert_str_eq(conf->name, host);
	conf_free(conf);
}
END_TEST

/*
 * By default one host may hold a quarter of a worker's places among
 * strangers, not all of them (before, preauth_per_source was
 * preauth_max: one stranger's host could fill a worker).
 */
START_TEST(test_preauth_defaults)
{
	struct conf *conf = load_ok("peer_listen: { };\n");

	ck_assert_int_eq(conf->preauth_max, 1024);
	ck_assert_int_eq(conf->preauth_per_source, 256);
	ck_assert_int_lt(conf->preauth_per_source, conf->preauth_max);
	conf_free(conf);
}
END_TEST

/*
 * A kernel host may hold a quarter of a worker's registered memory
 * unless told otherwise (issue 43): one busy host works, and three more
 * or the native peers still find room.
 */
START_TEST(test_ksmc_buffer_share)
{
	struct conf *conf = load_ok(KSMC(""));

	ck_assert_int_eq(conf->smcr.buffer_share_per_host, 25);
	conf_free(conf);
	conf = load_ok(KSMC("buffer_share_per_host = 100;"));
	ck_assert_int_eq(conf->smcr.buffer_share_per_host, 100);
	conf_free(conf);
}
END_TEST

START_TEST(test_values)
{
	struct conf *conf = load_ok(
		"smcproxyd: { name = \"x-1.a_b\"; workers = 3; log_level = "
		"\"debug\";\n"
		"  control_socket = \"/tmp/s.sock\"; control_uid = 1000;\n"
		"  control_gid = 0; shutdown_timeout = 0; max_conns = 100; };\n"
		"peer_listen: { };\n"
		"rdma: { devices = [ \"mlx5_0\", \"rxe0\" ]; gid_index = 3;\n"
		"  max_links = 1; max_conns_per_lgr = 16; max_send_wr = 2;\n"
		"  max_recv_wr = 2048; sndbuf = 16384; rmb = 536870912;\n"
		"  autocork = false; autocork_size = 0; inline = false;\n"
		"  inline_size = 0; slot_wait = \"all\"; lgr_idle_timeout = "
		"0;\n"
		"  test_link_time = 0; };\n");
	char buf[ADDR_STRLEN];

	ck_assert_str_eq(conf->name, "x-1.a_b");
	ck_assert_int_eq(conf->workers, 3);
	ck_assert_int_eq(conf->log_level, LOG_LEVEL_DEBUG);
	ck_assert_str_eq(conf->control_socket, "/tmp/s.sock");
	ck_assert_int_eq(conf->control_uid, 1000);
	ck_assert_int_eq(conf->control_gid, 0);
	ck_assert_int_eq(conf->shutdown_timeout, 0);
	ck_assert_int_eq(conf->max_conns, 100);
	ck_assert(conf->has_peer_listen);
	ck_assert_str_eq(addr_str(&conf->peer_listen, buf, sizeof(buf)),
			 "0.0.0.0:7100");
	ck_assert_int_eq(conf->rdma.ndevices, 2);
	ck_assert_str_eq(conf->rdma.devices[0], "mlx5_0");
	ck_assert_str_eq(conf->rdma.devices[1], "rxe0");
	ck_assert_int_eq(conf->rdma.gid_index, 3);
	ck_assert_int_eq(conf->rdma.max_links, 1);
	ck_assert_int_eq(conf->rdma.max_conns_per_lgr, 16);
	ck_assert_int_eq(conf->rdma.max_send_wr, 2);
	ck_assert_int_eq(conf->rdma.max_recv_wr, 2048);
	ck_assert_int_eq(conf->rdma.sndbuf, 16384);
	ck_assert_int_eq(conf->rdma.rmb, 1 << 29);
	ck_assert(!conf->rdma.autocork);
	ck_assert_int_eq(conf->rdma.autocork_size, 0);
	ck_assert(!conf->rdma.inline_enabled);
	ck_assert_int_eq(conf->rdma.inline_size, 0);
	ck_assert_int_eq(conf->rdma.slot_wait, CONF_SLOT_WAIT_ALL);
	ck_assert_int_eq(conf->rdma.lgr_idle_timeout, 0);
	ck_assert_int_eq(conf->rdma.test_link_time, 0);
	conf_free(conf);
}
END_TEST

START_TEST(test_control_mode_forms)
{
	/* libconfig reads 0660 as decimal: the digits are taken as octal */
	static const struct {
		const char *text;
		int mode;
	} cases[] = {
		{"smcproxyd: { control_mode = 0660; };", 0660},
		{"smcproxyd: { control_mode = 660; };", 0660},
		{"smcproxyd: { control_mode = 0600; };", 0600},
		{"smcproxyd: { control_mode = 0; };", 0},
		{"smcproxyd: { control_mode = 0x1a0; };", 0640},
		{"smcproxyd: { control_mode = \"0640\"; };", 0640},
		{"smcproxyd: { control_mode = \"777\"; };", 0777},
	};
	struct conf *conf;
	size_t i;

	for (i = 0; i < NELEM(cases); i++) {
		conf = load_ok(cases[i].text);
		ck_assert_msg(conf->control_mode == cases[i].mode, "%s gave %o",
			      cases[i].text, conf->control_mode);
		conf_free(conf);
	}
}
END_TEST

START_TEST(test_resolved)
{
	struct conf *conf =
		load_ok("smcproxyd: { name = \"a\"; };\n"
			"peer_listen: { address = \"[::1]:7101\"; };\n"
			"peers = (\n"
			"  { name = \"b\"; address = \"127.0.0.1:7102\"; "
			"insecure = true; },\n"
			"  { name = \"c\"; address = \"[2001:db8::2]:7100\"; "
			"insecure = true;\n"
			"    any_source = true; }\n"
			");\n"
			"rules = (\n"
			"  { name = \"redis\"; listen = \"127.0.0.1:6380\"; "
			"peer = \"c\";\n"
			"    export = \"redis\"; idle_timeout = 30; },\n"
			"  { name = \"pg\"; listen = \"127.0.0.1:5433\"; peer "
			"= \"b\"; export = \"pg\"; },\n"
			"  { name = \"pg2\"; listen = \"127.0.0.2:5433\"; peer "
			"= \"b\"; export = \"pg\"; }\n"
			");\n"
			"exports = (\n"
			"  { name = \"redis\"; target = \"127.0.0.1:6379\"; "
			"peers = [ \"b\", \"c\" ]; },\n"
			"  { name = \"ssh\"; target = \"[::1]:22\"; peers = [ "
			"\"c\" ];\n"
			"    connect_timeout = 300; }\n"
			");\n");
	const struct conf_export *exp;
	char buf[ADDR_STRLEN];

	ck_assert_int_eq(conf->npeers, 2);
	ck_assert_int_eq(conf->nrules, 3);
	ck_assert_int_eq(conf->nexports, 2);
	ck_assert_str_eq(addr_str(&conf->peer_listen, buf, sizeof(buf)),
			 "[::1]:7101");
	ck_assert(conf->peers[0].insecure && !conf->peers[0].any_source);
	ck_assert(conf->peers[1].any_source);
	ck_assert_ptr_null(conf->peers[0].key_file);
	ck_assert_uint_eq(conf->peers[0].key_len, 0);
	ck_assert_int_eq(conf->peers[1].line, 5);
	ck_assert_ptr_eq(conf->rules[0].peer, &conf->peers[1]);
	ck_assert_ptr_eq(conf->rules[1].peer, &conf->peers[0]);
	ck_assert_str_eq(conf->rules[0].export, "redis");
	ck_assert_int_eq(conf->rules[0].idle_timeout, 30);
	ck_assert_int_eq(conf->rules[1].idle_timeout, 0);
	ck_assert_int_eq(conf->rules[2].line, 12);
	ck_assert_str_eq(addr_str(&conf->rules[2].listen, buf, sizeof(buf)),
			 "127.0.0.2:5433");
	ck_assert_ptr_eq(conf_peer_find(conf, "c"), &conf->peers[1]);
	ck_assert_ptr_null(conf_peer_find(conf, "d"));
	exp = conf_export_find(conf, "redis");
	ck_assert_ptr_eq(exp, &conf->exports[0]);
	ck_assert_int_eq(exp->connect_timeout, 5);
	ck_assert(conf_export_allows(exp, "b"));
	ck_assert(conf_export_allows(exp, "c"));
	ck_assert(!conf_export_allows(exp, "a"));
	exp = conf_export_find(conf, "ssh");
	ck_assert_int_eq(exp->connect_timeout, 300);
	ck_assert(!conf_export_allows(exp, "b"));
	ck_assert_ptr_null(conf_export_find(conf, "pg"));
	conf_free(conf);
}
END_TEST

START_TEST(test_listen_overlap_allowed)
{
	/* different ports, hosts or families are separate listeners */
	struct conf *conf =
		load_ok(PEER_B "rules = (\n"
			       "  { name = \"a\"; listen = \"0.0.0.0:6380\"; "
			       "peer = \"b\"; export = \"e\"; },\n"
			       "  { name = \"b\"; listen = \"127.0.0.1:6381\"; "
			       "peer = \"b\"; export = \"e\"; },\n"
			       "  { name = \"c\"; listen = \"[::1]:6380\"; "
			       "peer = \"b\"; export = \"e\"; },\n"
			       "  { name = \"d\"; listen = \"127.0.0.2:6381\"; "
			       "peer = \"b\"; export = \"e\"; }\n"
			       ");\n");

	ck_assert_int_eq(conf->nrules, 4);
	conf_free(conf);
}
END_TEST

START_TEST(test_free_null)
{
	conf_free(NULL);
}
END_TEST

/* Key files */

static char tmpdir[] = "/tmp/check_conf.XXXXXX";

static void
tmp_setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void
tmp_teardown(void)
{
	char cmd[64 + sizeof(tmpdir)];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
	strcpy(tmpdir, "/tmp/check_conf.XXXXXX");
}

/* A file of n bytes (byte i is i * 7) with mode; returns its path in buf. */
static const char *
write_key(char *buf, size_t len, const char *name, size_t n, mode_t mode)
{
	unsigned char data[2048];
	size_t i;
	int fd;

	for (i = 0; i < n; i++)
		data[i] = (unsigned char)(i * 7);
	snprintf(buf, len, "%s/%s", tmpdir, name);
	fd = open(buf, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, data, n), (ssize_t)n);
	ck_assert_int_eq(fchmod(fd, mode), 0);
	close(fd);
	return buf;
}

static char *
peer_with_key(char *buf, size_t len, const char *path)
{
	snprintf(buf, len,
		 "peers = ( { name = \"b\"; address = \"127.0.0.1:7102\";\n"
		 "  key_file = \"%s\"; } );\n",
		 path);
	return buf;
}

START_TEST(test_key_loaded)
{
	char path[TPATH], text[TPATH + 256];
	struct conf *conf;
	size_t i;

	write_key(path, sizeof(path), "k32", 32, 0600);
	conf = load_ok(peer_with_key(text, sizeof(text), path));
	ck_assert_str_eq(conf->peers[0].key_file, path);
	ck_assert_uint_eq(conf->peers[0].key_len, 32);
	for (i = 0; i < 32; i++)
		ck_assert_uint_eq(conf->peers[0].key[i], (i * 7) & 0xff);
	conf_free(conf);

	write_key(path, sizeof(path), "k1024", CONF_KEY_MAX, 0400);
	conf = load_ok(peer_with_key(text, sizeof(text), path));
	ck_assert_uint_eq(conf->peers[0].key_len, CONF_KEY_MAX);
	ck_assert_uint_eq(conf->peers[0].key[CONF_KEY_MAX - 1],
			  ((CONF_KEY_MAX - 1) * 7) & 0xff);
	conf_free(conf);
}
END_TEST

static void
expect_key_error(const char *path, const char *msg)
{
	char text[TPATH + 256], want[4 * TPATH];

	snprintf(want, sizeof(want), "t.conf:2: peers[0].key_file: %s\n", msg);
	expect_errors(peer_with_key(text, sizeof(text), path), want, 1);
}

START_TEST(test_key_refused)
{
	char path[TPATH], msg[3 * TPATH];

	write_key(path, sizeof(path), "short", 31, 0600);
	snprintf(msg, sizeof(msg),
		 "key file %s has 31 bytes, at least 32 are needed (head -c 32 "
		 "/dev/urandom > %s)",
		 path, path);
	expect_key_error(path, msg);

	write_key(path, sizeof(path), "empty", 0, 0600);
	snprintf(msg, sizeof(msg),
		 "key file %s has 0 bytes, at least 32 are needed (head -c 32 "
		 "/dev/urandom > %s)",
		 path, path);
	expect_key_error(path, msg);

	write_key(path, sizeof(path), "long", CONF_KEY_MAX + 1, 0600);
	snprintf(msg, sizeof(msg), "key file %s is longer than 1024 bytes",
		 path);
	expect_key_error(path, msg);

	write_key(path, sizeof(path), "k644", 32, 0644);
	snprintf(msg, sizeof(msg),
		 "key file %s is readable by group/others (mode 0644); chmod "
		 "600 it",
		 path);
	expect_key_error(path, msg);

	write_key(path, sizeof(path), "k604", 32, 0604);
	snprintf(msg, sizeof(msg),
		 "key file %s is readable by group/others (mode 0604); chmod "
		 "600 it",
		 path);
	expect_key_error(path, msg);

	write_key(path, sizeof(path), "k620", 32, 0620);
	snprintf(msg, sizeof(msg),
		 "key file %s is writable by group/others (mode 0620); chmod "
		 "600 it",
		 path);
	expect_key_error(path, msg);

	snprintf(path, sizeof(path), "%s/missing", tmpdir);
	snprintf(msg, sizeof(msg), "key file %s: No such file or directory",
		 path);
	expect_key_error(path, msg);
}
END_TEST

START_TEST(test_key_not_regular)
{
	char path[TPATH], msg[3 * TPATH];

	snprintf(path, sizeof(path), "%s/dir", tmpdir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(msg, sizeof(msg), "key file %s is not a regular file", path);
	expect_key_error(path, msg);

	/* a FIFO must be refused, not block the daemon waiting for a writer */
	snprintf(path, sizeof(path), "%s/fifo", tmpdir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	snprintf(msg, sizeof(msg), "key file %s is not a regular file", path);
	expect_key_error(path, msg);
}
END_TEST

/*
 * A Kubernetes Secret mount: key -> ..data/key, ..data -> ..2026_12_03/, the
 * file in there.  Accepted when the file it ends at is safe; refused, naming
 * that file, when it is not.
 */
START_TEST(test_key_symlink)
{
	char dir[TPATH], path[TPATH], target[TPATH], *real;
	char text[TPATH + 256], msg[3 * TPATH];
	struct conf *conf;
	struct passwd *pw;

	snprintf(dir, sizeof(dir), "%s/..2026_12_03", tmpdir);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	write_key(target, sizeof(target), "..2026_12_03/key", 32, 0400);
	snprintf(path, sizeof(path), "%s/..data", tmpdir);
	ck_assert_int_eq(symlink("..2026_12_03", path), 0);
	snprintf(path, sizeof(path), "%s/key", tmpdir);
	ck_assert_int_eq(symlink("..data/key", path), 0);
	conf = load_ok(peer_with_key(text, sizeof(text), path));
	ck_assert_uint_eq(conf->peers[0].key_len, 32);
	ck_assert_uint_eq(conf->peers[0].key[31], (31 * 7) & 0xff);
	conf_free(conf);

	/* the file at the end is what is checked: 0644 is refused */
	write_key(target, sizeof(target), "..2026_12_03/open", 32, 0644);
	snprintf(path, sizeof(path), "%s/open", tmpdir);
	ck_assert_int_eq(symlink("..data/open", path), 0);
	/* realpath's own buffer: a fixed one must hold PATH_MAX (issue 49) */
	real = realpath(target, NULL);
	ck_assert_ptr_nonnull(real);
	snprintf(msg, sizeof(msg),
		 "key file %s (-> %s) is readable by group/others (mode "
		 "0644); chmod 600 it",
		 path, real);
	free(real);
	expect_key_error(path, msg);

	/* a dangling link says what is missing */
	snprintf(path, sizeof(path), "%s/dangling", tmpdir);
	ck_assert_int_eq(symlink("..data/none", path), 0);
	snprintf(msg, sizeof(msg), "key file %s: No such file or directory",
		 path);
	expect_key_error(path, msg);

	/* a link someone else owns could be pointed anywhere by them */
	if (geteuid() != 0)
		return;
	snprintf(path, sizeof(path), "%s/theirs", tmpdir);
	ck_assert_int_eq(symlink("..data/key", path), 0);
	ck_assert_int_eq(lchown(path, 12345, 12345), 0);
	pw = getpwnam(SMCPROXYD_USER);
	if (pw == NULL || pw->pw_uid == 0)
		snprintf(msg, sizeof(msg),
			 "symbolic link %s is owned by uid 12345, not root, "
			 "the user smcproxyd runs as: chown root it",
			 path);
	else
		snprintf(msg, sizeof(msg),
			 "symbolic link %s is owned by uid 12345, neither "
			 "root nor %s (uid %u), the user the service runs as: "
			 "chown %s it",
			 path, pw->pw_name, (unsigned)pw->pw_uid, pw->pw_name);
	expect_key_error(path, msg);
}
END_TEST

/*
 * Run auth_key_load(path) as uid 65534 (nobody), in a child: its return
 * and err come back through a pipe.  Only root can; false otherwise.
 */
static bool
key_load_as_nobody(const char *path, int *ret, char *err, size_t errlen)
{
	unsigned char key[CONF_KEY_MAX];
	struct {
		int ret;
		char err[1024];
	} res;
	size_t len;
	pid_t pid;
	int fds[2], status;

	if (geteuid() != 0)
		return false;
	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		memset(&res, 0, sizeof(res));
		if (setgroups(0, NULL) != 0 || setgid(65534) != 0 ||
		    setuid(65534) != 0)
			_exit(2);
		res.ret = auth_key_load(path, key, &len, res.err,
					sizeof(res.err));
		_exit(write(fds[1], &res, sizeof(res)) == sizeof(res) ? 0 : 3);
	}
	close(fds[1]);
	ck_assert_int_eq(read(fds[0], &res, sizeof(res)), (ssize_t)sizeof(res));
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	*ret = res.ret;
	snprintf(err, errlen, "%s", res.err);
	return true;
}

/*
 * Whom a key may belong to, and what the daemon says when it cannot read
 * one: here it runs as nobody, as under the unit it runs as smcproxyd.
 */
START_TEST(test_key_owner)
{
	char path[TPATH], err[1024], want[3 * TPATH];
	int ret;

	/* the files must be reachable by nobody: only the mode protects */
	ck_assert_int_eq(chmod(tmpdir, 0755), 0);
	write_key(path, sizeof(path), "nobodys", 32, 0600);
	if (!key_load_as_nobody(path, &ret, err, sizeof(err)))
		return; /* not root: cannot change users */
	ck_assert_int_eq(chown(path, 65534, 65534), 0);
	ck_assert(key_load_as_nobody(path, &ret, err, sizeof(err)));
	ck_assert_msg(ret == 0, "%s", err);
	ck_assert_str_eq(err, "");

	/* root's key, mode 0600: the daemon cannot read it; how to fix it */
	write_key(path, sizeof(path), "roots", 32, 0600);
	ck_assert(key_load_as_nobody(path, &ret, err, sizeof(err)));
	ck_assert_int_eq(ret, -EACCES);
	snprintf(want, sizeof(want),
		 "key file %s: Permission denied: smcproxyd runs as nobody "
		 "(uid 65534), which cannot read it or its directory; chown "
		 "nobody it (mode 0600), or keep it root's and pass it with "
		 "systemd's LoadCredential= (smcproxyd(8), Keys)",
		 path);
	ck_assert_str_eq(err, want);

	/* someone else's: which users would do */
	write_key(path, sizeof(path), "strangers", 32, 0604);
	ck_assert_int_eq(chown(path, 12345, 12345), 0);
	ck_assert(key_load_as_nobody(path, &ret, err, sizeof(err)));
	ck_assert_int_eq(ret, -EPERM);
	snprintf(want, sizeof(want),
		 "key file %s is owned by uid 12345, neither root nor nobody "
		 "(uid 65534), the user smcproxyd runs as: chown nobody it",
		 path);
	ck_assert_str_eq(err, want);
}
END_TEST

/*
 * Run as root (as "smcproxyd -n" is), a key of root's loads, with a
 * warning when the service's user (smcproxyd) exists: it could not.
 */
START_TEST(test_key_root_warns)
{
	unsigned char key[CONF_KEY_MAX];
	char path[TPATH], text[TPATH + 256], want[3 * TPATH], *w;
	struct conf *conf;
	size_t len;
	struct passwd *pw;

	if (geteuid() != 0)
		return;
	write_key(path, sizeof(path), "roots", 32, 0600);
	pw = getpwnam(SMCPROXYD_USER);
	ck_assert_int_eq(auth_key_load(path, key, &len, want, sizeof(want)), 0);
	conf = load_ok(peer_with_key(text, sizeof(text), path));
	w = conf->warnings;
	if (pw == NULL || pw->pw_uid == 0) {
		ck_assert_str_eq(want, "");
		ck_assert_str_eq(w, "");
	} else {
		ck_assert_ptr_nonnull(strstr(want, "the user the service runs "
						   "as, cannot read it"));
		ck_assert_msg(strncmp(w,
				      "t.conf:2: warning: peers[0].key_file: "
				      "key file ",
				      48) == 0,
			      "%s", w);
	}
	conf_free(conf);
}
END_TEST

/*
 * As nobody (uid and gid 65534, no other group), a control_gid it is not in
 * cannot be given to the socket: a warning; its own group is fine.
 */
START_TEST(test_warn_control_gid)
{
	char buf[1024];
	struct conf *conf;
	ssize_t n;
	pid_t pid;
	int fds[2], status;

	if (geteuid() != 0)
		return;
	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (setgroups(0, NULL) != 0 || setgid(65534) != 0 ||
		    setuid(65534) != 0)
			_exit(2);
		conf = conf_load_string("smcproxyd: { control_gid = 12345; };\n"
					"rdma: { };\n",
					"t.conf", NULL);
		if (conf == NULL)
			_exit(3);
		dprintf(fds[1], "%s|", conf->warnings);
		conf_free(conf);
		conf = conf_load_string("smcproxyd: { control_gid = 65534; };",
					"t.conf", NULL);
		if (conf == NULL)
			_exit(3);
		dprintf(fds[1], "%s", conf->warnings);
		conf_free(conf);
		_exit(0);
	}
	close(fds[1]);
	n = read(fds[0], buf, sizeof(buf) - 1);
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_gt(n, 0);
	buf[n] = '\0';
	ck_assert_str_eq(buf, "t.conf:1: warning: smcproxyd.control_gid: uid "
			      "65534 is not in group 12345 and cannot give it "
			      "the control socket; add it to the group, or "
			      "under the unit SupplementaryGroups= in a "
			      "drop-in (smcproxyd(8), SYSTEMD)\n|");
}
END_TEST

/* "smcproxyd -n" names what serves but not as it seems: here no key. */
START_TEST(test_warnings)
{
	struct conf *conf;

	conf = load_ok(LISTEN PEER_B EXPORT(""));
	ck_assert_str_eq(conf->warnings,
			 "t.conf:2: warning: peers[0].insecure: peer b is not "
			 "authenticated: anyone who can reach the peer port "
			 "from its address's host can use the exports it may "
			 "use, and its traffic is neither authenticated nor "
			 "encrypted\n");
	conf_free(conf);

	/* metrics for anyone who reaches them; loopback ones are fine */
	conf = load_ok("smcproxyd: {\n metrics_listen = \"0.0.0.0:9100\"; };");
	ck_assert_str_eq(
		conf->warnings,
		"t.conf:2: warning: smcproxyd.metrics_listen: "
		"0.0.0.0:9100 is not a loopback address: anyone who "
		"can reach it reads the metrics (rule, peer and export "
		"names, counters) without authentication\n");
	conf_free(conf);
	conf = load_ok("smcproxyd: { metrics_listen = \"127.0.0.2:9100\"; };");
	ck_assert_str_eq(conf->warnings, "");
	conf_free(conf);
	conf = load_ok("smcproxyd: { metrics_listen = \"[::1]:9100\"; };");
	ck_assert_str_eq(conf->warnings, "");
	conf_free(conf);
}
END_TEST

START_TEST(test_auth_key_load)
{
	unsigned char key[CONF_KEY_MAX];
	char path[TPATH], err[512];
	size_t len = 0;

	write_key(path, sizeof(path), "ok", 40, 0600);
	ck_assert_int_eq(auth_key_load(path, key, &len, err, sizeof(err)), 0);
	ck_assert_uint_eq(len, 40);
	ck_assert_str_eq(err, "");
	ck_assert_uint_eq(key[39], (39 * 7) & 0xff);

	write_key(path, sizeof(path), "open", 40, 0640);
	ck_assert_int_eq(auth_key_load(path, key, &len, err, sizeof(err)),
			 -EPERM);
	ck_assert_ptr_nonnull(strstr(err, "chmod 600 it"));
	write_key(path, sizeof(path), "tiny", 1, 0600);
	ck_assert_int_eq(auth_key_load(path, key, &len, err, sizeof(err)),
			 -EINVAL);
	write_key(path, sizeof(path), "huge", 2000, 0600);
	ck_assert_int_eq(auth_key_load(path, key, &len, err, sizeof(err)),
			 -EFBIG);
	snprintf(path, sizeof(path), "%s/none", tmpdir);
	ck_assert_int_eq(auth_key_load(path, key, &len, err, sizeof(err)),
			 -ENOENT);
}
END_TEST

/* Write text to tmpdir/name; returns the path in buf. */
static const char *
write_file(char *buf, size_t len, const char *name, const char *text)
{
	FILE *f;

	snprintf(buf, len, "%s/%s", tmpdir, name);
	f = fopen(buf, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_ge(fputs(text, f), 0);
	ck_assert_int_eq(fclose(f), 0);
	return buf;
}

static struct conf *
load_file(const char *path, char **out)
{
	struct conf *conf;
	size_t len;
	FILE *f;

	f = open_memstream(out, &len);
	ck_assert_ptr_nonnull(f);
	conf = conf_load(path, f);
	fclose(f);
	return conf;
}

START_TEST(test_load_file)
{
	char path[TPATH], key[TPATH], want[3 * TPATH];
	struct conf *conf;
	char *out = NULL;

	/* a relative key_file is next to the config, whatever the cwd */
	write_key(key, sizeof(key), "ab.key", 32, 0600);
	write_file(path, sizeof(path), "rel.conf",
		   "peers = ( { name = \"b\"; address = \"127.0.0.1:7102\";\n"
		   "  key_file = \"ab.key\"; } );\n");
	conf = load_file(path, &out);
	ck_assert_msg(conf != NULL, "%s", out);
	ck_assert_str_eq(out, "");
	ck_assert_str_eq(conf->path, path);
	ck_assert_str_eq(conf->peers[0].key_file, key);
	ck_assert_uint_eq(conf->peers[0].key_len, 32);
	conf_free(conf);
	free(out);

	/* errors name the file, and an @include'd file by its own name */
	write_file(path, sizeof(path), "inc.conf",
		   "\nrdma: { max_links = 5; };\n");
	write_file(path, sizeof(path), "main.conf",
		   "smcproxyd: { workers = -1; };\n@include \"inc.conf\"\n");
	ck_assert_ptr_null(load_file(path, &out));
	snprintf(want, sizeof(want),
		 "%s:1: smcproxyd.workers: -1 is out of range 0..256\n", path);
	ck_assert_msg(strstr(out, want) != NULL, "%s", out);
	ck_assert_msg(strstr(out, "inc.conf:2: rdma.max_links: 5 is out of "
				  "range 1..2\n") != NULL,
		      "%s", out);
	ck_assert_int_eq(count_lines(out), 2);
	free(out);

	write_file(path, sizeof(path), "bad.conf", "smcproxyd: {\n\n");
	ck_assert_ptr_null(load_file(path, &out));
	snprintf(want, sizeof(want), "%s:3: syntax: ", path);
	ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "%s", out);
	free(out);

	snprintf(path, sizeof(path), "%s/none.conf", tmpdir);
	ck_assert_ptr_null(load_file(path, &out));
	snprintf(want, sizeof(want), "%s: No such file or directory\n", path);
	ck_assert_str_eq(out, want);
	free(out);
}
END_TEST

/* Reload */

static const char reload_base[] =
	"smcproxyd: { workers = 2; log_level = \"info\"; };\n"
	"peer_listen: { address = \"127.0.0.1:7101\"; };\n" PEER_B RULE(
		"") "rdma: { sndbuf = 131072; autocork = true; };\n";

START_TEST(test_reload_ok)
{
	struct conf *old = load_ok(reload_base), *new;
	char *out = NULL;
	size_t len;
	FILE *f;

	new = load_ok("smcproxyd: { workers = 2; log_level = \"debug\"; "
		      "max_conns = 9; };\n"
		      "peer_listen: { address = \"127.0.0.1:7101\"; };\n"
		      "peers = ( { name = \"c\"; address = \"127.0.0.1:7103\"; "
		      "insecure = true; } );\n"
		      "rules = ( { name = \"s\"; listen = \"127.0.0.1:6390\"; "
		      "peer = \"c\"; export = \"x\"; } );\n"
		      "rdma: { sndbuf = 131072; autocork = false; "
		      "lgr_idle_timeout = 5; dscp = 26; qp_timeout = 18; };\n");
	f = open_memstream(&out, &len);
	ck_assert_int_eq(conf_reload_check(old, new, f), 0);
	fclose(f);
	ck_assert_str_eq(out, "");
	free(out);
	conf_free(new);
	conf_free(old);
}
END_TEST

START_TEST(test_reload_refused)
{
	static const char *const want[] = {
		"t2.conf:1: smcproxyd.workers: cannot be changed by reload; "
		"restart the daemon\n",
		"t2.conf:1: smcproxyd.control_socket: cannot be changed by "
		"reload; restart the daemon\n",
		"t2.conf:3: peer_listen.address: cannot be changed by reload; "
		"restart the daemon\n",
		"t2.conf:6: rdma.devices: cannot be changed by reload; restart "
		"the daemon\n",
		/* removed from the file: reported at its section */
		"t2.conf:6: rdma.sndbuf: cannot be changed by reload; restart "
		"the daemon\n",
		"t2.conf:7: rdma.rmb: cannot be changed by reload; restart the "
		"daemon\n",
	};
	struct conf *old = load_ok(reload_base), *new, *gone;
	char *out = NULL;
	size_t len, i;
	FILE *f;

	new = load_as(
		"smcproxyd: { workers = 4; control_socket = \"/tmp/c.sock\"; "
		"};\n"
		"\n"
		"peer_listen: { address = \"127.0.0.1:7109\"; };\n" PEER_B RULE(
			"") "rdma: { devices = [ \"rxe0\" ];\n"
			    "  rmb = 32768; };\n",
		"t2.conf", &out);
	ck_assert_msg(new != NULL, "%s", out);
	free(out);
	f = open_memstream(&out, &len);
	ck_assert_int_eq(conf_reload_check(old, new, f), -EINVAL);
	fclose(f);
	for (i = 0; i < NELEM(want); i++)
		ck_assert_msg(strstr(out, want[i]) != NULL, "no %s in:\n%s",
			      want[i], out);
	ck_assert_int_eq(count_lines(out), (int)NELEM(want));
	free(out);

	/* dropping peer_listen altogether needs a restart too */
	gone = load_ok("smcproxyd: { workers = 2; };\n" PEER_B RULE(
		"") "rdma: { sndbuf = 131072; };\n");
	f = open_memstream(&out, &len);
	ck_assert_int_eq(conf_reload_check(old, gone, NULL), -EINVAL);
	ck_assert_int_eq(conf_reload_check(old, gone, f), -EINVAL);
	fclose(f);
	ck_assert_str_eq(out, "t.conf:0: peer_listen.address: cannot be "
			      "changed by reload; restart the daemon\n");
	free(out);
	conf_free(gone);
	conf_free(new);
	conf_free(old);
}
END_TEST

/* Schema, man page and shipped examples */

static char *
read_all(const char *path)
{
	char *buf = NULL;
	size_t len = 0, n;
	char chunk[4096];
	FILE *f = fopen(path, "r"), *m;

	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	m = open_memstream(&buf, &len);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, n, m);
	fclose(f);
	fclose(m);
	return buf;
}

/* The text of section ".SS name" of a man page, up to the next heading. */
static char *
man_section(const char *man, const char *name)
{
	char head[128];
	const char *start, *end, *sh;

	snprintf(head, sizeof(head), "\n.SS %s\n", name);
	start = strstr(man, head);
	ck_assert_msg(start != NULL, "no \".SS %s\" in docs/smcproxyd.conf.5",
		      name);
	start += strlen(head) - 1;
	end = strstr(start, "\n.SS ");
	sh = strstr(start, "\n.SH ");
	if (end == NULL || (sh != NULL && sh < end))
		end = sh;
	return end != NULL ? strndup(start, (size_t)(end - start)) :
			     strdup(start);
}

/*
 * Routed RoCE v2: a peer takes rdma's DSCP, priority, timeout and retry
 * counts unless it sets its own, and may name its device and source.
 */
START_TEST(test_peer_routes)
{
	struct conf *conf = load_ok(
		"rdma: { dscp = 26; priority = 3; qp_timeout = 18; "
		"retry_count = 5; rnr_retry = 6; };\n"
		"peers = ( { name = \"near\"; address = \"10.0.0.2:7102\"; "
		"insecure = true; },\n"
		"  { name = \"far\"; address = \"10.9.0.2:7102\"; "
		"insecure = true; dscp = 0; priority = 0; qp_timeout = 0; "
		"retry_count = 0; rnr_retry = 0; device = \"mlx5_1\"; "
		"source = \"10.8.0.1\"; },\n"
		"  { name = \"six\"; address = \"[2001:db8::2]:7102\"; "
		"insecure = true; dscp = 46; source = \"2001:db8::1\"; } );\n");
	const struct conf_peer *near = conf_peer_find(conf, "near");
	const struct conf_peer *far = conf_peer_find(conf, "far");
	const struct conf_peer *six = conf_peer_find(conf, "six");
	struct addr want;

	ck_assert_int_eq(near->route.dscp, 26);
	ck_assert_int_eq(near->route.priority, 3);
	ck_assert_int_eq(near->route.qp_timeout, 18);
	ck_assert_int_eq(near->route.retry_count, 5);
	ck_assert_int_eq(near->route.rnr_retry, 6);
	ck_assert_str_eq(near->device, "");
	ck_assert_uint_eq(near->source.len, 0);
	/* 0 is a value of its own, not "rdma's" */
	ck_assert_int_eq(far->route.dscp, 0);
	ck_assert_int_eq(far->route.priority, 0);
	ck_assert_int_eq(far->route.qp_timeout, 0);
	ck_assert_int_eq(far->route.retry_count, 0);
	ck_assert_int_eq(far->route.rnr_retry, 0);
	ck_assert_str_eq(far->device, "mlx5_1");
	ck_assert_int_eq(addr_parse_host("10.8.0.1", &want), 0);
	ck_assert(addr_equal(&far->source, &want));
	ck_assert_int_eq(six->route.dscp, 46);
	ck_assert_int_eq(six->route.priority, 3);
	ck_assert_int_eq(addr_parse_host("2001:db8::1", &want), 0);
	ck_assert(addr_equal(&six->source, &want));
	conf_free(conf);
}
END_TEST

START_TEST(test_schema)
{
	char *out = NULL, *man, *line, *save = NULL, *tab, want[128];
	char *key, *section;
	int rows = 0, fields;
	size_t len;
	FILE *f;

	f = open_memstream(&out, &len);
	conf_print_schema(f);
	fclose(f);
	ck_assert(strncmp(out,
			  "key\ttype\tdefault\trange\treload\tdescription\n",
			  42) == 0);
	ck_assert_ptr_nonnull(strstr(
		out, "\nrdma.sndbuf\tinteger\t262144\t16384..536870912\tno\t"));
	ck_assert_ptr_nonnull(
		strstr(out, "\nsmcproxyd.log_level\tstring\t\"info\"\terror|"
			    "warning|info|debug\tyes\t"));
	ck_assert_ptr_nonnull(strstr(
		out, "\nsmcproxyd.control_mode\tmode\t0660\t0..0777\tno\t"));
	ck_assert_ptr_nonnull(strstr(out, "\npeers[].name\tname\trequired\t"));
	ck_assert_ptr_nonnull(strstr(out, "\nrules[].peer\tname\tnone\t"));
	ck_assert_ptr_nonnull(
		strstr(out, "\nrules[].target_smc\taddress\tnone\tip:port\t"));
	ck_assert_ptr_nonnull(strstr(out, "\nrdma.inline\tboolean\ttrue\t"));

	/* every key in the code is documented in its section of the man page */
	man = read_all(TOP_SRCDIR "/docs/smcproxyd.conf.5");
	for (line = strtok_r(out, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		for (fields = 1, tab = line; (tab = strchr(tab, '\t')) != NULL;
		     tab++)
			fields++;
		ck_assert_msg(fields == 6, "not 6 fields: %s", line);
		if (rows++ == 0)
			continue;
		*strchr(line, '\t') = '\0';
		key = strrchr(line, '.');
		if (key != NULL)
			*key++ = '\0';
		line[strcspn(line, "[")] = '\0';
		section = man_section(man, line);
		if (key != NULL) {
			snprintf(want, sizeof(want), "\n.TP\n.B %s\n", key);
			ck_assert_msg(strstr(section, want) != NULL,
				      "%s.%s is not in its section of "
				      "docs/smcproxyd.conf.5",
				      line, key);
		}
		free(section);
	}
	ck_assert_int_gt(rows, 40);
	free(man);
	free(out);
}
END_TEST

START_TEST(test_example_conf)
{
	char *out = NULL, *gen = NULL, *file;
	struct conf *conf;
	size_t len;
	FILE *f;

	conf = load_file(TOP_SRCDIR "/conf/smcproxyd.conf", &out);
	ck_assert_msg(conf != NULL && out[0] == '\0', "%s", out);
	ck_assert_int_eq(conf->rdma.sndbuf, 262144);
	conf_free(conf);
	free(out);

	/* the shipped file is what the key table writes, every key of it */
	f = open_memstream(&gen, &len);
	ck_assert_ptr_nonnull(f);
	conf_print_example(f);
	fclose(f);
	file = read_all(TOP_SRCDIR "/conf/smcproxyd.conf");
	ck_assert_msg(strcmp(file, gen) == 0,
		      "conf/smcproxyd.conf is not what the key table writes; "
		      "run: src/smcproxyd --print-example > "
		      "$(top_srcdir)/conf/smcproxyd.conf");
	free(file);
	free(gen);
}
END_TEST

/*
 * The example with its commented-out sections written in (each line's
 * leading "#", and "# " before a section's first and last line): valid,
 * once key_file names a real key.
 */
START_TEST(test_example_conf_all)
{
	static const char etc[] = "/etc/smcproxyd/ab.key";
	char key[TPATH], *gen = NULL, *text, *line, *next, *at;
	size_t len, n;
	struct conf *conf;
	FILE *f, *t;

	write_key(key, sizeof(key), "ab.key", 32, 0600);
	f = open_memstream(&gen, &len);
	ck_assert_ptr_nonnull(f);
	conf_print_example(f);
	fclose(f);
	t = open_memstream(&text, &n);
	ck_assert_ptr_nonnull(t);
	for (line = gen; *line != '\0'; line = next + 1) {
		next = strchr(line, '\n');
		*next = '\0';
		if (line[0] == '#' && (line[1] == '\t' || line[1] == '\0'))
			line++;
		else if (strncmp(line, "# ", 2) == 0 &&
			 (strstr(line, " = (") != NULL ||
			  strstr(line, ": {") != NULL ||
			  strcmp(line, "# };") == 0 ||
			  strcmp(line, "# );") == 0))
			line += 2;
		at = strstr(line, etc);
		if (at != NULL)
			fprintf(t, "%.*s%s%s\n", (int)(at - line), line, key,
				at + strlen(etc));
		else
			fprintf(t, "%s\n", line);
	}
	fclose(t);
	conf = load_ok(text);
	ck_assert(conf->has_peer_listen);
	ck_assert_int_eq(conf->npeers, 1);
	ck_assert_uint_eq(conf->peers[0].key_len, 32);
	ck_assert_int_eq(conf->nexports, 1);
	ck_assert_int_eq(conf->nrules, 1);
	conf_free(conf);
	free(text);
	free(gen);
}
END_TEST

/* Load an example pair file with its key path pointed at a real key. */
static struct conf *
load_example(const char *name, const char *key)
{
	char path[TPATH], *text, *at, *fixed;
	static const char etc[] = "key_file = \"/etc/smcproxyd/ab.key\"";
	struct conf *conf;
	size_t n;

	snprintf(path, sizeof(path), "%s/conf/examples/%s", TOP_SRCDIR, name);
	text = read_all(path);
	at = strstr(text, etc);
	ck_assert_msg(at != NULL, "%s does not use %s", name, etc);
	n = strlen(text) + strlen(key) + 32;
	fixed = malloc(n);
	ck_assert_ptr_nonnull(fixed);
	snprintf(fixed, n, "%.*skey_file = \"%s\"%s", (int)(at - text), text,
		 key, at + strlen(etc));
	conf = load_ok(fixed);
	free(fixed);
	free(text);
	return conf;
}

START_TEST(test_example_pair)
{
	struct conf *a, *b;
	char key[TPATH], buf[ADDR_STRLEN];

	write_key(key, sizeof(key), "ab.key", 32, 0600);
	a = load_example("a.conf", key);
	b = load_example("b.conf", key);

	ck_assert_str_eq(a->name, "a");
	ck_assert_str_eq(b->name, "b");
	ck_assert_int_eq(a->nrules, 1);
	ck_assert_str_eq(a->rules[0].name, "redis");
	ck_assert_str_eq(addr_str(&a->rules[0].listen, buf, sizeof(buf)),
			 "127.0.0.1:6380");
	ck_assert_str_eq(a->rules[0].peer->name, "b");
	ck_assert_str_eq(a->rules[0].export, "redis");
	/* each side's peer address is the other's peer_listen */
	ck_assert(addr_equal(&a->rules[0].peer->addr, &b->peer_listen));
	ck_assert(a->has_peer_listen && b->has_peer_listen);
	ck_assert(addr_equal(&conf_peer_find(b, "a")->addr, &a->peer_listen));
	ck_assert_str_eq(addr_str(&b->peer_listen, buf, sizeof(buf)),
			 "127.0.0.1:7102");
	ck_assert(conf_export_allows(conf_export_find(b, "redis"), "a"));
	ck_assert_str_eq(addr_str(&conf_export_find(b, "redis")->target, buf,
				  sizeof(buf)),
			 "127.0.0.1:6379");
	ck_assert_uint_eq(a->peers[0].key_len, 32);
	ck_assert_uint_eq(b->peers[0].key_len, 32);
	conf_free(a);
	conf_free(b);
}
END_TEST

static Suite *
conf_suite(void)
{
	Suite *s = suite_create("conf");
	TCase *tc;

	tc = tcase_create("errors");
	tcase_add_loop_test(tc, test_error_case, 0, (int)NELEM(error_cases));
	tcase_add_test(tc, test_all_errors_at_once);
	suite_add_tcase(s, tc);

	tc = tcase_create("values");
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_preauth_defaults);
	tcase_add_test(tc, test_ksmc_buffer_share);
	tcase_add_test(tc, test_values);
	tcase_add_test(tc, test_control_mode_forms);
	tcase_add_test(tc, test_resolved);
	tcase_add_test(tc, test_listen_overlap_allowed);
	tcase_add_test(tc, test_peer_routes);
	tcase_add_test(tc, test_free_null);
	tcase_add_test(tc, test_warnings);
	tcase_add_test(tc, test_warn_control_gid);
	suite_add_tcase(s, tc);

	tc = tcase_create("files");
	tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
	tcase_add_test(tc, test_key_loaded);
	tcase_add_test(tc, test_key_refused);
	tcase_add_test(tc, test_key_not_regular);
	tcase_add_test(tc, test_key_symlink);
	tcase_add_test(tc, test_key_owner);
	tcase_add_test(tc, test_key_root_warns);
	tcase_add_test(tc, test_auth_key_load);
	tcase_add_test(tc, test_load_file);
	tcase_add_test(tc, test_example_pair);
	tcase_add_test(tc, test_example_conf_all);
	suite_add_tcase(s, tc);

	tc = tcase_create("reload");
	tcase_add_test(tc, test_reload_ok);
	tcase_add_test(tc, test_reload_refused);
	suite_add_tcase(s, tc);

	tc = tcase_create("docs");
	tcase_add_test(tc, test_schema);
	tcase_add_test(tc, test_example_conf);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(conf_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
