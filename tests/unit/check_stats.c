// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unit tests for stats.c: the catalogue's names, summing over workers,
 * reset (counters restart from zero, gauges never), the JSON export parsed
 * back, the schema, and docs/stats.md documenting every statistic.
 *
 * The workers are test doubles: three struct stats this file writes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <jansson.h>

#include "smcproxyd.h"

#define NWORKERS 3

struct worker {
	struct stats stats;
};

static struct worker workers[NWORKERS];

int
worker_count(void)
{
	return NWORKERS;
}

struct worker *
worker_get(int i)
{
	return &workers[i];
}

struct stats *
worker_stats(struct worker *w)
{
	return &w->stats;
}

static void
setup(void)
{
	memset(workers, 0, sizeof(workers));
}

/* Whether the statistic is a counter, from the catalogue's own lists. */
static bool
is_counter(int id)
{
	return stats_kind((enum stats_id)id) == STATS_COUNTER;
}

START_TEST(test_names)
{
	int i, j;

	ck_assert_str_eq(stats_name(STAT_conns_accepted), "conns_accepted");
	ck_assert_str_eq(stats_name(STAT_CLOSE_BASE + SESSION_CLIENT_FIN),
			 "close_client_fin");
	ck_assert_str_eq(stats_name(STAT_CLOSE_BASE + SESSION_ADMIN_KILL),
			 "close_admin_kill");
	ck_assert_ptr_null(stats_name(STAT_N));
	ck_assert_int_eq(stats_kind(STAT_conns_active), STATS_GAUGE);
	ck_assert_int_eq(stats_kind(STAT_tx_bytes), STATS_COUNTER);
	for (i = 0; i < STAT_N; i++) {
		ck_assert_ptr_nonnull(stats_name((enum stats_id)i));
		ck_assert_msg(strspn(stats_name((enum stats_id)i),
				     "abcdefghijklmnopqrstuvwxyz0123456789_") ==
				      strlen(stats_name((enum stats_id)i)),
			      "%s is no metric name",
			      stats_name((enum stats_id)i));
		for (j = 0; j < i; j++)
			ck_assert_str_ne(stats_name((enum stats_id)i),
					 stats_name((enum stats_id)j));
	}
}
END_TEST

START_TEST(test_sum)
{
	struct stats sum;
	int i;

	for (i = 0; i < NWORKERS; i++) {
		STATS_ADD(&workers[i].stats, tx_bytes, 1000 * (i + 1));
		STATS_INC(&workers[i].stats, conns_active);
	}
	/* a gauge may go below zero on one worker and not in the sum */
	STATS_DEC(&workers[0].stats, conns_active);
	STATS_DEC(&workers[0].stats, conns_active);
	stats_add(&workers[2].stats, STAT_CLOSE_BASE + SESSION_IDLE_TIMEOUT, 7);

	stats_sum(&sum);
	ck_assert_uint_eq(sum.v[STAT_tx_bytes], 6000);
	ck_assert_uint_eq(sum.v[STAT_conns_active], 1);
	ck_assert_uint_eq(sum.v[STAT_CLOSE_BASE + SESSION_IDLE_TIMEOUT], 7);
	ck_assert_uint_eq(sum.v[STAT_rx_bytes], 0);
}
END_TEST

START_TEST(test_reset)
{
	struct stats snap;
	int i;

	ck_assert_int_eq(stats_since_reset(), -1);
	for (i = 0; i < NWORKERS; i++) {
		STATS_ADD(&workers[i].stats, rx_bytes, 500);
		STATS_ADD(&workers[i].stats, conns_active, 2);
		STATS_INC(&workers[i].stats, conns_accepted);
	}
	stats_reset();
	ck_assert_int_ge(stats_since_reset(), 0);

	stats_snapshot(&snap);
	for (i = 0; i < STAT_N; i++)
		if (is_counter(i))
			ck_assert_uint_eq(snap.v[i], 0);
	ck_assert_uint_eq(snap.v[STAT_conns_active], 6);

	STATS_ADD(&workers[1].stats, rx_bytes, 42);
	STATS_DEC(&workers[1].stats, conns_active);
	stats_snapshot(&snap);
	ck_assert_uint_eq(snap.v[STAT_rx_bytes], 42);
	ck_assert_uint_eq(snap.v[STAT_conns_active], 5);
	ck_assert_uint_eq(snap.v[STAT_conns_accepted], 0);

	/* the raw sums are untouched by a reset */
	stats_sum(&snap);
	ck_assert_uint_eq(snap.v[STAT_rx_bytes], 1542);

	/* a counter below its baseline (worker restarted) is not wrapped */
	memset(&workers[0].stats, 0, sizeof(workers[0].stats));
	memset(&workers[1].stats, 0, sizeof(workers[1].stats));
	stats_snapshot(&snap);
	ck_assert_uint_eq(snap.v[STAT_rx_bytes], 500);
}
END_TEST

START_TEST(test_json_roundtrip)
{
	struct stats st;
	json_t *j, *back, *v;
	const char *key;
	char *text;
	int i = 0;

	for (int id = 0; id < STAT_N; id++)
		st.v[id] = (uint64_t)id * 1000003u + 1;
	st.v[STAT_tx_bytes] = (1ull << 53) + 1; /* past a double's mantissa */

	j = stats_json(&st);
	ck_assert_ptr_nonnull(j);
	text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	back = json_loads(text, 0, NULL);
	free(text);
	ck_assert_ptr_nonnull(back);
	ck_assert_uint_eq(json_object_size(back), STAT_N);

	/* catalogue order, exact values */
	json_object_foreach(back, key, v) {
		ck_assert_str_eq(key, stats_name((enum stats_id)i));
		ck_assert(json_is_integer(v));
		ck_assert_uint_eq((uint64_t)json_integer_value(v), st.v[i]);
		i++;
	}
	json_decref(back);
}
END_TEST

