// SPDX-License-Identifier: BSD-2-Clause
/*
 * Transparent SMC-R's BPF programs (src/bpf/intercept.bpf.c) as the
 * daemon uses them: one instance per intercepting rule, loaded on the
 * main thread and attached to the rule's cgroup through BPF links that
 * only this process holds, so that a daemon killed or stopped leaves the
 * cgroup's connects as they were (fail open); a switch in the instance's
 * conf map turns it off before an orderly stop.  The rule's destinations
 * go into its trie, what the daemon learns of them into its cache, and
 * the original destination of an accepted connection comes out of
 * intercept_orig.  The instances in use are kept by rule name, for the
 * workers' accepts and what they learn.
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_BPF
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#endif
#include <jansson.h>
#include <linux/types.h>

#include "smcproxyd.h"
#include "intercept.h"

#define INTERCEPT_PROGS 5
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

struct intercept {
#ifdef HAVE_BPF
	struct bpf_object *obj;
	struct bpf_link *links[INTERCEPT_PROGS];
#endif
	int conf_fd, dst_fd, cache_fd, orig_fd, count_fd;
	struct intercept_conf conf;
};

#ifdef HAVE_BPF
static const char *const intercept_progs[INTERCEPT_PROGS] = {
	"intercept_connect4",	  "intercept_connect6",	    "intercept_sockops",
	"intercept_getpeername4", "intercept_getpeername6",
};
#endif

/*
 * Where the programs' object is: beside the SMC-R option's, the
 * configured one (kernel_smc.bpf_object) or else the installed one or
 * the one in the build tree, into path.
 */
static void
intercept_object(const struct conf *conf, char *path, size_t len)
{
	const char *opt = conf->smcr.bpf_object != NULL ?
				  conf->smcr.bpf_object :
				  smc_opt_default_object();
	const char *slash = strrchr(opt, '/');
	int n = slash == NULL ? 0 : (int)(slash - opt) + 1;

	snprintf(path, len, "%.*sintercept.bpf.o", n, opt);
}

/* Our 16-byte form of an address (IPv4 as IPv4-mapped) and its port. */
static int
intercept_addr_of(const struct sockaddr *sa, __u8 *b, __u16 *port)
{
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

	if (sa->sa_family == AF_INET) {
		memset(b, 0, 10);
		b[10] = b[11] = 0xff;
		memcpy(b + 12, &s4->sin_addr, 4);
		*port = ntohs(s4->sin_port);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		memcpy(b, &s6->sin6_addr, 16);
		*port = ntohs(s6->sin6_port);
		return 0;
	}
	return -EAFNOSUPPORT;
}

/* The destination key of address a. */
static int
intercept_key(const struct addr *a, struct intercept_addr *k)
{
	memset(k, 0, sizeof(*k));
	k->family = a->ss.ss_family;
	return intercept_addr_of((const struct sockaddr *)&a->ss, k->addr,
				 &k->port);
}

void
intercept_close(struct intercept *ic)
{
	if (ic == NULL)
		return;
#ifdef HAVE_BPF
	for (int i = 0; i < INTERCEPT_PROGS; i++)
		if (ic->links[i] != NULL)
			bpf_link__destroy(ic->links[i]);
	if (ic->obj != NULL)
		bpf_object__close(ic->obj);
#endif
	free(ic);
}

/*
 * Whether cgroup is a cgroup v2 below the root of its hierarchy (a
 * program there would take the whole host's connects), made when it is
 * not there yet (mkdir: 0 checks only): a service's cgroup is there
 * only while it runs, and systemd takes the one it finds.  0, or -1
 * with why.
 */
static int
intercept_cgroup_ok(const char *cgroup, bool mkdir_it, char *why, size_t len)
{
	char path[PATH_MAX], parent[PATH_MAX], *slash;
	struct statfs fs;

	snprintf(parent, sizeof(parent), "%s", cgroup);
	slash = strrchr(parent, '/');
	if (access(cgroup, F_OK) != 0 && slash != NULL && slash != parent)
		*slash = '\0'; /* to be made: its parent's hierarchy */
	if (statfs(parent, &fs) != 0 || fs.f_type != CGROUP2_SUPER_MAGIC) {
		snprintf(why, len, "%s is not in a cgroup v2 hierarchy",
			 cgroup);
		return -1;
	}
	if (mkdir_it && mkdir(cgroup, 0755) == 0)
		log_info("made the cgroup %s for intercept", cgroup);
	snprintf(path, sizeof(path), "%s/cgroup.type", cgroup);
	if (access(cgroup, F_OK) == 0 && access(path, F_OK) != 0) {
		snprintf(why, len,
			 "%s is the root of its cgroup hierarchy (every "
			 "process of the host): give a cgroup below it",
			 cgroup);
		return -1;
	}
	return 0;
}

