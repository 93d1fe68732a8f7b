// SPDX-License-Identifier: BSD-2-Clause
/*
 * smcproxyctl: the operator's client for smcproxyd's control socket.  It
 * turns the command words into one JSON request line, reads the one reply
 * line, and prints it as aligned tables for people, as the raw reply for
 * scripts (-j), or as Prometheus text exposition (--prometheus) built from
 * the daemon's own stats schema.
 *
 * Every table goes through libsmartcols (what lsblk and findmnt use), so
 * all of them take -o COLUMNS, --noheadings and --raw alike.  A command's
 * tables are written to a buffer first: an unknown -o column is then an
 * error before anything is printed.
 *
 * Exit status: 0 ok, 1 the daemon answered with an error (or none), 2 usage
 * error or no connection to the socket.
 */
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <ctype.h>
#include <limits.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>
#include <libconfig.h>
#include <libsmartcols.h>

#include "smcproxyd.h"
#include "prom.h"

#define CTL_EXIT_OK 0
#define CTL_EXIT_FAILED 1
#define CTL_EXIT_USAGE 2
#define CTL_TIMEOUT 30	 /* seconds to wait for a reply by default */
#define CTL_MAX_OCOLS 64 /* names in one -o list */

enum ctl_fmt {
	CTL_FMT_TEXT,
	CTL_FMT_JSON,
	CTL_FMT_PROMETHEUS,
	CTL_FMT_OPENMETRICS
};

struct ctl_conn {
	const char *path;
	int fd;
	char *buf; /* bytes received */
	size_t len, cap;
	size_t used; /* of which the last reply */
};

/* A KEY VALUE argument, like "peer b" or "age 10". */
struct ctl_key {
	const char *name;
	bool seconds; /* sent as a JSON integer */
};

struct ctl_cmd {
	const char *words[2];
	const char *arg;	    /* name of the one argument, or NULL */
	const struct ctl_key *keys; /* KEY VALUE pairs it takes, or NULL */
	bool need_key;		    /* at least one pair */
	void (*show)(struct ctl_conn *conn, json_t *data);
};

/* How one column of a table is rendered. */
enum ctl_col_type { CTL_COL_TEXT, CTL_COL_NUM, CTL_COL_SECONDS, CTL_COL_MS };

struct ctl_col {
	const char *head;
	const char *key;
	enum ctl_col_type type;
	bool more; /* not in the default set: -o all, or named */
};

/* The table options, and which -o names some table of the command had. */
struct ctl_tables {
	bool noheadings, raw;
	bool all;   /* -o all: every column */
	bool plus;  /* -o +NAME...: the default set, then these */
	int nocols; /* 0: the default set */
	char *ocols[CTL_MAX_OCOLS];
	bool oused[CTL_MAX_OCOLS];
	FILE *out;   /* the command's output until it is known to be good */
	char *valid; /* the column names the command's tables have */
	size_t valid_len;
	FILE *validf;
};

static const char *ctl_progname = "smcproxyctl";
static int ctl_timeout = CTL_TIMEOUT;
static bool ctl_nonzero; /* -z: statistics that are not 0 */
static struct ctl_tables ctl_tab;

static void ctl_show_kv(struct ctl_conn *conn, json_t *data);
static void ctl_show_stats(struct ctl_conn *conn, json_t *data);
static void ctl_show_done(struct ctl_conn *conn, json_t *data);
static void ctl_show_rules(struct ctl_conn *conn, json_t *data);
static void ctl_show_peers(struct ctl_conn *conn, json_t *data);
static void ctl_show_lgrs(struct ctl_conn *conn, json_t *data);
static void ctl_show_links(struct ctl_conn *conn, json_t *data);
static void ctl_show_intercept(struct ctl_conn *conn, json_t *data);
static void ctl_show_conns(struct ctl_conn *conn, json_t *data);
static void ctl_show_smc(struct ctl_conn *conn, json_t *data);
static void ctl_show_schema(struct ctl_conn *conn, json_t *data);
static void ctl_show_help(struct ctl_conn *conn, json_t *data);
static void ctl_show_killed(struct ctl_conn *conn, json_t *data);
static void ctl_show_check(struct ctl_conn *conn, json_t *data);

static const struct ctl_key ctl_filter_keys[] = {
	{"rule", false},      {"peer", false}, {"state", false},
	{"transport", false}, {"age", true},   {"dialect", false},
	{NULL, false},
};

static const struct ctl_cmd ctl_cmds[] = {
	{{"version", NULL}, NULL, NULL, false, ctl_show_kv},
	/* before "stats": "stats reset" is no section */
	{{"stats", "reset"}, NULL, NULL, false, ctl_show_done},
	{{"stats", NULL}, "section", NULL, false, ctl_show_stats},
	{{"show", "rules"}, NULL, NULL, false, ctl_show_rules},
	{{"show", "peers"}, NULL, NULL, false, ctl_show_peers},
	{{"show", "lgrs"}, NULL, NULL, false, ctl_show_lgrs},
	{{"show", "links"}, NULL, NULL, false, ctl_show_links},
	{{"show", "intercept"}, NULL, NULL, false, ctl_show_intercept},
	{{"show", "conns"}, NULL, ctl_filter_keys, false, ctl_show_conns},
	{{"show", "smc"}, NULL, ctl_filter_keys, false, ctl_show_smc},
	{{"kill", "conn"}, "id", NULL, false, ctl_show_done},
	{{"kill", "conns"}, NULL, ctl_filter_keys, true, ctl_show_killed},
	{{"disable", "rule"}, "name", NULL, false, ctl_show_done},
	{{"enable", "rule"}, "name", NULL, false, ctl_show_done},
	{{"drain", "peer"}, "name", NULL, false, ctl_show_done},
	{{"undrain", "peer"}, "name", NULL, false, ctl_show_done},
	{{"enable", "peer"}, "name", NULL, false, ctl_show_done},
	/* before "check": "check smc" is no peer */
	{{"check", "smc"}, "address", NULL, false, ctl_show_check},
	{{"check", "export"}, "name", NULL, false, ctl_show_check},
	{{"check", NULL}, "name", NULL, false, ctl_show_check},
	{{"reload", NULL}, NULL, NULL, false, ctl_show_done},
	{{"shutdown", NULL}, NULL, NULL, false, ctl_show_done},
	{{"shutdown", "now"}, NULL, NULL, false, ctl_show_done},
	{{"log-level", NULL}, "level", NULL, false, ctl_show_done},
	{{"monitor", NULL}, NULL, NULL, false, NULL},
	{{"schema", NULL}, NULL, NULL, false, ctl_show_schema},
	{{"help", NULL}, NULL, NULL, false, ctl_show_help},
};

#define CTL_NCMDS (sizeof(ctl_cmds) / sizeof(ctl_cmds[0]))

/*
 * Whether command @cmd ("stats") takes its optional argument @arg as a
 * bare word here, as stats SECTION does.
 */
static bool
ctl_bare_arg(const char *cmd, const char *arg)
{
	size_t i;

	for (i = 0; cmd != NULL && arg != NULL && i < CTL_NCMDS; i++)
		if (ctl_cmds[i].words[1] == NULL &&
		    strcmp(ctl_cmds[i].words[0], cmd) == 0 &&
		    ctl_cmds[i].arg != NULL &&
		    strcmp(ctl_cmds[i].arg, arg) == 0)
			return true;
	return false;
}

/*
 * Whether the argument of @cm may be left out (stats [SECTION],
 * log-level [LEVEL]).
 */
static bool
ctl_arg_optional(const struct ctl_cmd *cm)
{
	return cm->arg != NULL && (strcmp(cm->arg, "section") == 0 ||
				   strcmp(cm->arg, "level") == 0);
}

