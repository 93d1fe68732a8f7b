// SPDX-License-Identifier: BSD-2-Clause
/*
 * The control socket's check commands (control.c's table): `check PEER`
 * tests each path the peer's connections take (the fallback's through
 * fallback_check_step, the link group's through lgr_check_step on its
 * worker), `check smc ADDRESS` probes a kernel SMC-R server
 * (smcr_check.c), `check export NAME` says whether kernel SMC-R clients
 * can have SMC-R at its smc_listen.  The first two are stepped by a timer
 * and answer when done, the client's next requests waiting behind them;
 * the client is then resumed through the request's cr_resume, so that
 * this file calls control_reply.c only, of the control files.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <jansson.h>

#include "smcproxyd.h"
#include "clc_wire.h"
#include "control_int.h"

#define CONTROL_CHECK_TIMEOUT 15 /* seconds: check PEER gives up */
#define CONTROL_CHECK_POLL_MS 10 /* how often a check is stepped */

#define CONTROL_CHECK_EXPORTS 8 /* a peer's exports a check opens */

static json_t *control_check_start(struct control_req *req,
				   struct control_check *ck);

/* One export of a peer as its rules name it, and what opening it gave. */
struct control_check_export {
	char rule[CONF_NAME_MAX + 1];
	char export[CONF_NAME_MAX + 1];
	bool tried;
	int rc;
	char error[FALLBACK_CHECK_ERROR_MAX];
};

/*
 * `check NAME`: one under way.  The link group part (lgr_check.c) is
 * stepped on its worker, the fallback part (fallback_check_step) here,
 * both by a timer: each says what the path it tests does now.
 */
struct control_check {
	struct control_client *client;		  /* NULL: answered at once */
	void (*resume)(struct control_client *c); /* the request's cr_resume */
	struct worker *w;
	struct event *ev;
	struct conf *conf; /* held: the peer and rules it names */
	struct lgr_check lc;
	bool lc_done;
	/* the fallback: one open per export, the first says the rest */
	struct fallback_check fc;
	struct fallback_check first;
	struct control_check_export exports[CONTROL_CHECK_EXPORTS];
	int nexports, next; /* the export fc opens */
	bool fc_done;
	/* `check smc ADDRESS`: that instead */
	bool smc;
	struct smcr_check kc;
	bool done;
};

struct control_has {
	const char *peer;
	bool found;
};

static void
control_has_cb(struct worker *w, void *arg)
{
	struct control_has *h = arg;

	h->found = lgr_has_active(worker_lgr(w), h->peer);
}

static void
control_check_cb(struct worker *w, void *arg)
{
	struct control_check *ck = arg;

	ck->lc_done = lgr_check_step(worker_lgr(w), &ck->lc);
}

/* A check under the configuration of now, with nothing open yet. */
static struct control_check *
control_check_new(void)
{
	struct control_check *ck = calloc(1, sizeof(*ck));

	if (ck == NULL)
		return NULL;
	ck->conf = conf_hold((struct conf *)control_conf);
	ck->fc.fd = -1;
	return ck;
}

void
control_check_free(struct control_check *ck)
{
	if (ck == NULL)
		return;
	if (ck->ev != NULL)
		event_free(ck->ev);
	fallback_check_end(&ck->fc);
	if (ck->smc)
		smcr_check_free(&ck->kc);
	conf_drop(ck->conf);
	free(ck);
}

/*
 * The exports the peer's rules open, each once: what the check opens.
 * With none (a peer that only connects to us) our connections never go
 * to it, and the fallback part has nothing to test.
 */
static void
control_check_exports(struct control_check *ck, const struct conf_peer *peer)
{
	const struct conf_rule *r;
	int i, j;

	for (i = 0; i < ck->conf->nrules; i++) {
		r = &ck->conf->rules[i];
		if (r->peer != peer || ck->nexports == CONTROL_CHECK_EXPORTS)
			continue;
		for (j = 0; j < ck->nexports; j++)
			if (strcmp(ck->exports[j].export, r->export) == 0)
				break;
		if (j < ck->nexports)
			continue;
		snprintf(ck->exports[j].rule, sizeof(ck->exports[j].rule), "%s",
			 r->name);
		snprintf(ck->exports[j].export, sizeof(ck->exports[j].export),
			 "%s", r->export);
		ck->nexports++;
	}
}

/*
 * One step of the fallback part: the open of the next export.  One that
 * did not get past the peer's port or its key ends the part: the others
 * would meet the same.
 */
