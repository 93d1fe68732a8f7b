// SPDX-License-Identifier: BSD-2-Clause
/*
 * impostor: a hostile responder on a peer's port, for the tests of
 * issue 29 (H1).  It has no key.  It listens where a peer daemon did and
 * answers what a rule-side daemon sends there: a CLC PROPOSAL gets a
 * DECLINE (no RDMA device), so the daemon turns to TCP; a fallback HELLO
 * gets the lie the mode names:
 *
 *   resumed          RESUMED built from the HELLO's own counts, nothing
 *                    before it (no CHALLENGE, no RESULT)
 *   result0-resumed  RESULT 0 without a CHALLENGE, then RESUMED
 *   challenge        a CHALLENGE with a random nonce and a garbage MAC
 *
 * After its answer it reads and counts every byte the daemon still sends
 * ("after"), and writes a marker into the stream: at once after a
 * RESUMED, after a CHALLENGE only once the daemon answers it.  A daemon
 * that holds the rule "nothing from a peer is believed before its proof"
 * sends it nothing after the answer, and its client never sees the
 * marker.  One line per connection when it ends, one summary at the end.
 *
 * The messages come from the daemon's own encoders (fallback_wire.h,
 * clc_wire.h; linked from libsmcproxy.a).  One thread, poll(2).
 */
#include <sys/random.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "smcproxyd.h"
#include "clc_wire.h"
#include "fallback_wire.h"

#define IMP_CONNS_MAX 64
#define IMP_MODES_MAX 8
#define IMP_MSG_MAX (FB_MSG_MAX > CLC_MSG_MAX ? FB_MSG_MAX : CLC_MSG_MAX)

enum imp_mode {
	IMP_RESUMED,
	IMP_RESULT0_RESUMED,
	IMP_CHALLENGE,
};

static const char *const imp_mode_names[] = {
	[IMP_RESUMED] = "resumed",
	[IMP_RESULT0_RESUMED] = "result0-resumed",
	[IMP_CHALLENGE] = "challenge",
};

struct imp_conn {
	int fd;
	unsigned int id;
	char from[ADDR_STRLEN];
	unsigned char msg[IMP_MSG_MAX];
	size_t msg_len;
	bool answered;
	bool challenged; /* it got a CHALLENGE: marker once it talks */
	bool marker_due;
	bool marker_sent;
	uint64_t after;	      /* bytes received after the answer */
	char first_after[24]; /* what those bytes began with */
	char got[200];
	char sent[160];
};

static struct {
	struct addr listen;
	enum imp_mode modes[IMP_MODES_MAX];
	int nmodes;
	bool reuseport;
	double seconds;
	const char *marker;
	FILE *log;
} opt;

static struct {
	unsigned int conns, declined, hellos, unknown;
	uint64_t after;
	unsigned int next_mode;
} tally;

static volatile sig_atomic_t imp_stop;

static void
imp_usage(FILE *f, int status)
{
	fputs("usage: impostor -l ADDR:PORT [-m MODE[,MODE...]] [-t SECONDS]\n"
	      "                [--reuseport] [--marker STRING] [-o FILE]\n"
	      "\n"
	      "A hostile responder without a key on a peer daemon's port "
	      "(issue 29, H1).\n"
	      "A CLC PROPOSAL gets a DECLINE (no RDMA device); a fallback "
	      "HELLO gets,\n"
	      "by MODE (a list is used in turn, one per HELLO):\n"
	      "  resumed          RESUMED from the HELLO's own counts, no "
	      "RESULT, no\n"
	      "                   CHALLENGE (default)\n"
	      "  result0-resumed  RESULT 0 without a CHALLENGE, then "
	      "RESUMED\n"
	      "  challenge        a CHALLENGE with a random nonce and a "
	      "garbage MAC\n"
	      "Every byte received after the answer is counted, and a marker "
	      "(default\n"
	      "\"IMPOSTOR-BYTES\\n\") is written into the stream: after a "
	      "RESUMED at once,\n"
	      "after a CHALLENGE once the daemon answers it.\n"
	      "\n"
	      "  -l ADDR:PORT    where to listen\n"
	      "  -t SECONDS      stop after this long (default: on SIGTERM "
	      "or SIGINT)\n"
	      "  --reuseport     share the port with a listener of the same "
	      "user\n"
	      "                  (SO_REUSEPORT): be in place before the "
	      "daemon dies\n"
	      "  -o FILE         append the lines to FILE too\n"
	      "\n"
	      "Output: \"listening on ADDR:PORT\", then one line per "
	      "connection as it\n"
	      "ends (\"conn N from ADDR: got ...; sent ...; after=BYTES "
	      "...\"), "
	      "and a\n"
	      "summary (\"impostor: ... after=BYTES\").  exit: 0, 2 usage or "
	      "setup error\n",
	      f);
	exit(status);
}

