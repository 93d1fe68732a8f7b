/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * smcproxyd internal header: the types shared between modules and the
 * prototypes of every module, grouped by file (tmux style).  Wire formats
 * live in their own headers (fallback_wire.h, ...).  The files' sections
 * go by level from the bottom, as src/Makefile.inc lists the files
 * (scripts/callgraph --levels, checked by 003-call-graph): a module's API
 * comes after those it builds on, and a type a lower file needs whole
 * sits with the lowest file that needs it.
 */
#ifndef SMCPROXYD_H
#define SMCPROXYD_H

#include <sys/types.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cdc_wire.h"
#include "llc_wire.h"
#include "dev.h"
#include "stats.h"

/* glibc's <sys/queue.h> lacks the BSD iterators that allow removal */
#ifndef TAILQ_FOREACH_SAFE
#define TAILQ_FOREACH_SAFE(var, head, field, tvar)                  \
	for ((var) = TAILQ_FIRST(head);                             \
	     (var) != NULL && ((tvar) = TAILQ_NEXT(var, field), 1); \
	     (var) = (tvar))
#endif
#ifndef LIST_FOREACH_SAFE
#define LIST_FOREACH_SAFE(var, head, field, tvar)                  \
	for ((var) = LIST_FIRST(head);                             \
	     (var) != NULL && ((tvar) = LIST_NEXT(var, field), 1); \
	     (var) = (tvar))
#endif

/* The struct of type holding member at ptr. */
/* clang-format 14 takes "(ptr) -" for a cast: */
/* clang-format off */
#define container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))
/* clang-format on */

#define SMCPROXYD_VERSION PACKAGE_VERSION
#define CONF_NAME_MAX 63	/* rule, peer and export names */
#define CONF_SMCR_PEER "smc-r"	/* kernel SMC-R peers, as one peer */
#define CONF_SMCR_MAX_LGRS 4096 /* their link groups with us, at most */
#define CONF_KEY_MIN 32		/* bytes in a peer's pre-shared key */
#define CONF_KEY_MAX 1024

/* Held by pointer in sections below the one that defines them. */
struct conf;
struct conf_rule;
struct conf_smcr;
struct event_base;
struct lgr_ctx;
struct session;
struct worker;

/* now.c */
uint64_t now_ms(void);
uint64_t now_us(void);

/* addr.c */
struct addr {
	struct sockaddr_storage ss;
	socklen_t len;
};
int addr_parse(const char *s, struct addr *out);
int addr_parse_host(const char *s, struct addr *out);
const char *addr_str(const struct addr *a, char *buf, size_t len);
bool addr_same_host(const struct addr *a, const struct addr *b);
void addr_of_gid(const uint8_t gid[16], struct addr *out);
bool addr_equal(const struct addr *a, const struct addr *b);
bool addr_loopback(const struct addr *a);
int addr_bind_source(int fd, const struct addr *a);
bool addr_host(const struct addr *a, char *buf, size_t len);
#define ADDR_STRLEN (INET6_ADDRSTRLEN + 8)
/* A network: "192.0.2.0/24", "2001:db8::/32", or one host. */
struct addr_net {
	struct addr a;	   /* as written, port 0 */
	uint8_t bytes[16]; /* IPv4 as IPv4-mapped IPv6 */
	int prefix;	   /* bits of bytes, 96 + n for IPv4 /n */
};
int addr_net_parse(const char *s, struct addr_net *out);
bool addr_net_match(const struct addr_net *n, const struct addr *a);

/* proxy.c: the PROXY protocol's header */
#define PROXY_V2_MAX (16 + 36) /* v2 as we write it: two IPv6 ends */
#define PROXY_HEADER_MAX 536   /* the longest we read: v2 with its TLVs */
struct proxy_header {
	size_t len;	 /* its bytes on the wire */
	bool local;	 /* names no client: the connection's own ends */
	struct addr src; /* the client */
	struct addr dst; /* the address it connected to */
};
size_t proxy_header_write(void *buf, const struct addr *src,
			  const struct addr *dst);
int proxy_header_read(const void *buf, size_t n, struct proxy_header *h,
		      char *why, size_t whylen);

/* cdc.c, for lgr.c: a received CDC decoded */
int cdc_msg_check(const void *msg, size_t len, size_t data_max,
		  struct cdc_info *m, const char **why);

/* session_reason.c */
const char *session_reason_name(enum session_reason r);
const char *session_reason_desc(enum session_reason r);
bool session_reason_target(enum session_reason r);
uint32_t session_reason_code(enum session_reason r);
enum session_reason session_reason_of_code(uint32_t code);
enum session_reason session_reason_of_connect(int err, bool target);

/* session_state.c */
enum session_state {
	SESSION_CONNECT_PEER,	/* rule side: connecting to the peer port */
	SESSION_HELLO,		/* rule side: hello sent, waiting for result */
	SESSION_HANDSHAKE,	/* export side: reading hello / proof */
	SESSION_CONNECT_TARGET, /* export side: connecting to the target */
	SESSION_RDMA_WAIT,	/* rule side: for a link group on its way */
	SESSION_RDMA_OPEN,	/* rule side: CONN_OPEN sent, awaiting answer */
	SESSION_RDMA_REOPEN,	/* rule side: that open was lost with its
				 * group; opens again on its timer */
	SESSION_RELAY,
	SESSION_RESUMING, /* RDMA: its link group ended; to a new one */
	SESSION_CLOSED,
};
const char *session_state_name(enum session_state st);

