// SPDX-License-Identifier: BSD-2-Clause
/*
 * The configuration file (libconfig syntax), table-driven: one table per
 * section gives each key's type, default, range, validator, whether a reload
 * may change it and a one-line description.  Parsing, defaults, validation,
 * the reload check and the schema behind the man page all read those tables,
 * so they cannot drift apart.  Every problem in a file is reported in one
 * pass, sorted by position, as "file:line: key: message"; a config with any
 * problem is never returned, so the daemon never runs on a half-read file.
 * What serves but not as it may seem (an unauthenticated peer, a key the
 * service could not read) is a warning, kept in conf->warnings for "-n"
 * to print and the daemon to log.  The same tables write the example file
 * (conf_print_example).
 */
#include <sys/socket.h>
#include <sys/stat.h>
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
#include "llc_wire.h"
#include "sclc_wire.h"

#define CONF_NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define CONF_PATH_LEN 128 /* "exports[123].connect_timeout" and more */
#define CONF_MSG_LEN 512
#define CONF_QUOTE_LEN 80 /* file text echoed in a message, quoted */

enum conf_type {
	CONF_T_INT,   /* int, min..max */
	CONF_T_MODE,  /* int, a file mode written in octal as for chmod */
	CONF_T_BOOL,  /* bool */
	CONF_T_PATH,  /* char *, never empty */
	CONF_T_NAME,  /* char[CONF_NAME_MAX + 1], conf_name_valid() */
	CONF_T_NAMES, /* char **, NULL-terminated, count at count_off */
	CONF_T_ADDR,  /* struct addr, "ip:port" */
	CONF_T_ENUM,  /* an enum stored as int, parsed by parse() */
	CONF_T_PEER,  /* const struct conf_peer *, named in peers */
	CONF_T_HOST,  /* struct addr, "ip" (port 0) */
};

static const char *const conf_type_names[] = {
	[CONF_T_INT] = "integer",  [CONF_T_MODE] = "mode",
	[CONF_T_BOOL] = "boolean", [CONF_T_PATH] = "path",
	[CONF_T_NAME] = "name",	   [CONF_T_NAMES] = "names",
	[CONF_T_ADDR] = "address", [CONF_T_ENUM] = "string",
	[CONF_T_PEER] = "name",	   [CONF_T_HOST] = "address",
};

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

#define CONF_REQUIRED 0x1 /* no default: the key must be there */
#define CONF_RELOAD 0x2	  /* a reload may change it */
#define CONF_UNIQUE 0x4	  /* no two list elements may share it */
#define CONF_ALT 0x8	  /* instead of other keys: the example leaves it out */
#define CONF_ORIGINAL 0x10 /* CONF_T_ADDR: or "original" (AF_UNSPEC) */

/* Where a key was set; line 0: not in the file, its default applies. */
struct conf_loc {
	int file; /* index into conf_src.files */
	int line;
};

struct conf_parse;

struct conf_key {
	const char *name;
	enum conf_type type;
	size_t off;	     /* field in the section's struct */
	size_t count_off;    /* CONF_T_NAMES: its int count */
	const char *def;     /* as a file would write it, unquoted */
	const char *def_doc; /* schema text for a computed default */
	long long min, max;  /* CONF_T_INT, CONF_T_MODE */
	int (*parse)(const char *s, int *out); /* CONF_T_ENUM */
	const char *choices;		       /* CONF_T_ENUM: "a|b|c" */
	/* After a value is stored: 0, or -EINVAL with msg filled. */
	int (*check)(struct conf_parse *p, const void *field, char *msg,
		     size_t len);
	/* CONF_T_NAMES: each element, when not a name; 0 or -EINVAL */
	int (*elem)(const char *s, char *msg, size_t len);
	const char *range; /* what elem accepts, for the schema */
	unsigned flags;
	const char *desc;
	const char *example; /* no default: a value for the example file */
};

enum conf_sect_id {
	CONF_SECT_MAIN,
	CONF_SECT_LISTEN,
	CONF_SECT_PEERS, /* before rules and exports, which name peers */
	CONF_SECT_EXPORTS,
	CONF_SECT_RULES,
	CONF_SECT_RDMA,
	CONF_SECT_KSMC,
	CONF_NSECT
};

struct conf_section {
	const char *name;
	bool list;     /* a list of groups, else one group */
	bool optional; /* a group that is off when absent */
	const struct conf_key *keys;
	size_t nkeys;
	size_t obj_off;	 /* group: its struct inside struct conf */
	size_t arr_off;	 /* list: array pointer in struct conf */
	size_t n_off;	 /* list: element count in struct conf */
	size_t size;	 /* list: element size */
	size_t line_off; /* list: the element's int line */
	/* After the keys of one group (list element) are stored. */
	void (*post)(struct conf_parse *p, void *obj,
		     const struct conf_loc *locs, const char *prefix,
		     struct conf_loc at);
	const char *desc;
};

