/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The device ops table: everything the RDMA engine (wr.c, lgr.c, ...)
 * needs from an RDMA device, and nothing more.  ib.c implements it on
 * libibverbs; loopdev.c implements it in-process as a model of
 * RC semantics (asynchronous completions, ordering, send-queue depth,
 * inline copied at post time, rkey/bounds/permission checks, receiver not
 * ready, error state flushing, fault injection), so engine tests run in
 * milliseconds without hardware.
 *
 * Conventions: 0 or a negative errno everywhere; constructors return NULL
 * with errno set.  Completions are announced by calling the QP's notify
 * callback on the owner's event_base; the engine then polls, re-arms and
 * polls again (so none is missed).
 */
#ifndef SMCPROXYD_DEV_H
#define SMCPROXYD_DEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct dev;
struct dev_qp;

/* Memory registration; access is a mask of DEV_ACCESS_*. */
#define DEV_ACCESS_LOCAL_WRITE 0x1
#define DEV_ACCESS_REMOTE_WRITE 0x2

struct dev_mr {
	void *addr;
	/* where the MR is in its keys' address space: what a peer writes
	 * to and a local SGE names (addr unless registered at an IOVA) */
	uint64_t iova;
	size_t len;
	uint32_t lkey;
	uint32_t rkey;
	void *priv;
};

/* What a peer needs to connect its QP to ours (carried in CLC). */
struct dev_qp_addr {
	uint8_t gid[16];
	uint8_t mac[6];
	uint32_t qpn; /* 24 bits */
	uint32_t psn; /* 24 bits, random */
	int mtu;      /* IB MTU enum: 1 = 256 ... 5 = 4096 */
};

/*
 * How a QP's packets travel to its peer: the traffic class (DSCP << 2)
 * and service level (the priority, where the device maps one) put them in
 * the fabric's lossless class; timeout, retry_cnt and rnr_retry are the
 * RC transport's, as ibv_modify_qp takes them.  The hop limit is not
 * ours to choose: the kernel takes the route's (ib.c).
 */
struct dev_path {
	uint8_t traffic_class; /* DSCP << 2 | ECN (0) */
	uint8_t sl;	       /* 0..7 */
	uint8_t timeout;       /* 4.096 us * 2^timeout; 0: infinite */
	uint8_t retry_cnt;     /* 0..7 */
	uint8_t rnr_retry;     /* 0..7, 7: infinite */
};

/* SMC's own: DSCP 0, timeout 15 (134 ms), retry and RNR retry 7. */
#define DEV_PATH_SMC                                          \
	{                                                     \
		.timeout = 15, .retry_cnt = 7, .rnr_retry = 7 \
	}

/* What verbs can carry: the field widths of ibv_qp_attr's. */
static inline bool
dev_path_valid(const struct dev_path *p)
{
	return p->sl <= 7 && p->timeout <= 31 && p->retry_cnt <= 7 &&
	       p->rnr_retry <= 7;
}

struct dev_qp_caps {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
};

struct dev_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

/* The engine posts SENDs and WRITEs only; WRITE_IMM is there so that the
 * loopdev model can play a peer that sends one (it consumes a receive). */
enum dev_wr_opcode { DEV_WR_SEND, DEV_WR_WRITE, DEV_WR_WRITE_IMM };

#define DEV_SEND_SIGNALED 0x1
#define DEV_SEND_SOLICITED 0x2
#define DEV_SEND_INLINE 0x4

struct dev_send_wr {
	struct dev_send_wr *next;
	uint64_t wr_id;
	enum dev_wr_opcode opcode;
	int flags;
	struct dev_sge *sg_list;
	int num_sge;
	uint64_t remote_addr; /* DEV_WR_WRITE, DEV_WR_WRITE_IMM */
	uint32_t rkey;
};

struct dev_recv_wr {
	struct dev_recv_wr *next;
	uint64_t wr_id;
	struct dev_sge *sg_list;
	int num_sge;
};

enum dev_wc_status {
	DEV_WC_SUCCESS,
	DEV_WC_FLUSH_ERR,	  /* QP in error: outstanding WRs flushed */
	DEV_WC_REM_ACCESS_ERR,	  /* bad rkey, bounds or permission */
	DEV_WC_RETRY_EXC_ERR,	  /* peer unreachable */
	DEV_WC_RNR_RETRY_EXC_ERR, /* peer had no receive posted */
	DEV_WC_LOC_ERR,		  /* local protection/length error */
	DEV_WC_GENERAL_ERR,
};

/*
 * A receive completion is DEV_WC_RECV for a SEND; a peer's WRITE with
 * immediate consumes a receive too (DEV_WC_RECV_RDMA_WITH_IMM) without
 * writing into its buffer, and anything else on the receive queue is
 * reported as DEV_WC_RECV_OTHER.
 */
enum dev_wc_opcode {
	DEV_WC_SEND,
	DEV_WC_RDMA_WRITE,
	DEV_WC_RECV,
	DEV_WC_RECV_RDMA_WITH_IMM,
	DEV_WC_RECV_OTHER,
};

/* A failed completion's opcode is a guess (verbs leaves it undefined):
 * tell WRs apart by wr_id; a failed receive says DEV_WC_RECV. */
