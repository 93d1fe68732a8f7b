// SPDX-License-Identifier: BSD-2-Clause
/*
 * The SMC-R TCP option's BPF program (src/bpf/smc_opt.bpf.c) as the
 * daemon uses it: loaded and attached to the cgroup v2 the daemon runs in
 * when it may (root outside systemd), or, under systemd, loaded and
 * pinned by smcproxyd-bpf.service (smcproxyd --pin-bpf) and attached to
 * the service by its unit (BPFProgram=), the daemon opening the pinned
 * maps; its maps written and read through the sockets we mark.  A Linux SMC-R client sends its CLC PROPOSAL only
 * when our SYN-ACK echoed its option; without the program, smc_listen
 * serves as plain TCP and says why (smc_opt_state).
 *
 * Loaded on the main thread before any worker listens; the workers only
 * read the two map descriptors afterwards.  The attachment is a BPF link
 * that ends with the process, so a killed daemon leaves nothing behind.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <netinet/in.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_BPF
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#endif
#include <linux/types.h>

#include "smcproxyd.h"
#include "smc_opt.h"

static struct {
#ifdef HAVE_BPF
	struct bpf_object *obj;
	struct bpf_link *link;
#endif
	int mark_fd;
	int echoed_fd;
	int listen_fd;
	char state[160]; /* "attached to CGROUP", or why not */
} smc_opt = {.mark_fd = -1,
	     .echoed_fd = -1,
	     .listen_fd = -1,
	     .state = "kernel_smc is off"};

/* "attached to /sys/fs/cgroup/...", or why the program is not there. */
const char *
smc_opt_state(void)
{
	return smc_opt.state;
}

bool
smc_opt_attached(void)
{
	return smc_opt.mark_fd >= 0;
}

/* Mark socket fd (SMC_OPT_LISTEN before listen()) in map_fd: 0 or -errno. */
int
smc_opt_map_mark(int map_fd, int fd, unsigned int mark)
{
#ifdef HAVE_BPF
	__u32 v = mark;

	return bpf_map_update_elem(map_fd, &fd, &v, BPF_ANY) ? -errno : 0;
#else
	return -EOPNOTSUPP;
#endif
}

/*
 * Whether the SYN-ACK of accepted IPv4 socket fd echoed the option (the
 * client then owes us a PROPOSAL): 1 or 0, or -errno.  forget: remove the
 * record, so that a later connection on the same 4-tuple is judged anew.
 */
int
smc_opt_map_echoed(int map_fd, int fd, bool forget)
{
#ifdef HAVE_BPF
	struct sockaddr_in l, r;
	socklen_t sl = sizeof(l);
	struct smc_opt_tuple t;
	__u32 v;

	if (getsockname(fd, (struct sockaddr *)&l, &sl))
		return -errno;
	sl = sizeof(r);
	if (getpeername(fd, (struct sockaddr *)&r, &sl))
		return -errno;
	if (l.sin_family != AF_INET || r.sin_family != AF_INET)
		return 0; /* Linux SMC-Rv2 clients propose over IPv4 only */
	memset(&t, 0, sizeof(t));
	t.local_ip4 = l.sin_addr.s_addr;
	t.remote_ip4 = r.sin_addr.s_addr;
	t.local_port = ntohs(l.sin_port);
	t.remote_port = ntohs(r.sin_port);
	if (bpf_map_lookup_elem(map_fd, &t, &v) != 0)
		return errno == ENOENT ? 0 : -errno;
	if (forget)
		(void)bpf_map_delete_elem(map_fd, &t);
	return v == 1;
#else
	return -EOPNOTSUPP;
#endif
}

int
smc_opt_mark(int fd, unsigned int mark)
{
	return smc_opt.mark_fd < 0 ?
		       -ENOENT :
		       smc_opt_map_mark(smc_opt.mark_fd, fd, mark);
}

