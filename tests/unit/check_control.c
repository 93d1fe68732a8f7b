// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unit tests for control.c, through a real control socket on a private
 * event_base: every command, every error reply (the connection staying
 * usable after each), oversized lines, pipelining, EOF, a client that
 * never reads (its listing rendered no further than it takes), 10 000
 * connections in one answer gathered in bounded chunks (sessions coming
 * and going between them), a request line that trickles in, the socket
 * file's life (mode, stale socket, live socket, not a socket) and, when
 * run as root, permissions of mutating commands and the per-uid client
 * limits for other uids.
 *
 * Workers, sessions and reload are test doubles here (the peer registry,
 * peer.c, is the real one); system tests drive the real ones.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <check.h>
#include <event2/event.h>
#include <jansson.h>

#include "smcproxyd.h"
#include "clc_wire.h"

#define NWORKERS 2
#define NOBODY 65534

/******** test doubles ********/

struct worker {
	int id;
	struct stats stats;
	LIST_HEAD(, session) sessions; /* all zero: empty */
};

static struct worker workers[NWORKERS];
static int ncalls;	      /* worker_call()s */
static int call_sessions;     /* session_json_add()s in this worker_call() */
static int max_call_sessions; /* the most in one worker_call() */
static void (*between_calls)(int ncall); /* NULL, or runs after each call */
static uint64_t killed_id;
static int reload_rc;
static struct session *session_pool;

int
worker_count(void)
{
	return NWORKERS;
}

struct worker *
worker_get(int i)
{
	return &workers[i];
}

struct stats *
worker_stats(struct worker *w)
{
	return &w->stats;
}

void
worker_call(struct worker *w, worker_fn fn, void *arg)
{
	ncalls++;
	call_sessions = 0;
	fn(w, arg);
	if (call_sessions > max_call_sessions)
		max_call_sessions = call_sessions;
	if (between_calls != NULL)
		between_calls(ncalls);
}

struct session *
worker_sessions(struct worker *w)
{
	return LIST_FIRST(&w->sessions);
}

struct session *
session_next(const struct session *s)
{
	return LIST_NEXT(s, entry);
}

uint64_t
session_id(const struct session *s)
{
	return s->id;
}

void
session_json_add(const struct session *s, void *json_array)
{
	char id[24];

	call_sessions++;
	snprintf(id, sizeof(id), "0x%llx", (unsigned long long)s->id);
	json_array_append_new(
		json_array,
		json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:f,"
			  " s:f, s:i, s:s}",
			  "id", id, "mode", "fallback", "role",
			  s->role == SESSION_ROLE_RULE ? "rule" : "export",
			  "rule", s->rule != NULL ? s->rule->name : "",
			  "export",
			  s->export != NULL ? s->export->name : s->export_name,
			  "peer", s->peer != NULL ? s->peer->name : "", "state",
			  "relay", "bytes_in", (json_int_t)s->id * 10,
			  "bytes_out", (json_int_t)s->id * 20, "age_s", 61.5,
			  "idle_s", 1.25, "worker", s->w->id, "dialect",
			  "native"));
}

int
session_kill(struct worker *w, uint64_t id)
{
	struct session *s;

	LIST_FOREACH(s, &w->sessions, entry) {
		if (s->id == id) {
			LIST_REMOVE(s, entry);
			killed_id = id;
			return 0;
		}
	}
	return -ENOENT;
}

/* The rule the operator disabled; "" none. */
static char disabled_rule[CONF_NAME_MAX + 1];
static int relisten_rc;

bool
worker_rule_enabled(const char *name)
{
	return strcmp(name, disabled_rule) != 0;
}

bool
worker_rule_accepting(const struct conf_rule *r)
{
	return worker_rule_enabled(r->name) &&
	       (r->peer == NULL || !peer_draining(r->peer->name));
}

int
worker_relisten_all(void)
{
	return relisten_rc;
}

int
worker_rule_enable(const char *name, bool enable)
{
	if (relisten_rc)
		return relisten_rc;
	if (!enable)
		snprintf(disabled_rule, sizeof(disabled_rule), "%s", name);
	else if (strcmp(name, disabled_rule) == 0)
		disabled_rule[0] = '\0';
	return 0;
}

static int shutdowns, shutdowns_now;

void
smcproxyd_shutdown(bool now)
{
	shutdowns++;
	shutdowns_now += now;
	control_stopping();
}

int
smcproxyd_reload(FILE *errors)
{
	if (reload_rc == -EINVAL)
		fprintf(errors, "test.conf:3: rules[0].listen: bad address\n"
				"test.conf:7: peers[1].name: duplicate \xff\n");
	return reload_rc;
}

void
lgr_worker_json(struct worker *w, void *lgrs, void *links)
{
	ncalls++;
}

/* Standard groups with kernel hosts, per worker, for show peers. */
struct smcr_group {
	int worker;
	const char *host;
	bool up;
	int conns, links;
	size_t bytes; /* registered memory it adds to its host's */
};
static const struct smcr_group *smcr_groups;
static int nstd_groups;

/* Each kernel host's registered memory on a worker, as its groups say. */
void
session_rdma_host_memory(struct worker *w, session_rdma_host_fn fn, void *arg)
{
	struct addr a;
	int i;

	for (i = 0; i < nstd_groups; i++) {
		if (smcr_groups[i].worker != w->id || smcr_groups[i].bytes == 0)
			continue;
		ck_assert_int_eq(addr_parse_host(smcr_groups[i].host, &a), 0);
		fn(&a, smcr_groups[i].bytes, arg);
	}
}

#define HOST_LIMIT (4 << 20)

size_t
session_rdma_host_limit(const struct conf *conf)
{
	return HOST_LIMIT;
}

void
lgr_smcr_foreach(const struct lgr_ctx *ctx, lgr_smcr_fn fn, void *arg)
{
	struct addr a;
	int i;

	/* worker_lgr() gives the worker itself as its context */
	for (i = 0; i < nstd_groups; i++) {
		if (smcr_groups[i].worker != ((const struct worker *)ctx)->id)
			continue;
		ck_assert_int_eq(addr_parse_host(smcr_groups[i].host, &a), 0);
		fn(&a, smcr_groups[i].up, smcr_groups[i].conns,
		   smcr_groups[i].links, arg);
	}
}

static struct auth_limit auth_table;

struct auth_limit *
worker_auth(struct worker *w)
{
	return &auth_table;
}

/* check NAME: lgr_check_step is done after check_steps more steps */
static int check_steps, check_rc, check_stepped;

struct lgr_ctx *
worker_lgr(struct worker *w)
{
	return (struct lgr_ctx *)w;
}

bool
lgr_has_active(struct lgr_ctx *ctx, const char *peer)
{
	return false;
}

void
lgr_check_init(struct lgr_check *c, const char *peer, int timeout_ms)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->peer, sizeof(c->peer), "%s", peer);
}

bool
lgr_check_step(struct lgr_ctx *ctx, struct lgr_check *c)
{
	check_stepped++;
	if (check_steps-- > 0)
		return false;
	c->rc = check_rc;
	if (check_rc == 0) {
		c->lgr_id = 3;
		c->link_id = 1;
		c->rtt_us = 42;
	} else if (check_rc == -ETIMEDOUT) {
		/* a group there that does not answer */
		c->lgr_id = 3;
		snprintf(c->error, sizeof(c->error),
			 "no answer to TEST_LINK in time");
	} else {
		c->decline = 0x03030002;
		snprintf(c->error, sizeof(c->error),
			 "RDMA declined by us: NOSMCRDEV");
	}
	return true;
}

/*
 * check NAME's fallback part: each open ends at fb_stage with fb_rc and
 * fb_error (an export opened: FALLBACK_CHECK_EXPORT, 0); fb_opens counts
 * them, fb_export is the last export asked for.
 */
static enum fallback_check_stage fb_stage;
static int fb_rc, fb_opens;
static const char *fb_error;
static char fb_export[CONF_NAME_MAX + 1];

void
fallback_check_init(struct fallback_check *c, const struct conf *cf,
		    const struct conf_peer *peer, const char *export,
		    int timeout_ms)
{
	memset(c, 0, sizeof(*c));
	c->conf = cf;
	c->peer = peer;
	c->fd = -1;
	snprintf(fb_export, sizeof(fb_export), "%s", export);
}

bool
fallback_check_step(struct fallback_check *c)
{
	fb_opens++;
	c->stage = fb_stage;
	c->rc = fb_rc;
	c->connect_us = 1234;
	c->done = true;
	snprintf(c->error, sizeof(c->error), "%s", fb_error);
	return true;
}

void
fallback_check_end(struct fallback_check *c)
{
}

/* check smc ADDRESS: the kernel SMC-R server's answer is kc_result's */
static enum smcr_check_result kc_result;
static uint32_t kc_decline;
static const char *kc_error;

void
smcr_check_init(struct smcr_check *c, const struct conf *cf,
		const struct addr *to)
{
	memset(c, 0, sizeof(*c));
	c->conf = cf;
	c->to = *to;
	c->fd = -1;
}

bool
smcr_check_step(struct smcr_check *c)
{
	c->result = kc_result;
	c->decline = kc_decline;
	c->first_contact = true;
	c->connect_us = 2000;
	c->done = true;
	snprintf(c->error, sizeof(c->error), "%s", kc_error);
	return true;
}

void
smcr_check_free(struct smcr_check *c)
{
}

/******** fixture ********/

static char dir[32], sockpath[sizeof(((struct sockaddr_un *)NULL)->sun_path)];
static struct conf *conf;
static struct event_base *base;

struct client {
	int fd;
	char *buf;
	size_t len, cap;
};

