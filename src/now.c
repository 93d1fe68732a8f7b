// SPDX-License-Identifier: BSD-2-Clause
/*
 * The daemon's one clock: monotonic milliseconds, for deadlines, idle
 * times and ages everywhere (sessions, link groups, work requests), so
 * that no two modules disagree on what "now" is.
 *
 * Milliseconds come from CLOCK_MONOTONIC_COARSE, the clock libevent's
 * timers run on too: the data path stamps activity on every read, and the
 * coarse clock is read from the vDSO even where the precise one needs a
 * system call (a clock source the vDSO cannot read, as in the emulated
 * VMs the tests run in: three of daemon a's eleven system calls per
 * round trip were clock_gettime).  It advances a tick at a time (1-4 ms),
 * which no deadline here is near.
 */
#include <stdint.h>
#include <time.h>

#include "smcproxyd.h"

/* Monotonic milliseconds since an arbitrary start. */
uint64_t
now_ms(void)
{
	struct timespec ts;

#ifdef CLOCK_MONOTONIC_COARSE
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
#else
	clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Monotonic microseconds, precise (a tick is too long here): for budgets
 * below a millisecond (busy polling), compared only with each other. */
uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}
