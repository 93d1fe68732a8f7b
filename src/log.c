// SPDX-License-Identifier: BSD-2-Clause
/*
 * Logging.  Three sinks, chosen once at start: the systemd journal, natively
 * (sd_journal_send, so lines carry fields such as RULE= and PEER=) when
 * standard error is a journal stream ($JOURNAL_STREAM names it) or the
 * daemon is not in the foreground; a terminal, plain "smcproxyd: message";
 * anything else (a file, a pipe), each line with its syslog priority
 * prefix "<6>".  Without a journal to reach, background logs go to syslog.
 * Callers put the object id in the message themselves ("conn 0x1f",
 * "lgr 3 link 1", "control", "ib: mlx5_0"), never a C function name; the
 * events operators look for (links and peers up and down, authentication
 * failures, reloads) also go out as log_event() with a fixed MESSAGE_ID
 * and PEER=, RULE=, LGR=, LINK= fields.
 */
#include <sys/stat.h>
#include <sys/uio.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-journal.h>

#include "smcproxyd.h"

enum log_sink { LOG_SINK_STDERR, LOG_SINK_TTY, LOG_SINK_JOURNAL };

static enum log_sink log_sink = LOG_SINK_STDERR;
static int log_foreground = 1;
static bool log_times; /* lines on standard error start with the time */
static enum log_level log_current = LOG_LEVEL_INFO;

static const char *const log_names[] = {
	[LOG_LEVEL_ERR] = "error",
	[LOG_LEVEL_WARN] = "warning",
	[LOG_LEVEL_INFO] = "info",
	[LOG_LEVEL_DEBUG] = "debug",
};

/* Whether standard error is the journal stream systemd connected it to. */
static bool
log_stderr_is_journal(void)
{
	const char *env = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (env == NULL || sscanf(env, "%llu:%llu", &dev, &ino) != 2)
		return false;
	return fstat(STDERR_FILENO, &st) == 0 &&
	       (unsigned long long)st.st_dev == dev &&
	       (unsigned long long)st.st_ino == ino;
}

