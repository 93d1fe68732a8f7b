// SPDX-License-Identifier: BSD-2-Clause
/*
 * Statistics: everything generated from the catalogue in stats.h.  Workers
 * write their own struct stats without locks (stats_add), the main thread
 * its own (stats_main); this file runs on the main thread only and reads them with relaxed loads, sums them, and
 * keeps the reset baseline.  A reset never touches a worker's memory: it
 * remembers the current sums, and a reported counter is sum - baseline.
 * Gauges are reported as they are and never reset.
 */
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "smcproxyd.h"

struct stats_def {
	const char *name;
	enum stats_kind kind;
	const char *unit;
	const char *desc;
	const char *metric;    /* Prometheus family, without the prefix */
	const char *help;      /* the family's, when not desc */
	const char *reason;    /* value of the family's "reason" label */
	const char *direction; /* a decline's "direction" label */
	const char *code;      /* a decline's "code" label */
};

#define STATS_CLOSE_HELP "proxied connections closed, by reason"
#define STATS_DECL_HELP                                                     \
	"CLC DECLINEs sent (RDMA refused, the peer falls back to TCP) and " \
	"received (we fall back), by SMC decline code"

/*
 * The counter of decline code hex ("0x03030002") named nm ("NOSMCRDEV"),
 * sent or received (dir): "declines_sent_0x03030002".
 */
#define STATS_DECL_DEF(dir, nm, hex, text)                                   \
	{                                                                    \
		.name = "declines_" dir "_" hex, .kind = STATS_COUNTER,      \
		.unit = "handshakes", .desc = "CLC DECLINEs " dir ": " text, \
		.metric = "declines", .help = STATS_DECL_HELP, .reason = nm, \
		.direction = dir, .code = hex                                \
	}

