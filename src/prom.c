// SPDX-License-Identifier: BSD-2-Clause
/*
 * Prometheus text exposition of the statistics catalogue, written once for
 * both consumers: smcproxyctl --prometheus / --openmetrics (the textfile
 * collector's input) and the daemon's own GET /metrics (metrics.c).  Both
 * hand over the control socket's JSON: the "schema" command's stats array
 * (family, help, labels of each statistic), the "stats" command's stats
 * and totals objects and the "version" string, so the two outputs cannot
 * drift apart.  Only jansson and stdio: smcproxyctl links nothing else.
 */
#include <string.h>

#include <jansson.h>

#include "prom.h"

#define PROM_NAME_MAX 128 /* a family name; the catalogue's are short */

/**
 * prom_escape() - Write @s escaped for a HELP text (@quotes false) or a
 * label value (@quotes true).
 */
void
prom_escape(FILE *f, const char *s, bool quotes)
{
	for (; *s != '\0'; s++) {
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

/**
 * prom_family() - Write the HELP and TYPE lines of family @name ("gauge",
 * "counter").
 */
void
prom_family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s ", name);
	prom_escape(f, help, false);
	fprintf(f, "\n# TYPE %s %s\n", name, type);
}

/**
 * prom_stats() - Write smcproxyd_build_info (@version) and one family per
 * schema "metric" of @schema, its HELP and TYPE once, then a sample per
 * statistic with the schema's labels: counters from @totals (which "stats
 * reset" leaves alone; Prometheus would take a rewind for a restart),
 * gauges from @stats.  @om: OpenMetrics family names (a counter family
 * without _total); the caller writes the "# EOF" after whatever it adds.
 */
void
prom_stats(FILE *f, const json_t *schema, const json_t *stats,
	   const json_t *totals, const char *version, bool om)
{
	const json_t *e, *g, *labels, *lv, *from;
	const char *metric, *lk, *kind, *suffix;
	char name[PROM_NAME_MAX];
	bool counter;
	size_t i, j;
	int n;

	prom_family(f, "smcproxyd_build_info", "gauge",
		    "The daemon's version; always 1.");
	fputs("smcproxyd_build_info{version=\"", f);
	prom_escape(f, version != NULL ? version : "unknown", true);
	fputs("\"} 1\n", f);
	for (i = 0; i < json_array_size(schema); i++) {
		e = json_array_get(schema, i);
		metric = json_string_value(json_object_get(e, "metric"));
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
		kind = json_string_value(json_object_get(e, "kind"));
		counter = kind != NULL && strcmp(kind, "counter") == 0;
		from = counter ? totals : stats;
		/*
		 * A counter's samples are <name>_total; the Prometheus text
		 * format names its family so too, OpenMetrics without it.
		 */
		suffix = counter && !om ? "_total" : "";
		snprintf(name, sizeof(name), "smcproxyd_%s%s", metric, suffix);
		prom_family(f, name, kind,
			    json_string_value(json_object_get(e, "help")));
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
			fprintf(f, "%s %lld\n", n ? "}" : "",
				(long long)json_integer_value(json_object_get(
					from, json_string_value(json_object_get(
						      g, "name")))));
		}
	}
}
