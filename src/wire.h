// SPDX-License-Identifier: BSD-2-Clause
/*
 * Byte helpers shared by the wire codecs (clc.c, llc.c, cdc.c): 24-bit
 * big-endian fields (QP numbers, PSNs) and the all-zero check that
 * reserved fields must pass; and the one size of a link's messages.
 */
#ifndef SMCPROXYD_WIRE_H
#define SMCPROXYD_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Every LLC message and every CDC is this long on the wire (SMC's
 * SMC_WR_TX_SIZE): both ride the same TX slots and receive buffers of a
 * link (wr.c), so LLC_MSG_LEN and CDC_MSG_LEN are this one size.
 */
#define WIRE_MSG_LEN 44

static inline void
wire_put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static inline uint32_t
wire_get24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static inline bool
wire_all_zero(const void *p, size_t len)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i] != 0)
			return false;
	return true;
}

#endif /* SMCPROXYD_WIRE_H */
