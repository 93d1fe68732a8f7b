// SPDX-License-Identifier: BSD-2-Clause
/*
 * Busy polling (rdma.busy_poll, rdma.busy_poll_us).  After a turn of the
 * event loop in which the RDMA data path did something (completions
 * reaped, bytes relayed over RDMA: busy_poll_note), a worker may poll its
 * event base without sleeping (epoll_wait with no timeout sees both the
 * sockets and the completion channels) for a budget of microseconds.  A
 * reply that comes within the budget is handled without a wake-up from
 * sleep; the price is a CPU kept busy while it polls.  An idle worker
 * never polls.
 *
 * How long the budget is:
 *
 *   always    busy_poll_us after every burst of work, and again from the
 *             last work found while polling.
 *   adaptive  between 0 and busy_poll_us, following the gaps between
 *             bursts of work.  Work found while polling (a hit) or after a
 *             sleep shorter than busy_poll_us sets the budget to at least
 *             twice that gap; a poll that ends with nothing found (a miss)
 *             halves it, and under BUSY_POLL_MIN_US it is 0: the worker
 *             sleeps.  Traffic whose gaps are longer than the cap costs
 *             at most about twice the cap before polling stops, and it
 *             starts again only when a short gap is seen.
 *
 *             A relay waits for two kinds of thing with gaps of their
 *             own: after it sent bytes to the peer, the peer's answer (a
 *             network round trip and the far server); after it wrote to
 *             a local socket, the local program's next bytes (its think
 *             time).  Each kind has its own budget (busy_poll_wait()
 *             says which the last burst of work left us waiting for), so
 *             a long wait of one kind does not halve the other's: with
 *             one budget, a remote answer slower than the cap halved the
 *             budget just before the quick local request, and adaptive
 *             polling missed both (one VM, cap 200 us: p50 1.45-1.53x
 *             of "always").
 *   off       never.
 *
 * Adaptive polling is off on a worker that may run on one CPU only: there
 * the process the worker waits for (the client, the server, rxe's kernel
 * work) needs the CPU the poll keeps (two 1-vCPU VMs: a fixed 300 us made
 * the round trip 1.6x slower).  "always" polls there too: it was asked.
 */
#include <sched.h>
#include <stdlib.h>

#include <event2/event.h>

#include "smcproxyd.h"

#define BUSY_POLL_MIN_US 8

/* Data-path work done on this thread: busy polling's sign of activity,
 * and what the last of it left the thread waiting for. */
static __thread uint64_t busy_poll_activity;
static __thread enum busy_wait busy_poll_waiting;
/* busy_poll_exit() was called on this thread: the loop ends */
static __thread bool busy_poll_exiting;

/* The RDMA data path did something on this thread: poll on a while. */
void
busy_poll_note(void)
{
	busy_poll_activity++;
}

/* ... and it left the thread waiting for @w: the peer's answer to bytes
 * sent to it, or a local program's next bytes after writing to it. */
void
busy_poll_wait(enum busy_wait w)
{
	busy_poll_activity++;
	busy_poll_waiting = w;
}

static int
busy_poll_ncpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 1;
	return CPU_COUNT(&set);
}

/**
 * busy_poll_init() - Set @bp up for @mode with the cap @max_us, for a
 * thread that may run on @ncpus CPUs (0: ask the kernel for the calling
 * thread's).  @st receives the counters (NULL: none).
 */
void
busy_poll_init(struct busy_poll *bp, enum conf_busy_poll mode, uint32_t max_us,
	       int ncpus, struct stats *st)
{
	if (ncpus == 0)
		ncpus = busy_poll_ncpus();
	if (max_us == 0 || (mode == CONF_BUSY_POLL_ADAPTIVE && ncpus < 2))
		mode = CONF_BUSY_POLL_OFF;
	bp->mode = mode;
	bp->max_us = max_us;
	bp->budget_us[BUSY_WAIT_PEER] = mode == CONF_BUSY_POLL_OFF ? 0 : max_us;
	bp->budget_us[BUSY_WAIT_LOCAL] = bp->budget_us[BUSY_WAIT_PEER];
	bp->st = st;
}