/*
 * Listening socket fd, taken from the service manager's store, listened
 * before this process marked it (the program saw its listen() in an
 * earlier process): mark it and record its address and port where the
 * program looks a SYN-ACK's listener up.  0 or -errno.
 */
int
smc_opt_listening(int fd)
{
#ifdef HAVE_BPF
	struct smc_opt_listen_key k;
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	__u32 one = 1;
	int rc;

	if (smc_opt.listen_fd < 0)
		return -ENOENT;
	rc = smc_opt_mark(fd, SMC_OPT_LISTEN);
	if (rc < 0)
		return rc;
	if (getsockname(fd, (struct sockaddr *)&a, &len) != 0)
		return -errno;
	if (a.sin_family != AF_INET)
		return 0;
	memset(&k, 0, sizeof(k));
	k.ip4 = a.sin_addr.s_addr;
	k.port = ntohs(a.sin_port);
	return bpf_map_update_elem(smc_opt.listen_fd, &k, &one, BPF_ANY) ?
		       -errno :
		       0;
#else
	(void)fd;
	return -EOPNOTSUPP;
#endif
}

int
smc_opt_echoed(int fd)
{
	return smc_opt.echoed_fd < 0 ?
		       0 :
		       smc_opt_map_echoed(smc_opt.echoed_fd, fd, true);
}

/*
 * How the connect of socket fd (marked SMC_OPT_CONNECT) ended: SMC_OPT_ECHOED
 * (the server's SYN-ACK echoed the option: we owe it a CLC PROPOSAL or a
 * DECLINE), SMC_OPT_PLAIN, or 0 when unknown (no program, not marked).
 */
int
smc_opt_connected(int fd)
{
#ifdef HAVE_BPF
	__u32 v = 0;

	if (smc_opt.mark_fd < 0 ||
	    bpf_map_lookup_elem(smc_opt.mark_fd, &fd, &v) != 0)
		return 0;
	return v == SMC_OPT_ECHOED || v == SMC_OPT_PLAIN ? (int)v : 0;
#else
	(void)fd;
	return 0;
#endif
}

#ifdef HAVE_BPF
/* statfs(2)'s f_type of a BPF file system (linux/magic.h) */
#define SMC_OPT_BPF_FS_MAGIC 0xcafe4a11

#define SMC_OPT_ROOT_CGROUP                                                  \
	"in the cgroup v2 root, acting on every socket of the host: run it " \
	"in a cgroup of its own, or set kernel_smc.bpf_root_cgroup"

/*
 * The cgroup v2 directory we run in, from /proc/self: 0 or -errno;
 * -EPERM for the root of the hierarchy unless root_ok: a program
 * attached there acts on every socket of the host (a daemon started as
 * root from a shell of a host whose processes sit in the root, as on a
 * hybrid-cgroup host; issue 47).
 */
static int
smc_opt_cgroup(char *dir, size_t len, bool root_ok)
{
	char line[4096], mnt[1024] = "", rel[2048] = "";
	FILE *f;

	f = fopen("/proc/self/cgroup", "re");
	if (f == NULL)
		return -errno;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(rel, sizeof(rel), "%.2047s", line + 3);
		}
	fclose(f);
	f = fopen("/proc/self/mountinfo", "re");
	if (f == NULL)
		return -errno;
	/* "36 35 0:30 / /sys/fs/cgroup rw,... - cgroup2 cgroup2 rw" */
	while (mnt[0] == '\0' && fgets(line, sizeof(line), f) != NULL) {
		char root[1024], point[1024], *dash = strstr(line, " - ");

		if (dash == NULL || strncmp(dash, " - cgroup2 ", 11) != 0 ||
		    sscanf(line, "%*s %*s %*s %1023s %1023s", root, point) != 2)
			continue;
		if (strcmp(root, "/") == 0)
			snprintf(mnt, sizeof(mnt), "%s", point);
	}
	fclose(f);
	if (rel[0] == '\0' || mnt[0] == '\0')
		return -ENOENT;
	if (strcmp(rel, "/") == 0 && !root_ok)
		return -EPERM;
	if ((size_t)snprintf(dir, len, "%s%s", mnt,
			     strcmp(rel, "/") == 0 ? "" : rel) >= len)
		return -ENAMETOOLONG;
	return 0;
}

