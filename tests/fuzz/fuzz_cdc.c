// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target for the CDC codec and cursor arithmetic.  A decoded message
 * must re-encode to the same bytes; its two cursors, taken as an old and a
 * new one in an RMB element whose size comes from the token, must satisfy
 * cdc_curs_check()'s promises: accepted means in range, at most one window
 * ahead, and cdc_curs_add(old, diff) lands exactly on new.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cdc_wire.h"
#include "fuzz.h"

int fuzz_decoded;

static void
fuzz_cdc_cursors(const struct cdc_info *m)
{
	/* small sizes hit the wrap often; large ones the real cases */
	size_t size = m->token & 0x80000000 ? (size_t)1 << (m->token & 31) :
					      (m->token & 0xfffff) + 1;
	const struct cdc_cursor *old = &m->cons, *new = &m->prod;
	struct cdc_cursor c = *old;
	int64_t d;
	int rc;

	rc = cdc_curs_check(size, old, new);
	d = cdc_curs_comp(size, old, new);
	switch (rc) {
	case 0:
		if (d < 0 || (uint64_t)d > size ||
		    cdc_curs_diff(size, old, new) != (size_t)d)
			abort();
		cdc_curs_add(&c, (size_t)d, size);
		if (c.wrap != new->wrap || c.count != new->count)
			abort();
		if (cdc_curs_comp(size, new, old) != -d)
			abort();
		break;
	case -ERANGE:
		if (old->count < size && new->count < size)
			abort();
		break;
	case -EPROTO:
		if (d >= 0 && (uint64_t)d <= size)
			abort();
		break;
	case -EINVAL:
		if (size != 0 && size <= (size_t)1 << 32)
			abort();
		break;
	default:
		abort();
	}
	if (cdc_seq_newer(m->seqno, (uint16_t)m->token) &&
	    cdc_seq_newer((uint16_t)m->token, m->seqno))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t re[CDC_MSG_LEN];
	struct cdc_info m;

	fuzz_decoded = 0;
	if (cdc_msg_decode(data, size, &m) != 0)
		return 0;
	fuzz_decoded = 1;
	if (size != CDC_MSG_LEN + (size_t)m.data_len ||
	    m.data_len > CDC_DATA_MAX ||
	    cdc_msg_encode(re, sizeof(re), &m) != CDC_MSG_LEN ||
	    memcmp(re, data, CDC_MSG_LEN) != 0)
		abort();
	fuzz_cdc_cursors(&m);
	return 0;
}