/**
 * busy_poll_work() - Adaptive: work came @gap_us after the last, found by
 * polling (@polled) or after a sleep, while waiting for @w; that wait's
 * budget grows to twice the gap.
 */
void
busy_poll_work(struct busy_poll *bp, enum busy_wait w, uint64_t gap_us,
	       bool polled)
{
	uint64_t want;

	if (bp->mode != CONF_BUSY_POLL_ADAPTIVE ||
	    (!polled && gap_us >= bp->max_us))
		return;
	want = gap_us * 2 < BUSY_POLL_MIN_US ? BUSY_POLL_MIN_US : gap_us * 2;
	if (want > bp->max_us)
		want = bp->max_us;
	if (want > bp->budget_us[w])
		bp->budget_us[w] = (uint32_t)want;
}

/**
 * busy_poll_miss() - Adaptive: a poll of the whole budget for @w found
 * nothing; that budget halves.
 */
void
busy_poll_miss(struct busy_poll *bp, enum busy_wait w)
{
	if (bp->mode != CONF_BUSY_POLL_ADAPTIVE)
		return;
	bp->budget_us[w] /= 2;
	if (bp->budget_us[w] < BUSY_POLL_MIN_US)
		bp->budget_us[w] = 0;
}

/**
 * busy_poll_exit() - End the busy_poll_loop() that runs @base, after the
 * callbacks of its current turn; on the loop's own thread (from one of
 * its callbacks).  The one way to end it: a bare event_base_loopexit()
 * lasts one turn, and the next turn's event_base_loop() forgets it.
 * The loop reads this thread's mark rather than asking the base:
 * event_base_got_exit and _got_break take its lock, two lock round trips
 * a turn, which cost daemon a about 370 instructions per round trip
 * through a pair (5 % over RDMA, 9 % over the fallback; measured with
 * contrib/bench/daemon-cost --a-conf 'busy_poll_us = 1;').
 */
void
busy_poll_exit(struct event_base *base)
{
	busy_poll_exiting = true;
	event_base_loopexit(base, NULL);
}

static bool
busy_poll_turn(struct event_base *base, int flags)
{
	return event_base_loop(base, flags) == 0 && !busy_poll_exiting;
}

static void
busy_poll_count(struct busy_poll *bp, enum stats_id id, uint64_t n)
{
	if (bp->st != NULL)
		stats_add(bp->st, id, (int64_t)n);
}

/**
 * busy_poll_loop() - Run @base until busy_poll_exit() or until it has no
 * events left, polling it without sleeping after data-path work as @bp
 * says (NULL or off: a plain dispatch).
 */
void
busy_poll_loop(struct event_base *base, struct busy_poll *bp)
{
	uint64_t seen, last = 0, start, now;
	enum busy_wait w = BUSY_WAIT_PEER;

	busy_poll_exiting = false;
	if (bp == NULL || bp->mode == CONF_BUSY_POLL_OFF) {
		event_base_dispatch(base);
		return;
	}
	for (;;) {
		seen = busy_poll_activity;
		if (!busy_poll_turn(base, EVLOOP_ONCE))
			return;
		if (busy_poll_activity == seen)
			continue;
		now = now_us();
		if (last != 0)
			busy_poll_work(bp, w, now - last, false);
		last = now;
		while (w = busy_poll_waiting, bp->budget_us[w] > 0) {
			busy_poll_count(bp, STAT_busy_polls, 1);
			start = now;
			do {
				seen = busy_poll_activity;
				if (!busy_poll_turn(base, EVLOOP_NONBLOCK))
					return;
				bp->spins++;
				now = now_us();
			} while (busy_poll_activity == seen &&
				 now - last < bp->budget_us[w]);
			busy_poll_count(bp, STAT_busy_poll_time_us,
					now - start);
			if (busy_poll_activity == seen) {
				busy_poll_miss(bp, w);
				break;
			}
			busy_poll_count(bp, STAT_busy_poll_hits, 1);
			busy_poll_work(bp, w, now - last, true);
			last = now;
		}
	}
}
