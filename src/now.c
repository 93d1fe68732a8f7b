// SPDX-License-Identifier: BSD-2-Clause
/*
 * The daemon's one clock: monotonic milliseconds, for deadlines, idle
 * times and ages everywhere (sessions, link groups, work requests), so
 * that no two modules disagree on what "now" is.
 */
#include <stdint.h>
#include <time.h>

#include "smcproxyd.h"

/* Monotonic milliseconds since an arbitrary start. */
uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Monotonic microseconds, the same clock: for budgets below a millisecond
 * (busy polling). */
uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}
