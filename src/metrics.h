/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The Prometheus endpoint (metrics_listen): GET /metrics over HTTP on the
 * main thread's event_base.  See metrics.c.
 */
#ifndef SMCPROXYD_METRICS_H
#define SMCPROXYD_METRICS_H

struct conf;
struct event_base;

int metrics_init(const struct conf *conf, struct event_base *base);
void metrics_shutdown(void);

#endif /* SMCPROXYD_METRICS_H */
