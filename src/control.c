// SPDX-License-Identifier: BSD-2-Clause
/*
 * The control socket (DESIGN §6): a UNIX stream socket on the main thread's
 * event_base speaking one JSON object per line, {"v":1,"cmd":"stats"} ->
 * {"v":1,"ok":true,"data":{...}} or {"v":1,"ok":false,"error":"..."}.
 *
 * Every request gets exactly one reply line, in order, and a bad request
 * (too long, not JSON, unknown command, wrong argument) only gets an error
 * reply: the connection stays usable.  Clients never block the daemon:
 * sockets are non-blocking bufferevents, a client whose unsent output passes
 * CONTROL_OUT_MAX is not read from until it has taken it, and idle or stuck
 * clients are dropped on timeouts.  Large answers (show conns) are rendered
 * piece by piece as the client takes them (CONTROL_LISTING_OUT at a time),
 * so no fixed buffer limits them and one that does not read costs little.
 *
 * Any user who can open the socket is a client, so none may hold it: a uid
 * has at most CONTROL_MAX_PER_UID of the slots and all such users together
 * CONTROL_MAX_CLIENTS - CONTROL_RESERVED, the rest being kept for root and
 * the daemon's own user (who could stop the daemon anyway).  Deadlines run
 * from fixed points, so trickling bytes does not push them back: a
 * connection ends CONTROL_IDLE_TIMEOUT after its last request, a request
 * line must be complete CONTROL_LINE_TIMEOUT after its first byte, and a
 * reply must be taken CONTROL_WRITE_TIMEOUT after it was written.  Listings
 * of sessions are gathered CONTROL_CHUNK at a time per worker_call(), so
 * no listing holds a worker's data path for more than that many sessions.
 *
 * Commands come from one table (name, flags, arguments, handler, help);
 * "help" and "schema" are generated from it.  Mutating commands need the
 * peer's credentials (SO_PEERCRED) to be root, the daemon's user, or the
 * configuration's control_uid / control_gid; they are logged with who ran
 * them and raised as monitor events.  A client that says `monitor` is
 * handed over to monitor.c once answered, and leaves its slot here.
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <jansson.h>

#include "smcproxyd.h"
#include "clc_wire.h"
#include "monitor.h"

#define CONTROL_OUT_MAX (256 * 1024) /* unsent bytes before we stop reading */
#define CONTROL_IDLE_TIMEOUT 60	     /* seconds after the last request */
#define CONTROL_LINE_TIMEOUT 10	     /* seconds to complete a request line */
#define CONTROL_WRITE_TIMEOUT 30     /* seconds to take a reply */
#define CONTROL_MAX_CLIENTS 64
#define CONTROL_RESERVED 8     /* slots only root and the daemon's user get */
#define CONTROL_MAX_PER_UID 16 /* for any other uid */
#define CONTROL_BACKLOG 16
#define CONTROL_CHUNK 256 /* sessions gathered per worker_call() */
#define CONTROL_LISTING_OUT (64 * 1024) /* a listing's output rendered ahead */
#define CONTROL_CHECK_TIMEOUT 15	/* seconds: check PEER gives up */
#define CONTROL_CHECK_POLL_MS 10	/* how often a check is stepped */

/* Why peers fall back to TCP until the RDMA transport lands. */
#define CONTROL_FALLBACK_REASON "no link group tried yet"

struct control_listing;
struct control_check;
struct control_client;

struct control_client {
	TAILQ_ENTRY(control_client) cc_entry;
	struct bufferevent *cc_bev;
	pid_t cc_pid;
	uid_t cc_uid;
	gid_t cc_gid;
	gid_t *cc_groups; /* supplementary groups (SO_PEERGROUPS) */
	int cc_ngroups;
	bool cc_discard; /* dropping the rest of an oversized line */
	bool cc_eof;	 /* the client will send nothing more */
	struct event *cc_deadline;
	int64_t cc_request_ms; /* accepted, or the last request read */
	int64_t cc_line_ms;    /* the pending partial line began; 0: none */
	int64_t cc_reply_ms;   /* unsent output since; 0: none */
	struct control_listing *cc_listing; /* show conns, being rendered */
	struct control_check *cc_check;	    /* check PEER, under way */
	bool cc_monitor; /* said `monitor`: monitor.c's once answered */
};

TAILQ_HEAD(control_clients, control_client);

enum control_arg_type {
	CONTROL_ARG_ID,	    /* an integer or a string ("0x1f") */
	CONTROL_ARG_NAME,   /* a string */
	CONTROL_ARG_SECONDS /* a non-negative integer, or one as a string */
};

struct control_arg {
	const char *ca_name;
	enum control_arg_type ca_type;
	bool ca_required;
};

struct control_req;

#define CONTROL_MUTATING 0x1
#define CONTROL_RUNNING 0x2 /* refused while the daemon stops */
#define CONTROL_SETS 0x4    /* mutating when given an argument */
#define CONTROL_ADMIN 0x8   /* changes nothing, but only for admins */

struct control_cmd {
	const char *cm_name;
	unsigned int cm_flags;
	const struct control_arg *cm_args; /* NULL or {NULL}-terminated */
	json_t *(*cm_fn)(struct control_req *req);
	const char *cm_help;
};

/*
 * One request being answered.  A handler returns its data (the reply is
 * then written for it), or NULL after control_fail(), or NULL after having
 * written the whole reply itself (cr_sent).
 */
struct control_req {
	struct control_client *cr_client;
	const struct control_cmd *cr_cmd;
	json_t *cr_args;
	struct evbuffer *cr_out;
	char *cr_error;
	json_t *cr_details;
	bool cr_sent;
};

static struct event_base *control_base;
static struct evconnlistener *control_listener;
static struct event *control_resume_ev; /* accept paused on EMFILE */
static struct control_clients control_clients =
	TAILQ_HEAD_INITIALIZER(control_clients);
static int control_nclients;
static char control_path[sizeof(((struct sockaddr_un *)NULL)->sun_path)];
static dev_t control_dev;
static ino_t control_ino;
static const struct conf *control_conf;
static struct timespec control_started;
static double control_start_time; /* the same, in seconds since the epoch */
static bool control_is_stopping;

static json_t *control_cmd_version(struct control_req *req);
static json_t *control_cmd_stats(struct control_req *req);
static json_t *control_cmd_stats_reset(struct control_req *req);
static json_t *control_cmd_rules(struct control_req *req);
static json_t *control_cmd_peers(struct control_req *req);
static json_t *control_cmd_lgrs(struct control_req *req);
static json_t *control_cmd_links(struct control_req *req);
static json_t *control_cmd_intercept(struct control_req *req);
static json_t *control_cmd_conns(struct control_req *req);
static json_t *control_cmd_smc(struct control_req *req);
static json_t *control_cmd_kill(struct control_req *req);
static json_t *control_cmd_kill_conns(struct control_req *req);
static json_t *control_cmd_rule_enable(struct control_req *req);
static json_t *control_cmd_peer_drain(struct control_req *req);
static json_t *control_cmd_check(struct control_req *req);
static json_t *control_cmd_check_smc(struct control_req *req);
static json_t *control_cmd_check_export(struct control_req *req);
static json_t *control_cmd_shutdown(struct control_req *req);
static json_t *control_cmd_reload(struct control_req *req);
static json_t *control_cmd_log_level(struct control_req *req);
static json_t *control_cmd_monitor(struct control_req *req);
static json_t *control_cmd_schema(struct control_req *req);
static json_t *control_cmd_help(struct control_req *req);

static const struct control_arg control_kill_args[] = {
	{"id", CONTROL_ARG_ID, true},
	{NULL, CONTROL_ARG_ID, false},
};

static const struct control_arg control_name_args[] = {
	{"name", CONTROL_ARG_NAME, true},
	{NULL, CONTROL_ARG_ID, false},
};

static const struct control_arg control_address_args[] = {
	{"address", CONTROL_ARG_NAME, true},
	{NULL, CONTROL_ARG_ID, false},
};

static const struct control_arg control_level_args[] = {
	{"level", CONTROL_ARG_NAME, false},
	{NULL, CONTROL_ARG_ID, false},
};

/* Which connections `show conns` lists and `kill conns` closes. */
static const struct control_arg control_filter_args[] = {
	{"rule", CONTROL_ARG_NAME, false},
	{"peer", CONTROL_ARG_NAME, false},
	{"state", CONTROL_ARG_NAME, false},
	{"transport", CONTROL_ARG_NAME, false},
	{"age", CONTROL_ARG_SECONDS, false},
	{"dialect", CONTROL_ARG_NAME, false},
	{NULL, CONTROL_ARG_ID, false},
};

/* `stats SECTION`: the statistics whose names begin with its words. */
static const struct control_arg control_stats_args[] = {
	{"section", CONTROL_ARG_NAME, false},
	{NULL, CONTROL_ARG_ID, false},
};

static const struct control_cmd control_cmds[] = {
	{"version", 0, NULL, control_cmd_version,
	 "daemon version, protocol version, pid and uptime"},
	{"stats", 0, control_stats_args, control_cmd_stats,
	 "counters (since the last reset) and gauges; only those of a "
	 "section (smc, conns, close, ...), if given"},
	{"stats reset", CONTROL_MUTATING, NULL, control_cmd_stats_reset,
	 "set every counter back to zero; gauges keep their value"},
	{"show rules", 0, NULL, control_cmd_rules,
	 "rules and exports of the running configuration, and whether "
	 "kernel SMC-R peers can have SMC-R on them"},
	{"show peers", 0, NULL, control_cmd_peers,
	 "peers, the transport used to reach each and why; the kernel "
	 "SMC-R hosts seen, their groups, last decline and budget"},
	{"show intercept", 0, NULL, control_cmd_intercept,
	 "intercept rules: the connects taken, carried over SMC-R or TCP, "
	 "bypassed; the destinations learned (SMC-R or TCP) and when each "
	 "is forgotten"},
	{"show lgrs", 0, NULL, control_cmd_lgrs, "RDMA link groups"},
	{"show links", 0, NULL, control_cmd_links, "RDMA links"},
	{"show conns", 0, control_filter_args, control_cmd_conns,
	 "proxied connections, one object each; only those of a rule, peer,"
	 " state, transport, dialect, at least age seconds old, if given"},
	{"show smc", 0, control_filter_args, control_cmd_smc,
	 "the connections of kernel SMC-R peers (show conns dialect smc-r), "
	 "as smcss lists a host's SMC sockets"},
	{"kill conn", CONTROL_MUTATING, control_kill_args, control_cmd_kill,
	 "close connection ID (reason admin_kill)"},
	{"kill conns", CONTROL_MUTATING, control_filter_args,
	 control_cmd_kill_conns,
	 "close the connections of a rule, peer, state, transport, dialect,"
	 " at least age seconds old (reason admin_kill)"},
	{"disable rule", CONTROL_MUTATING | CONTROL_RUNNING, control_name_args,
	 control_cmd_rule_enable,
	 "stop accepting for rule NAME (its listeners close); its open "
	 "connections go on"},
	{"enable rule", CONTROL_MUTATING | CONTROL_RUNNING, control_name_args,
	 control_cmd_rule_enable, "accept for rule NAME again"},
	{"drain peer", CONTROL_MUTATING | CONTROL_RUNNING, control_name_args,
	 control_cmd_peer_drain,
	 "no new connections to peer NAME (the listeners of its rules "
	 "close); open ones finish"},
	{"undrain peer", CONTROL_MUTATING | CONTROL_RUNNING, control_name_args,
	 control_cmd_peer_drain, "accept connections to peer NAME again"},
	{"enable peer", CONTROL_MUTATING | CONTROL_RUNNING, control_name_args,
	 control_cmd_peer_drain, "the same as undrain peer"},
	{"check smc", CONTROL_ADMIN | CONTROL_RUNNING, control_address_args,
	 control_cmd_check_smc,
	 "probe the kernel SMC-R server at ADDRESS now, as smc_chk -C does: "
	 "the SMC-R option on our SYN, a PROPOSAL, its ACCEPT (ended by our "
	 "DECLINE) or DECLINE and code"},
	{"check export", CONTROL_ADMIN | CONTROL_RUNNING, control_name_args,
	 control_cmd_check_export,
	 "whether kernel SMC-R clients can have SMC-R at export NAME's "
	 "smc_listen, as smc_chk -S: the option's program, EIDs, allow "
	 "list, devices"},
	{"check", CONTROL_ADMIN | CONTROL_RUNNING, control_name_args,
	 control_cmd_check,
	 "test the path to peer NAME now, each stage: its port, its key, "
	 "each export its rules open, the transport (a TEST_LINK round trip "
	 "over RDMA, or the fallback and why); ok, or the stage that "
	 "fails"},
	{"reload", CONTROL_MUTATING | CONTROL_RUNNING, NULL, control_cmd_reload,
	 "re-read the configuration file; keeps the old one on errors"},
	{"shutdown", CONTROL_MUTATING, NULL, control_cmd_shutdown,
	 "stop as SIGTERM does: accept nothing more, let open connections "
	 "finish within shutdown_timeout"},
	{"shutdown now", CONTROL_MUTATING, NULL, control_cmd_shutdown,
	 "stop, closing the open connections now (also cuts a drain short)"},
	{"log-level", CONTROL_SETS, control_level_args, control_cmd_log_level,
	 "the least severe message logged (error, warning, info, debug); "
	 "with LEVEL, set it until the next reload or restart, which go "
	 "back to the configuration's log_level"},
	{"monitor", 0, NULL, control_cmd_monitor,
	 "from now on, one line per event (peers, links, link groups, "
	 "reloads, admin commands, shutdown) until the connection closes"},
	{"schema", 0, NULL, control_cmd_schema,
	 "describe every statistic and command"},
	{"help", 0, NULL, control_cmd_help, "list the commands"},
};

#define CONTROL_NCMDS (sizeof(control_cmds) / sizeof(control_cmds[0]))

/******** replies ********/

static int
control_dump_cb(const char *buf, size_t len, void *arg)
{
	return evbuffer_add(arg, buf, len);
}

