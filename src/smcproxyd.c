// SPDX-License-Identifier: BSD-2-Clause
/*
 * smcproxyd: main thread.  Owns the configuration, signals, reload and
 * the control socket; the data path lives in the worker threads.
 */
#include <sys/resource.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "smcproxyd.h"
#include "metrics.h"
#include "monitor.h"

#define SMCPROXYD_CONF SYSCONFDIR "/smcproxyd/smcproxyd.conf"
#define SMCPROXYD_STATUS_S 5 /* STATUS= looked at again */

static struct conf *conf_current;
static struct event_base *main_base;
static struct event *stopped_ev;  /* a worker drained */
static struct event *status_ev;	  /* STATUS= kept current */
static struct event *watchdog_ev; /* WATCHDOG=1 while the workers answer */
static unsigned long long watchdog_usec;
static int watchdog_stalled = -1; /* the worker last logged as stuck */
static bool stopping;
static bool debug_flag;

/* Usage on f; exit 0 when asked for (--help, stdout), else 2. */
static void __attribute__((noreturn)) usage(FILE *f)
{
	fprintf(f, "usage: smcproxyd [-dntV] [-c file]\n"
		   "       smcproxyd --list-devices [--local-addr ip]\n"
		   "       smcproxyd --print-schema | --print-example\n"
		   "       smcproxyd --pin-bpf DIR [--bpf-object FILE]\n");
	exit(f == stdout ? 0 : 2);
}

/* Log what a FILE of config errors holds, one line each. */
static void
smcproxyd_log_lines(char *text)
{
	char *line, *save = NULL;

	for (line = strtok_r(text, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save))
		log_warnx("%s", line);
}

/* Log the warnings conf_load() found in conf ("smcproxyd -n" prints them). */
static void
smcproxyd_log_warnings(const struct conf *conf)
{
	char *text;

	if (conf->warnings == NULL || (text = strdup(conf->warnings)) == NULL)
		return;
	smcproxyd_log_lines(text);
	free(text);
}

/* What to add to the error for a listen address that is taken. */
static const char *
smcproxyd_inuse_hint(int rc)
{
	return rc == -EADDRINUSE ? " (another process, perhaps another "
				   "smcproxyd, listens there)" :
				   "";
}

/* Listen address a of next, at line, named key (rule or export name) is
 * free: 0, or -errno said to errors. */
static int
smcproxyd_probe_one(const struct conf *next, const struct addr *a, int line,
		    const char *key, const char *what, FILE *errors)
{
	char buf[ADDR_STRLEN];
	int rc = listener_probe(a);

	if (rc)
		fprintf(errors, "%s:%d: %s: %s: cannot listen on %s: %s%s\n",
			next->path, line, key, what,
			addr_str(a, buf, sizeof(buf)), strerror(-rc),
			smcproxyd_inuse_hint(rc));
	return rc;
}

/*
 * Every listen address of next that old (NULL at start) does not have must
 * be free of any other listener, before we swap to next (or start); and
 * at start the peer port too.
 */