static void ctl_warnx(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static void
ctl_warnx(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", ctl_progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void
ctl_usage(FILE *f)
{
	fprintf(f,
		"usage: %s [-j | --prometheus | --openmetrics] [-c file | -s "
		"socket]\n"
		"       [-t seconds]"
		" [-o columns] [--noheadings] [--raw] [-z] command "
		"[argument...]\n"
		"       %s --version\n"
		"commands:\n"
		"  version                 daemon version and uptime\n"
		"  stats [SECTION]         counters and gauges (of a section: "
		"smc, conns,\n"
		"                          close, ...; -z: only those not "
		"0)\n"
		"  stats reset             set counters back to zero\n"
		"  show rules              rules and exports\n"
		"  show peers              peers and their transport, kernel "
		"SMC-R hosts\n"
		"  show intercept          transparent SMC-R: connects taken, "
		"destinations\n"
		"                          learned\n"
		"  show lgrs | show links  RDMA link groups and links\n"
		"  show conns [FILTER]     proxied connections\n"
		"  show smc [FILTER]       kernel SMC-R peers' connections "
		"(smcss)\n"
		"  kill conn ID            close one connection\n"
		"  kill conns FILTER       close the connections it matches\n"
		"  disable | enable rule NAME\n"
		"                          stop or start accepting for a rule\n"
		"  drain | undrain peer NAME\n"
		"                          no new connections to a peer, or "
		"again\n"
		"  check PEER              test the path to a peer now: its "
		"port, key,\n"
		"                          exports, transport\n"
		"  check smc ADDRESS       probe a kernel SMC-R server: "
		"PROPOSAL, answer\n"
		"  check export NAME       whether an smc_listen can have "
		"SMC-R\n"
		"  reload                  re-read the configuration\n"
		"  shutdown [now]          stop as SIGTERM does; now: close "
		"all now\n"
		"  log-level [LEVEL]       the log level, or set it: error,\n"
		"                          warning, info, debug (until a "
		"reload)\n"
		"  monitor                 print events as they happen "
		"(peers,\n"
		"                          links, reloads, admin commands) "
		"until\n"
		"                          interrupted\n"
		"  schema | help           describe stats and commands\n"
		"FILTER: one or more of rule NAME, peer NAME|HOST, state STATE,"
		"\n"
		"  transport rdma|tcp|fallback, dialect native|pair|smc-r,\n"
		"  age SECONDS (at least that old)\n"
		"default socket: %s\n",
		ctl_progname, ctl_progname, CONTROL_SOCKET_DEFAULT);
}

/*
 * The control socket that the configuration file at path names
 * (smcproxyd.control_socket, else the default), into buf: so that the
 * unit's ExecReload= need not repeat it.  A file libconfig cannot read
 * is reported and the default tried: the daemon, if it is there, says
 * what is wrong with the file in its own words.
 */
static void
ctl_conf_socket(const char *path, char *buf, size_t len)
{
	const char *sock = CONTROL_SOCKET_DEFAULT, *slash;
	char dir[PATH_MAX];
	config_t cfg;

	config_init(&cfg);
	slash = strrchr(path, '/');
	snprintf(dir, sizeof(dir), "%.*s",
		 slash == NULL ? 1 :
		 slash == path ? 1 :
				 (int)(slash - path),
		 slash == NULL ? "." : path);
	config_set_include_dir(&cfg, dir);
	if (config_read_file(&cfg, path) != CONFIG_TRUE &&
	    config_error_type(&cfg) == CONFIG_ERR_FILE_IO)
		ctl_warnx("%s: cannot read it; trying the default socket %s",
			  path, sock);
	else if (config_error_type(&cfg) != CONFIG_ERR_NONE)
		ctl_warnx("%s:%d: %s; trying the default socket %s",
			  config_error_file(&cfg) != NULL ?
				  config_error_file(&cfg) :
				  path,
			  config_error_line(&cfg), config_error_text(&cfg),
			  sock);
	else
		config_lookup_string(&cfg, "smcproxyd.control_socket", &sock);
	snprintf(buf, len, "%s", sock);
	config_destroy(&cfg);
}

/******** connection ********/

static int
ctl_connect(struct ctl_conn *conn)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	struct timeval tv = {ctl_timeout, 0};
	int rc;

	if (strlen(conn->path) >= sizeof(sun.sun_path)) {
		ctl_warnx("connect %s: %s", conn->path, strerror(ENAMETOOLONG));
		return -ENAMETOOLONG;
	}
	memcpy(sun.sun_path, conn->path, strlen(conn->path) + 1);
	conn->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (conn->fd == -1 ||
	    connect(conn->fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		rc = -errno;
		ctl_warnx("connect %s: %s", conn->path, strerror(-rc));
		return rc;
	}
	if (ctl_timeout > 0) {
		setsockopt(conn->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(conn->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	return 0;
}

/*
 * The next line from the daemon, without its newline, in *line (valid
 * until the next call).  Return: 0, -ENODATA when the daemon closed the
 * connection first, -EAGAIN when none came within the timeout, or -1
 * after a message.
 */
static int
ctl_read_line(struct ctl_conn *conn, char **line)
{
	char *nl, *p;
	ssize_t n;

	/* drop the previous line */
	if (conn->used > 0) {
		memmove(conn->buf, conn->buf + conn->used,
			conn->len - conn->used);
		conn->len -= conn->used;
		conn->used = 0;
	}
	for (;;) {
		nl = conn->len > 0 ? memchr(conn->buf, '\n', conn->len) : NULL;
		if (nl != NULL)
			break;
		if (conn->cap - conn->len < 65536) {
			p = realloc(conn->buf, conn->cap * 2 + 65536);
			if (p == NULL) {
				ctl_warnx("out of memory");
				return -1;
			}
			conn->buf = p;
			conn->cap = conn->cap * 2 + 65536;
		}
		n = read(conn->fd, conn->buf + conn->len,
			 conn->cap - conn->len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return -EAGAIN;
		if (n == 0 || (n == -1 && errno == ECONNRESET))
			return -ENODATA;
		if (n == -1) {
			ctl_warnx("%s: %s", conn->path, strerror(errno));
			return -1;
		}
		conn->len += (size_t)n;
	}
	*nl = '\0';
	conn->used = (size_t)(nl - conn->buf) + 1;
	*line = conn->buf;
	return 0;
}

/*
 * Send one request and read its reply line.  Return: 0 with the reply in
 * *reply and its text in *raw (valid until the next request), or -1 after
 * a message.
 */
static int
ctl_request(struct ctl_conn *conn, const char *cmd, json_t *args,
	    json_t **reply, const char **raw)
{
	json_error_t jerr;
	json_t *req;
	char *line, *p;
	size_t left, len;
	int send_err = 0, rc;
	ssize_t n;

	req = json_pack("{s:i, s:s}", "v", CONTROL_VERSION, "cmd", cmd);
	if (req != NULL && args != NULL)
		json_object_set(req, "args", args);
	line = req != NULL ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	if (line == NULL) {
		ctl_warnx("out of memory");
		return -1;
	}
	len = strlen(line);
	line[len++] = '\n'; /* replaces the NUL: length is tracked */
	for (p = line, left = len; left > 0;) {
		/* a daemon gone away is an error message, not SIGPIPE */
		n = send(conn->fd, p, left, MSG_NOSIGNAL);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EPIPE || errno == ECONNRESET)) {
			/* it may have said why before closing: read that */
			send_err = errno;
			break;
		}
		if (n == -1) {
			ctl_warnx("%s: send: %s", conn->path, strerror(errno));
			free(line);
			return -1;
		}
		p += n;
		left -= (size_t)n;
	}
	free(line);

	rc = ctl_read_line(conn, &line);
	if (rc == -EAGAIN) {
		ctl_warnx("%s: no reply within %d s", conn->path, ctl_timeout);
		return -1;
	}
	if (rc == -ENODATA && send_err) {
		ctl_warnx("%s: send: %s", conn->path, strerror(send_err));
		return -1;
	}
	if (rc == -ENODATA) {
		ctl_warnx("%s: connection closed by the daemon", conn->path);
		return -1;
	}
	if (rc < 0)
		return -1;
	*raw = line;
	*reply = json_loads(line, 0, &jerr);
	if (*reply == NULL || !json_is_object(*reply)) {
		ctl_warnx("%s: invalid reply: %s", conn->path,
			  *reply == NULL ? jerr.text : "not an object");
		goto fail;
	}
	if (json_integer_value(json_object_get(*reply, "v")) !=
	    CONTROL_VERSION) {
		ctl_warnx("%s: the daemon speaks another protocol version",
			  conn->path);
		goto fail;
	}
	return 0;

fail:
	json_decref(*reply);
	*reply = NULL;
	return -1;
}

/* A request whose reply must succeed: its data, or NULL after a message. */
static json_t *
ctl_call(struct ctl_conn *conn, const char *cmd, json_t **reply)
{
	const char *raw;

	*reply = NULL;
	if (ctl_request(conn, cmd, NULL, reply, &raw) < 0)
		return NULL;
	if (!json_is_true(json_object_get(*reply, "ok"))) {
		ctl_warnx("%s: %s", cmd,
			  json_string_value(json_object_get(*reply, "error")));
		json_decref(*reply);
		*reply = NULL;
		return NULL;
	}
	return json_object_get(*reply, "data");
}

/******** text output ********/

/* A duration v (a JSON number of seconds); tenths only where v has them. */
static void
ctl_seconds(char *buf, size_t len, const json_t *v)
{
	double s = json_number_value(v);
	long long t = (long long)s;

	if (s < 10 && !json_is_integer(v))
		snprintf(buf, len, "%.1fs", s);
	else if (t < 60)
		snprintf(buf, len, "%llds", t);
	else if (t < 3600)
		snprintf(buf, len, "%lldm%02llds", t / 60, t % 60);
	else if (t < 86400)
		snprintf(buf, len, "%lldh%02lldm", t / 3600, t % 3600 / 60);
	else
		snprintf(buf, len, "%lldd%02lldh", t / 86400, t % 86400 / 3600);
}

/* One cell as text (malloc'd). */
static char *
ctl_cell(const json_t *v, enum ctl_col_type type)
{
	char buf[64];
	const json_t *e;
	char *s, *t;
	size_t i, len;
	FILE *f;

	if (type == CTL_COL_SECONDS && json_is_number(v)) {
		ctl_seconds(buf, sizeof(buf), v);
		return strdup(buf);
	}
	if (type == CTL_COL_MS && json_is_integer(v)) {
		json_t *sec = json_real((double)json_integer_value(v) / 1000);

		ctl_seconds(buf, sizeof(buf), sec);
		json_decref(sec);
		return strdup(json_integer_value(v) > 0 ? buf : "-");
	}
	if (v == NULL) /* a member this row has not: smc_status of a peer's */
		return strdup("-");
	switch (json_typeof(v)) {
	case JSON_STRING:
		return strdup(*json_string_value(v) != '\0' ?
				      json_string_value(v) :
				      "-");
	case JSON_INTEGER:
		snprintf(buf, sizeof(buf), "%lld",
			 (long long)json_integer_value(v));
		return strdup(buf);
	case JSON_REAL:
		snprintf(buf, sizeof(buf), "%.1f", json_real_value(v));
		return strdup(buf);
	case JSON_TRUE:
		return strdup("yes");
	case JSON_FALSE:
		return strdup("no");
	case JSON_ARRAY:
		s = NULL;
		f = open_memstream(&s, &len);
		if (f == NULL)
			return NULL;
		json_array_foreach(v, i, e) {
			t = ctl_cell(e, CTL_COL_TEXT);
			fprintf(f, "%s%s", i > 0 ? "," : "",
				t != NULL ? t : "");
			free(t);
		}
		fclose(f);
		return s;
	default:
		return strdup("-");
	}
}

/* Whether -o name @want names the column: any case, '-' and '_' alike. */
static bool
ctl_col_named(const char *want, const char *name)
{
	for (; *want != '\0' && *name != '\0'; want++, name++) {
		if ((*want == '-' || *want == '_') &&
		    (*name == '-' || *name == '_'))
			continue;
		if (toupper((unsigned char)*want) !=
		    toupper((unsigned char)*name))
			return false;
	}
	return *want == '\0' && *name == '\0';
}

/*
 * Print @rows (an array of objects) as a table of the columns -o picked
 * from @cols (without -o the default set, those not marked "more", which
 * fits 120 columns; -o all: every one; -o +NAME...: the default set, then
 * these): numbers right-aligned, text left-aligned.
 * No rows: @empty, unless --noheadings; nothing with @empty NULL.  A
 * table none of whose columns -o names is left out.  Tables after the
 * first are set off by a blank line.
 */
static void
ctl_table(const json_t *rows, const struct ctl_col *cols, int ncols,
	  const char *empty)
{
	static int ntables;
	struct libscols_table *tb;
	struct libscols_line *ln;
	int *pick, npick = 0, c, o;
	size_t r;

	pick = calloc((size_t)ncols + (size_t)ctl_tab.nocols + 1,
		      sizeof(*pick));
	if (pick == NULL)
		return;
	for (c = 0; c < ncols; c++)
		fprintf(ctl_tab.validf, "%s%s",
			ftell(ctl_tab.validf) ? "," : "", cols[c].head);
	for (c = 0; c < ncols; c++)
		if (ctl_tab.all ||
		    ((ctl_tab.nocols == 0 || ctl_tab.plus) && !cols[c].more))
			pick[npick++] = c;
	for (o = 0; o < ctl_tab.nocols; o++)
		for (c = 0; c < ncols; c++)
			if (ctl_col_named(ctl_tab.ocols[o], cols[c].head) ||
			    ctl_col_named(ctl_tab.ocols[o], cols[c].key)) {
				if (!ctl_tab.all &&
				    !(ctl_tab.plus && !cols[c].more))
					pick[npick++] = c;
				ctl_tab.oused[o] = true;
				break;
			}
	if (npick == 0 || (json_array_size(rows) == 0 && empty == NULL))
		goto out;
	if (ntables++ > 0 && !ctl_tab.noheadings)
		fputc('\n', ctl_tab.out);
	if (json_array_size(rows) == 0) {
		if (!ctl_tab.noheadings)
			fprintf(ctl_tab.out, "%s\n", empty);
		goto out;
	}
	tb = scols_new_table();
	if (tb == NULL)
		goto out;
	scols_table_set_stream(tb, ctl_tab.out);
	scols_table_enable_raw(tb, ctl_tab.raw);
	scols_table_enable_noheadings(tb, ctl_tab.noheadings);
	if (!ctl_tab.raw)
		scols_table_set_column_separator(tb, "  ");
	for (c = 0; c < npick; c++)
		scols_table_new_column(tb, cols[pick[c]].head, 0,
				       cols[pick[c]].type != CTL_COL_TEXT ?
					       SCOLS_FL_RIGHT :
					       0);
	for (r = 0; r < json_array_size(rows); r++) {
		ln = scols_table_new_line(tb, NULL);
		for (c = 0; ln != NULL && c < npick; c++)
			scols_line_refer_data(
				ln, (size_t)c,
				ctl_cell(
					json_object_get(json_array_get(rows, r),
							cols[pick[c]].key),
					cols[pick[c]].type));
	}
	scols_print_table(tb);
	scols_unref_table(tb);
out:
	free(pick);
}

/* Members named *_s are durations in seconds, *_ms in milliseconds. */
static enum ctl_col_type
ctl_key_type(const char *key, const json_t *v)
{
	size_t len = strlen(key);

	if (len > 2 && strcmp(key + len - 2, "_s") == 0)
		return CTL_COL_SECONDS;
	if (len > 3 && strcmp(key + len - 3, "_ms") == 0)
		return CTL_COL_MS;
	return json_is_number(v) ? CTL_COL_NUM : CTL_COL_TEXT;
}

/*
 * A table of @cols, then of whatever other scalar members the first row
 * has (a daemon newer than this program), headed like the rest:
 * "slot_wait_timeouts" as SLOT-WAIT-TIMEOUTS, "up_s" as UP.
 */
static void
ctl_table_more(const json_t *rows, const struct ctl_col *cols, int ncols,
	       const char *empty)
{
	struct ctl_col *all;
	char **heads;
	const char *key;
	json_t *v;
	size_t n = 0, i, len;
	int c;

	all = calloc((size_t)ncols + json_object_size(json_array_get(rows, 0)),
		     sizeof(*all));
	heads = calloc(json_object_size(json_array_get(rows, 0)) + 1,
		       sizeof(*heads));
	if (all == NULL || heads == NULL)
		goto out;
	memcpy(all, cols, (size_t)ncols * sizeof(*all));
	json_object_foreach(json_array_get(rows, 0), key, v) {
		for (c = 0; c < ncols && strcmp(cols[c].key, key) != 0; c++)
			;
		if (c < ncols || json_is_object(v))
			continue;
		heads[n] = strdup(key);
		if (heads[n] == NULL)
			break;
		len = strlen(key);
		if (len > 2 && strcmp(key + len - 2, "_s") == 0)
			heads[n][len - 2] = '\0';
		for (i = 0; heads[n][i] != '\0'; i++)
			heads[n][i] =
				heads[n][i] == '_' ?
					'-' :
					(char)toupper(
						(unsigned char)heads[n][i]);
		all[ncols + (int)n].head = heads[n];
		all[ncols + (int)n].key = key;
		all[ncols + (int)n].type = ctl_key_type(key, v);
		all[ncols + (int)n].more = true;
		n++;
	}
	ctl_table(rows, all, ncols + (int)n, empty);
out:
	for (i = 0; heads != NULL && heads[i] != NULL; i++)
		free(heads[i]);
	free(heads);
	free(all);
}

static void
ctl_show_kv(struct ctl_conn *conn, json_t *data)
{
	static const struct ctl_col cols[] = {
		{"KEY", "key", CTL_COL_TEXT, false},
		{"VALUE", "value", CTL_COL_TEXT, false},
	};
	const char *key;
	json_t *v, *rows;

	rows = json_array();
	json_object_foreach(data, key, v) {
		char *s = ctl_cell(v, ctl_key_type(key, v));

		json_array_append_new(rows,
				      json_pack("{s:s, s:s}", "key", key,
						"value", s != NULL ? s : "-"));
		free(s);
	}
	ctl_table(rows, cols, 2, "");
	json_decref(rows);
}

/*
 * What an admin command did (the daemon says), and the warnings of a
 * reload, as `smcproxyd -n` prints them ("file:line: warning: ...").
 */
static void
ctl_show_done(struct ctl_conn *conn, json_t *data)
{
	const char *msg = json_string_value(json_object_get(data, "message"));
	json_t *w;
	size_t i;

	if (msg != NULL)
		fprintf(ctl_tab.out, "%s\n", msg);
	json_array_foreach(json_object_get(data, "warnings"), i, w)
		fprintf(ctl_tab.out, "%s\n", json_string_value(w));
}

static void
ctl_show_killed(struct ctl_conn *conn, json_t *data)
{
	json_int_t n = json_integer_value(json_object_get(data, "count"));

	fprintf(ctl_tab.out, "%lld connection%s killed\n", (long long)n,
		n == 1 ? "" : "s");
}

/*
 * check PEER, check smc ADDRESS, check export NAME: what is checked is
 * ok, and a line for each stage.
 */
static void
ctl_show_check(struct ctl_conn *conn, json_t *data)
{
	const char *msg = json_string_value(json_object_get(data, "message"));
	json_t *line;
	size_t i;

	if (msg != NULL)
		fprintf(ctl_tab.out, "%s\n", msg);
	else if (json_object_get(data, "peer") != NULL)
		fprintf(ctl_tab.out, "peer %s: ok\n",
			json_string_value(json_object_get(data, "peer")));
	else
		fprintf(ctl_tab.out, "smc %s: ok\n",
			json_string_value(json_object_get(data, "address")));
	json_array_foreach(json_object_get(data, "lines"), i, line)
		fprintf(ctl_tab.out, "  %s\n", json_string_value(line));
}

static void
ctl_show_stats(struct ctl_conn *conn, json_t *data)
{
	static const struct ctl_col cols[] = {
		{"STATISTIC", "name", CTL_COL_TEXT, false},
		{"VALUE", "value", CTL_COL_NUM, false},
		{"UNIT", "unit", CTL_COL_TEXT, false},
		{"DESCRIPTION", "description", CTL_COL_TEXT, false},
	};
	json_t *stats = json_object_get(data, "stats");
	json_t *reply = NULL, *schema, *rows, *e, *v;
	char up[32], since[32];
	size_t i;

	ctl_seconds(up, sizeof(up), json_object_get(data, "uptime_s"));
	ctl_seconds(since, sizeof(since),
		    json_object_get(data, "since_reset_s"));
	if (!ctl_tab.noheadings)
		fprintf(ctl_tab.out,
			"%lld workers, up %s, counters cover the last %s\n\n",
			(long long)json_integer_value(
				json_object_get(data, "workers")),
			up, since);

	/*
	 * Units and descriptions come from the schema.  Of the counters per
	 * decline code, only those that counted something: -j has them all;
	 * with -z, only what is not 0.  Those of other sections (stats
	 * SECTION) are not in the answer.
	 */
	schema = json_object_get(ctl_call(conn, "schema", &reply), "stats");
	rows = json_array();
	json_array_foreach(schema, i, e) {
		v = json_object_get(
			stats, json_string_value(json_object_get(e, "name")));
		if (v == NULL ||
		    (json_object_get(json_object_get(e, "labels"), "code") !=
			     NULL &&
		     json_integer_value(v) == 0) ||
		    (ctl_nonzero && json_number_value(v) == 0))
			continue;
		json_object_set(e, "value", v);
		json_array_append(rows, e);
	}
	if (schema == NULL) {
		const char *key;

		json_object_foreach(stats, key, v)
			if (!ctl_nonzero || json_number_value(v) != 0)
				json_array_append_new(
					rows, json_pack("{s:s, s:O}", "name",
							key, "value", v));
	}
	ctl_table(rows, cols, 4,
		  ctl_nonzero ? "no statistics other than 0" : "no statistics");
	json_decref(rows);
	json_decref(reply);
}

static void
ctl_show_rules(struct ctl_conn *conn, json_t *data)
{
	static const struct ctl_col rule_cols[] = {
		{"RULE", "name", CTL_COL_TEXT, false},
		{"LISTEN", "listen", CTL_COL_TEXT, false},
		{"KIND", "kind", CTL_COL_TEXT, false},
		{"PEER", "peer", CTL_COL_TEXT, false},
		{"EXPORT", "export", CTL_COL_TEXT, false},
		{"TARGET-SMC", "target_smc", CTL_COL_TEXT, true},
		{"IDLE-TIMEOUT", "idle_timeout_s", CTL_COL_NUM, false},
		{"CONNS", "conns", CTL_COL_NUM, false},
		{"ENABLED", "enabled", CTL_COL_TEXT, false},
		{"ACCEPTING", "accepting", CTL_COL_TEXT, false},
		{"SMC-R", "smc_status", CTL_COL_TEXT, false},
	};
	static const struct ctl_col export_cols[] = {
		{"EXPORT", "name", CTL_COL_TEXT, false},
		{"TARGET", "target", CTL_COL_TEXT, false},
		{"KIND", "kind", CTL_COL_TEXT, false},
		{"SMC-LISTEN", "smc_listen", CTL_COL_TEXT, true},
		{"CONNECT-TIMEOUT", "connect_timeout_s", CTL_COL_NUM, false},
		{"CONNS", "conns", CTL_COL_NUM, false},
		{"PEERS", "peers", CTL_COL_TEXT, false},
		{"SMC-R", "smc_status", CTL_COL_TEXT, false},
	};

	ctl_table(json_object_get(data, "rules"), rule_cols,
		  (int)(sizeof(rule_cols) / sizeof(rule_cols[0])), "no rules");
	ctl_table(json_object_get(data, "exports"), export_cols,
		  (int)(sizeof(export_cols) / sizeof(export_cols[0])),
		  "no exports");
}

static void
ctl_show_peers(struct ctl_conn *conn, json_t *data)
{
	static const struct ctl_col cols[] = {
		{"PEER", "name", CTL_COL_TEXT, false},
		{"ADDRESS", "address", CTL_COL_TEXT, false},
		{"SOURCE", "source", CTL_COL_TEXT, true},
		{"DSCP", "dscp", CTL_COL_NUM, true},
		{"AUTH", "auth", CTL_COL_TEXT, false},
		{"MODE", "mode", CTL_COL_TEXT, false},
		{"CONNS", "conns", CTL_COL_NUM, false},
		{"DECLINE", "decline_name", CTL_COL_TEXT, false},
		{"CODE", "decline_code", CTL_COL_TEXT, true},
		{"REASON", "fallback_reason", CTL_COL_TEXT, true},
		{"BACKOFF", "backoff_left_ms", CTL_COL_MS, true},
		{"REACHABLE", "reachable", CTL_COL_TEXT, false},
		{"DRAINING", "draining", CTL_COL_TEXT, false},
		{"LAST-ERROR", "last_error", CTL_COL_TEXT, false},
		{"ERROR-CODE", "last_error_code", CTL_COL_TEXT, true},
		{"ERROR-AGE", "last_error_age_s", CTL_COL_SECONDS, false},
	};
	static const struct ctl_col host_cols[] = {
		{"KERNEL-HOST", "host", CTL_COL_TEXT, false},
		{"LGRS", "lgrs", CTL_COL_NUM, false},
		{"LINKS", "links", CTL_COL_NUM, false},
		{"CONNS", "conns", CTL_COL_NUM, false},
		{"CONNS-RDMA", "conns_rdma", CTL_COL_NUM, true},
		{"CONNS-TOTAL", "conns_total", CTL_COL_NUM, true},
		{"DECLINE", "decline_name", CTL_COL_TEXT, false},
		{"CODE", "decline_code", CTL_COL_TEXT, true},
		{"BY", "declined_by", CTL_COL_TEXT, false},
		{"DECLINE-AGE", "decline_age_s", CTL_COL_SECONDS, false},
		{"RATE-LIMITED", "rate_limited", CTL_COL_TEXT, false},
		{"BUDGET", "budget", CTL_COL_TEXT, false},
		{"BUDGET-FULL", "budget_full", CTL_COL_TEXT, true},
	};
	json_t *hosts = json_object_get(data, "kernel_hosts"), *h;
	char budget[128];
	size_t i;

	ctl_table(json_object_get(data, "peers"), cols,
		  (int)(sizeof(cols) / sizeof(cols[0])), "no peers");
	/*
	 * For people: who declined, and the budget of the fullest worker
	 * against kernel_smc's per-host limits, "pending 0/4 lgrs 1/16
	 * conns 3/4096 memory 0.6/256.0 MiB".
	 */
	json_array_foreach(hosts, i, h) {
		snprintf(budget, sizeof(budget),
			 "pending %lld/%lld lgrs %lld/%lld conns %lld/%lld "
			 "memory %.1f/%.1f MiB",
			 (long long)json_integer_value(
				 json_object_get(h, "budget_pending")),
			 (long long)json_integer_value(
				 json_object_get(h, "max_pending_per_host")),
			 (long long)json_integer_value(
				 json_object_get(h, "budget_lgrs")),
			 (long long)json_integer_value(
				 json_object_get(h, "max_lgrs_per_host")),
			 (long long)json_integer_value(
				 json_object_get(h, "budget_conns")),
			 (long long)json_integer_value(
				 json_object_get(h, "max_conns_per_host")),
			 (double)json_integer_value(
				 json_object_get(h, "budget_memory")) /
				 (1 << 20),
			 (double)json_integer_value(
				 json_object_get(h, "memory_per_host")) /
				 (1 << 20));
		json_object_set_new(h, "budget", json_string(budget));
		json_object_set_new(
			h, "declined_by",
			json_string(*json_string_value(json_object_get(
					    h, "decline_name")) == '\0' ?
					    "" :
				    json_is_true(json_object_get(
					    h, "declined_by_peer")) ?
					    "host" :
					    "us"));
	}
	/* none: nothing printed, as for a daemon without kernel peers */
	ctl_table(hosts, host_cols,
		  (int)(sizeof(host_cols) / sizeof(host_cols[0])), NULL);
}

static void
ctl_show_lgrs(struct ctl_conn *conn, json_t *data)
{
	static const struct ctl_col cols[] = {
		{"ID", "id", CTL_COL_NUM, false},
		{"WORKER", "worker", CTL_COL_NUM, false},
		{"PEER", "peer", CTL_COL_TEXT, false},
		{"ROLE", "role", CTL_COL_TEXT, false},
		{"STATE", "state", CTL_COL_TEXT, false},
		{"LINKS", "links", CTL_COL_NUM, false},
		{"CONNS", "conns", CTL_COL_NUM, false},
		{"MAX-CONNS", "max_conns", CTL_COL_NUM, true},
		{"MAX-LINKS", "max_links", CTL_COL_NUM, true},
		{"FEATURES", "features", CTL_COL_TEXT, true},
		{"PEER-SYSTEM-ID", "peer_system_id", CTL_COL_TEXT, true},
		{"HOST", "host", CTL_COL_TEXT, true},
		{"UID", "uid", CTL_COL_TEXT, true},
		{"AGE", "age_s", CTL_COL_SECONDS, false},
	};

	ctl_table_more(json_object_get(data, "lgrs"), cols,
		       (int)(sizeof(cols) / sizeof(cols[0])), "no link groups");
}

/* Every column smcproxyctl(8) promises, whether or not there are links. */
static void
ctl_show_links(struct ctl_conn *conn, json_t *data)
{
	static const struct ctl_col cols[] = {
		{"LGR", "lgr", CTL_COL_NUM, false},
		{"LINK", "link", CTL_COL_NUM, false},
		{"STATE", "state", CTL_COL_TEXT, false},
		{"DEVICE", "device", CTL_COL_TEXT, false},
		{"GID", "gid", CTL_COL_TEXT, true},
		{"PEER-GID", "peer_gid", CTL_COL_TEXT, true},
		{"QPN", "qpn", CTL_COL_NUM, false},
		{"PEER-QPN", "peer_qpn", CTL_COL_NUM, false},
		{"MTU", "mtu", CTL_COL_NUM, false},
		{"CONNS", "conns", CTL_COL_NUM, false},
		{"MAX-INLINE", "max_inline", CTL_COL_NUM, true},
		{"WRS-POSTED", "wrs_posted", CTL_COL_NUM, false},
		{"WRITES", "writes", CTL_COL_NUM, true},
		{"INLINE-WRS", "inline_wrs", CTL_COL_NUM, false},
		{"COMPLETIONS", "completions", CTL_COL_NUM, true},
		{"ERRORS", "errors", CTL_COL_NUM, false},
		{"SLOT-WAITS", "slot_waits", CTL_COL_NUM, false},
		{"WAKEUPS", "wakeups", CTL_COL_NUM, true},
		{"SLOT-WAIT-TIMEOUTS", "slot_wait_timeouts", CTL_COL_NUM, true},
		{"RX-UNKNOWN", "rx_unknown", CTL_COL_NUM, true},
		{"RX-BAD-OPCODE", "rx_bad_opcode", CTL_COL_NUM, true},
		{"DRAINED", "drained", CTL_COL_NUM, true},
		{"CQ-EVENTS", "cq_events", CTL_COL_NUM, true},
		{"LAZY-POSTS", "lazy_posts", CTL_COL_NUM, true},
		{"LAZY-WANTED", "lazy_wanted", CTL_COL_NUM, true},
		{"DATA-SENDS", "data_sends", CTL_COL_NUM, true},
		{"TEST-LINK-SENT", "test_link_sent", CTL_COL_NUM, true},
		{"TEST-LINK-ANSWERED", "test_link_answered", CTL_COL_NUM, true},
		{"TEST-LINK-RTT-US", "test_link_rtt_us", CTL_COL_NUM, true},
		{"UP", "up_s", CTL_COL_SECONDS, false},
	};

	ctl_table_more(json_object_get(data, "links"), cols,
		       (int)(sizeof(cols) / sizeof(cols[0])), "no links");
}

static void
ctl_show_intercept(struct ctl_conn *conn, json_t *data)
{
	static const struct ctl_col cols[] = {
		{"RULE", "rule", CTL_COL_TEXT, false},
		{"CGROUP", "cgroup", CTL_COL_TEXT, false},
		{"ATTACHED", "attached", CTL_COL_TEXT, false},
		{"TAKEN", "taken", CTL_COL_NUM, false},
		{"SMC-R", "smc", CTL_COL_NUM, false},
		{"TCP", "tcp", CTL_COL_NUM, false},
		{"BYPASSED", "bypassed", CTL_COL_NUM, false},
		{"OFF", "off", CTL_COL_NUM, true},
	};
	static const struct ctl_col dst_cols[] = {
		{"RULE", "rule", CTL_COL_TEXT, false},
		{"DESTINATION", "destination", CTL_COL_TEXT, false},
		{"SPEAKS", "speaks", CTL_COL_TEXT, false},
		{"EXPIRES", "expires_s", CTL_COL_SECONDS, false},
	};

	ctl_table(json_object_get(data, "rules"), cols,
		  (int)(sizeof(cols) / sizeof(cols[0])), "no intercept rules");
	ctl_table(json_object_get(data, "destinations"), dst_cols,
		  (int)(sizeof(dst_cols) / sizeof(dst_cols[0])),
		  "no destinations learned");
}

static void
ctl_show_conns(struct ctl_conn *conn, json_t *data)
{
	static const struct ctl_col cols[] = {
		{"ID", "id", CTL_COL_TEXT, false},
		{"W", "worker", CTL_COL_NUM, true},
		{"DIALECT", "dialect", CTL_COL_TEXT, false},
		{"TRANSPORT", "transport", CTL_COL_TEXT, false},
		{"MODE", "mode", CTL_COL_TEXT, true},
		{"ROLE", "role", CTL_COL_TEXT, false},
		{"RULE", "rule", CTL_COL_TEXT, false},
		{"EXPORT", "export", CTL_COL_TEXT, true},
		{"PEER", "peer", CTL_COL_TEXT, false},
		{"STATE", "state", CTL_COL_TEXT, false},
		{"DOWNSTREAM", "downstream", CTL_COL_TEXT, false},
		{"UPSTREAM", "upstream", CTL_COL_TEXT, true},
		{"BYTES-IN", "bytes_in", CTL_COL_NUM, false},
		{"BYTES-OUT", "bytes_out", CTL_COL_NUM, false},
		{"AGE", "age_s", CTL_COL_SECONDS, false},
		{"IDLE", "idle_s", CTL_COL_SECONDS, false},
	};

	ctl_table(json_object_get(data, "conns"), cols,
		  (int)(sizeof(cols) / sizeof(cols[0])), "no connections");
}

/* show smc: the kernel SMC-R peers' connections, as smcss lists them */
static void
ctl_show_smc(struct ctl_conn *conn, json_t *data)
{
	static const struct ctl_col cols[] = {
		{"ID", "id", CTL_COL_TEXT, false},
		{"W", "worker", CTL_COL_NUM, true},
		{"ROLE", "role", CTL_COL_TEXT, false},
		{"RULE", "rule", CTL_COL_TEXT, true},
		{"EXPORT", "export", CTL_COL_TEXT, true},
		{"STATE", "state", CTL_COL_TEXT, false},
		{"PEER-ADDRESS", "peer_address", CTL_COL_TEXT, false},
		{"TRANSPORT", "transport", CTL_COL_TEXT, false},
		{"DECLINE", "smc_decline", CTL_COL_TEXT, false},
		{"LGR", "lgr", CTL_COL_NUM, false},
		{"LINK", "link", CTL_COL_NUM, false},
		{"TOKEN", "token", CTL_COL_NUM, true},
		{"BYTES-IN", "bytes_in", CTL_COL_NUM, false},
		{"BYTES-OUT", "bytes_out", CTL_COL_NUM, false},
		{"AGE", "age_s", CTL_COL_SECONDS, false},
	};

	ctl_table(json_object_get(data, "conns"), cols,
		  (int)(sizeof(cols) / sizeof(cols[0])),
		  "no kernel SMC-R connections");
}

static void
ctl_show_schema(struct ctl_conn *conn, json_t *data)
{
	static const struct ctl_col cols[] = {
		{"STATISTIC", "name", CTL_COL_TEXT, false},
		{"KIND", "kind", CTL_COL_TEXT, false},
		{"UNIT", "unit", CTL_COL_TEXT, false},
		{"DESCRIPTION", "description", CTL_COL_TEXT, false},
	};

	ctl_table(json_object_get(data, "stats"), cols, 4, "no statistics");
	ctl_show_help(conn, data);
}

static void
ctl_show_help(struct ctl_conn *conn, json_t *data)
{
	static const struct ctl_col cols[] = {
		{"COMMAND", "usage", CTL_COL_TEXT, false},
		{"ACCESS", "access", CTL_COL_TEXT, false},
		{"DESCRIPTION", "help", CTL_COL_TEXT, false},
	};
	json_t *rows, *cmd, *a, *row;
	const char *name, *access;
	char *usage;
	size_t i, j, len;
	FILE *f;

	rows = json_array();
	json_array_foreach(json_object_get(data, "commands"), i, cmd) {
		/*
		 * "kill conn ID", "show conns [rule RULE]...": arguments in
		 * capitals, as in the man page, optional ones as KEY VALUE
		 * unless this program takes them bare ("stats [SECTION]")
		 */
		usage = NULL;
		f = open_memstream(&usage, &len);
		if (f == NULL)
			break;
		fputs(json_string_value(json_object_get(cmd, "name")), f);
		json_array_foreach(json_object_get(cmd, "args"), j, a) {
			name = json_string_value(json_object_get(a, "name"));
			if (json_is_true(json_object_get(a, "required")))
				fputc(' ', f);
			else if (ctl_bare_arg(json_string_value(json_object_get(
						      cmd, "name")),
					      name))
				fputs(" [", f);
			else
				fprintf(f, " [%s ", name != NULL ? name : "");
			for (; name != NULL && *name != '\0'; name++)
				fputc(toupper((unsigned char)*name), f);
			if (!json_is_true(json_object_get(a, "required")))
				fputc(']', f);
		}
		fclose(f);
		/* "access" since log-level, which reads and sets */
		access = json_string_value(json_object_get(cmd, "access"));
		if (access == NULL)
			access =
				json_is_true(json_object_get(cmd, "mutating")) ?
					"admin" :
					"read";
		row = json_pack("{s:s, s:s, s:O}", "usage", usage, "access",
				access, "help", json_object_get(cmd, "help"));
		json_array_append_new(rows, row);
		free(usage);
	}
	ctl_table(rows, cols, 3, "no commands");
	json_decref(rows);
}

/******** monitor ********/

/*
 * `monitor`: once the daemon said yes, print each event as it comes, one
 * line each ("TIME EVENT MESSAGE"; -j: the daemon's JSON lines as they
 * are, its answer first), with no timeout, until the daemon closes the
 * connection: after its shutdown event that is the end (0), otherwise
 * it went away or dropped us (1).
 */
static int
ctl_monitor(struct ctl_conn *conn, bool json)
{
	struct timeval forever = {0, 0};
	json_t *reply = NULL, *ev;
	const char *raw, *name;
	bool stopped = false;
	char *line;
	int rc;

	if (ctl_request(conn, "monitor", NULL, &reply, &raw) < 0)
		return CTL_EXIT_FAILED;
	if (json)
		printf("%s\n", raw);
	if (!json_is_true(json_object_get(reply, "ok"))) {
		if (!json)
			ctl_warnx("monitor: %s",
				  json_string_value(
					  json_object_get(reply, "error")));
		json_decref(reply);
		return CTL_EXIT_FAILED;
	}
	json_decref(reply);
	fflush(stdout);
	setsockopt(conn->fd, SOL_SOCKET, SO_RCVTIMEO, &forever,
		   sizeof(forever));
	while ((rc = ctl_read_line(conn, &line)) == 0) {
		ev = json_loads(line, 0, NULL);
		name = json_string_value(json_object_get(ev, "event"));
		if (name != NULL && strcmp(name, "shutdown") == 0)
			stopped = true;
		if (json)
			printf("%s\n", line);
		else if (name != NULL)
			printf("%s %-15s %s\n",
			       json_string_value(json_object_get(ev, "time")),
			       name,
			       json_string_value(
				       json_object_get(ev, "message")));
		else
			/* an error: the daemon ends the monitor */
			ctl_warnx("monitor: %s",
				  json_string_value(
					  json_object_get(ev, "error")));
		json_decref(ev);
		if (fflush(stdout) == EOF)
			return CTL_EXIT_FAILED;
	}
	if (rc == -ENODATA && stopped)
		return CTL_EXIT_OK;
	if (rc == -ENODATA)
		ctl_warnx("%s: connection closed by the daemon", conn->path);
	return CTL_EXIT_FAILED;
}

/******** Prometheus ********/

/*
 * The exposition itself is prom.c's, shared with the daemon's endpoint,
 * from the same commands' data: the same families.
 */
static int
ctl_prometheus(struct ctl_conn *conn, bool om)
{
	json_t *sreply = NULL, *reply[PROM_NCMDS] = {NULL}, *schema;
	const json_t *data[PROM_NCMDS];
	int i, rc = CTL_EXIT_FAILED;

	schema = json_object_get(ctl_call(conn, "schema", &sreply), "stats");
	if (schema == NULL)
		goto out;
	for (i = 0; i < PROM_NCMDS; i++) {
		data[i] = ctl_call(conn, prom_commands[i], &reply[i]);
		if (data[i] == NULL)
			goto out;
	}
	prom_write(stdout, schema, data, om);
	if (om)
		printf("# EOF\n");
	rc = CTL_EXIT_OK;
out:
	for (i = 0; i < PROM_NCMDS; i++)
		json_decref(reply[i]);
	json_decref(sreply);
	return rc;
}

/******** main ********/

/*
 * -o: the comma-separated column names; "all" for every column, a leading
 * '+' for the default set and then these.  0, or -1 after a message.
 */
static int
ctl_columns(const char *list)
{
	const char *p, *comma;

	if (*list == '+') {
		ctl_tab.plus = true;
		list++;
	}
	for (p = list; *p != '\0'; p = *comma != '\0' ? comma + 1 : comma) {
		comma = strchrnul(p, ',');
		if (comma == p)
			continue;
		if (comma - p == 3 && strncasecmp(p, "all", 3) == 0) {
			ctl_tab.all = true;
			continue;
		}
		if (ctl_tab.nocols == CTL_MAX_OCOLS) {
			ctl_warnx("-o: more than %d columns", CTL_MAX_OCOLS);
			return -1;
		}
		ctl_tab.ocols[ctl_tab.nocols] = strndup(p, (size_t)(comma - p));
		if (ctl_tab.ocols[ctl_tab.nocols++] == NULL) {
			ctl_warnx("out of memory");
			return -1;
		}
	}
	if (ctl_tab.nocols == 0 && !ctl_tab.all) {
		ctl_warnx("-o: no column named");
		return -1;
	}
	return 0;
}

/*
 * Print the command's answer: its tables into a buffer, written out only
 * when every -o name was a column of one of them.  0, or -1 after a
 * message naming the valid columns.
 */
static int
ctl_print(const struct ctl_cmd *cm, struct ctl_conn *conn, json_t *data)
{
	char *text = NULL;
	size_t len = 0;
	int o, rc = 0;

	ctl_tab.out = open_memstream(&text, &len);
	ctl_tab.validf = open_memstream(&ctl_tab.valid, &ctl_tab.valid_len);
	if (ctl_tab.out == NULL || ctl_tab.validf == NULL) {
		ctl_warnx("out of memory");
		return -1;
	}
	cm->show(conn, data);
	fclose(ctl_tab.out);
	fclose(ctl_tab.validf);
	for (o = 0; o < ctl_tab.nocols; o++) {
		if (ctl_tab.oused[o])
			continue;
		ctl_warnx("-o: unknown column \"%s\"; valid: %s",
			  ctl_tab.ocols[o],
			  ctl_tab.valid_len > 0 ? ctl_tab.valid : "none");
		rc = -1;
	}
	if (rc == 0)
		fwrite(text, 1, len, stdout);
	free(text);
	free(ctl_tab.valid);
	return rc;
}

/*
 * The KEY VALUE pairs of @cm in argv (argc words) as its JSON arguments
 * in *args.  0, or -1 after a message.
 */
static int
ctl_parse_keys(const struct ctl_cmd *cm, int argc, char **argv, json_t **args)
{
	const struct ctl_key *k;
	long long v;
	char *end;
	int i;

	*args = json_object();
	if (*args == NULL) {
		ctl_warnx("out of memory");
		return -1;
	}
	for (i = 0; i < argc; i += 2) {
		for (k = cm->keys; k->name != NULL; k++)
			if (strcmp(k->name, argv[i]) == 0)
				break;
		if (k->name == NULL) {
			fprintf(stderr,
				"%s: %s %s: unknown filter \"%s\"; valid:",
				ctl_progname, cm->words[0], cm->words[1],
				argv[i]);
			for (k = cm->keys; k->name != NULL; k++)
				fprintf(stderr, " %s", k->name);
			fputc('\n', stderr);
			return -1;
		}
		if (i + 1 == argc) {
			ctl_warnx("%s %s: \"%s\" needs a value", cm->words[0],
				  cm->words[1], k->name);
			return -1;
		}
		if (json_object_get(*args, k->name) != NULL) {
			ctl_warnx("%s %s: \"%s\" given twice", cm->words[0],
				  cm->words[1], k->name);
			return -1;
		}
		if (!k->seconds) {
			json_object_set_new(*args, k->name,
					    json_string(argv[i + 1]));
			continue;
		}
		errno = 0;
		v = strtoll(argv[i + 1], &end, 10);
		if (!isdigit((unsigned char)*argv[i + 1]) || *end != '\0' ||
		    errno != 0) {
			ctl_warnx("%s %s: %s %s: not a number of seconds",
				  cm->words[0], cm->words[1], k->name,
				  argv[i + 1]);
			return -1;
		}
		json_object_set_new(*args, k->name, json_integer(v));
	}
	if (cm->need_key && argc == 0) {
		ctl_warnx("\"%s %s\" needs a filter: rule NAME, peer NAME, "
			  "state STATE, transport rdma|tcp|fallback, dialect "
			  "native|smc-r or age SECONDS",
			  cm->words[0], cm->words[1]);
		return -1;
	}
	return 0;
}

/*
 * Match the command words against the table; on a mismatch say what would
 * have been valid.  Return: the command (its arguments in *args, NULL if
 * none), or NULL.
 */
static const struct ctl_cmd *
ctl_parse(int argc, char **argv, json_t **args)
{
	const struct ctl_cmd *cm, *bad_args = NULL;
	const char *valid[CTL_NCMDS];
	char argname[32];
	size_t i, nvalid = 0;
	int nwords;

	*args = NULL;
	for (i = 0; i < CTL_NCMDS; i++) {
		cm = &ctl_cmds[i];
		nwords = cm->words[1] != NULL ? 2 : 1;
		if (strcmp(argv[0], cm->words[0]) != 0)
			continue;
		if (nwords == 2 &&
		    (argc < 2 || strcmp(argv[1], cm->words[1]) != 0)) {
			valid[nvalid++] = cm->words[1];
			continue;
		}
		if (cm->keys != NULL)
			return ctl_parse_keys(cm, argc - nwords, argv + nwords,
					      args) == 0 ?
				       cm :
				       NULL;
		if (argc - nwords == (cm->arg != NULL ? 1 : 0) ||
		    (ctl_arg_optional(cm) && argc == nwords)) {
			if (cm->arg != NULL && argc > nwords)
				*args = json_pack("{s:s}", cm->arg,
						  argv[nwords]);
			return cm;
		}
		/* "stats reset x" is about "stats reset", not "stats";
		 * "check smc" about "check smc", not a peer called smc */
		if (bad_args == NULL || cm->words[1] != NULL)
			bad_args = cm;
		if (cm->words[1] != NULL)
			break;
	}
	/* "check" without its NAME is about "check", not "check smc" */
	if (bad_args != NULL &&
	    (bad_args->words[1] != NULL || nvalid == 0 ||
	     ctl_arg_optional(bad_args) || bad_args->arg != NULL)) {
		snprintf(argname, sizeof(argname), "%s",
			 bad_args->arg != NULL ? bad_args->arg : "");
		for (i = 0; argname[i] != '\0'; i++)
			argname[i] = (char)toupper((unsigned char)argname[i]);
		if (bad_args->arg != NULL)
			ctl_warnx("\"%s%s%s\" takes %s argument, %s",
				  bad_args->words[0],
				  bad_args->words[1] != NULL ? " " : "",
				  bad_args->words[1] != NULL ?
					  bad_args->words[1] :
					  "",
				  ctl_arg_optional(bad_args) ? "at most one" :
							       "one",
				  argname);
		else
			ctl_warnx("\"%s%s%s\" takes no argument",
				  bad_args->words[0],
				  bad_args->words[1] != NULL ? " " : "",
				  bad_args->words[1] != NULL ?
					  bad_args->words[1] :
					  "");
	} else if (nvalid > 0) {
		if (argc < 2)
			fprintf(stderr,
				"%s: %s: missing word; valid:", ctl_progname,
				argv[0]);
		else
			fprintf(stderr, "%s: %s: unknown word \"%s\"; valid:",
				ctl_progname, argv[0], argv[1]);
		for (i = 0; i < nvalid; i++)
			fprintf(stderr, " %s", valid[i]);
		fputc('\n', stderr);
	} else {
		ctl_warnx("unknown command \"%s\" (try \"%s -h\")", argv[0],
			  ctl_progname);
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"json", no_argument, NULL, 'j'},
		{"prometheus", no_argument, NULL, 'p'},
		{"openmetrics", no_argument, NULL, 'O'},
		{"socket", required_argument, NULL, 's'},
		{"config", required_argument, NULL, 'c'},
		{"timeout", required_argument, NULL, 't'},
		{"output", required_argument, NULL, 'o'},
		{"noheadings", no_argument, NULL, 'n'},
		{"raw", no_argument, NULL, 'r'},
		{"nonzero", no_argument, NULL, 'z'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	struct ctl_conn conn = {.path = CONTROL_SOCKET_DEFAULT, .fd = -1};
	enum ctl_fmt fmt = CTL_FMT_TEXT;
	const struct ctl_cmd *cm;
	json_t *reply = NULL, *args = NULL, *details, *d;
	const char *raw, *conf_path = NULL;
	char cmd[64], *end, sock[PATH_MAX];
	size_t i;
	int ch, rc = CTL_EXIT_USAGE;

	while ((ch = getopt_long(argc, argv, "c:hjno:prs:t:Vz", longopts,
				 NULL)) != -1) {
		switch (ch) {
		case 'o':
			if (ctl_columns(optarg) < 0)
				goto out;
			break;
		case 'n':
			ctl_tab.noheadings = true;
			break;
		case 'r':
			ctl_tab.raw = true;
			break;
		case 'z':
			ctl_nonzero = true;
			break;
		case 'j':
			fmt = CTL_FMT_JSON;
			break;
		case 'p':
			fmt = CTL_FMT_PROMETHEUS;
			break;
		case 'O':
			fmt = CTL_FMT_OPENMETRICS;
			break;
		case 's':
			conn.path = optarg;
			conf_path = NULL;
			break;
		case 'c':
			conf_path = optarg;
			break;
		case 't':
			ctl_timeout = (int)strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' ||
			    ctl_timeout < 0) {
				ctl_warnx("-t %s: not a number of seconds",
					  optarg);
				goto out;
			}
			break;
		case 'h':
			ctl_usage(stdout);
			rc = CTL_EXIT_OK;
			goto out;
		case 'V':
			printf("smcproxyctl %s\n", PACKAGE_VERSION);
			rc = CTL_EXIT_OK;
			goto out;
		default:
			ctl_usage(stderr);
			goto out;
		}
	}
	argc -= optind;
	argv += optind;
	if (conf_path != NULL) {
		ctl_conf_socket(conf_path, sock, sizeof(sock));
		conn.path = sock;
	}

	if (fmt == CTL_FMT_PROMETHEUS || fmt == CTL_FMT_OPENMETRICS) {
		if (argc > 1 || (argc == 1 && strcmp(argv[0], "stats") != 0)) {
			ctl_warnx("--prometheus only exports stats");
			goto out;
		}
		if (ctl_connect(&conn) < 0)
			goto out;
		rc = ctl_prometheus(&conn, fmt == CTL_FMT_OPENMETRICS);
		goto out;
	}
	if (argc == 0) {
		ctl_usage(stderr);
		goto out;
	}
	cm = ctl_parse(argc, argv, &args);
	if (cm == NULL)
		goto out;
	snprintf(cmd, sizeof(cmd), "%s%s%s", cm->words[0],
		 cm->words[1] != NULL ? " " : "",
		 cm->words[1] != NULL ? cm->words[1] : "");
	if (ctl_connect(&conn) < 0)
		goto out;
	if (cm->show == NULL) {
		rc = ctl_monitor(&conn, fmt == CTL_FMT_JSON);
		goto out;
	}
	rc = CTL_EXIT_FAILED;
	if (ctl_request(&conn, cmd, args, &reply, &raw) < 0)
		goto out;
	if (fmt == CTL_FMT_JSON)
		printf("%s\n", raw);
	if (!json_is_true(json_object_get(reply, "ok"))) {
		if (fmt == CTL_FMT_JSON)
			goto out;
		ctl_warnx("%s: %s", cmd,
			  json_string_value(json_object_get(reply, "error")));
		details = json_object_get(reply, "details");
		json_array_foreach(details, i, d)
			fprintf(stderr, "  %s\n", json_string_value(d));
		goto out;
	}
	if (fmt == CTL_FMT_TEXT &&
	    ctl_print(cm, &conn, json_object_get(reply, "data")) < 0) {
		rc = CTL_EXIT_USAGE;
		goto out;
	}
	rc = CTL_EXIT_OK;

out:
	json_decref(args);
	json_decref(reply);
	if (fflush(stdout) == EOF && rc == CTL_EXIT_OK) {
		ctl_warnx("stdout: %s", strerror(errno));
		rc = CTL_EXIT_FAILED;
	}
	if (conn.fd != -1)
		close(conn.fd);
	free(conn.buf);
	for (i = 0; i < (size_t)ctl_tab.nocols; i++)
		free(ctl_tab.ocols[i]);
	return rc;
}
