// SPDX-License-Identifier: BSD-2-Clause
/*
 * The configuration's key tables and the parsing of one section by them.
 * One table per section gives each key's type, default, range, validator,
 * whether a reload may change it and a one-line description; parsing,
 * defaults, validation, the reload check and the schema behind the man
 * page all read those tables, so they cannot drift apart.  Here: the
 * tables with their validators and per-section checks, a key's value
 * stored by its type, the sections of a file dispatched, the messages
 * collected ("file:line: key: message", sorted by position; what serves
 * but not as it may seem is a warning, kept in conf->warnings for "-n" to
 * print and the daemon to log), and the lookups and free of a loaded
 * config.  Above this file, which never calls them: conf_load.c (a whole
 * file read, checked across sections and compared on reload) and
 * conf_print.c (the schema and the example file).
 */
#include <sys/socket.h>
#include <sys/un.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libconfig.h>

#include "smcproxyd.h"
#include "conf.h"
#include "smcr_clc_wire.h"

#define CONF_NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define CONF_MSG_LEN 512

static const char *const conf_type_expected[] = {
	[CONF_T_INT] = "an integer",
	[CONF_T_MODE] = "an octal mode like 0660",
	[CONF_T_BOOL] = "true or false",
	[CONF_T_PATH] = "a string",
	[CONF_T_NAME] = "a string",
	[CONF_T_NAMES] = "an array of strings [ \"a\", \"b\" ]",
	[CONF_T_ADDR] = "a string \"ip:port\"",
	[CONF_T_ENUM] = "a string",
	[CONF_T_PEER] = "a string",
	[CONF_T_HOST] = "a string \"ip\"",
};

struct conf_msg {
	struct conf_loc loc;
	size_t seq;
	bool warning; /* serves, but not as the file seems to say */
	char *text;   /* "key: message" */
};

