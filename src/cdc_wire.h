/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Wire format of the CDC message: connection data control, the 44-byte
 * RDMA SEND that follows the RDMA WRITEs of a connection's data and
 * carries its cursors and flags (DESIGN.md §2, reference/smc-r.md §1.3),
 * laid out as Linux net/smc/smc_cdc.h.  All integers are big endian.
 *
 * A cursor is a position in the receiver's RMB element: a byte offset
 * (count, < the element size) and how many times the writer has wrapped
 * around it (wrap, modulo 2^16).  The helpers below do the arithmetic;
 * cdc_curs_check() is what makes a forged cursor harmless.
 */
#ifndef SMCPROXYD_CDC_WIRE_H
#define SMCPROXYD_CDC_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

#define CDC_MSG_TYPE 0xfe
#define CDC_MSG_LEN WIRE_MSG_LEN
/*
 * With CLC_FEAT_CDC_DATA a CDC may carry up to this many of the
 * connection's bytes behind its 44-byte header (data_len), instead of an
 * RDMA WRITE before it: the last data_len bytes before its producer
 * cursor, which the receiver copies into its RMB element before it
 * believes the cursor.  One message and one acknowledgement a direction
 * where a WRITE and a CDC make two of each.
 */
#define CDC_DATA_MAX 1024

/* prod_flags, MSB first */
#define CDC_PF_WRITE_BLOCKED 0x80 /* sender ran out of peer window */
#define CDC_PF_URG_DATA_PENDING 0x40
#define CDC_PF_URG_DATA_PRESENT 0x20
#define CDC_PF_CONS_CURS_UPD_REQ 0x10 /* please send your consumer cursor */
/* after a failover: seqno = last completed, sent on the new link */
#define CDC_PF_FAILOVER_VALIDATION 0x08
#define CDC_PF_RESERVED 0x07

/* conn_state_flags, MSB first */
#define CDC_CS_PEER_DONE_WRITING 0x80 /* sender shut down writing (FIN) */
#define CDC_CS_PEER_CONN_CLOSED 0x40  /* sender closed the connection */
#define CDC_CS_PEER_CONN_ABORT 0x20   /* sender aborted (RST) */
#define CDC_CS_RESERVED 0x1f

struct cdc_curs_wire {
	uint16_t reserved; /* 0 */
	uint16_t wrap;
	uint32_t count;
} __attribute__((packed));
_Static_assert(sizeof(struct cdc_curs_wire) == 8, "CDC cursor is 8 bytes");

struct cdc_msg {
	uint8_t type;		   /* CDC_MSG_TYPE */
	uint8_t len;		   /* CDC_MSG_LEN */
	uint16_t seqno;		   /* per connection, +1 per CDC sent */
	uint32_t token;		   /* the RECEIVER's alert token, non-zero */
	struct cdc_curs_wire prod; /* written up to here in your RMB */
	struct cdc_curs_wire cons; /* consumed up to here in my RMB */
	uint8_t prod_flags;	   /* CDC_PF_* */
	uint8_t conn_state_flags;  /* CDC_CS_* */
	uint16_t data_len;	   /* bytes behind the header; 0 */
	uint8_t reserved[16];	   /* 0 */
} __attribute__((packed));
_Static_assert(sizeof(struct cdc_msg) == 44, "CDC message is 44 bytes");

struct cdc_cursor {
	uint16_t wrap;
	uint32_t count;
};

struct cdc_info {
	uint16_t seqno;
	uint32_t token;
	struct cdc_cursor prod;
	struct cdc_cursor cons;
	uint8_t prod_flags;
	uint8_t conn_state_flags;
	uint16_t data_len; /* bytes carried behind the header */
};

/* cdc.c: pure codec and cursor arithmetic, used by the fuzz targets too */
int cdc_msg_encode(void *buf, size_t size, const struct cdc_info *in);
int cdc_msg_decode(const void *buf, size_t len, struct cdc_info *out);
void cdc_curs_add(struct cdc_cursor *c, size_t n, size_t size);
size_t cdc_curs_diff(size_t size, const struct cdc_cursor *old,
		     const struct cdc_cursor *new);
int64_t cdc_curs_comp(size_t size, const struct cdc_cursor *old,
		      const struct cdc_cursor *new);
int cdc_curs_check(size_t rmb_size, const struct cdc_cursor *old,
		   const struct cdc_cursor *new);
bool cdc_seq_newer(uint16_t a, uint16_t b);

#endif /* SMCPROXYD_CDC_WIRE_H */
