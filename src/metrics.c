// SPDX-License-Identifier: BSD-2-Clause
/*
 * The Prometheus endpoint: when metrics_listen is set, GET /metrics on that
 * address answers with the text exposition format (0.0.4), served by evhttp
 * on the main thread's event_base; any other path is 404, any other method
 * 405.  Not reloadable: the address is bound once, at start (after a
 * restart under systemd, the socket is the one its store kept: fdstore.c).
 *
 * The content is what the control socket says, asked in-process through
 * control_request(), written by prom.c exactly as smcproxyctl
 * --prometheus writes it from the same commands (one exposition for
 * both): the stats catalogue (counters from the totals that "stats
 * reset" leaves alone), the start time, each peer, each link, the
 * connections open per rule and export and their totals.  Those counts
 * are kept as connections open and end (tally.c), so a scrape walks no
 * worker's connections, however many there are.
 *
 * Scrapers are bounded like control clients: at most METRICS_MAX_CLIENTS
 * connections are open at once (the listener stops accepting, more wait
 * in its backlog), each closed after METRICS_TIMEOUT seconds without
 * progress and, since a byte now and then is progress, also when its
 * request has not been answered (the reply sent whole) METRICS_DEADLINE
 * seconds after it connected or got its previous reply; requests are
 * limited in size.  evhttp (libevent 2.1) has no
 * connection limit and no hook when it frees a connection, so each
 * connection's bufferevent is made here (evhttp_set_bevcb) and held by one
 * reference more: when evhttp has freed it, its callback argument is gone,
 * and the sweep drops our reference and the count.
 */
#include <sys/socket.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <jansson.h>

#include "smcproxyd.h"
#include "metrics.h"
#include "prom.h"

#define METRICS_MAX_CLIENTS 8
#define METRICS_TIMEOUT 10  /* seconds without progress */
#define METRICS_DEADLINE 10 /* seconds for a request and its reply */
#define METRICS_BACKLOG 16
#define METRICS_MAX_HEADERS 8192 /* bytes of request line and headers */
#define METRICS_MAX_BODY 1024	 /* a GET has none */
#define METRICS_SWEEP_MS 1000	 /* while connections are held */
#define METRICS_PATH "/metrics"
#define METRICS_CTYPE "text/plain; version=0.0.4; charset=utf-8"

static struct evhttp *metrics_http;
static struct evconnlistener *metrics_listener;
static struct event *metrics_sweep_ev;
static struct bufferevent *metrics_bevs[METRICS_MAX_CLIENTS];
static uint64_t metrics_deadline[METRICS_MAX_CLIENTS]; /* now_ms(); 0: past */
static int metrics_nbevs;
static json_t *metrics_schema; /* the catalogue: the same for the process */

/*
 * Drop the connections evhttp has freed: bufferevent_free() clears the
 * callbacks and their argument, which evhttp never does to a live one.
 * Shut the socket of one past its deadline: evhttp sees the end and frees
 * it (it has no call to close a connection it serves).  Accept again when
 * there is room; sweep again later while any is held.
 */
static void
metrics_sweep(void)
{
	struct timeval tv = {METRICS_SWEEP_MS / 1000,
			     (METRICS_SWEEP_MS % 1000) * 1000};
	bufferevent_event_cb ecb;
	uint64_t now = now_ms();
	void *arg;
	int i;

	for (i = 0; i < metrics_nbevs;) {
		bufferevent_getcb(metrics_bevs[i], NULL, NULL, &ecb, &arg);
		if (ecb != NULL || arg != NULL) {
			if (metrics_deadline[i] != 0 &&
			    now >= metrics_deadline[i]) {
				log_debug("metrics: a scraper's request took "
					  "over "
					  "%d s: closing",
					  METRICS_DEADLINE);
				(void)shutdown(
					bufferevent_getfd(metrics_bevs[i]),
					SHUT_RDWR);
				metrics_deadline[i] = 0;
			}
			i++;
			continue;
		}
		bufferevent_decref(metrics_bevs[i]);
		metrics_nbevs--;
		metrics_bevs[i] = metrics_bevs[metrics_nbevs];
		metrics_deadline[i] = metrics_deadline[metrics_nbevs];
	}
	if (metrics_listener != NULL && metrics_nbevs < METRICS_MAX_CLIENTS)
		evconnlistener_enable(metrics_listener);
	if (metrics_nbevs > 0 && !evtimer_pending(metrics_sweep_ev, NULL))
		evtimer_add(metrics_sweep_ev, &tv);
}