static void conf_warn(struct conf_parse *p, struct conf_loc loc,
		      const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void
conf_add_msg(struct conf_parse *p, struct conf_loc loc, const char *key,
	     bool warning, const char *msg)
{
	struct conf_msg *m;
	size_t n;

	if (p->nmsgs == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;

		m = realloc(p->msgs, cap * sizeof(*m));
		if (m == NULL) {
			p->lost++;
			return;
		}
		p->msgs = m;
		p->cap = cap;
	}
	n = strlen(key) + 2 + strlen(msg) + 1;
	m = &p->msgs[p->nmsgs];
	m->text = malloc(n);
	if (m->text == NULL) {
		p->lost++;
		return;
	}
	snprintf(m->text, n, "%s: %s", key, msg);
	m->loc = loc;
	m->warning = warning;
	m->seq = p->nmsgs++;
}

/* An error at loc: the file is refused. */
void
conf_err(struct conf_parse *p, struct conf_loc loc, const char *key,
	 const char *fmt, ...)
{
	char msg[CONF_MSG_LEN];
	va_list ap;

	p->nerrors++;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	conf_add_msg(p, loc, key, false, msg);
}

/*
 * A warning at loc: the file serves, but something in it will not do what
 * it seems to (an unauthenticated peer, a key the service cannot read).
 * "smcproxyd -n" prints them, the daemon logs them at start and reload.
 */
static void
conf_warn(struct conf_parse *p, struct conf_loc loc, const char *key,
	  const char *fmt, ...)
{
	char msg[CONF_MSG_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	conf_add_msg(p, loc, key, true, msg);
}

static int
conf_msg_cmp(const void *a, const void *b)
{
	const struct conf_msg *x = a, *y = b;

	if (x->loc.file != y->loc.file)
		return x->loc.file < y->loc.file ? -1 : 1;
	if (x->loc.line != y->loc.line)
		return x->loc.line < y->loc.line ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Print the collected errors in file order to errors and the warnings, as
 * "file:line: key: warning: message" lines, to warnings (may be NULL);
 * then drop them.
 */
void
conf_flush(struct conf_parse *p, FILE *errors, FILE *warnings)
{
	const struct conf_msg *m;
	FILE *f;
	size_t i;

	if (p->nmsgs > 1)
		qsort(p->msgs, p->nmsgs, sizeof(*p->msgs), conf_msg_cmp);
	for (i = 0; i < p->nmsgs; i++) {
		m = &p->msgs[i];
		f = m->warning ? warnings : errors;
		if (f != NULL)
			fprintf(f, "%s:%d: %s%s\n", p->src->files[m->loc.file],
				m->loc.line, m->warning ? "warning: " : "",
				m->text);
		free(m->text);
	}
	if (p->lost && errors != NULL)
		fprintf(errors, "%s: %d more errors (out of memory)\n",
			p->src->files[0], p->lost);
	free(p->msgs);
	p->msgs = NULL;
	p->nmsgs = p->cap = 0;
}

/* Index of file in src->files, adding it; 0 (the config) when memory is out. */
int
conf_file_intern(struct conf_src *src, const char *file)
{
	char **files;
	int i;

	if (file == NULL)
		return 0;
	for (i = 0; i < src->nfiles; i++)
		if (strcmp(src->files[i], file) == 0)
			return i;
	files = realloc(src->files, (size_t)(src->nfiles + 1) * sizeof(*files));
	if (files == NULL)
		return 0;
	src->files = files;
	files[src->nfiles] = strdup(file);
	if (files[src->nfiles] == NULL)
		return 0;
	return src->nfiles++;
}

static struct conf_loc
conf_loc_of(struct conf_parse *p, const config_setting_t *s)
{
	struct conf_loc loc = {0, 0};

	if (s == NULL)
		return loc;
	/* settings of the main file have no file name when read from memory */
	loc.file = conf_file_intern(p->src, config_setting_source_file(s));
	loc.line = config_setting_source_line(s);
	return loc;
}

/* Copy s into buf as a quoted, printable, bounded string; returns buf. */
const char *
conf_quote(const char *s, char *buf, size_t len)
{
	size_t o = 0;

	buf[o++] = '"';
	for (; *s != '\0' && o + 8 < len; s++) {
		unsigned char c = (unsigned char)*s;

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
			buf[o++] = (char)c;
		else
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", c);
	}
	if (*s != '\0') {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}

/*
 * Whether s[0..len) is a name: 1..CONF_NAME_MAX of [A-Za-z0-9._-], safe
 * in logs, JSON and on the wire.  The one rule for rule, peer, export and
 * daemon names, in the config and in every codec that carries one.
 */
bool
conf_name_valid_len(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > CONF_NAME_MAX)
		return false;
	for (i = 0; i < len; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return false;
	}
	return true;
}

static bool
conf_name_valid(const char *s)
{
	return conf_name_valid_len(s, strnlen(s, CONF_NAME_MAX + 1));
}

static const char *
conf_libconfig_type(int t)
{
	switch (t) {
	case CONFIG_TYPE_GROUP:
		return "a group";
	case CONFIG_TYPE_INT:
	case CONFIG_TYPE_INT64:
		return "an integer";
	case CONFIG_TYPE_FLOAT:
		return "a float";
	case CONFIG_TYPE_STRING:
		return "a string";
	case CONFIG_TYPE_BOOL:
		return "a boolean";
	case CONFIG_TYPE_ARRAY:
		return "an array";
	case CONFIG_TYPE_LIST:
		return "a list";
	default:
		return "empty";
	}
}

static bool
conf_addr_unspecified(const struct addr *a)
{
	const struct sockaddr_in *sin = (const void *)&a->ss;
	const struct sockaddr_in6 *sin6 = (const void *)&a->ss;

	if (a->ss.ss_family == AF_INET)
		return sin->sin_addr.s_addr == htonl(INADDR_ANY);
	if (a->ss.ss_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr);
	return false;
}

/* Whether a is IPv4, or IPv6 mapping an IPv4 address. */
bool
conf_addr_is_v4(const struct addr *a)
{
	const struct sockaddr_in6 *sin6 = (const void *)&a->ss;

	return a->ss.ss_family == AF_INET ||
	       (a->ss.ss_family == AF_INET6 &&
		IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr));
}

/*
 * Would listeners on a and b catch the same connections?  Listeners use
 * SO_REUSEPORT, so the kernel would not refuse the second bind: it would
 * silently share the port between two rules.  "::" covers IPv4 too
 * (dual-stack), "0.0.0.0" only IPv4.
 */
bool
conf_addr_overlap(const struct addr *a, const struct addr *b)
{
	const struct sockaddr_in *a4 = (const void *)&a->ss;
	const struct sockaddr_in *b4 = (const void *)&b->ss;

	if (a->ss.ss_family == 0 || b->ss.ss_family == 0)
		return false;
	/* sin_port and sin6_port sit at the same offset */
	if (a4->sin_port != b4->sin_port)
		return false;
	if (addr_same_host(a, b))
		return true;
	if (conf_addr_unspecified(a) &&
	    (a->ss.ss_family == AF_INET6 || conf_addr_is_v4(b)))
		return true;
	return conf_addr_unspecified(b) &&
	       (b->ss.ss_family == AF_INET6 || conf_addr_is_v4(a));
}

/* Validators, named in the tables. */

static int
conf_check_pow2(struct conf_parse *p, const void *field, char *msg, size_t len)
{
	int v = *(const int *)field;

	if ((v & (v - 1)) == 0)
		return 0;
	snprintf(msg, len,
		 "%d is not a power of two (16384, 32768, 65536, ...)", v);
	return -EINVAL;
}

static int
conf_check_socket_path(struct conf_parse *p, const void *field, char *msg,
		       size_t len)
{
	const char *s = *(char *const *)field;
	struct sockaddr_un sun;

	if (s[0] != '/') {
		snprintf(msg, len, "must be an absolute path");
		return -EINVAL;
	}
	if (strlen(s) >= sizeof(sun.sun_path)) {
		snprintf(msg, len,
			 "longer than %zu bytes, the limit of a UNIX socket "
			 "path",
			 sizeof(sun.sun_path) - 1);
		return -EINVAL;
	}
	return 0;
}

/* An absolute path, or "none". */
static int
conf_check_absolute(struct conf_parse *p, const void *field, char *msg,
		    size_t len)
{
	const char *s = *(char *const *)field;

	if (s[0] != '/' && strcmp(s, "none") != 0) {
		snprintf(msg, len, "must be an absolute path, or \"none\"");
		return -EINVAL;
	}
	return 0;
}

static int
conf_check_specific(struct conf_parse *p, const void *field, char *msg,
		    size_t len)
{
	const struct addr *a = field;
	char buf[ADDR_STRLEN];

	if (!conf_addr_unspecified(a))
		return 0;
	snprintf(msg, len, "%s is a wildcard; give the address to connect to",
		 addr_str(a, buf, sizeof(buf)));
	return -EINVAL;
}

static int
conf_check_source(struct conf_parse *p, const void *field, char *msg,
		  size_t len)
{
	const struct addr *a = field;
	const struct sockaddr_in6 *sin6 = (const void *)&a->ss;

	if (conf_addr_unspecified(a))
		snprintf(msg, len, "a wildcard; give a local address");
	else if (a->ss.ss_family == AF_INET6 &&
		 (IN6_IS_ADDR_MULTICAST(&sin6->sin6_addr) ||
		  IN6_IS_ADDR_LINKLOCAL(&sin6->sin6_addr)))
		snprintf(msg, len,
			 "not a routable unicast address (a RoCE v2 GID)");
	else
		return 0;
	return -EINVAL;
}

static int
conf_check_peers_exist(struct conf_parse *p, const void *field, char *msg,
		       size_t len)
{
	char *const *names = *(char **const *)field;
	char q[CONF_QUOTE_LEN];
	size_t o = 0;
	int i;

	if (names == NULL || names[0] == NULL) {
		snprintf(msg, len,
			 "empty; list the peers that may use this export");
		return -EINVAL;
	}
	for (i = 0; names[i] != NULL; i++) {
		if (conf_peer_find(p->conf, names[i]) != NULL || o >= len)
			continue;
		o += (size_t)snprintf(msg + o, len - o, "%s%s",
				      o ? ", " : "no such peer ",
				      conf_quote(names[i], q, sizeof(q)));
	}
	return o ? -EINVAL : 0;
}

static int
conf_parse_log_level(const char *s, int *out)
{
	enum log_level level;

	if (log_level_parse(s, &level) < 0)
		return -EINVAL;
	*out = (int)level;
	return 0;
}

static int
conf_parse_slot_wait(const char *s, int *out)
{
	if (strcmp(s, "exclusive") == 0)
		*out = CONF_SLOT_WAIT_EXCLUSIVE;
	else if (strcmp(s, "all") == 0)
		*out = CONF_SLOT_WAIT_ALL;
	else
		return -EINVAL;
	return 0;
}

static int
conf_parse_busy_poll(const char *s, int *out)
{
	if (strcmp(s, "off") == 0)
		*out = CONF_BUSY_POLL_OFF;
	else if (strcmp(s, "adaptive") == 0)
		*out = CONF_BUSY_POLL_ADAPTIVE;
	else if (strcmp(s, "always") == 0)
		*out = CONF_BUSY_POLL_ALWAYS;
	else
		return -EINVAL;
	return 0;
}

/* Enum fields are written through an int. */
_Static_assert(sizeof(enum log_level) == sizeof(int), "enum log_level size");
_Static_assert(sizeof(enum conf_slot_wait) == sizeof(int),
	       "enum conf_slot_wait size");
_Static_assert(sizeof(enum conf_busy_poll) == sizeof(int),
	       "enum conf_busy_poll size");

/* More designated initializers may follow ds: .example = "b" */
#define KEY(st, fld, k, t, d, lo, hi, chk, fl, ds, ...)                      \
	{                                                                    \
		.name = k, .type = t, .off = offsetof(st, fld), .def = d,    \
		.min = lo, .max = hi, .check = chk, .flags = fl, .desc = ds, \
		__VA_ARGS__                                                  \
	}
#define KEY_INT(st, fld, k, d, lo, hi, chk, fl, ds) \
	KEY(st, fld, k, CONF_T_INT, d, lo, hi, chk, fl, ds)
#define KEY_ENUM(st, fld, k, d, fn, ch, fl, ds)                               \
	{                                                                     \
		.name = k, .type = CONF_T_ENUM, .off = offsetof(st, fld),     \
		.def = d, .parse = fn, .choices = ch, .flags = fl, .desc = ds \
	}
#define KEY_NAMES(st, fld, cnt, k, d, chk, fl, ds, ...)                    \
	{                                                                  \
		.name = k, .type = CONF_T_NAMES, .off = offsetof(st, fld), \
		.count_off = offsetof(st, cnt), .def = d, .check = chk,    \
		.flags = fl, .desc = ds, __VA_ARGS__                       \
	}

#define R CONF_RELOAD
#define REQ CONF_REQUIRED
#define UNIQ CONF_UNIQUE

static const struct conf_key conf_main_keys[] = {
	{.name = "name",
	 .type = CONF_T_NAME,
	 .off = offsetof(struct conf, name),
	 .def_doc = "short host name",
	 .desc = "this daemon's name; peers list it in exports[].peers",
	 .example = "\"a\""},
	KEY(struct conf, control_socket, "control_socket", CONF_T_PATH,
	    "/run/smcproxyd/control.sock", 0, 0, conf_check_socket_path, 0,
	    "UNIX socket that smcproxyctl talks to"),
	{.name = "state_file",
	 .type = CONF_T_PATH,
	 .off = offsetof(struct conf, state_file),
	 .check = conf_check_absolute,
	 .def_doc = "state.json beside control_socket",
	 .desc = "where the rules disabled and the peers drained by "
		 "smcproxyctl are kept across restarts; \"none\": not kept",
	 .example = "\"/run/smcproxyd/state.json\""},
	KEY(struct conf, control_mode, "control_mode", CONF_T_MODE, "0660", 0,
	    0777, NULL, 0, "file mode of the control socket (octal)"),
	KEY_INT(struct conf, control_uid, "control_uid", "-1", -1, INT_MAX,
		NULL, R,
		"uid also allowed to change state (root and our uid always "
		"are); -1: none"),
	KEY_INT(struct conf, control_gid, "control_gid", "-1", -1, INT_MAX,
		NULL, 0,
		"group given the control socket and allowed to change state; "
		"-1: none"),
	KEY_INT(struct conf, workers, "workers", "0", 0, 256, NULL, 0,
		"worker threads; 0: one per online CPU"),
	KEY_ENUM(struct conf, log_level, "log_level", "info",
		 conf_parse_log_level, "error|warning|info|debug", R,
		 "least severe message logged"),
	KEY_INT(struct conf, shutdown_timeout, "shutdown_timeout", "10", 0,
		3600, NULL, R,
		"seconds open connections get to finish when stopping"),
	KEY_INT(struct conf, max_conns, "max_conns", "0", 0, 1000000, NULL, R,
		"proxied connections per worker; 0: unlimited"),
	KEY_INT(struct conf, tcp_keepalive, "tcp_keepalive", "30", 0, 7200,
		NULL, R,
		"seconds a peer or target connection may be silent before TCP "
		"keepalive probes; 0: none"),
	KEY_INT(struct conf, tcp_user_timeout, "tcp_user_timeout", "60", 0,
		3600, NULL, R,
		"seconds sent data may go unacknowledged on a peer or target "
		"connection before it is dropped; 0: the kernel's"),
	KEY_INT(struct conf, resume_timeout, "resume_timeout", "900", 0, 86400,
		NULL, R,
		"seconds a connection whose link group ended waits to resume "
		"on a new one from the exact byte; 0: reset it at once"),
	KEY(struct conf, metrics_listen, "metrics_listen", CONF_T_ADDR, NULL, 0,
	    0, NULL, 0,
	    "where GET /metrics serves Prometheus metrics over HTTP; none: not "
	    "served",
	    .example = "\"127.0.0.1:9100\""),
};

static const struct conf_key conf_listen_keys[] = {
	KEY(struct conf, peer_listen, "address", CONF_T_ADDR, "0.0.0.0:7100", 0,
	    0, NULL, 0,
	    "where peers connect for link group setup and TCP fallback"),
	KEY_INT(struct conf, preauth_max, "preauth_max", "1024", 1, 65536, NULL,
		R,
		"peer connections per worker that have not authenticated yet; "
		"more wait in the listen queue"),
	KEY_INT(struct conf, preauth_per_source, "preauth_per_source", "256", 1,
		65536, NULL, R,
		"of those, how many may come from one host; more are reset"),
	KEY_INT(struct conf, first_byte_timeout, "first_byte_timeout", "10", 1,
		60, NULL, R,
		"seconds a new peer connection gets to send its first message "
		"header (a client of an accept_proxy rule: its PROXY header)"),
	KEY_INT(struct conf, handshake_timeout, "handshake_timeout", "15", 1,
		300, NULL, R,
		"seconds a peer connection gets to authenticate (fallback "
		"hello to proof, CLC PROPOSAL)"),
};

static const struct conf_key conf_peer_keys[] = {
	KEY(struct conf_peer, name, "name", CONF_T_NAME, NULL, 0, 0, NULL,
	    REQ | UNIQ | R, "the peer daemon's name (its smcproxyd.name)",
	    .example = "\"b\""),
	KEY(struct conf_peer, addr, "address", CONF_T_ADDR, NULL, 0, 0,
	    conf_check_specific, REQ | R,
	    "its peer_listen address, \"ip:port\"",
	    .example = "\"192.0.2.2:7100\""),
	KEY(struct conf_peer, key_file, "key_file", CONF_T_PATH, NULL, 0, 0,
	    NULL, R,
	    "pre-shared key, 32 to 1024 bytes, mode 0600; relative to the "
	    "config's directory",
	    .example = "\"/etc/smcproxyd/ab.key\""),
	KEY(struct conf_peer, insecure, "insecure", CONF_T_BOOL, "false", 0, 1,
	    NULL, R, "allow this peer without a key (no authentication)"),
	KEY(struct conf_peer, any_source, "any_source", CONF_T_BOOL, "false", 0,
	    1, NULL, R,
	    "accept it from any source address, not only its own address's "
	    "host"),
	KEY_INT(struct conf_peer, max_lgrs, "max_lgrs", "64", 1, 4096, NULL, R,
		"link groups it may set up with us, all workers; more are "
		"declined (it uses TCP for 2 s)"),
	KEY_INT(struct conf_peer, buffer_share, "buffer_share", "50", 1, 100,
		NULL, R,
		"percent of rdma.max_buffer_memory its connections may hold; "
		"more use the TCP fallback"),
	KEY_INT(struct conf_peer, max_conns, "max_conns", "16384", 0, 1000000,
		NULL, R,
		"connections it may hold on our exports, all workers, either "
		"transport; more are refused; 0: unlimited"),
	KEY_INT(struct conf_peer, max_resuming, "max_resuming", "256", 0,
		1000000, NULL, R,
		"connections of one worker whose link group ended that may "
		"wait to resume at once; more are reset"),
	KEY(struct conf_peer, device, "device", CONF_T_NAME, NULL, 0, 0, NULL,
	    R,
	    "RDMA device for its link groups' first link; none: one of "
	    "rdma.devices",
	    .example = "\"mlx5_1\""),
	KEY(struct conf_peer, source, "source", CONF_T_HOST, NULL, 0, 0,
	    conf_check_source, R,
	    "local address its link groups use (the GID of RoCE v2 and "
	    "the control connection's source); none: the one the kernel "
	    "routes from",
	    .example = "\"192.0.2.1\""),
	KEY_INT(struct conf_peer, route.dscp, "dscp", "-1", -1, 63, NULL, R,
		"-1: rdma.dscp"),
	KEY_INT(struct conf_peer, route.priority, "priority", "-1", -1, 7, NULL,
		R, "-1: rdma.priority"),
	KEY_INT(struct conf_peer, route.qp_timeout, "qp_timeout", "-1", -1, 31,
		NULL, R, "-1: rdma.qp_timeout"),
	KEY_INT(struct conf_peer, route.retry_count, "retry_count", "-1", -1, 7,
		NULL, R, "-1: rdma.retry_count"),
	KEY_INT(struct conf_peer, route.rnr_retry, "rnr_retry", "-1", -1, 7,
		NULL, R, "-1: rdma.rnr_retry"),
};

static const struct conf_key conf_export_keys[] = {
	KEY(struct conf_export, name, "name", CONF_T_NAME, NULL, 0, 0, NULL,
	    REQ | UNIQ | R,
	    "name peers ask for (their rules[].export), at most 22 bytes",
	    .example = "\"redis\""),
	KEY(struct conf_export, target, "target", CONF_T_ADDR, NULL, 0, 0,
	    conf_check_specific, REQ | R, "server to connect to, \"ip:port\"",
	    .example = "\"127.0.0.1:6379\""),
	KEY_NAMES(struct conf_export, peers, npeers, "peers", NULL,
		  conf_check_peers_exist, R,
		  "peers allowed to use it, each named in peers; an export "
		  "needs peers, smc_listen or both",
		  .example = "[ \"b\" ]"),
	KEY_INT(struct conf_export, connect_timeout, "connect_timeout", "5", 1,
		300, NULL, R, "seconds to wait for the target to accept"),
	KEY_INT(struct conf_export, idle_timeout, "idle_timeout", "0", 0, 86400,
		NULL, R, "close connections idle this many seconds; 0: never"),
	KEY(struct conf_export, log_connections, "log_connections", CONF_T_BOOL,
	    "true", 0, 1, NULL, R,
	    "log a line for each connection when it ends"),
	KEY(struct conf_export, smc_listen, "smc_listen", CONF_T_ADDR, NULL, 0,
	    0, NULL, R,
	    "where Linux kernel SMC-R clients reach this export (the "
	    "SMC-R dialect, needs kernel_smc); none: only peers",
	    .example = "\"192.0.2.1:6379\""),
	KEY(struct conf_export, proxy_protocol, "proxy_protocol", CONF_T_BOOL,
	    "false", 0, 1, NULL, R,
	    "begin each target connection with a PROXY protocol v2 header "
	    "naming the client"),
};

static int
conf_check_intercept(const char *s, char *msg, size_t len)
{
	struct addr_net n;
	uint16_t port;

	if (intercept_dst_parse(s, &n, &port) == 0)
		return 0;
	snprintf(msg, len,
		 "use \"ip[/prefix]:port\" or \"[ip6[/prefix]]:port\", port "
		 "1-65535 or *");
	return -EINVAL;
}

/* Whether rule r carries each connection to its original destination. */
bool
conf_rule_original(const struct conf_rule *r)
{
	return r->target_smc.len != 0 &&
	       r->target_smc.ss.ss_family == AF_UNSPEC;
}

static const struct conf_key conf_rule_keys[] = {
	KEY(struct conf_rule, name, "name", CONF_T_NAME, NULL, 0, 0, NULL,
	    REQ | UNIQ | R, "the rule's name in logs and smcproxyctl",
	    .example = "\"redis\""),
	KEY(struct conf_rule, listen, "listen", CONF_T_ADDR, NULL, 0, 0, NULL,
	    REQ | UNIQ | R, "local address clients connect to, \"ip:port\"",
	    .example = "\"127.0.0.1:6380\""),
	KEY(struct conf_rule, peer, "peer", CONF_T_PEER, NULL, 0, 0, NULL, R,
	    "peer daemon that carries the connections, from peers; a rule "
	    "has peer and export, or target_smc",
	    .example = "\"b\""),
	KEY(struct conf_rule, export, "export", CONF_T_NAME, NULL, 0, 0, NULL,
	    R, "export at that peer to connect to, at most 22 bytes",
	    .example = "\"redis\""),
	KEY(struct conf_rule, target_smc, "target_smc", CONF_T_ADDR, NULL, 0, 0,
	    conf_check_specific, R | CONF_ALT | CONF_ORIGINAL,
	    "a Linux kernel SMC-R server (or smcproxyd smc_listen) to carry "
	    "the connections to instead of a peer (the SMC-R dialect, "
	    "needs kernel_smc); \"original\" with intercept: each "
	    "connection's own destination",
	    .example = "\"192.0.2.2:6379\""),
	KEY_INT(struct conf_rule, idle_timeout, "idle_timeout", "0", 0, 86400,
		NULL, R, "close connections idle this many seconds; 0: never"),
	KEY(struct conf_rule, log_connections, "log_connections", CONF_T_BOOL,
	    "true", 0, 1, NULL, R,
	    "log a line for each connection when it ends"),
	KEY(struct conf_rule, accept_proxy, "accept_proxy", CONF_T_BOOL,
	    "false", 0, 1, NULL, R,
	    "clients are a load balancer's: each connection begins with a "
	    "PROXY protocol header (v1 or v2) naming the client, taken for "
	    "it and passed on"),
	KEY_NAMES(struct conf_rule, intercept, nintercept, "intercept", NULL,
		  NULL, R | CONF_ALT,
		  "transparent SMC-R: the TCP connects of intercept_cgroup's "
		  "programs to these destinations come to listen instead "
		  "(a BPF program), each carried to its own destination "
		  "(target_smc = \"original\"); PORT may be *",
		  .elem = conf_check_intercept, .range = "ADDR[/LEN]:PORT",
		  .example = "[ \"192.0.2.0/24:*\" ]"),
	KEY(struct conf_rule, intercept_cgroup, "intercept_cgroup", CONF_T_PATH,
	    NULL, 0, 0, NULL, R | CONF_ALT,
	    "the cgroup v2 directory (and below it) whose connects "
	    "intercept takes",
	    .example = "\"/sys/fs/cgroup/system.slice/app.service\""),
	KEY_INT(struct conf_rule, intercept_ttl, "intercept_ttl", "600", 1,
		86400, NULL, R,
		"seconds an intercepted destination is remembered as plain "
		"TCP (its connects then go direct) or as SMC-R"),
};

static const struct conf_key conf_rdma_keys[] = {
	KEY_NAMES(struct conf_rdma, devices, ndevices, "devices", NULL, NULL, 0,
		  "RDMA devices to use, e.g. [ \"mlx5_0\" ]; empty: all"),
	KEY_INT(struct conf_rdma, gid_index, "gid_index", "-1", -1, 255, NULL,
		0, "RoCE GID index; -1: pick the one for the IPv4 address"),
	KEY_INT(struct conf_rdma, route.dscp, "dscp", "0", 0, 63, NULL, R,
		"DSCP of RoCE v2 packets (the GRH traffic class is DSCP * 4): "
		"the fabric's lossless class, often 26"),
	KEY_INT(struct conf_rdma, route.priority, "priority", "0", 0, 7, NULL,
		R,
		"service level: the 802.1p priority (PFC class) of RoCE "
		"packets where the device maps one (not rxe)"),
	KEY_INT(struct conf_rdma, route.qp_timeout, "qp_timeout", "15", 0, 31,
		NULL, R,
		"QP ACK timeout, 4.096 us * 2^n (15: 134 ms); 0: none"),
	KEY_INT(struct conf_rdma, route.retry_count, "retry_count", "7", 0, 7,
		NULL, R,
		"times a QP sends a packet again for want of an ACK before "
		"its link fails"),
	KEY_INT(struct conf_rdma, route.rnr_retry, "rnr_retry", "7", 0, 7, NULL,
		R,
		"times a QP retries a SEND the peer had no receive for; 7: "
		"without end"),
	KEY_INT(struct conf_rdma, max_links, "max_links", "2", 1, 2, NULL, 0,
		"links (QP pairs) per link group"),
	KEY_INT(struct conf_rdma, max_conns_per_lgr, "max_conns_per_lgr", "255",
		16, 255, NULL, 0, "connections per link group"),
	KEY_INT(struct conf_rdma, max_send_wr, "max_send_wr", "16", 2, 2048,
		NULL, 0, "TX slots per link (the send queue is 3 times this)"),
	KEY_INT(struct conf_rdma, max_recv_wr, "max_recv_wr", "48", 2, 2048,
		NULL, 0, "receive buffers posted per link"),
	KEY_INT(struct conf_rdma, sndbuf, "sndbuf", "262144", 16384, 1 << 29,
		conf_check_pow2, 0,
		"send buffer per connection, bytes, a power of two"),
	KEY_INT(struct conf_rdma, rmb, "rmb", "262144", 16384, 1 << 29,
		conf_check_pow2, 0,
		"receive buffer (RMB element) per connection, bytes, a power "
		"of two"),
	KEY_INT(struct conf_rdma, max_buffer_memory, "max_buffer_memory",
		"1024", 1, 1 << 20, NULL, 0,
		"registered buffer memory, MiB, split evenly between the "
		"workers; a connection that finds none uses the TCP fallback"),
	KEY(struct conf_rdma, autocork, "autocork", CONF_T_BOOL, "true", 0, 1,
	    NULL, R, "hold small writes while earlier ones are in flight"),
	KEY_INT(struct conf_rdma, autocork_size, "autocork_size", "65536", 0,
		1 << 29, NULL, R,
		"corking stops once this many bytes wait (and at sndbuf/2)"),
	KEY(struct conf_rdma, inline_enabled, "inline", CONF_T_BOOL, "true", 0,
	    1, NULL, 0, "send short RDMA writes and CDC messages inline"),
	KEY_INT(struct conf_rdma, inline_size, "inline_size", "256", 0, 1024,
		NULL, 0, "inline data size asked of the QP, bytes"),
	KEY_ENUM(struct conf_rdma, slot_wait, "slot_wait", "exclusive",
		 conf_parse_slot_wait, "exclusive|all", 0,
		 "wake one waiter per freed TX slot, or all of them"),
	KEY(struct conf_rdma, cdc_data, "cdc_data", CONF_T_BOOL, "true", 0, 1,
	    NULL, 0,
	    "a push of up to 1 KiB rides in its CDC message, without an "
	    "RDMA write (when the peer agrees)"),
	KEY(struct conf_rdma, lazy_completions, "lazy_completions", CONF_T_BOOL,
	    "true", 0, 1, NULL, 0,
	    "reap the completions of CDCs nobody waits for with the next "
	    "receive instead of waking up for each"),
	KEY_ENUM(
		struct conf_rdma, busy_poll, "busy_poll", "adaptive",
		conf_parse_busy_poll, "adaptive|always|off", 0,
		"after RDMA data-path work, poll without sleeping for a while: "
		"as long as replies come that soon (adaptive, not on one CPU), "
		"busy_poll_us every time (always), or never"),
	KEY_INT(struct conf_rdma, busy_poll_us, "busy_poll_us", "200", 0, 10000,
		NULL, 0,
		"busy polling's budget in microseconds (adaptive: its cap); "
		"0: off"),
	KEY_INT(struct conf_rdma, lgr_idle_timeout, "lgr_idle_timeout", "600",
		0, 86400, NULL, R,
		"seconds an idle link group lingers for reuse"),
	KEY_INT(struct conf_rdma, test_link_time, "test_link_time", "30", 0,
		3600, NULL, R,
		"seconds of link silence before a TEST_LINK probe; 0: off"),
};

static int
conf_check_ueid(const char *s, char *msg, size_t len)
{
	uint8_t eid[SMCR_CLC_EID_LEN];

	if (smcr_clc_eid_put(eid, s) == 0)
		return 0;
	snprintf(msg, len,
		 "an EID is 1 to %d of A-Z, 0-9, '.' and '-', starting with "
		 "a letter or digit (upper case, as smc_run and the kernel "
		 "write it)",
		 SMCR_CLC_EID_LEN);
	return -EINVAL;
}

static int
conf_check_net(const char *s, char *msg, size_t len)
{
	struct addr_net n;

	if (addr_net_parse(s, &n) == 0)
		return 0;
	snprintf(msg, len,
		 "use a numeric network \"ip/prefix\" (host bits zero) or "
		 "one address");
	return -EINVAL;
}

static const struct conf_key conf_smcr_keys[] = {
	KEY_NAMES(struct conf_smcr, ueids, nueids, "ueids", NULL, NULL, R,
		  "user EIDs served: a kernel client's proposal must carry "
		  "one of them (smc_run's or smc ueid's on that host)",
		  .elem = conf_check_ueid, .range = "[A-Z0-9.-]{1,32}",
		  .example = "[ \"SMCPROXYD-LAB\" ]"),
	KEY_NAMES(struct conf_smcr, allow, nallow, "allow", NULL, NULL, R,
		  "networks whose clients may use SMC-R; others get a "
		  "DECLINE and go on as TCP; empty: none",
		  .elem = conf_check_net, .range = "ip/prefix",
		  .example = "[ \"192.0.2.0/24\" ]"),
	KEY(struct conf_smcr, bpf_object, "bpf_object", CONF_T_PATH, NULL, 0, 0,
	    NULL, 0,
	    "the SMC-R TCP option's BPF program that a daemon run as root "
	    "loads itself",
	    .def_doc = "smc_opt.bpf.o where make install put it, else the "
		       "one built beside the binary (src/bpf/)",
	    .example = "\"/usr/libexec/smcproxyd/smc_opt.bpf.o\""),
	KEY(struct conf_smcr, bpf_root_cgroup, "bpf_root_cgroup", CONF_T_BOOL,
	    "false", 0, 1, NULL, 0,
	    "attach the option's program even when the daemon runs in the "
	    "cgroup v2 root, where it acts on every socket of the host (a "
	    "daemon in a cgroup of its own, as systemd runs it, never needs "
	    "this)"),
	KEY_INT(struct conf_smcr, max_pending, "max_pending", "32", 1, 4096,
		NULL, R,
		"link groups with kernel peers not yet up (CLC and first "
		"link under way), all hosts together, per worker; the peer "
		"port's handshakes have a bound of their own"),
	KEY_INT(struct conf_smcr, max_pending_per_host, "max_pending_per_host",
		"4", 1, 4096, NULL, R,
		"link groups not yet up with one kernel host, per worker"),
	KEY_INT(struct conf_smcr, max_lgrs_per_host, "max_lgrs_per_host", "16",
		1, 4096, NULL, R,
		"link groups with one kernel host, per worker"),
	KEY_INT(struct conf_smcr, max_conns_per_host, "max_conns_per_host",
		"4096", 1, 1048576, NULL, R,
		"connections with one kernel host over RDMA, per worker; "
		"beyond it the host's connections are declined (MEM) and go "
		"on as TCP"),
	KEY_INT(struct conf_smcr, buffer_share_per_host,
		"buffer_share_per_host", "25", 1, 100, NULL, R,
		"percent of the worker's part of rdma.max_buffer_memory that "
		"one kernel host may hold, its connections' buffers and its "
		"groups' rings; beyond it the host's connections are declined "
		"(MEM) and go on as TCP"),
	KEY(struct conf_smcr, bpf_pin, "bpf_pin", CONF_T_PATH,
	    "/sys/fs/bpf/smcproxyd", 0, 0, NULL, 0,
	    "where smcproxyd-bpf.service pinned the program and its maps "
	    "for a daemon that is not root (the unit attaches the "
	    "program); used when its maps are there"),
};

#undef R
#undef REQ
#undef UNIQ

/* Index of the key called name in keys[0..n), n when none is. */
size_t
conf_key_index(const struct conf_key *keys, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(keys[i].name, name) == 0)
			break;
	return i;
}

/*
 * Whether we may give a file group gid: root may, anyone else only a
 * group it is in (the unit's user: its own, or SupplementaryGroups=).
 */
static bool
conf_gid_ours(gid_t gid)
{
	gid_t groups[NGROUPS_MAX];
	int i, n;

	if (geteuid() == 0 || getegid() == gid)
		return true;
	n = getgroups(NGROUPS_MAX, groups);
	for (i = 0; i < n; i++)
		if (groups[i] == gid)
			return true;
	return false;
}

static void
conf_post_main(struct conf_parse *p, void *obj, const struct conf_loc *locs,
	       const char *prefix, struct conf_loc at)
{
	struct conf *conf = obj;
	char host[256], q[CONF_QUOTE_LEN], a[ADDR_STRLEN];
	long n;

	if (locs[conf_key_index(conf_main_keys, CONF_NELEM(conf_main_keys),
				"name")]
		    .line == 0) {
		if (gethostname(host, sizeof(host)) < 0)
			host[0] = '\0';
		host[sizeof(host) - 1] = '\0';
		host[strcspn(host, ".")] = '\0';
		if (conf_name_valid(host))
			strcpy(conf->name, host);
		else
			conf_err(p, at, "smcproxyd.name",
				 "host name %s is not a valid name; set one",
				 conf_quote(host, q, sizeof(q)));
	}
	if (conf->metrics_listen.len != 0 &&
	    !addr_loopback(&conf->metrics_listen))
		conf_warn(p,
			  locs[conf_key_index(conf_main_keys,
					      CONF_NELEM(conf_main_keys),
					      "metrics_listen")],
			  "smcproxyd.metrics_listen",
			  "%s is not a loopback address: anyone who can reach "
			  "it reads the metrics (rule, peer and export names, "
			  "counters) without authentication",
			  addr_str(&conf->metrics_listen, a, sizeof(a)));
	if (conf->control_gid >= 0 && !conf_gid_ours((gid_t)conf->control_gid))
		conf_warn(p,
			  locs[conf_key_index(conf_main_keys,
					      CONF_NELEM(conf_main_keys),
					      "control_gid")],
			  "smcproxyd.control_gid",
			  "uid %u is not in group %d and cannot give it the "
			  "control socket; add it to the group, or under the "
			  "unit SupplementaryGroups= in a drop-in "
			  "(smcproxyd(8), SYSTEMD)",
			  (unsigned)geteuid(), conf->control_gid);
	if (conf->workers == 0) {
		n = sysconf(_SC_NPROCESSORS_ONLN);
		conf->workers = n < 1 ? 1 : n > 256 ? 256 : (int)n;
	}
}

static void
conf_post_listen(struct conf_parse *p, void *obj, const struct conf_loc *locs,
		 const char *prefix, struct conf_loc at)
{
	((struct conf *)obj)->has_peer_listen = true;
}

static void
conf_post_peer(struct conf_parse *p, void *obj, const struct conf_loc *locs,
	       const char *prefix, struct conf_loc at)
{
	const size_t nk = CONF_NELEM(conf_peer_keys);
	struct conf_loc kf =
		locs[conf_key_index(conf_peer_keys, nk, "key_file")];
	struct conf_loc in =
		locs[conf_key_index(conf_peer_keys, nk, "insecure")];
	struct conf_peer *peer = obj;
	const char *who = peer->name[0] ? peer->name : prefix;
	char key[CONF_PATH_LEN], err[CONF_MSG_LEN];
	char *path;
	size_t n;

	if (peer->key_file == NULL) {
		/* a key_file that is there but wrong has had its message */
		if (!peer->insecure && kf.line == 0)
			conf_err(p, at, prefix,
				 "peer %s: no key_file; set insecure = true to "
				 "allow unauthenticated peers",
				 who);
		if (peer->insecure) {
			snprintf(key, sizeof(key), "%s.insecure", prefix);
			conf_warn(
				p, in, key,
				"peer %s is not authenticated: anyone who can "
				"reach the peer port from %s can use the "
				"exports it may use, and its traffic is "
				"neither authenticated nor encrypted",
				who,
				peer->any_source ? "anywhere (any_source)" :
						   "its address's host");
		}
		return;
	}
	if (peer->insecure) {
		snprintf(key, sizeof(key), "%s.insecure", prefix);
		conf_err(p, in, key,
			 "peer %s: both key_file and insecure = true; remove "
			 "one",
			 who);
		return;
	}
	snprintf(key, sizeof(key), "%s.key_file", prefix);
	/* the daemon's cwd is "/": a relative path means next to the config */
	if (peer->key_file[0] != '/' && p->dir != NULL) {
		n = strlen(p->dir) + 1 + strlen(peer->key_file) + 1;
		path = malloc(n);
		if (path == NULL) {
			conf_err(p, kf, key, "out of memory");
			return;
		}
		snprintf(path, n, "%s/%s", p->dir, peer->key_file);
		free(peer->key_file);
		peer->key_file = path;
	}
	if (auth_key_load(peer->key_file, peer->key, &peer->key_len, err,
			  sizeof(err)) < 0)
		conf_err(p, kf, key, "%s", err);
	else if (err[0] != '\0')
		conf_warn(p, kf, key, "%s", err);
}

static void
conf_post_rdma(struct conf_parse *p, void *obj, const struct conf_loc *locs,
	       const char *prefix, struct conf_loc at)
{
	const size_t nk = CONF_NELEM(conf_rdma_keys);
	struct conf_loc mb =
		locs[conf_key_index(conf_rdma_keys, nk, "max_buffer_memory")];
	struct conf_rdma *r = obj;
	char key[CONF_PATH_LEN];
	long long conn = (long long)r->sndbuf + r->rmb;

	/* an out-of-range value has had its message */
	if (r->max_buffer_memory >= 1 && conn > (long long)r->max_buffer_memory
							 << 20) {
		snprintf(key, sizeof(key), "%s.max_buffer_memory", prefix);
		conf_err(p, mb.line ? mb : at, key,
			 "%d MiB do not hold one connection's sndbuf + rmb "
			 "(%lld bytes)",
			 r->max_buffer_memory, conn);
	}
}

/* Whether a kernel SMC-R client at a may use SMC-R (kernel_smc.allow). */
bool
conf_smcr_allows(const struct conf_smcr *k, const struct addr *a)
{
	int i;

	for (i = 0; i < k->nallow; i++)
		if (addr_net_match(&k->allow_nets[i], a))
			return true;
	return false;
}

/* Whether the EID (as the wire has it) is one of kernel_smc.ueids. */
bool
conf_smcr_serves(const struct conf_smcr *k, const uint8_t *eid)
{
	uint8_t ours[SMCR_CLC_EID_LEN];
	int i;

	for (i = 0; i < k->nueids; i++)
		if (smcr_clc_eid_put(ours, k->ueids[i]) == 0 &&
		    memcmp(ours, eid, SMCR_CLC_EID_LEN) == 0)
			return true;
	return false;
}

/*
 * The SMC-R dialect is on: parse the allowed networks, and say what it
 * does not protect, at every start and reload (DESIGN.md §10).
 */
static void
conf_post_smcr(struct conf_parse *p, void *obj, const struct conf_loc *locs,
	       const char *prefix, struct conf_loc at)
{
	struct conf_smcr *k = obj;
	int i;

	k->enabled = true;
	if (k->bpf_object == NULL &&
	    (k->bpf_object = strdup(smc_opt_default_object())) == NULL) {
		conf_err(p, at, prefix, "out of memory");
		return;
	}
	if (k->nallow > 0) {
		k->allow_nets =
			calloc((size_t)k->nallow, sizeof(*k->allow_nets));
		if (k->allow_nets == NULL) {
			conf_err(p, at, prefix, "out of memory");
			return;
		}
		for (i = 0; i < k->nallow; i++)
			(void)addr_net_parse(k->allow[i], &k->allow_nets[i]);
	}
	if (k->nueids == 0)
		conf_warn(p, at, prefix,
			  "no ueids: every kernel SMC-R client is declined "
			  "and goes on as TCP");
	if (k->nallow == 0)
		conf_warn(p, at, prefix,
			  "allow is empty: every kernel SMC-R client of an "
			  "smc_listen is declined (CNFERR) and goes on as TCP; "
			  "list the clients' networks in kernel_smc.allow");
	conf_warn(p, at, prefix,
		  "kernel SMC-R peers are not authenticated: any host in "
		  "allow that proposes one of the ueids reaches the exports "
		  "with smc_listen, a target_smc server is whoever answers "
		  "at its address, and both see buffers' rkeys in clear and "
		  "exchange unencrypted data (smcproxyd(8), SECURITY)");
}

const struct conf_section conf_sections[CONF_NSECT] = {
	[CONF_SECT_MAIN] =
		{
			.name = "smcproxyd",
			.keys = conf_main_keys,
			.nkeys = CONF_NELEM(conf_main_keys),
			.post = conf_post_main,
			.desc = "daemon-wide settings",
		},
	[CONF_SECT_LISTEN] =
		{
			.name = "peer_listen",
			.optional = true,
			.keys = conf_listen_keys,
			.nkeys = CONF_NELEM(conf_listen_keys),
			.post = conf_post_listen,
			.desc = "listen for peers; needed to serve exports",
		},
	[CONF_SECT_PEERS] =
		{
			.name = "peers",
			.list = true,
			.keys = conf_peer_keys,
			.nkeys = CONF_NELEM(conf_peer_keys),
			.arr_off = offsetof(struct conf, peers),
			.n_off = offsetof(struct conf, npeers),
			.size = sizeof(struct conf_peer),
			.line_off = offsetof(struct conf_peer, line),
			.post = conf_post_peer,
			.desc = "other smcproxyd daemons",
		},
	[CONF_SECT_EXPORTS] =
		{
			.name = "exports",
			.list = true,
			.keys = conf_export_keys,
			.nkeys = CONF_NELEM(conf_export_keys),
			.arr_off = offsetof(struct conf, exports),
			.n_off = offsetof(struct conf, nexports),
			.size = sizeof(struct conf_export),
			.line_off = offsetof(struct conf_export, line),
			.desc = "local servers that peers may reach",
		},
	[CONF_SECT_RULES] =
		{
			.name = "rules",
			.list = true,
			.keys = conf_rule_keys,
			.nkeys = CONF_NELEM(conf_rule_keys),
			.arr_off = offsetof(struct conf, rules),
			.n_off = offsetof(struct conf, nrules),
			.size = sizeof(struct conf_rule),
			.line_off = offsetof(struct conf_rule, line),
			.desc = "local listeners forwarded to an export at a "
				"peer",
		},
	[CONF_SECT_RDMA] =
		{
			.name = "rdma",
			.keys = conf_rdma_keys,
			.nkeys = CONF_NELEM(conf_rdma_keys),
			.obj_off = offsetof(struct conf, rdma),
			.post = conf_post_rdma,
			.desc = "link groups and the send engine",
		},
	[CONF_SECT_SMCR] =
		{
			.name = "kernel_smc",
			.optional = true,
			.keys = conf_smcr_keys,
			.nkeys = CONF_NELEM(conf_smcr_keys),
			.obj_off = offsetof(struct conf, smcr),
			.post = conf_post_smcr,
			.desc = "the standard SMC-R dialect, for Linux kernel "
				"SMC-R peers (off without this group)",
		},
};

/* Edit distance, for "did you mean"; names longer than 63 never match. */
static size_t
conf_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	size_t row[64], prev, tmp;

	if (la >= CONF_NELEM(row) || lb >= CONF_NELEM(row))
		return SIZE_MAX;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = i;
		for (j = 1; j <= lb; j++) {
			tmp = row[j];
			row[j] = prev + (a[i - 1] != b[j - 1]);
			if (row[j - 1] + 1 < row[j])
				row[j] = row[j - 1] + 1;
			if (tmp + 1 < row[j])
				row[j] = tmp + 1;
			prev = tmp;
		}
	}
	return row[lb];
}