/* Start logging; see the top of the file for where lines go. */
void
log_init(int foreground, enum log_level level)
{
	log_foreground = foreground;
	log_current = level;
	if (!foreground || log_stderr_is_journal())
		log_sink = LOG_SINK_JOURNAL;
	else if (isatty(STDERR_FILENO))
		log_sink = LOG_SINK_TTY;
	else
		log_sink = LOG_SINK_STDERR;
	if (!foreground)
		openlog("smcproxyd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

/*
 * Lines on standard error (a terminal, a file, a pipe: not the journal,
 * which keeps its own) start with the wall clock in seconds and
 * microseconds, as strace -ttt and tcpdump -tt print it, so that a debug
 * log lines up with a packet capture of the same host.
 */
void
log_set_times(bool on)
{
	log_times = on;
}

void
log_set_level(enum log_level level)
{
	__atomic_store_n(&log_current, level, __ATOMIC_RELAXED);
}

/* The least severe level logged now. */
enum log_level
log_get_level(void)
{
	return __atomic_load_n(&log_current, __ATOMIC_RELAXED);
}

/* A level's name, as the configuration's log_level spells it. */
const char *
log_level_name(enum log_level level)
{
	if ((size_t)level >= sizeof(log_names) / sizeof(log_names[0]))
		return "?";
	return log_names[level];
}

/* Parse "error", "warning", "info" or "debug"; 0 or -EINVAL. */
int
log_level_parse(const char *name, enum log_level *out)
{
	size_t i;

	for (i = 0; i < sizeof(log_names) / sizeof(log_names[0]); i++) {
		if (strcmp(name, log_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

bool
log_info_enabled(void)
{
	return __atomic_load_n(&log_current, __ATOMIC_RELAXED) >=
	       LOG_LEVEL_INFO;
}

static const int log_prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};

/* msg to the journal with nfields "KEY=value" fields; 0 or -errno. */
static int
log_journal(enum log_level level, const char *msg, const char *const *fields,
	    int nfields)
{
	struct iovec iov[3 + LOG_FIELDS_MAX];
	char prio[16];
	char *text;
	int i, n = 0, rc;

	if (nfields > LOG_FIELDS_MAX)
		nfields = LOG_FIELDS_MAX;
	if (asprintf(&text, "MESSAGE=%s", msg) < 0)
		return -ENOMEM;
	snprintf(prio, sizeof(prio), "PRIORITY=%d", log_prio[level]);
	iov[n++] = (struct iovec){text, strlen(text)};
	iov[n++] = (struct iovec){prio, strlen(prio)};
	iov[n++] = (struct iovec){(char *)"SYSLOG_IDENTIFIER=smcproxyd",
				  strlen("SYSLOG_IDENTIFIER=smcproxyd")};
	for (i = 0; i < nfields; i++)
		iov[n++] = (struct iovec){(char *)fields[i], strlen(fields[i])};
	rc = sd_journal_sendv(iov, n);
	free(text);
	return rc;
}

static void
log_emit(enum log_level level, const char *msg, const char *const *fields,
	 int nfields)
{
	if (log_sink == LOG_SINK_JOURNAL &&
	    log_journal(level, msg, fields, nfields) == 0)
		return;
	char when[32] = "";
	struct timespec ts;

	if (!log_foreground) {
		syslog(log_prio[level], "%s", msg);
		return;
	}
	if (log_times && clock_gettime(CLOCK_REALTIME, &ts) == 0)
		snprintf(when, sizeof(when), "%lld.%06ld ",
			 (long long)ts.tv_sec, ts.tv_nsec / 1000);
	if (log_sink == LOG_SINK_TTY)
		fprintf(stderr, "smcproxyd: %s%s%s\n", when,
			level == LOG_LEVEL_ERR	? "error: " :
			level == LOG_LEVEL_WARN ? "warning: " :
						  "",
			msg);
	else
		fprintf(stderr, "<%d>smcproxyd: %s%s\n", log_prio[level], when,
			msg);
}

static void
log_vwrite(enum log_level level, int errnum, const char *fmt, va_list ap)
{
	char msg[1024];
	int n;

	if (level > __atomic_load_n(&log_current, __ATOMIC_RELAXED))
		return;
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (n < 0)
		return;
	if (errnum && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - (size_t)n, ": %s",
			 strerror(errnum));
	log_emit(level, msg, NULL, 0);
}

/*
 * An info line with structured fields ("KEY=value", at most
 * LOG_FIELDS_MAX) that the journal keeps beside the message, so that
 * "journalctl RULE=redis" finds it; other sinks get the message alone.
 */
void
log_info_fields(const char *const *fields, int nfields, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!log_info_enabled())
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_emit(LOG_LEVEL_INFO, msg, fields, nfields);
}

static const char *const log_event_ids[LOG_EV_N] = {
#define X(id, name, msgid) [LOG_EV_##id] = msgid,
	LOG_EVENTS(X)
#undef X
};

/**
 * log_event_fields() - The journal fields of event @ev about @w, written
 * into @buf (@size, LOG_EVENT_FIELDS_LEN is enough) and pointed to from
 * @fields (LOG_EVENT_FIELDS_MAX): MESSAGE_ID= always, then PEER=, RULE=,
 * LGR= and LINK= where @w has them.
 * Return: the number of fields, or -ENOSPC when @buf is too small.
 */
int
log_event_fields(enum log_event ev, const struct log_where *w, char *buf,
		 size_t size, const char **fields)
{
	size_t off = 0;
	int n = 0, len;

#define LOG_FIELD(...)                                              \
	do {                                                        \
		len = snprintf(buf + off, size - off, __VA_ARGS__); \
		if (len < 0 || (size_t)len >= size - off)           \
			return -ENOSPC;                             \
		fields[n++] = buf + off;                            \
		off += (size_t)len + 1;                             \
	} while (0)
	LOG_FIELD("MESSAGE_ID=%s", log_event_ids[ev]);
	if (w->peer != NULL)
		LOG_FIELD("PEER=%s", w->peer);
	if (w->rule != NULL)
		LOG_FIELD("RULE=%s", w->rule);
	if (w->lgr >= 0)
		LOG_FIELD("LGR=%ld", w->lgr);
	if (w->link >= 0)
		LOG_FIELD("LINK=%ld", w->link);
#undef LOG_FIELD
	return n;
}

/* log_event() and log_event_rl(), the level and the limit checked. */
static void
log_event_v(enum log_event ev, enum log_level level, const struct log_where *w,
	    const char *fmt, va_list ap)
{
	const char *fields[LOG_EVENT_FIELDS_MAX];
	char buf[LOG_EVENT_FIELDS_LEN], msg[1024];
	int n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = log_event_fields(ev, w, buf, sizeof(buf), fields);
	log_emit(level, msg, fields, n > 0 ? n : 0);
}

/**
 * log_event() - A line at @level about event @ev that the journal keeps
 * with its MESSAGE_ID and what @w names (log_event_fields), so that
 * "journalctl MESSAGE_ID=..." or "journalctl PEER=b" finds it; other
 * sinks get the message alone.
 */
void
log_event(enum log_event ev, enum log_level level, const struct log_where *w,
	  const char *fmt, ...)
{
	va_list ap;

	if (level > __atomic_load_n(&log_current, __ATOMIC_RELAXED))
		return;
	va_start(ap, fmt);
	log_event_v(ev, level, w, fmt, ap);
	va_end(ap);
}

/* Warning with strerror(errno) appended. */
void
log_warn(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_WARN, saved, fmt, ap);
	va_end(ap);
	errno = saved;
}

void
log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_WARN, 0, fmt, ap);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_INFO, 0, fmt, ap);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_DEBUG, 0, fmt, ap);
	va_end(ap);
}