/* log.c */
enum log_level {
	LOG_LEVEL_ERR,
	LOG_LEVEL_WARN,
	LOG_LEVEL_INFO,
	LOG_LEVEL_DEBUG
};
void log_init(int foreground, enum log_level level);
void log_set_times(bool on);
void log_set_level(enum log_level level);
enum log_level log_get_level(void);
const char *log_level_name(enum log_level level);
int log_level_parse(const char *name, enum log_level *out);
bool log_info_enabled(void);
#define LOG_FIELDS_MAX 16
void log_info_fields(const char *const *fields, int nfields, const char *fmt,
		     ...) __attribute__((format(printf, 3, 4)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define LOG_RL_INTERVAL_MS 5000 /* log_warn_rl's window */
#define LOG_RL_BURST 10		/* lines of a kind and source per window */
void log_warn_rl(const char *kind, const char *source, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void log_warnx_rl(const char *kind, const char *source, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void log_rl_limits(uint64_t interval_ms, unsigned int burst);
void log_rl_flush(void);
/*
 * Events with a journal MESSAGE_ID, fixed for good (as systemd's catalog
 * ids; docs/stats.md "Log events"): X(id, name, 128-bit id in hex).
 */
#define LOG_EVENTS(X)                                                     \
	X(LINK_UP, "link_up", "a1019f3f1de7421dbaed4d90612770e0")         \
	X(LINK_DOWN, "link_down", "524edd686746432894515ee7e70f59b2")     \
	X(PEER_UP, "peer_up", "fc02ec302b63463089d825550f13f637")         \
	X(PEER_DOWN, "peer_down", "7f26b048b33b4e3f876f27c3b3cadcb7")     \
	X(AUTH_FAILED, "auth_failed", "cf64de56aaf1493fb3ae6f27f7457a89") \
	X(RELOAD, "reload", "99eb0c885a0c4c2da9e65459e167112b")           \
	X(RELOAD_FAILED, "reload_failed", "39e84c19d16548c58b3f0b97272411f7")

enum log_event {
#define X(id, name, msgid) LOG_EV_##id,
	LOG_EVENTS(X)
#undef X
		LOG_EV_N
};

/* What an event is about, as journal fields; NULL or -1: not that. */
struct log_where {
	const char *peer; /* PEER= */
	const char *rule; /* RULE= */
	long lgr;	  /* LGR= */
	long link;	  /* LINK= */
};

#define LOG_NOWHERE (&(const struct log_where){NULL, NULL, -1, -1})
#define LOG_EVENT_FIELDS_MAX 5 /* MESSAGE_ID and the four of log_where */
#define LOG_EVENT_FIELDS_LEN (48 + 2 * (CONF_NAME_MAX + 8) + 2 * 32)
int log_event_fields(enum log_event ev, const struct log_where *w, char *buf,
		     size_t size, const char **fields);
void log_event(enum log_event ev, enum log_level level,
	       const struct log_where *w, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void log_event_rl(const char *kind, const char *source, enum log_event ev,
		  const struct log_where *w, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void fatal(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

/* buf.c: registered send rings and RMB elements, per worker; MRs per PD */
#define BUF_SIZE_MIN 16384u	  /* SMC-R's smallest buffer */
#define BUF_SIZE_MAX (512u << 20) /* and its largest (compressed 15) */

struct buf_pool;

enum buf_kind { BUF_SNDBUF, BUF_RMB };

#define BUF_MRS_MAX 4 /* PDs an element is registered in at once */

struct buf {
	TAILQ_ENTRY(buf) entry; /* on a free list or the cooling list */
	struct buf_pool *pool;
	void *addr;
	/* what a peer is told: an RMB element is registered at a random
	 * IOVA, so no peer learns where our heap is; else addr */
	uint64_t iova;
	size_t size;
	enum buf_kind kind;
	bool registered;	       /* counted in the pool's bytes */
	char owner[CONF_NAME_MAX + 1]; /* the peer it last served, or "" */
	size_t dirty;	/* bytes from the start its user may have written */
	uint64_t since; /* pool clock when it was handed out */
	uint64_t cool_until; /* on the cooling list until (now_ms) */
	/* mr[i] (lkey; rkey of an RMB element) is in PD reg[i].pd, or unused */
	struct dev_mr mr[BUF_MRS_MAX];
	struct {
		const struct dev_ops *ops;
		struct dev *pd; /* a device handle: the PD of a link group */
		uint64_t used;	/* pool clock at its last buf_mr() */
	} reg[BUF_MRS_MAX];
};

struct buf_stats {
	uint64_t alloc_cnt;  /* elements allocated and registered */
	uint64_t reuse_cnt;  /* handed out again from a free list */
	uint64_t nobufs_cnt; /* refused: the byte limit was reached */
	uint64_t evicted;    /* idle elements released to make room */
	uint64_t reg_errors;
	uint64_t regs;	 /* MRs registered (buf_mr) */
	uint64_t deregs; /* MRs deregistered (RMB elements: at each put) */
	uint64_t bytes;	 /* gauge: registered, in use or idle */
	uint64_t bytes_used[2]; /* gauge per kind: handed out now */
	uint64_t bytes_rings;	/* gauge: links' rings reserved (in bytes) */
};

bool buf_size_ok(size_t size);
struct buf_pool *buf_pool_new(const struct dev_ops *ops, struct dev *pd,
			      size_t limit);
void buf_pool_free(struct buf_pool *p);
void buf_pool_set_stats(struct buf_pool *p, struct stats *st);
const struct buf_stats *buf_pool_stats(const struct buf_pool *p);
int buf_pool_reserve(struct buf_pool *p, size_t bytes);
void buf_pool_unreserve(struct buf_pool *p, size_t bytes);
const struct dev_mr *buf_mr(struct buf *b, const struct dev_ops *ops,
			    struct dev *pd);
void buf_mr_drop(struct buf *b);
int buf_get(struct buf_pool *p, enum buf_kind kind, size_t size,
	    struct buf **out);
int buf_get_for(struct buf_pool *p, enum buf_kind kind, size_t size,
		const char *owner, struct buf **out);
void buf_put_cooled(struct buf *b, uint64_t until_ms);
/* how long an RMB element the peer may still write stays registered */
#define RMB_COOL_MS 5000
void buf_put(struct buf *b);
void buf_written(struct buf *b, size_t n);

/* busypoll.c */
/* rdma.busy_poll (struct conf_rdma), as busy_poll_init takes it */
enum conf_busy_poll {
	CONF_BUSY_POLL_OFF,
	CONF_BUSY_POLL_ADAPTIVE,
	CONF_BUSY_POLL_ALWAYS
};
enum busy_wait {
	BUSY_WAIT_PEER,	 /* for the peer's answer to bytes sent to it */
	BUSY_WAIT_LOCAL, /* for a local program's next bytes */
	BUSY_WAIT_N
};
struct busy_poll {
	enum conf_busy_poll mode;
	uint32_t max_us;
	uint32_t budget_us[BUSY_WAIT_N]; /* now; 0: sleep after work */
	uint64_t spins;			 /* non-blocking polls */
	struct stats *st;		 /* NULL: not counted there */
};
void busy_poll_init(struct busy_poll *bp, enum conf_busy_poll mode,
		    uint32_t max_us, int ncpus, struct stats *st);
void busy_poll_work(struct busy_poll *bp, enum busy_wait w, uint64_t gap_us,
		    bool polled);
void busy_poll_miss(struct busy_poll *bp, enum busy_wait w);
void busy_poll_exit(struct event_base *base);
void busy_poll_note(void);
void busy_poll_wait(enum busy_wait w);
void busy_poll_loop(struct event_base *base, struct busy_poll *bp);

/* khost.c: the kernel SMC-R hosts seen, for show peers */
#define KHOST_MAX 256
struct khost_info {
	struct addr host;
	int64_t open;	  /* connections with it open now */
	uint64_t total;	  /* ... since the daemon started */
	uint32_t decline; /* the last DECLINE's code; 0: none */
	bool by_peer;	  /* the host sent it (else we did) */
	time_t decline_at;
};
bool khost_open(const struct addr *host);
void khost_close(const struct addr *host);
void khost_decline(const struct addr *host, uint32_t code, bool by_peer);
int khost_list(struct khost_info *out, int max);

/* tally.c: per rule, export and peer, open now and totals (metrics) */
enum tally_kind { TALLY_RULE, TALLY_EXPORT, TALLY_PEER };
#define TALLY_SETUP_BUCKETS 13
struct tally {
	SLIST_ENTRY(tally) entry;
	enum tally_kind kind;
	char name[CONF_NAME_MAX + 1];
	int64_t open;		      /* connections open now */
	uint64_t conns[2];	      /* ended, by transport: fallback, rdma */
	uint64_t bytes_in, bytes_out; /* from the client or peer, to it */
	uint64_t closes[SESSION_NREASONS];
	/* time from accept (or a peer's open) to relaying, by bucket: the
	 * first TALLY_SETUP_BUCKETS up to tally_setup_le_ms[i], then the
	 * rest; their count, and their sum in ms */
	uint64_t setup[TALLY_SETUP_BUCKETS + 1];
	uint64_t setup_count, setup_sum_ms;
};
extern const unsigned int tally_setup_le_ms[TALLY_SETUP_BUCKETS];
void tally_open(struct session *s);
void tally_setup(const struct session *s, uint64_t ms);
int64_t tally_conns(enum tally_kind kind, const char *name);
void tally_close(const struct session *s, enum session_reason reason);
struct json_t *tally_json(void);
void tally_shutdown(void);

/* auth.c */
struct auth_limit;
#define AUTH_NONCE_LEN 32
#define AUTH_MAC_LEN 32
int auth_key_load(const char *path, unsigned char *key, size_t *len, char *err,
		  size_t errlen);
void auth_nonce(unsigned char nonce[AUTH_NONCE_LEN]);
void auth_mac(const unsigned char *key, size_t keylen, const char *label,
	      const void *a, size_t alen, const void *b, size_t blen,
	      unsigned char mac[AUTH_MAC_LEN]);
bool auth_mac_equal(const unsigned char *a, const unsigned char *b);
void auth_limit_init(struct auth_limit *al);
void auth_limit_destroy(struct auth_limit *al);
bool auth_rate_limited(struct auth_limit *al, const struct addr *src,
		       uint64_t now_ms);
void auth_failed(struct auth_limit *al, const struct addr *src,
		 uint64_t now_ms);

/* auth.c: the daemon's table of sources that failed to authenticate */
#define AUTH_LIMIT_SLOTS 256
struct auth_limit {
	pthread_mutex_t lock; /* any worker's thread */
	struct {
		struct addr src;
		double tokens;
		uint64_t last_ms;
	} slot[AUTH_LIMIT_SLOTS];
	int nslots;
};

/* fdstore.c */
#define FDSTORE_NAME_MAX 96 /* "rule-WORKER-[IPV6]_PORT"; systemd's: 255 */
void fdstore_name(char *buf, size_t len, const char *kind, int worker,
		  const struct addr *a);
void fdstore_init(void);
int fdstore_take(const char *name, const struct addr *a);
bool fdstore_holds(const struct addr *a);
void fdstore_close_unused(void);
void fdstore_keep(const char *name, int fd);
void fdstore_forget(const char *name);

/* ib.c */
enum ib_gid_type { IB_GID_TYPE_IB, IB_GID_TYPE_ROCE_V1, IB_GID_TYPE_ROCE_V2 };
struct ib_gid {
	uint32_t index; /* in the port's GID table */
	uint8_t raw[16];
	enum ib_gid_type type;
	unsigned int ifindex; /* its netdev, 0 if none */
};
int ib_list_devices(FILE *out, const char *local_ip);
int ib_device_count(void);
void ib_check_host(const struct conf *conf);
int ib_gid_pick(const struct ib_gid *gids, size_t ngids,
		const struct addr *local);
struct ibv_qp_attr;
int ib_qp_attrs(uint8_t port, int gid_index, int mtu, uint32_t psn,
		const struct dev_qp_addr *peer, const struct dev_path *path,
		struct ibv_qp_attr *rtr, struct ibv_qp_attr *rts);

/* wr.c: work requests of one link (TX slots, RX buffers, completions) */
struct wr_link;
struct wr_tx_slot;

enum wr_slot_wait { WR_WAIT_EXCLUSIVE, WR_WAIT_ALL };

struct wr_params {
	char name[32];	      /* for logs: "lgr 3 link 1" */
	uint32_t max_send_wr; /* TX slots */
	uint32_t max_recv_wr;
	bool inline_enabled;
	uint32_t inline_size; /* asked for; the device says what it gives */
	enum wr_slot_wait slot_wait;
	uint32_t slot_wait_max_ms; /* a longer wait is a link fault; 0: 10 s */
	bool reap_lazily;	   /* wr_tx_lazy SENDs do not arm the send CQ */
	bool cdc_data; /* receives take a CDC with CDC_DATA_MAX bytes */
	/* 0, or the longest message receives must take (a kernel peer's
	 * LLC v2 ADD_LINK carries up to 255 rkeys behind its 44 bytes) */
	uint32_t rx_msg_max;
};

struct wr_link_cb {
	void (*down)(struct wr_link *l, void *arg);
	void *arg;
};

/* A sender parked for a TX slot; wake(w, 0 or -ENOLINK) when one frees. */
struct wr_waiter {
	TAILQ_ENTRY(wr_waiter) entry; /* on its link's FIFO while queued */
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
	uint64_t posted; /* WRs posted (WRITEs and SENDs) */
	uint64_t writes; /* ... of which RDMA WRITEs */
	uint64_t inline_wrs;
	uint64_t completions;
	uint64_t errors;
	uint64_t rx_unknown;	/* received messages of no known type */
	uint64_t rx_bad_opcode; /* receives completed by no SEND */
	uint64_t drained; /* SENDs completed by wr_link_free, not the device */
	uint64_t slot_waits; /* senders that had to park */
	uint64_t wakeups;
	uint64_t contended_frees; /* slots freed while someone waited */
	uint64_t longest_wait_ms;
	uint64_t slot_wait_timeouts;
	uint64_t cq_events;   /* completion notifications handled */
	uint64_t lazy_posts;  /* SENDs posted without arming the send CQ */
	uint64_t lazy_wanted; /* ... of which a sender came to wait for */
	uint64_t data_sends;  /* CDCs that carried their bytes */
};

typedef void (*wr_tx_done_fn)(struct wr_link *l, struct wr_tx_slot *slot,
			      int status, void *arg);
typedef void (*wr_rx_fn)(struct wr_link *l, const void *msg, size_t len,
			 void *arg);

struct wr_link *wr_link_new(const struct dev_ops *ops, struct dev *dev,
			    struct event_base *base,
			    const struct wr_params *params,
			    const struct wr_link_cb *cb);
int wr_link_connect(struct wr_link *l, const struct dev_qp_addr *peer,
		    const struct dev_path *path);
void wr_link_down(struct wr_link *l, const char *why);
void wr_link_free(struct wr_link *l);
void wr_link_poll(struct wr_link *l);
bool wr_link_is_down(const struct wr_link *l);
const struct wr_stats *wr_link_stats(const struct wr_link *l);
size_t wr_link_mem(const struct wr_link *l);
const struct dev_qp_caps *wr_link_caps(const struct wr_link *l);
struct dev_qp *wr_link_qp(const struct wr_link *l);
void wr_rx_register(struct wr_link *l, uint8_t type, wr_rx_fn fn);
int wr_tx_get(struct wr_link *l, struct wr_tx_slot **out, struct wr_waiter *w);
void wr_tx_wait_cancel(struct wr_link *l, struct wr_waiter *w);
void wr_tx_put(struct wr_link *l, struct wr_tx_slot *slot);
void wr_tx_lazy(struct wr_tx_slot *slot);
void wr_tx_want_done(struct wr_link *l);
void *wr_tx_buf(struct wr_tx_slot *slot);
void wr_tx_len(struct wr_link *l, struct wr_tx_slot *slot, uint32_t len);
void wr_link_cdc_data(struct wr_link *l, bool on);
size_t wr_link_data_max(const struct wr_link *l);
int wr_tx_post(struct wr_link *l, struct wr_tx_slot *slot,
	       const struct wr_write *w, int nwrites, wr_tx_done_fn done,
	       void *arg);

/* stats.c */
const char *stats_name(enum stats_id id);
struct stats *stats_main(void);
void stats_sum(struct stats *out);
void stats_reset(void);
void stats_snapshot(struct stats *out);
enum stats_kind stats_kind(enum stats_id id);
int64_t stats_since_reset(void);
struct json_t *stats_json(const struct stats *st);
struct json_t *stats_schema_json(void);

/* smc_opt.c */
int smc_opt_load(const struct conf_smcr *k);
int smc_opt_pin(const char *path, const char *dir);
const char *smc_opt_default_object(void);
void smc_opt_libbpf_quiet(void);
int smc_opt_check(const struct conf_smcr *k, char *why, size_t len);
const char *smc_opt_state(void);
bool smc_opt_attached(void);
/* why kernel SMC-R peers of an smc_listen or target_smc would get TCP */
enum smc_opt_why {
	SMC_OPT_READY,
	SMC_OPT_OFF,
	SMC_OPT_DETACHED,
	SMC_OPT_NO_ALLOW,
	SMC_OPT_NO_UEID,
	SMC_OPT_IPV6,
	SMC_OPT_LOOPBACK,
	SMC_OPT_NO_DEVICE,
	SMC_OPT_NWHY
};
enum smc_opt_why smc_opt_ready(const struct conf_smcr *k, const struct addr *a,
			       bool listen);
const char *smc_opt_why_text(enum smc_opt_why why);
const char *smc_opt_why_fix(enum smc_opt_why why);
void smc_opt_report(const struct conf *conf);
int smc_opt_mark(int fd, unsigned int mark);
int smc_opt_echoed(int fd);
int smc_opt_listening(int fd);
int smc_opt_connected(int fd);
int smc_opt_map_mark(int map_fd, int fd, unsigned int mark);
int smc_opt_map_echoed(int map_fd, int fd, bool forget);

/*
 * tx.c / rx.c: one TCP connection carried over RDMA (DESIGN §2, smc-r.md
 * §2).  The owner (the session) reads its TCP socket straight into the
 * send ring (tx_space, tx_produced, tx_push) and writes the peer's bytes
 * straight from the RMB element (rx_data, rx_consumed).  Cursor names
 * follow net/smc.  Callbacks run from the link's completions, from
 * rx_cdc_recv() and from rx_consumed(); the owner may call any rconn
 * function from them, tx_conn_free() included.
 */

struct rconn;

enum tx_close_how {
	TX_CLOSE_DONE_WRITING, /* FIN: after every byte produced */
	TX_CLOSE_CLOSED,       /* done both ways: the peer may let go */
	TX_CLOSE_ABORT,	       /* RST: unsent bytes are dropped */
};

struct tx_params {
	bool autocork;		/* DESIGN §4 autocorking */
	uint32_t autocork_size; /* most bytes held back; 0: no corking */
};

struct rconn_ops {
	void (*data_ready)(struct rconn *rc, void *arg);     /* rx_data */
	void (*tx_space_ready)(struct rconn *rc, void *arg); /* tx_space */
	/* after every earlier byte has been consumed: */
	void (*peer_done_writing)(struct rconn *rc, void *arg);
	void (*peer_closed)(struct rconn *rc, void *arg);
	void (*peer_abort)(struct rconn *rc, void *arg); /* at once */
	/* the link failed under it: tx_failover() or tx_conn_free() */
	void (*link_failed)(struct rconn *rc, void *arg);
};

struct rconn_stats {
	uint64_t tx_bytes;     /* RDMA-written, re-sends not counted */
	uint64_t rx_bytes;     /* consumed from the RMB */
	uint64_t tx_cdcs;      /* CDC messages posted */
	uint64_t data_cdcs;    /* ... that carried their bytes, no WRITE */
	uint64_t rx_cdcs;      /* accepted */
	uint64_t rx_data_cdcs; /* ... whose bytes came inside them */
	uint64_t corked;       /* pushes held back by autocork */
	uint64_t door_corks;   /* reads left to the socket (tx_cork_door) */
	uint64_t completion_pushes; /* data pushed by a last completion */
	uint64_t cons_updates;	    /* CDCs posted for the window-update rule */
	uint64_t peer_window_full;  /* data waiting for the peer's window */
	uint64_t ring_full;	    /* tx_space found the send ring full */
	uint64_t slot_waits;	    /* parked for a TX slot */
	uint64_t rx_stale;	    /* CDCs dropped for a stale seqno */
	uint64_t proto_errors;	    /* CDCs refused as protocol violations */
	uint64_t out_of_sync;	    /* aborted by a failover validation */
	uint64_t failovers;
	uint64_t resumes;      /* moved to a new link group (tx_resume) */
	uint64_t resent_bytes; /* re-written after a failover or resume */
};

struct rconn_peer_rmb {
	uint64_t vaddr; /* of the peer's RMB element */
	uint32_t rkey;	/* valid on the link in use */
	uint32_t size;
};

struct rconn_init {
	uint64_t id; /* for logs */
	struct wr_link *link;
	uint32_t token; /* ours: the peer's CDCs carry it */
	uint32_t peer_token;
	struct buf *sndbuf; /* send ring: owned by the rconn from now */
	uint32_t lkey;	    /* the ring's on link's device */
	struct buf *rmb;    /* RMB element: owned too */
	struct rconn_peer_rmb peer_rmb;
	struct tx_params params;
	const struct rconn_ops *ops;
	void *arg;
	struct rconn_stats *sum; /* the owner's totals, or NULL */
};

struct rconn *tx_conn_new(const struct rconn_init *init);
void tx_conn_free(struct rconn *rc);
void tx_conn_hold(struct rconn *rc);
void tx_conn_put(struct rconn *rc);
int tx_space(struct rconn *rc, struct iovec iov[2]);
void tx_produced(struct rconn *rc, size_t n);
int tx_push(struct rconn *rc);
bool tx_cork_door(struct rconn *rc, size_t queued);
bool tx_door_closed(const struct rconn *rc);
int tx_close(struct rconn *rc, enum tx_close_how how);
int tx_failover(struct rconn *rc, struct wr_link *newlink, uint32_t lkey,
		uint32_t peer_rkey);
void tx_detach(struct rconn *rc);
uint64_t tx_fin_off(const struct rconn *rc);
int tx_resume_check(const struct rconn *rc, uint64_t peer_rx, uint64_t peer_fin,
		    uint64_t *rx, uint64_t *fin, const char **why);
int tx_resume(struct rconn *rc, struct wr_link *newlink, uint32_t lkey,
	      uint32_t peer_rkey, uint64_t peer_rx, uint64_t peer_fin,
	      const char **why);
int tx_resume_tcp(struct rconn *rc, uint64_t peer_rx, uint64_t peer_fin,
		  const char **why);
int tx_tcp_spans(const struct rconn *rc, struct iovec iov[2]);
void tx_tcp_sent(struct rconn *rc, size_t n);
int rx_tcp_space(const struct rconn *rc, struct iovec iov[2]);
void rx_tcp_received(struct rconn *rc, size_t n);
size_t tx_unsent(const struct rconn *rc);
bool tx_fin_confirmed(struct rconn *rc);
void tx_peer_token_set(struct rconn *rc, uint32_t token);
void tx_json(const struct rconn *rc, void *json_obj);
struct buf *tx_sndbuf(const struct rconn *rc);
struct wr_link *tx_link(const struct rconn *rc);
size_t tx_peer_window(const struct rconn *rc);
uint64_t tx_peer_cons_off(const struct rconn *rc);
uint64_t tx_sent_hi_off(const struct rconn *rc);

int rx_data(struct rconn *rc, struct iovec iov[2]);
void rx_consumed(struct rconn *rc, size_t n);
size_t rx_readable(const struct rconn *rc);
void rx_json(const struct rconn *rc, void *json_obj);
struct buf *rx_rmb(const struct rconn *rc);
uint64_t rx_received_off(const struct rconn *rc);
int rx_cdc_recv(struct rconn *rc, const struct cdc_info *m, const void *data,
		const char **why);

/* sock.c */
void sock_tcp_liveness(int fd, const struct conf *conf);
int sock_connect(const struct addr *to, const struct addr *from,
		 const struct conf *conf, bool smc, int *fd);
void sock_reset(int fd);

/* intercept.c */
struct intercept;
struct intercept_count;
struct intercept *intercept_open(const char *path, const char *cgroup,
				 char *why, size_t len);
void intercept_close(struct intercept *ic);
int intercept_set(struct intercept *ic, bool on, uint16_t port4,
		  uint16_t port6);
int intercept_add(struct intercept *ic, const struct addr_net *net,
		  uint16_t port);
int intercept_original(struct intercept *ic, int fd, struct addr *orig);
int intercept_learn(struct intercept *ic, const struct addr *dst,
		    unsigned int how, int ttl);
int intercept_counts(struct intercept *ic, struct intercept_count *sum);
int intercept_dst_parse(const char *s, struct addr_net *net, uint16_t *port);
int intercept_check(const struct conf *conf, const struct conf_rule *r,
		    char *why, size_t len);
int intercept_apply(const struct conf *conf);
void intercept_shutdown(void);
int intercept_accepted(struct session *s);
void intercept_learned(const struct session *s, bool smc);
struct json_t *intercept_json(const struct conf *conf);

/* listener.c */
struct listener;
struct listener *listener_new(struct worker *w, const struct addr *addr,
			      const char *kind, bool smc,
			      void (*cb)(struct worker *, int, void *),
			      void *arg);
void listener_set_arg(struct listener *l, void *arg);
void listener_set_room(struct listener *l, bool (*room)(struct worker *));
const struct addr *listener_addr(const struct listener *l);
void listener_free(struct listener *l, bool keep_stored);
int listener_probe(const struct addr *addr);

/* conf.c */
enum conf_slot_wait { CONF_SLOT_WAIT_EXCLUSIVE, CONF_SLOT_WAIT_ALL };

/* Routed RoCE v2: the path a link group's QPs take (dev.h dev_path). */
struct conf_route {
	int dscp;
	int priority;
	int qp_timeout;
	int retry_count;
	int rnr_retry;
};

struct conf_peer {
	char name[CONF_NAME_MAX + 1];
	struct addr addr; /* where its peer port is */
	char *key_file;	  /* NULL when insecure */
	unsigned char key[CONF_KEY_MAX];
	size_t key_len; /* 0 when insecure */
	bool insecure;
	bool any_source;  /* accept it from any source address */
	int max_lgrs;	  /* link groups it may set up, all workers */
	int buffer_share; /* percent of max_buffer_memory it may hold */
	int max_conns;	  /* connections it may hold on our exports; 0: any */
	int max_resuming; /* per worker, at once */
	/* how its links travel: rdma's values unless it sets its own */
	struct conf_route route;
	char device[CONF_NAME_MAX + 1]; /* "": rdma.devices */
	struct addr source;		/* len 0: the kernel's choice */
	int line;
};

struct conf_export {
	char name[CONF_NAME_MAX + 1];
	struct addr target;
	char **peers; /* names allowed to use it */
	int npeers;
	int connect_timeout;	/* seconds */
	int idle_timeout;	/* seconds, 0 = never */
	bool log_connections;	/* connlog.c: a line as each one ends */
	struct addr smc_listen; /* kernel SMC-R clients; len 0: none */
	bool proxy_protocol;	/* export.c: a PROXY v2 header to the target */
	int line;
};

struct conf_rule {
	char name[CONF_NAME_MAX + 1];
	struct addr listen;
	const struct conf_peer *peer; /* NULL with target_smc */
	char export[CONF_NAME_MAX + 1];
	struct addr target_smc; /* a kernel SMC-R server; len 0: none;
				   AF_UNSPEC: "original" (conf_rule_original) */
	int idle_timeout;	/* seconds, 0 = never */
	bool log_connections;	/* connlog.c: a line as each one ends */
	bool accept_proxy; /* accept.c: clients begin with a PROXY header */
	char **intercept;  /* "ADDR[/LEN]:PORT" taken from the cgroup */
	int nintercept;
	char *intercept_cgroup; /* whose connects are taken */
	int intercept_ttl;	/* s a destination's SMC-R or TCP is kept */
	int line;
};

struct conf_rdma {
	char **devices;
	int ndevices;
	int gid_index;
	struct conf_route route;
	int max_links;
	int max_conns_per_lgr;
	int max_send_wr;
	int max_recv_wr;
	int sndbuf;
	int rmb;
	int max_buffer_memory; /* MiB, all workers */
	bool autocork;
	int autocork_size;
	bool inline_enabled;
	int inline_size;
	enum conf_slot_wait slot_wait;
	bool lazy_completions;
	bool cdc_data;
	enum conf_busy_poll busy_poll;
	int busy_poll_us; /* always: the budget; adaptive: its cap */
	int lgr_idle_timeout;
	int test_link_time;
};

/* The SMC-R dialect (DESIGN.md §10): kernel SMC-R peers. */
struct conf_smcr {
	bool enabled; /* the kernel_smc group is there */
	char **ueids; /* user EIDs we serve, as the wire writes them */
	int nueids;
	char **allow; /* networks whose clients may use SMC-R, as written */
	int nallow;
	struct addr_net *allow_nets; /* allow, parsed */
	char *bpf_object;	     /* the SMC-R option's BPF program */
	char *bpf_pin;		     /* where smcproxyd-bpf.service pins it */
	bool bpf_root_cgroup;	     /* attach even in the cgroup v2 root */
	/* each host's budget, per worker (lgr_smcr_budget): groups not yet
	 * up (all hosts, one host), groups and connections of one host */
	int max_pending, max_pending_per_host;
	int max_lgrs_per_host, max_conns_per_host;
	/* percent of the worker's part of rdma.max_buffer_memory that one
	 * host's connections and groups may hold (session_rdma_charge) */
	int buffer_share_per_host;
	/* what link groups with kernel peers are held to, as a peer's
	 * keys hold a peer daemon (named "smc-r"; rdma's route) */
	struct conf_peer peer;
};

struct conf {
	char *path;
	char name[CONF_NAME_MAX + 1]; /* this daemon's name at its peers */
	char *control_socket;
	char *state_file; /* NULL: state.json beside control_socket */
	int control_mode;
	int control_uid; /* -1: only root and our own uid */
	int control_gid;
	int workers; /* resolved: never 0 */
	enum log_level log_level;
	int shutdown_timeout;	    /* seconds given to open connections */
	int max_conns;		    /* per worker, 0 = unlimited */
	int tcp_keepalive;	    /* s idle before probes, 0: off */
	int tcp_user_timeout;	    /* s unacknowledged, 0: kernel's */
	int resume_timeout;	    /* s to resume after a group ended */
	struct addr metrics_listen; /* Prometheus endpoint; len 0: off */
	bool has_peer_listen;
	struct addr peer_listen;
	int preauth_max;	/* per worker: not yet authenticated */
	int preauth_per_source; /* ... of them from one host */
	int first_byte_timeout; /* s: first header on the peer port */
	int handshake_timeout;	/* s: until authenticated */
	struct conf_peer *peers;
	int npeers;
	struct conf_rule *rules;
	int nrules;
	struct conf_export *exports;
	int nexports;
	struct conf_rdma rdma;
	struct conf_smcr smcr;
	struct conf_src *src; /* conf.h private: where keys were set */
	char *warnings;	      /* "file:line: warning: ..." lines, or "" */
	int refs;	      /* conf_hold/conf_drop; 0 when loaded */
};

bool conf_name_valid_len(const char *s, size_t len);
void conf_free(struct conf *conf);
const struct conf_rule *conf_rule_find(const struct conf *conf,
				       const char *name);
const struct conf_peer *conf_peer_find(const struct conf *conf,
				       const char *name);
bool conf_peer_auth_same(const struct conf_peer *a, const struct conf_peer *b);
const struct conf_export *conf_export_find(const struct conf *conf,
					   const char *name);
bool conf_export_allows(const struct conf_export *exp, const char *peer);
bool conf_rule_original(const struct conf_rule *r);
bool conf_smcr_allows(const struct conf_smcr *k, const struct addr *a);
bool conf_smcr_serves(const struct conf_smcr *k, const uint8_t *eid);

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

/* peer.c: what the process knows about each peer, for every worker */
#define PEER_ERROR_MAX 160
#define PEER_CODE_MAX 24

/*
 * A live check of a peer (`smcproxyctl check PEER`), stepped on a worker
 * by lgr_check_step until it returns true; then the result is in.
 */
struct lgr_check {
	char peer[CONF_NAME_MAX + 1];
	uint64_t started_ms, deadline_ms;
	bool set_up;	   /* a group was set up for the check */
	uint32_t lgr_id;   /* the group the TEST_LINK went on; 0: none yet */
	uint8_t link_id;   /* and its link */
	uint64_t answered; /* that link's TEST_LINK answers before ours */
	/* the result */
	int rc;		  /* 0: the round trip came back; else -errno */
	uint64_t rtt_us;  /* its round trip */
	uint32_t decline; /* the SMC decline that ended the setup; 0: none */
	bool by_peer;	  /* the peer declined (else we did) */
	char error[PEER_ERROR_MAX]; /* why not, for people */
};

bool lgr_has_active(struct lgr_ctx *ctx, const char *peer);
void lgr_check_init(struct lgr_check *c, const char *peer, int timeout_ms);
bool lgr_check_step(struct lgr_ctx *ctx, struct lgr_check *c);

struct peer_info {
	bool rdma;		  /* an active link group reaches it */
	int lgrs;		  /* active link groups, all workers */
	uint32_t reason;	  /* why it last fell back; 0: never */
	bool by_peer;		  /* the peer declined (else we did) */
	uint64_t backoff_left_ms; /* RDMA not tried before then */
	int reachable;		  /* the last try got through: 1, 0; -1 none */
	char error[PEER_ERROR_MAX]; /* the last error; "" none */
	char error_code[PEER_CODE_MAX];
	time_t error_at; /* when (wall clock); 0: none */
	uint64_t error_age_ms;
	uint64_t
		fallback_age_ms; /* since the last fallback; UINT64_MAX: none */
	bool draining;		 /* no new connections to it */
};

void peer_lgr_count(const char *name, int delta, uint64_t first_backoff_ms);
uint64_t peer_fallback(const char *name, uint32_t reason, bool by_peer,
		       uint64_t backoff_ms, uint64_t max_ms);
void peer_reached(const char *name);
void peer_error(const char *name, bool unreachable, const char *code,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));
uint64_t peer_backoff_until(const char *name);
bool peer_server_lgrs(const char *name, int max, int delta);
bool peer_export_conns(const char *name, int max, int delta);
int peer_info(const char *name, struct peer_info *out);
void peer_set_draining(const char *name, bool draining);
bool peer_draining(const char *name);
bool peer_takes_origin(const char *name);
void peer_origin_refused(const char *name);
const char *peer_mode(const char *name, uint32_t *reason);
void peer_shutdown(void);

/* conf_load.c */
struct conf *conf_load(const char *path, FILE *errors);
struct conf *conf_load_string(const char *text, const char *name, FILE *errors);
int conf_reload_check(const struct conf *old, const struct conf *new,
		      FILE *errors);

/* conf_print.c */
void conf_print_schema(FILE *out);
void conf_print_example(FILE *out);

/* notify.c */
#define NOTIFY_STOP_SLACK_S 30 /* after the drain: close the rest, exit */
void notify_send(const char *state);
void notify_stopping(int drain_s);
unsigned long long notify_watchdog_usec(void);
void notify_watchdog(void);
void notify_ready(const struct conf *conf);
void notify_status(const struct conf *conf);
void notify_reloading(void);
void notify_reload_failed(const struct conf *conf, const char *why);

/* connlog.c */
void connlog_close(const struct session *s, enum session_reason reason);

/* clc.c: the link-group handshake on a TCP control connection */
struct clc_conn;
struct clc_accept_info;
struct clc_proposal_info;
struct lgr;
void clc_accept(struct worker *w, int fd, const struct addr *src);
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
/* An LLC message waiting for a TX slot past llc.c's queue (llc_send_wait). */
struct llc_pending {
	struct wr_waiter waiter;
	struct wr_link *wr; /* waits on it; NULL: not waiting */
	uint8_t msg[LLC_MSG_LEN];
	void (*sent)(struct llc_pending *p, int status);
};

int llc_send(struct lgr_link *link, const struct llc_info *m,
	     wr_tx_done_fn done, void *arg);
int llc_send_wait(struct lgr_link *link, const struct llc_info *m,
		  struct llc_pending *p,
		  void (*sent)(struct llc_pending *p, int status));
int llc_send_detached(struct lgr_link *link, const struct llc_info *m);
bool llc_pending_waits(const struct llc_pending *p);
void llc_pending_cancel(struct llc_pending *p);
int llc_confirm_link_send(struct lgr_link *link);
int llc_add_link_send(struct lgr_link *via, struct lgr_link *link);
void llc_add_link_none_send(struct lgr_link *link);
int llc_delete_link_send(struct lgr_link *via, uint8_t link_num,
			 uint32_t reason, bool all, bool orderly,
			 wr_tx_done_fn done, void *arg);
int llc_test_link_send(struct lgr_link *link);
void llc_link_tick(struct lgr_link *link, uint64_t now_ms);

/* lgr.c: link groups, their links, and the peers they reach (DESIGN §3) */
#define LGR_LINKS_MAX 2	 /* active links per group (SMC-R v2.1: 1..2) */
#define LGR_LINK_SLOTS 3 /* one more: a link going while another comes */

enum lgr_role { LGR_ROLE_CLIENT, LGR_ROLE_SERVER };

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
	unsigned int add_link_retry_ms; /* server: next ADD_LINK try: 60000 */
};

/*
 * A connection of the data path on a link group.  link_down(c, to) runs
 * when its link went down: to is the active link it now uses (resend what
 * was not confirmed), or NULL when the group is gone (close it).  The
 * group hands it a token when it joins and, once rc is set, gives the
 * peer's CDCs naming that token to rc (rx_cdc_recv).
 */
struct lgr_conn {
	TAILQ_ENTRY(lgr_conn) entry; /* lgr->conns */
	LIST_ENTRY(lgr_conn) hash;   /* lgr->by_token */
	struct lgr *lgr;
	struct lgr_link *link;
	struct lgr *ended; /* during link_down(c, NULL): the group */
	uint32_t token;	   /* ours, unique in the context; 0: none */
	struct rconn *rc;  /* where its CDCs go; NULL: dropped */
	void (*link_down)(struct lgr_conn *c, struct lgr_link *to);
	void *arg;
	/* the peer's RMB element: rkey at vaddr on the link with id
	 * peer_link, its key in the group's table of rkeys (rtoken.c);
	 * peer_link 0: not told (lgr_conn_peer_rmb) */
	uint8_t peer_link;
	uint32_t peer_rkey;
	uint64_t peer_vaddr;
	/* SMC-R dialect: the newest CDC that came before rc was set (a
	 * kernel client writes once its CONFIRM went, maybe before we read
	 * it); lgr_conn_replay hands it over.  0: none */
	uint8_t early[CDC_MSG_LEN];
	size_t early_len;
};

struct llc_v2_info;

/* What the data path (session_rdma.c) hears of a context's groups. */
struct lgr_data_ops {
	/* the data path's LLC types (CONN_*, rkeys); NULL: refused */
	void (*llc_rx)(struct lgr_link *link, const struct llc_info *m,
		       void *arg);
	/* link became active (announce its rkeys there) */
	void (*link_up)(struct lgr_link *link, void *arg);
	/* the setup of a client group or of a kernel peer's group failed
	 * (the connections waiting for it go on) */
	void (*setup_failed)(struct lgr *lgr, void *arg);
	/* SMC-R dialect: our RMBs' rkeys on via and on added (being
	 * added) into v's rkey triples, at most max, for ADD_LINK */
	void (*rkeys)(struct lgr_link *via, struct lgr_link *added,
		      struct llc_v2_info *v, int max, void *arg);
	/* a link of lgr registered bytes for its rings: 0 when they are
	 * charged to the worker's registered memory (the link goes on), or
	 * -ENOBUFS (counted: the link is refused); with take false, the
	 * link goes and gives back what was charged */
	int (*link_mem)(struct lgr *lgr, size_t bytes, bool take, void *arg);
};

struct lgr_ctx *lgr_ctx_new(struct event_base *base, struct conf *conf,
			    struct stats *st, struct auth_limit *al,
			    const struct lgr_timeouts *t);
int lgr_ctx_add_dev(struct lgr_ctx *ctx, const struct dev_ops *ops,
		    struct dev *dev, const char *name);
void lgr_ctx_free(struct lgr_ctx *ctx);
struct lgr_ctx *lgr_worker_new(struct worker *w);
void lgr_ctx_set_ops(struct lgr_ctx *ctx, const struct lgr_data_ops *ops,
		     void *arg);
struct lgr *lgr_next(struct lgr_ctx *ctx, struct lgr *prev);
uint32_t lgr_id(const struct lgr *lgr);
enum lgr_role lgr_role(const struct lgr *lgr);
bool lgr_is_active(const struct lgr *lgr);
bool lgr_is_ending(const struct lgr *lgr);
const struct conf_peer *lgr_peer(const struct lgr *lgr);
bool lgr_has_feature(const struct lgr *lgr, uint32_t feature);
bool lgr_peer_is(const struct lgr *lgr, const uint8_t sysid[8]);
const uint8_t *lgr_peer_system_id(const struct lgr *lgr);
bool lgr_refused(const struct lgr *lgr);
bool lgr_resumable(const struct lgr *lgr);
uint8_t lgr_peer_worker(const struct lgr *lgr);
bool lgr_tcp_connected(const struct lgr *lgr);
struct lgr *lgr_link_group(const struct lgr_link *link);
uint8_t lgr_link_id(const struct lgr_link *link);
const char *lgr_link_dev_name(const struct lgr_link *link);
bool lgr_link_is_active(const struct lgr_link *link);
struct wr_link *lgr_link_wr(const struct lgr_link *link);
const struct dev_mr *lgr_link_mr(const struct lgr_link *link, struct buf *b);
bool lgr_link_has_pd(const struct lgr_link *link);
struct lgr_link *lgr_link_next_active(struct lgr *lgr,
				      const struct lgr_link *prev);
struct lgr_conn *lgr_conn_next(struct lgr *lgr, const struct lgr_conn *prev);
void lgr_want(struct lgr_ctx *ctx, const struct conf_peer *peer);
struct lgr *lgr_get(struct lgr_ctx *ctx, const struct conf_peer *peer);
struct lgr *lgr_client_on(struct lgr_ctx *ctx, const struct conf_peer *peer,
			  uint8_t worker, bool *coming);
bool lgr_on_its_way(const struct lgr_ctx *ctx, const struct conf_peer *peer);
struct lgr *lgr_client_new(struct lgr_ctx *ctx, const struct conf_peer *peer,
			   int fd);
struct lgr *lgr_client_new_on(struct lgr_ctx *ctx, const struct conf_peer *peer,
			      int fd, uint8_t worker, bool resume);
int lgr_conn_add(struct lgr *lgr, struct lgr_conn *c);
int lgr_conn_add_on(struct lgr *lgr, struct lgr_conn *c, struct lgr_link *link);
int lgr_conn_add_first(struct lgr *lgr, struct lgr_conn *c);
struct lgr *lgr_smcr_new(struct lgr_ctx *ctx, enum lgr_role role,
			 const uint8_t sysid[8], const uint8_t gid[16],
			 uint8_t max_conns, uint8_t max_links, uint8_t release,
			 const struct addr *local, const struct addr *host,
			 const uint8_t *eid, uint32_t *decline);
bool lgr_smcr_kept(const struct lgr *lgr, const struct conf_smcr *k);
struct lgr *lgr_smcr_pending(struct lgr_ctx *ctx, enum lgr_role role,
			     const uint8_t sysid[8], const uint8_t gid[16],
			     const struct addr *host);
bool lgr_is_smcr(const struct lgr *lgr);
const struct addr *lgr_smcr_host(const struct lgr *lgr);
int lgr_smcr_budget(struct lgr_ctx *ctx, const struct addr *host, bool group);
typedef void (*lgr_smcr_fn)(const struct addr *host, bool up, int conns,
			    int links, void *arg);
void lgr_smcr_foreach(const struct lgr_ctx *ctx, lgr_smcr_fn fn, void *arg);
uint8_t lgr_max_conns(const struct lgr *lgr);
struct dev_qp_addr;
void lgr_smcr_local(const struct lgr_link *link, struct dev_qp_addr *qp,
		    uint8_t sysid[8]);
uint8_t lgr_max_links(const struct lgr *lgr);
bool lgr_link_peer_is(const struct lgr_link *link, const uint8_t gid[16],
		      uint32_t qpn);
uint32_t lgr_smcr_peer(struct lgr *lgr, const struct dev_qp_addr *peer);
struct lgr *lgr_smcr_find(struct lgr_ctx *ctx, enum lgr_role role,
			  const uint8_t sysid[8], const uint8_t gid[16],
			  uint32_t qpn, const struct addr *host,
			  struct lgr_link **link);
void lgr_smcr_system_id(const struct lgr_ctx *ctx, uint8_t out[8]);
void lgr_conn_del(struct lgr_conn *c);
int lgr_conn_peer_rmb(struct lgr_conn *c, const struct lgr_link *link,
		      uint32_t rkey, uint64_t vaddr);
int lgr_conn_peer_rkey(const struct lgr_conn *c, uint8_t link_id,
		       uint32_t *rkey);
void lgr_conn_replay(struct lgr_conn *c);
struct lgr_conn *lgr_conn_find(const struct lgr *lgr, uint32_t token);
struct lgr_link *lgr_link_by_id(struct lgr *lgr, uint8_t id);
int lgr_links_active(const struct lgr *lgr);
void lgr_json(struct lgr_ctx *ctx, void *lgrs, void *links);
void lgr_worker_json(struct worker *w, void *lgrs, void *links);
void lgr_terminate(struct lgr *lgr, uint32_t reason, bool orderly,
		   bool by_peer);
void lgr_protocol_error(struct lgr *lgr, const char *why);

/* session.c */
#define SESSION_PIPE_SIZE (1024 * 1024)

enum session_role { SESSION_ROLE_RULE, SESSION_ROLE_EXPORT };
/* Whom the downstream end speaks with (DESIGN.md §10). */
enum session_dialect {
	SESSION_DIALECT_NATIVE, /* a peer smcproxyd, or a rule's client */
	SESSION_DIALECT_SMCR,	/* a kernel SMC-R client or server (smcr.c) */
};
enum session_mode { SESSION_MODE_FALLBACK, SESSION_MODE_RDMA };

/*
 * fd[0] faces downstream (the client on the rule side, the peer daemon on
 * the export side), fd[1] upstream (peer daemon, target).  pump[i] moves
 * bytes read from fd[i] to fd[1 - i] through a pipe with splice().
 */
struct session_pump {
	int pipe[2];
	size_t pending; /* bytes in the pipe */
	size_t cap;
	bool eof;     /* fd[i] sent FIN */
	bool done;    /* FIN passed on: shutdown(fd[1 - i], SHUT_WR) */
	bool bulk;    /* a stream: splice, not copy (fb_pump_copy) */
	size_t burst; /* bytes read since fd[i] was last found empty */
};

/*
 * What session.c asks of the transport a session is on: the transport
 * sets it (session_ops_set), so that the session core calls up to none.
 */
struct session_ops {
	void (*io)(struct session *s, int i, short what); /* fd[i] ready */
	void (*timeout)(struct session *s); /* its timer, before the relay */
	void (*close)(struct session *s, enum session_reason reason);
	void (*hs_free)(struct session *s); /* its handshake is over */
	void (*json)(const struct session *s, void *json_obj);
};

struct session {
	LIST_ENTRY(session) entry; /* its worker's sessions, newest first */
	struct worker *w;
	uint64_t id;
	enum session_role role;
	enum session_mode mode;
	enum session_state state;
	const struct session_ops *ops; /* NULL until a transport takes it */
	struct conf *conf;	       /* held */
	const struct conf_rule *rule;  /* rule side */
	const struct conf_peer *peer;
	const struct conf_export *export; /* export side */
	int fd[2];
	struct event *rev[2], *wev[2];
	struct event *timer;
	struct session_pump pump[2];
	uint64_t bytes[2]; /* read from fd[i] and passed on, either transport */
	bool rd_ready[2], wr_ready[2]; /* relay: edge-triggered readiness */
	struct addr addr[2];
	/* export side: the client and the address it connected to on the
	 * rule side, as the peer said (len 0: not said) */
	struct addr origin[2];
	uint64_t started_ms, active_ms;
	enum session_reason fin_reason;
	bool fin_downstream;	/* close fd[0] with a FIN even on abort */
	uint8_t fd_waits;	/* connect retries while out of descriptors */
	struct fallback_hs *hs; /* fallback handshake: until it is done */
	enum session_dialect dialect;
	struct smcr_hs *shs;  /* standard CLC: until it is answered */
	uint32_t smc_decline; /* CLC_DECL_* it went on as TCP with */
	char export_name[CONF_NAME_MAX + 1];
	struct session_rdma *rdma; /* SESSION_MODE_RDMA: session_rdma.c */
	TAILQ_ENTRY(session)
	park; /* waiting for a link group: parked or woken */
	bool parked;
	bool woken; /* off parked, about to go on */
	/* parked: on park_lgr, or on any group to park_peer, on its way,
	 * until wake(s) (session_rdma_wait) */
	const struct conf_peer *park_peer;
	const struct lgr *park_lgr;
	void (*wake)(struct session *s);
	uint8_t rdma_reopens;	 /* CONN_OPENs lost with their group */
	bool rdma_peer_stopping; /* refused: the peer drains; open over TCP */
	bool preauth;		 /* holds a worker_preauth_get of addr[0] */
	bool peer_held;		 /* holds one of its peer's max_conns */
	bool tallied;		 /* counted open by tally_open */
	bool khost;		 /* counted open by khost_open */
};

struct session *session_new(struct worker *w, int fd, enum session_role role);
void session_ops_set(struct session *s, const struct session_ops *ops);
bool session_peer_hold(struct session *s);
void session_preauth_take(struct session *s);
void session_preauth_done(struct session *s);
#define SESSION_RELAY_ROUNDS 16 /* relay rounds before yielding */
int session_relay_begin(struct session *s, int i, enum stats_id stat);
void session_relay_read(struct session *s, int i, bool on);
void session_relay_run(struct session *s, int i, int (*round)(void *),
		       void *arg);
int session_connect(struct session *s, const struct addr *to,
		    const struct addr *from, bool smc);
int session_connect_error(const struct session *s);
enum session_reason session_fin_reason(int i);
enum session_reason session_rst_reason(const struct session *s, int i);
void session_account(struct session *s, int i, size_t n);
int session_detach(struct session *s);
void session_upstream_drop(struct session *s);
void session_want(struct session *s, int i, short what, bool on);
int session_timer(struct session *s, int seconds);
int session_timer_ms(struct session *s, int ms);
void session_close(struct session *s, enum session_reason reason);
void session_close_all(struct worker *w, enum session_reason reason);
int session_idle_timeout(const struct session *s);
struct session *session_next(const struct session *s);
uint64_t session_id(const struct session *s);
void session_json_add(const struct session *s, void *json_array);
int session_kill(struct worker *w, uint64_t id);

/* export.c */
const struct conf_export *export_find(struct worker *w, const struct conf *conf,
				      const char *who, const char *peer,
				      const char *name,
				      enum session_reason *why);
int export_room(struct worker *w, enum session_reason *why);
int export_connect(struct session *s, enum session_reason *why);
int export_connected(struct session *s, enum session_reason *why);
enum session_reason export_timed_out(struct session *s);

/* fallback.c */
struct fallback_hs;
struct fb_hello_info;
struct fb_origin;
int fallback_origin(const struct session *s, struct fb_origin *o);
void fallback_hs_free(struct session *s);
int fallback_msg_read(int fd, unsigned char *buf, size_t *len);
/*
 * A resume over TCP (resume.c), heard back through these: the fallback's
 * one handshake carries it, and stays below the RDMA data path.
 */
struct fallback_resume_ops {
	/* client: the peer accepted our resume HELLO; relay from rx, fin */
	void (*through)(struct session *s, uint64_t rx, uint64_t fin);
	/* client: it failed with r (peer_said: the peer's RESULT says so) */
	void (*failed)(struct session *s, enum session_reason r,
		       bool peer_said);
	/* server: authenticated fs asks with HELLO hi to resume over it;
	 * 0 when taken (fs goes), else -errno with *why */
	int (*take)(struct session *fs, const struct fb_hello_info *hi,
		    enum session_reason *why);
};
void fallback_connect(struct session *s);
void fallback_resume(struct session *s, const struct fb_hello_info *ri,
		     const struct fallback_resume_ops *rops);
void fallback_client_io(struct session *s, short what);
void fallback_accept(struct worker *w, int fd, const struct addr *src,
		     uint64_t since_ms, const struct fallback_resume_ops *rops);
void fallback_relay_start(struct session *s, enum stats_id stat);
struct fb_proof;
int fallback_answer(const struct conf_peer *p, const void *hello,
		    size_t hello_len, const void *msg, size_t len,
		    struct fb_proof *proof, const char **why);

/*
 * A check of the path a peer's fallback connections take (`smcproxyctl
 * check PEER`), stepped by fallback_check_step until it returns true:
 * stage is then the last one reached, rc says how it ended there.
 */
enum fallback_check_stage {
	FALLBACK_CHECK_CONNECT, /* the TCP connect to the peer's port */
	FALLBACK_CHECK_AUTH,	/* the HELLO went: its CHALLENGE or RESULT */
	FALLBACK_CHECK_EXPORT,	/* the peer opens the export's target */
};

#define FALLBACK_CHECK_ERROR_MAX 160

struct fallback_check {
	enum fallback_check_stage stage;
	int rc;		     /* 0: the export was opened; else -errno */
	bool done;	     /* rc is the result */
	bool keyed;	     /* the peer proved our key (else: no key) */
	uint64_t connect_us; /* the TCP connect took */
	uint32_t code;	     /* the peer's RESULT code; 0: none or good */
	char error[FALLBACK_CHECK_ERROR_MAX]; /* why not, for people */
	/* while it runs */
	const struct conf *conf;
	const struct conf_peer *peer;
	char export[CONF_NAME_MAX + 1];
	int fd;
	uint64_t started_us, deadline_ms;
	struct fallback_hs *hs;
};

void fallback_check_init(struct fallback_check *c, const struct conf *conf,
			 const struct conf_peer *peer, const char *export,
			 int timeout_ms);
bool fallback_check_step(struct fallback_check *c);
void fallback_check_end(struct fallback_check *c);

/* resume.c: what the fallback's handshake tells of a resume over TCP */
extern const struct fallback_resume_ops resume_tcp_ops;

/* session_rdma.c: connections carried over a link group (DESIGN §2) */
struct session_rdma;
struct session_rdma_worker *session_rdma_worker_new(struct worker *w,
						    struct lgr_ctx *ctx);
void session_rdma_worker_free(struct session_rdma_worker *srw);
bool session_rdma_connect(struct session *s);
void session_rdma_close(struct session *s, enum session_reason reason);
void session_rdma_json(const struct session *s, void *json_obj);
typedef void (*session_rdma_host_fn)(const struct addr *host, size_t bytes,
				     void *arg);
void session_rdma_host_memory(struct worker *w, session_rdma_host_fn fn,
			      void *arg);
size_t session_rdma_host_limit(const struct conf *conf);

/*
 * Export side of the SMC-R dialect (smcr.c runs the CLC): one end of
 * a connection as its ACCEPT or CONFIRM names it.
 */
struct session_rdma_smcr {
	bool first_contact;    /* a new group; else one the peer has */
	struct dev_qp_addr qp; /* the link's QP */
	uint8_t system_id[8];
	uint32_t token; /* alert token */
	uint32_t rmb_rkey;
	uint64_t rmb_vaddr; /* of the RMB element */
	uint8_t rmbe_size;  /* compressed */
	uint8_t max_conns;  /* ours: the group's, negotiated */
	uint8_t max_links;  /* the group's: 2 with a device for a second */
};
/* Which group a connection with a kernel peer may go on. */
struct session_rdma_smcr_want {
	uint8_t sysid[8];  /* the peer's system id */
	uint8_t gid[16];   /* the peer's RoCE v2 GID */
	uint32_t qpn;	   /* the peer's QP on it (rule side); 0: any */
	struct addr host;  /* the peer's end of the TCP connection: a group
			    * is bound to the host it was made with */
	uint8_t eid[32];   /* the EID the CLC agreed on (SMCR_CLC_EID_LEN) */
	uint8_t max_conns; /* a new group's, as the CLC negotiated */
	uint8_t max_links; /* a new group's at most (release 0: 2) */
	uint8_t release;   /* a new group's SMC-Rv2 release (0 or 1) */
	bool join, create; /* one we have, a new one */
};
uint32_t session_rdma_smcr_open(struct session *s, const struct addr *local,
				const struct session_rdma_smcr_want *want,
				struct session_rdma_smcr *out);
void session_rdma_smcr_system_id(struct session *s, uint8_t out[8]);
bool session_rdma_smcr_wait(struct session *s,
			    const struct session_rdma_smcr_want *want,
			    void (*wake)(struct session *s));
void session_rdma_smcr_unwait(struct session *s);
uint32_t session_rdma_smcr_confirm(struct session *s,
				   const struct session_rdma_smcr *peer);
void session_rdma_smcr_drop(struct session *s);
void session_rdma_smcr_start(struct session *s);

/* smcr.c */
struct smcr_hs;
void smcr_accept(struct worker *w, int fd, void *export);
void smcr_connect(struct session *s);
int smcr_proposal_build(const struct conf *conf, int fd, const uint8_t sysid[8],
			uint8_t *buf, uint32_t *decline);

/* accept.c: what an accepted socket becomes */
void accept_rule(struct worker *w, int fd, void *rule);
void accept_peer(struct worker *w, int fd, void *unused);
void accept_close_all(struct worker *w, enum session_reason reason);

/* smcr_check.c: `smcproxyctl check smc HOST:PORT`, as smc_chk -C */
enum smcr_check_result {
	SMCR_CHECK_UNREACHABLE,	 /* the TCP connect failed */
	SMCR_CHECK_NO_OPTION,	 /* no SMC-R option on our SYN: untested */
	SMCR_CHECK_PLAIN,	 /* its SYN-ACK did not echo: not SMC-R */
	SMCR_CHECK_NOT_PROPOSED, /* we DECLINEd at once (no EID, IPv6) */
	SMCR_CHECK_DECLINED,	 /* it DECLINEd our PROPOSAL */
	SMCR_CHECK_ACCEPTED,	 /* it ACCEPTed it; our DECLINE ended it */
	SMCR_CHECK_BROKEN,	 /* no CLC answer, or none in time */
};

struct smcr_check {
	struct addr to;
	bool done;
	enum smcr_check_result result;
	uint32_t decline;    /* its DECLINE's code, or ours */
	bool first_contact;  /* its ACCEPT's */
	uint8_t release;     /* its ACCEPT's SMC-Rv2 release (first contact) */
	uint64_t connect_us; /* the TCP connect took */
	char error[160];     /* why not, for people */
	/* while it runs */
	const struct conf *conf;
	int fd;
	bool connected;
	uint8_t sysid[8];
	uint8_t *buf; /* the answer, SMCR_CLC_MSG_MAX bytes */
	size_t len, want;
	uint8_t type;
	uint64_t started_us, deadline_ms;
};

void smcr_check_init(struct smcr_check *c, const struct conf *conf,
		     const struct addr *to);
bool smcr_check_step(struct smcr_check *c);
void smcr_check_free(struct smcr_check *c);

/* worker.c */
typedef void (*worker_fn)(struct worker *, void *);
int worker_start_all(struct conf *conf);
struct event;
void worker_stop_all(int timeout, struct event *done);
void worker_stop_now_all(void);
bool worker_all_drained(void);
void worker_ping_all(void);
int worker_unanswered(void);
void worker_exit_all(void);
void worker_join_all(void);
int worker_count(void);
struct worker *worker_get(int i);
int worker_id(const struct worker *w);
struct event_base *worker_base(const struct worker *w);
struct stats *worker_stats(struct worker *w);
struct conf *worker_conf(const struct worker *w);
struct auth_limit *worker_auth(struct worker *w);
struct session_rdma_worker;
struct lgr_ctx *worker_lgr(struct worker *w);
struct session_rdma_worker *worker_rdma(struct worker *w);
bool worker_has_room(const struct worker *w);
int worker_preauth_get(struct worker *w, const struct addr *src);
void worker_preauth_put(struct worker *w, const struct addr *src);
void worker_fd_exhausted(struct worker *w);
bool worker_fd_exhausted_take(struct worker *w);
void worker_call(struct worker *w, worker_fn fn, void *arg);
void worker_post(struct worker *w, worker_fn fn, void *arg);
int worker_pass(struct worker *from, struct worker *to, worker_fn fn,
		void *arg);
int worker_reconfigure_all(struct conf *conf);
bool worker_rule_enabled(const char *name);
bool worker_rule_accepting(const struct conf_rule *r);
int worker_rule_enable(const char *name, bool enable);
int worker_relisten_all(void);
bool worker_draining(const struct worker *w);
void worker_session_add(struct worker *w, struct session *s);
void worker_session_del(struct worker *w, struct session *s);
struct session *worker_sessions(struct worker *w);
void worker_preauth_session(struct worker *w, int delta);
struct accept_stranger;
LIST_HEAD(accept_strangers, accept_stranger);
struct accept_strangers *worker_strangers(struct worker *w);
int worker_pipe_get(struct worker *w, int fds[2]);
void worker_pipe_put(struct worker *w, int fds[2], size_t cap, bool empty);

/* state.c */
int state_save(const struct conf *conf);
int state_load(const struct conf *conf);

/* control.c */
#define CONTROL_VERSION 1 /* the "v" of every request and reply */
#define CONTROL_SOCKET_DEFAULT "/run/smcproxyd/control.sock"
#define CONTROL_LINE_MAX (64 * 1024) /* longest request line */
int control_init(const struct conf *conf, struct event_base *base);
void control_conf_update(const struct conf *conf);
void control_shutdown(void);
void control_stopping(void);
int control_request(const char *line, size_t len, char **reply);

/* smcproxyd.c */
int smcproxyd_reload(FILE *errors);
void smcproxyd_shutdown(bool now);

#endif /* SMCPROXYD_H */