static void
conf_unknown(struct conf_parse *p, struct conf_loc loc, const char *path,
	     const char *name, const char *const *cands, size_t ncands)
{
	const char *best = NULL;
	size_t i, d, bestd = 3;

	for (i = 0; i < ncands; i++) {
		d = conf_distance(name, cands[i]);
		if (d < bestd) {
			bestd = d;
			best = cands[i];
		}
	}
	if (best != NULL)
		conf_err(p, loc, path, "unknown key; did you mean \"%s\"?",
			 best);
	else
		conf_err(p, loc, path, "unknown key");
}

static int
conf_store_int(struct conf_parse *p, const struct conf_key *k, long long v,
	       void *field, struct conf_loc loc, const char *path)
{
	if (k->type == CONF_T_BOOL) {
		*(bool *)field = v != 0;
		return 0;
	}
	if (v < k->min || v > k->max) {
		if (k->type == CONF_T_MODE)
			conf_err(p, loc, path,
				 "%#llo is out of range %#llo..%#llo", v,
				 k->min, k->max);
		else
			conf_err(p, loc, path,
				 "%lld is out of range %lld..%lld", v, k->min,
				 k->max);
		return -ERANGE;
	}
	*(int *)field = (int)v;
	return 0;
}

static int
conf_store_str(struct conf_parse *p, const struct conf_key *k, const char *s,
	       void *field, struct conf_loc loc, const char *path)
{
	char q[CONF_QUOTE_LEN];
	char *dup;
	int v;

	switch (k->type) {
	case CONF_T_PATH:
		if (s[0] == '\0') {
			conf_err(p, loc, path, "must not be empty");
			return -EINVAL;
		}
		dup = strdup(s);
		if (dup == NULL) {
			conf_err(p, loc, path, "out of memory");
			return -ENOMEM;
		}
		free(*(char **)field);
		*(char **)field = dup;
		return 0;
	case CONF_T_NAME:
	case CONF_T_PEER:
		if (!conf_name_valid(s)) {
			conf_err(p, loc, path,
				 "invalid name %s: use 1 to %d letters, "
				 "digits, '.', '_' or '-'",
				 conf_quote(s, q, sizeof(q)), CONF_NAME_MAX);
			return -EINVAL;
		}
		if (k->type == CONF_T_NAME) {
			strcpy(field, s);
			return 0;
		}
		*(const struct conf_peer **)field = conf_peer_find(p->conf, s);
		if (*(const struct conf_peer **)field == NULL) {
			conf_err(p, loc, path, "no such peer %s%s",
				 conf_quote(s, q, sizeof(q)),
				 p->conf->npeers ? "" :
						   " (no peers are defined; "
						   "add a peers section)");
			return -EINVAL;
		}
		return 0;
	case CONF_T_ADDR:
		if ((k->flags & CONF_ORIGINAL) && strcmp(s, "original") == 0) {
			memset(field, 0, sizeof(struct addr));
			((struct addr *)field)->len = sizeof(sa_family_t);
			return 0;
		}
		if (addr_parse(s, field) < 0) {
			conf_err(p, loc, path,
				 "invalid address %s: use IPv4:port or "
				 "[IPv6]:port, numeric, port 1-65535",
				 conf_quote(s, q, sizeof(q)));
			return -EINVAL;
		}
		return 0;
	case CONF_T_HOST:
		if (addr_parse_host(s, field) < 0) {
			conf_err(p, loc, path,
				 "invalid address %s: use a numeric IPv4 or "
				 "IPv6 address, no port",
				 conf_quote(s, q, sizeof(q)));
			return -EINVAL;
		}
		return 0;
	case CONF_T_ENUM:
		if (k->parse(s, &v) < 0) {
			conf_err(p, loc, path, "invalid value %s; use %s",
				 conf_quote(s, q, sizeof(q)), k->choices);
			return -EINVAL;
		}
		*(int *)field = v;
		return 0;
	default:
		return -EINVAL;
	}
}

