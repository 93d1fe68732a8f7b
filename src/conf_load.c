// SPDX-License-Identifier: BSD-2-Clause
/*
 * A whole configuration file: read by libconfig, its sections parsed by
 * conf.c's tables, then the checks no single section can make (a rule's
 * peer and export or target_smc, listeners that would catch each other's
 * connections, export names that fit CONN_OPEN).  Every problem in a file
 * is reported in one pass, sorted by position, as "file:line: key:
 * message"; a config with any problem is never returned, so the daemon
 * never runs on a half-read file.  On reload, the new config is compared
 * with the running one key by key (conf_reload_check).  Above conf.c,
 * which never calls here.
 */
#include <sys/stat.h>
#include <netinet/in.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libconfig.h>

#include "smcproxyd.h"
#include "conf.h"
#include "llc_wire.h"

/* Whether a is 127.0.0.1 or ::1, where the intercept programs send. */
static bool
conf_loopback_port(const struct addr *a)
{
	const struct sockaddr_in *sin = (const void *)&a->ss;
	const struct sockaddr_in6 *sin6 = (const void *)&a->ss;

	if (a->ss.ss_family == AF_INET)
		return sin->sin_addr.s_addr == htonl(INADDR_LOOPBACK);
	return a->ss.ss_family == AF_INET6 &&
	       IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr);
}

/*
 * A peer's route keys left at -1 take rdma's values; its source must be
 * of its address's family.
 */
static void
conf_check_peer_routes(struct conf_parse *p)
{
	struct conf *conf = p->conf;
	const struct conf_route *r = &conf->rdma.route;
	const struct conf_section *sec = &conf_sections[CONF_SECT_PEERS];
	const struct conf_loc *locs = p->src->keys[CONF_SECT_PEERS];
	const size_t nk = sec->nkeys;
	const size_t si = conf_key_index(sec->keys, nk, "source");
	const size_t ni = conf_key_index(sec->keys, nk, "name");
	struct conf_route *pr;
	struct conf_peer *peer;
	char path[CONF_PATH_LEN];
	int i;

	if (conf->smcr.enabled) {
		peer = &conf->smcr.peer;
		snprintf(peer->name, sizeof(peer->name), "%s", CONF_SMCR_PEER);
		peer->insecure = peer->any_source = true;
		peer->max_lgrs = CONF_SMCR_MAX_LGRS;
		peer->buffer_share = 100;
		peer->route = *r;
	}
	for (i = 0; i < conf->npeers; i++) {
		peer = &conf->peers[i];
		pr = &peer->route;
		/* kernel peers' groups and counters go under that name */
		if (strcmp(peer->name, CONF_SMCR_PEER) == 0) {
			snprintf(path, sizeof(path), "peers[%d].name", i);
			conf_err(p, locs[(size_t)i * nk + ni], path,
				 "the name %s is kept for kernel SMC-R peers "
				 "(kernel_smc); choose another",
				 CONF_SMCR_PEER);
		}
		if (pr->dscp < 0)
			pr->dscp = r->dscp;
		if (pr->priority < 0)
			pr->priority = r->priority;
		if (pr->qp_timeout < 0)
			pr->qp_timeout = r->qp_timeout;
		if (pr->retry_count < 0)
			pr->retry_count = r->retry_count;
		if (pr->rnr_retry < 0)
			pr->rnr_retry = r->rnr_retry;
		if (peer->source.len == 0)
			continue;
		snprintf(path, sizeof(path), "peers[%d].source", i);
		if (conf->rdma.gid_index >= 0)
			conf_err(p, locs[(size_t)i * nk + si], path,
				 "peer %s: rdma.gid_index %d fixes the GID, "
				 "whatever the source; set it to -1",
				 peer->name, conf->rdma.gid_index);
		else if (peer->addr.len != 0 &&
			 conf_addr_is_v4(&peer->source) !=
				 conf_addr_is_v4(&peer->addr))
			conf_err(p, locs[(size_t)i * nk + si], path,
				 "peer %s: an IPv%c source for an IPv%c "
				 "address",
				 peer->name,
				 conf_addr_is_v4(&peer->source) ? '4' : '6',
				 conf_addr_is_v4(&peer->addr) ? '4' : '6');
	}
}