/* One line to stdout and the -o file, flushed: a test reads it live. */
static void __attribute__((format(printf, 1, 2))) imp_say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
	if (opt.log != NULL) {
		va_start(ap, fmt);
		vfprintf(opt.log, fmt, ap);
		va_end(ap);
		fflush(opt.log);
	}
}

static int
imp_parse_modes(char *list)
{
	char *tok, *save = NULL;
	size_t i;

	opt.nmodes = 0;
	for (tok = strtok_r(list, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		for (i = 0;
		     i < sizeof(imp_mode_names) / sizeof(*imp_mode_names); i++)
			if (strcmp(tok, imp_mode_names[i]) == 0)
				break;
		if (i == sizeof(imp_mode_names) / sizeof(*imp_mode_names) ||
		    opt.nmodes == IMP_MODES_MAX)
			return -EINVAL;
		opt.modes[opt.nmodes++] = (enum imp_mode)i;
	}
	return opt.nmodes > 0 ? 0 : -EINVAL;
}

static void
imp_random(void *buf, size_t len)
{
	if (getrandom(buf, len, 0) != (ssize_t)len)
		memset(buf, 0x5a, len);
}

static int
imp_listen(void)
{
	int fd, one = 1;

	fd = socket(opt.listen.ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    (opt.reuseport &&
	     setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one))) ||
	    bind(fd, (const struct sockaddr *)&opt.listen.ss, opt.listen.len) ||
	    listen(fd, 64)) {
		one = -errno;
		close(fd);
		return one;
	}
	return fd;
}

/* send() all of buf on a fresh, mostly empty socket; false if short. */
static bool
imp_send(struct imp_conn *c, const void *buf, size_t len)
{
	ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL);

	return n == (ssize_t)len;
}

static void
imp_end(struct imp_conn *c, const char *how)
{
	imp_say("conn %u from %s: got %s; sent %s; after=%llu%s%s%s; "
		"marker %s; end: %s\n",
		c->id, c->from, c->got[0] ? c->got : "nothing",
		c->sent[0] ? c->sent : "nothing", (unsigned long long)c->after,
		c->first_after[0] ? " (beginning with " : "", c->first_after,
		c->first_after[0] ? ")" : "",
		c->marker_sent ? "written" : "not written", how);
	tally.after += c->after;
	close(c->fd);
	c->fd = -1;
}

static void
imp_marker(struct imp_conn *c)
{
	size_t len = strlen(opt.marker);

	c->marker_due = false;
	c->marker_sent = imp_send(c, opt.marker, len);
}

/* The first message was a PROPOSAL: decline it, as a daemon without RDMA. */
static void
imp_proposal(struct imp_conn *c)
{
	struct clc_proposal_info prop;
	struct clc_decline_info d;
	uint8_t out[sizeof(struct clc_decline)];
	uint32_t decl = 0;
	int len;

	if (clc_proposal_decode(c->msg, c->msg_len, &prop, &decl) == 0)
		snprintf(c->got, sizeof(c->got), "CLC PROPOSAL name=%s",
			 prop.name);
	else
		snprintf(c->got, sizeof(c->got),
			 "a CLC message that is no PROPOSAL (0x%08x)",
			 (unsigned int)decl);
	memset(&d, 0, sizeof(d));
	imp_random(d.system_id, sizeof(d.system_id));
	d.diagnosis = CLC_DECL_NOSMCRDEV;
	len = clc_decline_encode(out, sizeof(out), &d);
	if (len > 0 && imp_send(c, out, (size_t)len)) {
		snprintf(c->sent, sizeof(c->sent), "CLC DECLINE 0x%08x (%s)",
			 (unsigned int)d.diagnosis,
			 clc_decline_name(d.diagnosis));
		tally.declined++;
	} else {
		snprintf(c->sent, sizeof(c->sent), "nothing (send failed)");
	}
	c->answered = true;
}

static size_t
imp_challenge(unsigned char *buf)
{
	struct fb_challenge ch;

	memset(&ch, 0, sizeof(ch));
	memcpy(ch.hdr.eyecatcher, FB_EYECATCHER, sizeof(ch.hdr.eyecatcher));
	ch.hdr.version = FB_VERSION;
	ch.hdr.type = FB_CHALLENGE;
	ch.hdr.length = htons(sizeof(ch));
	imp_random(ch.nonce, sizeof(ch.nonce));
	imp_random(ch.mac, sizeof(ch.mac));
	memcpy(buf, &ch, sizeof(ch));
	return sizeof(ch);
}

