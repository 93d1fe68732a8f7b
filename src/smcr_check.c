// SPDX-License-Identifier: BSD-2-Clause
/*
 * A live check of a kernel SMC-R server (smcproxyctl check smc
 * HOST:PORT, control_check.c), as smc_chk -C probes one: the TCP connect with
 * the SMC-R option on its SYN, as a target_smc rule connects (sock.c,
 * smc_opt.c); if the server echoes it, the rule side's own PROPOSAL
 * (smcr_proposal_build) and the server's answer, ACCEPT or DECLINE with its
 * code.  An ACCEPT is ended at once with our DECLINE, so that the server
 * keeps no group half made.  It runs on the control thread, stepped every
 * few milliseconds, never blocking; it counts nothing and tells the
 * kernel host table (khost.c) nothing: a check changes nothing.
 */
#include <sys/socket.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "smcproxyd.h"
#include "clc_wire.h"
#include "smcr_clc_wire.h"
#include "smc_opt.h"

#define SMCR_CHECK_CONNECT_MS 5000 /* the TCP connect */
#define SMCR_CHECK_CLC_MS 6000	   /* the kernel's CLC_WAIT_TIME */

/* The check ends with result r and why (printf-style); its socket goes. */
static bool smcr_check_end(struct smcr_check *c, enum smcr_check_result r,
			   const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static bool
smcr_check_end(struct smcr_check *c, enum smcr_check_result r, const char *fmt,
	       ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->error, sizeof(c->error), fmt, ap);
	va_end(ap);
	c->result = r;
	c->done = true;
	smcr_check_free(c);
	return true;
}

/* A check of the kernel SMC-R server at to, with conf's kernel_smc. */
void
smcr_check_init(struct smcr_check *c, const struct conf *conf,
		const struct addr *to)
{
	memset(c, 0, sizeof(*c));
	c->conf = conf;
	c->to = *to;
	c->fd = -1;
	c->started_us = now_us();
	c->deadline_ms = now_ms() + SMCR_CHECK_CONNECT_MS;
}

/* Its socket and buffer go; the result stays. */
void
smcr_check_free(struct smcr_check *c)
{
	if (c->fd != -1)
		close(c->fd);
	c->fd = -1;
	free(c->buf);
	c->buf = NULL;
}

/* Our DECLINE of code to the server, as the rule side sends one. */
static int
smcr_check_decline(struct smcr_check *c, uint32_t code)
{
	struct smcr_clc_decline_info d;
	uint8_t msg[sizeof(struct smcr_clc_decline)];
	int n;

	memset(&d, 0, sizeof(d));
	d.version = SMCR_CLC_VERSION;
	d.diagnosis = code;
	d.os_type = SMCR_CLC_OS_LINUX;
	memcpy(d.system_id, c->sysid, sizeof(d.system_id));
	n = smcr_clc_decline_encode(msg, sizeof(msg), &d);
	if (n < 0 || send(c->fd, msg, (size_t)n, MSG_NOSIGNAL) != n)
		return -EPIPE;
	return 0;
}

/* The connect ended (or not yet): whether the server echoed the option. */
static bool
smcr_check_connected(struct smcr_check *c)
{
	struct pollfd pfd = {c->fd, POLLOUT, 0};
	unsigned char rnd[AUTH_NONCE_LEN];
	char buf[ADDR_STRLEN];
	socklen_t len = sizeof(int);
	uint32_t code = 0;
	int err = 0, n;

	addr_str(&c->to, buf, sizeof(buf));
	if (poll(&pfd, 1, 0) == 0) {
		if (now_ms() < c->deadline_ms)
			return false;
		return smcr_check_end(c, SMCR_CHECK_UNREACHABLE,
				      "connect to %s timed out", buf);
	}
	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
		err = errno;
	if (err != 0)
		return smcr_check_end(c, SMCR_CHECK_UNREACHABLE,
				      "connect to %s: %s", buf, strerror(err));
	c->connect_us = now_us() - c->started_us;
	c->connected = true;
	if (!smc_opt_attached())
		return smcr_check_end(c, SMCR_CHECK_NO_OPTION,
				      "no SMC-R option on our SYN: %s",
				      smc_opt_state());
	switch (smc_opt_connected(c->fd)) {
	case SMC_OPT_ECHOED:
		break;
	case SMC_OPT_PLAIN:
		return smcr_check_end(c, SMCR_CHECK_PLAIN,
				      "its SYN-ACK did not echo the SMC-R "
				      "option: plain TCP");
	default:
		return smcr_check_end(c, SMCR_CHECK_NO_OPTION,
				      "the SMC-R option's program did not "
				      "see the connect");
	}
	/* a system id of the check's own: no group of ours to match */
	auth_nonce(rnd);
	memcpy(c->sysid, rnd, sizeof(c->sysid));
	c->buf = malloc(SMCR_CLC_MSG_MAX);
	if (c->buf == NULL)
		return smcr_check_end(c, SMCR_CHECK_BROKEN, "out of memory");
	n = smcr_proposal_build(c->conf, c->fd, c->sysid, c->buf, &code);
	if (n == -EINVAL) {
		/* owed a PROPOSAL or a DECLINE: the DECLINE, as a rule does */
		c->decline = code;
		(void)smcr_check_decline(c, code);
		return smcr_check_end(
			c, SMCR_CHECK_NOT_PROPOSED, "no PROPOSAL from here: %s",
			code == CLC_DECL_NOUEID ? "kernel_smc.ueids is empty" :
						  "SMC-Rv2 is IPv4 only");
	}
	if (n < 0)
		return smcr_check_end(c, SMCR_CHECK_BROKEN, "out of memory");
	if (send(c->fd, c->buf, (size_t)n, MSG_NOSIGNAL) != n)
		return smcr_check_end(c, SMCR_CHECK_BROKEN,
				      "the connection broke before our "
				      "PROPOSAL went");
	c->deadline_ms = now_ms() + SMCR_CHECK_CLC_MS;
	return false;
}