struct dev_wc {
	uint64_t wr_id;
	enum dev_wc_status status;
	enum dev_wc_opcode opcode;
	uint32_t byte_len;
};

/* Asynchronous events that take a link down. */
enum dev_event { DEV_EV_PORT_DOWN, DEV_EV_QP_FATAL, DEV_EV_DEVICE_REMOVED };

struct dev_qp_cb {
	void (*completion)(struct dev_qp *qp, void *arg);
	void (*event)(struct dev_qp *qp, enum dev_event ev, void *arg);
	void *arg;
};

/*
 * Protection domains: a device handle is one PD, and pd_open() gives a
 * handle on the same device with a PD of its own.  Every op takes either
 * kind; a QP created and an MR registered through a handle belong to its
 * PD, and a QP reaches only the MRs of its own PD, by lkey or, for the
 * peer's WRITE, by rkey: an rkey registered in another PD gets the
 * writer IBV_WC_REM_ACCESS_ERR (DEV_WC_REM_ACCESS_ERR) and both QPs go
 * to error.  Link groups keep one PD each (net/smc: one per link), so a
 * peer's rkeys are worthless on any other peer's QPs.
 */
struct dev_ops {
	const char *name;
	/* a new PD on d's device: NULL with errno set */
	struct dev *(*pd_open)(struct dev *d);
	/* the handle goes; its PD once its last QP and MR are gone too */
	void (*pd_close)(struct dev *pd);
	/* pd_close ran on pd (never on a device's own handle).  Its user
	 * closes a PD only after destroying, or failing, every QP of it:
	 * then no peer's WRITE reaches its MRs any more */
	bool (*pd_closed)(struct dev *pd);
	/* register len bytes at addr; iova 0: at addr itself, else at
	 * that IOVA (ibv_reg_mr_iova), the page offset of addr kept */
	int (*mr_reg)(struct dev *d, void *addr, size_t len, uint64_t iova,
		      int access, struct dev_mr *out);
	/* d: the handle mr was registered through */
	void (*mr_dereg)(struct dev *d, struct dev_mr *mr);
	/* create an RC QP with its CQs on base; *got holds the real caps
	 * (max_inline_data read back from the device).  The QP is ready
	 * for post_recv and both CQs are armed. */
	struct dev_qp *(*qp_create)(struct dev *d, struct event_base *base,
				    const struct dev_qp_caps *want,
				    struct dev_qp_caps *got,
				    const struct dev_qp_cb *cb);
	int (*qp_addr)(struct dev_qp *qp, struct dev_qp_addr *out);
	/* RESET -> INIT -> RTR -> RTS towards peer, along path */
	int (*qp_connect)(struct dev_qp *qp, const struct dev_qp_addr *peer,
			  const struct dev_path *path);
	/* move to ERROR: outstanding WRs complete with DEV_WC_FLUSH_ERR */
	int (*qp_error)(struct dev_qp *qp);
	void (*qp_destroy)(struct dev_qp *qp);
	int (*post_send)(struct dev_qp *qp, struct dev_send_wr *wr);
	int (*post_recv)(struct dev_qp *qp, struct dev_recv_wr *wr);
	/* up to n completions of both CQs; count or -errno */
	int (*poll)(struct dev_qp *qp, struct dev_wc *wc, int n);
	/* request the next completion notification of the receive CQ if it
	 * notified since the last call (one still armed needs none), and of
	 * the send CQ too if send and it is not armed: 1 if a CQ was armed
	 * now (poll again: a completion already queued does not notify), 0
	 * if none needed it, or -errno */
	int (*arm)(struct dev_qp *qp, bool send);
	/* optional: cb(d, arg) each time d's port becomes active again
	 * (after a port error; the GID is looked up anew for the next QP).
	 * cb NULL: no more calls.  Only while d has an event base. */
	void (*port_watch)(struct dev *d, void (*cb)(struct dev *d, void *arg),
			   void *arg);
};

/* ib.c: one device port; its QPs and async events live on one base */
extern const struct dev_ops ib_dev_ops;
struct dev *ib_dev_open(const char *name, int port, const char *local_ip,
			int gid_index);
void ib_dev_close(struct dev *d);
const char *ib_dev_name(const struct dev *d);

/* loopdev.c: the in-process model of RC semantics (tests, fuzz, bench) */
extern const struct dev_ops loopdev_ops;
struct dev *loopdev_new(struct event_base *base);
void loopdev_free(struct dev *d);
int loopdev_run(struct dev *d);
int loopdev_pending(struct dev *d);
void loopdev_fail_post(struct dev *d, int n);
void loopdev_error_next_completion(struct dev_qp *qp,
				   enum dev_wc_status status);
void loopdev_drop_link(struct dev_qp *qp);
void loopdev_hold(struct dev_qp *qp, bool on);
void loopdev_async_event(struct dev_qp *qp, enum dev_event ev);
void loopdev_port_active(struct dev *d);
unsigned int loopdev_rnr_waits(const struct dev_qp *qp);
const struct dev_path *loopdev_qp_path(const struct dev_qp *qp);

#endif /* SMCPROXYD_DEV_H */
