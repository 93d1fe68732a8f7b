// SPDX-License-Identifier: BSD-2-Clause
/*
 * The control socket's stats and show commands (control.c's table): the
 * statistics, the rules and exports, the peers and kernel SMC-R hosts, the
 * link groups and links, the intercept rules, and the connections (show
 * conns, show smc), which are gathered CONTROL_CHUNK at a time per
 * worker_call() and rendered CONTROL_LISTING_OUT ahead of what the client
 * has taken.  The connection filter and the walk of the sessions serve
 * kill conns too.  Calls control_reply.c only, of the control files.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "smcproxyd.h"
#include "clc_wire.h"
#include "control_int.h"

/* Why peers fall back to TCP until the RDMA transport lands. */
#define CONTROL_FALLBACK_REASON "no link group tried yet"

/******** sessions ********/

struct control_chunk {
	uint64_t below; /* the id where the last chunk stopped */
	json_t *conns;
	bool more;
};

/*
 * On @w's thread: the next CONTROL_CHUNK sessions of @w as JSON objects
 * (session_json_add), those whose ids are below the cursor.  A worker's
 * list is newest first (session_new() numbers sessions in increasing order
 * and puts each at the head, on the worker's thread), so ids fall along it
 * and skipping to the first one below the cursor finds the place again
 * however the list changed in between: sessions opened since are left
 * out, none is listed twice.  Skipping costs a pointer walk, no JSON.
 */
static void
control_chunk_cb(struct worker *w, void *arg)
{
	struct control_chunk *ch = arg;
	struct session *s;
	int n;

	for (s = worker_sessions(w); s != NULL && session_id(s) >= ch->below;
	     s = session_next(s))
		;
	for (n = 0; s != NULL && n < CONTROL_CHUNK; s = session_next(s), n++) {
		session_json_add(s, ch->conns);
		ch->below = session_id(s);
	}
	ch->more = s != NULL;
}

/*
 * Hand the sessions of every worker to @fn as arrays of JSON objects, at
 * most CONTROL_CHUNK at a time, each array gathered by one worker_call():
 * what is done with them (dumping, counting) runs on this thread, and no
 * worker stops serving its connections for a whole listing.
 * Return: 0, -ENOMEM, or the first negative return of @fn.
 */
int
control_sessions_foreach(int (*fn)(const json_t *conns, void *arg), void *arg)
{
	struct control_chunk ch;
	int k, rc;

	for (k = 0; k < worker_count(); k++) {
		ch.below = UINT64_MAX;
		do {
			ch.conns = json_array();
			if (ch.conns == NULL)
				return -ENOMEM;
			ch.more = false;
			worker_call(worker_get(k), control_chunk_cb, &ch);
			rc = fn(ch.conns, arg);
			json_decref(ch.conns);
			if (rc < 0)
				return rc;
		} while (ch.more);
	}
	return 0;
}

/* Whether statistic @name is in @section: its name or a prefix of words. */
static bool
control_in_section(const char *name, const char *section)
{
	size_t n = strlen(section);

	return strncmp(name, section, n) == 0 &&
	       (name[n] == '\0' || name[n] == '_');
}

/*
 * Keep of @stats only the statistics of @section.  Return: how many;
 * @sections has the sections there are (the first words of the names,
 * "conns, tx, ..."), for the error when none.
 */
static size_t
control_stats_section(json_t *stats, const char *section, char *sections,
		      size_t len)
{
	char seen[1024] = ",", word[64];
	size_t at = 0, klen;
	const char *key;
	json_t *v;
	void *tmp;

	sections[0] = '\0';
	json_object_foreach_safe(stats, tmp, key, v) {
		klen = strcspn(key, "_");
		/* seen is ",conns,tx,": each word with its commas */
		snprintf(word, sizeof(word), ",%.*s,", (int)klen, key);
		if (strstr(seen, word) == NULL &&
		    strlen(seen) + strlen(word) < sizeof(seen)) {
			strcat(seen, word + 1);
			if (at < len)
				at += (size_t)snprintf(
					sections + at, len - at, "%s%.*s",
					at > 0 ? ", " : "", (int)klen, key);
		}
		if (!control_in_section(key, section))
			json_object_del(stats, key);
	}
	return json_object_size(stats);
}