/* Append @j as compact JSON; the caller adds the newline. */
static int
control_dump(struct evbuffer *out, const json_t *j)
{
	return json_dump_callback(j, control_dump_cb, out, JSON_COMPACT);
}

/* A JSON string from text that may not be UTF-8 (config file excerpts). */
static json_t *
control_text(const char *s)
{
	json_t *j;
	char *copy, *p;

	j = json_string(s);
	if (j != NULL)
		return j;
	copy = strdup(s);
	if (copy == NULL)
		return NULL;
	for (p = copy; *p != '\0'; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	j = json_string(copy);
	free(copy);
	return j;
}

/* Write a reply object (stolen) and its newline. */
static void
control_send(struct evbuffer *out, json_t *reply)
{
	if (reply == NULL || control_dump(out, reply) == -1) {
		/* a fixed reply, so the client still gets one line */
		evbuffer_add_printf(out,
				    "{\"v\":%d,\"ok\":false,"
				    "\"error\":\"out of memory\"}",
				    CONTROL_VERSION);
	}
	evbuffer_add(out, "\n", 1);
	json_decref(reply);
}

static void
control_send_ok(struct evbuffer *out, json_t *data)
{
	control_send(out, json_pack("{s:i, s:b, s:o}", "v", CONTROL_VERSION,
				    "ok", 1, "data", data));
}

/* @details (stolen) may be NULL. */
static void
control_send_error(struct evbuffer *out, const char *msg, json_t *details)
{
	control_send(out, json_pack("{s:i, s:b, s:o, s:o*}", "v",
				    CONTROL_VERSION, "ok", 0, "error",
				    control_text(msg), "details", details));
}

/* fmt's text, allocated (free it); NULL out of memory. */
static char *control_vtext(const char *fmt, va_list ap)
	__attribute__((format(printf, 1, 0)));

static char *
control_vtext(const char *fmt, va_list ap)
{
	char *msg;

	if (vasprintf(&msg, fmt, ap) == -1)
		return NULL;
	return msg;
}

static void control_send_errorf(struct evbuffer *out, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
control_send_errorf(struct evbuffer *out, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = control_vtext(fmt, ap);
	va_end(ap);
	control_send_error(out, msg != NULL ? msg : "out of memory", NULL);
	free(msg);
}

/* Make the request fail with a message; the handler then returns NULL. */
static void control_fail(struct control_req *req, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
control_fail(struct control_req *req, const char *fmt, ...)
{
	va_list ap;

	free(req->cr_error);
	va_start(ap, fmt);
	req->cr_error = control_vtext(fmt, ap);
	va_end(ap);
}

/*
 * What an admin command did, for people, as @data's "message" (stolen;
 * smcproxyctl prints it).  Return: @data, or NULL out of memory.
 */
static json_t *control_done(json_t *data, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static json_t *
control_done(json_t *data, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = control_vtext(fmt, ap);
	va_end(ap);
	if (data == NULL || msg == NULL ||
	    json_object_set_new(data, "message", control_text(msg)) != 0) {
		json_decref(data);
		data = NULL;
	}
	free(msg);
	return data;
}

/*
 * What an operator did, said with who did it: logged, and raised as event
 * @ev about @w for the monitors.
 */
static void control_admin(const struct control_req *req, enum monitor_event ev,
			  const struct log_where *w, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void
control_admin(const struct control_req *req, enum monitor_event ev,
	      const struct log_where *w, const char *fmt, ...)
{
	const struct control_client *c = req->cr_client;
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = control_vtext(fmt, ap);
	va_end(ap);
	if (msg == NULL)
		return;
	log_info("%s by uid %u pid %d", msg, (unsigned int)c->cc_uid,
		 (int)c->cc_pid);
	monitor_event(ev, w, "%s by uid %u pid %d", msg,
		      (unsigned int)c->cc_uid, (int)c->cc_pid);
	free(msg);
}

/******** helpers for the commands ********/

static int64_t
control_uptime(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)(now.tv_sec - control_started.tv_sec);
}

static json_t *
control_addr(const struct addr *a)
{
	char buf[ADDR_STRLEN];

	return json_string(addr_str(a, buf, sizeof(buf)));
}

struct control_chunk {
	uint64_t below; /* the id where the last chunk stopped */
	json_t *conns;
	bool more;
};

/*
 * On @w's thread: the next CONTROL_CHUNK sessions of @w as JSON objects
 * (session_json_add), those whose ids are below the cursor.  A worker's
 * list is newest first (session_new() numbers sessions in increasing order
 * and puts each at the head, on the worker's thread), so ids fall along it
 * and skipping to the first one below the cursor finds the place again
 * however the list changed in between: sessions opened since are left
 * out, none is listed twice.  Skipping costs a pointer walk, no JSON.
 */
static void
control_chunk_cb(struct worker *w, void *arg)
{
	struct control_chunk *ch = arg;
	struct session *s;
	int n;

	for (s = worker_sessions(w); s != NULL && session_id(s) >= ch->below;
	     s = session_next(s))
		;
	for (n = 0; s != NULL && n < CONTROL_CHUNK; s = session_next(s), n++) {
		session_json_add(s, ch->conns);
		ch->below = session_id(s);
	}
	ch->more = s != NULL;
}

/*
 * Hand the sessions of every worker to @fn as arrays of JSON objects, at
 * most CONTROL_CHUNK at a time, each array gathered by one worker_call():
 * what is done with them (dumping, counting) runs on this thread, and no
 * worker stops serving its connections for a whole listing.
 * Return: 0, -ENOMEM, or the first negative return of @fn.
 */
static int
control_sessions_foreach(int (*fn)(const json_t *conns, void *arg), void *arg)
{
	struct control_chunk ch;
	int k, rc;

	for (k = 0; k < worker_count(); k++) {
		ch.below = UINT64_MAX;
		do {
			ch.conns = json_array();
			if (ch.conns == NULL)
				return -ENOMEM;
			ch.more = false;
			worker_call(worker_get(k), control_chunk_cb, &ch);
			rc = fn(ch.conns, arg);
			json_decref(ch.conns);
			if (rc < 0)
				return rc;
		} while (ch.more);
	}
	return 0;
}

/* A connection id: a JSON integer, or a string in C notation ("0x1f"). */
static int
control_parse_id(const json_t *j, uint64_t *id)
{
	const char *s;
	char *end;

	if (json_is_integer(j)) {
		if (json_integer_value(j) < 0)
			return -EINVAL;
		*id = (uint64_t)json_integer_value(j);
		return 0;
	}
	s = json_string_value(j);
	/* strtoull() would skip blanks and take " -1" as 2^64 - 1 */
	if (s == NULL || !isxdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	*id = strtoull(s, &end, 0);
	if (errno != 0 || *end != '\0')
		return -EINVAL;
	return 0;
}

/******** commands ********/

static json_t *
control_cmd_version(struct control_req *req)
{
	/* smc_option: whether smc_listen can echo kernel clients' option */
	return json_pack(
		"{s:s, s:i, s:I, s:I, s:s, s:s?, s:i, s:b, s:b, s:s}",
		"version", SMCPROXYD_VERSION, "protocol", CONTROL_VERSION,
		"pid", (json_int_t)getpid(), "uptime_s",
		(json_int_t)control_uptime(), "name", control_conf->name,
		"config", control_conf->path, "workers", worker_count(),
		"stopping", control_is_stopping, "kernel_smc",
		control_conf->ksmc.enabled, "smc_option", smc_opt_state());
}

/* Whether statistic @name is in @section: its name or a prefix of words. */
static bool
control_in_section(const char *name, const char *section)
{
	size_t n = strlen(section);

	return strncmp(name, section, n) == 0 &&
	       (name[n] == '\0' || name[n] == '_');
}

/*
 * Keep of @stats only the statistics of @section.  Return: how many;
 * @sections has the sections there are (the first words of the names,
 * "conns, tx, ..."), for the error when none.
 */
static size_t
control_stats_section(json_t *stats, const char *section, char *sections,
		      size_t len)
{
	char seen[1024] = ",", word[64];
	size_t at = 0, klen;
	const char *key;
	json_t *v;
	void *tmp;

	sections[0] = '\0';
	json_object_foreach_safe(stats, tmp, key, v) {
		klen = strcspn(key, "_");
		/* seen is ",conns,tx,": each word with its commas */
		snprintf(word, sizeof(word), ",%.*s,", (int)klen, key);
		if (strstr(seen, word) == NULL &&
		    strlen(seen) + strlen(word) < sizeof(seen)) {
			strcat(seen, word + 1);
			if (at < len)
				at += (size_t)snprintf(
					sections + at, len - at, "%s%.*s",
					at > 0 ? ", " : "", (int)klen, key);
		}
		if (!control_in_section(key, section))
			json_object_del(stats, key);
	}
	return json_object_size(stats);
}

static json_t *
control_cmd_stats(struct control_req *req)
{
	const char *section =
		json_string_value(json_object_get(req->cr_args, "section"));
	struct stats st, total;
	json_t *cur, *tot;
	char sections[1024];
	int64_t since;

	stats_snapshot(&st);
	/* what Prometheus wants: counters that only a restart sets back */
	stats_sum(&total);
	since = stats_since_reset();
	cur = stats_json(&st);
	tot = stats_json(&total);
	if (section != NULL && cur != NULL && tot != NULL &&
	    control_stats_section(cur, section, sections, sizeof(sections)) ==
		    0) {
		json_decref(cur);
		json_decref(tot);
		control_fail(req,
			     "no statistics in section \"%.32s\" (sections: "
			     "%s)",
			     section, sections);
		return NULL;
	}
	if (section != NULL && tot != NULL)
		control_stats_section(tot, section, sections, sizeof(sections));
	return json_pack("{s:i, s:I, s:f, s:I, s:o, s:o, s:o}", "workers",
			 worker_count(), "uptime_s",
			 (json_int_t)control_uptime(), "start_time",
			 control_start_time, "since_reset_s",
			 (json_int_t)(since >= 0 ? since : control_uptime()),
			 "stats", cur, "totals", tot, "tallies", tally_json());
}

static json_t *
control_cmd_stats_reset(struct control_req *req)
{
	stats_reset();
	control_admin(req, MONITOR_STATS_RESET, LOG_NOWHERE,
		      "statistics reset");
	return control_done(json_object(), "statistics reset: counters "
					   "restart from zero");
}

/*
 * Add to @o (a rule's or an export's) its @kind and, where kernel SMC-R
 * peers use it (@a: its target_smc or smc_listen; len 0: none), whether
 * they can have SMC-R.  Return: @o, or NULL (freed) out of memory.
 */
static json_t *
control_smc_json(json_t *o, const char *kind, const struct addr *a, bool listen)
{
	char status[160];
	enum smc_opt_why why;
	bool ready;

	if (o == NULL || json_object_set_new(o, "kind", json_string(kind)))
		goto fail;
	if (a->len == 0)
		return o;
	why = smc_opt_ready(&control_conf->ksmc, a, listen);
	ready = why == SMC_OPT_READY;
	snprintf(status, sizeof(status), "%s%s",
		 ready ? "SMC-R ready" : "TCP only: ", smc_opt_why_text(why));
	if (json_object_set_new(o, listen ? "smc_listen" : "target_smc",
				control_addr(a)) ||
	    json_object_set_new(o, "smc_ready", json_boolean(ready)) ||
	    json_object_set_new(o, "smc_status", control_text(status)))
		goto fail;
	return o;

fail:
	json_decref(o);
	return NULL;
}

static json_t *
control_rule_json(const struct conf_rule *r)
{
	json_t *o;

	o = json_pack("{s:s, s:o, s:s?, s:s, s:i, s:I, s:b, s:b}", "name",
		      r->name, "listen", control_addr(&r->listen), "peer",
		      r->peer != NULL ? r->peer->name : NULL, "export",
		      r->export, "idle_timeout_s", r->idle_timeout, "conns",
		      (json_int_t)tally_conns(TALLY_RULE, r->name), "enabled",
		      worker_rule_enabled(r->name), "accepting",
		      worker_rule_accepting(r));
	return control_smc_json(o,
				r->target_smc.len != 0 ? "target_smc" : "peer",
				&r->target_smc, false);
}

static json_t *
control_export_json(const struct conf_export *e)
{
	json_t *peers;
	int i;

	peers = json_array();
	for (i = 0; i < e->npeers; i++)
		json_array_append_new(peers, json_string(e->peers[i]));
	return control_smc_json(
		json_pack("{s:s, s:o, s:o, s:i, s:I}", "name", e->name,
			  "target", control_addr(&e->target), "peers", peers,
			  "connect_timeout_s", e->connect_timeout, "conns",
			  (json_int_t)tally_conns(TALLY_EXPORT, e->name)),
		e->smc_listen.len != 0 ? "smc_listen" : "peers", &e->smc_listen,
		true);
}

static json_t *
control_cmd_rules(struct control_req *req)
{
	const struct conf *conf = control_conf;
	json_t *rules, *exports, *data;
	int i;

	rules = json_array();
	exports = json_array();
	data = json_pack("{s:o, s:o}", "rules", rules, "exports", exports);
	if (data == NULL)
		goto nomem;
	for (i = 0; i < conf->nrules; i++)
		if (json_array_append_new(rules,
					  control_rule_json(&conf->rules[i])))
			goto nomem;
	for (i = 0; i < conf->nexports; i++)
		if (json_array_append_new(
			    exports, control_export_json(&conf->exports[i])))
			goto nomem;
	return data;

nomem:
	json_decref(data);
	control_fail(req, "out of memory");
	return NULL;
}

/*
 * One peer: how it is reached now (rdma while an active link group reaches
 * it, else fallback) and why it last fell back, with SMC's decline code;
 * whether it answered the last try, and the last error and when.
 */
static json_t *
control_peer_json(const struct conf_peer *p)
{
	struct peer_info info;
	char code[16], at[32] = "", source[INET6_ADDRSTRLEN] = "";
	const char *name;
	struct tm tm;
	json_t *o, *route;

	peer_info(p->name, &info);
	snprintf(code, sizeof(code), "0x%08x", info.reason);
	name = info.reason ? clc_decline_name(info.reason) : "";
	if (info.error_at != 0 && gmtime_r(&info.error_at, &tm) != NULL)
		strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (p->source.len != 0 &&
	    !addr_host(&p->source, source, sizeof(source)))
		source[0] = '\0';
	o = json_pack(
		"{s:s, s:o, s:s, s:s, s:s, s:s, s:s, s:b, s:I, s:i,"
		" s:I, s:o, s:s, s:s, s:s, s:o, s:b}",
		"name", p->name, "address", control_addr(&p->addr), "auth",
		p->insecure ? "insecure" : "psk", "mode",
		info.rdma ? "rdma" : "fallback", "fallback_reason",
		info.rdma   ? "" :
		info.reason ? (info.by_peer ? "declined by the peer" :
					      "declined by us") :
			      CONTROL_FALLBACK_REASON,
		"decline_code", code, "decline_name", name, "declined_by_peer",
		info.by_peer, "backoff_left_ms",
		(json_int_t)info.backoff_left_ms, "lgrs", info.lgrs, "conns",
		(json_int_t)tally_conns(TALLY_PEER, p->name), "reachable",
		info.reachable < 0 ? json_null() : json_boolean(info.reachable),
		"last_error", info.error, "last_error_code", info.error_code,
		"last_error_at", at, "last_error_age_s",
		info.error_at != 0 ?
			json_integer((json_int_t)(info.error_age_ms / 1000)) :
			json_null(),
		"draining", info.draining);
	/* how its link groups travel: routed RoCE v2 */
	route = json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:i}", "device",
			  p->device, "source", source, "dscp", p->route.dscp,
			  "priority", p->route.priority, "qp_timeout",
			  p->route.qp_timeout, "retry_count",
			  p->route.retry_count, "rnr_retry",
			  p->route.rnr_retry);
	if (o == NULL || route == NULL || json_object_update(o, route) != 0) {
		json_decref(o);
		o = NULL;
	}
	json_decref(route);
	return o;
}

/*
 * A kernel SMC-R host in show peers: khost.c's record of it, and its
 * standard groups on every worker, with the use of its budget on the
 * fullest worker (kernel_smc's per-host limits hold per worker).
 */
struct control_khost {
	struct khost_info info;
	int lgrs, links, conns_rdma;	/* all workers */
	int w_lgrs, w_pending, w_conns; /* the worker being walked */
	int max_lgrs, max_pending, max_conns;
};

struct control_khosts {
	struct control_khost *h;
	int n, cap;
};

/* The entry of @host, added if need be; NULL out of memory. */
static struct control_khost *
control_khost_get(struct control_khosts *kh, const struct addr *host)
{
	struct control_khost *h;
	int i;

	for (i = 0; i < kh->n; i++)
		if (addr_same_host(&kh->h[i].info.host, host))
			return &kh->h[i];
	if (kh->n == kh->cap) {
		h = reallocarray(kh->h, (size_t)kh->cap * 2 + 16, sizeof(*h));
		if (h == NULL)
			return NULL;
		kh->h = h;
		kh->cap = kh->cap * 2 + 16;
	}
	h = &kh->h[kh->n++];
	memset(h, 0, sizeof(*h));
	h->info.host = *host;
	return h;
}

/* One standard group (lgr_std_foreach), on its worker's thread. */
static void
control_khost_lgr(const struct addr *host, bool up, int conns, int links,
		  void *arg)
{
	struct control_khost *h = control_khost_get(arg, host);

	if (h == NULL)
		return;
	h->lgrs++;
	h->links += links;
	h->conns_rdma += conns;
	h->w_lgrs++;
	h->w_pending += !up;
	h->w_conns += conns;
}

static void
control_khosts_cb(struct worker *w, void *arg)
{
	lgr_std_foreach(worker_lgr(w), control_khost_lgr, arg);
}

static json_t *
control_khost_json(const struct control_khost *h, const struct conf_ksmc *k)
{
	char host[ADDR_STRLEN] = "", code[16], at[32] = "";
	const struct khost_info *in = &h->info;
	const char *full;
	struct tm tm;
	bool limited;

	addr_host(&in->host, host, sizeof(host));
	snprintf(code, sizeof(code), "0x%08x", in->decline);
	if (in->decline != 0 && gmtime_r(&in->decline_at, &tm) != NULL)
		strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", &tm);
	/* one table serves every worker (worker_auth) */
	limited = worker_count() > 0 &&
		  auth_rate_limited(worker_auth(worker_get(0)), &in->host,
				    now_ms());
	/* which budget refuses a new group now, in lgr_std_budget's order */
	full = h->max_conns >= k->max_conns_per_host	 ? "conns" :
	       h->max_lgrs >= k->max_lgrs_per_host	 ? "lgrs" :
	       h->max_pending >= k->max_pending_per_host ? "pending" :
							   "";
	return json_pack(
		"{s:s, s:i, s:i, s:I, s:i, s:I, s:s, s:s, s:b, s:s, s:o,"
		" s:b, s:i, s:i, s:i, s:i, s:i, s:i, s:s}",
		"host", host, "lgrs", h->lgrs, "links", h->links, "conns",
		(json_int_t)in->open, "conns_rdma", h->conns_rdma,
		"conns_total", (json_int_t)in->total, "decline_code", code,
		"decline_name",
		in->decline != 0 ? clc_decline_name(in->decline) : "",
		"declined_by_peer", in->by_peer, "decline_at", at,
		"decline_age_s",
		in->decline != 0 ? json_integer((json_int_t)(time(NULL) -
							     in->decline_at)) :
				   json_null(),
		"rate_limited", limited, "budget_pending", h->max_pending,
		"max_pending_per_host", k->max_pending_per_host, "budget_lgrs",
		h->max_lgrs, "max_lgrs_per_host", k->max_lgrs_per_host,
		"budget_conns", h->max_conns, "max_conns_per_host",
		k->max_conns_per_host, "budget_full", full);
}

/*
 * The kernel SMC-R hosts: those khost.c saw (a connection or a DECLINE),
 * and any other that a standard group is with.  The groups are walked on
 * each worker (one worker_call each, as show lgrs); the connections are
 * counted as they open and end, not walked.
 */
static json_t *
control_khosts_json(void)
{
	struct control_khosts kh = {NULL, 0, KHOST_MAX};
	struct khost_info *info;
	struct control_khost *h;
	json_t *arr;
	int i, j;

	kh.h = calloc(KHOST_MAX, sizeof(*kh.h));
	info = calloc(KHOST_MAX, sizeof(*info));
	arr = json_array();
	if (kh.h == NULL || info == NULL || arr == NULL)
		goto fail;
	kh.n = khost_list(info, KHOST_MAX);
	for (i = 0; i < kh.n; i++)
		kh.h[i].info = info[i];
	/* without kernel_smc no group is standard: a scrape walks nothing */
	for (i = 0; control_conf->ksmc.enabled && i < worker_count(); i++) {
		for (j = 0; j < kh.n; j++)
			kh.h[j].w_lgrs = kh.h[j].w_pending = kh.h[j].w_conns =
				0;
		worker_call(worker_get(i), control_khosts_cb, &kh);
		for (j = 0; j < kh.n; j++) {
			h = &kh.h[j];
			if (h->w_lgrs > h->max_lgrs)
				h->max_lgrs = h->w_lgrs;
			if (h->w_pending > h->max_pending)
				h->max_pending = h->w_pending;
			if (h->w_conns > h->max_conns)
				h->max_conns = h->w_conns;
		}
	}
	for (i = 0; i < kh.n; i++)
		if (json_array_append_new(
			    arr, control_khost_json(&kh.h[i],
						    &control_conf->ksmc)) != 0)
			goto fail;
	free(info);
	free(kh.h);
	return arr;

fail:
	free(info);
	free(kh.h);
	json_decref(arr);
	return NULL;
}

static json_t *
control_cmd_peers(struct control_req *req)
{
	const struct conf *conf = control_conf;
	json_t *peers;
	int i;

	peers = json_array();
	if (peers == NULL)
		goto nomem;
	for (i = 0; i < conf->npeers; i++)
		if (json_array_append_new(peers,
					  control_peer_json(&conf->peers[i])))
			goto nomem;
	return json_pack("{s:o, s:o}", "peers", peers, "kernel_hosts",
			 control_khosts_json());

nomem:
	json_decref(peers);
	control_fail(req, "out of memory");
	return NULL;
}

struct control_lgr_walk {
	json_t *lgrs, *links;
};

static void
control_lgr_walk(struct worker *w, void *arg)
{
	struct control_lgr_walk *walk = arg;

	lgr_worker_json(w, walk->lgrs, walk->links);
}

/* Link groups and their links, gathered on each worker's own thread. */
static json_t *
control_lgrs_all(struct control_req *req, const char *want)
{
	struct control_lgr_walk walk;
	json_t *out;
	int i;

	walk.lgrs = json_array();
	walk.links = json_array();
	if (walk.lgrs == NULL || walk.links == NULL) {
		json_decref(walk.lgrs);
		json_decref(walk.links);
		control_fail(req, "out of memory");
		return NULL;
	}
	for (i = 0; i < worker_count(); i++)
		worker_call(worker_get(i), control_lgr_walk, &walk);
	if (strcmp(want, "lgrs") == 0) {
		out = json_pack("{s:o}", "lgrs", walk.lgrs);
		json_decref(walk.links);
	} else {
		out = json_pack("{s:o}", "links", walk.links);
		json_decref(walk.lgrs);
	}
	return out;
}

static json_t *
control_cmd_lgrs(struct control_req *req)
{
	return control_lgrs_all(req, "lgrs");
}

static json_t *
control_cmd_links(struct control_req *req)
{
	return control_lgrs_all(req, "links");
}

static json_t *
control_cmd_intercept(struct control_req *req)
{
	json_t *o = intercept_json(control_conf);

	if (o == NULL)
		control_fail(req, "out of memory");
	return o;
}

/* A connection filter: NULL or -1 members match any connection. */
struct control_filter {
	const char *rule, *peer, *state, *mode, *dialect;
	json_int_t age; /* at least this many seconds old */
};

/*
 * The filter in req's arguments; 0, or -EINVAL after control_fail.  The
 * states and transports are checked so a typo is an error, not an empty
 * list.
 */
static int
control_filter_parse(struct control_req *req, struct control_filter *f,
		     bool need_one)
{
	const json_t *age = json_object_get(req->cr_args, "age");
	const char *transport, *dialect;
	enum session_state st;

	f->rule = json_string_value(json_object_get(req->cr_args, "rule"));
	f->peer = json_string_value(json_object_get(req->cr_args, "peer"));
	f->state = json_string_value(json_object_get(req->cr_args, "state"));
	transport =
		json_string_value(json_object_get(req->cr_args, "transport"));
	dialect = json_string_value(json_object_get(req->cr_args, "dialect"));
	f->age = -1;
	if (age != NULL)
		f->age = json_is_integer(age) ?
				 json_integer_value(age) :
				 strtoll(json_string_value(age), NULL, 10);
	/* a closed session is gone from the list: not a state to ask for */
	for (st = 0; f->state != NULL && st < SESSION_CLOSED; st++)
		if (strcmp(f->state, session_state_name(st)) == 0)
			break;
	if (f->state != NULL && st == SESSION_CLOSED) {
		control_fail(req,
			     "unknown state \"%.32s\" (want connect_peer, "
			     "hello, handshake, connect_target, rdma_wait, "
			     "rdma_open, relay or resuming)",
			     f->state);
		return -EINVAL;
	}
	/* tcp: a kernel peer's, fallback: a native peer's; either is mode
	 * fallback, and matched so, as before there was tcp */
	f->mode = transport;
	if (transport != NULL && strcmp(transport, "tcp") == 0)
		f->mode = "fallback";
	if (f->mode != NULL && strcmp(f->mode, "rdma") != 0 &&
	    strcmp(f->mode, "fallback") != 0) {
		control_fail(req,
			     "unknown transport \"%.32s\" (want rdma, tcp "
			     "or fallback)",
			     transport);
		return -EINVAL;
	}
	/* pair: the native dialect, as the issues call it */
	f->dialect = dialect;
	if (dialect != NULL && strcmp(dialect, "pair") == 0)
		f->dialect = "native";
	if (f->dialect != NULL && strcmp(f->dialect, "native") != 0 &&
	    strcmp(f->dialect, "smc-r") != 0) {
		control_fail(req,
			     "unknown dialect \"%.32s\" (want native, pair "
			     "or smc-r)",
			     dialect);
		return -EINVAL;
	}
	if (need_one && json_object_size(req->cr_args) == 0) {
		control_fail(req,
			     "\"%s\" needs at least one of rule, peer, "
			     "state, transport, dialect, age",
			     req->cr_cmd->cm_name);
		return -EINVAL;
	}
	return 0;
}

static bool
control_member_is(const json_t *s, const char *key, const char *want)
{
	const char *v = json_string_value(json_object_get(s, key));

	return want == NULL || (v != NULL && strcmp(v, want) == 0);
}

/* Whether connection s (as session_json_add() describes it) matches f. */
static bool
control_filter_match(const struct control_filter *f, const json_t *s)
{
	return control_member_is(s, "rule", f->rule) &&
	       control_member_is(s, "peer", f->peer) &&
	       control_member_is(s, "state", f->state) &&
	       control_member_is(s, "mode", f->mode) &&
	       control_member_is(s, "dialect", f->dialect) &&
	       (f->age < 0 || json_number_value(json_object_get(s, "age_s")) >=
				      (double)f->age);
}

/*
 * A show conns answer being rendered: where its walk stands (the worker,
 * and the id below which its next chunk starts) and how many it listed.
 */
struct control_listing {
	struct control_filter filter;
	json_t *args; /* held: the filter's strings are in it */
	int worker;
	struct control_chunk ch;
	json_int_t count;
};

static void
control_listing_free(struct control_listing *l)
{
	if (l == NULL)
		return;
	json_decref(l->args);
	free(l);
}

/*
 * Render the next chunks of @l into @out until it holds @room bytes or the
 * listing is done, and then its end.  Out of memory half way, the reply
 * ends there, one valid line whose count says how many it holds.
 * Return: true when the listing is done (the caller frees it).
 */
static bool
control_listing_more(struct control_listing *l, struct evbuffer *out,
		     size_t room)
{
	const json_t *s;
	size_t i;

	while (l->worker < worker_count() && evbuffer_get_length(out) < room) {
		l->ch.conns = json_array();
		if (l->ch.conns == NULL) {
			l->worker = worker_count();
			break;
		}
		l->ch.more = false;
		worker_call(worker_get(l->worker), control_chunk_cb, &l->ch);
		json_array_foreach(l->ch.conns, i, s) {
			if (!control_filter_match(&l->filter, s))
				continue;
			if (l->count++ > 0)
				evbuffer_add(out, ",", 1);
			control_dump(out, s);
		}
		json_decref(l->ch.conns);
		if (!l->ch.more) {
			l->worker++;
			l->ch.below = UINT64_MAX;
		}
	}
	if (l->worker < worker_count())
		return false;
	evbuffer_add_printf(out, "],\"count\":%lld}}\n", (long long)l->count);
	return true;
}

/*
 * Streamed: the reply is rendered CONTROL_LISTING_OUT bytes ahead of what
 * the client has taken (control_write_cb renders more), so only
 * CONTROL_CHUNK sessions are held as JSON at a time, no buffer bounds the
 * answer, and a client that does not read makes the daemon walk no
 * further.  Until it is done, the client's next requests wait.
 */
static json_t *
control_cmd_conns(struct control_req *req)
{
	struct control_client *c = req->cr_client;
	struct control_listing *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return NULL;
	l->args = json_incref(req->cr_args);
	if (control_filter_parse(req, &l->filter, false) < 0) {
		control_listing_free(l);
		return NULL;
	}
	l->ch.below = UINT64_MAX;
	evbuffer_add_printf(req->cr_out,
			    "{\"v\":%d,\"ok\":true,\"data\":{\"conns\":[",
			    CONTROL_VERSION);
	req->cr_sent = true;
	/* without a socket (control_request) the whole answer at once */
	if (!control_listing_more(l, req->cr_out,
				  c->cc_bev != NULL ? CONTROL_LISTING_OUT :
						      SIZE_MAX)) {
		c->cc_listing = l;
		return NULL;
	}
	control_listing_free(l);
	return NULL;
}

/*
 * `show smc`: show conns of the kernel SMC-R peers' dialect, each with its
 * peer's address and, over RDMA, its group and link (smcproxyctl's
 * smcss-like table).
 */
static json_t *
control_cmd_smc(struct control_req *req)
{
	const char *d =
		json_string_value(json_object_get(req->cr_args, "dialect"));

	if (d != NULL && strcmp(d, "smc-r") != 0) {
		control_fail(req,
			     "show smc lists the smc-r dialect only; show "
			     "conns dialect %.32s lists the others",
			     d);
		return NULL;
	}
	if (json_object_set_new(req->cr_args, "dialect",
				json_string("smc-r")) != 0)
		return NULL;
	return control_cmd_conns(req);
}

struct control_kill {
	uint64_t id;
	int rc;
};

static void
control_kill_cb(struct worker *w, void *arg)
{
	struct control_kill *k = arg;

	k->rc = session_kill(w, k->id);
}

static json_t *
control_cmd_kill(struct control_req *req)
{
	struct control_kill k = {0, -ENOENT};
	const json_t *id = json_object_get(req->cr_args, "id");
	char hex[24];
	int i;

	if (control_parse_id(id, &k.id) < 0) {
		control_fail(req, "invalid connection id (want a number "
				  "like 31 or \"0x1f\")");
		return NULL;
	}
	snprintf(hex, sizeof(hex), "0x%" PRIx64, k.id);
	for (i = 0; i < worker_count() && k.rc == -ENOENT; i++)
		worker_call(worker_get(i), control_kill_cb, &k);
	if (k.rc < 0) {
		control_fail(req, "no connection %s", hex);
		return NULL;
	}
	control_admin(req, MONITOR_CONN_KILLED, LOG_NOWHERE, "conn %s killed",
		      hex);
	return control_done(json_pack("{s:s}", "id", hex),
			    "connection %s killed", hex);
}

/* The connections a filter matched: their ids and workers. */
struct control_victims {
	const struct control_filter *filter;
	json_t *ids;
};

static int
control_victims_cb(const json_t *conns, void *arg)
{
	struct control_victims *v = arg;
	const json_t *s;
	size_t i;

	json_array_foreach(conns, i, s) {
		if (control_filter_match(v->filter, s) &&
		    json_array_append_new(
			    v->ids,
			    json_pack("{s:O, s:O}", "id",
				      json_object_get(s, "id"), "worker",
				      json_object_get(s, "worker"))))
			return -ENOMEM;
	}
	return 0;
}

/*
 * Close every connection the filter matches, as `kill conn` closes one.
 * Those that closed on their own in between are not counted.
 */
static json_t *
control_cmd_kill_conns(struct control_req *req)
{
	struct control_filter f;
	struct control_victims v = {&f, NULL};
	struct control_kill k;
	json_t *killed, *e;
	size_t i, n;
	int w;

	if (control_filter_parse(req, &f, true) < 0)
		return NULL;
	v.ids = json_array();
	killed = json_array();
	if (v.ids == NULL || killed == NULL ||
	    control_sessions_foreach(control_victims_cb, &v) < 0) {
		json_decref(v.ids);
		json_decref(killed);
		control_fail(req, "out of memory");
		return NULL;
	}
	json_array_foreach(v.ids, i, e) {
		w = (int)json_integer_value(json_object_get(e, "worker"));
		if (control_parse_id(json_object_get(e, "id"), &k.id) < 0 ||
		    w < 0 || w >= worker_count())
			continue;
		k.rc = -ENOENT;
		worker_call(worker_get(w), control_kill_cb, &k);
		if (k.rc == 0)
			json_array_append(killed, json_object_get(e, "id"));
	}
	json_decref(v.ids);
	n = json_array_size(killed);
	control_admin(req, MONITOR_CONN_KILLED, LOG_NOWHERE,
		      "%zu connections killed", n);
	return control_done(
		json_pack("{s:I, s:o}", "count", (json_int_t)n, "ids", killed),
		"%zu connection%s killed", n, n == 1 ? "" : "s");
}

/*
 * `disable rule NAME`, `enable rule NAME`: the rule's listeners close or
 * open on every worker; its connections are not touched.
 */
static json_t *
control_cmd_rule_enable(struct control_req *req)
{
	const char *name =
		json_string_value(json_object_get(req->cr_args, "name"));
	bool enable = strcmp(req->cr_cmd->cm_name, "enable rule") == 0;
	const struct conf_rule *r = NULL;
	char buf[ADDR_STRLEN];
	int64_t conns;
	json_t *data;
	int i, rc;

	for (i = 0; i < control_conf->nrules && r == NULL; i++)
		if (strcmp(control_conf->rules[i].name, name) == 0)
			r = &control_conf->rules[i];
	if (r == NULL) {
		control_fail(req, "no rule \"%.64s\"", name);
		return NULL;
	}
	rc = worker_rule_enable(name, enable);
	if (rc < 0) {
		control_fail(req, "rule %s: cannot listen on %s: %s", name,
			     addr_str(&r->listen, buf, sizeof(buf)),
			     strerror(-rc));
		return NULL;
	}
	control_admin(req,
		      enable ? MONITOR_RULE_ENABLED : MONITOR_RULE_DISABLED,
		      &(struct log_where){NULL, name, -1, -1}, "rule %s %s",
		      name, enable ? "enabled" : "disabled");
	state_save(control_conf);
	data = json_pack("{s:s, s:b, s:b}", "name", name, "enabled", enable,
			 "accepting", worker_rule_accepting(r));
	conns = tally_conns(TALLY_RULE, name);
	if (!enable)
		return control_done(data,
				    "rule %s disabled: %" PRId64
				    " connection%s left open",
				    name, conns, conns == 1 ? "" : "s");
	if (!worker_rule_accepting(r))
		return control_done(data,
				    "rule %s enabled: not accepting while "
				    "peer %s is draining",
				    name,
				    r->peer != NULL ? r->peer->name : "?");
	return control_done(data, "rule %s enabled: accepting on %s", name,
			    addr_str(&r->listen, buf, sizeof(buf)));
}

/*
 * `drain peer NAME`: no new connections to the peer (the listeners of
 * the rules to it close), open ones finish; `undrain peer NAME` or
 * `enable peer NAME` ends that.
 */
static json_t *
control_cmd_peer_drain(struct control_req *req)
{
	const char *name =
		json_string_value(json_object_get(req->cr_args, "name"));
	bool drain = strcmp(req->cr_cmd->cm_name, "drain peer") == 0;
	int64_t conns;
	json_t *data;
	int rc;

	if (conf_peer_find(control_conf, name) == NULL) {
		control_fail(req, "no peer \"%.64s\"", name);
		return NULL;
	}
	peer_set_draining(name, drain);
	rc = worker_relisten_all();
	if (rc < 0 && !drain) {
		peer_set_draining(name, true);
		worker_relisten_all();
	}
	if (rc < 0) {
		control_fail(req, "peer %s: a rule to it cannot listen: %s",
			     name, strerror(-rc));
		return NULL;
	}
	control_admin(req,
		      drain ? MONITOR_PEER_DRAINED : MONITOR_PEER_UNDRAINED,
		      &(struct log_where){name, NULL, -1, -1}, "peer %s %s",
		      name, drain ? "draining" : "no longer draining");
	state_save(control_conf);
	data = json_pack("{s:s, s:b}", "name", name, "draining", drain);
	conns = tally_conns(TALLY_PEER, name);
	if (drain)
		return control_done(data,
				    "peer %s draining: its rules stop "
				    "accepting, %" PRId64
				    " connection%s left open to finish",
				    name, conns, conns == 1 ? "" : "s");
	return control_done(data,
			    "peer %s no longer draining: its enabled rules "
			    "accept again",
			    name);
}

static void control_rearm(struct control_client *c);

#define CONTROL_CHECK_EXPORTS 8 /* a peer's exports a check opens */

struct control_check;
static json_t *control_check_start(struct control_req *req,
				   struct control_check *ck);

/* One export of a peer as its rules name it, and what opening it gave. */
struct control_check_export {
	char rule[CONF_NAME_MAX + 1];
	char export[CONF_NAME_MAX + 1];
	bool tried;
	int rc;
	char error[FALLBACK_CHECK_ERROR_MAX];
};

/*
 * `check NAME`: one under way.  The link group part (lgr_check.c) is
 * stepped on its worker, the fallback part (fallback_check_step) here,
 * both by a timer: each says what the path it tests does now.
 */
struct control_check {
	struct control_client *client; /* NULL: answered at once */
	struct worker *w;
	struct event *ev;
	struct conf *conf; /* held: the peer and rules it names */
	struct lgr_check lc;
	bool lc_done;
	/* the fallback: one open per export, the first says the rest */
	struct fallback_check fc;
	struct fallback_check first;
	struct control_check_export exports[CONTROL_CHECK_EXPORTS];
	int nexports, next; /* the export fc opens */
	bool fc_done;
	/* `check smc ADDRESS`: that instead */
	bool smc;
	struct kpeer_check kc;
	bool done;
};

struct control_has {
	const char *peer;
	bool found;
};

static void
control_has_cb(struct worker *w, void *arg)
{
	struct control_has *h = arg;

	h->found = lgr_has_active(worker_lgr(w), h->peer);
}

static void
control_check_cb(struct worker *w, void *arg)
{
	struct control_check *ck = arg;

	ck->lc_done = lgr_check_step(worker_lgr(w), &ck->lc);
}

/* A check under the configuration of now, with nothing open yet. */
static struct control_check *
control_check_new(void)
{
	struct control_check *ck = calloc(1, sizeof(*ck));

	if (ck == NULL)
		return NULL;
	ck->conf = conf_hold((struct conf *)control_conf);
	ck->fc.fd = -1;
	return ck;
}

static void
control_check_free(struct control_check *ck)
{
	if (ck == NULL)
		return;
	if (ck->ev != NULL)
		event_free(ck->ev);
	fallback_check_end(&ck->fc);
	if (ck->smc)
		kpeer_check_free(&ck->kc);
	conf_drop(ck->conf);
	free(ck);
}

/*
 * The exports the peer's rules open, each once: what the check opens.
 * With none (a peer that only connects to us) our connections never go
 * to it, and the fallback part has nothing to test.
 */
static void
control_check_exports(struct control_check *ck, const struct conf_peer *peer)
{
	const struct conf_rule *r;
	int i, j;

	for (i = 0; i < ck->conf->nrules; i++) {
		r = &ck->conf->rules[i];
		if (r->peer != peer || ck->nexports == CONTROL_CHECK_EXPORTS)
			continue;
		for (j = 0; j < ck->nexports; j++)
			if (strcmp(ck->exports[j].export, r->export) == 0)
				break;
		if (j < ck->nexports)
			continue;
		snprintf(ck->exports[j].rule, sizeof(ck->exports[j].rule), "%s",
			 r->name);
		snprintf(ck->exports[j].export, sizeof(ck->exports[j].export),
			 "%s", r->export);
		ck->nexports++;
	}
}

/*
 * One step of the fallback part: the open of the next export.  One that
 * did not get past the peer's port or its key ends the part: the others
 * would meet the same.
 */
static void
control_check_fallback(struct control_check *ck)
{
	struct control_check_export *e = &ck->exports[ck->next];
	const struct conf_peer *peer = conf_peer_find(ck->conf, ck->lc.peer);
	uint64_t now = now_ms();

	/* all the opens share the check's time, as the link group part */
	if (ck->fc.peer == NULL)
		fallback_check_init(&ck->fc, ck->conf, peer, e->export,
				    ck->lc.deadline_ms > now ?
					    (int)(ck->lc.deadline_ms - now) :
					    1);
	if (!fallback_check_step(&ck->fc))
		return;
	if (ck->next == 0)
		ck->first = ck->fc;
	if (ck->fc.stage == FALLBACK_CHECK_EXPORT) {
		e->tried = true;
		e->rc = ck->fc.rc;
		snprintf(e->error, sizeof(e->error), "%s", ck->fc.error);
	}
	ck->next++;
	if (ck->fc.stage != FALLBACK_CHECK_EXPORT || ck->next >= ck->nexports)
		ck->fc_done = true;
	memset(&ck->fc, 0, sizeof(ck->fc));
	ck->fc.fd = -1;
}

/* One step of check ck, both parts; ck->done once both have a result. */
static void
control_check_step(struct control_check *ck)
{
	if (ck->smc) {
		ck->done = kpeer_check_step(&ck->kc);
		return;
	}
	if (!ck->lc_done)
		worker_call(ck->w, control_check_cb, ck);
	if (!ck->fc_done)
		control_check_fallback(ck);
	ck->done = ck->lc_done && ck->fc_done;
}

/* "1.234 ms" */
static void
control_ms(char *buf, size_t len, uint64_t us)
{
	snprintf(buf, len, "%llu.%03llu ms", (unsigned long long)(us / 1000),
		 (unsigned long long)(us % 1000));
}

/*
 * The transport the peer's next connection takes, as the link group part
 * found it, into lines and data.  false when a group is up but does not
 * answer: connections on it fail.
 */
static bool
control_check_transport(const struct control_check *ck, json_t *lines,
			json_t *data)
{
	const struct lgr_check *lc = &ck->lc;
	struct peer_info pi;
	char rtt[32], code[16];

	if (lc->rc == 0) {
		control_ms(rtt, sizeof(rtt), lc->rtt_us);
		json_array_append_new(
			lines,
			json_sprintf("transport: rdma (lgr %u link %u%s, "
				     "TEST_LINK round trip %s)",
				     (unsigned int)lc->lgr_id,
				     (unsigned int)lc->link_id,
				     lc->set_up ? ", set up now" : "", rtt));
		json_object_update_new(data,
				       json_pack("{s:s, s:i, s:i, s:I, s:b}",
						 "transport", "rdma", "lgr",
						 (int)lc->lgr_id, "link",
						 (int)lc->link_id, "rtt_us",
						 (json_int_t)lc->rtt_us,
						 "set_up", lc->set_up));
		return true;
	}
	json_array_append_new(
		lines, json_sprintf("transport: fallback (%s)", lc->error));
	json_object_update_new(data,
			       json_pack("{s:s, s:s}", "transport", "fallback",
					 "transport_reason", lc->error));
	if (lc->decline != 0) {
		snprintf(code, sizeof(code), "0x%08x", lc->decline);
		json_array_append_new(
			lines, json_sprintf("decline: %s %s by %s",
					    clc_decline_name(lc->decline), code,
					    lc->by_peer ? "the peer" : "us"));
		json_object_update_new(data,
				       json_pack("{s:s, s:b}", "decline",
						 clc_decline_name(lc->decline),
						 "by_peer", lc->by_peer));
	}
	peer_info(lc->peer, &pi);
	if (pi.backoff_left_ms > 0)
		json_array_append_new(
			lines,
			json_sprintf(
				"back-off: RDMA to %s is tried again in "
				"%llu s; connections take the fallback "
				"until then",
				lc->peer,
				(unsigned long long)(pi.backoff_left_ms + 999) /
					1000));
	json_object_set_new(data, "backoff_left_ms",
			    json_integer((json_int_t)pi.backoff_left_ms));
	/* a group that is there and does not answer is a failure */
	return lc->lgr_id == 0;
}

/* What the fallback part found of the key, in a word. */
static const char *
control_check_auth(const struct fallback_check *f, bool keyless)
{
	if (f->stage == FALLBACK_CHECK_CONNECT)
		return "not tried";
	if (f->stage == FALLBACK_CHECK_AUTH)
		return f->rc == -EACCES ? "failed" : "unknown";
	return keyless ? "no key" : "yes";
}

/*
 * The answer to a check that is done, into out: a line per stage (the
 * peer's port, its key, each export's target, the transport), ok when
 * every path a connection may take works; else the first failure is the
 * error, the lines its details.  A peer we have no rule to is reached
 * only by a link group (either side's): that is its whole check, as
 * before the fallback part.
 */
static void
control_check_peer_reply(const struct control_check *ck, struct evbuffer *out)
{
	const struct fallback_check *f = &ck->first;
	const char *peer = ck->lc.peer;
	const struct control_check_export *e;
	char when[32], addr[ADDR_STRLEN], msg[CONF_NAME_MAX * 2 + 256];
	json_t *lines, *data, *exports;
	bool keyless;
	int i;

	lines = json_array();
	data = json_pack("{s:s}", "peer", peer);
	exports = json_array();
	keyless = conf_peer_find(ck->conf, peer)->key_len == 0;
	msg[0] = '\0';
	addr_str(&conf_peer_find(ck->conf, peer)->addr, addr, sizeof(addr));
	if (ck->nexports == 0) {
		json_array_append_new(
			lines, json_sprintf("exports: none (no rule to %s: its "
					    "connections come here, ours never "
					    "go there)",
					    peer));
		json_object_set_new(data, "exports", exports);
		if (!control_check_transport(ck, lines, data) || ck->lc.rc != 0)
			snprintf(msg, sizeof(msg), "peer %s: %s", peer,
				 ck->lc.error);
		goto out;
	}
	if (f->stage == FALLBACK_CHECK_CONNECT) {
		snprintf(msg, sizeof(msg), "peer %s: unreachable: %s%s", peer,
			 f->error,
			 f->rc == -ECONNREFUSED ?
				 " (nothing listens there: is its daemon "
				 "stopped?)" :
			 f->rc == -ETIMEDOUT ?
				 " (no answer: is the host down or the "
				 "port filtered?)" :
				 "");
		json_array_append_new(
			lines, json_sprintf("reachable: no, %s", f->error));
		json_array_append_new(lines,
				      json_string("authenticated: not tried"));
	} else {
		control_ms(when, sizeof(when), f->connect_us);
		json_array_append_new(
			lines, json_sprintf("reachable: yes, %s answered in %s",
					    addr, when));
		if (f->stage == FALLBACK_CHECK_AUTH && f->rc == -EACCES) {
			snprintf(msg, sizeof(msg),
				 "peer %s: authentication failed: %s", peer,
				 f->error);
			json_array_append_new(
				lines, json_sprintf("authenticated: failed, %s",
						    f->error));
		} else if (f->stage == FALLBACK_CHECK_AUTH) {
			/* no word on the key: something else answers there,
			 * or the peer hangs or sheds us */
			snprintf(msg, sizeof(msg), "peer %s: no handshake: %s",
				 peer, f->error);
			json_array_append_new(
				lines,
				json_sprintf("authenticated: unknown, %s",
					     f->error));
		} else
			json_array_append_new(
				lines,
				json_string(keyless ? "authenticated: no key "
						      "(the peer is insecure)" :
						      "authenticated: yes, the "
						      "peer proved the key and "
						      "took our proof"));
	}
	json_object_update_new(
		data,
		json_pack("{s:b, s:I, s:s}", "reachable",
			  f->stage != FALLBACK_CHECK_CONNECT, "connect_us",
			  (json_int_t)f->connect_us, "authenticated",
			  control_check_auth(f, keyless)));
	for (i = 0; i < ck->nexports; i++) {
		e = &ck->exports[i];
		json_array_append_new(
			exports, json_pack("{s:s, s:s, s:s}", "rule", e->rule,
					   "export", e->export, "result",
					   !e->tried  ? "not tried" :
					   e->rc == 0 ? "ok" :
							e->error));
		if (!e->tried) {
			json_array_append_new(
				lines, json_sprintf("export %s (rule %s): not "
						    "tried",
						    e->export, e->rule));
			continue;
		}
		if (e->rc == 0) {
			json_array_append_new(
				lines, json_sprintf("export %s (rule %s): the "
						    "peer reached its target",
						    e->export, e->rule));
			continue;
		}
		json_array_append_new(
			lines, json_sprintf("export %s (rule %s): %s",
					    e->export, e->rule, e->error));
		if (msg[0] == '\0' && f->stage == FALLBACK_CHECK_EXPORT)
			snprintf(msg, sizeof(msg),
				 "peer %s: export %s (rule %s): %s", peer,
				 e->export, e->rule, e->error);
	}
	json_object_set_new(data, "exports", exports);
	if (f->stage == FALLBACK_CHECK_CONNECT)
		json_array_append_new(lines,
				      json_sprintf("transport: none (%s cannot "
						   "be reached)",
						   peer));
	else if (!control_check_transport(ck, lines, data) && msg[0] == '\0')
		snprintf(msg, sizeof(msg), "peer %s: %s", peer, ck->lc.error);
out:
	if (msg[0] != '\0') {
		json_decref(data);
		control_send_error(out, msg, lines);
		return;
	}
	json_object_set_new(data, "lines", lines);
	control_send_ok(out, data);
}

/*
 * The answer to `check smc` (ck->kc done), into out: a line per stage
 * (the connect, the option's echo, our PROPOSAL, its answer) and whether
 * connections from here could have SMC-R with it; ok only when it
 * ACCEPTs and they could.
 */
static void
control_check_smc_reply(const struct control_check *ck, struct evbuffer *out)
{
	const struct kpeer_check *kc = &ck->kc;
	char who[ADDR_STRLEN], when[32], code[16], msg[ADDR_STRLEN + 256];
	enum smc_opt_why why;
	json_t *lines, *data;

	addr_str(&kc->to, who, sizeof(who));
	snprintf(code, sizeof(code), "0x%08x", kc->decline);
	why = smc_opt_ready(&ck->conf->ksmc, &kc->to, false);
	lines = json_array();
	msg[0] = '\0';
	if (kc->result == KPEER_CHECK_UNREACHABLE) {
		json_array_append_new(
			lines, json_sprintf("reachable: no, %s", kc->error));
		snprintf(msg, sizeof(msg), "smc %s: unreachable: %s", who,
			 kc->error);
	} else {
		control_ms(when, sizeof(when), kc->connect_us);
		json_array_append_new(
			lines,
			json_sprintf("reachable: yes, answered in %s", when));
	}
	switch (kc->result) {
	case KPEER_CHECK_UNREACHABLE:
		break;
	case KPEER_CHECK_NO_OPTION:
		json_array_append_new(
			lines,
			json_sprintf("SMC-R option: not sent (%s)", kc->error));
		snprintf(msg, sizeof(msg),
			 "smc %s: cannot test SMC-R from here: %s", who,
			 kc->error);
		break;
	case KPEER_CHECK_PLAIN:
		json_array_append_new(lines,
				      json_string("SMC-R option: not echoed"));
		snprintf(msg, sizeof(msg), "smc %s: does not speak SMC-R: %s",
			 who, kc->error);
		break;
	case KPEER_CHECK_NOT_PROPOSED:
		json_array_append_new(lines,
				      json_string("SMC-R option: echoed"));
		json_array_append_new(
			lines,
			json_sprintf("PROPOSAL: not sent (%s); our "
				     "DECLINE %s %s instead",
				     kc->error, clc_decline_name(kc->decline),
				     code));
		snprintf(msg, sizeof(msg), "smc %s: %s", who, kc->error);
		break;
	default:
		json_array_append_new(lines,
				      json_string("SMC-R option: echoed"));
		json_array_append_new(lines,
				      json_string("PROPOSAL: sent (SMC-Rv2, "
						  "our EIDs, the RoCE GID of "
						  "our address)"));
		break;
	}
	if (kc->result == KPEER_CHECK_DECLINED) {
		json_array_append_new(
			lines, json_sprintf("answer: DECLINE %s %s (%s)",
					    clc_decline_name(kc->decline), code,
					    kc->error));
		snprintf(msg, sizeof(msg), "smc %s: declined: %s %s (%s)", who,
			 clc_decline_name(kc->decline), code, kc->error);
	} else if (kc->result == KPEER_CHECK_BROKEN) {
		json_array_append_new(
			lines, json_sprintf("answer: none (%s)", kc->error));
		snprintf(msg, sizeof(msg), "smc %s: %s", who, kc->error);
	} else if (kc->result == KPEER_CHECK_ACCEPTED) {
		json_array_append_new(
			lines,
			json_sprintf("answer: ACCEPT (%s); our DECLINE %s %s "
				     "ended it%s%s",
				     kc->first_contact ? "first contact" :
							 "into a group it has",
				     clc_decline_name(kc->decline), code,
				     kc->error[0] != '\0' ? ": " : "",
				     kc->error));
	}
	json_array_append_new(lines,
			      why == SMC_OPT_READY ?
				      json_string("here: SMC-R ready") :
				      json_sprintf("here: TCP only: %s (%s)",
						   smc_opt_why_text(why),
						   smc_opt_why_fix(why)));
	if (kc->result == KPEER_CHECK_ACCEPTED && why != SMC_OPT_READY)
		snprintf(msg, sizeof(msg),
			 "smc %s: it ACCEPTs SMC-R, but connections from here "
			 "go on as TCP: %s",
			 who, smc_opt_why_text(why));
	if (msg[0] != '\0') {
		control_send_error(out, msg, lines);
		return;
	}
	data = json_pack("{s:s, s:s, s:I, s:b, s:s, s:o}", "address", who,
			 "result", "accepted", "connect_us",
			 (json_int_t)kc->connect_us, "first_contact",
			 kc->first_contact, "decline",
			 clc_decline_name(kc->decline), "lines", lines);
	control_send_ok(out, data);
}

static void
control_check_reply(const struct control_check *ck, struct evbuffer *out)
{
	if (ck->smc)
		control_check_smc_reply(ck, out);
	else
		control_check_peer_reply(ck, out);
}

/* The next step of a check; its answer once it is done. */
static void
control_check_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct control_check *ck = arg;
	struct control_client *c = ck->client;

	control_check_step(ck);
	if (!ck->done)
		return;
	/* the output drains, and control_write_cb goes on with the client */
	control_check_reply(ck, bufferevent_get_output(c->cc_bev));
	c->cc_check = NULL;
	control_check_free(ck);
	control_rearm(c);
}

/*
 * `check NAME`: test each path the peer's connections take, as they
 * would take it, now: the fallback's (its port, its key, each export its
 * rules open: fallback_check_step) and the link group's (lgr_check_step,
 * on the worker that has an active group to it, else the first).  Nothing
 * it finds puts the peer on the back-off.  Answered when done, within
 * CONTROL_CHECK_TIMEOUT; until then the client's next requests wait, as
 * behind a listing.
 */
static json_t *
control_cmd_check(struct control_req *req)
{
	const char *name =
		json_string_value(json_object_get(req->cr_args, "name"));
	struct control_client *c = req->cr_client;
	struct control_has has = {.peer = name};
	const struct conf_peer *peer;
	struct control_check *ck;
	int i;

	peer = conf_peer_find(control_conf, name);
	if (peer == NULL) {
		control_fail(req, "no peer \"%.64s\"", name);
		return NULL;
	}
	if (worker_count() == 0) {
		control_fail(req, "no worker to check peer %s from", name);
		return NULL;
	}
	ck = control_check_new();
	if (ck == NULL)
		return NULL;
	control_check_exports(ck, peer);
	ck->fc_done = ck->nexports == 0;
	lgr_check_init(&ck->lc, name, CONTROL_CHECK_TIMEOUT * 1000);
	ck->w = worker_get(0);
	for (i = 0; i < worker_count() && !has.found; i++) {
		worker_call(worker_get(i), control_has_cb, &has);
		if (has.found)
			ck->w = worker_get(i);
	}
	log_info("peer %s checked by uid %u pid %d", name,
		 (unsigned int)c->cc_uid, (int)c->cc_pid);
	return control_check_start(req, ck);
}

/*
 * Run check ck for req: at once without a socket (control_request), else
 * stepped by a timer, the client's next requests waiting behind it.
 */
static json_t *
control_check_start(struct control_req *req, struct control_check *ck)
{
	struct control_client *c = req->cr_client;
	struct timeval tv = {0, CONTROL_CHECK_POLL_MS * 1000};

	req->cr_sent = true;
	if (c->cc_bev == NULL) {
		/* without a socket (control_request): the answer now */
		for (;;) {
			control_check_step(ck);
			if (ck->done)
				break;
			usleep(CONTROL_CHECK_POLL_MS * 1000);
		}
		control_check_reply(ck, req->cr_out);
		control_check_free(ck);
		return NULL;
	}
	ck->client = c;
	ck->ev = event_new(control_base, -1, EV_PERSIST, control_check_timer_cb,
			   ck);
	if (ck->ev == NULL || evtimer_add(ck->ev, &tv) != 0) {
		control_check_free(ck);
		req->cr_sent = false;
		return NULL;
	}
	c->cc_check = ck;
	return NULL;
}

/*
 * `check smc ADDRESS`: a kernel SMC-R server probed now (kpeer_check.c),
 * as a target_smc rule would reach it.  Answered when done, within the
 * connect's 5 s and the CLC's 6 s.
 */
static json_t *
control_cmd_check_smc(struct control_req *req)
{
	const char *text =
		json_string_value(json_object_get(req->cr_args, "address"));
	struct control_client *c = req->cr_client;
	struct control_check *ck;
	struct addr to;

	if (addr_parse(text, &to) != 0) {
		control_fail(req,
			     "\"%.64s\" is no address: HOST:PORT, an IPv4 or "
			     "[IPv6] address and a port",
			     text);
		return NULL;
	}
	ck = control_check_new();
	if (ck == NULL)
		return NULL;
	ck->smc = true;
	kpeer_check_init(&ck->kc, ck->conf, &to);
	log_info("kernel SMC-R server %s checked by uid %u pid %d", text,
		 (unsigned int)c->cc_uid, (int)c->cc_pid);
	return control_check_start(req, ck);
}

/* "a, b" of n strings, into buf; "none" for none. */
static void
control_join(char *buf, size_t len, char *const *s, int n)
{
	size_t used = 0;
	int i;

	snprintf(buf, len, "%s", n == 0 ? "none" : "");
	for (i = 0; i < n && used < len; i++) {
		snprintf(buf + used, len - used, "%s%s", i > 0 ? ", " : "",
			 s[i]);
		used = strlen(buf);
	}
}

/*
 * `check export NAME`: whether kernel SMC-R clients of the export's
 * smc_listen can have SMC-R with us, as smc_chk -S says of a server:
 * what smc_opt_ready knows (the option's program, kernel_smc's EIDs and
 * allow list, the address, the devices), each shown, with the fix of
 * what is missing.  Nothing is sent anywhere.
 */
static json_t *
control_cmd_check_export(struct control_req *req)
{
	const char *name =
		json_string_value(json_object_get(req->cr_args, "name"));
	const struct conf_ksmc *k = &control_conf->ksmc;
	const struct conf_export *e;
	char where[ADDR_STRLEN], list[256], msg[ADDR_STRLEN + 256];
	enum smc_opt_why why;
	json_t *lines;

	e = conf_export_find(control_conf, name);
	if (e == NULL) {
		control_fail(req, "no export \"%.64s\"", name);
		return NULL;
	}
	if (e->smc_listen.len == 0) {
		control_fail(req,
			     "export %s has no smc_listen: only peer daemons "
			     "use it (check it from there: smcproxyctl check "
			     "%s)",
			     name, control_conf->name);
		return NULL;
	}
	addr_str(&e->smc_listen, where, sizeof(where));
	why = smc_opt_ready(k, &e->smc_listen, true);
	lines = json_array();
	json_array_append_new(lines, json_sprintf("smc_listen: %s", where));
	json_array_append_new(lines, json_sprintf("kernel_smc: %s",
						  k->enabled ? "on" : "off"));
	json_array_append_new(
		lines, json_sprintf("SMC-R option: %s", smc_opt_state()));
	control_join(list, sizeof(list), k->ueids, k->nueids);
	json_array_append_new(lines,
			      json_sprintf("kernel_smc.ueids: %s", list));
	control_join(list, sizeof(list), k->allow, k->nallow);
	json_array_append_new(lines,
			      json_sprintf("kernel_smc.allow: %s", list));
	json_array_append_new(
		lines, json_sprintf("RDMA devices: %d", ib_device_count()));
	if (why != SMC_OPT_READY) {
		json_array_append_new(
			lines, json_sprintf("fix: %s", smc_opt_why_fix(why)));
		snprintf(msg, sizeof(msg),
			 "export %s: kernel SMC-R clients at %s get TCP: %s",
			 name, where, smc_opt_why_text(why));
		control_send_error(req->cr_out, msg, lines);
		req->cr_sent = true;
		return NULL;
	}
	return control_done(json_pack("{s:s, s:s, s:b, s:o}", "export", name,
				      "smc_listen", where, "ready", true,
				      "lines", lines),
			    "export %s: SMC-R ready at %s", name, where);
}

/*
 * `shutdown` starts the drain SIGTERM starts; `shutdown now` also closes
 * what is open at once (during a drain: cuts it short).  The reply goes
 * out before the control socket closes (control_shutdown flushes it).
 */
static json_t *
control_cmd_shutdown(struct control_req *req)
{
	bool now = strcmp(req->cr_cmd->cm_name, "shutdown now") == 0;
	bool already = control_is_stopping;

	log_info("%s requested by uid %u pid %d", req->cr_cmd->cm_name,
		 (unsigned int)req->cr_client->cc_uid,
		 (int)req->cr_client->cc_pid);
	smcproxyd_shutdown(now);
	if (now)
		return control_done(json_object(),
				    "stopping now: open connections closed");
	if (already)
		return control_done(json_object(),
				    "already stopping (\"shutdown now\" closes "
				    "the open connections)");
	return control_done(json_object(),
			    "stopping: open connections get %d s to finish "
			    "(\"shutdown now\" closes them at once)",
			    control_conf->shutdown_timeout);
}

/* Config errors, one line each, as an array of strings. */
static json_t *
control_lines(const char *text)
{
	json_t *arr;
	const char *nl;
	char *line;

	arr = json_array();
	while (arr != NULL && *text != '\0') {
		nl = strchr(text, '\n');
		if (nl == NULL)
			nl = text + strlen(text);
		line = strndup(text, (size_t)(nl - text));
		if (line != NULL && *line != '\0')
			json_array_append_new(arr, control_text(line));
		free(line);
		text = *nl != '\0' ? nl + 1 : nl;
	}
	return arr;
}

static json_t *
control_cmd_reload(struct control_req *req)
{
	struct control_client *c = req->cr_client;
	char *errors = NULL;
	size_t len = 0;
	json_t *data;
	FILE *f;
	int rc;

	f = open_memstream(&errors, &len);
	if (f == NULL) {
		control_fail(req, "out of memory");
		return NULL;
	}
	log_info("reload requested by uid %u pid %d", (unsigned int)c->cc_uid,
		 (int)c->cc_pid);
	rc = smcproxyd_reload(f);
	fclose(f);
	if (rc < 0) {
		if (rc == -EINVAL)
			control_fail(req, "configuration has errors, "
					  "not reloading");
		else
			control_fail(req, "reload failed: %s", strerror(-rc));
		req->cr_details = control_lines(errors);
		free(errors);
		return NULL;
	}
	data = json_pack("{s:o}", "warnings", control_lines(errors));
	free(errors);
	return control_done(
		data,
		"reloaded %s: configuration OK, %d rule%s, "
		"%d peer%s, %d export%s",
		control_conf->path, control_conf->nrules,
		control_conf->nrules == 1 ? "" : "s", control_conf->npeers,
		control_conf->npeers == 1 ? "" : "s", control_conf->nexports,
		control_conf->nexports == 1 ? "" : "s");
}

/*
 * `log-level`: the level now; `log-level LEVEL` sets it (at once, for
 * every thread) until a reload or a restart sets the configuration's.
 */
static json_t *
control_cmd_log_level(struct control_req *req)
{
	const char *name =
		json_string_value(json_object_get(req->cr_args, "level"));
	enum log_level was = log_get_level(), level;

	if (name == NULL)
		return control_done(
			json_pack("{s:s}", "level", log_level_name(was)),
			"log level: %s", log_level_name(was));
	if (log_level_parse(name, &level) < 0) {
		control_fail(req,
			     "unknown log level \"%.32s\" (want error, "
			     "warning, info or debug)",
			     name);
		return NULL;
	}
	/* said at info, at the more verbose of the two levels */
	if (level >= was)
		log_set_level(level);
	control_admin(req, MONITOR_LOG_LEVEL, LOG_NOWHERE,
		      "log level set to %s (was %s)", log_level_name(level),
		      log_level_name(was));
	log_set_level(level);
	return control_done(json_pack("{s:s, s:s}", "level",
				      log_level_name(level), "was",
				      log_level_name(was)),
			    "log level: %s (was %s)", log_level_name(level),
			    log_level_name(was));
}

static bool control_unlimited(uid_t uid);

/*
 * `monitor`: once this answer is written, the connection is monitor.c's
 * (control_process hands it over) and carries events only.
 */
static json_t *
control_cmd_monitor(struct control_req *req)
{
	struct control_client *c = req->cr_client;
	char why[128];

	if (c->cc_bev == NULL) {
		control_fail(req, "\"monitor\" needs the control socket");
		return NULL;
	}
	if (monitor_room(c->cc_uid, control_unlimited(c->cc_uid), why,
			 sizeof(why)) < 0) {
		control_fail(req, "%s", why);
		return NULL;
	}
	c->cc_monitor = true;
	return control_done(json_object(),
			    "monitoring: one line per event until the "
			    "connection closes");
}

static json_t *
control_commands_json(void)
{
	const struct control_cmd *cm;
	const struct control_arg *a;
	json_t *cmds, *args;
	size_t i;

	cmds = json_array();
	for (i = 0; i < CONTROL_NCMDS; i++) {
		cm = &control_cmds[i];
		args = json_array();
		for (a = cm->cm_args; a != NULL && a->ca_name != NULL; a++)
			json_array_append_new(
				args, json_pack("{s:s, s:s, s:b}", "name",
						a->ca_name, "type",
						a->ca_type == CONTROL_ARG_ID ?
							"integer or string" :
						a->ca_type == CONTROL_ARG_NAME ?
							"string" :
							"seconds",
						"required", a->ca_required));
		json_array_append_new(
			cmds, json_pack("{s:s, s:b, s:s, s:o, s:s}", "name",
					cm->cm_name, "mutating",
					(cm->cm_flags & CONTROL_MUTATING) != 0,
					"access",
					cm->cm_flags & (CONTROL_MUTATING |
							CONTROL_ADMIN) ?
						"admin" :
					cm->cm_flags & CONTROL_SETS ?
						"read, admin to set" :
						"read",
					"args", args, "help", cm->cm_help));
	}
	return cmds;
}

static json_t *
control_cmd_schema(struct control_req *req)
{
	return json_pack("{s:i, s:o, s:o}", "protocol", CONTROL_VERSION,
			 "stats", stats_schema_json(), "commands",
			 control_commands_json());
}

static json_t *
control_cmd_help(struct control_req *req)
{
	return json_pack("{s:o}", "commands", control_commands_json());
}

/******** requests ********/

static bool
control_privileged(const struct control_client *c)
{
	const struct conf *conf = control_conf;
	int i;

	if (c->cc_uid == 0 || c->cc_uid == geteuid())
		return true;
	if (conf->control_uid >= 0 && c->cc_uid == (uid_t)conf->control_uid)
		return true;
	if (conf->control_gid < 0)
		return false;
	if (c->cc_gid == (gid_t)conf->control_gid)
		return true;
	for (i = 0; i < c->cc_ngroups; i++)
		if (c->cc_groups[i] == (gid_t)conf->control_gid)
			return true;
	return false;
}

static const struct control_cmd *
control_cmd_find(const char *name)
{
	size_t i;

	for (i = 0; i < CONTROL_NCMDS; i++)
		if (strcmp(control_cmds[i].cm_name, name) == 0)
			return &control_cmds[i];
	return NULL;
}

/* A non-negative integer, or a string of at most 12 digits. */
static bool
control_is_seconds(const json_t *v)
{
	const char *s = json_string_value(v);
	size_t n;

	if (json_is_integer(v))
		return json_integer_value(v) >= 0;
	if (s == NULL)
		return false;
	n = strspn(s, "0123456789");
	return n > 0 && n <= 12 && s[n] == '\0';
}

/* Check args against the command's table; 0 or -EINVAL after control_fail. */
static int
control_check_args(struct control_req *req)
{
	const struct control_cmd *cm = req->cr_cmd;
	const struct control_arg *a;
	const char *key;
	json_t *v;

	if (req->cr_args == NULL)
		req->cr_args = json_object();
	else
		json_incref(req->cr_args);
	json_object_foreach(req->cr_args, key, v) {
		for (a = cm->cm_args; a != NULL && a->ca_name != NULL; a++)
			if (strcmp(a->ca_name, key) == 0)
				break;
		if (a == NULL || a->ca_name == NULL) {
			control_fail(req,
				     "command \"%s\" takes no argument "
				     "\"%s\"",
				     cm->cm_name, key);
			return -EINVAL;
		}
		if (!json_is_integer(v) && !json_is_string(v)) {
			control_fail(req,
				     "argument \"%s\" must be an integer "
				     "or a string",
				     key);
			return -EINVAL;
		}
		if (a->ca_type == CONTROL_ARG_NAME && !json_is_string(v)) {
			control_fail(req, "argument \"%s\" must be a string",
				     key);
			return -EINVAL;
		}
		if (a->ca_type == CONTROL_ARG_SECONDS &&
		    !control_is_seconds(v)) {
			control_fail(req,
				     "argument \"%s\" must be a number of "
				     "seconds",
				     key);
			return -EINVAL;
		}
	}
	for (a = cm->cm_args; a != NULL && a->ca_name != NULL; a++) {
		if (a->ca_required &&
		    json_object_get(req->cr_args, a->ca_name) == NULL) {
			control_fail(req,
				     "command \"%s\" needs argument "
				     "\"%s\"",
				     cm->cm_name, a->ca_name);
			return -EINVAL;
		}
	}
	return 0;
}

/* Parse one request and check it; 0 or -EINVAL after control_fail. */
static int
control_parse(struct control_req *req, json_t *root)
{
	const char *key, *name;
	json_t *v;

	if (!json_is_object(root)) {
		control_fail(req,
			     "a request must be a JSON object, like "
			     "{\"v\":%d,\"cmd\":\"help\"}",
			     CONTROL_VERSION);
		return -EINVAL;
	}
	json_object_foreach(root, key, v) {
		if (strcmp(key, "v") != 0 && strcmp(key, "cmd") != 0 &&
		    strcmp(key, "args") != 0) {
			control_fail(req,
				     "unknown request member \"%s\" "
				     "(want v, cmd, args)",
				     key);
			return -EINVAL;
		}
	}
	v = json_object_get(root, "v");
	if (v == NULL || !json_is_integer(v)) {
		control_fail(req, "\"v\" must be the protocol version, %d",
			     CONTROL_VERSION);
		return -EINVAL;
	}
	if (json_integer_value(v) != CONTROL_VERSION) {
		control_fail(req,
			     "unsupported protocol version %lld "
			     "(this daemon speaks %d)",
			     (long long)json_integer_value(v), CONTROL_VERSION);
		return -EINVAL;
	}
	name = json_string_value(json_object_get(root, "cmd"));
	if (name == NULL) {
		control_fail(req, "\"cmd\" must be a command name string");
		return -EINVAL;
	}
	req->cr_cmd = control_cmd_find(name);
	if (req->cr_cmd == NULL) {
		control_fail(req, "unknown command \"%.64s%s\" (try \"help\")",
			     name, strlen(name) > 64 ? "..." : "");
		return -EINVAL;
	}
	req->cr_args = json_object_get(root, "args");
	if (req->cr_args != NULL && !json_is_object(req->cr_args)) {
		req->cr_args = NULL;
		control_fail(req, "\"args\" must be an object");
		return -EINVAL;
	}
	return control_check_args(req);
}

/*
 * Answer one request line of @c (without its newline) into @out.  0 when
 * the command ran (its answer may still be an error), -EINVAL or -EACCES
 * when the request was refused, -ENODATA for a blank line (no reply).
 */
static int
control_handle(struct control_client *c, struct evbuffer *out, const char *line,
	       size_t len)
{
	struct control_req req = {.cr_client = c, .cr_out = out};
	json_error_t jerr;
	json_t *root, *data = NULL;
	int rc = -EINVAL;

	while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ' ||
			   line[len - 1] == '\t'))
		len--;
	if (len == 0)
		return -ENODATA; /* blank lines are not requests */

	root = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY,
			  &jerr);
	if (root == NULL) {
		control_fail(&req, "invalid JSON at column %d: %s", jerr.column,
			     jerr.text);
		goto reply;
	}
	if (control_parse(&req, root) < 0)
		goto reply;
	if (((req.cr_cmd->cm_flags & (CONTROL_MUTATING | CONTROL_ADMIN)) ||
	     ((req.cr_cmd->cm_flags & CONTROL_SETS) &&
	      json_object_size(req.cr_args) > 0)) &&
	    !control_privileged(c)) {
		control_fail(&req,
			     "permission denied: \"%s\"%s needs root, the "
			     "daemon's user, or control_uid/control_gid "
			     "(you are uid %u)",
			     req.cr_cmd->cm_name,
			     req.cr_cmd->cm_flags & CONTROL_SETS ?
				     " with an argument" :
				     "",
			     (unsigned int)c->cc_uid);
		rc = -EACCES;
		goto reply;
	}
	if ((req.cr_cmd->cm_flags & CONTROL_RUNNING) && control_is_stopping) {
		control_fail(&req,
			     "smcproxyd is shutting down: \"%s\" is refused",
			     req.cr_cmd->cm_name);
		goto reply;
	}
	rc = 0;
	data = req.cr_cmd->cm_fn(&req);
	if (data == NULL && req.cr_error == NULL && !req.cr_sent)
		control_fail(&req, "out of memory");