static void
setup(void)
{
	char text[1024];

	snprintf(dir, sizeof(dir), "/tmp/check_control.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(chmod(dir, 0755), 0);
	/* two missing directories: control_init creates them */
	snprintf(sockpath, sizeof(sockpath), "%s/run/sub/control.sock", dir);
	snprintf(text, sizeof(text),
		 "smcproxyd: { name = \"t\"; control_socket = \"%s\";"
		 " control_mode = \"0666\"; workers = 2; };\n"
		 "peer_listen: { address = \"127.0.0.1:17999\"; };\n"
		 "peers = ( { name = \"b\"; address = \"127.0.0.1:17100\";"
		 " insecure = true; },\n"
		 "          { name = \"c\"; address = \"127.0.0.1:17101\";"
		 " insecure = true; source = \"127.0.0.1\";"
		 " device = \"rxe1\"; dscp = 26; } );\n"
		 "rules = ( { name = \"r1\"; listen = \"127.0.0.1:16380\";"
		 " peer = \"b\"; export = \"e1\"; idle_timeout = 30; } );\n"
		 "exports = ( { name = \"e1\"; target = \"127.0.0.1:16379\";"
		 " peers = [ \"b\", \"c\" ]; } );\n",
		 sockpath);
	conf = conf_load_string(text, "test.conf", stderr);
	ck_assert_ptr_nonnull(conf);
	/* held as the main thread holds it: a check holds it too */
	conf_hold(conf);
	memset(workers, 0, sizeof(workers));
	workers[1].id = 1;
	ncalls = 0;
	max_call_sessions = 0;
	between_calls = NULL;
	killed_id = 0;
	reload_rc = 0;
	relisten_rc = 0;
	disabled_rule[0] = '\0';
	shutdowns = shutdowns_now = 0;
	check_steps = check_rc = check_stepped = 0;
	fb_stage = FALLBACK_CHECK_EXPORT;
	fb_rc = fb_opens = 0;
	fb_error = "";
	kc_result = SMCR_CHECK_ACCEPTED;
	kc_decline = 0x05000000;
	kc_error = "";
	smcr_groups = NULL;
	nstd_groups = 0;
	auth_limit_init(&auth_table);
	base = event_base_new();
	ck_assert_ptr_nonnull(base);
	ck_assert_int_eq(control_init(conf, base), 0);
	/* the real registry (peer.c): peer b declined RDMA, c never tried */
	peer_fallback("b", 0x03030002, true, 0, 0);
}

static void
teardown(void)
{
	char path[160];

	control_shutdown();
	auth_limit_destroy(&auth_table);
	peer_shutdown();
	tally_shutdown();
	ck_assert_int_eq(access(sockpath, F_OK), -1);
	event_base_free(base);
	conf_free(conf);
	free(session_pool);
	session_pool = NULL;
	/* what disable rule and drain peer keep for a restart (state.c) */
	snprintf(path, sizeof(path), "%s/run/sub/state.json", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/run/sub", dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/run", dir);
	rmdir(path);
	rmdir(dir);
}

/* n sessions, alternately on each worker, counted open; ids 1..n. */
static void
add_sessions(int n)
{
	struct session *s;
	int i;

	session_pool = calloc((size_t)n, sizeof(*session_pool));
	ck_assert_ptr_nonnull(session_pool);
	for (i = 0; i < n; i++) {
		s = &session_pool[i];
		s->id = (uint64_t)i + 1;
		s->w = &workers[i % NWORKERS];
		if (i % 3 == 2) {
			s->role = SESSION_ROLE_EXPORT;
			s->export = &conf->exports[0];
			s->peer = &conf->peers[1];
		} else {
			s->role = SESSION_ROLE_RULE;
			s->rule = &conf->rules[0];
			s->peer = s->rule->peer;
			snprintf(s->export_name, sizeof(s->export_name), "e1");
		}
		LIST_INSERT_HEAD(&s->w->sessions, s, entry);
		tally_open(s);
	}
}

static void
pump(void)
{
	event_base_loop(base, EVLOOP_NONBLOCK);
}

static struct client *
client_new(void)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	struct client *c;

	c = calloc(1, sizeof(*c));
	ck_assert_ptr_nonnull(c);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	ck_assert_int_ne(c->fd, -1);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sockpath);
	ck_assert_int_eq(connect(c->fd, (struct sockaddr *)&sun, sizeof(sun)),
			 0);
	pump();
	return c;
}

static void
client_free(struct client *c)
{
	close(c->fd);
	free(c->buf);
	free(c);
	pump();
}

/* Write all of it, letting the daemon side run while the socket is full. */
static void
client_send(struct client *c, const char *data, size_t len)
{
	ssize_t n;

	while (len > 0) {
		n = write(c->fd, data, len);
		if (n == -1) {
			ck_assert_int_eq(errno, EAGAIN);
			pump();
			continue;
		}
		data += n;
		len -= (size_t)n;
	}
	pump();
}

/* The next reply line as text (malloc'd), or NULL on EOF. */
static char *
client_line(struct client *c)
{
	struct timespec start, now;
	char *nl, *line;
	ssize_t n;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		nl = c->buf != NULL ? memchr(c->buf, '\n', c->len) : NULL;
		if (nl != NULL) {
			line = strndup(c->buf, (size_t)(nl - c->buf));
			c->len -= (size_t)(nl - c->buf) + 1;
			memmove(c->buf, nl + 1, c->len);
			return line;
		}
		if (c->cap - c->len < 65536) {
			c->cap = c->cap * 2 + 65536;
			c->buf = realloc(c->buf, c->cap);
			ck_assert_ptr_nonnull(c->buf);
		}
		n = read(c->fd, c->buf + c->len, c->cap - c->len);
		if (n == 0)
			return NULL;
		if (n > 0) {
			c->len += (size_t)n;
			continue;
		}
		ck_assert_int_eq(errno, EAGAIN);
		pump();
		clock_gettime(CLOCK_MONOTONIC, &now);
		ck_assert_msg(now.tv_sec - start.tv_sec < 10, "no reply");
	}
}

/* The next reply, checked for the protocol envelope. */
static json_t *
client_reply(struct client *c)
{
	json_error_t jerr;
	json_t *r;
	char *line;

	line = client_line(c);
	ck_assert_msg(line != NULL, "connection closed instead of a reply");
	r = json_loads(line, 0, &jerr);
	ck_assert_msg(r != NULL, "reply is not JSON: %s: %.200s", jerr.text,
		      line);
	free(line);
	ck_assert_int_eq(json_integer_value(json_object_get(r, "v")), 1);
	ck_assert(json_is_boolean(json_object_get(r, "ok")));
	return r;
}

static json_t *
ask(struct client *c, const char *req)
{
	client_send(c, req, strlen(req));
	return client_reply(c);
}

/* Ask, expect success; the reply (for its data). */
static json_t *
ask_ok(struct client *c, const char *req)
{
	json_t *r = ask(c, req);

	ck_assert_msg(json_is_true(json_object_get(r, "ok")), "%s failed: %s",
		      req, json_string_value(json_object_get(r, "error")));
	ck_assert(json_is_object(json_object_get(r, "data")));
	return r;
}

/* Ask, expect an error reply whose message contains @want. */
static void
ask_error(struct client *c, const char *req, const char *want)
{
	json_t *r = ask(c, req);
	const char *err = json_string_value(json_object_get(r, "error"));

	ck_assert_msg(json_is_false(json_object_get(r, "ok")),
		      "%.60s did not fail", req);
	ck_assert_msg(err != NULL && strstr(err, want) != NULL,
		      "%.60s: error \"%s\", want \"%s\"", req, err, want);
	ck_assert_ptr_null(json_object_get(r, "data"));
	json_decref(r);
}

/******** tests ********/

START_TEST(test_version)
{
	struct client *c = client_new();
	json_t *r, *d;

	r = ask_ok(c, "{\"v\":1,\"cmd\":\"version\"}\n");
	d = json_object_get(r, "data");
	ck_assert_str_eq(json_string_value(json_object_get(d, "version")),
			 SMCPROXYD_VERSION);
	ck_assert_int_eq(json_integer_value(json_object_get(d, "protocol")),
			 CONTROL_VERSION);
	ck_assert_int_eq(json_integer_value(json_object_get(d, "pid")),
			 getpid());
	ck_assert_str_eq(json_string_value(json_object_get(d, "name")), "t");
	ck_assert_int_eq(json_integer_value(json_object_get(d, "workers")),
			 NWORKERS);
	json_decref(r);
	client_free(c);
}
END_TEST

/* Each bad request gets its error, and the connection goes on. */
START_TEST(test_errors)
{
	static const struct {
		const char *req, *want;
	} cases[] = {
		{"{\"v\":1,\"cmd\":\"version\"", "invalid JSON"},
		{"stats", "invalid JSON"},
		{"{\"v\":1,\"v\":1,\"cmd\":\"stats\"}", "invalid JSON"},
		{"[1,2]", "must be a JSON object"},
		{"\"stats\"", "must be a JSON object"},
		{"{\"cmd\":\"stats\"}", "\"v\" must be the protocol version"},
		{"{\"v\":\"1\",\"cmd\":\"stats\"}", "\"v\" must be"},
		{"{\"v\":2,\"cmd\":\"stats\"}",
		 "unsupported protocol version 2"},
		{"{\"v\":1}", "\"cmd\" must be a command name"},
		{"{\"v\":1,\"cmd\":7}", "\"cmd\" must be a command name"},
		{"{\"v\":1,\"cmd\":\"stats please\"}",
		 "unknown command \"stats please\""},
		{"{\"v\":1,\"cmd\":\"show\"}", "unknown command"},
		{"{\"v\":1,\"cmd\":\"stats\",\"verbose\":true}",
		 "unknown request member \"verbose\""},
		{"{\"v\":1,\"cmd\":\"stats\",\"args\":[]}",
		 "\"args\" must be an object"},
		{"{\"v\":1,\"cmd\":\"stats\",\"args\":{\"x\":1}}",
		 "takes no argument \"x\""},
		{"{\"v\":1,\"cmd\":\"kill conn\"}", "needs argument \"id\""},
		{"{\"v\":1,\"cmd\":\"kill conn\",\"args\":{}}",
		 "needs argument \"id\""},
		{"{\"v\":1,\"cmd\":\"kill conn\",\"args\":{\"id\":true}}",
		 "must be an integer or a string"},
		{"{\"v\":1,\"cmd\":\"kill conn\",\"args\":{\"id\":{}}}",
		 "must be an integer or a string"},
		{"{\"v\":1,\"cmd\":\"kill conn\",\"args\":{\"id\":\"zz\"}}",
		 "invalid connection id"},
		{"{\"v\":1,\"cmd\":\"kill conn\",\"args\":{\"id\":-1}}",
		 "invalid connection id"},
		{"{\"v\":1,\"cmd\":\"kill conn\",\"args\":{\"id\":\"-1\"}}",
		 "invalid connection id"},
		{"{\"v\":1,\"cmd\":\"kill conn\",\"args\":{\"id\":\"0x99\"}}",
		 "no connection 0x99"},
	};
	struct client *c = client_new();
	char req[256];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(req, sizeof(req), "%s\n", cases[i].req);
		ask_error(c, req, cases[i].want);
	}
	json_decref(ask_ok(c, "{\"v\":1,\"cmd\":\"version\"}\n"));
	client_free(c);
}
END_TEST

/* A long unknown command is quoted shortened, and stays valid JSON. */
START_TEST(test_long_command_name)
{
	struct client *c = client_new();
	char req[4096], name[3001];

	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	snprintf(req, sizeof(req), "{\"v\":1,\"cmd\":\"%s\"}\n", name);
	ask_error(c, req, "aaa...\" (try \"help\")");
	/* the cut falls inside a two-byte character */
	snprintf(req, sizeof(req), "{\"v\":1,\"cmd\":\"%.63s\xc3\xa9zz\"}\n",
		 name);
	ask_error(c, req, "unknown command \"aaa");
	client_free(c);
}
END_TEST

