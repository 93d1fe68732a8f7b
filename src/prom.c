// SPDX-License-Identifier: BSD-2-Clause
/*
 * The Prometheus text exposition, written once for both consumers:
 * smcproxyctl --prometheus / --openmetrics (the textfile collector's
 * input) and the daemon's own GET /metrics (metrics.c).  Both hand over
 * the control socket's JSON: the "schema" command's stats array (family,
 * help, labels and scale of each statistic) and the data of the commands
 * in prom_commands, so the two outputs have the same families and cannot
 * drift apart.  Only jansson and stdio: smcproxyctl links nothing else.
 *
 * Names follow Prometheus' conventions: base units (seconds, bytes) as the
 * last word, a counter's samples end in _total.  The text format names a
 * counter's family with _total too, OpenMetrics without it (@om).
 */
#include <string.h>

#include <jansson.h>

#include "prom.h"

#define PROM_NAME_MAX 128 /* a family name; ours are short */

const char *const prom_commands[PROM_NCMDS] = {
	[PROM_STATS] = "stats",	     [PROM_VERSION] = "version",
	[PROM_PEERS] = "show peers", [PROM_LINKS] = "show links",
	[PROM_RULES] = "show rules",
};

/* Write @s escaped for a HELP text (@quotes false) or a label value. */
static void
prom_escape(FILE *f, const char *s, bool quotes)
{
	for (; s != NULL && *s != '\0'; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (*s == '"' && quotes)
			fputs("\\\"", f);
		else
			fputc(*s, f);
	}
}

/*
 * The HELP and TYPE lines of family smcproxyd_@base ("gauge", "counter",
 * "histogram"); a counter's samples are @base_total, and so is its family
 * in the text format.
 */
static void
prom_family(FILE *f, const char *base, const char *type, const char *help,
	    bool om)
{
	const char *suffix =
		strcmp(type, "counter") == 0 && !om ? "_total" : "";

	fprintf(f, "# HELP smcproxyd_%s%s ", base, suffix);
	prom_escape(f, help, false);
	fprintf(f, "\n# TYPE smcproxyd_%s%s %s\n", base, suffix, type);
}

/*
 * The start of a sample, smcproxyd_@name{l1="v1",l2="v2"} and a space:
 * up to two labels, a NULL name ends them.  The caller writes the value.
 */
static void
prom_sample(FILE *f, const char *name, const char *l1, const char *v1,
	    const char *l2, const char *v2)
{
	fprintf(f, "smcproxyd_%s", name);
	if (l1 != NULL) {
		fprintf(f, "{%s=\"", l1);
		prom_escape(f, v1 != NULL ? v1 : "", true);
		if (l2 != NULL) {
			fprintf(f, "\",%s=\"", l2);
			prom_escape(f, v2 != NULL ? v2 : "", true);
		}
		fputs("\"}", f);
	}
	fputc(' ', f);
}

static const char *
prom_str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static long long
prom_int(const json_t *o, const char *key)
{
	return (long long)json_integer_value(json_object_get(o, key));
}

static bool
prom_is(const json_t *o, const char *key, const char *want)
{
	const char *v = prom_str(o, key);

	return v != NULL && strcmp(v, want) == 0;
}

/*
 * One family per schema "metric", its HELP and TYPE once, then a sample
 * per statistic with the schema's labels: counters from @totals (which
 * "stats reset" leaves alone; Prometheus would take a rewind for a
 * restart), gauges from @stats, times the schema's "scale" where it has
 * one (microseconds to seconds).
 */