static int
smcproxyd_probe_listeners(const struct conf *old, const struct conf *next,
			  FILE *errors)
{
	char buf[ADDR_STRLEN], key[64], what[CONF_NAME_MAX + 16];
	int i, j, rc;
	bool known;

	if (old == NULL && next->has_peer_listen &&
	    !fdstore_holds(&next->peer_listen) &&
	    (rc = listener_probe(&next->peer_listen)) != 0) {
		fprintf(errors,
			"%s: peer_listen.address: cannot listen on %s: "
			"%s%s\n",
			next->path,
			addr_str(&next->peer_listen, buf, sizeof(buf)),
			strerror(-rc), smcproxyd_inuse_hint(rc));
		return rc;
	}
	for (i = 0; i < next->nrules; i++) {
		known = false;
		for (j = 0; old != NULL && j < old->nrules && !known; j++)
			known = addr_equal(&old->rules[j].listen,
					   &next->rules[i].listen);
		/* a socket the service manager passed is ours */
		if (known || fdstore_holds(&next->rules[i].listen))
			continue;
		snprintf(key, sizeof(key), "rules[%d].listen", i);
		snprintf(what, sizeof(what), "rule %s", next->rules[i].name);
		rc = smcproxyd_probe_one(next, &next->rules[i].listen,
					 next->rules[i].line, key, what,
					 errors);
		if (rc)
			return rc;
	}
	for (i = 0; i < next->nexports; i++) {
		known = next->exports[i].smc_listen.len == 0;
		for (j = 0; old != NULL && j < old->nexports && !known; j++)
			known = addr_equal(&old->exports[j].smc_listen,
					   &next->exports[i].smc_listen);
		if (known || fdstore_holds(&next->exports[i].smc_listen))
			continue;
		snprintf(key, sizeof(key), "exports[%d].smc_listen", i);
		snprintf(what, sizeof(what), "export %s",
			 next->exports[i].name);
		rc = smcproxyd_probe_one(next, &next->exports[i].smc_listen,
					 next->exports[i].line, key, what,
					 errors);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * Re-read the config file; swap to it only if it is entirely valid.  Open
 * connections keep the config they started with.  Every problem is logged
 * (the journal has the file:line reasons whoever asked) and also written to
 * errors when not NULL.  0, or -EINVAL.
 */
int
smcproxyd_reload(FILE *errors)
{
	enum log_level was = log_get_level(), level;
	struct conf *next = NULL;
	char *text = NULL;
	size_t len = 0;
	FILE *mine;
	int rc;

	notify_reloading();
	log_info("reloading %s", conf_current->path);
	mine = open_memstream(&text, &len);
	if (mine == NULL) {
		rc = -ENOMEM;
		log_warn("reload: open_memstream");
		notify_reload_failed(conf_current, strerror(-rc));
		return rc;
	}
	next = conf_load(conf_current->path, mine);
	if (next == NULL) {
		rc = -EINVAL;
		goto out;
	}
	conf_hold(next);
	rc = conf_reload_check(conf_current, next, mine);
	if (rc == 0)
		rc = smcproxyd_probe_listeners(conf_current, next, mine);
	if (rc) {
		conf_drop(next);
		rc = -EINVAL;
		goto out;
	}
	/* before the workers mark their new smc_listen sockets */
	if (next->smcr.enabled)
		(void)smc_opt_load(&next->smcr);
	rc = worker_reconfigure_all(next);
	if (rc)
		fprintf(mine, "%s: some listeners could not be opened: %s\n",
			next->path, strerror(-rc));
	/* once the rules' listeners are there to take the connects */
	(void)intercept_apply(next);
	control_conf_update(next);
	conf_drop(conf_current);
	conf_current = next;
	/* a level set by `smcproxyctl log-level` ends here: the file's (-d's)
	 * is the one a reload is asked to apply */
	level = debug_flag ? LOG_LEVEL_DEBUG : next->log_level;
	log_set_level(level > was ? level : was);
	if (level != was)
		log_info("log level: %s (was %s)", log_level_name(level),
			 log_level_name(was));
	log_set_level(level);
	if (next->warnings != NULL)
		fputs(next->warnings, mine);
	/* the rules and peers the file dropped are no longer kept */
	state_save(next);
	log_event(LOG_EV_RELOAD, LOG_LEVEL_INFO, LOG_NOWHERE,
		  "reloaded %s: %d rules, %d peers, %d exports", next->path,
		  next->nrules, next->npeers, next->nexports);
	monitor_event(MONITOR_RELOAD, LOG_NOWHERE,
		      "reloaded %s: %d rules, %d peers, %d exports", next->path,
		      next->nrules, next->npeers, next->nexports);
	ib_check_host(next);
	smc_opt_report(next);
out:
	fclose(mine);
	if (errors != NULL && len > 0)
		fputs(text, errors);
	if (rc)
		notify_reload_failed(conf_current, text);
	else
		notify_ready(conf_current);
	smcproxyd_log_lines(text);
	if (rc < 0) {
		log_event(LOG_EV_RELOAD_FAILED, LOG_LEVEL_WARN, LOG_NOWHERE,
			  "reload: %s %s; still serving with the previous "
			  "configuration",
			  conf_current->path,
			  rc == -EINVAL ? "has errors" : strerror(-rc));
		monitor_event(MONITOR_RELOAD_FAILED, LOG_NOWHERE,
			      "reload: %s %s; still serving with the previous "
			      "configuration",
			      conf_current->path,
			      rc == -EINVAL ? "has errors" : strerror(-rc));
	}
	free(text);
	return rc;
}

static void
smcproxyd_sighup(evutil_socket_t sig, short what, void *arg)
{
	/* the listeners are closed for good */
	if (stopping) {
		log_info("SIGHUP: stopping; not reloading");
		return;
	}
	smcproxyd_reload(NULL);
}

/*
 * Stop (SIGTERM, SIGINT, `shutdown`): accept nothing more and give open
 * connections shutdown_timeout to finish (under systemd the listening
 * sockets stay in its store: after a restart the next process accepts
 * what queued meanwhile), the control socket staying up
 * so that the drain can be watched and cut short.  now (a second signal,
 * `shutdown now`): close whatever is still open at once.  The main loop
 * ends once every worker has no connection left (smcproxyd_stopped).
 */
void
smcproxyd_shutdown(bool now)
{
	if (!stopping) {
		stopping = true;
		event_del(status_ev);
		notify_stopping(conf_current->shutdown_timeout);
		log_info("stopping; open connections get %d s to finish (a "
			 "second SIGTERM or \"smcproxyctl shutdown now\" "
			 "closes them at once)",
			 conf_current->shutdown_timeout);
		monitor_event(MONITOR_SHUTDOWN, LOG_NOWHERE,
			      "stopping; open connections get %d s to finish",
			      conf_current->shutdown_timeout);
		/* the cgroups' connects go direct, not to listeners that go */
		intercept_shutdown();
		metrics_shutdown();
		control_stopping();
		worker_stop_all(conf_current->shutdown_timeout, stopped_ev);
	}
	if (now) {
		log_info("closing the open connections now");
		monitor_event(MONITOR_SHUTDOWN, LOG_NOWHERE,
			      "closing the open connections now");
		worker_stop_now_all();
	}
}

static void
smcproxyd_sigterm(evutil_socket_t sig, short what, void *arg)
{
	log_info("%s%s", strsignal((int)sig), stopping ? " again" : "");
	smcproxyd_shutdown(stopping);
}

/* Every few seconds: systemd's STATUS= follows the link groups. */
static void
smcproxyd_status(evutil_socket_t fd, short what, void *arg)
{
	notify_status(conf_current);
}

/*
 * Every third of the unit's WatchdogSec=: WATCHDOG=1 only when every
 * worker's loop answered the last ping, then ping them again.  A worker
 * stuck (in a verbs call, a lock) stops the pings, and systemd kills and
 * restarts the daemon (Restart=on-failure) once WatchdogSec= has passed.
 */
static void
smcproxyd_watchdog(evutil_socket_t fd, short what, void *arg)
{
	int id = worker_unanswered();

	if (id >= 0) {
		if (id != watchdog_stalled)
			log_warnx("watchdog: worker %d has not answered for "
				  "%llu ms; not telling systemd it is alive",
				  id, watchdog_usec / 3000);
		watchdog_stalled = id;
		return;
	}
	if (watchdog_stalled >= 0)
		log_info("watchdog: worker %d answers again", watchdog_stalled);
	watchdog_stalled = -1;
	notify_watchdog();
	worker_ping_all();
}

/* A worker drained; when all have, the control socket goes and we end. */
static void
smcproxyd_stopped(evutil_socket_t fd, short what, void *arg)
{
	if (!worker_all_drained())
		return;
	control_shutdown();
	event_del(watchdog_ev);
	worker_exit_all();
	event_base_loopexit(main_base, NULL);
}

/* Many connections need many descriptors: take the hard limit. */
static void
smcproxyd_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			log_warn("raising the open files limit: setrlimit");
	}
}