/*
 * Repeated warnings of one kind from one source (a target that refuses
 * every connection, a host that fails authentication again and again)
 * are rate limited, as the kernel's printk_ratelimit does: in each window
 * of log_rl_interval_ms the first log_rl_burst lines of a kind and source
 * are written, the rest only counted, and the first line written after
 * the window is preceded by "KIND SOURCE: N similar messages suppressed".
 * A fixed table of LOG_RL_SLOTS, shared by the threads under a lock; a
 * kind and source that takes the slot of another says the other's count
 * first, and log_rl_flush() says those still pending at stop.
 */
#define LOG_RL_SLOTS 64

struct log_rl {
	char key[96]; /* "KIND SOURCE", truncated; empty: free */
	uint64_t start_ms;
	unsigned int n;
	unsigned long suppressed;
};

static struct log_rl log_rl_tab[LOG_RL_SLOTS];
static pthread_mutex_t log_rl_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t log_rl_interval_ms = LOG_RL_INTERVAL_MS;
static unsigned int log_rl_burst = LOG_RL_BURST;

/* The window and burst (tests shorten the window). */
void
log_rl_limits(uint64_t interval_ms, unsigned int burst)
{
	pthread_mutex_lock(&log_rl_lock);
	log_rl_interval_ms = interval_ms;
	log_rl_burst = burst;
	memset(log_rl_tab, 0, sizeof(log_rl_tab));
	pthread_mutex_unlock(&log_rl_lock);
}

static void
log_rl_said(const char *key, unsigned long n)
{
	char msg[160];

	/* a key is at most a slot's (the bound the compiler cannot see
	 * where a whole table of them is flushed) */
	snprintf(msg, sizeof(msg), "%.*s: %lu similar message%s suppressed",
		 (int)sizeof(log_rl_tab[0].key) - 1, key, n, n == 1 ? "" : "s");
	log_emit(LOG_LEVEL_WARN, msg, NULL, 0);
}