reply:
	if (data != NULL)
		control_send_ok(req.cr_out, data);
	else if (!req.cr_sent)
		control_send_error(req.cr_out,
				   req.cr_error != NULL ? req.cr_error :
							  "out of memory",
				   req.cr_details);
	else
		json_decref(req.cr_details);
	free(req.cr_error);
	json_decref(req.cr_args);
	json_decref(root);
	return rc;
}

/******** clients ********/

static void
control_client_free(struct control_client *c)
{
	TAILQ_REMOVE(&control_clients, c, cc_entry);
	control_nclients--;
	if (c->cc_deadline != NULL)
		event_free(c->cc_deadline);
	control_listing_free(c->cc_listing);
	control_check_free(c->cc_check);
	if (c->cc_bev != NULL)
		bufferevent_free(c->cc_bev);
	free(c->cc_groups);
	free(c);
}

/* The earliest deadline of @c now, in CLOCK_MONOTONIC ms. */
static int64_t
control_deadline(const struct control_client *c)
{
	int64_t t = c->cc_request_ms + CONTROL_IDLE_TIMEOUT * 1000;

	if (c->cc_line_ms != 0 &&
	    c->cc_line_ms + CONTROL_LINE_TIMEOUT * 1000 < t)
		t = c->cc_line_ms + CONTROL_LINE_TIMEOUT * 1000;
	if (c->cc_reply_ms != 0 &&
	    c->cc_reply_ms + CONTROL_WRITE_TIMEOUT * 1000 < t)
		t = c->cc_reply_ms + CONTROL_WRITE_TIMEOUT * 1000;
	return t;
}