/* Kept with the config so a reload can point at the line that changed. */
struct conf_src {
	char **files; /* [0]: the config itself, then @includes */
	int nfiles;
	struct conf_loc sect[CONF_NSECT];
	struct conf_loc *keys[CONF_NSECT]; /* [elem * nkeys + key] */
};

struct conf_msg {
	struct conf_loc loc;
	size_t seq;
	bool warning; /* serves, but not as the file seems to say */
	char *text;   /* "key: message" */
};

struct conf_parse {
	struct conf *conf;
	struct conf_src *src;
	const char *dir; /* relative key files live here; NULL: cwd */
	struct conf_msg *msgs;
	size_t nmsgs, cap;
	int nerrors;
	int lost; /* messages that found no memory */
};

static void conf_err(struct conf_parse *p, struct conf_loc loc, const char *key,
		     const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
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
static void
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
static void
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
static int
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

/* Copy s into buf as a quoted, printable, bounded string for a message. */
static const char *
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

static bool
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
static bool
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
	    "standard dialect, needs kernel_smc); none: only peers",
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

/* Whether a is 127.0.0.1 or ::1, where the intercept programs send. */
static bool
conf_loopback_port(const struct addr *a)
{
	const struct sockaddr_in *sin = (const void *)&a->ss;
	const struct sockaddr_in6 *sin6 = (const void *)&a->ss;

	if (a->ss.ss_family == AF_INET)
		return sin->sin_addr.s_addr == htonl(INADDR_LOOPBACK);
	return a->ss.ss_family == AF_INET6 &&
	       IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr);
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
	    "the connections to instead of a peer (the standard dialect, "
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
	uint8_t eid[SCLC_EID_LEN];

	if (sclc_eid_put(eid, s) == 0)
		return 0;
	snprintf(msg, len,
		 "an EID is 1 to %d of A-Z, 0-9, '.' and '-', starting with "
		 "a letter or digit (upper case, as smc_run and the kernel "
		 "write it)",
		 SCLC_EID_LEN);
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

static const struct conf_key conf_ksmc_keys[] = {
	KEY_NAMES(struct conf_ksmc, ueids, nueids, "ueids", NULL, NULL, R,
		  "user EIDs served: a kernel client's proposal must carry "
		  "one of them (smc_run's or smc ueid's on that host)",
		  .elem = conf_check_ueid, .range = "[A-Z0-9.-]{1,32}",
		  .example = "[ \"SMCPROXYD-LAB\" ]"),
	KEY_NAMES(struct conf_ksmc, allow, nallow, "allow", NULL, NULL, R,
		  "networks whose clients may use SMC-R; others get a "
		  "DECLINE and go on as TCP; empty: none",
		  .elem = conf_check_net, .range = "ip/prefix",
		  .example = "[ \"192.0.2.0/24\" ]"),
	KEY(struct conf_ksmc, bpf_object, "bpf_object", CONF_T_PATH, NULL, 0, 0,
	    NULL, 0,
	    "the SMC-R TCP option's BPF program that a daemon run as root "
	    "loads itself",
	    .def_doc = "smc_opt.bpf.o where make install put it, else the "
		       "one built beside the binary (src/bpf/)",
	    .example = "\"/usr/libexec/smcproxyd/smc_opt.bpf.o\""),
	KEY(struct conf_ksmc, bpf_root_cgroup, "bpf_root_cgroup", CONF_T_BOOL,
	    "false", 0, 1, NULL, 0,
	    "attach the option's program even when the daemon runs in the "
	    "cgroup v2 root, where it acts on every socket of the host (a "
	    "daemon in a cgroup of its own, as systemd runs it, never needs "
	    "this)"),
	KEY_INT(struct conf_ksmc, max_pending, "max_pending", "32", 1, 4096,
		NULL, R,
		"link groups with kernel peers not yet up (CLC and first "
		"link under way), all hosts together, per worker; the peer "
		"port's handshakes have a bound of their own"),
	KEY_INT(struct conf_ksmc, max_pending_per_host, "max_pending_per_host",
		"4", 1, 4096, NULL, R,
		"link groups not yet up with one kernel host, per worker"),
	KEY_INT(struct conf_ksmc, max_lgrs_per_host, "max_lgrs_per_host", "16",
		1, 4096, NULL, R,
		"link groups with one kernel host, per worker"),
	KEY_INT(struct conf_ksmc, max_conns_per_host, "max_conns_per_host",
		"4096", 1, 1048576, NULL, R,
		"connections with one kernel host over RDMA, per worker; "
		"beyond it the host's connections are declined (MEM) and go "
		"on as TCP"),
	KEY(struct conf_ksmc, bpf_pin, "bpf_pin", CONF_T_PATH,
	    "/sys/fs/bpf/smcproxyd", 0, 0, NULL, 0,
	    "where smcproxyd-bpf.service pinned the program and its maps "
	    "for a daemon that is not root (the unit attaches the "
	    "program); used when its maps are there"),
};

#undef R
#undef REQ
#undef UNIQ

static size_t
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
conf_ksmc_allows(const struct conf_ksmc *k, const struct addr *a)
{
	int i;

	for (i = 0; i < k->nallow; i++)
		if (addr_net_match(&k->allow_nets[i], a))
			return true;
	return false;
}

/* Whether the EID (as the wire has it) is one of kernel_smc.ueids. */
bool
conf_ksmc_serves(const struct conf_ksmc *k, const uint8_t *eid)
{
	uint8_t ours[SCLC_EID_LEN];
	int i;

	for (i = 0; i < k->nueids; i++)
		if (sclc_eid_put(ours, k->ueids[i]) == 0 &&
		    memcmp(ours, eid, SCLC_EID_LEN) == 0)
			return true;
	return false;
}

/*
 * The standard dialect is on: parse the allowed networks, and say what it
 * does not protect, at every start and reload (DESIGN.md §10).
 */
static void
conf_post_ksmc(struct conf_parse *p, void *obj, const struct conf_loc *locs,
	       const char *prefix, struct conf_loc at)
{
	struct conf_ksmc *k = obj;
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

static const struct conf_section conf_sections[CONF_NSECT] = {
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
	[CONF_SECT_KSMC] =
		{
			.name = "kernel_smc",
			.optional = true,
			.keys = conf_ksmc_keys,
			.nkeys = CONF_NELEM(conf_ksmc_keys),
			.obj_off = offsetof(struct conf, ksmc),
			.post = conf_post_ksmc,
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
 * A peer's route keys left at -1 take rdma's values; its source must be
 * of its address's family.
 */
static void
conf_check_peer_routes(struct conf_parse *p)
{
	struct conf *conf = p->conf;
	const struct conf_route *r = &conf->rdma.route;
	const struct conf_loc *locs = p->src->keys[CONF_SECT_PEERS];
	const size_t nk = CONF_NELEM(conf_peer_keys);
	const size_t si = conf_key_index(conf_peer_keys, nk, "source");
	const size_t ni = conf_key_index(conf_peer_keys, nk, "name");
	struct conf_route *pr;
	struct conf_peer *peer;
	char path[CONF_PATH_LEN];
	int i;

	if (conf->ksmc.enabled) {
		peer = &conf->ksmc.peer;
		snprintf(peer->name, sizeof(peer->name), "%s", CONF_KSMC_PEER);
		peer->insecure = peer->any_source = true;
		peer->max_lgrs = CONF_KSMC_MAX_LGRS;
		peer->buffer_share = 100;
		peer->route = *r;
	}
	for (i = 0; i < conf->npeers; i++) {
		peer = &conf->peers[i];
		pr = &peer->route;
		/* kernel peers' groups and counters go under that name */
		if (strcmp(peer->name, CONF_KSMC_PEER) == 0) {
			snprintf(path, sizeof(path), "peers[%d].name", i);
			conf_err(p, locs[(size_t)i * nk + ni], path,
				 "the name %s is kept for kernel SMC-R peers "
				 "(kernel_smc); choose another",
				 CONF_KSMC_PEER);
		}
		if (pr->dscp < 0)
			pr->dscp = r->dscp;
		if (pr->priority < 0)
			pr->priority = r->priority;
		if (pr->qp_timeout < 0)
			pr->qp_timeout = r->qp_timeout;
		if (pr->retry_count < 0)
			pr->retry_count = r->retry_count;
		if (pr->rnr_retry < 0)
			pr->rnr_retry = r->rnr_retry;
		if (peer->source.len == 0)
			continue;
		snprintf(path, sizeof(path), "peers[%d].source", i);
		if (conf->rdma.gid_index >= 0)
			conf_err(p, locs[(size_t)i * nk + si], path,
				 "peer %s: rdma.gid_index %d fixes the GID, "
				 "whatever the source; set it to -1",
				 peer->name, conf->rdma.gid_index);
		else if (peer->addr.len != 0 &&
			 conf_addr_is_v4(&peer->source) !=
				 conf_addr_is_v4(&peer->addr))
			conf_err(p, locs[(size_t)i * nk + si], path,
				 "peer %s: an IPv%c source for an IPv%c "
				 "address",
				 peer->name,
				 conf_addr_is_v4(&peer->source) ? '4' : '6',
				 conf_addr_is_v4(&peer->addr) ? '4' : '6');
	}
}

/*
 * An export is named in CONN_OPEN in LLC_EXPORT_MAX bytes: a longer name,
 * which the fallback would carry, is refused rather than send every
 * connection of it silently over TCP.
 */
static void
conf_check_export_names(struct conf_parse *p, enum conf_sect_id id,
			const char *key, const char *sect, int n, size_t size,
			size_t name_off)
{
	const struct conf_section *sec = &conf_sections[id];
	const size_t ki = conf_key_index(sec->keys, sec->nkeys, key);
	char *arr = *(char **)((char *)p->conf + sec->arr_off);
	char path[CONF_PATH_LEN], q[CONF_QUOTE_LEN];
	const char *name;
	size_t len;
	int i;

	for (i = 0; i < n; i++) {
		name = arr + (size_t)i * size + name_off;
		len = strlen(name);
		if (len <= LLC_EXPORT_MAX)
			continue;
		snprintf(path, sizeof(path), "%s[%d].%s", sect, i, key);
		conf_err(p, p->src->keys[id][(size_t)i * sec->nkeys + ki], path,
			 "export name %s is %zu bytes; over RDMA an export is "
			 "named in at most %d (CONN_OPEN): use a shorter name",
			 conf_quote(name, q, sizeof(q)), len, LLC_EXPORT_MAX);
	}
}

/*
 * Each export is reachable: by peers (peers and a peer_listen section)
 * or by kernel SMC-R clients (smc_listen and kernel_smc), on an
 * smc_listen address no other listener of ours catches.
 */
static void
conf_check_exports(struct conf_parse *p)
{
	const struct conf *conf = p->conf;
	const struct conf_section *sec = &conf_sections[CONF_SECT_EXPORTS];
	const struct conf_loc *elocs = p->src->keys[CONF_SECT_EXPORTS];
	const size_t sl = conf_key_index(sec->keys, sec->nkeys, "smc_listen");
	const size_t pi = conf_key_index(sec->keys, sec->nkeys, "peers");
	const struct conf_export *e;
	char path[CONF_PATH_LEN], a[ADDR_STRLEN];
	int i, j;

	for (i = 0; i < conf->nexports; i++) {
		e = &conf->exports[i];
		if (e->npeers > 0 && !conf->has_peer_listen) {
			snprintf(path, sizeof(path), "exports[%d].peers", i);
			conf_err(p, elocs[(size_t)i * sec->nkeys + pi], path,
				 "peers cannot reach export %s without a "
				 "peer_listen section",
				 e->name);
		}
		/* an empty peers list has had its message */
		if (e->npeers == 0 && e->smc_listen.len == 0 &&
		    elocs[(size_t)i * sec->nkeys + pi].line == 0) {
			snprintf(path, sizeof(path), "exports[%d]", i);
			conf_err(p,
				 (struct conf_loc){
					 elocs[(size_t)i * sec->nkeys].file,
					 e->line},
				 path,
				 "export %s has neither peers nor smc_listen: "
				 "nobody can reach it",
				 e->name);
		}
		if (e->smc_listen.len == 0)
			continue;
		snprintf(path, sizeof(path), "exports[%d].smc_listen", i);
		if (!conf->ksmc.enabled) {
			conf_err(p, elocs[(size_t)i * sec->nkeys + sl], path,
				 "needs a kernel_smc section (the standard "
				 "dialect is off without it)");
			continue;
		}
		addr_str(&e->smc_listen, a, sizeof(a));
		/* Linux proposes SMC-Rv2 over IPv4 only; on an IPv6 socket
		 * an IPv4 client's SYN got the option echoed and then was
		 * taken for plain TCP, hanging the client 6 s (issue 43) */
		if (e->smc_listen.ss.ss_family != AF_INET)
			conf_err(p, elocs[(size_t)i * sec->nkeys + sl], path,
				 "%s is IPv6: kernel SMC-R clients connect "
				 "over IPv4 only; use 0.0.0.0:PORT or an IPv4 "
				 "address",
				 a);
		if (conf->has_peer_listen &&
		    conf_addr_overlap(&e->smc_listen, &conf->peer_listen))
			conf_err(p, elocs[(size_t)i * sec->nkeys + sl], path,
				 "%s overlaps peer_listen.address", a);
		for (j = 0; j < conf->nrules; j++)
			if (conf_addr_overlap(&e->smc_listen,
					      &conf->rules[j].listen))
				conf_err(p, elocs[(size_t)i * sec->nkeys + sl],
					 path, "%s overlaps rules[%d].listen",
					 a, j);
		for (j = 0; j < i; j++)
			if (conf_addr_overlap(&e->smc_listen,
					      &conf->exports[j].smc_listen))
				conf_err(p, elocs[(size_t)i * sec->nkeys + sl],
					 path,
					 "%s overlaps exports[%d].smc_listen",
					 a, j);
	}
}

/*
 * A rule goes to an export at a peer (peer and export) or to a kernel
 * SMC-R server (target_smc, with kernel_smc on), never both.
 */
static void
conf_check_rule_targets(struct conf_parse *p)
{
	const struct conf *conf = p->conf;
	const struct conf_section *sec = &conf_sections[CONF_SECT_RULES];
	const struct conf_loc *rlocs = p->src->keys[CONF_SECT_RULES];
	const size_t ti = conf_key_index(sec->keys, sec->nkeys, "target_smc");
	const size_t pi = conf_key_index(sec->keys, sec->nkeys, "peer");
	const size_t ei = conf_key_index(sec->keys, sec->nkeys, "export");
	const struct conf_loc *l;
	const struct conf_rule *r;
	struct conf_loc at;
	char path[CONF_PATH_LEN];
	int i;

	for (i = 0; i < conf->nrules; i++) {
		r = &conf->rules[i];
		l = rlocs + (size_t)i * sec->nkeys;
		/* not a group: it has had its message */
		if (r->name[0] == '\0')
			continue;
		at = (struct conf_loc){l[0].file, r->line};
		snprintf(path, sizeof(path), "rules[%d]", i);
		if ((r->nintercept > 0) != (r->intercept_cgroup != NULL) ||
		    (r->nintercept > 0) != conf_rule_original(r))
			conf_err(p, at, path,
				 "rule %s: intercept, intercept_cgroup and "
				 "target_smc = \"original\" go together",
				 r->name);
		else if (r->nintercept > 0 && !conf_loopback_port(&r->listen))
			conf_err(p, at, path,
				 "rule %s: intercept takes connects to listen: "
				 "make it 127.0.0.1:PORT or [::1]:PORT",
				 r->name);
		else if (r->nintercept > 0 && r->accept_proxy)
			conf_err(
				p, at, path,
				"rule %s: accept_proxy and intercept do not go "
				"together: the connects intercept takes come "
				"from this host's programs, with no PROXY "
				"header",
				r->name);
		if (r->target_smc.len != 0) {
			if (r->peer != NULL || r->export[0] != '\0')
				conf_err(p, at, path,
					 "rule %s: target_smc, or peer and "
					 "export, not both",
					 r->name);
			else if (!conf->ksmc.enabled)
				conf_err(p, rlocs[(size_t)i * sec->nkeys + ti],
					 path,
					 "rule %s: target_smc needs a "
					 "kernel_smc "
					 "section (the standard dialect is off "
					 "without it)",
					 r->name);
		} else if (l[ti].line == 0 &&
			   (l[pi].line == 0 || l[ei].line == 0)) {
			/* a peer or export set but wrong has had its message */
			conf_err(p, at, path,
				 "rule %s: needs peer and export (or "
				 "target_smc)",
				 r->name);
		}
	}
}

/* Checks across sections, once every section is in. */
static void
conf_check_all(struct conf_parse *p)
{
	struct conf *conf = p->conf;
	const struct conf_loc *rlocs = p->src->keys[CONF_SECT_RULES];
	const size_t nk = CONF_NELEM(conf_rule_keys);
	const size_t li = conf_key_index(conf_rule_keys, nk, "listen");
	char path[CONF_PATH_LEN], a[ADDR_STRLEN];
	int i;

	conf_check_peer_routes(p);
	conf_check_export_names(p, CONF_SECT_EXPORTS, "name", "exports",
				conf->nexports, sizeof(struct conf_export),
				offsetof(struct conf_export, name));
	conf_check_export_names(p, CONF_SECT_RULES, "export", "rules",
				conf->nrules, sizeof(struct conf_rule),
				offsetof(struct conf_rule, export));
	conf_check_exports(p);
	conf_check_rule_targets(p);
	for (i = 0; conf->has_peer_listen && i < conf->nrules; i++) {
		if (!conf_addr_overlap(&conf->rules[i].listen,
				       &conf->peer_listen))
			continue;
		snprintf(path, sizeof(path), "rules[%d].listen", i);
		conf_err(p, rlocs[(size_t)i * nk + li], path,
			 "%s overlaps peer_listen.address at line %d",
			 addr_str(&conf->rules[i].listen, a, sizeof(a)),
			 p->src->keys[CONF_SECT_LISTEN][0].line);
	}
}

static void
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
	conf_check_all(p);
}

/* Turn a libconfig parse (ok or not) into a config; NULL after any error. */
static struct conf *
conf_build(config_t *cfg, bool read_ok, const char *name, const char *dir,
	   FILE *errors)
{
	struct conf_parse p = {0};
	struct conf *conf;
	struct conf_loc loc;
	FILE *warnings = NULL;
	size_t wlen = 0;

	conf = calloc(1, sizeof(*conf));
	if (conf == NULL)
		goto nomem;
	conf->path = strdup(name);
	conf->src = calloc(1, sizeof(*conf->src));
	if (conf->path == NULL || conf->src == NULL)
		goto nomem;
	conf->src->files = calloc(1, sizeof(char *));
	if (conf->src->files == NULL)
		goto nomem;
	conf->src->files[0] = strdup(name);
	if (conf->src->files[0] == NULL)
		goto nomem;
	conf->src->nfiles = 1;
	p.conf = conf;
	p.src = conf->src;
	p.dir = dir;
	if (!read_ok) {
		loc.file = conf_file_intern(p.src, config_error_file(cfg));
		loc.line = config_error_line(cfg);
		conf_err(&p, loc, "syntax", "%s", config_error_text(cfg));
	} else {
		conf_parse_root(&p, config_root_setting(cfg));
	}
	warnings = open_memstream(&conf->warnings, &wlen);
	if (warnings == NULL) {
		conf_flush(&p, errors, NULL);
		goto nomem;
	}
	conf_flush(&p, errors, warnings);
	fclose(warnings);
	if (p.nerrors == 0)
		return conf;
	conf_free(conf);
	return NULL;
nomem:
	if (errors != NULL)
		fprintf(errors, "%s: out of memory\n", name);
	conf_free(conf);
	return NULL;
}

/*
 * Read the config file at path.  Every problem goes to errors (may be
 * NULL) as "file:line: key: message", sorted by position.  Returns the
 * resolved config, or NULL after any problem.
 */
struct conf *
conf_load(const char *path, FILE *errors)
{
	struct conf *conf = NULL;
	char *dir = NULL, *slash;
	FILE *fp = NULL;
	struct stat st;
	config_t cfg;
	bool ok;

	fp = fopen(path, "re");
	if (fp == NULL) {
		if (errors != NULL)
			fprintf(errors, "%s: %s\n", path, strerror(errno));
		return NULL;
	}
	/* libconfig's scanner exits the process on a read error (EISDIR) */
	if (fstat(fileno(fp), &st) == 0 && S_ISDIR(st.st_mode)) {
		if (errors != NULL)
			fprintf(errors, "%s: is a directory, not a file\n",
				path);
		goto out;
	}
	slash = strrchr(path, '/');
	dir = slash == NULL ? strdup(".") :
			      strndup(path, (size_t)(slash - path));
	if (dir == NULL) {
		if (errors != NULL)
			fprintf(errors, "%s: out of memory\n", path);
		goto out;
	}
	if (dir[0] == '\0') {
		free(dir);
		dir = strdup("/");
		if (dir == NULL)
			goto out;
	}
	config_init(&cfg);
	/* @include "x" means next to the config, whatever the cwd */
	config_set_include_dir(&cfg, dir);
	ok = config_read(&cfg, fp) == CONFIG_TRUE;
	conf = conf_build(&cfg, ok, path, dir, errors);
	config_destroy(&cfg);
out:
	free(dir);
	fclose(fp);
	return conf;
}

/*
 * As conf_load(), from the text in memory; name stands for the file in
 * messages.  Key files are still read from their paths (relative ones from
 * the cwd).  For tests, fuzzing and configs not in a file.
 */
struct conf *
conf_load_string(const char *text, const char *name, FILE *errors)
{
	struct conf *conf;
	config_t cfg;
	bool ok;

	config_init(&cfg);
	ok = config_read_string(&cfg, text) == CONFIG_TRUE;
	conf = conf_build(&cfg, ok, name, NULL, errors);
	config_destroy(&cfg);
	return conf;
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
	conf_names_free(conf->ksmc.ueids);
	conf_names_free(conf->ksmc.allow);
	free(conf->ksmc.allow_nets);
	free(conf->ksmc.bpf_object);
	free(conf->ksmc.bpf_pin);
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

static bool
conf_field_equal(const struct conf_key *k, const void *a, const void *b)
{
	char *const *na, *const *nb;
	size_t i;

	switch (k->type) {
	case CONF_T_BOOL:
		return *(const bool *)a == *(const bool *)b;
	case CONF_T_PATH:
		a = *(char *const *)a;
		b = *(char *const *)b;
		return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
	case CONF_T_NAME:
		return strcmp(a, b) == 0;
	case CONF_T_ADDR:
	case CONF_T_HOST:
		return addr_equal(a, b);
	case CONF_T_NAMES:
		na = *(char **const *)a;
		nb = *(char **const *)b;
		for (i = 0;
		     na != NULL && nb != NULL && na[i] != NULL && nb[i] != NULL;
		     i++)
			if (strcmp(na[i], nb[i]) != 0)
				return false;
		return (na == NULL || na[i] == NULL) &&
		       (nb == NULL || nb[i] == NULL);
	case CONF_T_PEER:
		return false;
	default:
		return *(const int *)a == *(const int *)b;
	}
}

/*
 * Compare a freshly loaded config with the running one: every key that a
 * reload cannot apply but that changed is an error, reported against new's
 * file and line.  Returns 0, or -EINVAL when new needs a restart.
 */
int
conf_reload_check(const struct conf *old, const struct conf *new, FILE *errors)
{
	const struct conf_section *sec;
	const char *file;
	struct conf_loc loc;
	size_t k;
	int id, bad = 0;

	for (id = 0; id < CONF_NSECT; id++) {
		sec = &conf_sections[id];
		if (sec->list)
			continue;
		for (k = 0; k < sec->nkeys; k++) {
			const struct conf_key *key = &sec->keys[k];
			const char *a = (const char *)old + sec->obj_off;
			const char *b = (const char *)new + sec->obj_off;

			if ((key->flags & CONF_RELOAD) ||
			    conf_field_equal(key, a + key->off, b + key->off))
				continue;
			bad++;
			loc = (struct conf_loc){0, 0};
			if (new->src != NULL &&new->src->keys[id] != NULL)
				loc = new->src->keys[id][k];
			if (loc.line == 0 && new->src != NULL)
				loc = new->src->sect[id];
			file = new->src != NULL	 ? new->src->files[loc.file] :
			       new->path != NULL ? new->path :
						   "?";
			if (errors != NULL)
				fprintf(errors,
					"%s:%d: %s.%s: cannot be changed by "
					"reload; restart the daemon\n",
					file, loc.line, sec->name, key->name);
		}
	}
	return bad ? -EINVAL : 0;
}

static void
conf_print_default(FILE *out, const struct conf_key *k)
{
	if (k->def == NULL)
		fputs(k->def_doc != NULL ? k->def_doc :
		      k->type == CONF_T_NAMES && !(k->flags & CONF_REQUIRED) ?
					   "[ ]" :
		      k->flags & CONF_REQUIRED ? "required" :
						 "none",
		      out);
	else if (k->type == CONF_T_INT || k->type == CONF_T_MODE ||
		 k->type == CONF_T_BOOL)
		fputs(k->def, out);
	else
		fprintf(out, "\"%s\"", k->def);
}

static void
conf_print_range(FILE *out, const struct conf_key *k)
{
	switch (k->type) {
	case CONF_T_INT:
		fprintf(out, "%lld..%lld", k->min, k->max);
		break;
	case CONF_T_MODE:
		fprintf(out, "%#llo..%#llo", k->min, k->max);
		break;
	case CONF_T_BOOL:
		fputs("true|false", out);
		break;
	case CONF_T_ENUM:
		fputs(k->choices, out);
		break;
	case CONF_T_NAMES:
		if (k->range != NULL) {
			fputs(k->range, out);
			break;
		}
		/* FALLTHROUGH */
	case CONF_T_NAME:
		fprintf(out, "[A-Za-z0-9._-]{1,%d}", CONF_NAME_MAX);
		break;
	case CONF_T_PEER:
		fputs("a peers[].name", out);
		break;
	case CONF_T_ADDR:
		fputs("ip:port", out);
		break;
	case CONF_T_HOST:
		fputs("ip", out);
		break;
	default:
		fputs("-", out);
		break;
	}
}

/*
 * Print every section and key, one per line, tab-separated: key, type,
 * default, range, reloadable, description.  Ready for tbl(1) and scripts;
 * docs/smcproxyd.conf.5 documents the same table.
 */
void
conf_print_schema(FILE *out)
{
	const struct conf_section *sec;
	size_t k;
	int id;

	fputs("key\ttype\tdefault\trange\treload\tdescription\n", out);
	for (id = 0; id < CONF_NSECT; id++) {
		sec = &conf_sections[id];
		fprintf(out, "%s\t%s\t%s\t-\t-\t%s\n", sec->name,
			sec->list ? "list" : "group",
			sec->list || sec->optional ? "none" : "{ }", sec->desc);
		for (k = 0; k < sec->nkeys; k++) {
			const struct conf_key *key = &sec->keys[k];

			fprintf(out, "%s%s.%s\t%s\t", sec->name,
				sec->list ? "[]" : "", key->name,
				conf_type_names[key->type]);
			conf_print_default(out, key);
			fputc('\t', out);
			conf_print_range(out, key);
			fprintf(out, "\t%s\t%s\n",
				key->flags & CONF_RELOAD ? "yes" : "no",
				key->desc);
		}
	}
}

/* Write text as "# " comment lines of at most 79 columns after indent. */
static void
conf_print_comment(FILE *out, const char *indent, const char *text)
{
	const int width = 79 - 8 * (int)strspn(indent, "\t") - 2;
	const char *p = text, *end;
	int n;

	while (*p != '\0') {
		n = (int)strlen(p);
		if (n > width) {
			end = p + width;
			while (end > p && *end != ' ')
				end--;
			n = end > p ? (int)(end - p) : width;
		}
		fprintf(out, "%s# %.*s\n", indent, n, p);
		p += n;
		while (*p == ' ')
			p++;
	}
}

/*
 * One key of the example: what it is, then "key = value;".  A key without
 * a default is set to its example, in a section that is commented out
 * anyway; elsewhere the line is a comment, as the key is off without it.
 */
static void
conf_print_example_key(FILE *out, const struct conf_section *sec,
		       const struct conf_key *k)
{
	const char *indent = sec->list ? "\t\t" : "\t";
	char *text = NULL, *range = NULL;
	size_t len = 0, rlen = 0;
	FILE *f, *r;

	f = open_memstream(&text, &len);
	r = open_memstream(&range, &rlen);
	if (f == NULL || r == NULL)
		goto out;
	conf_print_range(r, k);
	fclose(r);
	r = NULL;
	fprintf(f, "%s%s.%s: %s; %s", sec->name, sec->list ? "[]" : "", k->name,
		k->desc, conf_type_names[k->type]);
	if (strcmp(range, "-") != 0)
		fprintf(f, ", %s", range);
	fputs(k->flags & CONF_REQUIRED ? ", required" : "", f);
	if (k->def == NULL && k->def_doc != NULL)
		fprintf(f, ", default: %s", k->def_doc);
	fputs(k->flags & CONF_RELOAD ? "" : "; restart", f);
	fclose(f);
	f = NULL;
	conf_print_comment(out, indent, text);
	if (k->def != NULL) {
		fprintf(out, "%s%s = ", indent, k->name);
		conf_print_default(out, k);
		fputs(";\n", out);
	} else if (k->example != NULL) {
		fprintf(out, "%s%s%s = %s;\n", indent,
			(!sec->list && !sec->optional) ||
					(k->flags & CONF_ALT) ?
				"# " :
				"",
			k->name, k->example);
	} else if (k->type == CONF_T_NAMES) {
		fprintf(out, "%s%s = [ ];\n", indent, k->name);
	} else {
		fprintf(out, "%s# %s: no default, no example\n", indent,
			k->name);
	}
out:
	if (f != NULL)
		fclose(f);
	if (r != NULL)
		fclose(r);
	free(text);
	free(range);
}

/*
 * The example configuration, conf/smcproxyd.conf: every section and key of
 * the tables with its description, type, range, whether a reload changes
 * it, and its default (or, without one, an example value).  Sections a
 * daemon may do without are commented out.  The unit tests compare the
 * shipped file with this, so it cannot lack a key or go stale.
 */
void
conf_print_example(FILE *out)
{
	const struct conf_section *sec;
	char *body = NULL, *line, *next;
	size_t k, len = 0;
	FILE *f;
	int id;

	fputs("# smcproxyd.conf: every key, set to its default.  See "
	      "smcproxyd.conf(5).\n"
	      "# Written by \"smcproxyd --print-example\" from the daemon's "
	      "key table.\n"
	      "#\n"
	      "# Syntax is libconfig's: groups { }, lists ( ), arrays [ ], "
	      "\"strings\",\n"
	      "# true/false, integers (0x.. for hex); \"#\" and \"//\" start "
	      "comments.\n"
	      "# Check a file with \"smcproxyd -n -c FILE\": all errors and "
	      "warnings at once,\n"
	      "# as \"file:line: key: message\".  Keys marked \"restart\" "
	      "cannot be changed by\n"
	      "# a reload (SIGHUP or \"smcproxyctl reload\"); everything else "
	      "can.\n"
	      "# Sections that are commented out are off until written; a "
	      "peer needs a\n"
	      "# key_file readable by the user the daemon runs as (smcproxyd "
	      "under the\n"
	      "# unit), or insecure = true; see smcproxyd(8), Keys.\n",
	      out);
	for (id = 0; id < CONF_NSECT; id++) {
		sec = &conf_sections[id];
		f = open_memstream(&body, &len);
		if (f == NULL)
			return;
		if (sec->list)
			fprintf(f, "%s = (\n\t{\n", sec->name);
		else
			fprintf(f, "%s: {\n", sec->name);
		for (k = 0; k < sec->nkeys; k++) {
			if (k > 0)
				fputs("\n", f);
			conf_print_example_key(f, sec, &sec->keys[k]);
		}
		fputs(sec->list ? "\t}\n);\n" : "};\n", f);
		fclose(f);
		fputs("\n", out);
		conf_print_comment(out, "", sec->desc);
		/* what a daemon may do without is left for the operator */
		for (line = body; *line != '\0'; line = next + 1) {
			next = strchr(line, '\n');
			fprintf(out, "%s%.*s\n",
				!sec->list && !sec->optional ? "" :
				line[0] == '\t'		     ? "#" :
				line[0] == '\n'		     ? "#" :
							       "# ",
				(int)(next - line), line);
		}
		free(body);
		body = NULL;
	}
}
