// SPDX-License-Identifier: BSD-2-Clause
/*
 * smcproxyctl: the operator's client for smcproxyd's control socket.  It
 * turns the command words into one JSON request line, reads the one reply
 * line, and prints it as aligned tables for people, as the raw reply for
 * scripts (-j), or as Prometheus text exposition (--prometheus) built from
 * the daemon's own stats schema.
 *
 * Exit status: 0 ok, 1 the daemon answered with an error (or none), 2 usage
 * error or no connection to the socket.
 */
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "smcproxyd.h"
#include "prom.h"

#define CTL_EXIT_OK 0
#define CTL_EXIT_FAILED 1
#define CTL_EXIT_USAGE 2
#define CTL_TIMEOUT 30 /* seconds to wait for a reply by default */
#define CTL_MAX_COLS 16

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

struct ctl_cmd {
	const char *words[2];
	const char *arg; /* name of the one argument, or NULL */
	void (*show)(struct ctl_conn *conn, json_t *data);
};

/* How one column of a table is rendered. */
enum ctl_col_type { CTL_COL_TEXT, CTL_COL_NUM, CTL_COL_SECONDS };

struct ctl_col {
	const char *head;
	const char *key;
	enum ctl_col_type type;
};

static const char *ctl_progname = "smcproxyctl";
static int ctl_timeout = CTL_TIMEOUT;

static void ctl_show_kv(struct ctl_conn *conn, json_t *data);
static void ctl_show_stats(struct ctl_conn *conn, json_t *data);
static void ctl_show_done(struct ctl_conn *conn, json_t *data);
static void ctl_show_rules(struct ctl_conn *conn, json_t *data);
static void ctl_show_peers(struct ctl_conn *conn, json_t *data);
static void ctl_show_lgrs(struct ctl_conn *conn, json_t *data);
static void ctl_show_links(struct ctl_conn *conn, json_t *data);
static void ctl_show_conns(struct ctl_conn *conn, json_t *data);
static void ctl_show_schema(struct ctl_conn *conn, json_t *data);
static void ctl_show_help(struct ctl_conn *conn, json_t *data);

static const struct ctl_cmd ctl_cmds[] = {
	{{"version", NULL}, NULL, ctl_show_kv},
	{{"stats", NULL}, NULL, ctl_show_stats},
	{{"stats", "reset"}, NULL, ctl_show_done},
	{{"show", "rules"}, NULL, ctl_show_rules},
	{{"show", "peers"}, NULL, ctl_show_peers},
	{{"show", "lgrs"}, NULL, ctl_show_lgrs},
	{{"show", "links"}, NULL, ctl_show_links},
	{{"show", "conns"}, NULL, ctl_show_conns},
	{{"kill", "conn"}, "id", ctl_show_done},
	{{"reload", NULL}, NULL, ctl_show_done},
	{{"schema", NULL}, NULL, ctl_show_schema},
	{{"help", NULL}, NULL, ctl_show_help},
};

#define CTL_NCMDS (sizeof(ctl_cmds) / sizeof(ctl_cmds[0]))

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
		"usage: %s [-j | --prometheus | --openmetrics] [-s socket] [-t seconds] "
		"command [argument]\n"
		"       %s --version\n"
		"commands:\n"
		"  version                 daemon version and uptime\n"
		"  stats                   counters and gauges\n"
		"  stats reset             set counters back to zero\n"
		"  show rules              rules and exports\n"
		"  show peers              peers and their transport\n"
		"  show lgrs | show links  RDMA link groups and links\n"
		"  show conns              proxied connections\n"
		"  kill conn ID            close one connection\n"
		"  reload                  re-read the configuration\n"
		"  schema | help           describe stats and commands\n"
		"default socket: %s\n",
		ctl_progname, ctl_progname, CONTROL_SOCKET_DEFAULT);
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
 * Send one request and read its reply line.  Return: 0 with the reply in
 * *reply and its text in *raw (valid until the next request), or -1 after
 * a message.
 */