/*
 * Note when unsent output began and set the timer to the earliest
 * deadline.  The deadlines are fixed points, so calling this on every
 * read or write does not move them.
 */
static void
control_rearm(struct control_client *c)
{
	size_t unsent = evbuffer_get_length(bufferevent_get_output(c->cc_bev));
	int64_t now = (int64_t)now_ms(), wait;
	struct timeval tv;

	if (unsent == 0)
		c->cc_reply_ms = 0;
	else if (c->cc_reply_ms == 0)
		c->cc_reply_ms = now;
	wait = control_deadline(c) - now;
	if (wait < 0)
		wait = 0;
	tv.tv_sec = (time_t)(wait / 1000);
	tv.tv_usec = (suseconds_t)(wait % 1000) * 1000;
	evtimer_add(c->cc_deadline, &tv);
}

/* Close a client that said EOF once its last request is answered. */
static bool
control_client_done(struct control_client *c)
{
	if (!c->cc_eof || c->cc_listing != NULL || c->cc_check != NULL ||
	    evbuffer_get_length(bufferevent_get_input(c->cc_bev)) > 0 ||
	    evbuffer_get_length(bufferevent_get_output(c->cc_bev)) > 0)
		return false;
	control_client_free(c);
	return true;
}

/*
 * The client said `monitor` and was answered: its connection is
 * monitor.c's from now on, and it no longer holds a control slot.
 */