static void
metrics_sweep_cb(evutil_socket_t fd, short what, void *arg)
{
	metrics_sweep();
}

/*
 * A reply sent: the connection's next request has METRICS_DEADLINE from
 * now.  evhttp may free the connection now; look right after.
 */
static void
metrics_complete_cb(struct evhttp_request *req, void *arg)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct bufferevent *bev =
		evcon != NULL ? evhttp_connection_get_bufferevent(evcon) : NULL;
	struct timeval now = {0, 0};
	int i;

	for (i = 0; i < metrics_nbevs; i++)
		if (metrics_bevs[i] == bev && metrics_deadline[i] != 0)
			metrics_deadline[i] =
				now_ms() + METRICS_DEADLINE * 1000;
	evtimer_del(metrics_sweep_ev);
	evtimer_add(metrics_sweep_ev, &now);
}

/* evhttp's accept: the new connection's bufferevent, counted. */
static struct bufferevent *
metrics_bev_cb(struct event_base *base, void *arg)
{
	struct timeval tv = {METRICS_SWEEP_MS / 1000,
			     (METRICS_SWEEP_MS % 1000) * 1000};
	struct bufferevent *bev;

	metrics_sweep();
	bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (bev == NULL || metrics_nbevs == METRICS_MAX_CLIENTS)
		return bev;
	bufferevent_incref(bev);
	metrics_deadline[metrics_nbevs] = now_ms() + METRICS_DEADLINE * 1000;
	metrics_bevs[metrics_nbevs++] = bev;
	if (metrics_nbevs == METRICS_MAX_CLIENTS)
		evconnlistener_disable(metrics_listener);
	/* not swept before evhttp has set its callbacks */
	if (!evtimer_pending(metrics_sweep_ev, NULL))
		evtimer_add(metrics_sweep_ev, &tv);
	return bev;
}

/*
 * One control command's data, as the control socket answers it.
 * Return: the data (owned by *@reply, which the caller frees), or NULL.
 */
static json_t *
metrics_call(const char *cmd, json_t **reply)
{
	char line[64], *text = NULL;
	int n;

	*reply = NULL;
	n = snprintf(line, sizeof(line), "{\"v\":1,\"cmd\":\"%s\"}", cmd);
	if (control_request(line, (size_t)n, &text) < 0 || text == NULL) {
		free(text);
		return NULL;
	}
	*reply = json_loads(text, 0, NULL);
	free(text);
	if (!json_is_true(json_object_get(*reply, "ok")))
		return NULL;
	return json_object_get(*reply, "data");
}

/*
 * The whole exposition into a new buffer: prom.c's, from the data of the
 * same commands smcproxyctl --prometheus asks the socket for.
 * Return: 0, -ENOENT when the daemon is shutting down, -ENOMEM.
 */
static int
metrics_text(char **text, size_t *len)
{
	json_t *reply[PROM_NCMDS] = {NULL};
	const json_t *data[PROM_NCMDS];
	FILE *f;
	int i, rc = -ENOENT;

	*text = NULL;
	for (i = 0; i < PROM_NCMDS; i++) {
		data[i] = metrics_call(prom_commands[i], &reply[i]);
		if (data[i] == NULL)
			goto out;
	}
	rc = -ENOMEM;
	f = open_memstream(text, len);
	if (f == NULL)
		goto out;
	prom_write(f, metrics_schema, data, false);
	if (fclose(f) == 0)
		rc = 0;
out:
	if (rc) {
		free(*text);
		*text = NULL;
	}
	for (i = 0; i < PROM_NCMDS; i++)
		json_decref(reply[i]);
	return rc;
}

static void
metrics_free_cb(const void *data, size_t len, void *arg)
{
	free((void *)data);
}

static void
metrics_request_cb(struct evhttp_request *req, void *arg)
{
	enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
	struct evkeyvalq *hdrs = evhttp_request_get_output_headers(req);
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *path = uri != NULL ? evhttp_uri_get_path(uri) : NULL;
	struct evbuffer *body = NULL;
	char *text = NULL;
	size_t len = 0;
	int rc;

	evhttp_request_set_on_complete_cb(req, metrics_complete_cb, NULL);
	if (path == NULL || strcmp(path, METRICS_PATH) != 0) {
		evhttp_send_error(req, HTTP_NOTFOUND, NULL);
		return;
	}
	if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
		evhttp_add_header(hdrs, "Allow", "GET, HEAD");
		evhttp_send_error(req, HTTP_BADMETHOD, NULL);
		return;
	}
	rc = metrics_text(&text, &len);
	body = rc == 0 ? evbuffer_new() : NULL;
	if (body == NULL ||
	    evbuffer_add_reference(body, text, len, metrics_free_cb, NULL)) {
		log_warnx("metrics: not answering a scrape: %s",
			  rc == -ENOENT ? "shutting down" : "out of memory");
		free(text);
		if (body != NULL)
			evbuffer_free(body);
		evhttp_send_error(req, HTTP_SERVUNAVAIL, NULL);
		return;
	}
	evhttp_add_header(hdrs, "Content-Type", METRICS_CTYPE);
	evhttp_send_reply(req, HTTP_OK, "OK", body);
	evbuffer_free(body);
}