static void
smc_opt_unload(void)
{
	if (smc_opt.link != NULL)
		bpf_link__destroy(smc_opt.link);
	if (smc_opt.obj != NULL)
		bpf_object__close(smc_opt.obj);
	smc_opt.link = NULL;
	smc_opt.obj = NULL;
	smc_opt.mark_fd = smc_opt.echoed_fd = smc_opt.listen_fd = -1;
}

static int
smc_opt_silent(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return 0;
}
#endif

/*
 * libbpf says nothing on stderr: what fails is said by the caller, once,
 * with its fix (the option's programs here, intercept.c's too).
 */
void
smc_opt_libbpf_quiet(void)
{
#ifdef HAVE_BPF
	libbpf_set_print(smc_opt_silent);
#endif
}

#ifdef HAVE_BPF
/*
 * The maps smcproxyd-bpf.service pinned in dir, if it did: 1 when taken,
 * 0 when there are none, -errno when they are there but cannot be opened
 * (the reason in smc_opt.state).
 */
static int
smc_opt_pinned(const char *dir)
{
	char path[PATH_MAX];
	int rc;

	if (dir == NULL)
		return 0;
	snprintf(path, sizeof(path), "%s/smc_opt_mark", dir);
	if (access(path, F_OK) != 0) {
		if (errno == ENOENT)
			return 0;
		rc = -errno;
		snprintf(smc_opt.state, sizeof(smc_opt.state),
			 "cannot reach the maps pinned in %.96s: %s", dir,
			 strerror(-rc));
		return rc;
	}
	smc_opt.mark_fd = bpf_obj_get(path);
	snprintf(path, sizeof(path), "%s/smc_opt_echoed", dir);
	smc_opt.echoed_fd = smc_opt.mark_fd < 0 ? -1 : bpf_obj_get(path);
	snprintf(path, sizeof(path), "%s/smc_opt_listen", dir);
	smc_opt.listen_fd = smc_opt.echoed_fd < 0 ? -1 : bpf_obj_get(path);
	if (smc_opt.mark_fd < 0 || smc_opt.echoed_fd < 0 ||
	    smc_opt.listen_fd < 0) {
		rc = -errno;
		snprintf(smc_opt.state, sizeof(smc_opt.state),
			 "cannot open the maps pinned in %.96s: %s", dir,
			 strerror(-rc));
		if (smc_opt.mark_fd >= 0)
			close(smc_opt.mark_fd);
		if (smc_opt.echoed_fd >= 0)
			close(smc_opt.echoed_fd);
		smc_opt.mark_fd = smc_opt.echoed_fd = -1;
		return rc;
	}
	snprintf(smc_opt.state, sizeof(smc_opt.state),
		 "pinned in %.100s (the unit attaches the program)", dir);
	log_info("SMC-R option program %s", smc_opt.state);
	return 1;
}
#endif

/*
 * Where the option's object is when none is configured: the installed
 * one, else the one built beside this binary (src/bpf/ of the build
 * tree), so that a daemon run from the build tree finds its program
 * instead of serving every kernel SMC-R client as TCP (issue 47).  The
 * installed path when neither is readable: the error then names it.
 */
