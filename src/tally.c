// SPDX-License-Identifier: BSD-2-Clause
/*
 * Totals per rule and per export since the daemon started, summed over
 * every worker: connections by transport, bytes each way and closes by
 * reason, counted as each connection ends.  They are what the metrics
 * endpoint labels per rule and export (Prometheus counters, never
 * rewound: "stats reset" does not touch them).  Entries are keyed by
 * name and kept across reloads, as a name in a time series would be.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "smcproxyd.h"

static pthread_mutex_t tally_lock = PTHREAD_MUTEX_INITIALIZER;
static SLIST_HEAD(, tally) tally_list = SLIST_HEAD_INITIALIZER(tally_list);

/* The entry of (export, name), made if need be; tally_lock held. */
static struct tally *
tally_get(bool export, const char *name)
{
	struct tally *t;

	SLIST_FOREACH(t, &tally_list, entry)
		if (t->export == export && strcmp(t->name, name) == 0)
			return t;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	t->export = export;
	snprintf(t->name, sizeof(t->name), "%s", name);
	SLIST_INSERT_HEAD(&tally_list, t, entry);
	return t;
}

/*
 * Count s, which ends now for reason, in its rule's or export's totals.
 * Sessions that never named one (strangers on the peer port) are not
 * counted here.  Any worker thread.
 */
void
tally_close(const struct session *s, enum session_reason reason)
{
	bool export = s->role == SESSION_ROLE_EXPORT;
	const char *name =
		export ? (s->export != NULL ? s->export->name : NULL) :
			 (s->rule != NULL ? s->rule->name : NULL);
	struct tally *t;

	if (name == NULL)
		return;
	pthread_mutex_lock(&tally_lock);
	t = tally_get(export, name);
	if (t != NULL) {
		t->conns[s->mode == SESSION_MODE_RDMA]++;
		t->bytes_in += s->pump[0].bytes;
		t->bytes_out += s->pump[1].bytes;
		if (reason < SESSION_NREASONS)
			t->closes[reason]++;
	}
	pthread_mutex_unlock(&tally_lock);
}

/* fn(entry, arg) for every entry, with the totals held still meanwhile. */
void
tally_foreach(void (*fn)(const struct tally *t, void *arg), void *arg)
{
	const struct tally *t;

	pthread_mutex_lock(&tally_lock);
	SLIST_FOREACH(t, &tally_list, entry)
		fn(t, arg);
	pthread_mutex_unlock(&tally_lock);
}

/* Free every entry: at exit, once no worker runs. */
void
tally_shutdown(void)
{
	struct tally *t;

	pthread_mutex_lock(&tally_lock);
	while ((t = SLIST_FIRST(&tally_list)) != NULL) {
		SLIST_REMOVE_HEAD(&tally_list, entry);
		free(t);
	}
	pthread_mutex_unlock(&tally_lock);
}