/**
 * metrics_init() - Serve GET /metrics on @conf's metrics_listen, on @base,
 * the main thread's event_base; nothing when it is not set.  Call after
 * control_init(): the content is the control socket's.
 * Return: 0, or a negative errno (logged).
 */
int
metrics_init(const struct conf *conf, struct event_base *base)
{
	char buf[ADDR_STRLEN], name[FDSTORE_NAME_MAX];
	json_t *reply = NULL, *schema;
	int fd, rc = -ENOMEM;

	if (conf->metrics_listen.len == 0)
		return 0;
	schema = metrics_call("schema", &reply);
	metrics_schema = json_incref(json_object_get(schema, "stats"));
	json_decref(reply);
	metrics_sweep_ev = evtimer_new(base, metrics_sweep_cb, NULL);
	metrics_http = evhttp_new(base);
	if (metrics_schema == NULL || metrics_sweep_ev == NULL ||
	    metrics_http == NULL)
		goto fail;
	evhttp_set_timeout(metrics_http, METRICS_TIMEOUT);
	evhttp_set_max_headers_size(metrics_http, METRICS_MAX_HEADERS);
	evhttp_set_max_body_size(metrics_http, METRICS_MAX_BODY);
	evhttp_set_allowed_methods(
		metrics_http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD |
				      EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
				      EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS |
				      EVHTTP_REQ_PATCH);
	evhttp_set_bevcb(metrics_http, metrics_bev_cb, NULL);
	evhttp_set_gencb(metrics_http, metrics_request_cb, NULL);
	/* the socket systemd kept over a restart, with what queued in it */
	fdstore_name(name, sizeof(name), "metrics", -1, &conf->metrics_listen);
	fd = fdstore_take(name, &conf->metrics_listen);
	if (fd >= 0)
		metrics_listener = evconnlistener_new(
			base, NULL, NULL,
			LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fd);
	else
		metrics_listener = evconnlistener_new_bind(
			base, NULL, NULL,
			LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC |
				LEV_OPT_REUSEABLE,
			METRICS_BACKLOG,
			(const struct sockaddr *)&conf->metrics_listen.ss,
			(int)conf->metrics_listen.len);
	if (metrics_listener == NULL && fd >= 0) {
		rc = -ENOMEM;
		fdstore_forget(name);
		close(fd);
		goto fail;
	}
	if (metrics_listener == NULL) {
		rc = -errno;
		log_warn("metrics_listen: cannot listen on %s",
			 addr_str(&conf->metrics_listen, buf, sizeof(buf)));
		goto fail;
	}
	if (evhttp_bind_listener(metrics_http, metrics_listener) == NULL) {
		evconnlistener_free(metrics_listener);
		metrics_listener = NULL;
		goto fail;
	}
	fdstore_keep(name, evconnlistener_get_fd(metrics_listener));
	log_info("Prometheus metrics at http://%s%s",
		 addr_str(&conf->metrics_listen, buf, sizeof(buf)),
		 METRICS_PATH);
	return 0;

fail:
	if (rc == -ENOMEM)
		log_warnx("metrics: out of memory");
	metrics_shutdown();
	return rc;
}

/**
 * metrics_shutdown() - Close the endpoint and every scraper's connection.
 * Safe when metrics_init() failed or did nothing.
 */
void
metrics_shutdown(void)
{
	/* evhttp_free() frees the bound listener and the connections */
	if (metrics_http != NULL) {
		evhttp_free(metrics_http);
		metrics_http = NULL;
	}
	metrics_listener = NULL;
	while (metrics_nbevs > 0)
		bufferevent_decref(metrics_bevs[--metrics_nbevs]);
	if (metrics_sweep_ev != NULL) {
		event_free(metrics_sweep_ev);
		metrics_sweep_ev = NULL;
	}
	json_decref(metrics_schema);
	metrics_schema = NULL;
}
