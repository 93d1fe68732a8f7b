/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * smcproxyd internal header: the types shared between modules and the
 * prototypes of every module, grouped by file (tmux style).  Wire formats
 * live in their own headers (fallback_wire.h, ...).
 */
#ifndef SMCPROXYD_H
#define SMCPROXYD_H

#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "dev.h"
#include "stats.h"

#define SMCPROXYD_VERSION PACKAGE_VERSION
#define CONF_NAME_MAX 63 /* rule, peer and export names */
#define CONF_KEY_MIN 32	 /* bytes in a peer's pre-shared key */
#define CONF_KEY_MAX 1024

struct event_base;
struct worker;
struct session;

/* log.c */
enum log_level { LOG_LEVEL_ERR, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };
void log_init(int foreground, enum log_level level);
void log_set_level(enum log_level level);
int log_level_parse(const char *name, enum log_level *out);
bool log_debug_enabled(void);
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fatal(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

/* addr.c */
struct addr {
	struct sockaddr_storage ss;
	socklen_t len;
};
int addr_parse(const char *s, struct addr *out);
int addr_parse_host(const char *s, struct addr *out);
const char *addr_str(const struct addr *a, char *buf, size_t len);
bool addr_same_host(const struct addr *a, const struct addr *b);
bool addr_equal(const struct addr *a, const struct addr *b);
#define ADDR_STRLEN (INET6_ADDRSTRLEN + 8)

/* conf.c */
enum conf_slot_wait { CONF_SLOT_WAIT_EXCLUSIVE, CONF_SLOT_WAIT_ALL };

struct conf_peer {
	char name[CONF_NAME_MAX + 1];
	struct addr addr;	/* where its peer port is */
	char *key_file;		/* NULL when insecure */
	unsigned char key[CONF_KEY_MAX];
	size_t key_len;		/* 0 when insecure */
	bool insecure;
	bool any_source;	/* accept it from any source address */
	int line;
};

struct conf_export {
	char name[CONF_NAME_MAX + 1];
	struct addr target;
	char **peers;		/* names allowed to use it */
	int npeers;
	int connect_timeout;	/* seconds */
	int line;
};

struct conf_rule {
	char name[CONF_NAME_MAX + 1];
	struct addr listen;
	const struct conf_peer *peer;
	char export[CONF_NAME_MAX + 1];
	int idle_timeout;	/* seconds, 0 = never */
	int line;
};

struct conf_rdma {
	char **devices;
	int ndevices;
	int gid_index;
	int max_links;
	int max_conns_per_lgr;
	int max_send_wr;
	int max_recv_wr;
	int sndbuf;
	int rmb;
	bool autocork;
	int autocork_size;
	bool inline_enabled;
	int inline_size;
	enum conf_slot_wait slot_wait;
	int lgr_idle_timeout;
	int test_link_time;
};

struct conf {
	char *path;
	char name[CONF_NAME_MAX + 1];	/* this daemon's name at its peers */
	char *control_socket;
	int control_mode;
	int control_uid;		/* -1: only root and our own uid */
	int control_gid;
	int workers;			/* resolved: never 0 */
	enum log_level log_level;
	int shutdown_timeout;		/* seconds given to open connections */
	int max_conns;			/* per worker, 0 = unlimited */
	bool has_peer_listen;
	struct addr peer_listen;
	struct conf_peer *peers;
	int npeers;
	struct conf_rule *rules;
	int nrules;
	struct conf_export *exports;
	int nexports;
	struct conf_rdma rdma;
	struct conf_src *src;		/* conf.c private: where keys were set */
	int refs;			/* conf_hold/conf_drop; 0 when loaded */
};

struct conf *conf_load(const char *path, FILE *errors);
struct conf *conf_load_string(const char *text, const char *name, FILE *errors);
void conf_free(struct conf *conf);
const struct conf_peer *conf_peer_find(const struct conf *conf,
				       const char *name);
const struct conf_export *conf_export_find(const struct conf *conf,
					   const char *name);
bool conf_export_allows(const struct conf_export *exp, const char *peer);
int conf_reload_check(const struct conf *old, const struct conf *new,
		      FILE *errors);
void conf_print_schema(FILE *out);

/* A config lives while the main thread, a worker or a session holds it. */
static inline struct conf *
conf_hold(struct conf *conf)
{
	__atomic_add_fetch(&conf->refs, 1, __ATOMIC_RELAXED);
	return conf;
}

static inline void
conf_drop(struct conf *conf)
{
	if (conf != NULL &&
	    __atomic_sub_fetch(&conf->refs, 1, __ATOMIC_ACQ_REL) == 0)
		conf_free(conf);
}

/* notify.c */
void notify_send(const char *state);

/* auth.c */
struct auth_limit;
#define AUTH_NONCE_LEN 32
#define AUTH_MAC_LEN 32
int auth_key_load(const char *path, unsigned char *key, size_t *len,
		  char *err, size_t errlen);
void auth_nonce(unsigned char nonce[AUTH_NONCE_LEN]);
void auth_mac(const unsigned char *key, size_t keylen, const char *label,
	      const void *a, size_t alen, const void *b, size_t blen,
	      unsigned char mac[AUTH_MAC_LEN]);
bool auth_mac_equal(const unsigned char *a, const unsigned char *b);
bool auth_rate_limited(struct auth_limit *al, const struct addr *src,
		       uint64_t now_ms);
void auth_failed(struct auth_limit *al, const struct addr *src,
		 uint64_t now_ms);

/* auth.c: a small per-worker table of sources that failed to authenticate */
#define AUTH_LIMIT_SLOTS 64
struct auth_limit {
	struct {
		struct addr src;
		double tokens;
		uint64_t last_ms;
	} slot[AUTH_LIMIT_SLOTS];
	unsigned int next;
};

/* worker.c */
typedef void (*worker_fn)(struct worker *, void *);
int worker_start_all(struct conf *conf);
void worker_stop_all(int timeout);
void worker_join_all(void);
int worker_count(void);
struct worker *worker_get(int i);
int worker_id(const struct worker *w);
struct event_base *worker_base(const struct worker *w);
struct stats *worker_stats(struct worker *w);
struct conf *worker_conf(const struct worker *w);
struct auth_limit *worker_auth(struct worker *w);
bool worker_has_room(const struct worker *w);
void worker_call(struct worker *w, worker_fn fn, void *arg);
void worker_post(struct worker *w, worker_fn fn, void *arg);
int worker_reconfigure_all(struct conf *conf);
bool worker_draining(const struct worker *w);
void worker_session_add(struct worker *w, struct session *s);
void worker_session_del(struct worker *w, struct session *s);
struct session *worker_sessions(struct worker *w);
int worker_pipe_get(struct worker *w, int fds[2]);
void worker_pipe_put(struct worker *w, int fds[2], size_t cap, bool empty);

/* listener.c */
struct listener;
struct listener *listener_new(struct worker *w, const struct addr *addr,
			      void (*cb)(struct worker *, int, void *),
			      void *arg);
void listener_set_arg(struct listener *l, void *arg);
const struct addr *listener_addr(const struct listener *l);
void listener_free(struct listener *l);
int listener_probe(const struct addr *addr);

/* session.c */
#define SESSION_PIPE_SIZE (1024 * 1024)

enum session_role { SESSION_ROLE_RULE, SESSION_ROLE_EXPORT };
enum session_mode { SESSION_MODE_FALLBACK, SESSION_MODE_RDMA };
enum session_state {
	SESSION_CONNECT_PEER,	/* rule side: connecting to the peer port */
	SESSION_HELLO,		/* rule side: hello sent, waiting for result */
	SESSION_HANDSHAKE,	/* export side: reading hello / proof */
	SESSION_CONNECT_TARGET,	/* export side: connecting to the target */
	SESSION_RELAY,
	SESSION_CLOSED,
};

/*
 * fd[0] faces downstream (the client on the rule side, the peer daemon on
 * the export side), fd[1] upstream (peer daemon, target).  pump[i] moves
 * bytes read from fd[i] to fd[1 - i] through a pipe with splice().
 */
struct session_pump {
	int pipe[2];
	size_t pending;		/* bytes in the pipe */
	size_t cap;
	bool eof;		/* fd[i] sent FIN */
	bool done;		/* FIN passed on: shutdown(fd[1 - i], SHUT_WR) */
	bool stalled;		/* pipe full: reading paused */
	uint64_t bytes;
};

#define FALLBACK_MSG_MAX 256

struct session {
	struct session *prev, *next;
	struct worker *w;
	uint64_t id;
	enum session_role role;
	enum session_mode mode;
	enum session_state state;
	struct conf *conf;			/* held */
	const struct conf_rule *rule;		/* rule side */
	const struct conf_peer *peer;
	const struct conf_export *export;	/* export side */
	int fd[2];
	struct event *rev[2], *wev[2];
	struct event *timer;
	struct session_pump pump[2];
	struct addr addr[2];
	uint64_t started_ms, active_ms;
	enum session_reason fin_reason;
	bool fin_downstream;	/* close fd[0] with a FIN even on abort */
	/* fallback handshake */
	unsigned char in[FALLBACK_MSG_MAX];
	size_t in_len;
	unsigned char out[FALLBACK_MSG_MAX];
	size_t out_len, out_off;
	unsigned char hello[FALLBACK_MSG_MAX];
	size_t hello_len;
	unsigned char nonce[AUTH_NONCE_LEN];
	unsigned char challenge[FALLBACK_MSG_MAX];
	size_t challenge_len;
	char export_name[CONF_NAME_MAX + 1];
};

const char *session_reason_name(enum session_reason r);
const char *session_reason_desc(enum session_reason r);
void session_accept_rule(struct worker *w, int fd, void *rule);
void session_accept_peer(struct worker *w, int fd, void *unused);
void session_relay_start(struct session *s);
void session_reset_fd(int fd);
int session_attach_upstream(struct session *s, int fd);
void session_want(struct session *s, int i, short what, bool on);
int session_timer(struct session *s, int seconds);
uint64_t session_now_ms(void);
void session_close(struct session *s, enum session_reason reason);
void session_close_all(struct worker *w, enum session_reason reason);
struct session *session_next(const struct session *s);
uint64_t session_id(const struct session *s);
void session_json_add(const struct session *s, void *json_array);
int session_kill(struct worker *w, uint64_t id);

/* control.c */
#define CONTROL_VERSION 1	/* the "v" of every request and reply */
#define CONTROL_SOCKET_DEFAULT "/run/smcproxyd/control.sock"
#define CONTROL_LINE_MAX (64 * 1024)	/* longest request line */
int control_init(const struct conf *conf, struct event_base *base);
void control_conf_update(const struct conf *conf);
void control_shutdown(void);

/* smcproxyd.c */
int smcproxyd_reload(FILE *errors);

/* ib.c */
enum ib_gid_type { IB_GID_TYPE_IB, IB_GID_TYPE_ROCE_V1, IB_GID_TYPE_ROCE_V2 };
struct ib_gid {
	uint32_t index;		/* in the port's GID table */
	uint8_t raw[16];
	enum ib_gid_type type;
	unsigned int ifindex;	/* its netdev, 0 if none */
};
int ib_list_devices(FILE *out, const char *local_ip);
int ib_gid_pick(const struct ib_gid *gids, size_t ngids,
		const struct addr *local);

/* fallback.c */
void fallback_connect(struct session *s);
void fallback_accept(struct session *s);
void fallback_io(struct session *s, int i, short what);
void fallback_timeout(struct session *s);

/* wr.c: work requests of one link (TX slots, RX buffers, completions) */
struct wr_link;
struct wr_tx_slot;

enum wr_slot_wait { WR_WAIT_EXCLUSIVE, WR_WAIT_ALL };

struct wr_params {
	char name[32];		/* for logs: "lgr 3 link 1" */
	uint32_t max_send_wr;	/* TX slots */
	uint32_t max_recv_wr;
	bool inline_enabled;
	uint32_t inline_size;	/* asked for; the device says what it gives */
	enum wr_slot_wait slot_wait;
	uint32_t slot_wait_max_ms; /* a longer wait is a link fault; 0: 10 s */
};

struct wr_link_cb {
	void (*down)(struct wr_link *l, void *arg);
	void *arg;
};

/* A sender parked for a TX slot; wake(w, 0 or -ENOLINK) when one frees. */
struct wr_waiter {
	struct wr_waiter *next, *prev;
	void (*wake)(struct wr_waiter *w, int status);
	uint64_t since_ms;
	bool queued;
	bool woken;
};

/* One RDMA WRITE of at most two local spans to the peer's RMB. */
struct wr_write {
	struct dev_sge sge[2];
	int nsge;
	uint64_t remote_addr;
	uint32_t rkey;
};

struct wr_stats {
	uint64_t posted;	/* WRs posted (WRITEs and SENDs) */
	uint64_t inline_wrs;
	uint64_t completions;
	uint64_t errors;
	uint64_t rx_unknown;	/* received messages of no known type */
	uint64_t slot_waits;	/* senders that had to park */
	uint64_t wakeups;
	uint64_t contended_frees; /* slots freed while someone waited */
	uint64_t longest_wait_ms;
	uint64_t slot_wait_timeouts;
};

typedef void (*wr_tx_done_fn)(struct wr_link *l, struct wr_tx_slot *slot,
			      int status, void *arg);
typedef void (*wr_rx_fn)(struct wr_link *l, const void *msg, size_t len,
			 void *arg);

struct wr_link *wr_link_new(const struct dev_ops *ops, struct dev *dev,
			    struct event_base *base,
			    const struct wr_params *params,
			    const struct wr_link_cb *cb);
int wr_link_connect(struct wr_link *l, const struct dev_qp_addr *peer);
void wr_link_down(struct wr_link *l, const char *why);
void wr_link_free(struct wr_link *l);
bool wr_link_is_down(const struct wr_link *l);
const struct wr_stats *wr_link_stats(const struct wr_link *l);
const struct dev_qp_caps *wr_link_caps(const struct wr_link *l);
struct dev_qp *wr_link_qp(const struct wr_link *l);
void wr_rx_register(struct wr_link *l, uint8_t type, wr_rx_fn fn);
int wr_tx_get(struct wr_link *l, struct wr_tx_slot **out,
	      struct wr_waiter *w);
void wr_tx_wait_cancel(struct wr_link *l, struct wr_waiter *w);
void wr_tx_put(struct wr_link *l, struct wr_tx_slot *slot);
void *wr_tx_buf(struct wr_tx_slot *slot);
int wr_tx_post(struct wr_link *l, struct wr_tx_slot *slot,
	       const struct wr_write *w, int nwrites, wr_tx_done_fn done,
	       void *arg);

/* clc.c: the link-group handshake on a TCP control connection */
struct clc_conn;
struct clc_accept_info;
struct clc_proposal_info;
struct lgr;
struct lgr_ctx;
bool clc_accept(struct session *s);
int clc_serve(struct lgr_ctx *ctx, int fd, const struct addr *src,
	      const void *hdr, size_t hdr_len);
int clc_client_start(struct lgr *lgr, int fd);
void clc_decline_send(struct clc_conn *c, uint32_t code);
void clc_conn_free(struct clc_conn *c);

/* llc.c: link-layer control on the links of a link group */
struct lgr_link;
struct llc_info;
void llc_link_init(struct lgr_link *link);
void llc_link_release(struct lgr_link *link);
int llc_send(struct lgr_link *link, const struct llc_info *m,
	     wr_tx_done_fn done, void *arg);
int llc_confirm_link_send(struct lgr_link *link);
int llc_add_link_send(struct lgr_link *via, struct lgr_link *link);
int llc_delete_link_send(struct lgr_link *via, uint8_t link_num,
			 uint32_t reason, bool all, bool orderly,
			 wr_tx_done_fn done, void *arg);
int llc_test_link_send(struct lgr_link *link);
void llc_link_tick(struct lgr_link *link, uint64_t now_ms);

/* lgr.c: link groups, their links, and the peers they reach (DESIGN §3) */
#define LGR_LINKS_MAX 2	 /* active links per group (SMC-R v2.1: 1..2) */
#define LGR_LINK_SLOTS 3 /* one more: a link going while another comes */
#define LGR_DEVS_MAX 8
#define LGR_LLC_QUEUE 8	 /* LLC messages waiting for a TX slot */

enum lgr_role { LGR_ROLE_CLIENT, LGR_ROLE_SERVER };

enum lgr_state {
	LGR_STATE_CLC,		/* CLC handshake on the control connection */
	LGR_STATE_CONFIRMING,	/* first link: CONFIRM_LINK under way */
	LGR_STATE_ACTIVE,
	LGR_STATE_TERMINATING,	/* DELETE_LINK sent; freed soon */
};

enum lgr_link_state {
	LGR_LINK_FREE,		/* slot unused */
	LGR_LINK_INIT,		/* QP created, not connected */
	LGR_LINK_ADDING,	/* server: ADD_LINK sent, awaiting the answer */
	LGR_LINK_CONFIRMING,	/* QP connected, CONFIRM_LINK under way */
	LGR_LINK_ACTIVE,
	LGR_LINK_DOWN,		/* failed or deleted; freed soon */
};

/* What an LLC flow on a link waits for (link->deadline_ms bounds it). */
enum lgr_link_wait {
	LGR_WAIT_NONE,
	LGR_WAIT_CONFIRM_REQ,	/* client: CONFIRM_LINK request */
	LGR_WAIT_CONFIRM_RESP,	/* server: CONFIRM_LINK response */
	LGR_WAIT_ADD_RESP,	/* server: ADD_LINK response */
};

/*
 * Protocol timers in milliseconds.  lgr_ctx_new() fills in SMC's values
 * for every field left 0; tests shrink them.  test_link_ms and idle_ms
 * default to the config's test_link_time and lgr_idle_timeout.
 */
struct lgr_timeouts {
	unsigned int clc_wait_ms;	/* each CLC message: 6000 */
	unsigned int llc_wait_ms;	/* LLC answers: 2000, client twice */
	unsigned int test_link_ms;	/* link silence before TEST_LINK */
	unsigned int idle_ms;		/* idle group lingers */
	unsigned int backoff_ms;	/* first fallback period: 60000 */
	unsigned int backoff_max_ms;	/* doubling up to: 600000 */
	unsigned int add_link_retry_ms;	/* server: next ADD_LINK try: 60000 */
};

/* A device port links can use; local.len == 0: for any local address. */
struct lgr_dev {
	const struct dev_ops *ops;
	struct dev *dev;
	char name[32];
	struct addr local;
	bool owned;		/* opened by us (ib_dev_open): closed by us */
};

struct lgr_llc_qent {
	uint8_t msg[44];	/* LLC_MSG_LEN */
	wr_tx_done_fn done;
	void *arg;
};

struct lgr_link {
	struct lgr *lgr;
	enum lgr_link_state state;
	enum lgr_link_wait wait;
	uint8_t id;		/* link_num on the wire; 0 until known */
	int slot;
	const struct lgr_dev *dev;
	struct wr_link *wr;
	struct dev_qp_addr local, peer;
	uint64_t deadline_ms;	/* of wait */
	uint64_t up_ms;
	uint64_t act_ms;	/* last sign of life (completions moved) */
	uint64_t act_completions;
	bool test_pending;
	uint64_t test_deadline_ms;
	uint8_t test_data[16];
	uint64_t test_sent, test_answered;
	int conns;
	struct wr_waiter waiter;	/* parked for a TX slot (LLC queue) */
	struct lgr_llc_qent q[LGR_LLC_QUEUE];
	int q_head, q_len;
};

/*
 * A connection of the data path on a link group.  link_down(c, to) runs
 * when its link went down: to is the active link it now uses (resend what
 * was not confirmed), or NULL when the group is gone (close it).
 */
struct lgr_conn {
	struct lgr_conn *next, *prev;
	struct lgr *lgr;
	struct lgr_link *link;
	void (*link_down)(struct lgr_conn *c, struct lgr_link *to);
	void *arg;
};

struct lgr {
	struct lgr *next, *prev;
	struct lgr_ctx *ctx;
	uint32_t id;
	enum lgr_role role;
	enum lgr_state state;
	struct conf *conf;		/* held: peer points into it */
	const struct conf_peer *peer;
	uint8_t peer_system_id[8];
	uint8_t uid[4];			/* CONFIRM_LINK link_uid: the server's */
	uint8_t max_conns;		/* negotiated */
	uint8_t max_links;
	uint32_t features;
	uint32_t token, peer_token;	/* alert tokens from CLC */
	uint8_t peer_rmbe_size;
	struct lgr_link link[LGR_LINK_SLOTS];
	uint8_t next_link_id;
	int nconns;
	struct lgr_conn *conns;
	struct clc_conn *clc;		/* the control connection */
	struct event *tick;
	struct event *reap;
	uint64_t created_ms, active_ms, idle_since_ms, next_add_ms;
	uint64_t term_deadline_ms;
	uint32_t term_reason;
	bool counted_up;		/* in lgr_created and the peer's count */
};

/* One daemon's link groups on one event_base (a worker; a test side). */
struct lgr_ctx {
	struct event_base *base;
	struct worker *w;		/* NULL in tests */
	struct conf *conf;		/* held when w is NULL */
	struct stats *stats;
	struct auth_limit *auth;
	struct lgr_timeouts t;
	uint8_t system_id[8];
	struct lgr_dev devs[LGR_DEVS_MAX];
	int ndevs;
	bool probe;			/* open ib devices on demand */
	struct {
		struct addr local;
		uint64_t until_ms;
	} tried[LGR_DEVS_MAX];		/* addresses no device served */
	int ntried;
	struct lgr *lgrs;
	int pending_servers;		/* server handshakes under way */
};

struct lgr_peer_info {
	bool rdma;		/* an active link group reaches it */
	int lgrs;		/* active link groups, all workers */
	uint32_t reason;	/* why it last fell back; 0: never */
	bool by_peer;		/* the peer declined (else we did) */
	uint64_t backoff_left_ms; /* RDMA not tried before then */
};

struct lgr_ctx *lgr_ctx_new(struct event_base *base, struct conf *conf,
			    struct stats *st, struct auth_limit *al,
			    const struct lgr_timeouts *t);
int lgr_ctx_add_dev(struct lgr_ctx *ctx, const struct dev_ops *ops,
		    struct dev *dev, const char *name);
void lgr_ctx_free(struct lgr_ctx *ctx);
struct lgr_ctx *lgr_worker_ctx(struct worker *w);
struct conf *lgr_ctx_conf(const struct lgr_ctx *ctx);
void lgr_want(struct lgr_ctx *ctx, const struct conf_peer *peer);
struct lgr *lgr_get(struct lgr_ctx *ctx, const struct conf_peer *peer);
struct lgr *lgr_client_new(struct lgr_ctx *ctx,
			   const struct conf_peer *peer, int fd);
int lgr_conn_add(struct lgr *lgr, struct lgr_conn *c);
void lgr_conn_del(struct lgr_conn *c);
struct lgr_link *lgr_link_by_id(struct lgr *lgr, uint8_t id);
int lgr_links_active(const struct lgr *lgr);
const char *lgr_state_name(enum lgr_state st);
const char *lgr_link_state_name(enum lgr_link_state st);
const char *lgr_peer_mode(const char *peer, uint32_t *reason);
int lgr_peer_info(const char *peer, struct lgr_peer_info *out);
void lgr_json(struct lgr_ctx *ctx, void *lgrs, void *links);
void lgr_worker_json(struct worker *w, void *lgrs, void *links);
uint64_t lgr_now_ms(void);
/* for clc.c and llc.c */
struct lgr *lgr_server_new(struct lgr_ctx *ctx, const struct conf_peer *peer,
			   const struct clc_proposal_info *p,
			   const struct addr *local, uint32_t *decline);
void lgr_clc_body(const struct lgr *lgr, struct clc_accept_info *out);
uint32_t lgr_clc_peer(struct lgr *lgr, const struct clc_accept_info *in);
void lgr_clc_done(struct lgr *lgr);
void lgr_clc_end(struct lgr *lgr, uint32_t code, bool by_peer);
void lgr_link_confirmed(struct lgr_link *link);
void lgr_link_fail(struct lgr_link *link, uint32_t reason, bool by_peer,
		   const char *why);
void lgr_link_timeout(struct lgr_link *link);
void lgr_protocol_error(struct lgr *lgr, const char *why);
void lgr_terminate(struct lgr *lgr, uint32_t reason, bool orderly,
		   bool by_peer);
struct lgr_link *lgr_link_add_peer(struct lgr *lgr, uint8_t link_num,
				   const struct dev_qp_addr *peer);
int lgr_link_add_answer(struct lgr_link *link,
			const struct dev_qp_addr *peer);
void lgr_link_add_rejected(struct lgr_link *link);

/* stats.c */
const char *stats_name(enum stats_id id);
void stats_sum(struct stats *out);
void stats_reset(void);
void stats_snapshot(struct stats *out);
enum stats_kind stats_kind(enum stats_id id);
int64_t stats_since_reset(void);
struct json_t *stats_json(const struct stats *st);
struct json_t *stats_schema_json(void);

#endif /* SMCPROXYD_H */