/*
 * For smcproxyd -n: whether rule r's intercept would attach: root, its
 * cgroup a cgroup v2 below the root (warning when it is not there yet),
 * and the object at path one the kernel loads.  0, or -1 with why.
 */
int
intercept_check(const struct conf *conf, const struct conf_rule *r, char *why,
		size_t len)
{
#ifdef HAVE_BPF
	struct bpf_object *obj;
	char path[PATH_MAX];
	int rc;

	if (geteuid() != 0) {
		snprintf(why, len,
			 "not root: only root loads and attaches the intercept "
			 "programs");
		return -1;
	}
	if (intercept_cgroup_ok(r->intercept_cgroup, false, why, len) != 0)
		return -1;
	if (access(r->intercept_cgroup, F_OK) != 0)
		fprintf(stderr,
			"warning: rule %s: the cgroup %s is not there yet: "
			"the daemon makes it\n",
			r->name, r->intercept_cgroup);
	intercept_object(conf, path, sizeof(path));
	smc_opt_libbpf_quiet();
	obj = bpf_object__open_file(path, NULL);
	if (libbpf_get_error(obj)) {
		snprintf(why, len, "cannot open %s", path);
		return -1;
	}
	rc = bpf_object__load(obj);
	bpf_object__close(obj);
	if (rc != 0) {
		snprintf(why, len, "the kernel refuses %s: %s", path,
			 strerror(-rc));
		return -1;
	}
	return 0;
#else
	(void)conf;
	(void)r;
	snprintf(why, len,
		 "built without BPF support (configure found no clang or "
		 "libbpf)");
	return -1;
#endif
}

/*
 * Load the object at path and attach its programs to the cgroup v2
 * directory cgroup, switched off (intercept_set turns it on).  NULL with
 * the reason in why when it cannot.
 */
struct intercept *
intercept_open(const char *path, const char *cgroup, char *why, size_t len)
{
#ifdef HAVE_BPF
	struct intercept *ic;
	struct bpf_program *prog;
	int cg = -1, rc;

	ic = calloc(1, sizeof(*ic));
	if (ic == NULL) {
		snprintf(why, len, "out of memory");
		return NULL;
	}
	smc_opt_libbpf_quiet();
	ic->obj = bpf_object__open_file(path, NULL);
	if (libbpf_get_error(ic->obj)) {
		ic->obj = NULL;
		snprintf(why, len, "cannot open %s", path);
		goto fail;
	}
	rc = bpf_object__load(ic->obj);
	if (rc < 0) {
		snprintf(why, len, "the kernel refused %s: %s", path,
			 strerror(-rc));
		goto fail;
	}
	ic->conf_fd =
		bpf_object__find_map_fd_by_name(ic->obj, "intercept_conf");
	ic->dst_fd = bpf_object__find_map_fd_by_name(ic->obj, "intercept_dst");
	ic->cache_fd =
		bpf_object__find_map_fd_by_name(ic->obj, "intercept_cache");
	ic->orig_fd =
		bpf_object__find_map_fd_by_name(ic->obj, "intercept_orig");
	ic->count_fd =
		bpf_object__find_map_fd_by_name(ic->obj, "intercept_count");
	if (ic->conf_fd < 0 || ic->dst_fd < 0 || ic->cache_fd < 0 ||
	    ic->orig_fd < 0 || ic->count_fd < 0) {
		snprintf(why, len, "%s lacks the intercept maps", path);
		goto fail;
	}
	if (intercept_cgroup_ok(cgroup, true, why, len) != 0)
		goto fail;
	cg = open(cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg < 0) {
		snprintf(why, len, "cannot open the cgroup %s: %s", cgroup,
			 strerror(errno));
		goto fail;
	}
	for (int i = 0; i < INTERCEPT_PROGS; i++) {
		prog = bpf_object__find_program_by_name(ic->obj,
							intercept_progs[i]);
		if (prog == NULL) {
			snprintf(why, len, "%s lacks the program %s", path,
				 intercept_progs[i]);
			goto fail;
		}
		ic->links[i] = bpf_program__attach_cgroup(prog, cg);
		if (ic->links[i] == NULL) {
			snprintf(why, len, "cannot attach %s to %s: %s",
				 intercept_progs[i], cgroup, strerror(errno));
			goto fail;
		}
	}
	close(cg);
	return ic;
fail:
	if (cg >= 0)
		close(cg);
	intercept_close(ic);
	return NULL;
#else
	(void)path;
	(void)cgroup;
	snprintf(why, len,
		 "built without BPF support (configure found no clang or "
		 "libbpf)");
	return NULL;
#endif
}

