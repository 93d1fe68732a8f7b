// SPDX-License-Identifier: BSD-2-Clause
/*
 * Private to the control socket: control.c (the socket, its clients, the
 * requests, the table of commands and the admin commands), control_show.c
 * (stats and the show commands) and control_check.c (the check commands),
 * with control_reply.c below all three (the replies, and what every
 * command reads: the running configuration, the start time).  control.c
 * calls the other two through its table and never the other way round: a
 * check that answers later resumes its client through cr_resume.
 * Everybody else uses the control_* functions of smcproxyd.h.
 */
#ifndef SMCPROXYD_CONTROL_INT_H
#define SMCPROXYD_CONTROL_INT_H

#include <sys/queue.h>
#include <sys/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <jansson.h>

#include "smcproxyd.h"
#include "monitor.h"

#define CONTROL_CHUNK 256 /* sessions gathered per worker_call() */
#define CONTROL_LISTING_OUT (64 * 1024) /* a listing's output rendered ahead */

struct bufferevent;
struct event;
struct event_base;
struct evbuffer;
struct control_listing;
struct control_check;

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
 * written the whole reply itself (cr_sent).  One that answers later, from
 * a timer, calls cr_resume on the client once the answer is written: the
 * client's deadlines run again and its next requests are read.
 */
struct control_req {
	struct control_client *cr_client;
	const struct control_cmd *cr_cmd;
	json_t *cr_args;
	struct evbuffer *cr_out;
	char *cr_error;
	json_t *cr_details;
	bool cr_sent;
	void (*cr_resume)(struct control_client *c);
};

/* A connection filter: NULL or -1 members match any connection. */
struct control_filter {
	const char *rule, *peer, *state, *mode, *dialect;
	json_int_t age; /* at least this many seconds old */
};

/* control_reply.c */
extern struct event_base *control_base;
extern const struct conf *control_conf;
extern struct timespec control_started;
extern double control_start_time; /* the same, in seconds since the epoch */

int control_dump(struct evbuffer *out, const json_t *j);
json_t *control_text(const char *s);
void control_send_ok(struct evbuffer *out, json_t *data);
void control_send_error(struct evbuffer *out, const char *msg, json_t *details);
void control_send_errorf(struct evbuffer *out, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void control_fail(struct control_req *req, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
json_t *control_done(json_t *data, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void control_admin(const struct control_req *req, enum monitor_event ev,
		   const struct log_where *w, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int64_t control_uptime(void);
json_t *control_addr(const struct addr *a);

/* control_show.c */
json_t *control_cmd_stats(struct control_req *req);
json_t *control_cmd_stats_reset(struct control_req *req);
json_t *control_cmd_rules(struct control_req *req);
json_t *control_cmd_peers(struct control_req *req);
json_t *control_cmd_lgrs(struct control_req *req);
json_t *control_cmd_links(struct control_req *req);
json_t *control_cmd_intercept(struct control_req *req);
json_t *control_cmd_conns(struct control_req *req);
json_t *control_cmd_smc(struct control_req *req);
int control_filter_parse(struct control_req *req, struct control_filter *f,
			 bool need_one);
bool control_filter_match(const struct control_filter *f, const json_t *s);
int control_sessions_foreach(int (*fn)(const json_t *conns, void *arg),
			     void *arg);
bool control_listing_more(struct control_listing *l, struct evbuffer *out,
			  size_t room);
void control_listing_free(struct control_listing *l);

/* control_check.c */
json_t *control_cmd_check(struct control_req *req);
json_t *control_cmd_check_smc(struct control_req *req);
json_t *control_cmd_check_export(struct control_req *req);
void control_check_free(struct control_check *ck);

#endif
