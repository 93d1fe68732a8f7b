// SPDX-License-Identifier: BSD-2-Clause
/*
 * Socket addresses as the config writes them: "192.0.2.1:7100",
 * "[2001:db8::1]:7100", "localhost:80" is refused (numeric only, so a
 * config means the same thing on every start and no resolver is needed).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smcproxyd.h"

static int
addr_parse_ip(const char *host, uint16_t port, struct addr *out)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)&out->ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&out->ss;

	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		out->len = sizeof(*sin);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		out->len = sizeof(*sin6);
		return 0;
	}
	return -EINVAL;
}

/* Parse "IPv4:port" or "[IPv6]:port"; port 1..65535.  0 or -EINVAL. */
int
addr_parse(const char *s, struct addr *out)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *colon, *h = s;
	size_t hlen;
	char *end;
	long port;

	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (close == NULL || close[1] != ':')
			return -EINVAL;
		h = s + 1;
		hlen = (size_t)(close - h);
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL || memchr(s, ':', (size_t)(colon - s)))
			return -EINVAL;
		hlen = (size_t)(colon - s);
	}
	if (hlen == 0 || hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	if (colon[1] < '0' || colon[1] > '9')
		return -EINVAL;
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno || *end != '\0' || port < 1 || port > 65535)
		return -EINVAL;
	return addr_parse_ip(host, (uint16_t)port, out);
}

/* Parse a bare IPv4 or IPv6 address (port 0).  0 or -EINVAL. */
int
addr_parse_host(const char *s, struct addr *out)
{
	return addr_parse_ip(s, 0, out);
}

/* Format as "ip:port" / "[ip6]:port" into buf; returns buf. */
const char *
addr_str(const struct addr *a, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];

	if (a->ss.ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)&a->ss;

		inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, ntohs(sin->sin_port));
	} else if (a->ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)&a->ss;

		inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
		snprintf(buf, len, "[%s]:%u", host, ntohs(sin6->sin6_port));
	} else {
		snprintf(buf, len, "?");
	}
	return buf;
}

/* The address a RoCE v2 GID is (IPv4-mapped: the IPv4 one), port 0. */
void
addr_of_gid(const uint8_t gid[16], struct addr *out)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0,    0,
					   0, 0, 0, 0, 0xff, 0xff};
	struct sockaddr_in *s4 = (struct sockaddr_in *)&out->ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&out->ss;

	memset(out, 0, sizeof(*out));
	if (memcmp(gid, mapped, sizeof(mapped)) == 0) {
		s4->sin_family = AF_INET;
		memcpy(&s4->sin_addr, gid + 12, 4);
		out->len = sizeof(*s4);
		return;
	}
	s6->sin6_family = AF_INET6;
	memcpy(&s6->sin6_addr, gid, 16);
	out->len = sizeof(*s6);
}

/* Same IP address, ports ignored (IPv4-mapped IPv6 equals its IPv4). */
bool
addr_same_host(const struct addr *a, const struct addr *b)
{
	struct in_addr a4, b4;
	int fa = 0, fb = 0;
	const struct sockaddr_in6 *s6;

	if (a->ss.ss_family == AF_INET) {
		a4 = ((const struct sockaddr_in *)&a->ss)->sin_addr;
		fa = 1;
	} else if (a->ss.ss_family == AF_INET6) {
		s6 = (const void *)&a->ss;
		if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
			memcpy(&a4, &s6->sin6_addr.s6_addr[12], 4);
			fa = 1;
		}
	}
	if (b->ss.ss_family == AF_INET) {
		b4 = ((const struct sockaddr_in *)&b->ss)->sin_addr;
		fb = 1;
	} else if (b->ss.ss_family == AF_INET6) {
		s6 = (const void *)&b->ss;
		if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
			memcpy(&b4, &s6->sin6_addr.s6_addr[12], 4);
			fb = 1;
		}
	}
	if (fa && fb)
		return a4.s_addr == b4.s_addr;
	if (fa || fb || a->ss.ss_family != b->ss.ss_family)
		return false;
	return memcmp(&((const struct sockaddr_in6 *)&a->ss)->sin6_addr,
		      &((const struct sockaddr_in6 *)&b->ss)->sin6_addr,
		      sizeof(struct in6_addr)) == 0;
}