/*
 * Turn the instance on (connects to its destinations go to our
 * listeners on 127.0.0.1:port4 and [::1]:port6, 0 for none) or off
 * (they go direct).  This process's own connects are never taken.
 * 0 or -errno.
 */
int
intercept_set(struct intercept *ic, bool on, uint16_t port4, uint16_t port6)
{
#ifdef HAVE_BPF
	__u32 zero = 0;

	ic->conf.on = on;
	ic->conf.tgid = (__u32)getpid();
	ic->conf.port4 = port4;
	ic->conf.port6 = port6;
	return bpf_map_update_elem(ic->conf_fd, &zero, &ic->conf, BPF_ANY) ?
		       -errno :
		       0;
#else
	(void)ic;
	(void)on;
	(void)port4;
	(void)port6;
	return -EOPNOTSUPP;
#endif
}

/* Take the connects to network net, port (0: any).  0 or -errno. */
int
intercept_add(struct intercept *ic, const struct addr_net *net, uint16_t port)
{
#ifdef HAVE_BPF
	struct intercept_dst_key k;
	__u32 one = 1;

	memset(&k, 0, sizeof(k));
	k.prefixlen = 32 + (__u32)net->prefix;
	k.port = port;
	memcpy(k.addr, net->bytes, sizeof(k.addr));
	return bpf_map_update_elem(ic->dst_fd, &k, &one, BPF_ANY) ? -errno : 0;
#else
	(void)ic;
	(void)net;
	(void)port;
	return -EOPNOTSUPP;
#endif
}

/*
 * The original destination of fd, a connection accepted on our
 * listener that the programs took there, into *orig; its record goes.
 * 0, or -ENOENT when none was taken (a program that connected to the
 * listener itself), or -errno.
 */
int
intercept_original(struct intercept *ic, int fd, struct addr *orig)
{
#ifdef HAVE_BPF
	struct sockaddr_storage l, r;
	socklen_t sl = sizeof(l), rl = sizeof(r);
	struct intercept_tuple t;
	struct intercept_addr o;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&orig->ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&orig->ss;

	if (getsockname(fd, (struct sockaddr *)&l, &sl) != 0 ||
	    getpeername(fd, (struct sockaddr *)&r, &rl) != 0)
		return -errno;
	memset(&t, 0, sizeof(t));
	if (intercept_addr_of((struct sockaddr *)&r, t.saddr, &t.sport) ||
	    intercept_addr_of((struct sockaddr *)&l, t.daddr, &t.dport))
		return -EAFNOSUPPORT;
	if (bpf_map_lookup_and_delete_elem(ic->orig_fd, &t, &o) != 0)
		return -errno;
	memset(orig, 0, sizeof(*orig));
	if (o.family == AF_INET6 &&
	    !IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)o.addr)) {
		s6->sin6_family = AF_INET6;
		memcpy(&s6->sin6_addr, o.addr, 16);
		s6->sin6_port = htons(o.port);
		orig->len = sizeof(*s6);
	} else {
		s4->sin_family = AF_INET;
		memcpy(&s4->sin_addr, o.addr + 12, 4);
		s4->sin_port = htons(o.port);
		orig->len = sizeof(*s4);
	}
	return 0;
#else
	(void)ic;
	(void)fd;
	(void)orig;
	return -EOPNOTSUPP;
#endif
}