static void
control_check_fallback(struct control_check *ck)
{
	struct control_check_export *e = &ck->exports[ck->next];
	const struct conf_peer *peer = conf_peer_find(ck->conf, ck->lc.peer);
	uint64_t now = now_ms();

	/* all the opens share the check's time, as the link group part */
	if (ck->fc.peer == NULL)
		fallback_check_init(&ck->fc, ck->conf, peer, e->export,
				    ck->lc.deadline_ms > now ?
					    (int)(ck->lc.deadline_ms - now) :
					    1);
	if (!fallback_check_step(&ck->fc))
		return;
	if (ck->next == 0)
		ck->first = ck->fc;
	if (ck->fc.stage == FALLBACK_CHECK_EXPORT) {
		e->tried = true;
		e->rc = ck->fc.rc;
		snprintf(e->error, sizeof(e->error), "%s", ck->fc.error);
	}
	ck->next++;
	if (ck->fc.stage != FALLBACK_CHECK_EXPORT || ck->next >= ck->nexports)
		ck->fc_done = true;
	memset(&ck->fc, 0, sizeof(ck->fc));
	ck->fc.fd = -1;
}

/* One step of check ck, both parts; ck->done once both have a result. */
static void
control_check_step(struct control_check *ck)
{
	if (ck->smc) {
		ck->done = smcr_check_step(&ck->kc);
		return;
	}
	if (!ck->lc_done)
		worker_call(ck->w, control_check_cb, ck);
	if (!ck->fc_done)
		control_check_fallback(ck);
	ck->done = ck->lc_done && ck->fc_done;
}

/* "1.234 ms" */
static void
control_ms(char *buf, size_t len, uint64_t us)
{
	snprintf(buf, len, "%llu.%03llu ms", (unsigned long long)(us / 1000),
		 (unsigned long long)(us % 1000));
}

/*
 * The transport the peer's next connection takes, as the link group part
 * found it, into lines and data.  false when a group is up but does not
 * answer: connections on it fail.
 */
static bool
control_check_transport(const struct control_check *ck, json_t *lines,
			json_t *data)
{
	const struct lgr_check *lc = &ck->lc;
	struct peer_info pi;
	char rtt[32], code[16];

	if (lc->rc == 0) {
		control_ms(rtt, sizeof(rtt), lc->rtt_us);
		json_array_append_new(
			lines,
			json_sprintf("transport: rdma (lgr %u link %u%s, "
				     "TEST_LINK round trip %s)",
				     (unsigned int)lc->lgr_id,
				     (unsigned int)lc->link_id,
				     lc->set_up ? ", set up now" : "", rtt));
		json_object_update_new(data,
				       json_pack("{s:s, s:i, s:i, s:I, s:b}",
						 "transport", "rdma", "lgr",
						 (int)lc->lgr_id, "link",
						 (int)lc->link_id, "rtt_us",
						 (json_int_t)lc->rtt_us,
						 "set_up", lc->set_up));
		return true;
	}
	json_array_append_new(
		lines, json_sprintf("transport: fallback (%s)", lc->error));
	json_object_update_new(data,
			       json_pack("{s:s, s:s}", "transport", "fallback",
					 "transport_reason", lc->error));
	if (lc->decline != 0) {
		snprintf(code, sizeof(code), "0x%08x", lc->decline);
		json_array_append_new(
			lines, json_sprintf("decline: %s %s by %s",
					    clc_decline_name(lc->decline), code,
					    lc->by_peer ? "the peer" : "us"));
		json_object_update_new(data,
				       json_pack("{s:s, s:b}", "decline",
						 clc_decline_name(lc->decline),
						 "by_peer", lc->by_peer));
	}
	peer_info(lc->peer, &pi);
	if (pi.backoff_left_ms > 0)
		json_array_append_new(
			lines,
			json_sprintf(
				"back-off: RDMA to %s is tried again in "
				"%llu s; connections take the fallback "
				"until then",
				lc->peer,
				(unsigned long long)(pi.backoff_left_ms + 999) /
					1000));
	json_object_set_new(data, "backoff_left_ms",
			    json_integer((json_int_t)pi.backoff_left_ms));
	/* a group that is there and does not answer is a failure */
	return lc->lgr_id == 0;
}