json_t *
control_cmd_stats(struct control_req *req)
{
	const char *section =
		json_string_value(json_object_get(req->cr_args, "section"));
	struct stats st, total;
	json_t *cur, *tot;
	char sections[1024];
	int64_t since;

	stats_snapshot(&st);
	/* what Prometheus wants: counters that only a restart sets back */
	stats_sum(&total);
	since = stats_since_reset();
	cur = stats_json(&st);
	tot = stats_json(&total);
	if (section != NULL && cur != NULL && tot != NULL &&
	    control_stats_section(cur, section, sections, sizeof(sections)) ==
		    0) {
		json_decref(cur);
		json_decref(tot);
		control_fail(req,
			     "no statistics in section \"%.32s\" (sections: "
			     "%s)",
			     section, sections);
		return NULL;
	}
	if (section != NULL && tot != NULL)
		control_stats_section(tot, section, sections, sizeof(sections));
	return json_pack("{s:i, s:I, s:f, s:I, s:o, s:o, s:o}", "workers",
			 worker_count(), "uptime_s",
			 (json_int_t)control_uptime(), "start_time",
			 control_start_time, "since_reset_s",
			 (json_int_t)(since >= 0 ? since : control_uptime()),
			 "stats", cur, "totals", tot, "tallies", tally_json());
}

json_t *
control_cmd_stats_reset(struct control_req *req)
{
	stats_reset();
	control_admin(req, MONITOR_STATS_RESET, LOG_NOWHERE,
		      "statistics reset");
	return control_done(json_object(), "statistics reset: counters "
					   "restart from zero");
}

/*
 * Add to @o (a rule's or an export's) its @kind and, where kernel SMC-R
 * peers use it (@a: its target_smc or smc_listen; len 0: none), whether
 * they can have SMC-R.  Return: @o, or NULL (freed) out of memory.
 */
static json_t *
control_smc_json(json_t *o, const char *kind, const struct addr *a, bool listen)
{
	char status[160];
	enum smc_opt_why why;
	bool ready;

	if (o == NULL || json_object_set_new(o, "kind", json_string(kind)))
		goto fail;
	if (a->len == 0)
		return o;
	why = smc_opt_ready(&control_conf->smcr, a, listen);
	ready = why == SMC_OPT_READY;
	snprintf(status, sizeof(status), "%s%s",
		 ready ? "SMC-R ready" : "TCP only: ", smc_opt_why_text(why));
	if (json_object_set_new(o, listen ? "smc_listen" : "target_smc",
				control_addr(a)) ||
	    json_object_set_new(o, "smc_ready", json_boolean(ready)) ||
	    json_object_set_new(o, "smc_status", control_text(status)))
		goto fail;
	return o;

fail:
	json_decref(o);
	return NULL;
}

static json_t *
control_rule_json(const struct conf_rule *r)
{
	json_t *o;

	o = json_pack("{s:s, s:o, s:s?, s:s, s:i, s:I, s:b, s:b}", "name",
		      r->name, "listen", control_addr(&r->listen), "peer",
		      r->peer != NULL ? r->peer->name : NULL, "export",
		      r->export, "idle_timeout_s", r->idle_timeout, "conns",
		      (json_int_t)tally_conns(TALLY_RULE, r->name), "enabled",
		      worker_rule_enabled(r->name), "accepting",
		      worker_rule_accepting(r));
	return control_smc_json(o,
				r->target_smc.len != 0 ? "target_smc" : "peer",
				&r->target_smc, false);
}