/*
 * An export is named in CONN_OPEN in LLC_EXPORT_MAX bytes: a longer name,
 * which the fallback would carry, is refused rather than send every
 * connection of it silently over TCP.
 */
static void
conf_check_export_names(struct conf_parse *p, enum conf_sect_id id,
			const char *key, const char *sect, int n, size_t size,
			size_t name_off)
{
	const struct conf_section *sec = &conf_sections[id];
	const size_t ki = conf_key_index(sec->keys, sec->nkeys, key);
	char *arr = *(char **)((char *)p->conf + sec->arr_off);
	char path[CONF_PATH_LEN], q[CONF_QUOTE_LEN];
	const char *name;
	size_t len;
	int i;

	for (i = 0; i < n; i++) {
		name = arr + (size_t)i * size + name_off;
		len = strlen(name);
		if (len <= LLC_EXPORT_MAX)
			continue;
		snprintf(path, sizeof(path), "%s[%d].%s", sect, i, key);
		conf_err(p, p->src->keys[id][(size_t)i * sec->nkeys + ki], path,
			 "export name %s is %zu bytes; over RDMA an export is "
			 "named in at most %d (CONN_OPEN): use a shorter name",
			 conf_quote(name, q, sizeof(q)), len, LLC_EXPORT_MAX);
	}
}

/*
 * Each export is reachable: by peers (peers and a peer_listen section)
 * or by kernel SMC-R clients (smc_listen and kernel_smc), on an
 * smc_listen address no other listener of ours catches.
 */
static void
conf_check_exports(struct conf_parse *p)
{
	const struct conf *conf = p->conf;
	const struct conf_section *sec = &conf_sections[CONF_SECT_EXPORTS];
	const struct conf_loc *elocs = p->src->keys[CONF_SECT_EXPORTS];
	const size_t sl = conf_key_index(sec->keys, sec->nkeys, "smc_listen");
	const size_t pi = conf_key_index(sec->keys, sec->nkeys, "peers");
	const struct conf_export *e;
	char path[CONF_PATH_LEN], a[ADDR_STRLEN];
	int i, j;

	for (i = 0; i < conf->nexports; i++) {
		e = &conf->exports[i];
		if (e->npeers > 0 && !conf->has_peer_listen) {
			snprintf(path, sizeof(path), "exports[%d].peers", i);
			conf_err(p, elocs[(size_t)i * sec->nkeys + pi], path,
				 "peers cannot reach export %s without a "
				 "peer_listen section",
				 e->name);
		}
		/* an empty peers list has had its message */
		if (e->npeers == 0 && e->smc_listen.len == 0 &&
		    elocs[(size_t)i * sec->nkeys + pi].line == 0) {
			snprintf(path, sizeof(path), "exports[%d]", i);
			conf_err(p,
				 (struct conf_loc){
					 elocs[(size_t)i * sec->nkeys].file,
					 e->line},
				 path,
				 "export %s has neither peers nor smc_listen: "
				 "nobody can reach it",
				 e->name);
		}
		if (e->smc_listen.len == 0)
			continue;
		snprintf(path, sizeof(path), "exports[%d].smc_listen", i);
		if (!conf->smcr.enabled) {
			conf_err(p, elocs[(size_t)i * sec->nkeys + sl], path,
				 "needs a kernel_smc section (the SMC-R "
				 "dialect is off without it)");
			continue;
		}
		addr_str(&e->smc_listen, a, sizeof(a));
		/* Linux proposes SMC-Rv2 over IPv4 only; on an IPv6 socket
		 * an IPv4 client's SYN got the option echoed and then was
		 * taken for plain TCP, hanging the client 6 s (issue 43) */
		if (e->smc_listen.ss.ss_family != AF_INET)
			conf_err(p, elocs[(size_t)i * sec->nkeys + sl], path,
				 "%s is IPv6: kernel SMC-R clients connect "
				 "over IPv4 only; use 0.0.0.0:PORT or an IPv4 "
				 "address",
				 a);
		if (conf->has_peer_listen &&
		    conf_addr_overlap(&e->smc_listen, &conf->peer_listen))
			conf_err(p, elocs[(size_t)i * sec->nkeys + sl], path,
				 "%s overlaps peer_listen.address", a);
		for (j = 0; j < conf->nrules; j++)
			if (conf_addr_overlap(&e->smc_listen,
					      &conf->rules[j].listen))
				conf_err(p, elocs[(size_t)i * sec->nkeys + sl],
					 path, "%s overlaps rules[%d].listen",
					 a, j);
		for (j = 0; j < i; j++)
			if (conf_addr_overlap(&e->smc_listen,
					      &conf->exports[j].smc_listen))
				conf_err(p, elocs[(size_t)i * sec->nkeys + sl],
					 path,
					 "%s overlaps exports[%d].smc_listen",
					 a, j);
	}
}

