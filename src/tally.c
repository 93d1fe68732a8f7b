// SPDX-License-Identifier: BSD-2-Clause
/*
 * Per rule, per export and per peer, summed over every worker: the
 * connections open now (counted as each one opens and ends, so that
 * `show rules`, `show peers` and a metrics scrape need not walk every
 * session), and per rule and export the totals since the daemon started:
 * connections by transport, bytes each way and closes by reason, counted
 * as each connection ends.  The totals are what the metrics endpoint
 * labels per rule and export (Prometheus counters, never rewound: "stats
 * reset" does not touch them).  Entries are keyed by name and kept across
 * reloads, as a name in a time series would be.  tally_json() hands the
 * totals to the control socket's "stats" reply, from which prom.c writes
 * them for the endpoint and for smcproxyctl --prometheus alike.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "smcproxyd.h"

static pthread_mutex_t tally_lock = PTHREAD_MUTEX_INITIALIZER;
static SLIST_HEAD(, tally) tally_list = SLIST_HEAD_INITIALIZER(tally_list);

/* The entry of (kind, name), made if need be; tally_lock held. */
static struct tally *
tally_get(enum tally_kind kind, const char *name)
{
	struct tally *t;

	SLIST_FOREACH(t, &tally_list, entry)
		if (t->kind == kind && strcmp(t->name, name) == 0)
			return t;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	t->kind = kind;
	snprintf(t->name, sizeof(t->name), "%s", name);
	SLIST_INSERT_HEAD(&tally_list, t, entry);
	return t;
}

/* The rule or export s is counted under; NULL: none (yet). */
static const char *
tally_name(const struct session *s, enum tally_kind *kind)
{
	if (s->role == SESSION_ROLE_EXPORT) {
		*kind = TALLY_EXPORT;
		return s->export != NULL ? s->export->name : NULL;
	}
	*kind = TALLY_RULE;
	return s->rule != NULL ? s->rule->name : NULL;
}

/* Count s open (+1) or gone (-1) for its rule or export and its peer. */
static void
tally_count(const struct session *s, int delta)
{
	enum tally_kind kind;
	const char *name = tally_name(s, &kind);
	struct tally *t;

	if (name != NULL && (t = tally_get(kind, name)) != NULL)
		t->open += delta;
	if (s->peer != NULL && (t = tally_get(TALLY_PEER, s->peer->name)))
		t->open += delta;
}

/*
 * s is a connection open now: its rule's (a client it accepted) or its
 * export's (a peer's open, on its way to the target) and its peer's, until
 * tally_close.  Once.  Any worker thread.
 */
void
tally_open(struct session *s)
{
	if (s->tallied)
		return;
	s->tallied = true;
	pthread_mutex_lock(&tally_lock);
	tally_count(s, 1);
	pthread_mutex_unlock(&tally_lock);
}

/* The setup time histogram's upper bounds (Prometheus' le), in ms. */
const unsigned int tally_setup_le_ms[TALLY_SETUP_BUCKETS] = {
	1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000,
};

/*
 * s, set up in ms (from the accept, or the peer's open, to relaying),
 * counted in its rule's or export's setup time histogram.  Any worker
 * thread.
 */
void
tally_setup(const struct session *s, uint64_t ms)
{
	enum tally_kind kind;
	const char *name = tally_name(s, &kind);
	struct tally *t;
	int i;

	if (name == NULL)
		return;
	for (i = 0; i < TALLY_SETUP_BUCKETS && ms > tally_setup_le_ms[i]; i++)
		;
	pthread_mutex_lock(&tally_lock);
	t = tally_get(kind, name);
	if (t != NULL) {
		t->setup[i]++;
		t->setup_count++;
		t->setup_sum_ms += ms;
	}
	pthread_mutex_unlock(&tally_lock);
}

