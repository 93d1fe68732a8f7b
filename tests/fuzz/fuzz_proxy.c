// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target for the PROXY header a rule with accept_proxy reads from
 * whoever connects (proxy.c): every prefix of the input, as the bytes
 * come in parts.  An answer, once given, stays the same for every longer
 * prefix; a header it takes lies within the bytes it was given (and
 * within PROXY_HEADER_MAX) and names two ends of one family, or none;
 * what it refuses comes with a reason.
 */
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>

#include "smcproxyd.h"
#include "fuzz.h"

int fuzz_decoded;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proxy_header h, first;
	char why[96];
	size_t n;
	int rc, seen = 0;

	for (n = 0; n <= size; n++) {
		why[0] = '\0';
		rc = proxy_header_read(data, n, &h, why, sizeof(why));
		if (rc < 0 && why[0] == '\0')
			abort();
		if (rc == 0 && seen != 0)
			abort(); /* an answer given is not taken back */
		if (rc == 0)
			continue;
		if (seen == 0) {
			seen = rc;
			first = h;
		}
		if (rc != seen)
			abort();
		if (rc < 0)
			continue;
		if (h.len == 0 || h.len > n || h.len > PROXY_HEADER_MAX ||
		    h.len != first.len || h.local != first.local)
			abort();
		if (!h.local &&
		    (h.src.ss.ss_family != h.dst.ss.ss_family ||
		     (h.src.ss.ss_family != AF_INET &&
		      h.src.ss.ss_family != AF_INET6) ||
		     memcmp(&h.src, &first.src, sizeof(h.src)) != 0 ||
		     memcmp(&h.dst, &first.dst, sizeof(h.dst)) != 0))
			abort();
	}
	fuzz_decoded = seen > 0;
	return 0;
}