/* chmod(1) convention: libconfig reads 0660 as decimal 660; take its digits as octal. */
static int
conf_octal(long long dec, long long *out)
{
	long long v = 0, mul = 1;

	if (dec < 0 || dec > 99999999)
		return -ERANGE;
	do {
		if (dec % 10 > 7)
			return -EINVAL;
		v += dec % 10 * mul;
		mul *= 8;
		dec /= 10;
	} while (dec != 0);
	*out = v;
	return 0;
}

static int
conf_set_mode(struct conf_parse *p, const struct conf_key *k,
	      const config_setting_t *s, void *field, struct conf_loc loc,
	      const char *path)
{
	char q[CONF_QUOTE_LEN];
	const char *str;
	long long v;
	char *end;

	if (config_setting_type(s) == CONFIG_TYPE_STRING) {
		str = config_setting_get_string(s);
		errno = 0;
		v = strtoll(str, &end, 8);
		if (str[0] < '0' || str[0] > '7' || *end != '\0' || errno) {
			conf_err(p, loc, path,
				 "invalid mode %s: use octal, like 0660",
				 conf_quote(str, q, sizeof(q)));
			return -EINVAL;
		}
	} else {
		v = config_setting_get_int64(s);
		/* hex, or octal from a libconfig that knows it, is exact */
		if (config_setting_get_format(s) == CONFIG_FORMAT_DEFAULT &&
		    conf_octal(v, &v) < 0) {
			conf_err(p, loc, path,
				 "%lld is not an octal mode; use digits 0-7, "
				 "like 0660",
				 (long long)config_setting_get_int64(s));
			return -EINVAL;
		}
	}
	return conf_store_int(p, k, v, field, loc, path);
}