/* The host part of a alone ("192.0.2.1", "2001:db8::1"); false if none. */
bool
addr_host(const struct addr *a, char *buf, size_t len)
{
	if (a->ss.ss_family == AF_INET)
		return inet_ntop(
			       AF_INET,
			       &((const struct sockaddr_in *)&a->ss)->sin_addr,
			       buf, (socklen_t)len) != NULL;
	if (a->ss.ss_family == AF_INET6)
		return inet_ntop(AF_INET6,
				 &((const struct sockaddr_in6 *)&a->ss)
					  ->sin6_addr,
				 buf, (socklen_t)len) != NULL;
	return false;
}

/* Same address and port. */
bool
addr_equal(const struct addr *a, const struct addr *b)
{
	const struct sockaddr_in *a4 = (const void *)&a->ss;
	const struct sockaddr_in *b4 = (const void *)&b->ss;

	if (!addr_same_host(a, b) || a->ss.ss_family != b->ss.ss_family)
		return false;
	/* sin_port and sin6_port sit at the same offset */
	return a4->sin_port == b4->sin_port;
}

/* Whether @a reaches only this host: 127.0.0.0/8, ::1 or their mapped form. */
bool
addr_loopback(const struct addr *a)
{
	const struct sockaddr_in *sin = (const void *)&a->ss;
	const struct sockaddr_in6 *sin6 = (const void *)&a->ss;

	if (a->ss.ss_family == AF_INET)
		return (ntohl(sin->sin_addr.s_addr) >> 24) == 127;
	if (a->ss.ss_family != AF_INET6)
		return false;
	return IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr) ||
	       (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr) &&
		sin6->sin6_addr.s6_addr[12] == 127);
}

/*
 * Bind socket fd to the host of a, any port, before it connects: the
 * source address a peer's connections leave from.  0 or -errno.
 */
int
addr_bind_source(int fd, const struct addr *a)
{
	struct addr any = *a;
	struct sockaddr_in *sin = (struct sockaddr_in *)&any.ss;

	/* sin_port and sin6_port sit at the same offset */
	sin->sin_port = 0;
	if (bind(fd, (const struct sockaddr *)&any.ss, any.len) == -1)
		return -errno;
	return 0;
}

/* a's address as 16 bytes, IPv4 as IPv4-mapped IPv6; false if neither. */
static bool
addr_bytes16(const struct addr *a, uint8_t out[16])
{
	const struct sockaddr_in *s4 = (const void *)&a->ss;
	const struct sockaddr_in6 *s6 = (const void *)&a->ss;

	if (a->ss.ss_family == AF_INET6) {
		memcpy(out, &s6->sin6_addr, 16);
		return true;
	}
	if (a->ss.ss_family != AF_INET)
		return false;
	memset(out, 0, 10);
	out[10] = out[11] = 0xff;
	memcpy(out + 12, &s4->sin_addr, 4);
	return true;
}

/*
 * Parse a network, "192.0.2.0/24", "2001:db8::/32", or one host
 * ("192.0.2.7": /32, "2001:db8::7": /128).  Bits past the prefix must be
 * zero, so that "192.0.2.7/24" (a typo for a host or for .0/24) is
 * refused rather than read one way.  0 or -EINVAL.
 */
int
addr_net_parse(const char *s, struct addr_net *out)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *slash = strchr(s, '/');
	size_t hlen = slash ? (size_t)(slash - s) : strlen(s);
	int max, bit;
	char *end;
	long len;

	if (hlen == 0 || hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, hlen);
	host[hlen] = '\0';
	memset(out, 0, sizeof(*out));
	if (addr_parse_ip(host, 0, &out->a) < 0 ||
	    !addr_bytes16(&out->a, out->bytes))
		return -EINVAL;
	max = out->a.ss.ss_family == AF_INET ? 32 : 128;
	len = max;
	if (slash != NULL) {
		if (slash[1] < '0' || slash[1] > '9')
			return -EINVAL;
		errno = 0;
		len = strtol(slash + 1, &end, 10);
		if (errno || *end != '\0' || len < 0 || len > max)
			return -EINVAL;
	}
	out->prefix = (int)len + (max == 32 ? 96 : 0);
	for (bit = out->prefix; bit < 128; bit++)
		if (out->bytes[bit / 8] & (0x80 >> (bit % 8)))
			return -EINVAL;
	return 0;
}

/* Whether a's address is in network n (IPv4-mapped IPv6 as its IPv4). */
bool
addr_net_match(const struct addr_net *n, const struct addr *a)
{
	uint8_t b[16];
	int full = n->prefix / 8, rest = n->prefix % 8;

	if (!addr_bytes16(a, b) || memcmp(b, n->bytes, (size_t)full) != 0)
		return false;
	return rest == 0 ||
	       ((b[full] ^ n->bytes[full]) & (0xff00 >> rest) & 0xff) == 0;
}