START_TEST(test_oversized)
{
	struct client *c = client_new();
	size_t len = CONTROL_LINE_MAX;
	char *big;

	big = malloc(2 * CONTROL_LINE_MAX);
	ck_assert_ptr_nonnull(big);

	/* exactly the limit: accepted */
	memset(big, ' ', len);
	memcpy(big, "{\"v\":1,\"cmd\":\"version\"", 22);
	big[len - 1] = '}';
	big[len] = '\n';
	client_send(c, big, len + 1);
	json_decref(ask_ok(c, ""));

	/* one more byte: refused */
	memset(big, 'x', 2 * CONTROL_LINE_MAX);
	big[CONTROL_LINE_MAX + 1] = '\n';
	client_send(c, big, CONTROL_LINE_MAX + 2);
	ask_error(c, "", "request longer than 65536 bytes");

	/* far longer, sent before the newline: one error, then usable */
	big[CONTROL_LINE_MAX + 1] = 'x';
	client_send(c, big, 2 * CONTROL_LINE_MAX - 1);
	client_send(c, big, 2 * CONTROL_LINE_MAX - 1);
	client_send(c, "\n{\"v\":1,\"cmd\":\"version\"}\n", 25);
	ask_error(c, "", "request longer than");
	json_decref(ask_ok(c, ""));
	free(big);
	client_free(c);
}
END_TEST

/* Several requests in one write, blank lines and CRLF; replies in order. */
START_TEST(test_pipelined)
{
	static const char reqs[] = "{\"v\":1,\"cmd\":\"version\"}\n\n   \n"
				   "{\"v\":1,\"cmd\":\"nope\"}\r\n"
				   "{\"v\":1,\"cmd\":\"show lgrs\"}\r\n"
				   "{\"v\":1,\"cmd\":\"show links\"}\n";
	struct client *c = client_new();
	json_t *r;

	client_send(c, reqs, sizeof(reqs) - 1);
	r = client_reply(c);
	ck_assert_ptr_nonnull(
		json_object_get(json_object_get(r, "data"), "version"));
	json_decref(r);
	r = client_reply(c);
	ck_assert(json_is_false(json_object_get(r, "ok")));
	json_decref(r);
	r = client_reply(c);
	ck_assert_uint_eq(json_array_size(json_object_get(
				  json_object_get(r, "data"), "lgrs")),
			  0);
	json_decref(r);
	r = client_reply(c);
	ck_assert_uint_eq(json_array_size(json_object_get(
				  json_object_get(r, "data"), "links")),
			  0);
	json_decref(r);
	client_free(c);
}
END_TEST

/* One line answered without a socket, as the fuzz target does. */
START_TEST(test_request)
{
	static const char version[] = "{\"v\":1,\"cmd\":\"version\"}";
	static const char kill[] =
		"{\"v\":1,\"cmd\":\"kill conn\",\"args\":{\"id\":9}}";
	static const char kill_blank[] =
		"{\"v\":1,\"cmd\":\"kill conn\",\"args\":{\"id\":\" -1\"}}";
	char *reply;

	ck_assert_int_eq(control_request(version, sizeof(version) - 1, &reply),
			 0);
	ck_assert_ptr_nonnull(strstr(reply, "\"ok\":true"));
	ck_assert_ptr_eq(strchr(reply, '\n'), reply + strlen(reply) - 1);
	free(reply);
	/* the command ran; its answer is an error */
	ck_assert_int_eq(control_request(kill, sizeof(kill) - 1, &reply), 0);
	ck_assert_ptr_nonnull(strstr(reply, "no connection 0x9"));
	free(reply);
	/* an id with blanks in front is refused, not read as 2^64 - 1 */
	ck_assert_int_eq(
		control_request(kill_blank, sizeof(kill_blank) - 1, &reply), 0);
	ck_assert_ptr_nonnull(strstr(reply, "\"ok\":false"));
	ck_assert_ptr_null(strstr(reply, "0xffffffffffffffff"));
	free(reply);
	ck_assert_int_eq(control_request("{\"v\":2}", 7, &reply), -EINVAL);
	ck_assert_ptr_nonnull(strstr(reply, "\"ok\":false"));
	free(reply);
	ck_assert_int_eq(control_request(" \t\r", 3, &reply), -ENODATA);
	ck_assert_ptr_null(reply);
	control_shutdown();
	ck_assert_int_eq(control_request(version, sizeof(version) - 1, &reply),
			 -ENOENT);
	ck_assert_ptr_null(reply);
}
END_TEST

/* A last request without a newline is answered, then the socket closes. */
START_TEST(test_eof)
{
	static const char reqs[] = "{\"v\":1,\"cmd\":\"version\"}\n"
				   "{\"v\":1,\"cmd\":\"help\"}";
	struct client *c = client_new();
	char *line;

	client_send(c, reqs, sizeof(reqs) - 1);
	shutdown(c->fd, SHUT_WR);
	json_decref(ask_ok(c, ""));
	json_decref(ask_ok(c, ""));
	line = client_line(c);
	ck_assert_ptr_null(line);
	client_free(c);
}
END_TEST

START_TEST(test_stats)
{
	struct client *c = client_new();
	json_t *r, *st, *v;
	const char *key;
	int i;

	for (i = 0; i < NWORKERS; i++) {
		STATS_ADD(&workers[i].stats, tx_bytes, 100);
		STATS_ADD(&workers[i].stats, conns_active, 3);
		stats_add(&workers[i].stats,
			  STAT_CLOSE_BASE + SESSION_CLIENT_FIN, 2);
	}
	r = ask_ok(c, "{\"v\":1,\"cmd\":\"stats\"}\n");
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_object_get(r, "data"), "workers")),
			 NWORKERS);
	st = json_object_get(json_object_get(r, "data"), "stats");
	ck_assert_uint_eq(json_object_size(st), STAT_N);
	ck_assert_int_eq(json_integer_value(json_object_get(st, "tx_bytes")),
			 200);
	ck_assert_int_eq(
		json_integer_value(json_object_get(st, "close_client_fin")), 4);
	json_decref(r);

	r = ask_ok(c, "{\"v\":1,\"cmd\":\"stats reset\"}\n");
	json_decref(r);
	STATS_ADD(&workers[1].stats, tx_bytes, 5);
	r = ask_ok(c, "{\"v\":1,\"cmd\":\"stats\",\"args\":{}}\n");
	st = json_object_get(json_object_get(r, "data"), "stats");
	ck_assert_int_eq(json_integer_value(json_object_get(st, "tx_bytes")),
			 5);
	ck_assert_int_eq(
		json_integer_value(json_object_get(st, "close_client_fin")), 0);
	ck_assert_int_eq(
		json_integer_value(json_object_get(st, "conns_active")), 6);
	json_decref(r);

	/* a section: the names that begin with its words, in both lists */
	r = ask_ok(c, "{\"v\":1,\"cmd\":\"stats\",\"args\":{\"section\":"
		      "\"conns\"}}\n");
	st = json_object_get(json_object_get(r, "data"), "stats");
	ck_assert_uint_gt(json_object_size(st), 5);
	ck_assert_int_eq(
		json_integer_value(json_object_get(st, "conns_active")), 6);
	ck_assert_ptr_null(json_object_get(st, "tx_bytes"));
	json_object_foreach(st, key, v)
		ck_assert_msg(strncmp(key, "conns_", 6) == 0, "%s", key);
	ck_assert_uint_eq(json_object_size(json_object_get(
				  json_object_get(r, "data"), "totals")),
			  json_object_size(st));
	json_decref(r);
	r = ask_ok(c, "{\"v\":1,\"cmd\":\"stats\",\"args\":{\"section\":"
		      "\"tx_bytes\"}}\n");
	st = json_object_get(json_object_get(r, "data"), "stats");
	ck_assert_uint_eq(json_object_size(st), 1);
	json_decref(r);
	/* "con" is no word of "conns_active" */
	ask_error(c,
		  "{\"v\":1,\"cmd\":\"stats\",\"args\":{\"section\":"
		  "\"con\"}}\n",
		  "no statistics in section \"con\" (sections: conns, ");
	ask_error(c,
		  "{\"v\":1,\"cmd\":\"stats\",\"args\":{\"section\":"
		  "\"con\"}}\n",
		  ", close, ");
	client_free(c);
}
END_TEST

START_TEST(test_schema)
{
	struct client *c = client_new();
	json_t *r, *d, *cmd;
	size_t i;
	bool kill_seen = false;

	r = ask_ok(c, "{\"v\":1,\"cmd\":\"schema\"}\n");
	d = json_object_get(r, "data");
	ck_assert_uint_eq(json_array_size(json_object_get(d, "stats")), STAT_N);
	json_array_foreach(json_object_get(d, "commands"), i, cmd) {
		if (strcmp(json_string_value(json_object_get(cmd, "name")),
			   "kill conn") != 0)
			continue;
		kill_seen = true;
		ck_assert(json_is_true(json_object_get(cmd, "mutating")));
		ck_assert_uint_eq(json_array_size(json_object_get(cmd, "args")),
				  1);
	}
	ck_assert(kill_seen);
	json_decref(r);
	client_free(c);
}
END_TEST