/*
 * smcproxyd -n with kernel peers: what would serve them as TCP that the
 * configuration alone does not show (issue 47: "configuration OK", then
 * every kernel SMC-R connection went as TCP), with the fix.
 */
static void
smcproxyd_check_smcr(const struct conf *conf)
{
	char why[512];
	bool listens = false;
	int i;

	if (!conf->smcr.enabled)
		return;
	for (i = 0; i < conf->nexports; i++)
		if (conf->exports[i].smc_listen.len != 0)
			listens = true;
	if (listens && smc_opt_check(&conf->smcr, why, sizeof(why)) != 0)
		fprintf(stderr,
			"warning: kernel_smc: the SMC-R option program will "
			"not attach (%s): every kernel SMC-R client of an "
			"smc_listen will be served as TCP\n",
			why);
}

/*
 * smcproxyd -n with intercept rules: whether each would attach (its
 * cgroup, the kernel's verdict on the programs).  0, or -1 after saying
 * which would not and why.
 */
static int
smcproxyd_check_intercept(const struct conf *conf)
{
	const struct conf_rule *r;
	char why[512];
	int i, rc = 0;

	for (i = 0; i < conf->nrules; i++) {
		r = &conf->rules[i];
		if (r->nintercept == 0 ||
		    intercept_check(conf, r, why, sizeof(why)) == 0)
			continue;
		fprintf(stderr, "%s: rule %s: intercept would not attach: %s\n",
			conf->path, r->name, why);
		rc = -1;
	}
	return rc;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{"list-devices", no_argument, NULL, 'L'},
		{"local-addr", required_argument, NULL, 'a'},
		{"print-schema", no_argument, NULL, 'S'},
		{"print-example", no_argument, NULL, 'E'},
		{"pin-bpf", required_argument, NULL, 'P'},
		{"bpf-object", required_argument, NULL, 'O'},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *path = SMCPROXYD_CONF, *local_addr = NULL;
	const char *pin = NULL, *bpf_object = NULL;
	struct event *sig_term, *sig_int, *sig_hup;
	bool check = false, list = false;
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "c:dntVh", longopts, NULL)) !=
	       -1) {
		switch (ch) {
		case 'c':
			path = optarg;
			break;
		case 'd':
			debug_flag = true;
			break;
		case 'n':
			check = true;
			break;
		case 't':
			log_set_times(true);
			break;
		case 'L':
			list = true;
			break;
		case 'a':
			local_addr = optarg;
			break;
		case 'S':
			conf_print_schema(stdout);
			return 0;
		case 'E':
			conf_print_example(stdout);
			return 0;
		case 'P':
			pin = optarg;
			break;
		case 'O':
			bpf_object = optarg;
			break;
		case 'V':
			printf("smcproxyd %s\n", SMCPROXYD_VERSION);
			return 0;
		case 'h':
			usage(stdout);
		default:
			usage(stderr);
		}
	}
	if (optind != argc)
		usage(stderr);
	log_init(1, debug_flag ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO);
	if (list)
		return ib_list_devices(stdout, local_addr) ? 1 : 0;
	/* smcproxyd-bpf.service: load the option's program and pin it */
	if (pin != NULL)
		return smc_opt_pin(bpf_object != NULL ?
					   bpf_object :
					   smc_opt_default_object(),
				   pin) ?
			       1 :
			       0;

	conf_current = conf_load(path, stderr);
	if (check) {
		if (conf_current == NULL)
			return 1;
		if (conf_current->warnings != NULL)
			fputs(conf_current->warnings, stderr);
		smcproxyd_check_smcr(conf_current);
		if (smcproxyd_check_intercept(conf_current) != 0) {
			conf_free(conf_current);
			return 1;
		}
		ib_check_host(conf_current);
		printf("configuration OK\n");
		conf_free(conf_current);
		return 0;
	}
	if (conf_current == NULL)
		fatalx("%s has errors; not starting", path);
	conf_hold(conf_current);
	if (!debug_flag)
		log_set_level(conf_current->log_level);
	smcproxyd_log_warnings(conf_current);
	ib_check_host(conf_current);

	signal(SIGPIPE, SIG_IGN);
	smcproxyd_raise_nofile();
	if (evthread_use_pthreads())
		fatalx("libevent has no pthreads support");
	main_base = event_base_new();
	if (main_base == NULL)
		fatalx("event_base_new failed");
	sig_term = evsignal_new(main_base, SIGTERM, smcproxyd_sigterm, NULL);
	sig_int = evsignal_new(main_base, SIGINT, smcproxyd_sigterm, NULL);
	sig_hup = evsignal_new(main_base, SIGHUP, smcproxyd_sighup, NULL);
	stopped_ev = event_new(main_base, -1, 0, smcproxyd_stopped, NULL);
	status_ev =
		event_new(main_base, -1, EV_PERSIST, smcproxyd_status, NULL);
	watchdog_ev =
		event_new(main_base, -1, EV_PERSIST, smcproxyd_watchdog, NULL);
	if (sig_term == NULL || sig_int == NULL || sig_hup == NULL ||
	    stopped_ev == NULL || status_ev == NULL || watchdog_ev == NULL ||
	    evsignal_add(sig_term, NULL) || evsignal_add(sig_int, NULL) ||
	    evsignal_add(sig_hup, NULL))
		fatalx("cannot set up signal events");

	/* the rules disabled and peers drained before a restart stay so */
	(void)state_load(conf_current);
	/* a restart: the listening sockets systemd kept for us */
	fdstore_init();
	if (smcproxyd_probe_listeners(NULL, conf_current, stderr))
		fatalx("%s: a listen address is taken; not starting", path);
	if (conf_current->smcr.enabled)
		(void)smc_opt_load(&conf_current->smcr);
	rc = worker_start_all(conf_current);
	if (rc) {
		errno = -rc;
		fatal("cannot start workers");
	}
	(void)intercept_apply(conf_current);
	rc = control_init(conf_current, main_base);
	if (rc) {
		errno = -rc;
		fatal("control socket %s", conf_current->control_socket);
	}
	if (metrics_init(conf_current, main_base))
		fatalx("metrics_listen: cannot serve metrics; not starting");
	fdstore_close_unused();
	smc_opt_report(conf_current);
	log_info("smcproxyd %s ready: %s, %d workers, %d rules, %d peers, "
		 "%d exports",
		 SMCPROXYD_VERSION, conf_current->name, conf_current->workers,
		 conf_current->nrules, conf_current->npeers,
		 conf_current->nexports);
	notify_ready(conf_current);
	{
		struct timeval tv = {SMCPROXYD_STATUS_S, 0};

		event_add(status_ev, &tv);
	}
	watchdog_usec = notify_watchdog_usec();
	if (watchdog_usec > 0) {
		struct timeval tv = {
			(time_t)(watchdog_usec / 3 / 1000000),
			(suseconds_t)(watchdog_usec / 3 % 1000000)};

		worker_ping_all();
		event_add(watchdog_ev, &tv);
		log_info("watchdog: WATCHDOG=1 every %llu ms while the workers "
			 "answer",
			 watchdog_usec / 3000);
	}

	event_base_dispatch(main_base);

	worker_join_all();
	intercept_shutdown();
	peer_shutdown();
	tally_shutdown();
	log_rl_flush();
	log_info("stopped");
	event_free(sig_term);
	event_free(sig_int);
	event_free(sig_hup);
	event_free(stopped_ev);
	event_free(status_ev);
	event_free(watchdog_ev);
	event_base_free(main_base);
	conf_drop(conf_current);
	return 0;
}
