// SPDX-License-Identifier: BSD-2-Clause
/*
 * Peer authentication: pre-shared keys, nonces, HMAC-SHA-256 (via
 * libcrypto), rate limiting of failures.  A key is the raw bytes of a file
 * that only its owner may read; anything weaker is refused at load time, so
 * a daemon never runs believing it is authenticated when it is not.
 */
#include <sys/stat.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "smcproxyd.h"

/*
 * Read the pre-shared key in path into key (room for CONF_KEY_MAX bytes) and
 * its length into *len.  The file must be a regular file (not a symlink), owned
 * by root or by us, unreadable to group and others, and hold CONF_KEY_MIN to
 * CONF_KEY_MAX bytes.  Returns 0, or a negative errno with a message for the
 * operator in err.
 */
int
auth_key_load(const char *path, unsigned char *key, size_t *len, char *err,
	      size_t errlen)
{
	unsigned char buf[CONF_KEY_MAX + 1];
	size_t n = 0;
	struct stat st;
	ssize_t r;
	int fd = -1, ret;

	if (errlen > 0)
		err[0] = '\0';
	/* O_NONBLOCK: a FIFO planted at the path must not hang the daemon */
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		ret = -errno;
		if (errno == ELOOP)
			snprintf(err, errlen,
				 "key file %s is a symbolic link; point "
				 "key_file at the file itself",
				 path);
		else
			snprintf(err, errlen, "key file %s: %s", path,
				 strerror(errno));
		goto out;
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		snprintf(err, errlen, "key file %s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = -EINVAL;
		snprintf(err, errlen, "key file %s is not a regular file",
			 path);
		goto out;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		ret = -EPERM;
		snprintf(err, errlen,
			 "key file %s is owned by uid %u; chown it to root",
			 path, (unsigned)st.st_uid);
		goto out;
	}
	if (st.st_mode & 077) {
		ret = -EPERM;
		snprintf(err, errlen,
			 "key file %s is %s by group/others (mode %04o); chmod "
			 "600 it",
			 path, st.st_mode & 044 ? "readable" : "writable",
			 (unsigned)(st.st_mode & 07777));
		goto out;
	}
	/* one byte more than allowed tells a too-long file from a full one */
	while (n < sizeof(buf)) {
		r = read(fd, buf + n, sizeof(buf) - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = -errno;
			snprintf(err, errlen, "key file %s: %s", path,
				 strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > CONF_KEY_MAX) {
		ret = -EFBIG;
		snprintf(err, errlen, "key file %s is longer than %d bytes",
			 path, CONF_KEY_MAX);
		goto out;
	}
	if (n < CONF_KEY_MIN) {
		ret = -EINVAL;
		snprintf(err, errlen,
			 "key file %s has %zu bytes, at least %d are needed "
			 "(head -c 32 /dev/urandom > %s)",
			 path, n, CONF_KEY_MIN, path);
		goto out;
	}
	memcpy(key, buf, n);
	*len = n;
	ret = 0;
out:
	explicit_bzero(buf, sizeof(buf));
	if (fd >= 0)
		close(fd);
	return ret;
}

/* A fresh random nonce (libcrypto's CSPRNG); fatal if it has none. */
void
auth_nonce(unsigned char nonce[AUTH_NONCE_LEN])
{
	if (RAND_bytes(nonce, AUTH_NONCE_LEN) != 1)
		fatalx("%s: RAND_bytes failed", __func__);
}

/*
 * mac = HMAC-SHA-256(key, label || a || b).  The label keeps the two
 * directions' MACs apart; a and b are whole handshake messages.
 */
void
auth_mac(const unsigned char *key, size_t keylen, const char *label,
	 const void *a, size_t alen, const void *b, size_t blen,
	 unsigned char mac[AUTH_MAC_LEN])
{
	unsigned char buf[16 + 2 * 512];
	size_t llen = strlen(label), len = 0;
	unsigned int maclen = AUTH_MAC_LEN;

	if (llen > 16 || alen > 512 || blen > 512)
		fatalx("%s: message too long", __func__);
	memcpy(buf, label, llen);
	len += llen;
	memcpy(buf + len, a, alen);
	len += alen;
	memcpy(buf + len, b, blen);
	len += blen;
	if (HMAC(EVP_sha256(), key, (int)keylen, buf, len, mac, &maclen) ==
		    NULL ||
	    maclen != AUTH_MAC_LEN)
		fatalx("%s: HMAC failed", __func__);
	OPENSSL_cleanse(buf, len);
}

/* Constant-time comparison of two MACs. */
bool
auth_mac_equal(const unsigned char *a, const unsigned char *b)
{
	return CRYPTO_memcmp(a, b, AUTH_MAC_LEN) == 0;
}

/*
 * Failures are rate limited per source host with a token bucket:
 * AUTH_LIMIT_BURST failures at once, then AUTH_LIMIT_RATE per second.
 * One table serves every worker (worker.c says why), under its lock.
 *
 * A full table makes room by forgetting the host that failed least (the
 * most tokens left; of equals the one heard of longest ago), never one
 * that is limited now: a flood of new addresses, each failing once,
 * evicts only its own kind, and a limited host stays limited until its
 * tokens come back.  When every slot holds a limited host the newcomer's
 * failure is not recorded; it still has only preauth_per_source
 * connections and the handshake deadlines.
 */
#define AUTH_LIMIT_BURST 10.0
#define AUTH_LIMIT_RATE 1.0

/* An empty table, ready for any thread. */
void
auth_limit_init(struct auth_limit *al)
{
	memset(al, 0, sizeof(*al));
	pthread_mutex_init(&al->lock, NULL);
}

void
auth_limit_destroy(struct auth_limit *al)
{
	pthread_mutex_destroy(&al->lock);
}

static int
auth_slot(const struct auth_limit *al, const struct addr *src)
{
	int i;

	for (i = 0; i < al->nslots; i++)
		if (addr_same_host(&al->slot[i].src, src))
			return i;
	return -1;
}

/* Slot i's tokens at now_ms, refilled since it was last touched. */
static double
auth_tokens(const struct auth_limit *al, int i, uint64_t now_ms)
{
	uint64_t last = al->slot[i].last_ms;
	double t = al->slot[i].tokens;

	if (now_ms > last)
		t += (double)(now_ms - last) / 1000.0 * AUTH_LIMIT_RATE;
	return t > AUTH_LIMIT_BURST ? AUTH_LIMIT_BURST : t;
}

static void
auth_refill(struct auth_limit *al, int i, uint64_t now_ms)
{
	al->slot[i].tokens = auth_tokens(al, i, now_ms);
	if (now_ms > al->slot[i].last_ms)
		al->slot[i].last_ms = now_ms;
}

/* A slot for a host not in the table: a free one, or the victim's; -1. */
static int
auth_slot_new(struct auth_limit *al, uint64_t now_ms)
{
	double t, best = 0.0;
	int i, victim = -1;

	if (al->nslots < AUTH_LIMIT_SLOTS)
		return al->nslots++;
	for (i = 0; i < AUTH_LIMIT_SLOTS; i++) {
		t = auth_tokens(al, i, now_ms);
		if (t < 1.0)
			continue; /* limited now: kept */
		if (victim < 0 || t > best ||
		    (t == best &&
		     al->slot[i].last_ms < al->slot[victim].last_ms)) {
			victim = i;
			best = t;
		}
	}
	return victim;
}

/* Whether connections from src are refused for failing too often. */
bool
auth_rate_limited(struct auth_limit *al, const struct addr *src,
		  uint64_t now_ms)
{
	bool limited = false;
	int i;

	pthread_mutex_lock(&al->lock);
	i = auth_slot(al, src);
	if (i >= 0) {
		auth_refill(al, i, now_ms);
		limited = al->slot[i].tokens < 1.0;
	}
	pthread_mutex_unlock(&al->lock);
	return limited;
}

/* Record an authentication failure from src. */
void
auth_failed(struct auth_limit *al, const struct addr *src, uint64_t now_ms)
{
	int i;

	pthread_mutex_lock(&al->lock);
	i = auth_slot(al, src);
	if (i < 0) {
		i = auth_slot_new(al, now_ms);
		if (i >= 0) {
			al->slot[i].src = *src;
			al->slot[i].tokens = AUTH_LIMIT_BURST;
			al->slot[i].last_ms = now_ms;
		}
	}
	if (i >= 0) {
		auth_refill(al, i, now_ms);
		al->slot[i].tokens -= 1.0;
	}
	pthread_mutex_unlock(&al->lock);
}