static void
prom_stats(FILE *f, const json_t *schema, const json_t *stats,
	   const json_t *totals, bool om)
{
	const json_t *e, *g, *labels, *lv, *from, *scale;
	const char *metric, *lk, *kind;
	long long v;
	bool counter;
	size_t i, j;
	int n;

	for (i = 0; i < json_array_size(schema); i++) {
		e = json_array_get(schema, i);
		metric = prom_str(e, "metric");
		if (metric == NULL)
			continue;
		/* a family is printed at its first statistic */
		for (j = 0; j < i; j++)
			if (json_equal(
				    json_object_get(json_array_get(schema, j),
						    "metric"),
				    json_object_get(e, "metric")))
				break;
		if (j < i)
			continue;
		kind = prom_str(e, "kind");
		counter = kind != NULL && strcmp(kind, "counter") == 0;
		from = counter ? totals : stats;
		prom_family(f, metric, counter ? "counter" : "gauge",
			    prom_str(e, "help"), om);
		for (j = i; j < json_array_size(schema); j++) {
			g = json_array_get(schema, j);
			if (!json_equal(json_object_get(g, "metric"),
					json_object_get(e, "metric")))
				continue;
			fprintf(f, "smcproxyd_%s%s", metric,
				counter ? "_total" : "");
			labels = json_object_get(g, "labels");
			n = 0;
			json_object_foreach((json_t *)labels, lk, lv) {
				fprintf(f, "%s%s=\"", n++ ? "," : "{", lk);
				prom_escape(f, json_string_value(lv), true);
				fputc('"', f);
			}
			v = prom_int(from, prom_str(g, "name"));
			scale = json_object_get(g, "scale");
			if (json_is_number(scale))
				fprintf(f, "%s %.6f\n", n ? "}" : "",
					(double)v * json_number_value(scale));
			else
				fprintf(f, "%s %lld\n", n ? "}" : "", v);
		}
	}
}

static void
prom_peers(FILE *f, const json_t *peers, bool om)
{
	static const char *const modes[] = {"rdma", "fallback"};
	const json_t *p;
	size_t i, m;

	prom_family(f, "peer_up", "gauge",
		    "1 while the peer is reached over the transport: rdma, "
		    "an active RDMA link group; fallback, connections go over "
		    "TCP and the last try reached the peer",
		    om);
	json_array_foreach(peers, i, p) {
		prom_sample(f, "peer_up", "peer", prom_str(p, "name"),
			    "transport", "rdma");
		fprintf(f, "%d\n", prom_is(p, "mode", "rdma"));
		prom_sample(f, "peer_up", "peer", prom_str(p, "name"),
			    "transport", "fallback");
		fprintf(f, "%d\n",
			prom_is(p, "mode", "fallback") &&
				json_is_true(json_object_get(p, "reachable")));
	}
	prom_family(f, "peer_mode", "gauge",
		    "how connections to the peer are carried now: 1 for that "
		    "mode, 0 for the other",
		    om);
	json_array_foreach(peers, i, p) {
		for (m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
			prom_sample(f, "peer_mode", "peer", prom_str(p, "name"),
				    "mode", modes[m]);
			fprintf(f, "%d\n", prom_is(p, "mode", modes[m]));
		}
	}
	prom_family(f, "peer_link_groups", "gauge",
		    "active RDMA link groups with the peer", om);
	json_array_foreach(peers, i, p) {
		prom_sample(f, "peer_link_groups", "peer", prom_str(p, "name"),
			    NULL, NULL);
		fprintf(f, "%lld\n", prom_int(p, "lgrs"));
	}
	prom_family(f, "peer_conns", "gauge",
		    "proxied connections open with the peer", om);
	json_array_foreach(peers, i, p) {
		prom_sample(f, "peer_conns", "peer", prom_str(p, "name"), NULL,
			    NULL);
		fprintf(f, "%lld\n", prom_int(p, "conns"));
	}
}

/*
 * The sample smcproxyd_@name{lgr=..,link=..,device=..,dialect=..} of link
 * @l (dialect: native, or smc-r with a kernel SMC-R peer).
 */
static void
prom_link_sample(FILE *f, const char *name, const json_t *l)
{
	fprintf(f, "smcproxyd_%s{lgr=\"%lld\",link=\"%lld\",device=\"", name,
		prom_int(l, "lgr"), prom_int(l, "link"));
	prom_escape(f, prom_str(l, "device"), true);
	fputs("\",dialect=\"", f);
	prom_escape(f, prom_str(l, "dialect"), true);
	fputs("\"} ", f);
}

/* The per-link families: one sample per link of "show links -o all". */
static const struct prom_link_family {
	const char *name, *type, *help;
	const char *field; /* the link's JSON member */
	double scale;	   /* 0: an integer as it is */
} prom_link_families[] = {
	{"link_test_link_rtt_seconds", "gauge",
	 "round trip of the link's last answered TEST_LINK keepalive (0 before "
	 "one was answered)",
	 "test_link_rtt_us", 1e6},
	{"link_completions", "counter",
	 "work completions polled on the link since it was set up",
	 "completions", 0},
	{"link_errors", "counter",
	 "work completions in error on the link since it was set up", "errors",
	 0},
};