static void
control_to_monitor(struct control_client *c)
{
	struct bufferevent *bev = c->cc_bev;

	bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
	c->cc_bev = NULL;
	if (monitor_subscribe(bev, c->cc_uid, c->cc_pid,
			      control_unlimited(c->cc_uid)) < 0)
		log_warnx("control: client uid %u pid %d: no memory to "
			  "monitor",
			  (unsigned int)c->cc_uid, (int)c->cc_pid);
	control_client_free(c);
}

/* A partial line is pending (or being skipped): its deadline runs. */
static void
control_line_pending(struct control_client *c, size_t len)
{
	if (len == 0 && !c->cc_discard)
		c->cc_line_ms = 0;
	else if (c->cc_line_ms == 0)
		c->cc_line_ms = (int64_t)now_ms();
}

/*
 * Answer the complete lines in the input, one by one, until the unsent
 * output passes CONTROL_OUT_MAX or a listing is being rendered: then stop
 * reading from this client until the output has drained and the listing
 * is done (control_write_cb).  Each line answered (blank ones are not
 * requests) starts the idle deadline again.  After `monitor` the client
 * is handed to monitor.c, the rest of its input with it.
 * Return: true when @c is gone (a monitor now, or freed).
 */
static bool
control_process(struct control_client *c)
{
	struct evbuffer *in = bufferevent_get_input(c->cc_bev);
	struct evbuffer *out = bufferevent_get_output(c->cc_bev);
	struct evbuffer_ptr eol;
	size_t eol_len, len;
	char *line;

	for (;;) {
		if (c->cc_listing != NULL || c->cc_check != NULL ||
		    evbuffer_get_length(out) > CONTROL_OUT_MAX) {
			/* the reply deadline runs, not the line's */
			c->cc_line_ms = 0;
			bufferevent_disable(c->cc_bev, EV_READ);
			return false;
		}
		eol = evbuffer_search_eol(in, NULL, &eol_len, EVBUFFER_EOL_LF);
		len = eol.pos == -1 ? evbuffer_get_length(in) : (size_t)eol.pos;
		if (eol.pos == -1 && !c->cc_eof) {
			if (c->cc_discard) {
				evbuffer_drain(in, len);
			} else if (len > CONTROL_LINE_MAX) {
				control_send_errorf(out,
						    "request longer than "
						    "%d bytes",
						    CONTROL_LINE_MAX);
				evbuffer_drain(in, len);
				c->cc_discard = true;
			}
			control_line_pending(c, len);
			return false;
		}
		if (eol.pos == -1 && len == 0)
			return false; /* EOF and nothing left */
		if (c->cc_discard) {
			c->cc_discard = false;
			c->cc_request_ms = (int64_t)now_ms();
		} else if (len > CONTROL_LINE_MAX) {
			control_send_errorf(out, "request longer than %d bytes",
					    CONTROL_LINE_MAX);
			c->cc_request_ms = (int64_t)now_ms();
		} else {
			line = (char *)evbuffer_pullup(in, (ssize_t)len);
			if (control_handle(c, out, line, len) != -ENODATA)
				c->cc_request_ms = (int64_t)now_ms();
		}
		c->cc_line_ms = 0;
		evbuffer_drain(in, len + (eol.pos == -1 ? 0 : eol_len));
		if (c->cc_monitor) {
			control_to_monitor(c);
			return true;
		}
	}
}