static json_t *
control_export_json(const struct conf_export *e)
{
	json_t *peers;
	int i;

	peers = json_array();
	for (i = 0; i < e->npeers; i++)
		json_array_append_new(peers, json_string(e->peers[i]));
	return control_smc_json(
		json_pack("{s:s, s:o, s:o, s:i, s:I}", "name", e->name,
			  "target", control_addr(&e->target), "peers", peers,
			  "connect_timeout_s", e->connect_timeout, "conns",
			  (json_int_t)tally_conns(TALLY_EXPORT, e->name)),
		e->smc_listen.len != 0 ? "smc_listen" : "peers", &e->smc_listen,
		true);
}

json_t *
control_cmd_rules(struct control_req *req)
{
	const struct conf *conf = control_conf;
	json_t *rules, *exports, *data;
	int i;

	rules = json_array();
	exports = json_array();
	data = json_pack("{s:o, s:o}", "rules", rules, "exports", exports);
	if (data == NULL)
		goto nomem;
	for (i = 0; i < conf->nrules; i++)
		if (json_array_append_new(rules,
					  control_rule_json(&conf->rules[i])))
			goto nomem;
	for (i = 0; i < conf->nexports; i++)
		if (json_array_append_new(
			    exports, control_export_json(&conf->exports[i])))
			goto nomem;
	return data;

nomem:
	json_decref(data);
	control_fail(req, "out of memory");
	return NULL;
}

/*
 * One peer: how it is reached now (rdma while an active link group reaches
 * it, else fallback) and why it last fell back, with SMC's decline code;
 * whether it answered the last try, and the last error and when.
 */
static json_t *
control_peer_json(const struct conf_peer *p)
{
	struct peer_info info;
	char code[16], at[32] = "", source[INET6_ADDRSTRLEN] = "";
	const char *name;
	struct tm tm;
	json_t *o, *route;

	peer_info(p->name, &info);
	snprintf(code, sizeof(code), "0x%08x", info.reason);
	name = info.reason ? clc_decline_name(info.reason) : "";
	if (info.error_at != 0 && gmtime_r(&info.error_at, &tm) != NULL)
		strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (p->source.len != 0 &&
	    !addr_host(&p->source, source, sizeof(source)))
		source[0] = '\0';
	o = json_pack(
		"{s:s, s:o, s:s, s:s, s:s, s:s, s:s, s:b, s:I, s:i,"
		" s:I, s:o, s:s, s:s, s:s, s:o, s:b}",
		"name", p->name, "address", control_addr(&p->addr), "auth",
		p->insecure ? "insecure" : "psk", "mode",
		info.rdma ? "rdma" : "fallback", "fallback_reason",
		info.rdma   ? "" :
		info.reason ? (info.by_peer ? "declined by the peer" :
					      "declined by us") :
			      CONTROL_FALLBACK_REASON,
		"decline_code", code, "decline_name", name, "declined_by_peer",
		info.by_peer, "backoff_left_ms",
		(json_int_t)info.backoff_left_ms, "lgrs", info.lgrs, "conns",
		(json_int_t)tally_conns(TALLY_PEER, p->name), "reachable",
		info.reachable < 0 ? json_null() : json_boolean(info.reachable),
		"last_error", info.error, "last_error_code", info.error_code,
		"last_error_at", at, "last_error_age_s",
		info.error_at != 0 ?
			json_integer((json_int_t)(info.error_age_ms / 1000)) :
			json_null(),
		"draining", info.draining);
	/* how its link groups travel: routed RoCE v2 */
	route = json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:i}", "device",
			  p->device, "source", source, "dscp", p->route.dscp,
			  "priority", p->route.priority, "qp_timeout",
			  p->route.qp_timeout, "retry_count",
			  p->route.retry_count, "rnr_retry",
			  p->route.rnr_retry);
	if (o == NULL || route == NULL || json_object_update(o, route) != 0) {
		json_decref(o);
		o = NULL;
	}
	json_decref(route);
	return o;
}

/*
 * A kernel SMC-R host in show peers: khost.c's record of it, and its
 * standard groups on every worker, with the use of its budget on the
 * fullest worker (kernel_smc's per-host limits hold per worker).
 */