START_TEST(test_rules_peers)
{
	struct client *c = client_new();
	json_t *r, *e;

	add_sessions(9); /* 6 for rule r1 (peer b), 3 for export e1 (peer c) */
	r = ask_ok(c, "{\"v\":1,\"cmd\":\"show rules\"}\n");
	e = json_array_get(json_object_get(json_object_get(r, "data"), "rules"),
			   0);
	ck_assert_str_eq(json_string_value(json_object_get(e, "name")), "r1");
	ck_assert_str_eq(json_string_value(json_object_get(e, "listen")),
			 "127.0.0.1:16380");
	ck_assert_str_eq(json_string_value(json_object_get(e, "peer")), "b");
	ck_assert_str_eq(json_string_value(json_object_get(e, "export")), "e1");
	ck_assert_int_eq(
		json_integer_value(json_object_get(e, "idle_timeout_s")), 30);
	ck_assert_int_eq(json_integer_value(json_object_get(e, "conns")), 6);
	e = json_array_get(
		json_object_get(json_object_get(r, "data"), "exports"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(e, "target")),
			 "127.0.0.1:16379");
	ck_assert_uint_eq(json_array_size(json_object_get(e, "peers")), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(e, "conns")), 3);
	json_decref(r);

	r = ask_ok(c, "{\"v\":1,\"cmd\":\"show peers\"}\n");
	e = json_array_get(json_object_get(json_object_get(r, "data"), "peers"),
			   0);
	ck_assert_str_eq(json_string_value(json_object_get(e, "name")), "b");
	ck_assert_str_eq(json_string_value(json_object_get(e, "mode")),
			 "fallback");
	ck_assert_str_eq(
		json_string_value(json_object_get(e, "fallback_reason")),
		"declined by the peer");
	ck_assert_str_eq(json_string_value(json_object_get(e, "decline_code")),
			 "0x03030002");
	ck_assert_str_eq(json_string_value(json_object_get(e, "decline_name")),
			 "NOSMCRDEV");
	ck_assert_str_eq(json_string_value(json_object_get(e, "auth")),
			 "insecure");
	ck_assert_int_eq(json_integer_value(json_object_get(e, "conns")), 6);
	/* a peer that declines answered; its decline is the last error */
	ck_assert(json_is_true(json_object_get(e, "reachable")));
	ck_assert_str_eq(json_string_value(json_object_get(e, "last_error")),
			 "RDMA declined by the peer: NOSMCRDEV");
	ck_assert_str_eq(
		json_string_value(json_object_get(e, "last_error_code")),
		"0x03030002");
	/* routed RoCE v2: rdma's defaults, or the peer's own keys */
	ck_assert_str_eq(json_string_value(json_object_get(e, "source")), "");
	ck_assert_str_eq(json_string_value(json_object_get(e, "device")), "");
	ck_assert_int_eq(json_integer_value(json_object_get(e, "dscp")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(e, "qp_timeout")),
			 15);
	e = json_array_get(json_object_get(json_object_get(r, "data"), "peers"),
			   1);
	ck_assert_int_eq(json_integer_value(json_object_get(e, "conns")), 3);
	ck_assert_str_eq(json_string_value(json_object_get(e, "source")),
			 "127.0.0.1");
	ck_assert_str_eq(json_string_value(json_object_get(e, "device")),
			 "rxe1");
	ck_assert_int_eq(json_integer_value(json_object_get(e, "dscp")), 26);
	ck_assert_int_eq(json_integer_value(json_object_get(e, "priority")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(e, "retry_count")),
			 7);
	ck_assert_int_eq(json_integer_value(json_object_get(e, "rnr_retry")),
			 7);
	ck_assert(json_is_null(json_object_get(e, "reachable")));
	ck_assert(json_is_null(json_object_get(e, "last_error_age_s")));
	ck_assert_str_eq(json_string_value(json_object_get(e, "last_error")),
			 "");
	json_decref(r);

	peer_error("c", true, "ECONNREFUSED", "connect to %s: %s",
		   "127.0.0.1:17101", "Connection refused");
	r = ask_ok(c, "{\"v\":1,\"cmd\":\"show peers\"}\n");
	e = json_array_get(json_object_get(json_object_get(r, "data"), "peers"),
			   1);
	ck_assert(json_is_false(json_object_get(e, "reachable")));
	ck_assert_str_eq(json_string_value(json_object_get(e, "last_error")),
			 "connect to 127.0.0.1:17101: Connection refused");
	ck_assert_str_eq(
		json_string_value(json_object_get(e, "last_error_code")),
		"ECONNREFUSED");
	ck_assert_int_eq(
		json_integer_value(json_object_get(e, "last_error_age_s")), 0);
	ck_assert_uint_eq(
		strlen(json_string_value(json_object_get(e, "last_error_at"))),
		20);
	json_decref(r);
	client_free(c);
}
END_TEST

/*
 * show peers lists the kernel SMC-R hosts: khost.c's record of each (its
 * connections, its last DECLINE), its standard groups on every worker,
 * its budget on the fullest worker against kernel_smc's limits, and the
 * rate limit; show rules gives smc_listen and target_smc their kind and
 * why they are TCP only.  Without kernel_smc no worker is walked.
 */
START_TEST(test_kernel_hosts)
{
	static const struct smcr_group groups[] = {
		{0, "192.0.2.7", true, 3, 1, 3 << 20},
		{1, "192.0.2.7", false, 0, 0, 1 << 20},
		{1, "192.0.2.7", true, 2, 2, 1 << 20},
		/* one more connection's 512 KiB would pass HOST_LIMIT */
		{1, "192.0.2.8", true, 4, 1, (15 << 20) / 4},
	};
	struct client *c = client_new();
	struct conf *kconf;
	struct addr a7, a8;
	json_t *r, *h, *e;
	char text[1024];
	size_t i;
	int n;

	ck_assert_int_eq(addr_parse_host("192.0.2.7", &a7), 0);
	ck_assert_int_eq(addr_parse_host("192.0.2.8", &a8), 0);
	ck_assert(khost_open(&a7));
	ck_assert(khost_open(&a7));
	khost_decline(&a7, 0x03030002, false);
	khost_close(&a7);
	smcr_groups = groups;
	nstd_groups = 4;

	/* no kernel_smc: the hosts seen, no group walked */
	ncalls = 0;
	r = ask_ok(c, "{\"v\":1,\"cmd\":\"show peers\"}\n");
	ck_assert_int_eq(ncalls, 0);
	h = json_object_get(json_object_get(r, "data"), "kernel_hosts");
	ck_assert_uint_eq(json_array_size(h), 1);
	json_decref(r);

	snprintf(text, sizeof(text),
		 "smcproxyd: { name = \"t\"; control_socket = \"%s\";"
		 " workers = 2; };\n"
		 "rules = ( { name = \"k\"; listen = \"127.0.0.1:16381\";"
		 " target_smc = \"192.0.2.8:16382\"; } );\n"
		 "exports = ( { name = \"x\"; target = \"127.0.0.1:16379\";"
		 " smc_listen = \"192.0.2.1:16383\"; } );\n"
		 "kernel_smc: { ueids = [ \"SMCPROXYD-LAB\" ];"
		 " allow = [ \"192.0.2.0/24\" ]; max_pending_per_host = 2;"
		 " max_lgrs_per_host = 2; };\n",
		 sockpath);
	kconf = conf_load_string(text, "k.conf", stderr);
	ck_assert_ptr_nonnull(kconf);
	control_conf_update(kconf);
	for (n = 0; n < 11; n++)
		auth_failed(&auth_table, &a8, now_ms());

	ncalls = 0;
	r = ask_ok(c, "{\"v\":1,\"cmd\":\"show peers\"}\n");
	ck_assert_int_eq(ncalls, NWORKERS);
	ck_assert_uint_eq(json_array_size(json_object_get(
				  json_object_get(r, "data"), "peers")),
			  0);
	n = 0;
	json_array_foreach(
		json_object_get(json_object_get(r, "data"), "kernel_hosts"), i,
		h) {
		if (strcmp(json_string_value(json_object_get(h, "host")),
			   "192.0.2.7") == 0) {
			n |= 1;
			ck_assert_int_eq(
				json_integer_value(json_object_get(h, "lgrs")),
				3);
			ck_assert_int_eq(
				json_integer_value(json_object_get(h, "links")),
				3);
			ck_assert_int_eq(
				json_integer_value(json_object_get(h, "conns")),
				1);
			ck_assert_int_eq(json_integer_value(json_object_get(
						 h, "conns_rdma")),
					 5);
			ck_assert_int_eq(json_integer_value(json_object_get(
						 h, "conns_total")),
					 2);
			ck_assert_str_eq(json_string_value(json_object_get(
						 h, "decline_name")),
					 "NOSMCRDEV");
			ck_assert_str_eq(json_string_value(json_object_get(
						 h, "decline_code")),
					 "0x03030002");
			ck_assert(json_is_false(
				json_object_get(h, "declined_by_peer")));
			ck_assert_int_eq(json_integer_value(json_object_get(
						 h, "decline_age_s")),
					 0);
			ck_assert(json_is_false(
				json_object_get(h, "rate_limited")));
			/* worker 1 holds two groups, one pending; worker 0
			 * three connections */
			ck_assert_int_eq(json_integer_value(json_object_get(
						 h, "budget_lgrs")),
					 2);
			ck_assert_int_eq(json_integer_value(json_object_get(
						 h, "budget_pending")),
					 1);
			ck_assert_int_eq(json_integer_value(json_object_get(
						 h, "budget_conns")),
					 3);
			ck_assert_int_eq(json_integer_value(json_object_get(
						 h, "max_lgrs_per_host")),
					 2);
			ck_assert_int_eq(json_integer_value(json_object_get(
						 h, "max_pending_per_host")),
					 2);
			ck_assert_str_eq(json_string_value(json_object_get(
						 h, "budget_full")),
					 "lgrs");
			/* 3 MiB on worker 0, 2 MiB on worker 1 */
			ck_assert_int_eq(json_integer_value(
						 json_object_get(h, "memory")),
					 5 << 20);
			ck_assert_int_eq(json_integer_value(json_object_get(
						 h, "budget_memory")),
					 3 << 20);
			ck_assert_int_eq(json_integer_value(json_object_get(
						 h, "memory_per_host")),
					 HOST_LIMIT);
		} else {
			n |= 2;
			ck_assert_str_eq(
				json_string_value(json_object_get(h, "host")),
				"192.0.2.8");
			ck_assert_int_eq(
				json_integer_value(json_object_get(h, "lgrs")),
				1);
			ck_assert_int_eq(
				json_integer_value(json_object_get(h, "conns")),
				0);
			ck_assert_str_eq(json_string_value(json_object_get(
						 h, "decline_name")),
					 "");
			ck_assert(json_is_null(
				json_object_get(h, "decline_age_s")));
			ck_assert(json_is_true(
				json_object_get(h, "rate_limited")));
			ck_assert_str_eq(json_string_value(json_object_get(
						 h, "budget_full")),
					 "memory");
		}
	}
	ck_assert_int_eq(n, 3);
	json_decref(r);

	/* no program attached in a unit test: that is why */
	r = ask_ok(c, "{\"v\":1,\"cmd\":\"show rules\"}\n");
	e = json_array_get(json_object_get(json_object_get(r, "data"), "rules"),
			   0);
	ck_assert_str_eq(json_string_value(json_object_get(e, "kind")),
			 "target_smc");
	ck_assert_str_eq(json_string_value(json_object_get(e, "target_smc")),
			 "192.0.2.8:16382");
	ck_assert(json_is_false(json_object_get(e, "smc_ready")));
	ck_assert_str_eq(json_string_value(json_object_get(e, "smc_status")),
			 "TCP only: SMC-R option program not attached");
	e = json_array_get(
		json_object_get(json_object_get(r, "data"), "exports"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(e, "kind")),
			 "smc_listen");
	ck_assert_str_eq(json_string_value(json_object_get(e, "smc_listen")),
			 "192.0.2.1:16383");
	ck_assert_str_eq(json_string_value(json_object_get(e, "smc_status")),
			 "TCP only: SMC-R option program not attached");
	json_decref(r);

	control_conf_update(conf);
	conf_free(kconf);
	/* a native rule and export: their kind, no SMC-R status */
	r = ask_ok(c, "{\"v\":1,\"cmd\":\"show rules\"}\n");
	e = json_array_get(json_object_get(json_object_get(r, "data"), "rules"),
			   0);
	ck_assert_str_eq(json_string_value(json_object_get(e, "kind")), "peer");
	ck_assert_ptr_null(json_object_get(e, "smc_status"));
	e = json_array_get(
		json_object_get(json_object_get(r, "data"), "exports"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(e, "kind")),
			 "peers");
	ck_assert_ptr_null(json_object_get(e, "smc_status"));
	json_decref(r);
	client_free(c);
}
END_TEST

