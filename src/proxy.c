// SPDX-License-Identifier: BSD-2-Clause
/*
 * The PROXY protocol (haproxy's proxy-protocol.txt): the v2 header an
 * export with proxy_protocol writes to its target, naming the client the
 * peer named, and the v1 or v2 header a rule with accept_proxy reads from
 * a load balancer in front of it, naming the client behind it.  Only the
 * wire format: accept.c waits for the header, export.c sends it.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smcproxyd.h"

static const uint8_t proxy_v2_sig[12] = {0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d,
					 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a};

#define PROXY_V1_MAX 107 /* the longest v1 line, CRLF included (2.1) */

/*
 * The v2 header (2.2) of a TCP connection from src to dst, both IPv4 or
 * both IPv6, into buf (PROXY_V2_MAX bytes).  With src NULL, or ends of
 * no family it can name: the LOCAL command, after which the target takes
 * the connection's own ends.  Returns its length.
 */
size_t
proxy_header_write(void *buf, const struct addr *src, const struct addr *dst)
{
	uint8_t *p = buf;
	uint16_t len = 0;

	memcpy(p, proxy_v2_sig, sizeof(proxy_v2_sig));
	p[12] = 0x20; /* version 2, LOCAL */
	p[13] = 0x00; /* UNSPEC */
	if (src != NULL && src->ss.ss_family == AF_INET &&
	    dst->ss.ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)&src->ss;
		const struct sockaddr_in *d4 = (const void *)&dst->ss;

		p[12] = 0x21; /* version 2, PROXY */
		p[13] = 0x11; /* TCP over IPv4 */
		memcpy(p + 16, &s4->sin_addr, 4);
		memcpy(p + 20, &d4->sin_addr, 4);
		memcpy(p + 24, &s4->sin_port, 2);
		memcpy(p + 26, &d4->sin_port, 2);
		len = 12;
	} else if (src != NULL && src->ss.ss_family == AF_INET6 &&
		   dst->ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)&src->ss;
		const struct sockaddr_in6 *d6 = (const void *)&dst->ss;

		p[12] = 0x21;
		p[13] = 0x21; /* TCP over IPv6 */
		memcpy(p + 16, &s6->sin6_addr, 16);
		memcpy(p + 32, &d6->sin6_addr, 16);
		memcpy(p + 48, &s6->sin6_port, 2);
		memcpy(p + 50, &d6->sin6_port, 2);
		len = 36;
	}
	p[14] = (uint8_t)(len >> 8);
	p[15] = (uint8_t)len;
	return 16 + (size_t)len;
}

static void
proxy_addr4(struct addr *a, const uint8_t *ip, const uint8_t *port)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)&a->ss;

	memset(a, 0, sizeof(*a));
	s4->sin_family = AF_INET;
	memcpy(&s4->sin_addr, ip, 4);
	memcpy(&s4->sin_port, port, 2);
	a->len = sizeof(*s4);
}

static void
proxy_addr6(struct addr *a, const uint8_t *ip, const uint8_t *port)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&a->ss;

	memset(a, 0, sizeof(*a));
	s6->sin6_family = AF_INET6;
	memcpy(&s6->sin6_addr, ip, 16);
	memcpy(&s6->sin6_port, port, 2);
	a->len = sizeof(*s6);
}

static int
proxy_bad(char *why, size_t whylen, const char *what)
{
	snprintf(why, whylen, "%s", what);
	return -EPROTO;
}

/* A v2 header (2.2) at buf, n bytes of it there; see proxy_header_read. */
static int
proxy_read_v2(const uint8_t *buf, size_t n, struct proxy_header *h, char *why,
	      size_t whylen)
{
	size_t len;

	if (n < 16)
		return 0;
	if ((buf[12] & 0xf0) != 0x20)
		return proxy_bad(why, whylen, "PROXY v2: not version 2");
	len = ((size_t)buf[14] << 8) | buf[15];
	if (16 + len > PROXY_HEADER_MAX)
		return proxy_bad(why, whylen,
				 "PROXY v2: header longer than we take");
	if (n < 16 + len)
		return 0;
	h->len = 16 + len;
	switch (buf[12] & 0x0f) {
	case 0x0: /* LOCAL: the balancer's own connection, a health check */
		h->local = true;
		return 1;
	case 0x1: /* PROXY */
		break;
	default:
		return proxy_bad(why, whylen, "PROXY v2: unknown command");
	}
	/* the addresses' own length; what follows them (TLVs) is skipped */
	switch (buf[13]) {
	case 0x11: /* TCP over IPv4 */
		if (len < 12)
			return proxy_bad(why, whylen,
					 "PROXY v2: IPv4 addresses cut short");
		proxy_addr4(&h->src, buf + 16, buf + 24);
		proxy_addr4(&h->dst, buf + 20, buf + 26);
		return 1;
	case 0x21: /* TCP over IPv6 */
		if (len < 36)
			return proxy_bad(why, whylen,
					 "PROXY v2: IPv6 addresses cut short");
		proxy_addr6(&h->src, buf + 16, buf + 48);
		proxy_addr6(&h->dst, buf + 32, buf + 50);
		return 1;
	case 0x00: /* UNSPEC: the receiver uses the connection's ends */
		h->local = true;
		return 1;
	default:
		return proxy_bad(why, whylen,
				 "PROXY v2: not TCP over IPv4 or IPv6");
	}
}