/* What the fallback part found of the key, in a word. */
static const char *
control_check_auth(const struct fallback_check *f, bool keyless)
{
	if (f->stage == FALLBACK_CHECK_CONNECT)
		return "not tried";
	if (f->stage == FALLBACK_CHECK_AUTH)
		return f->rc == -EACCES ? "failed" : "unknown";
	return keyless ? "no key" : "yes";
}

/*
 * The answer to a check that is done, into out: a line per stage (the
 * peer's port, its key, each export's target, the transport), ok when
 * every path a connection may take works; else the first failure is the
 * error, the lines its details.  A peer we have no rule to is reached
 * only by a link group (either side's): that is its whole check, as
 * before the fallback part.
 */
static void
control_check_peer_reply(const struct control_check *ck, struct evbuffer *out)
{
	const struct fallback_check *f = &ck->first;
	const char *peer = ck->lc.peer;
	const struct control_check_export *e;
	char when[32], addr[ADDR_STRLEN], msg[CONF_NAME_MAX * 2 + 256];
	json_t *lines, *data, *exports;
	bool keyless;
	int i;

	lines = json_array();
	data = json_pack("{s:s}", "peer", peer);
	exports = json_array();
	keyless = conf_peer_find(ck->conf, peer)->key_len == 0;
	msg[0] = '\0';
	addr_str(&conf_peer_find(ck->conf, peer)->addr, addr, sizeof(addr));
	if (ck->nexports == 0) {
		json_array_append_new(
			lines, json_sprintf("exports: none (no rule to %s: its "
					    "connections come here, ours never "
					    "go there)",
					    peer));
		json_object_set_new(data, "exports", exports);
		if (!control_check_transport(ck, lines, data) || ck->lc.rc != 0)
			snprintf(msg, sizeof(msg), "peer %s: %s", peer,
				 ck->lc.error);
		goto out;
	}
	if (f->stage == FALLBACK_CHECK_CONNECT) {
		snprintf(msg, sizeof(msg), "peer %s: unreachable: %s%s", peer,
			 f->error,
			 f->rc == -ECONNREFUSED ?
				 " (nothing listens there: is its daemon "
				 "stopped?)" :
			 f->rc == -ETIMEDOUT ?
				 " (no answer: is the host down or the "
				 "port filtered?)" :
				 "");
		json_array_append_new(
			lines, json_sprintf("reachable: no, %s", f->error));
		json_array_append_new(lines,
				      json_string("authenticated: not tried"));
	} else {
		control_ms(when, sizeof(when), f->connect_us);
		json_array_append_new(
			lines, json_sprintf("reachable: yes, %s answered in %s",
					    addr, when));
		if (f->stage == FALLBACK_CHECK_AUTH && f->rc == -EACCES) {
			snprintf(msg, sizeof(msg),
				 "peer %s: authentication failed: %s", peer,
				 f->error);
			json_array_append_new(
				lines, json_sprintf("authenticated: failed, %s",
						    f->error));
		} else if (f->stage == FALLBACK_CHECK_AUTH) {
			/* no word on the key: something else answers there,
			 * or the peer hangs or sheds us */
			snprintf(msg, sizeof(msg), "peer %s: no handshake: %s",
				 peer, f->error);
			json_array_append_new(
				lines,
				json_sprintf("authenticated: unknown, %s",
					     f->error));
		} else
			json_array_append_new(
				lines,
				json_string(keyless ? "authenticated: no key "
						      "(the peer is insecure)" :
						      "authenticated: yes, the "
						      "peer proved the key and "
						      "took our proof"));
	}
	json_object_update_new(
		data,
		json_pack("{s:b, s:I, s:s}", "reachable",
			  f->stage != FALLBACK_CHECK_CONNECT, "connect_us",
			  (json_int_t)f->connect_us, "authenticated",
			  control_check_auth(f, keyless)));
	for (i = 0; i < ck->nexports; i++) {
		e = &ck->exports[i];
		json_array_append_new(
			exports, json_pack("{s:s, s:s, s:s}", "rule", e->rule,
					   "export", e->export, "result",
					   !e->tried  ? "not tried" :
					   e->rc == 0 ? "ok" :
							e->error));
		if (!e->tried) {
			json_array_append_new(
				lines, json_sprintf("export %s (rule %s): not "
						    "tried",
						    e->export, e->rule));
			continue;
		}
		if (e->rc == 0) {
			json_array_append_new(
				lines, json_sprintf("export %s (rule %s): the "
						    "peer reached its target",
						    e->export, e->rule));
			continue;
		}
		json_array_append_new(
			lines, json_sprintf("export %s (rule %s): %s",
					    e->export, e->rule, e->error));
		if (msg[0] == '\0' && f->stage == FALLBACK_CHECK_EXPORT)
			snprintf(msg, sizeof(msg),
				 "peer %s: export %s (rule %s): %s", peer,
				 e->export, e->rule, e->error);
	}
	json_object_set_new(data, "exports", exports);
	if (f->stage == FALLBACK_CHECK_CONNECT)
		json_array_append_new(lines,
				      json_sprintf("transport: none (%s cannot "
						   "be reached)",
						   peer));
	else if (!control_check_transport(ck, lines, data) && msg[0] == '\0')
		snprintf(msg, sizeof(msg), "peer %s: %s", peer, ck->lc.error);
out:
	if (msg[0] != '\0') {
		json_decref(data);
		control_send_error(out, msg, lines);
		return;
	}
	json_object_set_new(data, "lines", lines);
	control_send_ok(out, data);
}