static int
ctl_request(struct ctl_conn *conn, const char *cmd, const char *argname,
	    const char *arg, json_t **reply, const char **raw)
{
	json_error_t jerr;
	json_t *req;
	char *line, *nl, *p;
	size_t left, len;
	int send_err = 0;
	ssize_t n;

	req = json_pack("{s:i, s:s}", "v", CONTROL_VERSION, "cmd", cmd);
	if (req != NULL && argname != NULL)
		json_object_set_new(req, "args",
				    json_pack("{s:s}", argname, arg));
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

	/* drop the previous reply */
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
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			ctl_warnx("%s: no reply within %d s", conn->path,
				  ctl_timeout);
			return -1;
		}
		if (n <= 0 && send_err) {
			ctl_warnx("%s: send: %s", conn->path,
				  strerror(send_err));
			return -1;
		}
		if (n <= 0) {
			ctl_warnx("%s: %s", conn->path,
				  n == 0 ? "connection closed by the daemon" :
					   strerror(errno));
			return -1;
		}
		conn->len += (size_t)n;
	}
	*nl = '\0';
	conn->used = (size_t)(nl - conn->buf) + 1;
	*raw = conn->buf;
	*reply = json_loads(conn->buf, 0, &jerr);
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
	if (ctl_request(conn, cmd, NULL, NULL, reply, &raw) < 0)
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
		json_array_foreach(v, i, e)
		{
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

/*
 * Print @rows (an array of objects) as a table with aligned columns:
 * numbers right-aligned, text left-aligned, two spaces between columns.
 */
static void
ctl_table(const json_t *rows, const struct ctl_col *cols, int ncols)
{
	size_t nrows = json_array_size(rows), r;
	int w[CTL_MAX_COLS], c, pad;
	char **cells;
	const char *s;

	cells = calloc((nrows + 1) * (size_t)ncols, sizeof(*cells));
	if (cells == NULL)
		return;
	for (c = 0; c < ncols; c++) {
		cells[c] = strdup(cols[c].head);
		w[c] = (int)strlen(cols[c].head);
	}
	for (r = 0; r < nrows; r++) {
		for (c = 0; c < ncols; c++) {
			cells[(r + 1) * ncols + c] = ctl_cell(
				json_object_get(json_array_get(rows, r),
						cols[c].key),
				cols[c].type);
			if (cells[(r + 1) * ncols + c] != NULL &&
			    (int)strlen(cells[(r + 1) * ncols + c]) > w[c])
				w[c] = (int)strlen(cells[(r + 1) * ncols + c]);
		}
	}
	for (r = 0; r <= nrows; r++) {
		for (c = 0; c < ncols; c++) {
			s = cells[r * ncols + c];
			if (cols[c].type != CTL_COL_TEXT)
				pad = w[c]; /* right-aligned */
			else if (c < ncols - 1)
				pad = -w[c];
			else
				pad = 0; /* no trailing blanks */
			printf("%*s%s", pad, s != NULL ? s : "-",
			       c < ncols - 1 ? "  " : "\n");
		}
	}
	for (r = 0; r < (nrows + 1) * (size_t)ncols; r++)
		free(cells[r]);
	free(cells);
}

/* A table of whatever scalar members the first row has. */
static void
ctl_table_auto(const json_t *rows)
{
	struct ctl_col cols[CTL_MAX_COLS];
	const char *key;
	json_t *v;
	int n = 0;

	json_object_foreach(json_array_get(rows, 0), key, v)
	{
		if (n == CTL_MAX_COLS || json_is_object(v))
			continue;
		cols[n].head = key;
		cols[n].key = key;
		cols[n].type = json_is_number(v) ? CTL_COL_NUM : CTL_COL_TEXT;
		n++;
	}
	ctl_table(rows, cols, n);
}

/* Members named *_s are durations in seconds. */
static enum ctl_col_type
ctl_key_type(const char *key)
{
	size_t len = strlen(key);

	return len > 2 && strcmp(key + len - 2, "_s") == 0 ? CTL_COL_SECONDS :
							     CTL_COL_TEXT;
}

static void
ctl_show_kv(struct ctl_conn *conn, json_t *data)
{
	const char *key;
	json_t *v;
	char *s;

	json_object_foreach(data, key, v)
	{
		s = ctl_cell(v, ctl_key_type(key));
		printf("%-10s %s\n", key, s != NULL ? s : "-");
		free(s);
	}
}

static void
ctl_show_done(struct ctl_conn *conn, json_t *data)
{
}

static void
ctl_show_stats(struct ctl_conn *conn, json_t *data)
{
	static const struct ctl_col cols[] = {
		{"STATISTIC", "name", CTL_COL_TEXT},
		{"VALUE", "value", CTL_COL_NUM},
		{"UNIT", "unit", CTL_COL_TEXT},
		{"DESCRIPTION", "description", CTL_COL_TEXT},
	};
	json_t *stats = json_object_get(data, "stats");
	json_t *reply = NULL, *schema, *rows, *e;
	char up[32], since[32];
	size_t i;

	ctl_seconds(up, sizeof(up), json_object_get(data, "uptime_s"));
	ctl_seconds(since, sizeof(since),
		    json_object_get(data, "since_reset_s"));
	printf("%lld workers, up %s, counters cover the last %s\n\n",
	       (long long)json_integer_value(json_object_get(data, "workers")),
	       up, since);

	/* units and descriptions come from the schema */
	schema = json_object_get(ctl_call(conn, "schema", &reply), "stats");
	rows = json_array();
	json_array_foreach(schema, i, e)
	{
		json_object_set(
			e, "value",
			json_object_get(
				stats,
				json_string_value(json_object_get(e, "name"))));
		json_array_append(rows, e);
	}
	if (json_array_size(rows) == 0) {
		const char *key;
		json_t *v;

		json_object_foreach(stats, key, v) json_array_append_new(
			rows, json_pack("{s:s, s:O}", "name", key, "value", v));
	}
	ctl_table(rows, cols, 4);
	json_decref(rows);
	json_decref(reply);
}

static void
ctl_show_rules(struct ctl_conn *conn, json_t *data)
{
	static const struct ctl_col rule_cols[] = {
		{"RULE", "name", CTL_COL_TEXT},
		{"LISTEN", "listen", CTL_COL_TEXT},
		{"PEER", "peer", CTL_COL_TEXT},
		{"EXPORT", "export", CTL_COL_TEXT},
		{"IDLE-TIMEOUT", "idle_timeout_s", CTL_COL_NUM},
		{"CONNS", "conns", CTL_COL_NUM},
	};
	static const struct ctl_col export_cols[] = {
		{"EXPORT", "name", CTL_COL_TEXT},
		{"TARGET", "target", CTL_COL_TEXT},
		{"CONNECT-TIMEOUT", "connect_timeout_s", CTL_COL_NUM},
		{"CONNS", "conns", CTL_COL_NUM},
		{"PEERS", "peers", CTL_COL_TEXT},
	};
	json_t *rules = json_object_get(data, "rules");
	json_t *exports = json_object_get(data, "exports");

	if (json_array_size(rules) > 0)
		ctl_table(rules, rule_cols, 6);
	else
		printf("no rules\n");
	printf("\n");
	if (json_array_size(exports) > 0)
		ctl_table(exports, export_cols, 5);
	else
		printf("no exports\n");
}

static void
ctl_show_peers(struct ctl_conn *conn, json_t *data)
{
	static const struct ctl_col cols[] = {
		{"PEER", "name", CTL_COL_TEXT},
		{"ADDRESS", "address", CTL_COL_TEXT},
		{"AUTH", "auth", CTL_COL_TEXT},
		{"MODE", "mode", CTL_COL_TEXT},
		{"CONNS", "conns", CTL_COL_NUM},
		{"DECLINE", "decline_name", CTL_COL_TEXT},
		{"CODE", "decline_code", CTL_COL_TEXT},
		{"REASON", "fallback_reason", CTL_COL_TEXT},
	};
	json_t *peers = json_object_get(data, "peers");

	if (json_array_size(peers) > 0)
		ctl_table(peers, cols, 8);
	else
		printf("no peers\n");
}

static void
ctl_show_lgrs(struct ctl_conn *conn, json_t *data)
{
	json_t *lgrs = json_object_get(data, "lgrs");

	if (json_array_size(lgrs) > 0)
		ctl_table_auto(lgrs);
	else
		printf("no link groups\n");
}

static void
ctl_show_links(struct ctl_conn *conn, json_t *data)
{
	json_t *links = json_object_get(data, "links");

	if (json_array_size(links) > 0)
		ctl_table_auto(links);
	else
		printf("no links\n");
}

static void
ctl_show_conns(struct ctl_conn *conn, json_t *data)
{
	static const struct ctl_col cols[] = {
		{"ID", "id", CTL_COL_TEXT},
		{"W", "worker", CTL_COL_NUM},
		{"MODE", "mode", CTL_COL_TEXT},
		{"ROLE", "role", CTL_COL_TEXT},
		{"RULE", "rule", CTL_COL_TEXT},
		{"EXPORT", "export", CTL_COL_TEXT},
		{"PEER", "peer", CTL_COL_TEXT},
		{"STATE", "state", CTL_COL_TEXT},
		{"DOWNSTREAM", "downstream", CTL_COL_TEXT},
		{"UPSTREAM", "upstream", CTL_COL_TEXT},
		{"BYTES-IN", "bytes_in", CTL_COL_NUM},
		{"BYTES-OUT", "bytes_out", CTL_COL_NUM},
		{"AGE", "age_s", CTL_COL_SECONDS},
		{"IDLE", "idle_s", CTL_COL_SECONDS},
	};
	json_t *conns = json_object_get(data, "conns");

	if (json_array_size(conns) > 0)
		ctl_table(conns, cols, 14);
	else
		printf("no connections\n");
}

static void
ctl_show_schema(struct ctl_conn *conn, json_t *data)
{
	static const struct ctl_col cols[] = {
		{"STATISTIC", "name", CTL_COL_TEXT},
		{"KIND", "kind", CTL_COL_TEXT},
		{"UNIT", "unit", CTL_COL_TEXT},
		{"DESCRIPTION", "description", CTL_COL_TEXT},
	};

	ctl_table(json_object_get(data, "stats"), cols, 4);
	printf("\n");
	ctl_show_help(conn, data);
}

static void
ctl_show_help(struct ctl_conn *conn, json_t *data)
{
	static const struct ctl_col cols[] = {
		{"COMMAND", "usage", CTL_COL_TEXT},
		{"ACCESS", "access", CTL_COL_TEXT},
		{"DESCRIPTION", "help", CTL_COL_TEXT},
	};
	json_t *rows, *cmd, *a, *row;
	const char *name;
	char *usage;
	size_t i, j, len;
	FILE *f;

	rows = json_array();
	json_array_foreach(json_object_get(data, "commands"), i, cmd)
	{
		/* "kill conn ID": arguments in capitals, as in the man page */
		usage = NULL;
		f = open_memstream(&usage, &len);
		if (f == NULL)
			break;
		fputs(json_string_value(json_object_get(cmd, "name")), f);
		json_array_foreach(json_object_get(cmd, "args"), j, a)
		{
			fputc(' ', f);
			for (name = json_string_value(
				     json_object_get(a, "name"));
			     name != NULL && *name != '\0'; name++)
				fputc(toupper((unsigned char)*name), f);
		}
		fclose(f);
		row = json_pack("{s:s, s:s, s:O}", "usage", usage, "access",
				json_is_true(json_object_get(cmd, "mutating")) ?
					"admin" :
					"read",
				"help", json_object_get(cmd, "help"));
		json_array_append_new(rows, row);
		free(usage);
	}
	ctl_table(rows, cols, 3);
	json_decref(rows);
}

/******** Prometheus ********/

/* The exposition itself is prom.c's, shared with the daemon's endpoint. */
static int
ctl_prometheus(struct ctl_conn *conn, bool om)
{
	json_t *sreply = NULL, *dreply = NULL, *vreply = NULL, *schema, *data;
	json_t *stats, *totals;

	schema = json_object_get(ctl_call(conn, "schema", &sreply), "stats");
	if (schema == NULL)
		return CTL_EXIT_FAILED;
	data = ctl_call(conn, "stats", &dreply);
	stats = json_object_get(data, "stats");
	if (stats == NULL) {
		json_decref(sreply);
		return CTL_EXIT_FAILED;
	}
	totals = json_object_get(data, "totals");
	if (totals == NULL)
		totals = stats;
	prom_stats(stdout, schema, stats, totals,
		   json_string_value(json_object_get(
			   ctl_call(conn, "version", &vreply), "version")),
		   om);
	if (om)
		printf("# EOF\n");
	json_decref(vreply);
	json_decref(sreply);
	json_decref(dreply);
	return CTL_EXIT_OK;
}

/******** main ********/

/*
 * Match the command words against the table; on a mismatch say what would
 * have been valid.  Return: the command (its argument in *arg), or NULL.
 */
static const struct ctl_cmd *
ctl_parse(int argc, char **argv, const char **arg)
{
	const struct ctl_cmd *cm, *bad_args = NULL;
	const char *valid[CTL_NCMDS];
	size_t i, nvalid = 0;
	int nwords;

	*arg = NULL;
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
		if (argc - nwords == (cm->arg != NULL ? 1 : 0)) {
			*arg = cm->arg != NULL ? argv[nwords] : NULL;
			return cm;
		}
		bad_args = cm;
	}
	if (bad_args != NULL && (bad_args->words[1] != NULL || nvalid == 0)) {
		ctl_warnx("\"%s%s%s\" takes %s", bad_args->words[0],
			  bad_args->words[1] != NULL ? " " : "",
			  bad_args->words[1] != NULL ? bad_args->words[1] : "",
			  bad_args->arg != NULL ? "one argument, ID" :
						  "no argument");
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
		{"timeout", required_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	struct ctl_conn conn = {.path = CONTROL_SOCKET_DEFAULT, .fd = -1};
	enum ctl_fmt fmt = CTL_FMT_TEXT;
	const struct ctl_cmd *cm;
	const char *arg;
	json_t *reply = NULL, *details, *d;
	const char *raw;
	char cmd[64], *end;
	size_t i;
	int ch, rc = CTL_EXIT_USAGE;

	while ((ch = getopt_long(argc, argv, "hjps:t:V", longopts, NULL)) !=
	       -1) {
		switch (ch) {
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
			break;
		case 't':
			ctl_timeout = (int)strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' ||
			    ctl_timeout < 0) {
				ctl_warnx("-t %s: not a number of seconds",
					  optarg);
				return CTL_EXIT_USAGE;
			}
			break;
		case 'h':
			ctl_usage(stdout);
			return CTL_EXIT_OK;
		case 'V':
			printf("smcproxyctl %s\n", PACKAGE_VERSION);
			return CTL_EXIT_OK;
		default:
			ctl_usage(stderr);
			return CTL_EXIT_USAGE;
		}
	}
	argc -= optind;
	argv += optind;

	if (fmt == CTL_FMT_PROMETHEUS || fmt == CTL_FMT_OPENMETRICS) {
		if (argc > 1 || (argc == 1 && strcmp(argv[0], "stats") != 0)) {
			ctl_warnx("--prometheus only exports stats");
			return CTL_EXIT_USAGE;
		}
		if (ctl_connect(&conn) < 0)
			return CTL_EXIT_USAGE;
		rc = ctl_prometheus(&conn, fmt == CTL_FMT_OPENMETRICS);
		goto out;
	}
	if (argc == 0) {
		ctl_usage(stderr);
		return CTL_EXIT_USAGE;
	}
	cm = ctl_parse(argc, argv, &arg);
	if (cm == NULL)
		return CTL_EXIT_USAGE;
	snprintf(cmd, sizeof(cmd), "%s%s%s", cm->words[0],
		 cm->words[1] != NULL ? " " : "",
		 cm->words[1] != NULL ? cm->words[1] : "");
	if (ctl_connect(&conn) < 0)
		return CTL_EXIT_USAGE;
	rc = CTL_EXIT_FAILED;
	if (ctl_request(&conn, cmd, cm->arg, arg, &reply, &raw) < 0)
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
	if (fmt == CTL_FMT_TEXT)
		cm->show(&conn, json_object_get(reply, "data"));
	rc = CTL_EXIT_OK;

out:
	json_decref(reply);
	if (fflush(stdout) == EOF && rc == CTL_EXIT_OK) {
		ctl_warnx("stdout: %s", strerror(errno));
		rc = CTL_EXIT_FAILED;
	}
	if (conn.fd != -1)
		close(conn.fd);
	free(conn.buf);
	return rc;
}