/*
 * The first message was a HELLO: answer with this turn's lie.  RESUMED
 * mirrors the HELLO: we "received" what it says is in our buffer, and
 * resume our sending where it says it received.
 */
static void
imp_hello(struct imp_conn *c)
{
	unsigned char out[sizeof(struct fb_result) + sizeof(struct fb_resumed) +
			  sizeof(struct fb_challenge)];
	struct fb_hello_info hi;
	enum imp_mode mode;
	size_t len = 0;
	int n;

	if (fb_hello_decode(c->msg, c->msg_len, &hi)) {
		snprintf(c->got, sizeof(c->got), "a malformed HELLO");
		c->answered = true;
		return;
	}
	tally.hellos++;
	mode = opt.modes[tally.next_mode++ % (unsigned int)opt.nmodes];
	n = snprintf(c->got, sizeof(c->got),
		     "HELLO name=%s export=%s flags=0x%02x", hi.name, hi.export,
		     hi.flags);
	if (hi.flags & FB_FLAG_RESUME)
		snprintf(c->got + n, sizeof(c->got) - (size_t)n,
			 " resume rx_off=%llu tx_fin=%llu",
			 (unsigned long long)hi.rx_off,
			 (unsigned long long)hi.tx_fin);
	switch (mode) {
	case IMP_RESULT0_RESUMED:
		len = fb_result_encode(out, 0);
		/* fall through */
	case IMP_RESUMED:
		len += fb_resumed_encode(out + len, hi.tx_fin, hi.rx_off);
		c->marker_due = true;
		break;
	case IMP_CHALLENGE:
		len = imp_challenge(out);
		c->challenged = true;
		break;
	}
	if (imp_send(c, out, len))
		snprintf(c->sent, sizeof(c->sent), "mode=%s %s",
			 imp_mode_names[mode],
			 mode == IMP_CHALLENGE ? "CHALLENGE (garbage MAC)" :
			 mode == IMP_RESUMED   ? "RESUMED" :
						 "RESULT 0 + RESUMED");
	else
		snprintf(c->sent, sizeof(c->sent),
			 "mode=%s nothing (send "
			 "failed)",
			 imp_mode_names[mode]);
	c->answered = true;
	if (c->marker_due)
		imp_marker(c);
}

/*
 * The length of the message whose header is in c->msg (CLC or fallback,
 * told apart by the eyecatcher, as the daemon's peer port does), or 0.
 */
static size_t
imp_msg_length(const struct imp_conn *c)
{
	uint16_t length;
	uint32_t decl;
	uint8_t type;

	if (clc_hdr_check(c->msg, c->msg_len, &type, &length, &decl) == 0 ||
	    fb_hdr_check(c->msg, c->msg_len, &type, &length) == 0)
		return length;
	return 0;
}

/* Read the first message whole, never a byte past it, and answer it. */
static void
imp_first(struct imp_conn *c)
{
	size_t need = sizeof(struct fb_hdr);
	ssize_t n;

	for (;;) {
		if (c->msg_len >= sizeof(struct fb_hdr)) {
			need = imp_msg_length(c);
			if (need == 0) {
				snprintf(c->got, sizeof(c->got),
					 "%zu bytes of no message we know",
					 c->msg_len);
				tally.unknown++;
				imp_end(c, "closed by us");
				return;
			}
			if (c->msg_len == need)
				break;
		}
		n = recv(c->fd, c->msg + c->msg_len, need - c->msg_len, 0);
		if (n > 0) {
			c->msg_len += (size_t)n;
			continue;
		}
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			return;
		snprintf(c->got, sizeof(c->got), "%zu bytes, then %s",
			 c->msg_len, n == 0 ? "EOF" : strerror(errno));
		imp_end(c, "closed by the daemon");
		return;
	}
	if (memcmp(c->msg, CLC_EYECATCHER, 4) == 0)
		imp_proposal(c);
	else
		imp_hello(c);
}

/* After the answer: count what comes, note what it begins with. */
static void
imp_after(struct imp_conn *c)
{
	unsigned char buf[65536];
	uint16_t length;
	uint8_t type;
	ssize_t n;

	n = recv(c->fd, buf, sizeof(buf), 0);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		imp_end(c, n == 0 ? "EOF from the daemon" : strerror(errno));
		return;
	}
	if (c->after == 0) {
		if (fb_hdr_check(buf, (size_t)n, &type, &length) == 0)
			snprintf(c->first_after, sizeof(c->first_after),
				 "fallback type %u", type);
		else
			snprintf(c->first_after, sizeof(c->first_after),
				 "%02x%02x%02x%02x...", buf[0],
				 n > 1 ? buf[1] : 0, n > 2 ? buf[2] : 0,
				 n > 3 ? buf[3] : 0);
		c->marker_due = c->challenged && !c->marker_sent;
	}
	c->after += (uint64_t)n;
	if (c->marker_due)
		imp_marker(c);
}