struct control_khost {
	struct khost_info info;
	int lgrs, links, conns_rdma;	/* all workers */
	int w_lgrs, w_pending, w_conns; /* the worker being walked */
	int max_lgrs, max_pending, max_conns;
	/* registered memory: all workers, this one, the fullest one */
	uint64_t memory, w_memory, max_memory;
};

struct control_khosts {
	struct control_khost *h;
	int n, cap;
};

/* The entry of @host, added if need be; NULL out of memory. */
static struct control_khost *
control_khost_get(struct control_khosts *kh, const struct addr *host)
{
	struct control_khost *h;
	int i;

	for (i = 0; i < kh->n; i++)
		if (addr_same_host(&kh->h[i].info.host, host))
			return &kh->h[i];
	if (kh->n == kh->cap) {
		h = reallocarray(kh->h, (size_t)kh->cap * 2 + 16, sizeof(*h));
		if (h == NULL)
			return NULL;
		kh->h = h;
		kh->cap = kh->cap * 2 + 16;
	}
	h = &kh->h[kh->n++];
	memset(h, 0, sizeof(*h));
	h->info.host = *host;
	return h;
}

/* One standard group (lgr_smcr_foreach), on its worker's thread. */
static void
control_khost_lgr(const struct addr *host, bool up, int conns, int links,
		  void *arg)
{
	struct control_khost *h = control_khost_get(arg, host);

	if (h == NULL)
		return;
	h->lgrs++;
	h->links += links;
	h->conns_rdma += conns;
	h->w_lgrs++;
	h->w_pending += !up;
	h->w_conns += conns;
}

/* One host's registered memory (session_rdma_host_memory), likewise. */
static void
control_khost_mem(const struct addr *host, size_t bytes, void *arg)
{
	struct control_khost *h = control_khost_get(arg, host);

	if (h == NULL)
		return;
	h->memory += bytes;
	h->w_memory += bytes;
}

static void
control_khosts_cb(struct worker *w, void *arg)
{
	lgr_smcr_foreach(worker_lgr(w), control_khost_lgr, arg);
	session_rdma_host_memory(w, control_khost_mem, arg);
}

static json_t *
control_khost_json(const struct control_khost *h, const struct conf_smcr *k)
{
	char host[ADDR_STRLEN] = "", code[16], at[32] = "";
	const struct khost_info *in = &h->info;
	const uint64_t limit = session_rdma_host_limit(control_conf);
	const uint64_t conn = (uint64_t)control_conf->rdma.sndbuf +
			      (uint64_t)control_conf->rdma.rmb;
	const char *full;
	struct tm tm;
	bool limited, mem_full;

	addr_host(&in->host, host, sizeof(host));
	snprintf(code, sizeof(code), "0x%08x", in->decline);
	if (in->decline != 0 && gmtime_r(&in->decline_at, &tm) != NULL)
		strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", &tm);
	/* one table serves every worker (worker_auth) */
	limited = worker_count() > 0 &&
		  auth_rate_limited(worker_auth(worker_get(0)), &in->host,
				    now_ms());
	/* which budget refuses a new group now, in lgr_smcr_budget's order,
	 * then its memory: no room for one more connection's buffers */
	mem_full = h->max_memory + conn > limit;
	full = h->max_conns >= k->max_conns_per_host	 ? "conns" :
	       h->max_lgrs >= k->max_lgrs_per_host	 ? "lgrs" :
	       h->max_pending >= k->max_pending_per_host ? "pending" :
	       mem_full					 ? "memory" :
							   "";
	return json_pack(
		"{s:s, s:i, s:i, s:I, s:i, s:I, s:s, s:s, s:b, s:s, s:o,"
		" s:b, s:i, s:i, s:i, s:i, s:i, s:i, s:s, s:I, s:I, s:I}",
		"host", host, "lgrs", h->lgrs, "links", h->links, "conns",
		(json_int_t)in->open, "conns_rdma", h->conns_rdma,
		"conns_total", (json_int_t)in->total, "decline_code", code,
		"decline_name",
		in->decline != 0 ? clc_decline_name(in->decline) : "",
		"declined_by_peer", in->by_peer, "decline_at", at,
		"decline_age_s",
		in->decline != 0 ? json_integer((json_int_t)(time(NULL) -
							     in->decline_at)) :
				   json_null(),
		"rate_limited", limited, "budget_pending", h->max_pending,
		"max_pending_per_host", k->max_pending_per_host, "budget_lgrs",
		h->max_lgrs, "max_lgrs_per_host", k->max_lgrs_per_host,
		"budget_conns", h->max_conns, "max_conns_per_host",
		k->max_conns_per_host, "budget_full", full, "memory",
		(json_int_t)h->memory, "budget_memory",
		(json_int_t)h->max_memory, "memory_per_host",
		(json_int_t)limit);
}