START_TEST(test_kill)
{
	struct client *c = client_new();
	json_t *r;

	add_sessions(4);
	r = ask_ok(
		c,
		"{\"v\":1,\"cmd\":\"kill conn\",\"args\":{\"id\":\"0x3\"}}\n");
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(r, "data"), "id")),
			 "0x3");
	ck_assert_uint_eq(killed_id, 3);
	json_decref(r);
	json_decref(ask_ok(
		c, "{\"v\":1,\"cmd\":\"kill conn\",\"args\":{\"id\":4}}\n"));
	ck_assert_uint_eq(killed_id, 4);
	ask_error(c, "{\"v\":1,\"cmd\":\"kill conn\",\"args\":{\"id\":4}}\n",
		  "no connection 0x4");
	r = ask_ok(c, "{\"v\":1,\"cmd\":\"show conns\"}\n");
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_object_get(r, "data"), "count")),
			 2);
	json_decref(r);
	client_free(c);
}
END_TEST

/* The count show conns answers to request req. */
static json_int_t
conns_count(struct client *c, const char *req)
{
	json_t *r = ask_ok(c, req);
	json_int_t n = json_integer_value(
		json_object_get(json_object_get(r, "data"), "count"));

	ck_assert_uint_eq(json_array_size(json_object_get(
				  json_object_get(r, "data"), "conns")),
			  (size_t)n);
	json_decref(r);
	return n;
}

START_TEST(test_conns_filter)
{
	struct client *c = client_new();
	json_t *r;

	add_sessions(9); /* 6 of rule r1 (peer b), 3 of export e1 (peer c) */
	ck_assert_int_eq(conns_count(c, "{\"v\":1,\"cmd\":\"show conns\","
					"\"args\":{\"rule\":\"r1\"}}\n"),
			 6);
	ck_assert_int_eq(conns_count(c, "{\"v\":1,\"cmd\":\"show conns\","
					"\"args\":{\"peer\":\"c\"}}\n"),
			 3);
	ck_assert_int_eq(conns_count(c, "{\"v\":1,\"cmd\":\"show conns\","
					"\"args\":{\"peer\":\"c\",\"rule\":"
					"\"r1\"}}\n"),
			 0);
	ck_assert_int_eq(conns_count(c, "{\"v\":1,\"cmd\":\"show conns\","
					"\"args\":{\"state\":\"relay\","
					"\"transport\":\"fallback\"}}\n"),
			 9);
	ck_assert_int_eq(conns_count(c, "{\"v\":1,\"cmd\":\"show conns\","
					"\"args\":{\"transport\":\"rdma\"}}\n"),
			 0);
	/* the doubles are 61.5 s old */
	ck_assert_int_eq(conns_count(c, "{\"v\":1,\"cmd\":\"show conns\","
					"\"args\":{\"age\":\"61\"}}\n"),
			 9);
	ck_assert_int_eq(conns_count(c, "{\"v\":1,\"cmd\":\"show conns\","
					"\"args\":{\"age\":62}}\n"),
			 0);
	ask_error(c, "{\"v\":1,\"cmd\":\"show conns\",\"args\":{\"age\":-1}}\n",
		  "argument \"age\" must be a number of seconds");
	ask_error(
		c,
		"{\"v\":1,\"cmd\":\"show conns\",\"args\":{\"age\":\"1s\"}}\n",
		"argument \"age\" must be a number of seconds");
	ask_error(c, "{\"v\":1,\"cmd\":\"show conns\",\"args\":{\"rule\":1}}\n",
		  "argument \"rule\" must be a string");
	ask_error(
		c,
		"{\"v\":1,\"cmd\":\"show conns\",\"args\":{\"state\":\"x\"}}\n",
		"unknown state \"x\" (want connect_peer, hello, handshake, "
		"connect_target, rdma_wait, rdma_open, relay or resuming)");
	/* the dialect, as the issues say it too (pair); tcp is a kernel
	 * peer's word for the fallback's transport */
	ck_assert_int_eq(conns_count(c, "{\"v\":1,\"cmd\":\"show conns\","
					"\"args\":{\"dialect\":\"native\"}}\n"),
			 9);
	ck_assert_int_eq(conns_count(c, "{\"v\":1,\"cmd\":\"show conns\","
					"\"args\":{\"dialect\":\"pair\"}}\n"),
			 9);
	ck_assert_int_eq(conns_count(c, "{\"v\":1,\"cmd\":\"show conns\","
					"\"args\":{\"dialect\":\"smc-r\"}}\n"),
			 0);
	ck_assert_int_eq(conns_count(c, "{\"v\":1,\"cmd\":\"show conns\","
					"\"args\":{\"transport\":\"tcp\"}}\n"),
			 9);
	ask_error(c,
		  "{\"v\":1,\"cmd\":\"show conns\",\"args\":{\"dialect\":"
		  "\"x\"}}\n",
		  "unknown dialect \"x\" (want native, pair or smc-r)");
	ask_error(c,
		  "{\"v\":1,\"cmd\":\"show conns\",\"args\":{\"transport\":"
		  "\"x\"}}\n",
		  "unknown transport \"x\" (want rdma, tcp or fallback)");
	ask_error(c,
		  "{\"v\":1,\"cmd\":\"show conns\",\"args\":{\"colour\":"
		  "\"x\"}}\n",
		  "command \"show conns\" takes no argument \"colour\"");
	ask_error(c, "{\"v\":1,\"cmd\":\"kill conns\"}\n",
		  "\"kill conns\" needs at least one of rule, peer, state, "
		  "transport, dialect, age");

	r = ask_ok(c, "{\"v\":1,\"cmd\":\"kill conns\",\"args\":{\"peer\":"
		      "\"c\"}}\n");
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_object_get(r, "data"), "count")),
			 3);
	ck_assert_uint_eq(json_array_size(json_object_get(
				  json_object_get(r, "data"), "ids")),
			  3);
	json_decref(r);
	ck_assert_int_eq(conns_count(c, "{\"v\":1,\"cmd\":\"show conns\"}\n"),
			 6);
	ck_assert_int_eq(conns_count(c, "{\"v\":1,\"cmd\":\"show conns\","
					"\"args\":{\"peer\":\"c\"}}\n"),
			 0);
	client_free(c);
}
END_TEST

START_TEST(test_disable_drain)
{
	struct client *c = client_new();
	json_t *r, *e;

	r = ask_ok(c, "{\"v\":1,\"cmd\":\"disable rule\",\"args\":{\"name\":"
		      "\"r1\"}}\n");
	e = json_object_get(r, "data");
	ck_assert(json_is_false(json_object_get(e, "enabled")));
	ck_assert(json_is_false(json_object_get(e, "accepting")));
	json_decref(r);
	r = ask_ok(c, "{\"v\":1,\"cmd\":\"show rules\"}\n");
	e = json_array_get(json_object_get(json_object_get(r, "data"), "rules"),
			   0);
	ck_assert(json_is_false(json_object_get(e, "enabled")));
	json_decref(r);
	json_decref(ask_ok(c, "{\"v\":1,\"cmd\":\"enable rule\",\"args\":"
			      "{\"name\":\"r1\"}}\n"));
	ask_error(c,
		  "{\"v\":1,\"cmd\":\"disable rule\",\"args\":{\"name\":"
		  "\"nosuch\"}}\n",
		  "no rule \"nosuch\"");
	ask_error(c, "{\"v\":1,\"cmd\":\"disable rule\"}\n",
		  "command \"disable rule\" needs argument \"name\"");

	/* draining peer b stops rule r1 accepting, though it is enabled */
	json_decref(ask_ok(c, "{\"v\":1,\"cmd\":\"drain peer\",\"args\":"
			      "{\"name\":\"b\"}}\n"));
	r = ask_ok(c, "{\"v\":1,\"cmd\":\"show rules\"}\n");
	e = json_array_get(json_object_get(json_object_get(r, "data"), "rules"),
			   0);
	ck_assert(json_is_true(json_object_get(e, "enabled")));
	ck_assert(json_is_false(json_object_get(e, "accepting")));
	json_decref(r);
	r = ask_ok(c, "{\"v\":1,\"cmd\":\"show peers\"}\n");
	e = json_array_get(json_object_get(json_object_get(r, "data"), "peers"),
			   0);
	ck_assert(json_is_true(json_object_get(e, "draining")));
	json_decref(r);
	/* undraining fails when a listener cannot open: still draining */
	relisten_rc = -EADDRINUSE;
	ask_error(c,
		  "{\"v\":1,\"cmd\":\"undrain peer\",\"args\":{\"name\":"
		  "\"b\"}}\n",
		  "peer b: a rule to it cannot listen: Address already in use");
	ck_assert(peer_draining("b"));
	relisten_rc = 0;
	json_decref(ask_ok(c, "{\"v\":1,\"cmd\":\"enable peer\",\"args\":"
			      "{\"name\":\"b\"}}\n"));
	ck_assert(!peer_draining("b"));
	ask_error(c,
		  "{\"v\":1,\"cmd\":\"drain peer\",\"args\":{\"name\":"
		  "\"nosuch\"}}\n",
		  "no peer \"nosuch\"");
	client_free(c);
}
END_TEST

/*
 * check NAME answers once both parts are done, a line for each stage:
 * the round trip over a group, or the decline with the fallback that
 * the peer's connections take; the rule's export opened over it.  A
 * failure is named by its stage: the peer's port, its key, the export's
 * target, a group that does not answer.  Requests behind it wait for it
 * and come in order; a client gone before the answer leaves nothing
 * behind.  Bad input is refused, the connection usable.
 */