const char *
smc_opt_default_object(void)
{
	static char built[PATH_MAX];
	char exe[PATH_MAX - 32], *slash;
	ssize_t n;

	if (access(SMCPROXYD_BPF_OBJECT, R_OK) == 0)
		return SMCPROXYD_BPF_OBJECT;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return SMCPROXYD_BPF_OBJECT;
	exe[n] = '\0';
	if ((slash = strrchr(exe, '/')) == NULL)
		return SMCPROXYD_BPF_OBJECT;
	*slash = '\0';
	snprintf(built, sizeof(built), "%s/bpf/smc_opt.bpf.o", exe);
	return access(built, R_OK) == 0 ? built : SMCPROXYD_BPF_OBJECT;
}

/* Each reason in a few words (show rules' SMC-R column), and its fix. */
static const struct {
	const char *text;
	const char *fix;
} smc_opt_whys[SMC_OPT_NWHY] = {
	[SMC_OPT_READY] = {"", ""},
	[SMC_OPT_OFF] = {"kernel_smc is off", "set kernel_smc.enabled = true"},
	[SMC_OPT_DETACHED] = {"SMC-R option program not attached",
			      "run as root, or under smcproxyd-bpf.service "
			      "with the kernel-smc drop-in (smcproxyd(8))"},
	[SMC_OPT_NO_ALLOW] = {"kernel_smc.allow is empty",
			      "list the kernel SMC-R clients' networks in "
			      "kernel_smc.allow"},
	[SMC_OPT_NO_UEID] = {"kernel_smc.ueids is empty",
			     "give kernel_smc.ueids the UEID the kernel peers "
			     "have (smcr ueid show)"},
	[SMC_OPT_IPV6] = {"IPv6 (SMC-Rv2 is IPv4 only)",
			  "use an IPv4 address (or 0.0.0.0)"},
	[SMC_OPT_LOOPBACK] = {"loopback, no RDMA device",
			      "use an address of an interface on an RDMA "
			      "device"},
	[SMC_OPT_NO_DEVICE] = {"no RDMA device",
			       "load the RDMA driver (for Soft-RoCE: "
			       "modprobe rdma_rxe; rdma link add), see "
			       "ibv_devices"},
};

const char *
smc_opt_why_text(enum smc_opt_why why)
{
	return smc_opt_whys[why].text;
}

/* What to do about why: the fix smc_opt_report logs with it. */
const char *
smc_opt_why_fix(enum smc_opt_why why)
{
	return smc_opt_whys[why].fix;
}

/*
 * Whether kernel SMC-R peers can go over RDMA with us at @a (an
 * smc_listen, or a target_smc: @listen false), from what the daemon
 * knows without trying: SMC_OPT_READY, or the first reason they go on as
 * TCP (others may follow once it is fixed).
 */
enum smc_opt_why
smc_opt_ready(const struct conf_smcr *k, const struct addr *a, bool listen)
{
	const struct sockaddr_in6 *s6 = (const void *)&a->ss;

	if (!k->enabled)
		return SMC_OPT_OFF;
	if (!smc_opt_attached())
		return SMC_OPT_DETACHED;
	if (listen && k->nallow == 0)
		return SMC_OPT_NO_ALLOW;
	if (k->nueids == 0)
		return SMC_OPT_NO_UEID;
	if (a->ss.ss_family == AF_INET6 &&
	    !IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr))
		return SMC_OPT_IPV6;
	if (addr_loopback(a))
		return SMC_OPT_LOOPBACK;
	if (ib_device_count() == 0)
		return SMC_OPT_NO_DEVICE;
	return SMC_OPT_READY;
}

/* Add ", KIND NAME" to @names (of @len) for the reason it goes with. */
static void
smc_opt_name(char *names, size_t len, const char *kind, const char *name)
{
	size_t used = strlen(names);

	if (used < len)
		snprintf(names + used, len - used, "%s%s %s",
			 used > 0 ? ", " : "", kind, name);
}

/*
 * At start and at each reload, once: for each reason the kernel SMC-R
 * peers of some rules' target_smc and exports' smc_listen will get TCP,
 * one warning naming them, the reason and its fix.  With kernel_smc off
 * and none configured, nothing.
 */
