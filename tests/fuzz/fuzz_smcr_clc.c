// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target for the standard CLC codec (smcr_clc.c): every decoder on every
 * input.  Reserved bytes are skipped, as the kernel skips them, so what
 * decodes need not re-encode to the same bytes; it must re-encode to as
 * many, which decode to the same values.  Whatever is refused must come
 * with one of the decline reasons smcr_clc_wire.h promises.
 */
#include <stdlib.h>
#include <string.h>

#include "clc_wire.h"
#include "smcr_clc_wire.h"
#include "fuzz.h"

int fuzz_decoded;

static void
fuzz_smcr_clc_refused(uint32_t decl)
{
	if (decl != CLC_DECL_BADMSG && decl != CLC_DECL_VERSMISMAT &&
	    decl != CLC_DECL_MAXCONNERR && decl != CLC_DECL_MAXLINKERR &&
	    decl != CLC_DECL_NOUEID)
		abort();
	if (strcmp(clc_decline_name(decl), "UNKNOWN") == 0)
		abort();
}

static void
fuzz_smcr_clc_length(int len, size_t size)
{
	if (len < 0 || (size_t)len != size)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t re[SMCR_CLC_MSG_MAX];
	struct smcr_clc_proposal_info p, p2;
	struct smcr_clc_accept_info a, a2;
	struct smcr_clc_decline_info d, d2;
	uint32_t decl = 0;
	uint16_t length;
	uint8_t type;
	int decoded = 0, n;
	unsigned int i;

	if (smcr_clc_hdr_check(data, size, &type, &length, &decl) == 0) {
		if (length > SMCR_CLC_MSG_MAX || length < 8)
			abort();
	} else {
		fuzz_smcr_clc_refused(decl);
	}

	if (smcr_clc_proposal_decode(data, size, &p, &decl) == 0) {
		decoded++;
		n = smcr_clc_proposal_encode(re, sizeof(re), &p);
		fuzz_smcr_clc_length(n, size);
		if (smcr_clc_proposal_decode(re, (size_t)n, &p2, &decl) != 0 ||
		    memcmp(&p, &p2, sizeof(p)) != 0)
			abort();
		for (i = 0; i < p.eid_cnt; i++)
			if (!smcr_clc_eid_valid(p.eid[i]))
				abort();
	} else {
		fuzz_smcr_clc_refused(decl);
	}
	if (smcr_clc_accept_decode(data, size, &a, &decl) == 0) {
		decoded++;
		n = smcr_clc_accept_encode(re, sizeof(re), &a);
		fuzz_smcr_clc_length(n, size);
		if (smcr_clc_accept_decode(re, (size_t)n, &a2, &decl) != 0 ||
		    memcmp(&a, &a2, sizeof(a)) != 0)
			abort();
		if (clc_rmbe_bytes(a.rmbe_size) == 0)
			abort();
	} else {
		fuzz_smcr_clc_refused(decl);
	}
	if (smcr_clc_confirm_decode(data, size, &a, &decl) == 0) {
		decoded++;
		n = smcr_clc_confirm_encode(re, sizeof(re), &a);
		fuzz_smcr_clc_length(n, size);
		if (smcr_clc_confirm_decode(re, (size_t)n, &a2, &decl) != 0 ||
		    memcmp(&a, &a2, sizeof(a)) != 0)
			abort();
	} else {
		fuzz_smcr_clc_refused(decl);
	}
	if (smcr_clc_decline_decode(data, size, &d, &decl) == 0) {
		decoded++;
		n = smcr_clc_decline_encode(re, sizeof(re), &d);
		fuzz_smcr_clc_length(n, size);
		if (smcr_clc_decline_decode(re, (size_t)n, &d2, &decl) != 0 ||
		    memcmp(&d, &d2, sizeof(d)) != 0)
			abort();
		(void)clc_decline_name(d.diagnosis);
	} else {
		fuzz_smcr_clc_refused(decl);
	}
	/* one message is never two types */
	if (decoded > 1)
		abort();
	fuzz_decoded = decoded;
	return 0;
}
