// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target for the fallback hello codec of fallback.c: HELLO and RESULT
 * must re-encode to the same bytes; CHALLENGE and PROOF must point inside
 * the input.  Links the whole library (fallback.c carries session code).
 */
#include <stdlib.h>
#include <string.h>

#include "fallback_wire.h"
#include "fuzz.h"

int fuzz_decoded;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t re[FB_MSG_MAX];
	struct fb_hello_info hi;
	const uint8_t *nonce, *mac;
	uint16_t length;
	uint64_t rx, fin;
	uint32_t code;
	uint8_t type;

	fuzz_decoded = 0;
	if (fb_hdr_check(data, size, &type, &length) == 0 &&
	    (length < 8 || length > FB_MSG_MAX))
		abort();
	if (fb_hello_decode(data, size, &hi) == 0) {
		fuzz_decoded++;
		if (strlen(hi.name) == 0 || strlen(hi.export) == 0 ||
		    ((hi.flags & FB_FLAG_RESUME) ?
			     fb_hello_resume_encode(re, hi.nonce,
						    hi.flags & ~FB_FLAG_RESUME,
						    hi.name, hi.export, &hi) :
			     fb_hello_encode(re, hi.nonce, hi.flags, hi.name,
					     hi.export)) != size ||
		    memcmp(re, data, size) != 0)
			abort();
	}
	if (fb_resumed_decode(data, size, &rx, &fin) == 0) {
		fuzz_decoded++;
		if (fb_resumed_encode(re, rx, fin) != size ||
		    memcmp(re, data, size) != 0)
			abort();
	}
	if (fb_result_decode(data, size, &code) == 0) {
		fuzz_decoded++;
		if (fb_result_encode(re, code) != size ||
		    memcmp(re, data, size) != 0)
			abort();
	}
	if (fb_challenge_decode(data, size, &nonce, &mac) == 0) {
		fuzz_decoded++;
		if (size != sizeof(struct fb_challenge) || nonce != data + 8 ||
		    mac != data + 40)
			abort();
	}
	if (fb_proof_decode(data, size, &mac) == 0) {
		fuzz_decoded++;
		if (size != sizeof(struct fb_proof) || mac != data + 8)
			abort();
	}
	return 0;
}
