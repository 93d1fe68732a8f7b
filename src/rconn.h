// SPDX-License-Identifier: BSD-2-Clause
/*
 * Private to the connection data path: tx.c, rx.c and cdc.c (and their
 * tests), as net/smc's smc.h is to its files.  struct rconn, its flags
 * and what tx.c and rx.c call of each other.  Everybody else holds an
 * opaque struct rconn and uses the tx_* and rx_* functions of
 * smcproxyd.h.
 */
#ifndef SMCPROXYD_RCONN_H
#define SMCPROXYD_RCONN_H

#include <stddef.h>
#include <stdint.h>

#include "smcproxyd.h"
#include "cdc_wire.h"

#define RCONN_PEND_MAX 32 /* CDCs of one connection in flight */

/* A CDC of the connection in flight (smc_cdc_tx_pend). */
struct rconn_pend {
	struct cdc_cursor sent; /* tx_curs_sent after it */
	struct cdc_cursor prod; /* local_tx_ctrl.prod after it */
	uint16_t seqno;
	bool validation;
};

/* what the connection owes the peer: reasons to post a CDC */
#define RCONN_OWE_PUSH 0x1     /* data, not to be corked */
#define RCONN_OWE_CONS 0x2     /* our consumer cursor */
#define RCONN_OWE_VALIDATE 0x4 /* failover validation CDC */
#define RCONN_OWE_CDC 0x8      /* one CDC even without data */
#define RCONN_OWE_LAST 0x10    /* pushed by the last completion */

/* rconn flags */
#define RCONN_F_CLOSE_WR 0x001	 /* tx_close: done writing asked */
#define RCONN_F_CLOSE 0x002	 /* tx_close: closed asked */
#define RCONN_F_ABORT 0x004	 /* tx_close: abort asked */
#define RCONN_F_ABORT_SENT 0x008 /* no CDC after that one */
#define RCONN_F_PEER_DONE 0x010	 /* the peer's flags, sticky */
#define RCONN_F_PEER_CLOSED 0x020
#define RCONN_F_PEER_ABORT 0x040
#define RCONN_F_DONE_TOLD 0x080	  /* peer_done_writing called */
#define RCONN_F_CLOSED_TOLD 0x100 /* peer_closed called */
#define RCONN_F_LINK_FAILED 0x200 /* link_failed told for this link */
#define RCONN_F_TX_BLOCKED 0x400  /* owner found the ring full */
#define RCONN_F_FREEING 0x800	  /* tx_conn_free ran: free when idle */
#define RCONN_F_OUT_OF_SYNC 0x1000
#define RCONN_F_URG 0x2000  /* urgent data came: confirm all once read */
#define RCONN_F_DOOR 0x4000 /* owner corked at the door: tell it when done */

struct rconn {
	uint64_t id;
	struct wr_link *link;
	uint32_t token;
	uint32_t peer_token;
	const struct rconn_ops *ops;
	void *arg;
	struct tx_params params;
	struct rconn_stats stats;
	struct rconn_stats *sum;
	unsigned int flags; /* RCONN_F_* */
	int nest;	    /* callbacks under way: free later */

	/* send side: ring cursors, then the peer's RMB */
	struct buf *sndbuf;
	uint32_t lkey;			/* of sndbuf on link's device */
	struct cdc_cursor tx_curs_prep; /* produced into the ring */
	struct cdc_cursor tx_curs_sent; /* RDMA-written */
	struct cdc_cursor tx_curs_fin;	/* its CDC completed: space again */
	struct rconn_peer_rmb peer_rmb;
	struct cdc_info local_tx_ctrl; /* next CDC: prod, our cons, flags */
	struct cdc_cursor tx_prod_fin; /* prod of the last completed CDC */
	struct cdc_cursor tx_prod_hi;  /* furthest prod ever posted */
	size_t peer_rmbe_space;	       /* the peer's window */
	uint16_t tx_seq_fin;	       /* seqno of the last completed CDC */
	int cdc_pend_tx_wr;	       /* CDCs in flight on link */
	int cdc_pend_old;	       /* ... on links failed over from */
	struct rconn_pend pend[RCONN_PEND_MAX];
	int pend_head, pend_len;
	unsigned int tx_owe;	 /* RCONN_OWE_* */
	struct wr_waiter waiter; /* parked for a TX slot */

	/* receive side */
	struct buf *rmb;
	struct cdc_info local_rx_ctrl;	     /* last CDC accepted */
	struct cdc_cursor rx_curs_confirmed; /* our cons last posted */

	/* stream offsets since the open, both ways (tx_resume) */
	uint64_t tx_prep_off;	 /* bytes produced into the ring */
	uint64_t tx_sent_hi_off; /* furthest ever RDMA-written */
	uint64_t rx_off;	 /* bytes the peer announced to us */
	uint64_t peer_cons_off;	 /* bytes the peer said it consumed */
};

/* count n in the connection's stats and the owner's totals */
#define RCONN_STAT(rc, field, n)                 \
	do {                                     \
		(rc)->stats.field += (n);        \
		if ((rc)->sum != NULL)           \
			(rc)->sum->field += (n); \
	} while (0)

/* tx.c, for rx.c */
int tx_kick(struct rconn *rc, unsigned int owe);
void tx_link_failed(struct rconn *rc);
void tx_peer_consumed(struct rconn *rc);

/* cdc.c: the data path's side of the CDC messages (tx.c, rx.c) */
int cdc_conn_build(const struct rconn *rc, uint16_t seqno,
		   const struct cdc_cursor *prod, uint8_t prod_flags,
		   uint8_t conn_state_flags, uint16_t data_len, void *buf,
		   size_t size);
int cdc_conn_check(const struct rconn *rc, const struct cdc_info *m,
		   const char **why);
int cdc_ring_spans(void *base, size_t size, size_t start, size_t n,
		   struct iovec iov[2]);

#endif /* SMCPROXYD_RCONN_H */