/*
 * The answer to `check smc` (ck->kc done), into out: a line per stage
 * (the connect, the option's echo, our PROPOSAL, its answer) and whether
 * connections from here could have SMC-R with it; ok only when it
 * ACCEPTs and they could.
 */
static void
control_check_smc_reply(const struct control_check *ck, struct evbuffer *out)
{
	const struct smcr_check *kc = &ck->kc;
	char who[ADDR_STRLEN], when[32], code[16], msg[ADDR_STRLEN + 256];
	enum smc_opt_why why;
	json_t *lines, *data;

	addr_str(&kc->to, who, sizeof(who));
	snprintf(code, sizeof(code), "0x%08x", kc->decline);
	why = smc_opt_ready(&ck->conf->smcr, &kc->to, false);
	lines = json_array();
	msg[0] = '\0';
	if (kc->result == SMCR_CHECK_UNREACHABLE) {
		json_array_append_new(
			lines, json_sprintf("reachable: no, %s", kc->error));
		snprintf(msg, sizeof(msg), "smc %s: unreachable: %s", who,
			 kc->error);
	} else {
		control_ms(when, sizeof(when), kc->connect_us);
		json_array_append_new(
			lines,
			json_sprintf("reachable: yes, answered in %s", when));
	}
	switch (kc->result) {
	case SMCR_CHECK_UNREACHABLE:
		break;
	case SMCR_CHECK_NO_OPTION:
		json_array_append_new(
			lines,
			json_sprintf("SMC-R option: not sent (%s)", kc->error));
		snprintf(msg, sizeof(msg),
			 "smc %s: cannot test SMC-R from here: %s", who,
			 kc->error);
		break;
	case SMCR_CHECK_PLAIN:
		json_array_append_new(lines,
				      json_string("SMC-R option: not echoed"));
		snprintf(msg, sizeof(msg), "smc %s: does not speak SMC-R: %s",
			 who, kc->error);
		break;
	case SMCR_CHECK_NOT_PROPOSED:
		json_array_append_new(lines,
				      json_string("SMC-R option: echoed"));
		json_array_append_new(
			lines,
			json_sprintf("PROPOSAL: not sent (%s); our "
				     "DECLINE %s %s instead",
				     kc->error, clc_decline_name(kc->decline),
				     code));
		snprintf(msg, sizeof(msg), "smc %s: %s", who, kc->error);
		break;
	default:
		json_array_append_new(lines,
				      json_string("SMC-R option: echoed"));
		json_array_append_new(lines,
				      json_string("PROPOSAL: sent (SMC-Rv2, "
						  "our EIDs, the RoCE GID of "
						  "our address)"));
		break;
	}
	if (kc->result == SMCR_CHECK_DECLINED) {
		json_array_append_new(
			lines, json_sprintf("answer: DECLINE %s %s (%s)",
					    clc_decline_name(kc->decline), code,
					    kc->error));
		snprintf(msg, sizeof(msg), "smc %s: declined: %s %s (%s)", who,
			 clc_decline_name(kc->decline), code, kc->error);
	} else if (kc->result == SMCR_CHECK_BROKEN) {
		json_array_append_new(
			lines, json_sprintf("answer: none (%s)", kc->error));
		snprintf(msg, sizeof(msg), "smc %s: %s", who, kc->error);
	} else if (kc->result == SMCR_CHECK_ACCEPTED) {
		json_array_append_new(
			lines,
			json_sprintf("answer: ACCEPT (%s); our DECLINE %s %s "
				     "ended it%s%s",
				     kc->first_contact ? "first contact" :
							 "into a group it has",
				     clc_decline_name(kc->decline), code,
				     kc->error[0] != '\0' ? ": " : "",
				     kc->error));
	}
	json_array_append_new(lines,
			      why == SMC_OPT_READY ?
				      json_string("here: SMC-R ready") :
				      json_sprintf("here: TCP only: %s (%s)",
						   smc_opt_why_text(why),
						   smc_opt_why_fix(why)));
	if (kc->result == SMCR_CHECK_ACCEPTED && why != SMC_OPT_READY)
		snprintf(msg, sizeof(msg),
			 "smc %s: it ACCEPTs SMC-R, but connections from here "
			 "go on as TCP: %s",
			 who, smc_opt_why_text(why));
	if (msg[0] != '\0') {
		control_send_error(out, msg, lines);
		return;
	}
	data = json_pack("{s:s, s:s, s:I, s:b, s:s, s:o}", "address", who,
			 "result", "accepted", "connect_us",
			 (json_int_t)kc->connect_us, "first_contact",
			 kc->first_contact, "decline",
			 clc_decline_name(kc->decline), "lines", lines);
	control_send_ok(out, data);
}

