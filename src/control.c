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
 *
 * Here: the socket, its clients, the requests, the table and the admin
 * commands.  The stats and show commands are control_show.c's, the check
 * commands control_check.c's, the replies control_reply.c's (control_int.h
 * has what the four share); none of them calls this file.
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
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
#include "control_int.h"
#include "monitor.h"

#define CONTROL_OUT_MAX (256 * 1024) /* unsent bytes before we stop reading */
#define CONTROL_IDLE_TIMEOUT 60	     /* seconds after the last request */
#define CONTROL_LINE_TIMEOUT 10	     /* seconds to complete a request line */
#define CONTROL_WRITE_TIMEOUT 30     /* seconds to take a reply */
#define CONTROL_MAX_CLIENTS 64
#define CONTROL_RESERVED 8     /* slots only root and the daemon's user get */
#define CONTROL_MAX_PER_UID 16 /* for any other uid */
#define CONTROL_BACKLOG 16

TAILQ_HEAD(control_clients, control_client);

static struct evconnlistener *control_listener;
static struct event *control_resume_ev; /* accept paused on EMFILE */
static struct control_clients control_clients =
	TAILQ_HEAD_INITIALIZER(control_clients);
static int control_nclients;
static char control_path[sizeof(((struct sockaddr_un *)NULL)->sun_path)];
static dev_t control_dev;
static ino_t control_ino;
static bool control_is_stopping;

static json_t *control_cmd_version(struct control_req *req);
static json_t *control_cmd_kill(struct control_req *req);
static json_t *control_cmd_kill_conns(struct control_req *req);
static json_t *control_cmd_rule_enable(struct control_req *req);
static json_t *control_cmd_peer_drain(struct control_req *req);
static json_t *control_cmd_shutdown(struct control_req *req);
static json_t *control_cmd_reload(struct control_req *req);
static json_t *control_cmd_log_level(struct control_req *req);
static json_t *control_cmd_monitor(struct control_req *req);
static json_t *control_cmd_schema(struct control_req *req);
static json_t *control_cmd_help(struct control_req *req);
static void control_rearm(struct control_client *c);

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

/******** helpers for the commands ********/

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
		control_conf->smcr.enabled, "smc_option", smc_opt_state());
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
	struct control_req req = {
		.cr_client = c, .cr_out = out, .cr_resume = control_rearm};
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
