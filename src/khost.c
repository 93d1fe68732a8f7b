// SPDX-License-Identifier: BSD-2-Clause
/*
 * The Linux kernel SMC-R hosts this daemon has connections with, by IP
 * address (issue 47, issue 43): for `show peers`, what a native peer has
 * in peer.c, a kernel host has here: its connections open now, and the
 * last DECLINE of a connection with it (either way) and when.  A kernel
 * host has no name and no configuration, so the hosts are what was seen:
 * smcr.c records a connection as it begins and each DECLINE,
 * session_close() its end.
 *
 * One table for every worker, under its lock, of at most KHOST_MAX
 * hosts: a host with connections open is kept; when the table is full, a
 * new host takes the place of the one without connections heard of
 * longest ago, or is not recorded (its connections still run; only
 * `show peers` does not list it).  A leaf: it calls nothing of the
 * daemon's but addr.c and now.c.
 */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "smcproxyd.h"

static pthread_mutex_t khost_lock = PTHREAD_MUTEX_INITIALIZER;
static struct khost_info khost_slot[KHOST_MAX];
static uint64_t khost_seen_ms[KHOST_MAX]; /* last heard of */
static int khost_nslots;

/* The slot of host, made if need be (and room); -1.  khost_lock held. */
static int
khost_get(const struct addr *host, bool make)
{
	int i, victim = -1;

	for (i = 0; i < khost_nslots; i++)
		if (addr_same_host(&khost_slot[i].host, host))
			return i;
	if (!make)
		return -1;
	if (khost_nslots < KHOST_MAX) {
		victim = khost_nslots++;
	} else {
		for (i = 0; i < KHOST_MAX; i++)
			if (khost_slot[i].open == 0 &&
			    (victim < 0 ||
			     khost_seen_ms[i] < khost_seen_ms[victim]))
				victim = i;
		if (victim < 0)
			return -1;
	}
	memset(&khost_slot[victim], 0, sizeof(khost_slot[victim]));
	khost_slot[victim].host = *host;
	return victim;
}

/**
 * khost_open() - A connection with the kernel SMC-R host at @host (its
 * port is ignored) begins.  Any worker thread.
 * Return: true when it was counted: khost_close() it when it ends.
 */
bool
khost_open(const struct addr *host)
{
	int i;

	pthread_mutex_lock(&khost_lock);
	i = khost_get(host, true);
	if (i >= 0) {
		khost_slot[i].open++;
		khost_slot[i].total++;
		khost_seen_ms[i] = now_ms();
	}
	pthread_mutex_unlock(&khost_lock);
	return i >= 0;
}

/* A connection that khost_open() counted with @host ended. */
void
khost_close(const struct addr *host)
{
	int i;

	pthread_mutex_lock(&khost_lock);
	i = khost_get(host, false);
	if (i >= 0 && khost_slot[i].open > 0) {
		khost_slot[i].open--;
		khost_seen_ms[i] = now_ms();
	}
	pthread_mutex_unlock(&khost_lock);
}

/*
 * A connection with @host went on as TCP after a DECLINE of @code, sent
 * by the host (@by_peer) or by us.
 */
void
khost_decline(const struct addr *host, uint32_t code, bool by_peer)
{
	int i;

	pthread_mutex_lock(&khost_lock);
	i = khost_get(host, true);
	if (i >= 0) {
		khost_slot[i].decline = code;
		khost_slot[i].by_peer = by_peer;
		khost_slot[i].decline_at = time(NULL);
		khost_seen_ms[i] = now_ms();
	}
	pthread_mutex_unlock(&khost_lock);
}

/**
 * khost_list() - A copy of the hosts known, at most @max of them, into
 * @out.  Return: how many.
 */
int
khost_list(struct khost_info *out, int max)
{
	int n;

	pthread_mutex_lock(&khost_lock);
	n = khost_nslots < max ? khost_nslots : max;
	memcpy(out, khost_slot, (size_t)n * sizeof(*out));
	pthread_mutex_unlock(&khost_lock);
	return n;
}