static void
control_check_reply(const struct control_check *ck, struct evbuffer *out)
{
	if (ck->smc)
		control_check_smc_reply(ck, out);
	else
		control_check_peer_reply(ck, out);
}

/* The next step of a check; its answer once it is done. */
static void
control_check_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct control_check *ck = arg;
	struct control_client *c = ck->client;
	void (*resume)(struct control_client *) = ck->resume;

	control_check_step(ck);
	if (!ck->done)
		return;
	/* the output drains, and control_write_cb goes on with the client */
	control_check_reply(ck, bufferevent_get_output(c->cc_bev));
	c->cc_check = NULL;
	control_check_free(ck);
	resume(c);
}

/*
 * `check NAME`: test each path the peer's connections take, as they
 * would take it, now: the fallback's (its port, its key, each export its
 * rules open: fallback_check_step) and the link group's (lgr_check_step,
 * on the worker that has an active group to it, else the first).  Nothing
 * it finds puts the peer on the back-off.  Answered when done, within
 * CONTROL_CHECK_TIMEOUT; until then the client's next requests wait, as
 * behind a listing.
 */
json_t *
control_cmd_check(struct control_req *req)
{
	const char *name =
		json_string_value(json_object_get(req->cr_args, "name"));
	struct control_client *c = req->cr_client;
	struct control_has has = {.peer = name};
	const struct conf_peer *peer;
	struct control_check *ck;
	int i;

	peer = conf_peer_find(control_conf, name);
	if (peer == NULL) {
		control_fail(req, "no peer \"%.64s\"", name);
		return NULL;
	}
	if (worker_count() == 0) {
		control_fail(req, "no worker to check peer %s from", name);
		return NULL;
	}
	ck = control_check_new();
	if (ck == NULL)
		return NULL;
	control_check_exports(ck, peer);
	ck->fc_done = ck->nexports == 0;
	lgr_check_init(&ck->lc, name, CONTROL_CHECK_TIMEOUT * 1000);
	ck->w = worker_get(0);
	for (i = 0; i < worker_count() && !has.found; i++) {
		worker_call(worker_get(i), control_has_cb, &has);
		if (has.found)
			ck->w = worker_get(i);
	}
	log_info("peer %s checked by uid %u pid %d", name,
		 (unsigned int)c->cc_uid, (int)c->cc_pid);
	return control_check_start(req, ck);
}

/*
 * Run check ck for req: at once without a socket (control_request), else
 * stepped by a timer, the client's next requests waiting behind it.
 */
static json_t *
control_check_start(struct control_req *req, struct control_check *ck)
{
	struct control_client *c = req->cr_client;
	struct timeval tv = {0, CONTROL_CHECK_POLL_MS * 1000};

	req->cr_sent = true;
	if (c->cc_bev == NULL) {
		/* without a socket (control_request): the answer now */
		for (;;) {
			control_check_step(ck);
			if (ck->done)
				break;
			usleep(CONTROL_CHECK_POLL_MS * 1000);
		}
		control_check_reply(ck, req->cr_out);
		control_check_free(ck);
		return NULL;
	}
	ck->client = c;
	ck->resume = req->cr_resume;
	ck->ev = event_new(control_base, -1, EV_PERSIST, control_check_timer_cb,
			   ck);
	if (ck->ev == NULL || evtimer_add(ck->ev, &tv) != 0) {
		control_check_free(ck);
		req->cr_sent = false;
		return NULL;
	}
	c->cc_check = ck;
	return NULL;
}