/*
 * Remember what destination dst spoke (INTERCEPT_SMC, INTERCEPT_TCP)
 * for ttl seconds: the programs send the connects to a TCP one direct
 * until then.  0 or -errno.
 */
int
intercept_learn(struct intercept *ic, const struct addr *dst, unsigned int how,
		int ttl)
{
#ifdef HAVE_BPF
	struct intercept_addr k;
	struct intercept_seen v;
	struct timespec ts;

	if (intercept_key(dst, &k) != 0)
		return -EAFNOSUPPORT;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	memset(&v, 0, sizeof(v));
	v.how = how;
	v.expires = (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec +
		    (__u64)ttl * 1000000000ull;
	return bpf_map_update_elem(ic->cache_fd, &k, &v, BPF_ANY) ? -errno : 0;
#else
	(void)ic;
	(void)dst;
	(void)how;
	(void)ttl;
	return -EOPNOTSUPP;
#endif
}

/* The programs' counts, summed over CPUs, into *sum: 0 or -errno. */
int
intercept_counts(struct intercept *ic, struct intercept_count *sum)
{
#ifdef HAVE_BPF
	struct intercept_count *per;
	__u32 zero = 0;
	int ncpu = libbpf_num_possible_cpus(), rc = 0;

	memset(sum, 0, sizeof(*sum));
	if (ncpu <= 0)
		return ncpu < 0 ? ncpu : -EINVAL;
	per = calloc((size_t)ncpu, sizeof(*per));
	if (per == NULL)
		return -ENOMEM;
	if (bpf_map_lookup_elem(ic->count_fd, &zero, per) != 0)
		rc = -errno;
	for (int i = 0; rc == 0 && i < ncpu; i++) {
		sum->taken += per[i].taken;
		sum->bypassed += per[i].bypassed;
		sum->off += per[i].off;
	}
	free(per);
	return rc;
#else
	(void)ic;
	memset(sum, 0, sizeof(*sum));
	return -EOPNOTSUPP;
#endif
}

/*
 * "ADDR[/LEN]:PORT" (IPv6 in brackets, PORT 1-65535 or *, 0 for *) into
 * *net and *port: 0 or -EINVAL.
 */
int
intercept_dst_parse(const char *s, struct addr_net *net, uint16_t *port)
{
	char host[INET6_ADDRSTRLEN + 8], *end;
	const char *colon = strrchr(s, ':');
	size_t n;
	long p;

	if (colon == NULL)
		return -EINVAL;
	n = (size_t)(colon - s);
	if (s[0] == '[') {
		if (n < 2 || s[n - 1] != ']')
			return -EINVAL;
		s++;
		n -= 2;
	} else if (memchr(s, ':', n) != NULL) {
		return -EINVAL; /* IPv6 without brackets */
	}
	if (n == 0 || n >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, n);
	host[n] = '\0';
	if (addr_net_parse(host, net) != 0)
		return -EINVAL;
	if (strcmp(colon + 1, "*") == 0) {
		*port = 0;
		return 0;
	}
	errno = 0;
	p = strtol(colon + 1, &end, 10);
	if (errno != 0 || end == colon + 1 || *end != '\0' || p < 1 ||
	    p > 65535)
		return -EINVAL;
	*port = (uint16_t)p;
	return 0;
}

/* An intercepting rule's instance, kept by the rule's name. */
struct intercept_rule {
	SLIST_ENTRY(intercept_rule) entry;
	char name[CONF_NAME_MAX + 1];
	struct intercept *ic;
	int ttl;
	uint64_t smc, tcp; /* destinations learned (intercept_lock) */
};

static pthread_mutex_t intercept_lock = PTHREAD_MUTEX_INITIALIZER;
SLIST_HEAD(intercept_rules, intercept_rule);
static struct intercept_rules intercept_rules =
	SLIST_HEAD_INITIALIZER(intercept_rules);

/* The listener ports of r's listen: 127.0.0.1 or [::1] only. */
static void
intercept_ports(const struct conf_rule *r, uint16_t *p4, uint16_t *p6)
{
	const struct sockaddr_in *s4 = (const void *)&r->listen.ss;
	const struct sockaddr_in6 *s6 = (const void *)&r->listen.ss;

	*p4 = *p6 = 0;
	if (r->listen.ss.ss_family == AF_INET)
		*p4 = ntohs(s4->sin_port);
	else if (r->listen.ss.ss_family == AF_INET6)
		*p6 = ntohs(s6->sin6_port);
}

/* A new instance for rule r, its destinations in, switched on. */
static struct intercept *
intercept_rule_open(const struct conf *conf, const struct conf_rule *r,
		    char *why, size_t len)
{
	struct intercept *ic;
	struct addr_net net;
	uint16_t port, p4, p6;
	char path[PATH_MAX];
	int rc = 0;

	intercept_object(conf, path, sizeof(path));
	ic = intercept_open(path, r->intercept_cgroup, why, len);
	if (ic == NULL)
		return NULL;
	for (int i = 0; i < r->nintercept && rc == 0; i++)
		if (intercept_dst_parse(r->intercept[i], &net, &port) == 0)
			rc = intercept_add(ic, &net, port);
	intercept_ports(r, &p4, &p6);
	if (rc == 0)
		rc = intercept_set(ic, true, p4, p6);
	if (rc != 0) {
		snprintf(why, len, "cannot fill its maps: %s", strerror(-rc));
		intercept_close(ic);
		return NULL;
	}
	return ic;
}

/*
 * Take the connects of every intercepting rule of conf (at start, and
 * after a reload: each rule's instance made anew, what it learned
 * forgotten; a rule gone, its instance gone).  0, or -1 when one could
 * not be loaded (logged; its cgroup's connects go direct).
 */
int
intercept_apply(const struct conf *conf)
{
	struct intercept_rules next = SLIST_HEAD_INITIALIZER(next);
	struct intercept_rule *e;
	const struct conf_rule *r;
	char why[256];
	int rc = 0;

	for (int i = 0; i < conf->nrules; i++) {
		r = &conf->rules[i];
		if (r->nintercept == 0)
			continue;
		e = calloc(1, sizeof(*e));
		if (e == NULL || (e->ic = intercept_rule_open(
					  conf, r, why, sizeof(why))) == NULL) {
			log_warnx("rule %s: intercept not on (%s): the "
				  "connects of %s go direct",
				  r->name, e == NULL ? "out of memory" : why,
				  r->intercept_cgroup);
			free(e);
			rc = -1;
			continue;
		}
		snprintf(e->name, sizeof(e->name), "%s", r->name);
		e->ttl = r->intercept_ttl;
		SLIST_INSERT_HEAD(&next, e, entry);
		log_info("rule %s: intercepting the connects of %s", r->name,
			 r->intercept_cgroup);
	}
	pthread_mutex_lock(&intercept_lock);
	while ((e = SLIST_FIRST(&intercept_rules)) != NULL) {
		SLIST_REMOVE_HEAD(&intercept_rules, entry);
		intercept_close(e->ic);
		free(e);
	}
	intercept_rules = next;
	pthread_mutex_unlock(&intercept_lock);
	return rc;
}

/* Stop taking connects (their cgroups' go direct) and unload. */
void
intercept_shutdown(void)
{
	struct conf empty;

	memset(&empty, 0, sizeof(empty));
	(void)intercept_apply(&empty);
}

/* The entry of rule name; intercept_lock held. */
static struct intercept_rule *
intercept_rule_get(const char *name)
{
	struct intercept_rule *e;

	SLIST_FOREACH(e, &intercept_rules, entry)
		if (strcmp(e->name, name) == 0)
			return e;
	return NULL;
}

/*
 * s, just accepted on an intercepting rule's listener: its original
 * destination into s->origin[1].  0, or -ENOENT when the programs did
 * not take it there (a program that connected to the listener itself).
 */
int
intercept_accepted(struct session *s)
{
	struct intercept_rule *e;
	int rc = -ENOENT;

	pthread_mutex_lock(&intercept_lock);
	e = intercept_rule_get(s->rule->name);
	if (e != NULL)
		rc = intercept_original(e->ic, s->fd[0], &s->origin[1]);
	pthread_mutex_unlock(&intercept_lock);
	return rc;
}

/*
 * s, a connection of an intercepting rule, goes on over SMC-R (smc) or
 * as TCP: its destination is remembered so, for the rule's
 * intercept_ttl; the next connects to a TCP one go direct.
 */
void
intercept_learned(const struct session *s, bool smc)
{
	struct intercept_rule *e;
	char buf[ADDR_STRLEN];
	int rc = 0;

	if (s->rule == NULL || s->rule->nintercept == 0)
		return;
	pthread_mutex_lock(&intercept_lock);
	e = intercept_rule_get(s->rule->name);
	if (e != NULL) {
		rc = intercept_learn(e->ic, &s->addr[1],
				     smc ? INTERCEPT_SMC : INTERCEPT_TCP,
				     e->ttl);
		if (smc)
			e->smc++;
		else
			e->tcp++;
	}
	pthread_mutex_unlock(&intercept_lock);
	if (rc < 0) {
		errno = -rc;
		log_warn("rule %s: cannot remember %s", s->rule->name,
			 addr_str(&s->addr[1], buf, sizeof(buf)));
	}
}

/* CLOCK_MONOTONIC in ns, the programs' bpf_ktime_get_ns(). */
static uint64_t
intercept_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Append to dsts the destinations e's programs hold, learned. */
static int
intercept_dsts_json(const struct intercept_rule *e, json_t *dsts)
{
#ifdef HAVE_BPF
	struct intercept_addr k, *prev = NULL;
	struct intercept_seen v;
	struct addr a;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&a.ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&a.ss;
	char buf[ADDR_STRLEN];
	uint64_t now = intercept_now_ns();

	while (bpf_map_get_next_key(e->ic->cache_fd, prev, &k) == 0) {
		prev = &k;
		if (bpf_map_lookup_elem(e->ic->cache_fd, &k, &v) != 0)
			continue;
		memset(&a, 0, sizeof(a));
		if (IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)k.addr)) {
			s4->sin_family = AF_INET;
			memcpy(&s4->sin_addr, k.addr + 12, 4);
			s4->sin_port = htons(k.port);
		} else {
			s6->sin6_family = AF_INET6;
			memcpy(&s6->sin6_addr, k.addr, 16);
			s6->sin6_port = htons(k.port);
		}
		if (json_array_append_new(
			    dsts,
			    json_pack(
				    "{s:s, s:s, s:s, s:I}", "rule", e->name,
				    "destination",
				    addr_str(&a, buf, sizeof(buf)), "speaks",
				    v.how == INTERCEPT_SMC ? "smc-r" : "tcp",
				    "expires_s",
				    (json_int_t)(v.expires > now ?
							 (v.expires - now) /
								 1000000000ull :
							 0))))
			return -ENOMEM;
	}