/*
 * A rule goes to an export at a peer (peer and export) or to a kernel
 * SMC-R server (target_smc, with kernel_smc on), never both.
 */
static void
conf_check_rule_targets(struct conf_parse *p)
{
	const struct conf *conf = p->conf;
	const struct conf_section *sec = &conf_sections[CONF_SECT_RULES];
	const struct conf_loc *rlocs = p->src->keys[CONF_SECT_RULES];
	const size_t ti = conf_key_index(sec->keys, sec->nkeys, "target_smc");
	const size_t pi = conf_key_index(sec->keys, sec->nkeys, "peer");
	const size_t ei = conf_key_index(sec->keys, sec->nkeys, "export");
	const struct conf_loc *l;
	const struct conf_rule *r;
	struct conf_loc at;
	char path[CONF_PATH_LEN];
	int i;

	for (i = 0; i < conf->nrules; i++) {
		r = &conf->rules[i];
		l = rlocs + (size_t)i * sec->nkeys;
		/* not a group: it has had its message */
		if (r->name[0] == '\0')
			continue;
		at = (struct conf_loc){l[0].file, r->line};
		snprintf(path, sizeof(path), "rules[%d]", i);
		if ((r->nintercept > 0) != (r->intercept_cgroup != NULL) ||
		    (r->nintercept > 0) != conf_rule_original(r))
			conf_err(p, at, path,
				 "rule %s: intercept, intercept_cgroup and "
				 "target_smc = \"original\" go together",
				 r->name);
		else if (r->nintercept > 0 && !conf_loopback_port(&r->listen))
			conf_err(p, at, path,
				 "rule %s: intercept takes connects to listen: "
				 "make it 127.0.0.1:PORT or [::1]:PORT",
				 r->name);
		else if (r->nintercept > 0 && r->accept_proxy)
			conf_err(
				p, at, path,
				"rule %s: accept_proxy and intercept do not go "
				"together: the connects intercept takes come "
				"from this host's programs, with no PROXY "
				"header",
				r->name);
		if (r->target_smc.len != 0) {
			if (r->peer != NULL || r->export[0] != '\0')
				conf_err(p, at, path,
					 "rule %s: target_smc, or peer and "
					 "export, not both",
					 r->name);
			else if (!conf->smcr.enabled)
				conf_err(p, rlocs[(size_t)i * sec->nkeys + ti],
					 path,
					 "rule %s: target_smc needs a "
					 "kernel_smc "
					 "section (the SMC-R dialect is off "
					 "without it)",
					 r->name);
		} else if (l[ti].line == 0 &&
			   (l[pi].line == 0 || l[ei].line == 0)) {
			/* a peer or export set but wrong has had its message */
			conf_err(p, at, path,
				 "rule %s: needs peer and export (or "
				 "target_smc)",
				 r->name);
		}
	}
}