static void
control_read_cb(struct bufferevent *bev, void *arg)
{
	struct control_client *c = arg;

	if (!control_process(c))
		control_rearm(c);
}

/*
 * All output sent: render more of a listing, else answer what waited,
 * resume reading or close.
 */
static void
control_write_cb(struct bufferevent *bev, void *arg)
{
	struct control_client *c = arg;
	struct evbuffer *out = bufferevent_get_output(bev);

	if (c->cc_listing != NULL &&
	    control_listing_more(c->cc_listing, out, CONTROL_LISTING_OUT)) {
		control_listing_free(c->cc_listing);
		c->cc_listing = NULL;
	}
	if (c->cc_listing == NULL && c->cc_check == NULL &&
	    (bufferevent_get_enabled(bev) & EV_READ) == 0) {
		if (control_process(c) || control_client_done(c))
			return;
		if (c->cc_listing == NULL && c->cc_check == NULL &&
		    !c->cc_eof && evbuffer_get_length(out) <= CONTROL_OUT_MAX)
			bufferevent_enable(bev, EV_READ);
	}
	control_rearm(c);
}

static void
control_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct control_client *c = arg;

	if (what & BEV_EVENT_EOF) {
		c->cc_eof = true;
		if (!control_process(c) && !control_client_done(c))
			control_rearm(c);
		return;
	}
	if (what & BEV_EVENT_ERROR)
		log_debug("control: client pid %d: %s", (int)c->cc_pid,
			  strerror(EVUTIL_SOCKET_ERROR()));
	control_client_free(c);
}