START_TEST(test_check)
{
	static const char reqs[] =
		"{\"v\":1,\"cmd\":\"check\",\"args\":{\"name\":\"b\"}}\n"
		"{\"v\":1,\"cmd\":\"version\"}\n";
	static const char req[] =
		"{\"v\":1,\"cmd\":\"check\",\"args\":{\"name\":\"b\"}}\n";
	struct client *c = client_new();
	json_t *r, *d;
	int i;

	check_steps = 3;
	client_send(c, reqs, sizeof(reqs) - 1);
	r = client_reply(c);
	ck_assert_msg(json_is_true(json_object_get(r, "ok")), "%s",
		      json_string_value(json_object_get(r, "error")));
	d = json_object_get(r, "data");
	ck_assert_str_eq(json_string_value(json_object_get(d, "peer")), "b");
	ck_assert_str_eq(json_string_value(json_object_get(d, "transport")),
			 "rdma");
	ck_assert_int_eq(json_integer_value(json_object_get(d, "rtt_us")), 42);
	ck_assert_int_eq(json_integer_value(json_object_get(d, "lgr")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(d, "link")), 1);
	ck_assert(json_is_false(json_object_get(d, "set_up")));
	ck_assert(json_is_true(json_object_get(d, "reachable")));
	ck_assert_str_eq(json_string_value(json_object_get(d, "authenticated")),
			 "no key");
	ck_assert_str_eq(fb_export, "e1");
	ck_assert_int_eq(fb_opens, 1);
	d = json_object_get(d, "lines");
	ck_assert_uint_eq(json_array_size(d), 4);
	ck_assert_str_eq(json_string_value(json_array_get(d, 0)),
			 "reachable: yes, 127.0.0.1:17100 answered in "
			 "1.234 ms");
	ck_assert_str_eq(json_string_value(json_array_get(d, 2)),
			 "export e1 (rule r1): the peer reached its target");
	ck_assert_str_eq(json_string_value(json_array_get(d, 3)),
			 "transport: rdma (lgr 3 link 1, TEST_LINK round "
			 "trip 0.042 ms)");
	json_decref(r);
	ck_assert_int_eq(check_stepped, 4);
	/* the version waited behind the check */
	r = client_reply(c);
	ck_assert_ptr_nonnull(
		json_object_get(json_object_get(r, "data"), "version"));
	json_decref(r);

	/* RDMA declined: the fallback's path works, and is what is taken */
	check_steps = 2;
	check_rc = -ECONNREFUSED;
	r = ask_ok(c, req);
	d = json_object_get(r, "data");
	ck_assert_str_eq(json_string_value(json_object_get(d, "transport")),
			 "fallback");
	ck_assert_str_eq(
		json_string_value(json_object_get(d, "transport_reason")),
		"RDMA declined by us: NOSMCRDEV");
	ck_assert_str_eq(json_string_value(json_object_get(d, "decline")),
			 "NOSMCRDEV");
	ck_assert_str_eq(json_string_value(json_array_get(
				 json_object_get(d, "lines"), 4)),
			 "decline: NOSMCRDEV 0x03030002 by us");
	json_decref(r);

	/* each stage's failure named as that stage's */
	fb_stage = FALLBACK_CHECK_CONNECT;
	fb_rc = -ECONNREFUSED;
	fb_error = "connect to 127.0.0.1:17100: Connection refused";
	ask_error(c, req,
		  "peer b: unreachable: connect to 127.0.0.1:17100: "
		  "Connection refused (nothing listens there: is its daemon "
		  "stopped?)");
	fb_stage = FALLBACK_CHECK_AUTH;
	fb_rc = -EACCES;
	fb_error = "peer failed authentication (wrong key?)";
	ask_error(c, req,
		  "peer b: authentication failed: peer failed "
		  "authentication (wrong key?)");
	/* no word on the key is not called a wrong one */
	fb_rc = -ETIMEDOUT;
	fb_error = "no answer to hello in time";
	ask_error(c, req, "peer b: no handshake: no answer to hello in time");
	fb_stage = FALLBACK_CHECK_EXPORT;
	fb_rc = -ECONNREFUSED;
	fb_error = "target refused the connection";
	ask_error(c, req,
		  "peer b: export e1 (rule r1): target refused the "
		  "connection");
	fb_rc = 0;
	check_rc = -ETIMEDOUT;
	check_steps = 0;
	ask_error(c, req, "peer b: no answer to TEST_LINK in time");
	check_rc = 0;

	/* c, which no rule goes to: its link group alone, no open */
	fb_opens = 0;
	check_rc = -ECONNREFUSED;
	ask_error(c, "{\"v\":1,\"cmd\":\"check\",\"args\":{\"name\":\"c\"}}\n",
		  "peer c: RDMA declined by us: NOSMCRDEV");
	check_rc = 0;
	r = ask_ok(c,
		   "{\"v\":1,\"cmd\":\"check\",\"args\":{\"name\":\"c\"}}\n");
	d = json_object_get(r, "data");
	ck_assert_str_eq(json_string_value(json_object_get(d, "transport")),
			 "rdma");
	ck_assert_uint_eq(json_array_size(json_object_get(d, "exports")), 0);
	ck_assert_str_eq(json_string_value(json_array_get(
				 json_object_get(d, "lines"), 0)),
			 "exports: none (no rule to c: its connections come "
			 "here, ours never go there)");
	json_decref(r);
	ck_assert_int_eq(fb_opens, 0);

	check_stepped = 0;
	ask_error(c, "{\"v\":1,\"cmd\":\"check\"}\n",
		  "command \"check\" needs argument \"name\"");
	ask_error(c, "{\"v\":1,\"cmd\":\"check\",\"args\":{\"name\":7}}\n",
		  "argument \"name\" must be a string");
	ask_error(
		c,
		"{\"v\":1,\"cmd\":\"check\",\"args\":{\"name\":\"nosuch\"}}\n",
		"no peer \"nosuch\"");
	ask_error(c,
		  "{\"v\":1,\"cmd\":\"check\",\"args\":{\"name\":\"b\","
		  "\"id\":1}}\n",
		  "command \"check\" takes no argument \"id\"");
	ck_assert_int_eq(check_stepped, 0);

	/* a client that leaves while its check runs: the check ends (its
	 * answer dropped) and nothing steps it again */
	check_steps = 20;
	check_stepped = 0;
	client_send(c, reqs, sizeof(reqs) - 1);
	client_free(c);
	for (i = 0; i < 2000 && check_stepped < 21; i++) {
		usleep(1000);
		pump();
	}
	ck_assert_int_eq(check_stepped, 21);
	for (i = 0; i < 50; i++) {
		usleep(1000);
		pump();
	}
	ck_assert_int_eq(check_stepped, 21);
	c = client_new();
	json_decref(ask_ok(c, "{\"v\":1,\"cmd\":\"version\"}\n"));
	client_free(c);
}
END_TEST

/*
 * check smc ADDRESS names the kernel SMC-R server's answer: its DECLINE
 * by code, a server without the option, an ACCEPT that connections from
 * here (kernel_smc off) could not use.  check export NAME wants an
 * export with smc_listen.
 */
START_TEST(test_check_smc)
{
	static const char req[] = "{\"v\":1,\"cmd\":\"check smc\",\"args\":"
				  "{\"address\":\"127.0.0.1:16390\"}}\n";
	struct client *c = client_new();
	json_t *r, *d;

	ask_error(c, req,
		  "smc 127.0.0.1:16390: it ACCEPTs SMC-R, but connections "
		  "from here go on as TCP: kernel_smc is off");
	kc_result = SMCR_CHECK_DECLINED;
	kc_decline = 0x03030008;
	kc_error = "peer sent no UEID";
	r = ask(c, req);
	ck_assert_str_eq(json_string_value(json_object_get(r, "error")),
			 "smc 127.0.0.1:16390: declined: NOUEID 0x03030008 "
			 "(peer sent no UEID)");
	d = json_object_get(r, "details");
	ck_assert_str_eq(json_string_value(json_array_get(d, 0)),
			 "reachable: yes, answered in 2.000 ms");
	ck_assert_str_eq(json_string_value(json_array_get(d, 3)),
			 "answer: DECLINE NOUEID 0x03030008 (peer sent no "
			 "UEID)");
	json_decref(r);
	kc_result = SMCR_CHECK_PLAIN;
	kc_error = "its SYN-ACK did not echo the SMC-R option: plain TCP";
	ask_error(c, req,
		  "smc 127.0.0.1:16390: does not speak SMC-R: its SYN-ACK "
		  "did not echo the SMC-R option: plain TCP");
	ask_error(c,
		  "{\"v\":1,\"cmd\":\"check smc\",\"args\":{\"address\":"
		  "\"nowhere\"}}\n",
		  "\"nowhere\" is no address");
	ask_error(c, "{\"v\":1,\"cmd\":\"check smc\"}\n",
		  "command \"check smc\" needs argument \"address\"");
	ask_error(c,
		  "{\"v\":1,\"cmd\":\"check export\",\"args\":{\"name\":"
		  "\"nosuch\"}}\n",
		  "no export \"nosuch\"");
	ask_error(c,
		  "{\"v\":1,\"cmd\":\"check export\",\"args\":{\"name\":"
		  "\"e1\"}}\n",
		  "export e1 has no smc_listen");
	client_free(c);
}
END_TEST

/* While stopping, listings and kills are served; reconfiguring is not. */
START_TEST(test_shutdown)
{
	struct client *c = client_new();
	json_t *r;

	add_sessions(4);
	r = ask_ok(c, "{\"v\":1,\"cmd\":\"version\"}\n");
	ck_assert(json_is_false(
		json_object_get(json_object_get(r, "data"), "stopping")));
	json_decref(r);
	json_decref(ask_ok(c, "{\"v\":1,\"cmd\":\"shutdown\"}\n"));
	ck_assert_int_eq(shutdowns, 1);
	ck_assert_int_eq(shutdowns_now, 0);
	r = ask_ok(c, "{\"v\":1,\"cmd\":\"version\"}\n");
	ck_assert(json_is_true(
		json_object_get(json_object_get(r, "data"), "stopping")));
	json_decref(r);
	ck_assert_int_eq(conns_count(c, "{\"v\":1,\"cmd\":\"show conns\"}\n"),
			 4);
	json_decref(ask_ok(c, "{\"v\":1,\"cmd\":\"stats\"}\n"));
	ask_error(c, "{\"v\":1,\"cmd\":\"reload\"}\n",
		  "smcproxyd is shutting down: \"reload\" is refused");
	ask_error(c,
		  "{\"v\":1,\"cmd\":\"enable rule\",\"args\":{\"name\":"
		  "\"r1\"}}\n",
		  "smcproxyd is shutting down: \"enable rule\" is refused");
	json_decref(ask_ok(c, "{\"v\":1,\"cmd\":\"kill conns\",\"args\":"
			      "{\"age\":0}}\n"));
	json_decref(ask_ok(c, "{\"v\":1,\"cmd\":\"shutdown now\"}\n"));
	ck_assert_int_eq(shutdowns, 2);
	ck_assert_int_eq(shutdowns_now, 1);
	client_free(c);
}
END_TEST

/*
 * The reply to `shutdown now` is not lost when the control socket closes
 * (once the workers drained) before the event loop got to write it.
 */