static int
conf_set_names(struct conf_parse *p, const struct conf_key *k,
	       const config_setting_t *s, void *obj, struct conf_loc loc,
	       const char *path)
{
	char ***arr = (char ***)((char *)obj + k->off);
	int *count = (int *)((char *)obj + k->count_off);
	char epath[CONF_PATH_LEN + 16], q[CONF_QUOTE_LEN], msg[CONF_MSG_LEN];
	const config_setting_t *e;
	struct conf_loc eloc;
	int i, j, n = config_setting_length(s), ret = 0;
	const char *str;

	*arr = calloc((size_t)n + 1, sizeof(**arr));
	if (*arr == NULL) {
		conf_err(p, loc, path, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		e = config_setting_get_elem(s, (unsigned)i);
		eloc = conf_loc_of(p, e);
		if (eloc.line == 0)
			eloc = loc;
		snprintf(epath, sizeof(epath), "%s[%d]", path, i);
		if (config_setting_type(e) != CONFIG_TYPE_STRING) {
			conf_err(p, eloc, epath, "must be a string, not %s",
				 conf_libconfig_type(config_setting_type(e)));
			ret = -EINVAL;
			continue;
		}
		str = config_setting_get_string(e);
		if (k->elem != NULL && k->elem(str, msg, sizeof(msg)) < 0) {
			conf_err(p, eloc, epath, "invalid value %s: %s",
				 conf_quote(str, q, sizeof(q)), msg);
			ret = -EINVAL;
			continue;
		}
		if (k->elem == NULL && !conf_name_valid(str)) {
			conf_err(p, eloc, epath,
				 "invalid name %s: use 1 to %d letters, "
				 "digits, '.', '_' or '-'",
				 conf_quote(str, q, sizeof(q)), CONF_NAME_MAX);
			ret = -EINVAL;
			continue;
		}
		for (j = 0; j < *count; j++)
			if (strcmp((*arr)[j], str) == 0)
				break;
		if (j < *count) {
			conf_err(p, eloc, epath, "%s is listed twice",
				 conf_quote(str, q, sizeof(q)));
			ret = -EINVAL;
			continue;
		}
		(*arr)[*count] = strdup(str);
		if ((*arr)[*count] == NULL) {
			conf_err(p, eloc, epath, "out of memory");
			return -ENOMEM;
		}
		(*count)++;
	}
	return ret;
}

/* Store one setting s of the file into obj. */
static void
conf_set(struct conf_parse *p, const struct conf_key *k,
	 const config_setting_t *s, void *obj, struct conf_loc loc,
	 const char *path)
{
	void *field = (char *)obj + k->off;
	int t = config_setting_type(s), ret;
	char msg[CONF_MSG_LEN];

	switch (k->type) {
	case CONF_T_INT:
		if (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64)
			goto wrong;
		ret = conf_store_int(p, k, config_setting_get_int64(s), field,
				     loc, path);
		break;
	case CONF_T_MODE:
		if (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64 &&
		    t != CONFIG_TYPE_STRING)
			goto wrong;
		ret = conf_set_mode(p, k, s, field, loc, path);
		break;
	case CONF_T_BOOL:
		if (t != CONFIG_TYPE_BOOL)
			goto wrong;
		ret = conf_store_int(p, k, config_setting_get_bool(s), field,
				     loc, path);
		break;
	case CONF_T_NAMES:
		if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST)
			goto wrong;
		ret = conf_set_names(p, k, s, obj, loc, path);
		break;
	default:
		if (t != CONFIG_TYPE_STRING)
			goto wrong;
		ret = conf_store_str(p, k, config_setting_get_string(s), field,
				     loc, path);
		break;
	}
	if (ret == 0 && k->check != NULL &&
	    k->check(p, field, msg, sizeof(msg)) < 0)
		conf_err(p, loc, path, "%s", msg);
	return;
wrong:
	conf_err(p, loc, path, "must be %s, not %s",
		 conf_type_expected[k->type], conf_libconfig_type(t));
}

