/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Prometheus text exposition, shared by smcproxyctl --prometheus (fed by
 * the control socket's JSON) and the daemon's metrics_listen endpoint
 * (fed by the same JSON, built in-process).  See prom.c.
 */
#ifndef SMCPROXYD_PROM_H
#define SMCPROXYD_PROM_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

void prom_escape(FILE *f, const char *s, bool quotes);
void prom_family(FILE *f, const char *name, const char *type, const char *help);
void prom_stats(FILE *f, const json_t *schema, const json_t *stats,
		const json_t *totals, const char *version, bool om);

#endif /* SMCPROXYD_PROM_H */