#else
	(void)e;
	(void)dsts;
#endif
	return 0;
}

/*
 * For `show intercept`: {"rules": [...], "destinations": [...]}, each
 * intercepting rule's counts (the programs' and what was learned) and
 * the destinations learned with their expiry.  NULL without memory.
 */
json_t *
intercept_json(const struct conf *conf)
{
	json_t *rules = json_array(), *dsts = json_array(), *o;
	struct intercept_rule *e;
	struct intercept_count n;
	int rc = rules == NULL || dsts == NULL ? -ENOMEM : 0;

	pthread_mutex_lock(&intercept_lock);
	for (int i = 0; rc == 0 && i < conf->nrules; i++) {
		const struct conf_rule *r = &conf->rules[i];

		if (r->nintercept == 0)
			continue;
		e = intercept_rule_get(r->name);
		if (e == NULL || intercept_counts(e->ic, &n) != 0)
			memset(&n, 0, sizeof(n));
		o = json_pack("{s:s, s:s, s:b, s:I, s:I, s:I, s:I, s:I}",
			      "rule", r->name, "cgroup", r->intercept_cgroup,
			      "attached", e != NULL, "taken",
			      (json_int_t)n.taken, "smc",
			      (json_int_t)(e != NULL ? e->smc : 0), "tcp",
			      (json_int_t)(e != NULL ? e->tcp : 0), "bypassed",
			      (json_int_t)n.bypassed, "off", (json_int_t)n.off);
		if (json_array_append_new(rules, o) != 0)
			rc = -ENOMEM;
		else if (e != NULL)
			rc = intercept_dsts_json(e, dsts);
	}
	pthread_mutex_unlock(&intercept_lock);
	if (rc != 0) {
		json_decref(rules);
		json_decref(dsts);
		return NULL;
	}
	return json_pack("{s:o, s:o}", "rules", rules, "destinations", dsts);
}