/* Store k's default into obj; the tables' defaults are valid by design. */
static void
conf_set_default(struct conf_parse *p, const struct conf_key *k, void *obj,
		 struct conf_loc loc, const char *path)
{
	void *field = (char *)obj + k->off;

	if (k->def == NULL)
		return;
	switch (k->type) {
	case CONF_T_INT:
	case CONF_T_MODE:
		conf_store_int(p, k, strtoll(k->def, NULL, 0), field, loc,
			       path);
		break;
	case CONF_T_BOOL:
		*(bool *)field = strcmp(k->def, "true") == 0;
		break;
	case CONF_T_NAMES:
		break;
	default:
		conf_store_str(p, k, k->def, field, loc, path);
		break;
	}
}

/* Parse group g (NULL: all defaults) of section sec into obj. */
static void
conf_parse_group(struct conf_parse *p, const struct conf_section *sec,
		 const config_setting_t *g, const char *prefix, void *obj,
		 struct conf_loc *locs)
{
	struct conf_loc gloc = conf_loc_of(p, g);
	char path[CONF_PATH_LEN];
	const config_setting_t *s;
	const char *names[32];
	const char *name;
	size_t i, k;

	for (k = 0; k < sec->nkeys && k < CONF_NELEM(names); k++)
		names[k] = sec->keys[k].name;
	for (i = 0; g != NULL && i < (size_t)config_setting_length(g); i++) {
		s = config_setting_get_elem(g, (unsigned)i);
		name = config_setting_name(s);
		if (conf_key_index(sec->keys, sec->nkeys, name) < sec->nkeys)
			continue;
		snprintf(path, sizeof(path), "%s.%s", prefix, name);
		conf_unknown(p, conf_loc_of(p, s), path, name, names, k);
	}
	for (k = 0; k < sec->nkeys; k++) {
		const struct conf_key *key = &sec->keys[k];

		snprintf(path, sizeof(path), "%s.%s", prefix, key->name);
		s = g != NULL ? config_setting_get_member(g, key->name) : NULL;
		locs[k] = (struct conf_loc){gloc.file, 0};
		if (s != NULL) {
			locs[k] = conf_loc_of(p, s);
			conf_set(p, key, s, obj, locs[k], path);
		} else if (key->flags & CONF_REQUIRED) {
			conf_err(p, gloc, path, "missing; it has no default");
		} else {
			conf_set_default(p, key, obj, gloc, path);
		}
	}
	if (sec->post != NULL)
		sec->post(p, obj, locs, prefix, gloc);
}