/*
 * The kernel SMC-R hosts: those khost.c saw (a connection or a DECLINE),
 * and any other that a standard group is with.  The groups are walked on
 * each worker (one worker_call each, as show lgrs); the connections are
 * counted as they open and end, not walked.
 */
static json_t *
control_khosts_json(void)
{
	struct control_khosts kh = {NULL, 0, KHOST_MAX};
	struct khost_info *info;
	struct control_khost *h;
	json_t *arr;
	int i, j;

	kh.h = calloc(KHOST_MAX, sizeof(*kh.h));
	info = calloc(KHOST_MAX, sizeof(*info));
	arr = json_array();
	if (kh.h == NULL || info == NULL || arr == NULL)
		goto fail;
	kh.n = khost_list(info, KHOST_MAX);
	for (i = 0; i < kh.n; i++)
		kh.h[i].info = info[i];
	/* without kernel_smc no group is standard: a scrape walks nothing */
	for (i = 0; control_conf->smcr.enabled && i < worker_count(); i++) {
		for (j = 0; j < kh.n; j++) {
			kh.h[j].w_lgrs = kh.h[j].w_pending = kh.h[j].w_conns =
				0;
			kh.h[j].w_memory = 0;
		}
		worker_call(worker_get(i), control_khosts_cb, &kh);
		for (j = 0; j < kh.n; j++) {
			h = &kh.h[j];
			if (h->w_lgrs > h->max_lgrs)
				h->max_lgrs = h->w_lgrs;
			if (h->w_pending > h->max_pending)
				h->max_pending = h->w_pending;
			if (h->w_conns > h->max_conns)
				h->max_conns = h->w_conns;
			if (h->w_memory > h->max_memory)
				h->max_memory = h->w_memory;
		}
	}
	for (i = 0; i < kh.n; i++)
		if (json_array_append_new(
			    arr, control_khost_json(&kh.h[i],
						    &control_conf->smcr)) != 0)
			goto fail;
	free(info);
	free(kh.h);
	return arr;

fail:
	free(info);
	free(kh.h);
	json_decref(arr);
	return NULL;
}

json_t *
control_cmd_peers(struct control_req *req)
{
	const struct conf *conf = control_conf;
	json_t *peers;
	int i;

	peers = json_array();
	if (peers == NULL)
		goto nomem;
	for (i = 0; i < conf->npeers; i++)
		if (json_array_append_new(peers,
					  control_peer_json(&conf->peers[i])))
			goto nomem;
	return json_pack("{s:o, s:o}", "peers", peers, "kernel_hosts",
			 control_khosts_json());

nomem:
	json_decref(peers);
	control_fail(req, "out of memory");
	return NULL;
}

struct control_lgr_walk {
	json_t *lgrs, *links;
};

static void
control_lgr_walk(struct worker *w, void *arg)
{
	struct control_lgr_walk *walk = arg;

	lgr_worker_json(w, walk->lgrs, walk->links);
}

/* Link groups and their links, gathered on each worker's own thread. */
static json_t *
control_lgrs_all(struct control_req *req, const char *want)
{
	struct control_lgr_walk walk;
	json_t *out;
	int i;

	walk.lgrs = json_array();
	walk.links = json_array();
	if (walk.lgrs == NULL || walk.links == NULL) {
		json_decref(walk.lgrs);
		json_decref(walk.links);
		control_fail(req, "out of memory");
		return NULL;
	}
	for (i = 0; i < worker_count(); i++)
		worker_call(worker_get(i), control_lgr_walk, &walk);
	if (strcmp(want, "lgrs") == 0) {
		out = json_pack("{s:o}", "lgrs", walk.lgrs);
		json_decref(walk.links);
	} else {
		out = json_pack("{s:o}", "links", walk.links);
		json_decref(walk.lgrs);
	}
	return out;
}