void
smc_opt_report(const struct conf *conf)
{
	char names[SMC_OPT_NWHY][256] = {{0}};
	enum smc_opt_why why;
	int i;

	for (i = 0; i < conf->nrules; i++) {
		const struct conf_rule *r = &conf->rules[i];

		if (r->target_smc.len == 0)
			continue;
		why = smc_opt_ready(&conf->smcr, &r->target_smc, false);
		smc_opt_name(names[why], sizeof(names[why]), "rule", r->name);
	}
	for (i = 0; i < conf->nexports; i++) {
		const struct conf_export *e = &conf->exports[i];

		if (e->smc_listen.len == 0)
			continue;
		why = smc_opt_ready(&conf->smcr, &e->smc_listen, true);
		smc_opt_name(names[why], sizeof(names[why]), "export", e->name);
	}
	for (why = SMC_OPT_OFF; why < SMC_OPT_NWHY; why++)
		if (names[why][0] != '\0')
			log_warnx(
				"kernel SMC-R peers of %s get TCP: %s%s%s; %s",
				names[why], smc_opt_whys[why].text,
				why == SMC_OPT_DETACHED ? ": " : "",
				why == SMC_OPT_DETACHED ? smc_opt_state() : "",
				smc_opt_whys[why].fix);
}

/*
 * For smcproxyd -n: whether smc_opt_load() would find the program, as
 * far as can be told without attaching it: the maps pinned in pin, or
 * root with a readable object at path that holds the program.  0, or -1
 * with the reason and its fix in why.
 */
int
smc_opt_check(const struct conf_smcr *k, char *why, size_t len)
{
#ifdef HAVE_BPF
	const char *path = k->bpf_object, *pin = k->bpf_pin;
	struct bpf_object *obj;
	char maps[PATH_MAX];
	bool ok;
	int rc;

	if (pin != NULL) {
		snprintf(maps, sizeof(maps), "%s/smc_opt_mark", pin);
		if (access(maps, F_OK) == 0)
			return 0;
	}
	if (geteuid() != 0) {
		snprintf(why, len,
			 "not root and no maps pinned in %s: start "
			 "smcproxyd-bpf.service, or run as root (smcproxyd(8))",
			 pin != NULL ? pin : "(bpf_pin unset)");
		return -1;
	}
	rc = smc_opt_cgroup(maps, sizeof(maps), k->bpf_root_cgroup);
	if (rc == -EPERM) {
		snprintf(why, len, "%s", SMC_OPT_ROOT_CGROUP);
		return -1;
	}
	if (access(path, R_OK) != 0) {
		snprintf(why, len,
			 "cannot read %s: %s: install it, or set "
			 "kernel_smc.bpf_object",
			 path, strerror(errno));
		return -1;
	}
	smc_opt_libbpf_quiet();
	obj = bpf_object__open_file(path, NULL);
	if (libbpf_get_error(obj)) {
		snprintf(why, len,
			 "%s is not the SMC-R option's BPF object: set "
			 "kernel_smc.bpf_object to smc_opt.bpf.o",
			 path);
		return -1;
	}
	ok = bpf_object__find_program_by_name(obj, "smc_opt") != NULL;
	bpf_object__close(obj);
	if (!ok) {
		snprintf(why, len, "%s lacks the program smc_opt", path);
		return -1;
	}
	return 0;
#else
	(void)k;
	snprintf(why, len,
		 "built without BPF support (configure found no clang or "
		 "libbpf): rebuild with them");
	return -1;
#endif
}

/*
 * Use the maps pinned in pin when smcproxyd-bpf.service put them there
 * (the service's unit attaches the program), else load the object at
 * path and attach its program to our cgroup; once (a later call with the
 * program there does nothing).  0, or -errno with the reason in
 * smc_opt_state(), logged: smc_listen then serves as TCP.
 */