static void
conf_parse_single(struct conf_parse *p, enum conf_sect_id id,
		  const config_setting_t *s)
{
	const struct conf_section *sec = &conf_sections[id];
	void *obj = (char *)p->conf + sec->obj_off;
	struct conf_loc *locs;

	locs = calloc(sec->nkeys, sizeof(*locs));
	if (locs == NULL) {
		conf_err(p, conf_loc_of(p, s), sec->name, "out of memory");
		return;
	}
	p->src->keys[id] = locs;
	p->src->sect[id] = conf_loc_of(p, s);
	if (s != NULL && config_setting_type(s) != CONFIG_TYPE_GROUP) {
		conf_err(p, p->src->sect[id], sec->name,
			 "must be a group { ... }, not %s",
			 conf_libconfig_type(config_setting_type(s)));
		s = NULL;
	}
	if (s == NULL && sec->optional)
		return;
	conf_parse_group(p, sec, s, sec->name, obj, locs);
}

/* Do two list elements clash on unique key k?  Unset values never do. */
static bool
conf_field_clash(const struct conf_key *k, const void *a, const void *b)
{
	if (k->type == CONF_T_ADDR)
		return conf_addr_overlap(a, b);
	return ((const char *)a)[0] != '\0' && strcmp(a, b) == 0;
}