START_TEST(test_shutdown_reply)
{
	static const char req[] = "{\"v\":1,\"cmd\":\"shutdown now\"}\n";
	struct client *c = client_new();
	char *line;

	ck_assert_int_eq(write(c->fd, req, strlen(req)), (ssize_t)strlen(req));
	/* one pass: the request is read and answered, the reply not written */
	event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	control_shutdown();
	line = client_line(c);
	ck_assert_ptr_nonnull(line);
	ck_assert_str_eq(line, "{\"v\":1,\"ok\":true,\"data\":{\"message\":"
			       "\"stopping now: open connections closed\"}}");
	free(line);
	ck_assert_ptr_null(client_line(c));
	client_free(c);
}
END_TEST

START_TEST(test_reload)
{
	struct client *c = client_new();
	json_t *r, *details;

	reload_rc = 0;
	json_decref(ask_ok(c, "{\"v\":1,\"cmd\":\"reload\"}\n"));
	reload_rc = -EINVAL;
	r = ask(c, "{\"v\":1,\"cmd\":\"reload\"}\n");
	ck_assert(json_is_false(json_object_get(r, "ok")));
	ck_assert_str_eq(json_string_value(json_object_get(r, "error")),
			 "configuration has errors, not reloading");
	details = json_object_get(r, "details");
	ck_assert_uint_eq(json_array_size(details), 2);
	ck_assert_str_eq(json_string_value(json_array_get(details, 0)),
			 "test.conf:3: rules[0].listen: bad address");
	/* not UTF-8 in the config: still a valid JSON reply */
	ck_assert_str_eq(json_string_value(json_array_get(details, 1)),
			 "test.conf:7: peers[1].name: duplicate ?");
	json_decref(r);
	reload_rc = -EIO;
	ask_error(c, "{\"v\":1,\"cmd\":\"reload\"}\n", "reload failed: ");
	client_free(c);
}
END_TEST

/* 10 000 connections in one answer, every one parsed back. */
START_TEST(test_conns_10000)
{
	struct client *c = client_new();
	json_t *r, *conns, *s;
	char *seen;
	size_t i;
	uint64_t id;

	add_sessions(10000);
	r = ask_ok(c, "{\"v\":1,\"cmd\":\"show conns\"}\n");
	conns = json_object_get(json_object_get(r, "data"), "conns");
	ck_assert_uint_eq(json_array_size(conns), 10000);
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_object_get(r, "data"), "count")),
			 10000);
	seen = calloc(10001, 1);
	json_array_foreach(conns, i, s) {
		id = strtoull(json_string_value(json_object_get(s, "id")), NULL,
			      16);
		ck_assert(id >= 1 && id <= 10000 && !seen[id]);
		seen[id] = 1;
		ck_assert_int_eq(
			json_integer_value(json_object_get(s, "bytes_in")),
			(json_int_t)id * 10);
	}
	free(seen);
	json_decref(r);
	client_free(c);
}
END_TEST

static struct session newcomer;

/*
 * After worker 0's second chunk: a session it has not listed yet closes
 * and a new one opens (at the head, as session_new() puts it).
 */
static void
churn(int ncall)
{
	struct session *s;

	if (ncall != 2)
		return;
	LIST_FOREACH(s, &workers[0].sessions, entry) {
		if (s->id == 1) {
			LIST_REMOVE(s, entry);
			break;
		}
	}
	memset(&newcomer, 0, sizeof(newcomer));
	newcomer.id = 20001;
	newcomer.w = &workers[0];
	newcomer.role = SESSION_ROLE_RULE;
	newcomer.rule = &conf->rules[0];
	newcomer.peer = newcomer.rule->peer;
	LIST_INSERT_HEAD(&workers[0].sessions, &newcomer, entry);
}

/*
 * Listings never hold a worker for more than 256 sessions: show conns is
 * gathered in chunks, in the order of one walk, each session once.  The
 * counts of show rules and show peers (what a metrics scrape asks) come
 * from the per-name tallies kept as connections open and end: no walk.
 */
START_TEST(test_conns_chunked)
{
	struct client *c = client_new();
	json_t *r, *conns, *s, *e;
	uint64_t id, last = UINT64_MAX;
	int w, lastw = 0;
	size_t i;

	add_sessions(10000);
	r = ask_ok(c, "{\"v\":1,\"cmd\":\"show conns\"}\n");
	ck_assert_int_le(max_call_sessions, 256);
	ck_assert_int_ge(ncalls, 10000 / 256);
	conns = json_object_get(json_object_get(r, "data"), "conns");
	ck_assert_uint_eq(json_array_size(conns), 10000);
	json_array_foreach(conns, i, s) {
		id = strtoull(json_string_value(json_object_get(s, "id")), NULL,
			      16);
		w = (int)json_integer_value(json_object_get(s, "worker"));
		/* worker 0's list, newest first, then worker 1's */
		if (w != lastw)
			last = UINT64_MAX;
		ck_assert_int_ge(w, lastw);
		ck_assert_uint_lt(id, last);
		last = id;
		lastw = w;
	}
	json_decref(r);

	ncalls = 0;
	r = ask_ok(c, "{\"v\":1,\"cmd\":\"show rules\"}\n");
	e = json_array_get(json_object_get(json_object_get(r, "data"), "rules"),
			   0);
	ck_assert_int_eq(json_integer_value(json_object_get(e, "conns")), 6667);
	e = json_array_get(
		json_object_get(json_object_get(r, "data"), "exports"), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(e, "conns")), 3333);
	json_decref(r);
	r = ask_ok(c, "{\"v\":1,\"cmd\":\"show peers\"}\n");
	e = json_array_get(json_object_get(json_object_get(r, "data"), "peers"),
			   1);
	ck_assert_int_eq(json_integer_value(json_object_get(e, "conns")), 3333);
	json_decref(r);
	ck_assert_int_eq(ncalls, 0);

	/* sessions come and go between the chunks */
	ncalls = 0;
	between_calls = churn;
	r = ask_ok(c, "{\"v\":1,\"cmd\":\"show conns\"}\n");
	between_calls = NULL;
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_object_get(r, "data"), "count")),
			 9999);
	conns = json_object_get(json_object_get(r, "data"), "conns");
	ck_assert_uint_eq(json_array_size(conns), 9999);
	last = UINT64_MAX;
	lastw = 0;
	json_array_foreach(conns, i, s) {
		id = strtoull(json_string_value(json_object_get(s, "id")), NULL,
			      16);
		w = (int)json_integer_value(json_object_get(s, "worker"));
		if (w != lastw)
			last = UINT64_MAX;
		ck_assert_uint_lt(id, last); /* each once, none new */
		ck_assert_uint_ne(id, 1);
		last = id;
		lastw = w;
	}
	json_decref(r);
	client_free(c);
}
END_TEST

/* Seconds since @t0. */
static double
since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) +
	       (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

/*
 * A request line trickling in a byte at a time does not keep its slot:
 * it must be complete 10 s after its first byte, then the client is told
 * so and closed; a client asking meanwhile is served.
 */
START_TEST(test_slow_line)
{
	static const char req[] = "{\"v\":1,\"cmd\":\"version\"}";
	struct client *slow = client_new(), *other = client_new();
	struct timespec t0, last;
	char got[256];
	size_t k = 0, len = 0;
	ssize_t n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	last = t0;
	last.tv_sec--;
	for (;;) {
		if (since(&last) >= 0.5) {
			clock_gettime(CLOCK_MONOTONIC, &last);
			/* never the newline; a closed socket fails the write */
			if (write(slow->fd, &req[k % (sizeof(req) - 1)], 1) ==
			    1)
				k++;
		}
		pump();
		n = read(slow->fd, got + len, sizeof(got) - 1 - len);
		if (n == 0)
			break;
		if (n > 0)
			len += (size_t)n;
		ck_assert_msg(since(&t0) < 15,
			      "trickling client still open after 15 s");
		usleep(10000);
	}
	got[len] = '\0';
	ck_assert_msg(since(&t0) >= 9.5, "closed after %.1f s", since(&t0));
	ck_assert_str_eq(got, "{\"v\":1,\"ok\":false,\"error\":\"request line "
			      "not complete within 10 s\"}\n");
	json_decref(ask_ok(other, "{\"v\":1,\"cmd\":\"version\"}\n"));
	client_free(slow);
	client_free(other);
}
END_TEST

/*
 * A client that asks for big answers and never reads gets its first one
 * rendered only as far as the socket and 64 KiB ahead take (a few chunks,
 * not the whole walk), and its next requests wait; others are served
 * meanwhile.  When it finally reads, it gets every answer, whole.
 */
START_TEST(test_stuck_client)
{
	static const char req[] = "{\"v\":1,\"cmd\":\"show conns\"}\n";
	struct client *stuck, *other;
	json_t *r;
	int i, n = 5;

	add_sessions(10000);
	stuck = client_new();
	other = client_new();
	for (i = 0; i < n; i++)
		client_send(stuck, req, sizeof(req) - 1);
	for (i = 0; i < 100; i++)
		pump();
	/* a whole answer is 40 calls (5000 sessions a worker, 256 a call) */
	ck_assert_int_ge(ncalls, 1);
	ck_assert_int_le(ncalls, 6);

	json_decref(ask_ok(other, "{\"v\":1,\"cmd\":\"version\"}\n"));
	json_decref(ask_ok(other, "{\"v\":1,\"cmd\":\"stats\"}\n"));

	for (i = 0; i < n; i++) {
		r = client_reply(stuck);
		ck_assert_int_eq(json_integer_value(json_object_get(
					 json_object_get(r, "data"), "count")),
				 10000);
		json_decref(r);
	}
	ck_assert_int_eq(ncalls, n * NWORKERS * (5000 / 256 + 1));
	client_free(stuck);
	client_free(other);
}
END_TEST

START_TEST(test_too_many_clients)
{
	struct client *c[65];
	json_t *r;
	int i;

	for (i = 0; i < 64; i++)
		c[i] = client_new();
	c[64] = client_new();
	r = client_reply(c[64]);
	ck_assert_str_eq(json_string_value(json_object_get(r, "error")),
			 "too many control clients");
	json_decref(r);
	ck_assert_ptr_null(client_line(c[64]));
	client_free(c[64]);
	json_decref(ask_ok(c[63], "{\"v\":1,\"cmd\":\"version\"}\n"));
	for (i = 0; i < 64; i++)
		client_free(c[i]);
	c[0] = client_new();
	json_decref(ask_ok(c[0], "{\"v\":1,\"cmd\":\"version\"}\n"));
	client_free(c[0]);
}
END_TEST

static int
bind_unix(const char *path, bool do_listen)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd;

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_ne(fd, -1);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	if (do_listen)
		ck_assert_int_eq(listen(fd, 1), 0);
	return fd;
}