/* Whether a line of kind and source may be written now. */
static bool
log_rl_pass(const char *kind, const char *source)
{
	char key[sizeof(log_rl_tab[0].key)], old[sizeof(key)] = "";
	unsigned long old_n = 0, n = 0;
	uint32_t h = 2166136261u; /* FNV-1a */
	struct log_rl *rl;
	uint64_t now = now_ms();
	const char *p;
	bool pass;

	snprintf(key, sizeof(key), "%s %s", kind, source);
	for (p = key; *p != '\0'; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	pthread_mutex_lock(&log_rl_lock);
	rl = &log_rl_tab[h % LOG_RL_SLOTS];
	if (strcmp(rl->key, key) != 0) {
		if (rl->suppressed > 0) {
			memcpy(old, rl->key, sizeof(old));
			old_n = rl->suppressed;
		}
		memcpy(rl->key, key, sizeof(rl->key));
		rl->start_ms = now;
		rl->n = 0;
		rl->suppressed = 0;
	} else if (now - rl->start_ms >= log_rl_interval_ms) {
		n = rl->suppressed;
		rl->start_ms = now;
		rl->n = 0;
		rl->suppressed = 0;
	}
	pass = rl->n < log_rl_burst;
	if (pass)
		rl->n++;
	else
		rl->suppressed++;
	pthread_mutex_unlock(&log_rl_lock);
	if (old_n > 0)
		log_rl_said(old, old_n);
	if (n > 0)
		log_rl_said(key, n);
	return pass;
}

/*
 * Say the count of every kind and source with lines left out and not yet
 * said (at stop, so that no suppressed count is lost), and forget them.
 */
void
log_rl_flush(void)
{
	struct log_rl pending[LOG_RL_SLOTS];
	int i, n = 0;

	pthread_mutex_lock(&log_rl_lock);
	for (i = 0; i < LOG_RL_SLOTS; i++) {
		if (log_rl_tab[i].suppressed > 0)
			pending[n++] = log_rl_tab[i];
		log_rl_tab[i].suppressed = 0;
	}
	pthread_mutex_unlock(&log_rl_lock);
	for (i = 0; i < n; i++)
		log_rl_said(pending[i].key, pending[i].suppressed);
}

/* log_warn, rate limited per kind and source (above). */
void
log_warn_rl(const char *kind, const char *source, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	if (LOG_LEVEL_WARN > __atomic_load_n(&log_current, __ATOMIC_RELAXED) ||
	    !log_rl_pass(kind, source)) {
		errno = saved;
		return;
	}
	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_WARN, saved, fmt, ap);
	va_end(ap);
	errno = saved;
}

/* log_warnx, rate limited per kind and source (above). */
void
log_warnx_rl(const char *kind, const char *source, const char *fmt, ...)
{
	va_list ap;

	if (LOG_LEVEL_WARN > __atomic_load_n(&log_current, __ATOMIC_RELAXED) ||
	    !log_rl_pass(kind, source))
		return;
	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_WARN, 0, fmt, ap);
	va_end(ap);
}

/* log_event() at warning level, rate limited per kind and source. */
void
log_event_rl(const char *kind, const char *source, enum log_event ev,
	     const struct log_where *w, const char *fmt, ...)
{
	va_list ap;

	if (LOG_LEVEL_WARN > __atomic_load_n(&log_current, __ATOMIC_RELAXED) ||
	    !log_rl_pass(kind, source))
		return;
	va_start(ap, fmt);
	log_event_v(ev, LOG_LEVEL_WARN, w, fmt, ap);
	va_end(ap);
}

/* Startup only: log with strerror(errno) and exit 1. */
void
fatal(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_ERR, saved, fmt, ap);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_ERR, 0, fmt, ap);
	va_end(ap);
	exit(1);
}