static void
prom_links(FILE *f, const json_t *links, bool om)
{
	const struct prom_link_family *lf;
	char sample[96];
	const json_t *l;
	size_t i, k;

	prom_family(f, "link_active", "gauge",
		    "1 while the RDMA link is active, else 0", om);
	json_array_foreach(links, i, l) {
		prom_link_sample(f, "link_active", l);
		fprintf(f, "%d\n", prom_is(l, "state", "active"));
	}
	for (k = 0;
	     k < sizeof(prom_link_families) / sizeof(prom_link_families[0]);
	     k++) {
		lf = &prom_link_families[k];
		snprintf(sample, sizeof(sample), "%s%s", lf->name,
			 strcmp(lf->type, "counter") == 0 ? "_total" : "");
		prom_family(f, lf->name, lf->type, lf->help, om);
		json_array_foreach(links, i, l) {
			prom_link_sample(f, sample, l);
			if (lf->scale != 0)
				fprintf(f, "%.6f\n",
					(double)prom_int(l, lf->field) /
						lf->scale);
			else
				fprintf(f, "%lld\n", prom_int(l, lf->field));
		}
	}
}

/* The connections open now per rule and per export ("show rules"). */
static void
prom_open(FILE *f, const json_t *rules, bool om)
{
	const json_t *r;
	size_t i;

	prom_family(f, "rule_conns", "gauge",
		    "proxied connections open that came in on the rule", om);
	json_array_foreach(json_object_get(rules, "rules"), i, r) {
		prom_sample(f, "rule_conns", "rule", prom_str(r, "name"), NULL,
			    NULL);
		fprintf(f, "%lld\n", prom_int(r, "conns"));
	}
	prom_family(f, "export_conns", "gauge",
		    "proxied connections open that peers opened to the export",
		    om);
	json_array_foreach(json_object_get(rules, "exports"), i, r) {
		prom_sample(f, "export_conns", "export", prom_str(r, "name"),
			    NULL, NULL);
		fprintf(f, "%lld\n", prom_int(r, "conns"));
	}
}

/*
 * The setup time histogram of tally @t (a rule or an export, @kind):
 * cumulative buckets by their upper bound in seconds (@le_ms), then +Inf,
 * the sum and the count.
 */
static void
prom_setup(FILE *f, const char *kind, const json_t *t, const json_t *le_ms)
{
	const json_t *buckets = json_object_get(t, "setup_buckets");
	char name[PROM_NAME_MAX], le[32];
	long long n = 0;
	size_t i;

	snprintf(name, sizeof(name), "%s_setup_seconds_bucket", kind);
	for (i = 0; i < json_array_size(buckets); i++) {
		n += (long long)json_integer_value(json_array_get(buckets, i));
		if (i < json_array_size(le_ms))
			snprintf(le, sizeof(le), "%g",
				 (double)json_integer_value(
					 json_array_get(le_ms, i)) /
					 1000.0);
		else
			snprintf(le, sizeof(le), "+Inf");
		prom_sample(f, name, kind, prom_str(t, "name"), "le", le);
		fprintf(f, "%lld\n", n);
	}
	snprintf(name, sizeof(name), "%s_setup_seconds_sum", kind);
	prom_sample(f, name, kind, prom_str(t, "name"), NULL, NULL);
	fprintf(f, "%.3f\n", (double)prom_int(t, "setup_sum_ms") / 1000.0);
	snprintf(name, sizeof(name), "%s_setup_seconds_count", kind);
	prom_sample(f, name, kind, prom_str(t, "name"), NULL, NULL);
	fprintf(f, "%lld\n", prom_int(t, "setup_count"));
}

/*
 * Totals per rule and per export since the start (the "stats" reply's
 * tallies): connections ended by transport, bytes each way (the
 * connection log's BYTES_IN and BYTES_OUT), closes by reason, and the
 * setup time histogram.
 */