/*
 * A deadline passed.  A client that is not reading gets nothing more; one
 * whose request line stalled is told why, so that a person typing into
 * socat sees it.
 */
static void
control_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	static const char slow[] = "{\"v\":1,\"ok\":false,\"error\":"
				   "\"request line not complete within "
				   "10 s\"}\n";
	struct control_client *c = arg;
	struct evbuffer *out = bufferevent_get_output(c->cc_bev);
	int64_t now = (int64_t)now_ms();
	const char *why;

	_Static_assert(CONTROL_LINE_TIMEOUT == 10, "fix the message");
	if (control_deadline(c) > now) {
		control_rearm(c);
		return;
	}
	if (c->cc_reply_ms != 0 &&
	    now >= c->cc_reply_ms + CONTROL_WRITE_TIMEOUT * 1000) {
		why = "reply not taken";
	} else if (c->cc_line_ms != 0 &&
		   now >= c->cc_line_ms + CONTROL_LINE_TIMEOUT * 1000) {
		why = "request line not complete";
		if (evbuffer_get_length(out) == 0 &&
		    write(bufferevent_getfd(c->cc_bev), slow,
			  sizeof(slow) - 1) == -1)
			log_debug("control: write: %s", strerror(errno));
	} else {
		why = "idle";
	}
	log_debug("control: client uid %u pid %d: %s, closing",
		  (unsigned int)c->cc_uid, (int)c->cc_pid, why);
	control_client_free(c);
}