/* Checks across sections, once every section is in. */
static void
conf_check_all(struct conf_parse *p)
{
	struct conf *conf = p->conf;
	const struct conf_section *sec = &conf_sections[CONF_SECT_RULES];
	const struct conf_loc *rlocs = p->src->keys[CONF_SECT_RULES];
	const size_t nk = sec->nkeys;
	const size_t li = conf_key_index(sec->keys, nk, "listen");
	char path[CONF_PATH_LEN], a[ADDR_STRLEN];
	int i;

	conf_check_peer_routes(p);
	conf_check_export_names(p, CONF_SECT_EXPORTS, "name", "exports",
				conf->nexports, sizeof(struct conf_export),
				offsetof(struct conf_export, name));
	conf_check_export_names(p, CONF_SECT_RULES, "export", "rules",
				conf->nrules, sizeof(struct conf_rule),
				offsetof(struct conf_rule, export));
	conf_check_exports(p);
	conf_check_rule_targets(p);
	for (i = 0; conf->has_peer_listen && i < conf->nrules; i++) {
		if (!conf_addr_overlap(&conf->rules[i].listen,
				       &conf->peer_listen))
			continue;
		snprintf(path, sizeof(path), "rules[%d].listen", i);
		conf_err(p, rlocs[(size_t)i * nk + li], path,
			 "%s overlaps peer_listen.address at line %d",
			 addr_str(&conf->rules[i].listen, a, sizeof(a)),
			 p->src->keys[CONF_SECT_LISTEN][0].line);
	}
}

/* Turn a libconfig parse (ok or not) into a config; NULL after any error. */
static struct conf *
conf_build(config_t *cfg, bool read_ok, const char *name, const char *dir,
	   FILE *errors)
{
	struct conf_parse p = {0};
	struct conf *conf;
	struct conf_loc loc;
	FILE *warnings = NULL;
	size_t wlen = 0;

	conf = calloc(1, sizeof(*conf));
	if (conf == NULL)
		goto nomem;
	conf->path = strdup(name);
	conf->src = calloc(1, sizeof(*conf->src));
	if (conf->path == NULL || conf->src == NULL)
		goto nomem;
	conf->src->files = calloc(1, sizeof(char *));
	if (conf->src->files == NULL)
		goto nomem;
	conf->src->files[0] = strdup(name);
	if (conf->src->files[0] == NULL)
		goto nomem;
	conf->src->nfiles = 1;
	p.conf = conf;
	p.src = conf->src;
	p.dir = dir;
	if (!read_ok) {
		loc.file = conf_file_intern(p.src, config_error_file(cfg));
		loc.line = config_error_line(cfg);
		conf_err(&p, loc, "syntax", "%s", config_error_text(cfg));
	} else {
		conf_parse_root(&p, config_root_setting(cfg));
		conf_check_all(&p);
	}
	warnings = open_memstream(&conf->warnings, &wlen);
	if (warnings == NULL) {
		conf_flush(&p, errors, NULL);
		goto nomem;
	}
	conf_flush(&p, errors, warnings);
	fclose(warnings);
	if (p.nerrors == 0)
		return conf;
	conf_free(conf);
	return NULL;
nomem:
	if (errors != NULL)
		fprintf(errors, "%s: out of memory\n", name);
	conf_free(conf);
	return NULL;
}

/*
 * Read the config file at path.  Every problem goes to errors (may be
 * NULL) as "file:line: key: message", sorted by position.  Returns the
 * resolved config, or NULL after any problem.
 */