START_TEST(test_schema)
{
	static const char *const reasons[] = {
#define X(id, name, desc) name,
		SESSION_REASONS(X)
#undef X
	};
	json_t *schema, *e, *labels;
	const char *kind, *name, *metric;
	size_t i;

	schema = stats_schema_json();
	ck_assert_ptr_nonnull(schema);
	ck_assert_uint_eq(json_array_size(schema), STAT_N);
	json_array_foreach(schema, i, e) {
		name = json_string_value(json_object_get(e, "name"));
		kind = json_string_value(json_object_get(e, "kind"));
		ck_assert_str_eq(name, stats_name((enum stats_id)i));
		ck_assert_str_eq(kind,
				 is_counter((int)i) ? "counter" : "gauge");
		ck_assert(json_string_length(json_object_get(e, "unit")) > 0);
		ck_assert(json_string_length(
				  json_object_get(e, "description")) > 0);
		ck_assert(json_string_length(json_object_get(e, "help")) > 0);
		labels = json_object_get(e, "labels");
		ck_assert(json_is_object(labels));
		if (i < STAT_CLOSE_BASE) {
			/*
			 * the catalogue's name, or where it has _cnt, _us or
			 * _used (a unit not last) one in Prometheus' style
			 */
			metric =
				json_string_value(json_object_get(e, "metric"));
			ck_assert_ptr_nonnull(metric);
			ck_assert_msg(strcmp(metric, name) == 0 ||
					      strstr(name, "_cnt") != NULL ||
					      strstr(name, "_us") != NULL,
				      "%s exported as %s", name, metric);
			ck_assert_ptr_null(strstr(metric, "_cnt"));
			ck_assert_msg(
				strlen(metric) < 3 ||
					strcmp(metric + strlen(metric) - 3,
					       "_us") != 0,
				"%s: microseconds", metric);
			ck_assert_uint_eq(json_object_size(labels), 0);
		} else if (i < STAT_DECL_SENT_BASE) {
			/* close reasons: one family, the reason as a label */
			ck_assert_str_eq(
				json_string_value(json_object_get(e, "metric")),
				"conns_closed");
			ck_assert_str_eq(json_string_value(json_object_get(
						 labels, "reason")),
					 reasons[i - STAT_CLOSE_BASE]);
			ck_assert_str_eq(kind, "counter");
		} else {
			/* declines: one family, direction, code and name */
			ck_assert_str_eq(
				json_string_value(json_object_get(e, "metric")),
				"declines");
			ck_assert_uint_eq(json_object_size(labels), 3);
			ck_assert_str_eq(kind, "counter");
		}
	}
	/* the code as Prometheus shows it, the name as show peers does */
	e = json_array_get(schema,
			   STAT_DECL_RECEIVED_BASE + CLC_DECLI_NOSMCRDEV);
	ck_assert_str_eq(json_string_value(json_object_get(e, "name")),
			 "declines_received_0x03030002");
	labels = json_object_get(e, "labels");
	ck_assert_str_eq(
		json_string_value(json_object_get(labels, "direction")),
		"received");
	ck_assert_str_eq(json_string_value(json_object_get(labels, "code")),
			 "0x03030002");
	ck_assert_str_eq(json_string_value(json_object_get(labels, "reason")),
			 "NOSMCRDEV");
	/* in seconds for Prometheus, microseconds in the catalogue */
	e = json_array_get(schema, STAT_busy_poll_time_us);
	ck_assert_str_eq(json_string_value(json_object_get(e, "metric")),
			 "busy_poll_seconds");
	ck_assert(json_number_value(json_object_get(e, "scale")) == 1e-6);
	ck_assert_ptr_null(json_object_get(
		json_array_get(schema, STAT_tx_bytes), "scale"));
	e = json_array_get(schema, STAT_DECL_SENT_BASE + CLC_DECL_NCODES);
	ck_assert_str_eq(json_string_value(json_object_get(e, "name")),
			 "declines_sent_unknown");
	json_decref(schema);
}
END_TEST

/* Every statistic is documented, as `name`, in docs/stats.md. */
START_TEST(test_documented)
{
	char needle[128], *doc = NULL;
	size_t len = 0;
	FILE *f;
	int i;

	f = fopen(TOP_SRCDIR "/docs/stats.md", "r");
	ck_assert_msg(f != NULL, "cannot open docs/stats.md");
	ck_assert(getdelim(&doc, &len, '\0', f) > 0);
	fclose(f);
	for (i = 0; i < STAT_N; i++) {
		snprintf(needle, sizeof(needle), "`%s`",
			 stats_name((enum stats_id)i));
		ck_assert_msg(strstr(doc, needle) != NULL,
			      "docs/stats.md does not document %s", needle);
	}
	free(doc);
}
END_TEST

static Suite *
stats_suite(void)
{
	Suite *s = suite_create("stats");
	TCase *tc = tcase_create("catalogue");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_sum);
	tcase_add_test(tc, test_reset);
	tcase_add_test(tc, test_json_roundtrip);
	tcase_add_test(tc, test_schema);
	tcase_add_test(tc, test_documented);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(stats_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
