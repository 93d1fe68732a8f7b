// SPDX-License-Identifier: BSD-2-Clause
/*
 * The control socket's replies (DESIGN §6), one JSON object per line, and
 * what every command reads: the running configuration and when the daemon
 * started.  Below control.c, control_show.c and control_check.c
 * (control_int.h), and calling none of them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "smcproxyd.h"
#include "control_int.h"
#include "monitor.h"

struct event_base *control_base;
const struct conf *control_conf; /* NULL before control_init() */
struct timespec control_started;
double control_start_time;

/******** replies ********/

static int
control_dump_cb(const char *buf, size_t len, void *arg)
{
	return evbuffer_add(arg, buf, len);
}

/* Append @j as compact JSON; the caller adds the newline. */
int
control_dump(struct evbuffer *out, const json_t *j)
{
	return json_dump_callback(j, control_dump_cb, out, JSON_COMPACT);
}

/* A JSON string from text that may not be UTF-8 (config file excerpts). */
json_t *
control_text(const char *s)
{
	json_t *j;
	char *copy, *p;

	j = json_string(s);
	if (j != NULL)
		return j;
	copy = strdup(s);
	if (copy == NULL)
		return NULL;
	for (p = copy; *p != '\0'; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	j = json_string(copy);
	free(copy);
	return j;
}

/* Write a reply object (stolen) and its newline. */
static void
control_send(struct evbuffer *out, json_t *reply)
{
	if (reply == NULL || control_dump(out, reply) == -1) {
		/* a fixed reply, so the client still gets one line */
		evbuffer_add_printf(out,
				    "{\"v\":%d,\"ok\":false,"
				    "\"error\":\"out of memory\"}",
				    CONTROL_VERSION);
	}
	evbuffer_add(out, "\n", 1);
	json_decref(reply);
}

void
control_send_ok(struct evbuffer *out, json_t *data)
{
	control_send(out, json_pack("{s:i, s:b, s:o}", "v", CONTROL_VERSION,
				    "ok", 1, "data", data));
}

/* @details (stolen) may be NULL. */
void
control_send_error(struct evbuffer *out, const char *msg, json_t *details)
{
	control_send(out, json_pack("{s:i, s:b, s:o, s:o*}", "v",
				    CONTROL_VERSION, "ok", 0, "error",
				    control_text(msg), "details", details));
}

/* fmt's text, allocated (free it); NULL out of memory. */
static char *control_vtext(const char *fmt, va_list ap)
	__attribute__((format(printf, 1, 0)));

static char *
control_vtext(const char *fmt, va_list ap)
{
	char *msg;

	if (vasprintf(&msg, fmt, ap) == -1)
		return NULL;
	return msg;
}

void
control_send_errorf(struct evbuffer *out, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = control_vtext(fmt, ap);
	va_end(ap);
	control_send_error(out, msg != NULL ? msg : "out of memory", NULL);
	free(msg);
}

/* Make the request fail with a message; the handler then returns NULL. */
void
control_fail(struct control_req *req, const char *fmt, ...)
{
	va_list ap;

	free(req->cr_error);
	va_start(ap, fmt);
	req->cr_error = control_vtext(fmt, ap);
	va_end(ap);
}

/*
 * What an admin command did, for people, as @data's "message" (stolen;
 * smcproxyctl prints it).  Return: @data, or NULL out of memory.
 */
json_t *
control_done(json_t *data, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = control_vtext(fmt, ap);
	va_end(ap);
	if (data == NULL || msg == NULL ||
	    json_object_set_new(data, "message", control_text(msg)) != 0) {
		json_decref(data);
		data = NULL;
	}
	free(msg);
	return data;
}

/*
 * What an operator did, said with who did it: logged, and raised as event
 * @ev about @w for the monitors.
 */
void
control_admin(const struct control_req *req, enum monitor_event ev,
	      const struct log_where *w, const char *fmt, ...)
{
	const struct control_client *c = req->cr_client;
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = control_vtext(fmt, ap);
	va_end(ap);
	if (msg == NULL)
		return;
	log_info("%s by uid %u pid %d", msg, (unsigned int)c->cc_uid,
		 (int)c->cc_pid);
	monitor_event(ev, w, "%s by uid %u pid %d", msg,
		      (unsigned int)c->cc_uid, (int)c->cc_pid);
	free(msg);
}

/******** helpers for the commands ********/

int64_t
control_uptime(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)(now.tv_sec - control_started.tv_sec);
}

json_t *
control_addr(const struct addr *a)
{
	char buf[ADDR_STRLEN];

	return json_string(addr_str(a, buf, sizeof(buf)));
}