static void
conf_check_unique(struct conf_parse *p, enum conf_sect_id id, char *arr, int n)
{
	const struct conf_section *sec = &conf_sections[id];
	const struct conf_loc *locs = p->src->keys[id];
	char path[CONF_PATH_LEN], q[CONF_QUOTE_LEN];
	char a[ADDR_STRLEN], b[ADDR_STRLEN];
	const void *fi, *fj;
	size_t k;
	int i, j;

	for (k = 0; k < sec->nkeys; k++) {
		const struct conf_key *key = &sec->keys[k];

		if (!(key->flags & CONF_UNIQUE))
			continue;
		for (i = 1; i < n; i++) {
			fi = arr + (size_t)i * sec->size + key->off;
			for (j = 0; j < i; j++) {
				fj = arr + (size_t)j * sec->size + key->off;
				if (conf_field_clash(key, fi, fj))
					break;
			}
			if (j == i)
				continue;
			snprintf(path, sizeof(path), "%s[%d].%s", sec->name, i,
				 key->name);
			if (key->type == CONF_T_NAME)
				conf_err(p, locs[(size_t)i * sec->nkeys + k],
					 path, "%s is already used at line %d",
					 conf_quote(fi, q, sizeof(q)),
					 locs[(size_t)j * sec->nkeys + k].line);
			else if (addr_equal(fi, fj))
				conf_err(p, locs[(size_t)i * sec->nkeys + k],
					 path, "%s is already used at line %d",
					 addr_str(fi, a, sizeof(a)),
					 locs[(size_t)j * sec->nkeys + k].line);
			else
				conf_err(p, locs[(size_t)i * sec->nkeys + k],
					 path, "%s overlaps %s at line %d",
					 addr_str(fi, a, sizeof(a)),
					 addr_str(fj, b, sizeof(b)),
					 locs[(size_t)j * sec->nkeys + k].line);
		}
	}
}

static void
conf_parse_list(struct conf_parse *p, enum conf_sect_id id,
		const config_setting_t *s)
{
	const struct conf_section *sec = &conf_sections[id];
	char prefix[CONF_PATH_LEN];
	const config_setting_t *e;
	struct conf_loc loc;
	int i, n, t;
	char *arr;

	p->src->sect[id] = conf_loc_of(p, s);
	if (s == NULL)
		return;
	t = config_setting_type(s);
	n = config_setting_length(s);
	/* "( )" is a list; "[ ]" is libconfig's spelling of an empty one too */
	if (t != CONFIG_TYPE_LIST && !(t == CONFIG_TYPE_ARRAY && n == 0)) {
		conf_err(p, p->src->sect[id], sec->name,
			 "must be a list ( { ... }, ... ), not %s",
			 conf_libconfig_type(t));
		return;
	}
	if (n == 0)
		return;
	arr = calloc((size_t)n, sec->size);
	p->src->keys[id] =
		calloc((size_t)n * sec->nkeys, sizeof(struct conf_loc));
	if (arr == NULL || p->src->keys[id] == NULL) {
		free(arr);
		conf_err(p, p->src->sect[id], sec->name, "out of memory");
		return;
	}
	/* owned by the config from here on, so conf_free() cleans up */
	*(char **)((char *)p->conf + sec->arr_off) = arr;
	*(int *)((char *)p->conf + sec->n_off) = n;
	for (i = 0; i < n; i++) {
		void *obj = arr + (size_t)i * sec->size;

		e = config_setting_get_elem(s, (unsigned)i);
		loc = conf_loc_of(p, e);
		*(int *)((char *)obj + sec->line_off) = loc.line;
		snprintf(prefix, sizeof(prefix), "%s[%d]", sec->name, i);
		if (config_setting_type(e) != CONFIG_TYPE_GROUP) {
			conf_err(p, loc, prefix,
				 "must be a group { ... }, not %s",
				 conf_libconfig_type(config_setting_type(e)));
			continue;
		}
		conf_parse_group(p, sec, e, prefix, obj,
				 p->src->keys[id] + (size_t)i * sec->nkeys);
	}
	conf_check_unique(p, id, arr, n);
}

/*
 * Every section of the file's root setting into p->conf, each by its
 * table; an unknown section is an error.  The checks across sections are
 * the caller's (conf_load.c), once this has read them all.
 */
void
conf_parse_root(struct conf_parse *p, const config_setting_t *root)
{
	const char *names[CONF_NSECT];
	const config_setting_t *s;
	const char *name;
	int i, id;

	for (id = 0; id < CONF_NSECT; id++)
		names[id] = conf_sections[id].name;
	for (i = 0; i < config_setting_length(root); i++) {
		s = config_setting_get_elem(root, (unsigned)i);
		name = config_setting_name(s);
		for (id = 0; id < CONF_NSECT; id++)
			if (strcmp(name, names[id]) == 0)
				break;
		if (id == CONF_NSECT)
			conf_unknown(p, conf_loc_of(p, s), name, name, names,
				     CONF_NSECT);
	}
	for (id = 0; id < CONF_NSECT; id++) {
		s = config_setting_get_member(root, names[id]);
		if (conf_sections[id].list)
			conf_parse_list(p, (enum conf_sect_id)id, s);
		else
			conf_parse_single(p, (enum conf_sect_id)id, s);
	}
}

static void
conf_names_free(char **names)
{
	size_t i;

	for (i = 0; names != NULL && names[i] != NULL; i++)
		free(names[i]);
	free(names);
}

/* Free conf and everything it owns, keys wiped first.  NULL is fine. */
void
conf_free(struct conf *conf)
{
	int i;

	if (conf == NULL)
		return;
	for (i = 0; i < conf->npeers; i++) {
		free(conf->peers[i].key_file);
		explicit_bzero(conf->peers[i].key, sizeof(conf->peers[i].key));
	}
	free(conf->peers);
	for (i = 0; i < conf->nrules; i++) {
		conf_names_free(conf->rules[i].intercept);
		free(conf->rules[i].intercept_cgroup);
	}
	free(conf->rules);
	for (i = 0; i < conf->nexports; i++)
		conf_names_free(conf->exports[i].peers);
	free(conf->exports);
	conf_names_free(conf->rdma.devices);
	conf_names_free(conf->smcr.ueids);
	conf_names_free(conf->smcr.allow);
	free(conf->smcr.allow_nets);
	free(conf->smcr.bpf_object);
	free(conf->smcr.bpf_pin);
	if (conf->src != NULL) {
		for (i = 0; i < conf->src->nfiles; i++)
			free(conf->src->files[i]);
		free(conf->src->files);
		for (i = 0; i < CONF_NSECT; i++)
			free(conf->src->keys[i]);
		free(conf->src);
	}
	free(conf->control_socket);
	free(conf->state_file);
	free(conf->warnings);
	free(conf->path);
	free(conf);
}

/* The rule called name, or NULL. */
const struct conf_rule *
conf_rule_find(const struct conf *conf, const char *name)
{
	int i;

	for (i = 0; i < conf->nrules; i++)
		if (strcmp(conf->rules[i].name, name) == 0)
			return &conf->rules[i];
	return NULL;
}

/* The peer called name, or NULL. */
const struct conf_peer *
conf_peer_find(const struct conf *conf, const char *name)
{
	int i;

	for (i = 0; i < conf->npeers; i++)
		if (strcmp(conf->peers[i].name, name) == 0)
			return &conf->peers[i];
	return NULL;
}

/*
 * Whether peer entries a and b authenticate the same daemon the same way:
 * key, address, insecure and any_source.  A connection or link group
 * authenticated under a may stay under b only then (a reload revokes it
 * otherwise).
 */
bool
conf_peer_auth_same(const struct conf_peer *a, const struct conf_peer *b)
{
	return strcmp(a->name, b->name) == 0 && a->key_len == b->key_len &&
	       memcmp(a->key, b->key, a->key_len) == 0 &&
	       addr_equal(&a->addr, &b->addr) && a->insecure == b->insecure &&
	       a->any_source == b->any_source;
}

/* The export called name, or NULL. */
const struct conf_export *
conf_export_find(const struct conf *conf, const char *name)
{
	int i;

	for (i = 0; i < conf->nexports; i++)
		if (strcmp(conf->exports[i].name, name) == 0)
			return &conf->exports[i];
	return NULL;
}

/* May the peer called peer use exp? */
bool
conf_export_allows(const struct conf_export *exp, const char *peer)
{
	int i;

	for (i = 0; i < exp->npeers; i++)
		if (strcmp(exp->peers[i], peer) == 0)
			return true;
	return false;
}
