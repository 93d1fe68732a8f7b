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

/* The control commands the exposition is made of, as prom_commands. */
enum prom_cmd {
	PROM_STATS,
	PROM_VERSION,
	PROM_PEERS,
	PROM_LINKS,
	PROM_RULES,
	PROM_NCMDS
};

extern const char *const prom_commands[PROM_NCMDS];

void prom_write(FILE *f, const json_t *schema,
		const json_t *const data[PROM_NCMDS], bool om);

#endif /* SMCPROXYD_PROM_H */