struct conf *
conf_load(const char *path, FILE *errors)
{
	struct conf *conf = NULL;
	char *dir = NULL, *slash;
	FILE *fp = NULL;
	struct stat st;
	config_t cfg;
	bool ok;

	fp = fopen(path, "re");
	if (fp == NULL) {
		if (errors != NULL)
			fprintf(errors, "%s: %s\n", path, strerror(errno));
		return NULL;
	}
	/* libconfig's scanner exits the process on a read error (EISDIR) */
	if (fstat(fileno(fp), &st) == 0 && S_ISDIR(st.st_mode)) {
		if (errors != NULL)
			fprintf(errors, "%s: is a directory, not a file\n",
				path);
		goto out;
	}
	slash = strrchr(path, '/');
	dir = slash == NULL ? strdup(".") :
			      strndup(path, (size_t)(slash - path));
	if (dir == NULL) {
		if (errors != NULL)
			fprintf(errors, "%s: out of memory\n", path);
		goto out;
	}
	if (dir[0] == '\0') {
		free(dir);
		dir = strdup("/");
		if (dir == NULL)
			goto out;
	}
	config_init(&cfg);
	/* @include "x" means next to the config, whatever the cwd */
	config_set_include_dir(&cfg, dir);
	ok = config_read(&cfg, fp) == CONFIG_TRUE;
	conf = conf_build(&cfg, ok, path, dir, errors);
	config_destroy(&cfg);
out:
	free(dir);
	fclose(fp);
	return conf;
}

/*
 * As conf_load(), from the text in memory; name stands for the file in
 * messages.  Key files are still read from their paths (relative ones from
 * the cwd).  For tests, fuzzing and configs not in a file.
 */
struct conf *
conf_load_string(const char *text, const char *name, FILE *errors)
{
	struct conf *conf;
	config_t cfg;
	bool ok;

	config_init(&cfg);
	ok = config_read_string(&cfg, text) == CONFIG_TRUE;
	conf = conf_build(&cfg, ok, name, NULL, errors);
	config_destroy(&cfg);
	return conf;
}

static bool
conf_field_equal(const struct conf_key *k, const void *a, const void *b)
{
	char *const *na, *const *nb;
	size_t i;

	switch (k->type) {
	case CONF_T_BOOL:
		return *(const bool *)a == *(const bool *)b;
	case CONF_T_PATH:
		a = *(char *const *)a;
		b = *(char *const *)b;
		return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
	case CONF_T_NAME:
		return strcmp(a, b) == 0;
	case CONF_T_ADDR:
	case CONF_T_HOST:
		return addr_equal(a, b);
	case CONF_T_NAMES:
		na = *(char **const *)a;
		nb = *(char **const *)b;
		for (i = 0;
		     na != NULL && nb != NULL && na[i] != NULL && nb[i] != NULL;
		     i++)
			if (strcmp(na[i], nb[i]) != 0)
				return false;
		return (na == NULL || na[i] == NULL) &&
		       (nb == NULL || nb[i] == NULL);
	case CONF_T_PEER:
		return false;
	default:
		return *(const int *)a == *(const int *)b;
	}
}

/*
 * Compare a freshly loaded config with the running one: every key that a
 * reload cannot apply but that changed is an error, reported against new's
 * file and line.  Returns 0, or -EINVAL when new needs a restart.
 */
int
conf_reload_check(const struct conf *old, const struct conf *new, FILE *errors)
{
	const struct conf_section *sec;
	const char *file;
	struct conf_loc loc;
	size_t k;
	int id, bad = 0;

	for (id = 0; id < CONF_NSECT; id++) {
		sec = &conf_sections[id];
		if (sec->list)
			continue;
		for (k = 0; k < sec->nkeys; k++) {
			const struct conf_key *key = &sec->keys[k];
			const char *a = (const char *)old + sec->obj_off;
			const char *b = (const char *)new + sec->obj_off;

			if ((key->flags & CONF_RELOAD) ||
			    conf_field_equal(key, a + key->off, b + key->off))
				continue;
			bad++;
			loc = (struct conf_loc){0, 0};
			if (new->src != NULL &&new->src->keys[id] != NULL)
				loc = new->src->keys[id][k];
			if (loc.line == 0 && new->src != NULL)
				loc = new->src->sect[id];
			file = new->src != NULL	 ? new->src->files[loc.file] :
			       new->path != NULL ? new->path :
						   "?";
			if (errors != NULL)
				fprintf(errors,
					"%s:%d: %s.%s: cannot be changed by "
					"reload; restart the daemon\n",
					file, loc.line, sec->name, key->name);
		}
	}
	return bad ? -EINVAL : 0;
}