json_t *
control_cmd_lgrs(struct control_req *req)
{
	return control_lgrs_all(req, "lgrs");
}

json_t *
control_cmd_links(struct control_req *req)
{
	return control_lgrs_all(req, "links");
}

json_t *
control_cmd_intercept(struct control_req *req)
{
	json_t *o = intercept_json(control_conf);

	if (o == NULL)
		control_fail(req, "out of memory");
	return o;
}

/*
 * The filter in req's arguments; 0, or -EINVAL after control_fail.  The
 * states and transports are checked so a typo is an error, not an empty
 * list.
 */
int
control_filter_parse(struct control_req *req, struct control_filter *f,
		     bool need_one)
{
	const json_t *age = json_object_get(req->cr_args, "age");
	const char *transport, *dialect;
	enum session_state st;

	f->rule = json_string_value(json_object_get(req->cr_args, "rule"));
	f->peer = json_string_value(json_object_get(req->cr_args, "peer"));
	f->state = json_string_value(json_object_get(req->cr_args, "state"));
	transport =
		json_string_value(json_object_get(req->cr_args, "transport"));
	dialect = json_string_value(json_object_get(req->cr_args, "dialect"));
	f->age = -1;
	if (age != NULL)
		f->age = json_is_integer(age) ?
				 json_integer_value(age) :
				 strtoll(json_string_value(age), NULL, 10);
	/* a closed session is gone from the list: not a state to ask for */
	for (st = 0; f->state != NULL && st < SESSION_CLOSED; st++)
		if (strcmp(f->state, session_state_name(st)) == 0)
			break;
	if (f->state != NULL && st == SESSION_CLOSED) {
		control_fail(req,
			     "unknown state \"%.32s\" (want connect_peer, "
			     "hello, handshake, connect_target, rdma_wait, "
			     "rdma_open, relay or resuming)",
			     f->state);
		return -EINVAL;
	}
	/* tcp: a kernel peer's, fallback: a native peer's; either is mode
	 * fallback, and matched so, as before there was tcp */
	f->mode = transport;
	if (transport != NULL && strcmp(transport, "tcp") == 0)
		f->mode = "fallback";
	if (f->mode != NULL && strcmp(f->mode, "rdma") != 0 &&
	    strcmp(f->mode, "fallback") != 0) {
		control_fail(req,
			     "unknown transport \"%.32s\" (want rdma, tcp "
			     "or fallback)",
			     transport);
		return -EINVAL;
	}
	/* pair: the native dialect, as the issues call it */
	f->dialect = dialect;
	if (dialect != NULL && strcmp(dialect, "pair") == 0)
		f->dialect = "native";
	if (f->dialect != NULL && strcmp(f->dialect, "native") != 0 &&
	    strcmp(f->dialect, "smc-r") != 0) {
		control_fail(req,
			     "unknown dialect \"%.32s\" (want native, pair "
			     "or smc-r)",
			     dialect);
		return -EINVAL;
	}
	if (need_one && json_object_size(req->cr_args) == 0) {
		control_fail(req,
			     "\"%s\" needs at least one of rule, peer, "
			     "state, transport, dialect, age",
			     req->cr_cmd->cm_name);
		return -EINVAL;
	}
	return 0;
}

static bool
control_member_is(const json_t *s, const char *key, const char *want)
{
	const char *v = json_string_value(json_object_get(s, key));

	return want == NULL || (v != NULL && strcmp(v, want) == 0);
}