/* The connections open now of the rule, export or peer called name. */
int64_t
tally_conns(enum tally_kind kind, const char *name)
{
	const struct tally *t;
	int64_t n = 0;

	pthread_mutex_lock(&tally_lock);
	SLIST_FOREACH(t, &tally_list, entry)
		if (t->kind == kind && strcmp(t->name, name) == 0)
			n = t->open;
	pthread_mutex_unlock(&tally_lock);
	return n;
}

/*
 * Count s, which ends now for reason, in its rule's or export's totals,
 * and no longer open.  Sessions that never named one (strangers on the
 * peer port) are not counted here.  Any worker thread.
 */
void
tally_close(const struct session *s, enum session_reason reason)
{
	enum tally_kind kind;
	const char *name = tally_name(s, &kind);
	struct tally *t;

	if (name == NULL)
		return;
	pthread_mutex_lock(&tally_lock);
	if (s->tallied)
		tally_count(s, -1);
	t = tally_get(kind, name);
	if (t != NULL) {
		t->conns[s->mode == SESSION_MODE_RDMA]++;
		t->bytes_in += s->bytes[0];
		t->bytes_out += s->bytes[1];
		if (reason < SESSION_NREASONS)
			t->closes[reason]++;
	}
	pthread_mutex_unlock(&tally_lock);
}

/* The totals of t as JSON (tally_json); NULL when out of memory. */
static json_t *
tally_entry_json(const struct tally *t)
{
	json_t *closes, *buckets;
	int i;

	closes = json_object();
	buckets = json_array();
	for (i = 0; closes != NULL && i < SESSION_NREASONS; i++)
		if (t->closes[i] > 0)
			json_object_set_new(
				closes,
				session_reason_name((enum session_reason)i),
				json_integer((json_int_t)t->closes[i]));
	for (i = 0; buckets != NULL && i <= TALLY_SETUP_BUCKETS; i++)
		json_array_append_new(buckets,
				      json_integer((json_int_t)t->setup[i]));
	return json_pack(
		"{s:s, s:{s:I, s:I}, s:I, s:I, s:o, s:o, s:I, s:I}", "name",
		t->name, "conns_ended", "fallback", (json_int_t)t->conns[0],
		"rdma", (json_int_t)t->conns[1], "bytes_in",
		(json_int_t)t->bytes_in, "bytes_out", (json_int_t)t->bytes_out,
		"closes", closes, "setup_buckets", buckets, "setup_count",
		(json_int_t)t->setup_count, "setup_sum_ms",
		(json_int_t)t->setup_sum_ms);
}

/**
 * tally_json() - The totals since the start, per rule and per export: an
 * object with "setup_le_ms" (the setup-time buckets' upper bounds; each
 * entry's "setup_buckets" has one more, for what took longer), "rules"
 * and "exports" (arrays of name, conns_ended by transport, bytes_in,
 * bytes_out, closes by reason (those seen), setup_buckets, setup_count,
 * setup_sum_ms).
 * Return: a new reference, or NULL when out of memory.
 */
json_t *
tally_json(void)
{
	json_t *le, *rules, *exports, *e;
	const struct tally *t;
	int i;

	le = json_array();
	rules = json_array();
	exports = json_array();
	for (i = 0; le != NULL && i < TALLY_SETUP_BUCKETS; i++)
		json_array_append_new(le, json_integer(tally_setup_le_ms[i]));
	pthread_mutex_lock(&tally_lock);
	SLIST_FOREACH(t, &tally_list, entry) {
		if (t->kind == TALLY_PEER)
			continue;
		e = tally_entry_json(t);
		if (e == NULL) {
			json_decref(rules);
			rules = NULL;
			break;
		}
		json_array_append_new(t->kind == TALLY_RULE ? rules : exports,
				      e);
	}
	pthread_mutex_unlock(&tally_lock);
	return json_pack("{s:o, s:o, s:o}", "setup_le_ms", le, "rules", rules,
			 "exports", exports);
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