static const struct stats_def stats_defs[STAT_N] = {
#define X(name, kind, unit, desc) \
	[STAT_##name] = {#name, STATS_##kind, unit, desc, #name},
	STATS_LIST(X)
#undef X
#define X(id, nm, text)                                               \
	[STAT_CLOSE_BASE + SESSION_##id] = {.name = "close_" nm,      \
					    .kind = STATS_COUNTER,    \
					    .unit = "connections",    \
					    .desc = "closed: " text,  \
					    .metric = "conns_closed", \
					    .help = STATS_CLOSE_HELP, \
					    .reason = nm},
		SESSION_REASONS(X)
#undef X
/* each code its two entries, as clang-format cannot lay them out */
/* clang-format off */
#define X(nm, hex, text)						\
	[STAT_DECL_SENT_BASE + CLC_DECLI_##nm] =			\
		STATS_DECL_DEF("sent", #nm, #hex, text),		\
	[STAT_DECL_RECEIVED_BASE + CLC_DECLI_##nm] =			\
		STATS_DECL_DEF("received", #nm, #hex, text),
	CLC_DECLINES(X)
#undef X
	[STAT_DECL_SENT_BASE + CLC_DECL_NCODES] =
		STATS_DECL_DEF("sent", "UNKNOWN", "unknown", "a code not listed"),
	[STAT_DECL_RECEIVED_BASE + CLC_DECL_NCODES] =
		STATS_DECL_DEF("received", "UNKNOWN", "unknown",
			       "a code not listed"),
	/* clang-format on */
};

/*
 * The Prometheus family of the statistics whose catalogue name (the
 * kernel's smc_stats name, kept in JSON) breaks Prometheus' conventions:
 * "_cnt" is no unit, a unit goes last, time is in seconds.  No alias of
 * the old family names: no release exported them.
 */
static const struct {
	enum stats_id id;
	const char *metric;
	double scale; /* catalogue unit to the family's; 0: the same */
} stats_metrics[] = {
	{STAT_rdma_buf_bytes_used, "rdma_buf_used_bytes", 0},
	{STAT_tx_cnt, "tx_requests", 0},
	{STAT_rx_cnt, "rx_requests", 0},
	{STAT_buf_full_cnt, "buf_full", 0},
	{STAT_srv_hshake_err_cnt, "server_handshake_errors", 0},
	{STAT_clnt_hshake_err_cnt, "client_handshake_errors", 0},
	{STAT_busy_poll_time_us, "busy_poll_seconds", 1e-6},
};

/* The main thread's own (monitor.c): summed with the workers'. */
static struct stats stats_main_thread;

/* Main thread only. */
static struct stats stats_baseline;
static struct timespec stats_reset_ts;
static bool stats_was_reset;

/**
 * stats_name() - The catalogue name of a statistic ("conns_accepted",
 * "close_client_fin").
 */
const char *
stats_name(enum stats_id id)
{
	if ((unsigned int)id >= STAT_N)
		return NULL;
	return stats_defs[id].name;
}

/**
 * stats_kind() - Whether a statistic is a counter or a gauge.
 */
enum stats_kind
stats_kind(enum stats_id id)
{
	return stats_defs[id].kind;
}

/**
 * stats_main() - The statistics the main thread writes (control socket
 * clients: monitor.c), as a worker writes its own: the main thread is
 * their only writer.
 */
struct stats *
stats_main(void)
{
	return &stats_main_thread;
}

/**
 * stats_sum() - Sum every worker's statistics into @out, as they are now.
 * Each value is read whole (relaxed load); values of different workers are
 * not read at one instant.
 */
void
stats_sum(struct stats *out)
{
	struct stats *st;
	int i, n, id;

	*out = stats_main_thread;
	n = worker_count();
	for (i = 0; i < n; i++) {
		st = worker_stats(worker_get(i));
		for (id = 0; id < STAT_N; id++)
			out->v[id] += stats_read(st, (enum stats_id)id);
	}
}

/**
 * stats_reset() - Make every counter read zero from now on.  Gauges keep
 * their value.  Main thread only.
 */
void
stats_reset(void)
{
	stats_sum(&stats_baseline);
	clock_gettime(CLOCK_MONOTONIC, &stats_reset_ts);
	stats_was_reset = true;
}

/**
 * stats_snapshot() - The statistics as reported: counters since the last
 * stats_reset(), gauges as they are.  Main thread only.
 */
void
stats_snapshot(struct stats *out)
{
	int id;

	stats_sum(out);
	for (id = 0; id < STAT_N; id++) {
		if (stats_defs[id].kind != STATS_COUNTER)
			continue;
		/* a counter below its baseline restarted: report it whole */
		if (out->v[id] >= stats_baseline.v[id])
			out->v[id] -= stats_baseline.v[id];
	}
}

/**
 * stats_since_reset() - Seconds since the last stats_reset(), or -1 when
 * the counters were never reset.
 */
int64_t
stats_since_reset(void)
{
	struct timespec now;

	if (!stats_was_reset)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)(now.tv_sec - stats_reset_ts.tv_sec);
}

/**
 * stats_json() - @st as a JSON object, one member per statistic in
 * catalogue order.
 * Return: a new reference, or NULL when out of memory.
 */
json_t *
stats_json(const struct stats *st)
{
	json_t *obj;
	int id;

	obj = json_object();
	if (obj == NULL)
		return NULL;
	for (id = 0; id < STAT_N; id++) {
		if (json_object_set_new(obj, stats_defs[id].name,
					json_integer((json_int_t)st->v[id])) ==
		    -1) {
			json_decref(obj);
			return NULL;
		}
	}
	return obj;
}

/**
 * stats_schema_json() - The catalogue as a JSON array: for each statistic
 * its name, kind ("counter" or "gauge"), unit, description, and how it is
 * exported as a metric (family name, help text, labels, and the scale
 * from its unit to the family's where they differ).
 * Return: a new reference, or NULL when out of memory.
 */
json_t *
stats_schema_json(void)
{
	const struct stats_def *d;
	json_t *arr, *e, *labels;
	const char *metric;
	double scale;
	size_t m;
	int id;

	arr = json_array();
	if (arr == NULL)
		return NULL;
	for (id = 0; id < STAT_N; id++) {
		d = &stats_defs[id];
		if (d->code != NULL)
			labels = json_pack("{s:s, s:s, s:s}", "direction",
					   d->direction, "code", d->code,
					   "reason", d->reason);
		else if (d->reason != NULL)
			labels = json_pack("{s:s}", "reason", d->reason);
		else
			labels = json_object();
		metric = d->metric;
		scale = 0;
		for (m = 0;
		     m < sizeof(stats_metrics) / sizeof(stats_metrics[0]);
		     m++) {
			if ((int)stats_metrics[m].id == id) {
				metric = stats_metrics[m].metric;
				scale = stats_metrics[m].scale;
			}
		}
		e = json_pack(
			"{s:s, s:s, s:s, s:s, s:s, s:s, s:o*}", "name", d->name,
			"kind", d->kind == STATS_COUNTER ? "counter" : "gauge",
			"unit", d->unit, "description", d->desc, "metric",
			metric, "help", d->help != NULL ? d->help : d->desc,
			"labels", labels);
		if (e != NULL && scale != 0)
			json_object_set_new(e, "scale", json_real(scale));
		if (e == NULL || json_array_append_new(arr, e) == -1) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}