/* The peer's uid, gid and supplementary groups; 0 or -errno. */
static int
control_peer_creds(int fd, struct control_client *c)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1)
		return -errno;
	c->cc_pid = cred.pid;
	c->cc_uid = cred.uid;
	c->cc_gid = cred.gid;
#ifdef SO_PEERGROUPS
	len = 0;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, NULL, &len) == -1 &&
	    errno == ERANGE && len > 0) {
		c->cc_groups = malloc(len);
		if (c->cc_groups == NULL)
			return -ENOMEM;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, c->cc_groups,
			       &len) == -1)
			len = 0;
		c->cc_ngroups = (int)(len / sizeof(gid_t));
	}
#endif
	return 0;
}

/* Root and the daemon's own user are not held to the per-user limits. */
static bool
control_unlimited(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

/*
 * Whether a client of @uid may not have a slot now, and why in @why: the
 * slots are all taken, its uid holds CONTROL_MAX_PER_UID, or only the
 * CONTROL_RESERVED slots of root and the daemon's user are left.
 */
static bool
control_refused(uid_t uid, char *why, size_t len)
{
	const struct control_client *c;
	int mine = 0, limited = 0;

	if (control_nclients >= CONTROL_MAX_CLIENTS) {
		snprintf(why, len, "too many control clients");
		return true;
	}
	if (control_unlimited(uid))
		return false;
	TAILQ_FOREACH(c, &control_clients, cc_entry) {
		if (c->cc_uid == uid)
			mine++;
		if (!control_unlimited(c->cc_uid))
			limited++;
	}
	if (mine >= CONTROL_MAX_PER_UID) {
		snprintf(why, len,
			 "too many control clients for uid %u (at most %d "
			 "per user)",
			 (unsigned int)uid, CONTROL_MAX_PER_UID);
		return true;
	}
	if (limited >= CONTROL_MAX_CLIENTS - CONTROL_RESERVED) {
		snprintf(why, len,
			 "too many control clients (the last %d are kept "
			 "for root and the daemon's user)",
			 CONTROL_RESERVED);
		return true;
	}
	return false;
}

/* Tell a client why it has no slot, in one line, and close it. */
static void
control_refuse(int fd, const struct control_client *c, const char *msg)
{
	struct evbuffer *out;

	log_warnx("%d control clients already, refusing one of uid %u "
		  "pid %d: %s",
		  control_nclients, (unsigned int)c->cc_uid, (int)c->cc_pid,
		  msg);
	out = evbuffer_new();
	if (out != NULL) {
		control_send_error(out, msg, NULL);
		/* a fresh socket takes a line: no need to wait for room */
		if (evbuffer_write(out, fd) == -1)
			log_debug("control: write: %s", strerror(errno));
		evbuffer_free(out);
	}
	close(fd);
}

static void
control_accept_cb(struct evconnlistener *l, evutil_socket_t fd,
		  struct sockaddr *sa, int salen, void *arg)
{
	struct control_client *c;
	char why[128];
	int rc;

	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		log_warn("control: calloc");
		close(fd);
		return;
	}
	rc = control_peer_creds(fd, c);
	if (rc < 0) {
		errno = -rc;
		log_warn("control: client credentials");
		goto fail;
	}
	if (control_refused(c->cc_uid, why, sizeof(why))) {
		control_refuse(fd, c, why);
		fd = -1;
		goto fail;
	}
	c->cc_bev =
		bufferevent_socket_new(control_base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (c->cc_bev == NULL) {
		log_warnx("control: bufferevent_socket_new failed");
		goto fail;
	}
	fd = -1;
	c->cc_deadline = evtimer_new(control_base, control_deadline_cb, c);
	if (c->cc_deadline == NULL) {
		log_warnx("control: evtimer_new failed");
		goto fail;
	}
	c->cc_request_ms = (int64_t)now_ms();
	bufferevent_setcb(c->cc_bev, control_read_cb, control_write_cb,
			  control_event_cb, c);
	bufferevent_enable(c->cc_bev, EV_READ | EV_WRITE);
	TAILQ_INSERT_TAIL(&control_clients, c, cc_entry);
	control_nclients++;
	control_rearm(c);
	log_debug("control: client uid %u pid %d", (unsigned int)c->cc_uid,
		  (int)c->cc_pid);
	return;

fail:
	if (c->cc_bev != NULL)
		bufferevent_free(c->cc_bev);
	if (fd != -1)
		close(fd);
	free(c->cc_groups);
	free(c);
}

static void
control_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	evconnlistener_enable(control_listener);
}

/* Out of descriptors: stop accepting for a second, or we would spin. */
static void
control_accept_error_cb(struct evconnlistener *l, void *arg)
{
	struct timeval one = {1, 0};
	int err = EVUTIL_SOCKET_ERROR();

	log_warnx("control: accept: %s", strerror(err));
	if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
		evconnlistener_disable(l);
		evtimer_add(control_resume_ev, &one);
	}
}

/******** the socket ********/

/* Create the missing directories above @path, like mkdir -p. */
static int
control_mkdirs(const char *path)
{
	char dir[sizeof(control_path)];
	char *p;

	snprintf(dir, sizeof(dir), "%s", path);
	p = strrchr(dir, '/');
	if (p == NULL || p == dir)
		return 0;
	*p = '\0';
	for (p = dir + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0755) == -1 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(dir, 0755) == -1 && errno != EEXIST)
		return -errno;
	return 0;
}

/*
 * Remove a socket left by a daemon that died, but never a live daemon's
 * socket nor something that is not a socket.  0 or -errno, logged.
 */
static int
control_unlink_stale(const struct sockaddr_un *sun)
{
	const char *path = sun->sun_path;
	struct stat sb;
	int fd, rc;

	if (lstat(path, &sb) == -1) {
		if (errno == ENOENT)
			return 0;
		rc = -errno;
		log_warn("control: %s", path);
		return rc;
	}
	if (!S_ISSOCK(sb.st_mode)) {
		log_warnx("control: %s exists and is not a socket", path);
		return -EEXIST;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		rc = -errno;
		log_warn("control: socket");
		return rc;
	}
	rc = connect(fd, (const struct sockaddr *)sun, sizeof(*sun));
	close(fd);
	if (rc == 0) {
		log_warnx("control: %s is in use by another daemon", path);
		return -EADDRINUSE;
	}
	if (errno != ECONNREFUSED || unlink(path) == -1) {
		rc = -errno;
		log_warn("control: %s: cannot replace it", path);
		return rc;
	}
	log_info("control: removed stale control socket %s", path);
	return 0;
}

static int
control_listen(const struct conf *conf)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	const char *path = conf->control_socket != NULL ?
				   conf->control_socket :
				   CONTROL_SOCKET_DEFAULT;
	struct stat sb;
	mode_t old;
	int fd = -1, rc;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		log_warnx("control: %s: path too long", path);
		return -ENAMETOOLONG;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	rc = control_mkdirs(path);
	if (rc < 0) {
		errno = -rc;
		log_warn("control: %s: creating its directory", path);
		return rc;
	}
	rc = control_unlink_stale(&sun);
	if (rc < 0)
		return rc;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		rc = -errno;
		log_warn("control: socket");
		return rc;
	}
	/* no moment with wider permissions than asked for */
	old = umask(0177);
	rc = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (rc == -1) {
		rc = -errno;
		log_warn("control: bind %s", path);
		goto fail;
	}
	if (chmod(path, (mode_t)conf->control_mode) == -1) {
		rc = -errno;
		log_warn("control: chmod %s", path);
		goto fail_unlink;
	}
	if (conf->control_gid >= 0 &&
	    chown(path, (uid_t)-1, (gid_t)conf->control_gid) == -1)
		log_warn("control: chown %s to group %d", path,
			 conf->control_gid);
	if (listen(fd, CONTROL_BACKLOG) == -1 || stat(path, &sb) == -1) {
		rc = -errno;
		log_warn("control: listen %s", path);
		goto fail_unlink;
	}
	control_listener = evconnlistener_new(
		control_base, control_accept_cb, NULL,
		LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fd);
	if (control_listener == NULL) {
		rc = -ENOMEM;
		log_warnx("control: evconnlistener_new failed");
		goto fail_unlink;
	}
	evconnlistener_set_error_cb(control_listener, control_accept_error_cb);
	memcpy(control_path, path, strlen(path) + 1);
	control_dev = sb.st_dev;
	control_ino = sb.st_ino;
	return 0;

fail_unlink:
	unlink(path);
fail:
	close(fd);
	return rc;
}

/**
 * control_init() - Open the control socket on @base, the main thread's
 * event_base, and serve it there; @conf is the running configuration.
 * Return: 0, or a negative errno (already logged).
 */
int
control_init(const struct conf *conf, struct event_base *base)
{
	struct timespec now;
	int rc;

	control_base = base;
	control_conf = conf;
	clock_gettime(CLOCK_MONOTONIC, &control_started);
	clock_gettime(CLOCK_REALTIME, &now);
	control_start_time = (double)now.tv_sec + (double)now.tv_nsec / 1e9;
	control_resume_ev = evtimer_new(base, control_resume_cb, NULL);
	if (control_resume_ev == NULL)
		return -ENOMEM;
	rc = monitor_init(base);
	if (rc == 0)
		rc = control_listen(conf);
	if (rc < 0) {
		monitor_shutdown();
		event_free(control_resume_ev);
		control_resume_ev = NULL;
		return rc;
	}
	log_debug("control: listening on %s", control_path);
	return 0;
}

/**
 * control_conf_update() - Serve @conf from now on (after a reload).  The
 * caller keeps it alive until the next update or control_shutdown().  The
 * socket itself stays where it is until a restart.
 */
/*
 * The daemon is stopping: the commands that would reopen listeners or
 * reconfigure (reload, enable rule, ...) are refused from now on; the
 * others (show conns, stats, kill conns, shutdown now) go on being served
 * while open connections drain.
 */
void
control_stopping(void)
{
	control_is_stopping = true;
}

void
control_conf_update(const struct conf *conf)
{
	const char *path = conf->control_socket != NULL ?
				   conf->control_socket :
				   CONTROL_SOCKET_DEFAULT;

	if (control_listener != NULL && strcmp(path, control_path) != 0)
		log_warnx("control socket stays %s until a restart",
			  control_path);
	control_conf = conf;
}

/**
 * control_shutdown() - Close every client and the socket, and remove the
 * socket file if it is still ours.  Safe after a failed control_init().
 */
void
control_shutdown(void)
{
	struct control_client *c;
	struct evbuffer *out;
	struct stat sb;

	/*
	 * What was answered last (`shutdown now`) still goes out.  A socket
	 * bufferevent keeps the front of its output frozen (only it writes
	 * from there); it is freed right after, so write it out here.
	 */
	TAILQ_FOREACH(c, &control_clients, cc_entry) {
		out = bufferevent_get_output(c->cc_bev);
		evbuffer_unfreeze(out, 1);
		(void)evbuffer_write(out, bufferevent_getfd(c->cc_bev));
	}
	while (!TAILQ_EMPTY(&control_clients))
		control_client_free(TAILQ_FIRST(&control_clients));
	monitor_shutdown();
	control_is_stopping = false;
	if (control_listener != NULL) {
		evconnlistener_free(control_listener);
		control_listener = NULL;
		if (stat(control_path, &sb) == 0 && sb.st_dev == control_dev &&
		    sb.st_ino == control_ino)
			unlink(control_path);
	}
	if (control_resume_ev != NULL) {
		event_free(control_resume_ev);
		control_resume_ev = NULL;
	}
	control_conf = NULL;
}

/**
 * control_request() - Answer one request line as the socket answers a
 * client running as the daemon's own user, without a socket or an event
 * loop: for the fuzz target and tests.  @line is @len bytes without the
 * newline (the socket hands over at most CONTROL_LINE_MAX); it serves the
 * configuration of control_init() or control_conf_update() and the workers
 * running, if any.
 * Return: 0 when the command ran (its answer may still be an error, like
 * "no connection 0x1f"), -EINVAL when the request was refused, -ENODATA
 * for a blank line, -ENOENT before there is a configuration, -ENOMEM.
 * *@reply is the reply line with its newline, NUL-terminated, for the
 * caller to free(); NULL when there is none.
 */
int
control_request(const char *line, size_t len, char **reply)
{
	struct control_client c = {
		.cc_pid = getpid(),
		.cc_uid = geteuid(),
		.cc_gid = getegid(),
	};
	struct evbuffer *out;
	size_t n;
	int rc;

	*reply = NULL;
	if (control_conf == NULL)
		return -ENOENT;
	out = evbuffer_new();
	if (out == NULL)
		return -ENOMEM;
	rc = control_handle(&c, out, line, len);
	n = evbuffer_get_length(out);
	if (n > 0) {
		*reply = malloc(n + 1);
		if (*reply == NULL) {
			rc = -ENOMEM;
		} else {
			evbuffer_remove(out, *reply, n);
			(*reply)[n] = '\0';
		}
	}
	evbuffer_free(out);
	return rc;
}