/* One address and port of a v1 line, family af, into a. */
static bool
proxy_v1_addr(int af, const char *ip, const char *port, struct addr *a)
{
	uint8_t raw[16];
	char *end;
	unsigned long p;
	uint16_t be;

	if (inet_pton(af, ip, raw) != 1)
		return false;
	/* 2.1: a port is 1 to 5 digits, no sign, no leading zero */
	if (port[0] < '1' || port[0] > '9' || strlen(port) > 5)
		return false;
	p = strtoul(port, &end, 10);
	if (*end != '\0' || p > 65535)
		return false;
	be = htons((uint16_t)p);
	if (af == AF_INET)
		proxy_addr4(a, raw, (const uint8_t *)&be);
	else
		proxy_addr6(a, raw, (const uint8_t *)&be);
	return true;
}

/* A v1 line (2.1) at buf, n bytes of it there; see proxy_header_read. */
static int
proxy_read_v1(const uint8_t *buf, size_t n, struct proxy_header *h, char *why,
	      size_t whylen)
{
	char line[PROXY_V1_MAX + 1], *f[6], *save = NULL;
	const uint8_t *cr;
	size_t len;
	int i, af;

	cr = memchr(buf, '\r', n < PROXY_V1_MAX ? n : PROXY_V1_MAX);
	if (cr == NULL)
		return n >= PROXY_V1_MAX ?
			       proxy_bad(why, whylen,
					 "PROXY v1: no CRLF in 107 bytes") :
			       0;
	len = (size_t)(cr - buf);
	if (len + 2 > n)
		return 0;
	if (cr[1] != '\n')
		return proxy_bad(why, whylen, "PROXY v1: CR without LF");
	memcpy(line, buf, len);
	line[len] = '\0';
	h->len = len + 2;
	for (i = 0; i < 6; i++) {
		f[i] = strtok_r(i == 0 ? line : NULL, " ", &save);
		if (f[i] == NULL)
			break;
	}
	if (i >= 2 && strcmp(f[1], "UNKNOWN") == 0) {
		h->local = true;
		return 1;
	}
	if (i != 6 || strtok_r(NULL, " ", &save) != NULL)
		return proxy_bad(why, whylen,
				 "PROXY v1: not PROXY TCP4|TCP6 SRC DST SPORT "
				 "DPORT");
	if (strcmp(f[1], "TCP4") == 0)
		af = AF_INET;
	else if (strcmp(f[1], "TCP6") == 0)
		af = AF_INET6;
	else
		return proxy_bad(
			why, whylen,
			"PROXY v1: protocol not TCP4, TCP6 or UNKNOWN");
	if (!proxy_v1_addr(af, f[2], f[4], &h->src) ||
	    !proxy_v1_addr(af, f[3], f[5], &h->dst))
		return proxy_bad(why, whylen,
				 "PROXY v1: an address or port is not one");
	return 1;
}

/*
 * The PROXY header (v1 or v2) at the start of buf, n bytes there: 1 with
 * *h filled in (h->len bytes are the header; h->local when it names no
 * client: v2 LOCAL or UNSPEC, v1 UNKNOWN), 0 when more bytes are needed to
 * tell, or -EPROTO with why (a few words) when buf does not begin with
 * one, or with one we do not take.
 */
int
proxy_header_read(const void *buf, size_t n, struct proxy_header *h, char *why,
		  size_t whylen)
{
	const uint8_t *b = buf;
	size_t m;

	memset(h, 0, sizeof(*h));
	if (n == 0)
		return 0;
	m = n < sizeof(proxy_v2_sig) ? n : sizeof(proxy_v2_sig);
	if (memcmp(b, proxy_v2_sig, m) == 0)
		return m < sizeof(proxy_v2_sig) ?
			       0 :
			       proxy_read_v2(b, n, h, why, whylen);
	m = n < 6 ? n : 6;
	if (memcmp(b, "PROXY ", m) == 0)
		return m < 6 ? 0 : proxy_read_v1(b, n, h, why, whylen);
	return proxy_bad(why, whylen, "no PROXY header");
}
