// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target for the SMC-R dialect of the LLC codec (llc_v2_*): what
 * decodes must re-encode to as many bytes, which decode to the same
 * values (reserved bytes are skipped, as Linux skips them), and a message
 * the native decoder also takes can only be a v1-form one.
 */
#include <stdlib.h>
#include <string.h>

#include "llc_wire.h"
#include "fuzz.h"

int fuzz_decoded;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t re[LLC_V2_MSG_MAX];
	static struct llc_v2_info v, w;
	struct llc_info m;
	int n;

	fuzz_decoded = 0;
	if (llc_v2_decode(data, size, &v) != 0)
		return 0;
	fuzz_decoded = 1;
	if ((data[0] & LLC_V2_TYPE_MASK) != v.m.type || data[3] != v.m.flags)
		abort();
	n = llc_v2_encode(re, sizeof(re), &v);
	if (n < 0 || (size_t)n != size ||
	    llc_v2_decode(re, (size_t)n, &w) != 0 ||
	    memcmp(&v, &w, sizeof(v)) != 0)
		abort();
	if (strcmp(llc_type_name(v.m.type), "UNKNOWN") == 0)
		abort();
	if (llc_msg_decode(data, size, &m) == 0 && v.form != 1)
		abort();
	return 0;
}