static void
imp_accept(int lfd, struct imp_conn *conns)
{
	struct addr from;
	int fd, i, one = 1;

	from.len = sizeof(from.ss);
	fd = accept4(lfd, (struct sockaddr *)&from.ss, &from.len,
		     SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd == -1)
		return;
	for (i = 0; i < IMP_CONNS_MAX && conns[i].fd >= 0; i++)
		;
	if (i == IMP_CONNS_MAX) {
		imp_say("impostor: more than %d connections: one refused\n",
			IMP_CONNS_MAX);
		close(fd);
		return;
	}
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	memset(&conns[i], 0, sizeof(conns[i]));
	conns[i].fd = fd;
	conns[i].id = ++tally.conns;
	addr_str(&from, conns[i].from, sizeof(conns[i].from));
}

static void
imp_on_signal(int sig)
{
	(void)sig;
	imp_stop = 1;
}

static double
imp_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"listen", required_argument, NULL, 'l'},
		{"mode", required_argument, NULL, 'm'},
		{"seconds", required_argument, NULL, 't'},
		{"reuseport", no_argument, NULL, 'r'},
		{"marker", required_argument, NULL, 'k'},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static struct imp_conn conns[IMP_CONNS_MAX];
	struct pollfd pfd[IMP_CONNS_MAX + 1];
	struct imp_conn *map[IMP_CONNS_MAX + 1];
	char where[ADDR_STRLEN], modes[] = "resumed";
	bool have_listen = false;
	double deadline = 0;
	int ch, lfd, i, n, np;

	opt.marker = "IMPOSTOR-BYTES\n";
	imp_parse_modes(modes);
	while ((ch = getopt_long(argc, argv, "l:m:t:o:h", longopts, NULL)) !=
	       -1) {
		switch (ch) {
		case 'l':
			if (addr_parse(optarg, &opt.listen))
				imp_usage(stderr, 2);
			have_listen = true;
			break;
		case 'm':
			if (imp_parse_modes(optarg))
				imp_usage(stderr, 2);
			break;
		case 't':
			opt.seconds = atof(optarg);
			break;
		case 'r':
			opt.reuseport = true;
			break;
		case 'k':
			opt.marker = optarg;
			break;
		case 'o':
			opt.log = fopen(optarg, "a");
			if (opt.log == NULL) {
				perror(optarg);
				return 2;
			}
			break;
		case 'h':
			imp_usage(stdout, 0);
			break;
		default:
			imp_usage(stderr, 2);
		}
	}
	if (!have_listen || optind != argc || opt.marker[0] == '\0')
		imp_usage(stderr, 2);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, imp_on_signal);
	signal(SIGINT, imp_on_signal);
	lfd = imp_listen();
	if (lfd < 0) {
		fprintf(stderr, "impostor: listen on %s: %s\n",
			addr_str(&opt.listen, where, sizeof(where)),
			strerror(-lfd));
		return 2;
	}
	for (i = 0; i < IMP_CONNS_MAX; i++)
		conns[i].fd = -1;
	imp_say("listening on %s\n",
		addr_str(&opt.listen, where, sizeof(where)));
	if (opt.seconds > 0)
		deadline = imp_now() + opt.seconds;
	while (!imp_stop && (deadline == 0 || imp_now() < deadline)) {
		pfd[0].fd = lfd;
		pfd[0].events = POLLIN;
		map[0] = NULL;
		np = 1;
		for (i = 0; i < IMP_CONNS_MAX; i++) {
			if (conns[i].fd < 0)
				continue;
			pfd[np].fd = conns[i].fd;
			pfd[np].events = POLLIN;
			map[np++] = &conns[i];
		}
		n = poll(pfd, (nfds_t)np, 100);
		if (n <= 0)
			continue;
		for (i = 1; i < np; i++) {
			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (map[i]->answered)
				imp_after(map[i]);
			else
				imp_first(map[i]);
		}
		if (pfd[0].revents & POLLIN)
			imp_accept(lfd, conns);
	}
	for (i = 0; i < IMP_CONNS_MAX; i++)
		if (conns[i].fd >= 0)
			imp_end(&conns[i],
				"still open when the impostor stopped");
	close(lfd);
	imp_say("impostor: %u connections, %u PROPOSALs declined, %u HELLOs "
		"answered, %u unknown; after=%llu\n",
		tally.conns, tally.declined, tally.hellos, tally.unknown,
		(unsigned long long)tally.after);
	if (opt.log != NULL)
		fclose(opt.log);
	return 0;
}