int
smc_opt_load(const struct conf_smcr *k)
{
#ifdef HAVE_BPF
	const char *path = k->bpf_object, *pin = k->bpf_pin;
	struct bpf_program *prog;
	char dir[3072];
	int cg, rc;

	if (smc_opt_attached())
		return 0;
	smc_opt_libbpf_quiet();
	rc = smc_opt_pinned(pin);
	if (rc > 0)
		return 0;
	if (rc < 0)
		goto fail;
	if (geteuid() != 0) {
		snprintf(smc_opt.state, sizeof(smc_opt.state),
			 "not root: under systemd smcproxyd-bpf.service "
			 "attaches the program (smcproxyd(8))");
		rc = -EPERM;
		goto fail;
	}
	rc = smc_opt_cgroup(dir, sizeof(dir), k->bpf_root_cgroup);
	if (rc < 0) {
		snprintf(smc_opt.state, sizeof(smc_opt.state), "%s",
			 rc == -EPERM ?
				 SMC_OPT_ROOT_CGROUP :
				 "no cgroup v2 mounted for this process");
		goto fail;
	}
	if (access(path, R_OK) != 0) {
		rc = -errno;
		snprintf(smc_opt.state, sizeof(smc_opt.state),
			 "cannot read %.96s: %s", path, strerror(-rc));
		goto fail;
	}
	smc_opt.obj = bpf_object__open_file(path, NULL);
	if (libbpf_get_error(smc_opt.obj)) {
		smc_opt.obj = NULL;
		rc = -EINVAL;
		snprintf(smc_opt.state, sizeof(smc_opt.state),
			 "%.96s is not the SMC-R option's BPF object", path);
		goto fail;
	}
	rc = bpf_object__load(smc_opt.obj);
	if (rc < 0) {
		snprintf(smc_opt.state, sizeof(smc_opt.state),
			 "the kernel refused the program: %s", strerror(-rc));
		goto fail;
	}
	prog = bpf_object__find_program_by_name(smc_opt.obj, "smc_opt");
	smc_opt.mark_fd =
		bpf_object__find_map_fd_by_name(smc_opt.obj, "smc_opt_mark");
	smc_opt.echoed_fd =
		bpf_object__find_map_fd_by_name(smc_opt.obj, "smc_opt_echoed");
	smc_opt.listen_fd =
		bpf_object__find_map_fd_by_name(smc_opt.obj, "smc_opt_listen");
	if (prog == NULL || smc_opt.mark_fd < 0 || smc_opt.echoed_fd < 0 ||
	    smc_opt.listen_fd < 0) {
		rc = -ENOENT;
		snprintf(smc_opt.state, sizeof(smc_opt.state),
			 "%.96s lacks the program or its maps", path);
		goto fail;
	}
	cg = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg < 0) {
		rc = -errno;
		snprintf(smc_opt.state, sizeof(smc_opt.state), "open %.96s: %s",
			 dir, strerror(-rc));
		goto fail;
	}
	smc_opt.link = bpf_program__attach_cgroup(prog, cg);
	rc = smc_opt.link == NULL ? -errno : 0;
	close(cg);
	if (rc < 0) {
		smc_opt.link = NULL;
		snprintf(smc_opt.state, sizeof(smc_opt.state),
			 "cannot attach to %.96s: %s", dir, strerror(-rc));
		goto fail;
	}
	snprintf(smc_opt.state, sizeof(smc_opt.state), "attached to %.140s",
		 dir);
	log_info("SMC-R option program %s %s", path, smc_opt.state);
	return 0;
fail:
	smc_opt_unload();
	log_warnx("SMC-R option program not loaded (%s): smc_listen serves "
		  "kernel SMC-R clients as TCP",
		  smc_opt.state);
	return rc;