START_TEST(test_socket_file)
{
	char long_path[200], *saved;
	struct client *c;
	struct stat sb;
	int fd;

	ck_assert_int_eq(stat(sockpath, &sb), 0);
	ck_assert(S_ISSOCK(sb.st_mode));
	ck_assert_int_eq(sb.st_mode & 07777, 0666);
	control_shutdown();
	ck_assert_int_eq(access(sockpath, F_OK), -1);

	/* a stale socket is replaced */
	close(bind_unix(sockpath, false));
	ck_assert_int_eq(control_init(conf, base), 0);
	c = client_new();
	json_decref(ask_ok(c, "{\"v\":1,\"cmd\":\"version\"}\n"));
	client_free(c);
	control_shutdown();

	/* a live one is not */
	fd = bind_unix(sockpath, true);
	ck_assert_int_eq(control_init(conf, base), -EADDRINUSE);
	control_shutdown();
	ck_assert_int_eq(access(sockpath, F_OK), 0); /* not ours to remove */
	close(fd);
	unlink(sockpath);

	/* nor anything that is not a socket */
	fd = open(sockpath, O_CREAT | O_WRONLY, 0600);
	close(fd);
	ck_assert_int_eq(control_init(conf, base), -EEXIST);
	ck_assert_int_eq(stat(sockpath, &sb), 0);
	ck_assert(S_ISREG(sb.st_mode));
	unlink(sockpath);

	/* too long for sun_path */
	memset(long_path, 'a', sizeof(long_path) - 1);
	long_path[0] = '/';
	long_path[sizeof(long_path) - 1] = '\0';
	saved = conf->control_socket;
	conf->control_socket = long_path;
	ck_assert_int_eq(control_init(conf, base), -ENAMETOOLONG);
	conf->control_socket = saved;

	ck_assert_int_eq(control_init(conf, base), 0);
}
END_TEST

/* As uid nobody: read-only commands work, mutating ones are refused. */
static int
child_as_nobody(const char *req, const char *want)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	char buf[4096];
	ssize_t n;
	size_t len = 0;
	int fd;

	if (setgroups(0, NULL) == -1 || setgid(NOBODY) == -1 ||
	    setuid(NOBODY) == -1)
		return 10;
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sockpath);
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1)
		return 11;
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req))
		return 12;
	while (memchr(buf, '\n', len) == NULL && len < sizeof(buf) - 1) {
		n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			return 13;
		len += (size_t)n;
	}
	buf[len] = '\0';
	return strstr(buf, want) != NULL ? 0 : 14;
}

static void
run_as_nobody(const char *req, const char *want)
{
	pid_t pid;
	int status;

	fflush(NULL);
	pid = fork();
	ck_assert_int_ne(pid, -1);
	if (pid == 0)
		_exit(child_as_nobody(req, want));
	while (waitpid(pid, &status, WNOHANG) == 0) {
		pump();
		usleep(1000);
	}
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "%s as nobody: status %d, wanted \"%s\"", req,
		      WEXITSTATUS(status), want);
}

START_TEST(test_permissions)
{
	static const char reset[] = "{\"v\":1,\"cmd\":\"stats reset\"}\n";
	static const char kill[] =
		"{\"v\":1,\"cmd\":\"kill conn\",\"args\":{\"id\":1}}\n";

	if (geteuid() != 0)
		return; /* needs root to be somebody else */
	add_sessions(1);
	run_as_nobody("{\"v\":1,\"cmd\":\"stats\"}\n", "\"ok\":true");
	run_as_nobody("{\"v\":1,\"cmd\":\"show conns\"}\n", "\"count\":1");
	run_as_nobody(reset, "permission denied: \\\"stats reset\\\"");
	run_as_nobody(kill, "permission denied");
	run_as_nobody("{\"v\":1,\"cmd\":\"reload\"}\n", "permission denied");
	ck_assert_uint_eq(killed_id, 0);

	conf->control_uid = NOBODY;
	run_as_nobody(reset, "\"ok\":true");
	conf->control_uid = -1;
	conf->control_gid = NOBODY;
	run_as_nobody(kill, "\"ok\":true");
	ck_assert_uint_eq(killed_id, 1);
	conf->control_gid = 12345;
	run_as_nobody(reset, "permission denied");
}
END_TEST

/*
 * As @uid: open @nok clients and ask each for the version, then, if @want
 * is not NULL, one more that must be told @want and closed.  Report 0 (or
 * the failure's number) on @ready and hold the clients until @hold closes.
 */
static int
child_holder(uid_t uid, int nok, const char *want, int ready, int hold)
{
	static const char req[] = "{\"v\":1,\"cmd\":\"version\"}\n";
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	struct timeval tmo = {5, 0};
	char buf[512], code = 0;
	ssize_t n;
	size_t len;
	int i, fd;

	if (setgroups(0, NULL) == -1 || setgid(uid) == -1 || setuid(uid) == -1)
		return 10;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sockpath);
	for (i = 0; i < nok + (want != NULL) && code == 0; i++) {
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
		if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
			code = 11;
			break;
		}
		if (i < nok && write(fd, req, sizeof(req) - 1) == -1)
			code = 12;
		len = 0;
		while (code == 0 && memchr(buf, '\n', len) == NULL &&
		       len < sizeof(buf) - 1) {
			n = read(fd, buf + len, sizeof(buf) - 1 - len);
			if (n <= 0)
				code = 13; /* no reply, or no refusal */
			else
				len += (size_t)n;
		}
		buf[len] = '\0';
		if (code == 0 && i < nok && strstr(buf, "\"ok\":true") == NULL)
			code = 14;
		if (code == 0 && i == nok &&
		    (strstr(buf, want) == NULL || read(fd, buf, 1) != 0))
			code = 15; /* not the refusal, or not closed */
	}
	if (write(ready, &code, 1) != 1)
		return 16;
	(void)!read(hold, buf, 1);
	return code;
}

struct holder {
	pid_t pid;
	int hold; /* closing it lets the child go */
};

static void
holder_start(struct holder *h, uid_t uid, int nok, const char *want)
{
	int ready[2], hold[2], status;
	struct timespec t0;
	char code;
	ssize_t n;

	ck_assert_int_eq(pipe(ready), 0);
	ck_assert_int_eq(pipe(hold), 0);
	fflush(NULL);
	h->pid = fork();
	ck_assert_int_ne(h->pid, -1);
	if (h->pid == 0) {
		close(ready[0]);
		close(hold[1]);
		_exit(child_holder(uid, nok, want, ready[1], hold[0]));
	}
	close(ready[1]);
	close(hold[0]);
	h->hold = hold[1];
	fcntl(ready[0], F_SETFL, O_NONBLOCK);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		pump();
		n = read(ready[0], &code, 1);
		if (n == 1)
			break;
		ck_assert_msg(n == -1 && errno == EAGAIN, "uid %u: no report",
			      (unsigned int)uid);
		ck_assert_msg(since(&t0) < 20, "uid %u: stuck",
			      (unsigned int)uid);
		if (waitpid(h->pid, &status, WNOHANG) == h->pid)
			ck_abort_msg("uid %u: exited %d", (unsigned int)uid,
				     WEXITSTATUS(status));
		usleep(1000);
	}
	close(ready[0]);
	ck_assert_msg(code == 0, "uid %u, %d clients, then \"%s\": failure %d",
		      (unsigned int)uid, nok, want != NULL ? want : "", code);
}

static void
holder_stop(struct holder *h)
{
	int status;

	close(h->hold);
	while (waitpid(h->pid, &status, WNOHANG) == 0) {
		pump();
		usleep(1000);
	}
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	pump();
}

/*
 * Another uid gets 16 clients, the 17th is told why and closed; other
 * users together get 56 of the 64, and root the last 8.
 */
START_TEST(test_uid_limits)
{
	struct holder h[4];
	struct client *root[9];
	json_t *r;
	int i;

	if (geteuid() != 0)
		return; /* needs root to be somebody else */
	holder_start(&h[0], NOBODY, 16,
		     "too many control clients for uid 65534 (at most 16 per "
		     "user)");
	holder_start(&h[1], NOBODY - 1, 16, NULL);
	holder_start(&h[2], NOBODY - 2, 16, NULL);
	holder_start(&h[3], NOBODY - 3, 8,
		     "too many control clients (the last 8 are kept for root "
		     "and the daemon's user)");
	for (i = 0; i < 8; i++) {
		root[i] = client_new();
		json_decref(ask_ok(root[i], "{\"v\":1,\"cmd\":\"version\"}\n"));
	}
	root[8] = client_new();
	r = client_reply(root[8]);
	ck_assert_str_eq(json_string_value(json_object_get(r, "error")),
			 "too many control clients");
	json_decref(r);
	ck_assert_ptr_null(client_line(root[8]));
	for (i = 0; i < 9; i++)
		client_free(root[i]);
	/* last first: each later child holds copies of the earlier pipes */
	for (i = 3; i >= 0; i--)
		holder_stop(&h[i]);
	/* the slots are given back */
	run_as_nobody("{\"v\":1,\"cmd\":\"version\"}\n", "\"ok\":true");
}
END_TEST

static Suite *
control_suite(void)
{
	Suite *s = suite_create("control");
	TCase *proto = tcase_create("protocol");
	TCase *cmds = tcase_create("commands");
	TCase *sock = tcase_create("socket");

	tcase_add_checked_fixture(proto, setup, teardown);
	tcase_add_test(proto, test_version);
	tcase_add_test(proto, test_errors);
	tcase_add_test(proto, test_long_command_name);
	tcase_add_test(proto, test_oversized);
	tcase_add_test(proto, test_pipelined);
	tcase_add_test(proto, test_request);
	tcase_add_test(proto, test_eof);
	suite_add_tcase(s, proto);

	tcase_add_checked_fixture(cmds, setup, teardown);
	tcase_set_timeout(cmds, 60);
	tcase_add_test(cmds, test_stats);
	tcase_add_test(cmds, test_schema);
	tcase_add_test(cmds, test_rules_peers);
	tcase_add_test(cmds, test_kernel_hosts);
	tcase_add_test(cmds, test_kill);
	tcase_add_test(cmds, test_conns_filter);
	tcase_add_test(cmds, test_disable_drain);
	tcase_add_test(cmds, test_check);
	tcase_add_test(cmds, test_check_smc);
	tcase_add_test(cmds, test_shutdown);
	tcase_add_test(cmds, test_shutdown_reply);
	tcase_add_test(cmds, test_reload);
	tcase_add_test(cmds, test_conns_10000);
	tcase_add_test(cmds, test_conns_chunked);
	suite_add_tcase(s, cmds);

	tcase_add_checked_fixture(sock, setup, teardown);
	tcase_set_timeout(sock, 60);
	tcase_add_test(sock, test_stuck_client);
	tcase_add_test(sock, test_too_many_clients);
	tcase_add_test(sock, test_slow_line);
	tcase_add_test(sock, test_uid_limits);
	tcase_add_test(sock, test_socket_file);
	tcase_add_test(sock, test_permissions);
	suite_add_tcase(s, sock);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(control_suite());
	int failed;

	signal(SIGPIPE, SIG_IGN); /* as the daemon does */
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
