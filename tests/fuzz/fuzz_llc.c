// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target for the LLC codec: what decodes must re-encode to the same
 * 44 bytes.  Longer inputs are also tried as their first 44 bytes, so
 * the fuzzer reaches the per-type checks quickly.
 */
#include <stdlib.h>
#include <string.h>

#include "llc_wire.h"
#include "fuzz.h"

int fuzz_decoded;

static int
fuzz_llc_one(const uint8_t *data, size_t size)
{
	uint8_t re[LLC_MSG_LEN];
	struct llc_info m;

	if (llc_msg_decode(data, size, &m) != 0)
		return 0;
	if (size != LLC_MSG_LEN || m.type != data[0] || m.flags != data[3])
		abort();
	if (llc_msg_encode(re, sizeof(re), &m) != LLC_MSG_LEN ||
	    memcmp(re, data, LLC_MSG_LEN) != 0)
		abort();
	if (strcmp(llc_type_name(m.type), "UNKNOWN") == 0)
		abort();
	if (m.type == LLC_CONN_OPEN &&
	    (strlen(m.conn_open.export) == 0 ||
	     strlen(m.conn_open.export) > LLC_EXPORT_MAX))
		abort();
	if (m.type == LLC_DELETE_LINK &&
	    strcmp(llc_delete_reason_name(m.delete_link.reason), "UNKNOWN") ==
		    0)
		abort();
	return 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_decoded = fuzz_llc_one(data, size);
	if (size > LLC_MSG_LEN)
		fuzz_llc_one(data, LLC_MSG_LEN);
	return 0;
}