/* The server's answer, whole in c->buf: what it says. */
static bool
smcr_check_answer(struct smcr_check *c, uint8_t type)
{
	struct smcr_clc_decline_info d;
	struct smcr_clc_accept_info *a;
	uint32_t code = 0;

	if (type == CLC_DECLINE) {
		if (smcr_clc_decline_decode(c->buf, c->len, &d, &code) != 0)
			return smcr_check_end(c, SMCR_CHECK_BROKEN,
					      "a malformed DECLINE");
		c->decline = d.diagnosis;
		return smcr_check_end(c, SMCR_CHECK_DECLINED, "%s",
				      clc_decline_desc(d.diagnosis));
	}
	a = calloc(1, sizeof(*a));
	if (a == NULL)
		return smcr_check_end(c, SMCR_CHECK_BROKEN, "out of memory");
	if (smcr_clc_accept_decode(c->buf, c->len, a, &code) != 0) {
		free(a);
		(void)smcr_check_decline(c, code);
		return smcr_check_end(c, SMCR_CHECK_BROKEN,
				      "a malformed ACCEPT (we DECLINEd it "
				      "%s)",
				      clc_decline_name(code));
	}
	c->first_contact = a->first_contact;
	c->release = a->first_contact ? a->release : 0;
	free(a);
	/* the group it made for us is not to be used: it ends it */
	c->decline = CLC_DECL_PEERDECL;
	if (smcr_check_decline(c, CLC_DECL_PEERDECL) != 0)
		return smcr_check_end(c, SMCR_CHECK_ACCEPTED,
				      "its ACCEPT came, the connection broke "
				      "before our DECLINE");
	return smcr_check_end(c, SMCR_CHECK_ACCEPTED, "%s", "");
}

/*
 * One step of check c: true when it has its result (c->result,
 * c->decline, c->error), its connection then closed.
 */
bool
smcr_check_step(struct smcr_check *c)
{
	size_t need;
	uint32_t code;
	uint16_t length;
	uint8_t type;
	ssize_t n;
	int rc;

	if (c->done)
		return true;
	if (c->fd == -1) {
		rc = sock_connect(&c->to, NULL, c->conf, true, &c->fd);
		if (rc != 0 && rc != -EINPROGRESS) {
			char buf[ADDR_STRLEN];

			return smcr_check_end(
				c, SMCR_CHECK_UNREACHABLE, "connect to %s: %s",
				addr_str(&c->to, buf, sizeof(buf)),
				strerror(-rc));
		}
	}
	if (!c->connected)
		return smcr_check_connected(c);
	/* exactly the message, as smcr_read: header, then its length */
	for (;;) {
		need = c->want ? c->want : sizeof(struct clc_hdr);
		if (c->len == need && c->want)
			return smcr_check_answer(c, c->type);
		n = recv(c->fd, c->buf + c->len, need - c->len, 0);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return smcr_check_end(c, SMCR_CHECK_BROKEN,
					      "the server %s the connection "
					      "after our PROPOSAL",
					      n == 0 ? "closed" : "reset");
		if (n < 0)
			break;
		c->len += (size_t)n;
		if (c->want || c->len < sizeof(struct clc_hdr))
			continue;
		if (smcr_clc_hdr_check(c->buf, c->len, &type, &length, &code) ||
		    (type != CLC_ACCEPT && type != CLC_DECLINE))
			return smcr_check_end(c, SMCR_CHECK_BROKEN,
					      "its answer to our PROPOSAL is "
					      "no CLC ACCEPT or DECLINE");
		c->type = type;
		c->want = length;
	}
	if (now_ms() >= c->deadline_ms)
		return smcr_check_end(c, SMCR_CHECK_BROKEN,
				      "no answer to our PROPOSAL in %d s",
				      SMCR_CHECK_CLC_MS / 1000);
	return false;
}