/* Whether connection s (as session_json_add() describes it) matches f. */
bool
control_filter_match(const struct control_filter *f, const json_t *s)
{
	return control_member_is(s, "rule", f->rule) &&
	       control_member_is(s, "peer", f->peer) &&
	       control_member_is(s, "state", f->state) &&
	       control_member_is(s, "mode", f->mode) &&
	       control_member_is(s, "dialect", f->dialect) &&
	       (f->age < 0 || json_number_value(json_object_get(s, "age_s")) >=
				      (double)f->age);
}

/*
 * A show conns answer being rendered: where its walk stands (the worker,
 * and the id below which its next chunk starts) and how many it listed.
 */
struct control_listing {
	struct control_filter filter;
	json_t *args; /* held: the filter's strings are in it */
	int worker;
	struct control_chunk ch;
	json_int_t count;
};

void
control_listing_free(struct control_listing *l)
{
	if (l == NULL)
		return;
	json_decref(l->args);
	free(l);
}

/*
 * Render the next chunks of @l into @out until it holds @room bytes or the
 * listing is done, and then its end.  Out of memory half way, the reply
 * ends there, one valid line whose count says how many it holds.
 * Return: true when the listing is done (the caller frees it).
 */
bool
control_listing_more(struct control_listing *l, struct evbuffer *out,
		     size_t room)
{
	const json_t *s;
	size_t i;

	while (l->worker < worker_count() && evbuffer_get_length(out) < room) {
		l->ch.conns = json_array();
		if (l->ch.conns == NULL) {
			l->worker = worker_count();
			break;
		}
		l->ch.more = false;
		worker_call(worker_get(l->worker), control_chunk_cb, &l->ch);
		json_array_foreach(l->ch.conns, i, s) {
			if (!control_filter_match(&l->filter, s))
				continue;
			if (l->count++ > 0)
				evbuffer_add(out, ",", 1);
			control_dump(out, s);
		}
		json_decref(l->ch.conns);
		if (!l->ch.more) {
			l->worker++;
			l->ch.below = UINT64_MAX;
		}
	}
	if (l->worker < worker_count())
		return false;
	evbuffer_add_printf(out, "],\"count\":%lld}}\n", (long long)l->count);
	return true;
}

/*
 * Streamed: the reply is rendered CONTROL_LISTING_OUT bytes ahead of what
 * the client has taken (control_write_cb renders more), so only
 * CONTROL_CHUNK sessions are held as JSON at a time, no buffer bounds the
 * answer, and a client that does not read makes the daemon walk no
 * further.  Until it is done, the client's next requests wait.
 */
json_t *
control_cmd_conns(struct control_req *req)
{
	struct control_client *c = req->cr_client;
	struct control_listing *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return NULL;
	l->args = json_incref(req->cr_args);
	if (control_filter_parse(req, &l->filter, false) < 0) {
		control_listing_free(l);
		return NULL;
	}
	l->ch.below = UINT64_MAX;
	evbuffer_add_printf(req->cr_out,
			    "{\"v\":%d,\"ok\":true,\"data\":{\"conns\":[",
			    CONTROL_VERSION);
	req->cr_sent = true;
	/* without a socket (control_request) the whole answer at once */
	if (!control_listing_more(l, req->cr_out,
				  c->cc_bev != NULL ? CONTROL_LISTING_OUT :
						      SIZE_MAX)) {
		c->cc_listing = l;
		return NULL;
	}
	control_listing_free(l);
	return NULL;
}

/*
 * `show smc`: show conns of the kernel SMC-R peers' dialect, each with its
 * peer's address and, over RDMA, its group and link (smcproxyctl's
 * smcss-like table).
 */
json_t *
control_cmd_smc(struct control_req *req)
{
	const char *d =
		json_string_value(json_object_get(req->cr_args, "dialect"));

	if (d != NULL && strcmp(d, "smc-r") != 0) {
		control_fail(req,
			     "show smc lists the SMC-R dialect only; show "
			     "conns dialect %.32s lists the others",
			     d);
		return NULL;
	}
	if (json_object_set_new(req->cr_args, "dialect",
				json_string("smc-r")) != 0)
		return NULL;
	return control_cmd_conns(req);
}