/*
 * `check smc ADDRESS`: a kernel SMC-R server probed now (smcr_check.c),
 * as a target_smc rule would reach it.  Answered when done, within the
 * connect's 5 s and the CLC's 6 s.
 */
json_t *
control_cmd_check_smc(struct control_req *req)
{
	const char *text =
		json_string_value(json_object_get(req->cr_args, "address"));
	struct control_client *c = req->cr_client;
	struct control_check *ck;
	struct addr to;

	if (addr_parse(text, &to) != 0) {
		control_fail(req,
			     "\"%.64s\" is no address: HOST:PORT, an IPv4 or "
			     "[IPv6] address and a port",
			     text);
		return NULL;
	}
	ck = control_check_new();
	if (ck == NULL)
		return NULL;
	ck->smc = true;
	smcr_check_init(&ck->kc, ck->conf, &to);
	log_info("kernel SMC-R server %s checked by uid %u pid %d", text,
		 (unsigned int)c->cc_uid, (int)c->cc_pid);
	return control_check_start(req, ck);
}

/* "a, b" of n strings, into buf; "none" for none. */
static void
control_join(char *buf, size_t len, char *const *s, int n)
{
	size_t used = 0;
	int i;

	snprintf(buf, len, "%s", n == 0 ? "none" : "");
	for (i = 0; i < n && used < len; i++) {
		snprintf(buf + used, len - used, "%s%s", i > 0 ? ", " : "",
			 s[i]);
		used = strlen(buf);
	}
}

/*
 * `check export NAME`: whether kernel SMC-R clients of the export's
 * smc_listen can have SMC-R with us, as smc_chk -S says of a server:
 * what smc_opt_ready knows (the option's program, kernel_smc's EIDs and
 * allow list, the address, the devices), each shown, with the fix of
 * what is missing.  Nothing is sent anywhere.
 */
json_t *
control_cmd_check_export(struct control_req *req)
{
	const char *name =
		json_string_value(json_object_get(req->cr_args, "name"));
	const struct conf_smcr *k = &control_conf->smcr;
	const struct conf_export *e;
	char where[ADDR_STRLEN], list[256], msg[ADDR_STRLEN + 256];
	enum smc_opt_why why;
	json_t *lines;

	e = conf_export_find(control_conf, name);
	if (e == NULL) {
		control_fail(req, "no export \"%.64s\"", name);
		return NULL;
	}
	if (e->smc_listen.len == 0) {
		control_fail(req,
			     "export %s has no smc_listen: only peer daemons "
			     "use it (check it from there: smcproxyctl check "
			     "%s)",
			     name, control_conf->name);
		return NULL;
	}
	addr_str(&e->smc_listen, where, sizeof(where));
	why = smc_opt_ready(k, &e->smc_listen, true);
	lines = json_array();
	json_array_append_new(lines, json_sprintf("smc_listen: %s", where));
	json_array_append_new(lines, json_sprintf("kernel_smc: %s",
						  k->enabled ? "on" : "off"));
	json_array_append_new(
		lines, json_sprintf("SMC-R option: %s", smc_opt_state()));
	control_join(list, sizeof(list), k->ueids, k->nueids);
	json_array_append_new(lines,
			      json_sprintf("kernel_smc.ueids: %s", list));
	control_join(list, sizeof(list), k->allow, k->nallow);
	json_array_append_new(lines,
			      json_sprintf("kernel_smc.allow: %s", list));
	json_array_append_new(
		lines, json_sprintf("RDMA devices: %d", ib_device_count()));
	if (why != SMC_OPT_READY) {
		json_array_append_new(
			lines, json_sprintf("fix: %s", smc_opt_why_fix(why)));
		snprintf(msg, sizeof(msg),
			 "export %s: kernel SMC-R clients at %s get TCP: %s",
			 name, where, smc_opt_why_text(why));
		control_send_error(req->cr_out, msg, lines);
		req->cr_sent = true;
		return NULL;
	}
	return control_done(json_pack("{s:s, s:s, s:b, s:o}", "export", name,
				      "smc_listen", where, "ready", true,
				      "lines", lines),
			    "export %s: SMC-R ready at %s", name, where);
}