static void
prom_tallies(FILE *f, const json_t *tallies, bool om)
{
	static const char *const kinds[] = {"rule", "export"};
	static const char *const lists[] = {"rules", "exports"};
	const json_t *t, *closes, *n;
	const char *kind, *reason;
	char name[PROM_NAME_MAX], text[160];
	size_t k, i;

	for (k = 0; k < 2; k++) {
		kind = kinds[k];
		snprintf(name, sizeof(name), "%s_conns_ended", kind);
		snprintf(text, sizeof(text),
			 "per %s: connections ended, by transport", kind);
		prom_family(f, name, "counter", text, om);
		snprintf(name, sizeof(name), "%s_conns_ended_total", kind);
		json_array_foreach(json_object_get(tallies, lists[k]), i, t) {
			prom_sample(f, name, kind, prom_str(t, "name"),
				    "transport", "fallback");
			fprintf(f, "%lld\n",
				prom_int(json_object_get(t, "conns_ended"),
					 "fallback"));
			prom_sample(f, name, kind, prom_str(t, "name"),
				    "transport", "rdma");
			fprintf(f, "%lld\n",
				prom_int(json_object_get(t, "conns_ended"),
					 "rdma"));
		}
		snprintf(name, sizeof(name), "%s_bytes", kind);
		snprintf(text, sizeof(text),
			 "per %s: bytes relayed: in from the client (rule) or "
			 "the peer (export), out towards it",
			 kind);
		prom_family(f, name, "counter", text, om);
		snprintf(name, sizeof(name), "%s_bytes_total", kind);
		json_array_foreach(json_object_get(tallies, lists[k]), i, t) {
			prom_sample(f, name, kind, prom_str(t, "name"),
				    "direction", "in");
			fprintf(f, "%lld\n", prom_int(t, "bytes_in"));
			prom_sample(f, name, kind, prom_str(t, "name"),
				    "direction", "out");
			fprintf(f, "%lld\n", prom_int(t, "bytes_out"));
		}
		snprintf(name, sizeof(name), "%s_closes", kind);
		snprintf(text, sizeof(text),
			 "per %s: connections ended, by close reason", kind);
		prom_family(f, name, "counter", text, om);
		snprintf(name, sizeof(name), "%s_closes_total", kind);
		json_array_foreach(json_object_get(tallies, lists[k]), i, t) {
			closes = json_object_get(t, "closes");
			json_object_foreach((json_t *)closes, reason, n) {
				prom_sample(f, name, kind, prom_str(t, "name"),
					    "reason", reason);
				fprintf(f, "%lld\n",
					(long long)json_integer_value(n));
			}
		}
		snprintf(name, sizeof(name), "%s_setup_seconds", kind);
		prom_family(f, name, "histogram",
			    k ? "per export: time from a peer's open to "
				"relaying (the target connected)" :
				"per rule: time from accepting a client to "
				"relaying (the peer reached, over RDMA or the "
				"fallback)",
			    om);
		json_array_foreach(json_object_get(tallies, lists[k]), i, t)
			prom_setup(f, kind, t,
				   json_object_get(tallies, "setup_le_ms"));
	}
}

/**
 * prom_write() - The whole exposition: smcproxyd_build_info, the stats
 * catalogue (@schema, the "schema" command's stats array), the start time,
 * peers, links, connections open per rule and export, and the totals per
 * rule and export.  @data: the data of each command of prom_commands.
 * @om: OpenMetrics (counter families without _total); the caller writes
 * the "# EOF" after whatever it adds.
 */
void
prom_write(FILE *f, const json_t *schema, const json_t *const data[PROM_NCMDS],
	   bool om)
{
	const json_t *stats = data[PROM_STATS];
	const char *version = prom_str(data[PROM_VERSION], "version");
	const json_t *totals = json_object_get(stats, "totals");

	prom_family(f, "build_info", "gauge", "The daemon's version; always 1.",
		    om);
	prom_sample(f, "build_info", "version",
		    version != NULL ? version : "unknown", NULL, NULL);
	fputs("1\n", f);
	prom_stats(f, schema, json_object_get(stats, "stats"),
		   totals != NULL ? totals : json_object_get(stats, "stats"),
		   om);
	prom_family(f, "start_time_seconds", "gauge",
		    "when the daemon started, in seconds since the epoch", om);
	prom_sample(f, "start_time_seconds", NULL, NULL, NULL, NULL);
	fprintf(f, "%.3f\n",
		json_number_value(json_object_get(stats, "start_time")));
	prom_peers(f, json_object_get(data[PROM_PEERS], "peers"), om);
	prom_links(f, json_object_get(data[PROM_LINKS], "links"), om);
	prom_open(f, data[PROM_RULES], om);
	prom_tallies(f, json_object_get(stats, "tallies"), om);
}
