// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target for the CLC codec: every decoder on every input.  Whatever
 * decodes must re-encode to the very same bytes, and whatever is refused
 * must come with one of the decline reasons clc_wire.h promises.
 */
#include <stdlib.h>
#include <string.h>

#include "clc_wire.h"
#include "fuzz.h"

int fuzz_decoded;

static void
fuzz_clc_refused(uint32_t decl)
{
	if (decl != CLC_DECL_BADMSG && decl != CLC_DECL_VERSMISMAT &&
	    decl != CLC_DECL_MAXCONNERR && decl != CLC_DECL_MAXLINKERR)
		abort();
	if (strcmp(clc_decline_name(decl), "UNKNOWN") == 0)
		abort();
}

static void
fuzz_clc_same(int len, const uint8_t *re, const uint8_t *data, size_t size)
{
	if (len < 0 || (size_t)len != size || memcmp(re, data, size) != 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t re[CLC_MSG_MAX];
	struct clc_proposal_info p;
	struct clc_accept_info a;
	struct clc_decline_info d;
	uint32_t decl = 0;
	uint16_t length;
	uint8_t type;
	int decoded = 0;

	if (clc_hdr_check(data, size, &type, &length, &decl) == 0) {
		if (length > CLC_MSG_MAX || length < 8)
			abort();
	} else {
		fuzz_clc_refused(decl);
	}

	if (clc_proposal_decode(data, size, &p, &decl) == 0) {
		decoded++;
		fuzz_clc_same(clc_proposal_encode(re, sizeof(re), &p), re, data,
			      size);
		if (strlen(p.name) == 0 || strlen(p.name) > CLC_NAME_MAX)
			abort();
	} else {
		fuzz_clc_refused(decl);
	}
	if (clc_accept_decode(data, size, &a, &decl) == 0) {
		decoded++;
		fuzz_clc_same(clc_accept_encode(re, sizeof(re), &a), re, data,
			      size);
		if (clc_rmbe_bytes(a.rmbe_size) == 0)
			abort();
	} else {
		fuzz_clc_refused(decl);
	}
	if (clc_confirm_decode(data, size, &a, &decl) == 0) {
		decoded++;
		fuzz_clc_same(clc_confirm_encode(re, sizeof(re), &a), re, data,
			      size);
	} else {
		fuzz_clc_refused(decl);
	}
	if (clc_decline_decode(data, size, &d, &decl) == 0) {
		decoded++;
		fuzz_clc_same(clc_decline_encode(re, sizeof(re), &d), re, data,
			      size);
		(void)clc_decline_name(d.diagnosis);
	} else {
		fuzz_clc_refused(decl);
	}
	/* one message is never two types */
	if (decoded > 1)
		abort();
	fuzz_decoded = decoded;
	return 0;
}