#else
	(void)k;
	snprintf(smc_opt.state, sizeof(smc_opt.state),
		 "built without BPF support (configure found no clang or "
		 "libbpf)");
	log_warnx("SMC-R option program: %s: smc_listen serves kernel SMC-R "
		  "clients as TCP",
		  smc_opt.state);
	return -EOPNOTSUPP;
#endif
}

/*
 * smcproxyd --pin-bpf DIR (smcproxyd-bpf.service, as root): load the
 * object at path and pin its program (DIR/smc_opt) and maps (DIR/MAP)
 * for the service's BPFProgram= and an unprivileged daemon, replacing
 * what an earlier run pinned there.  0, or -errno after saying why on
 * stderr.
 */
#ifdef HAVE_BPF
/*
 * Whether dir, or where it would be made, is on a BPF file system: pins
 * live only there, and elsewhere libbpf's error says nothing of it.  0,
 * or -errno after saying why on stderr.
 */
static int
smc_opt_bpffs(const char *dir)
{
	char parent[PATH_MAX], *slash;
	struct statfs fs;

	snprintf(parent, sizeof(parent), "%s", dir);
	if (statfs(dir, &fs) != 0) {
		slash = strrchr(parent, '/');
		if (slash == NULL)
			snprintf(parent, sizeof(parent), ".");
		else if (slash == parent)
			slash[1] = '\0';
		else
			*slash = '\0';
		if (statfs(parent, &fs) != 0) {
			fprintf(stderr, "smcproxyd: %s: %s\n", parent,
				strerror(errno));
			return -errno;
		}
	}
	if (fs.f_type != SMC_OPT_BPF_FS_MAGIC) {
		fprintf(stderr,
			"smcproxyd: %s is not on a BPF file system (bpffs), "
			"where programs are pinned: give a directory under "
			"/sys/fs/bpf (mount -t bpf bpf /sys/fs/bpf)\n",
			parent);
		return -ENOTDIR;
	}
	return 0;
}
#endif

int
smc_opt_pin(const char *path, const char *dir)
{
#ifdef HAVE_BPF
	struct bpf_object *obj;
	struct dirent *e;
	DIR *d;
	struct bpf_program *prog;
	char file[PATH_MAX];
	int rc;

	smc_opt_libbpf_quiet();
	rc = smc_opt_bpffs(dir);
	if (rc)
		return rc;
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		rc = -errno;
		fprintf(stderr, "smcproxyd: mkdir %s: %s\n", dir,
			strerror(-rc));
		return rc;
	}
	/* what an earlier run pinned (the maps, .rodata among them) */
	d = opendir(dir);
	while (d != NULL && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "%s/%s", dir, e->d_name);
		(void)unlink(file);
	}
	if (d != NULL)
		closedir(d);
	obj = bpf_object__open_file(path, NULL);
	if (libbpf_get_error(obj)) {
		fprintf(stderr,
			"smcproxyd: %s is not the SMC-R option's BPF "
			"object\n",
			path);
		return -EINVAL;
	}
	rc = bpf_object__load(obj);
	prog = rc == 0 ? bpf_object__find_program_by_name(obj, "smc_opt") :
			 NULL;
	snprintf(file, sizeof(file), "%s/smc_opt", dir);
	if (rc == 0 && prog == NULL)
		rc = -ENOENT;
	if (rc == 0)
		rc = bpf_object__pin_maps(obj, dir);
	if (rc == 0)
		rc = bpf_program__pin(prog, file);
	if (rc != 0)
		fprintf(stderr, "smcproxyd: cannot load and pin %s in %s: %s\n",
			path, dir, strerror(rc < 0 ? -rc : rc));
	else
		printf("SMC-R option program %s pinned in %s\n", path, dir);
	bpf_object__close(obj);
	return rc < 0 ? rc : -rc;
#else
	fprintf(stderr, "smcproxyd: built without BPF support (configure "
			"found no clang or libbpf)\n");
	(void)path;
	(void)dir;
	return -EOPNOTSUPP;
#endif
}
