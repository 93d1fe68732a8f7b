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
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "smcproxyd.h"

/*
 * The user the shipped unit runs us as (SMCPROXYD_USER): true with its uid
 * in *uid when it exists and is not root.
 */
static bool
auth_service_user(uid_t *uid)
{
	struct passwd pw, *res = NULL;
	char buf[1024];

	if (getpwnam_r(SMCPROXYD_USER, &pw, buf, sizeof(buf), &res) != 0 ||
	    res == NULL || pw.pw_uid == 0)
		return false;
	*uid = pw.pw_uid;
	return true;
}

/* uid's user name into buf, or NULL for a uid without a name. */
static const char *
auth_user_name(uid_t uid, char *buf, size_t len)
{
	struct passwd pw, *res = NULL;
	char pwbuf[1024];

	if (getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &res) != 0 ||
	    res == NULL)
		return NULL;
	snprintf(buf, len, "%s", pw.pw_name);
	return buf;
}

/* "smcproxyd (uid 998)", or "uid 998" for a uid without a name. */
static const char *
auth_user_str(uid_t uid, char *buf, size_t len)
{
	size_t n;

	if (auth_user_name(uid, buf, len) != NULL) {
		n = strlen(buf);
		snprintf(buf + n, len - n, " (uid %u)", (unsigned)uid);
	} else {
		snprintf(buf, len, "uid %u", (unsigned)uid);
	}
	return buf;
}

/* What "chown" is to be given for uid: its name, else the number. */
static const char *
auth_chown_arg(uid_t uid, char *buf, size_t len)
{
	if (auth_user_name(uid, buf, len) == NULL)
		snprintf(buf, len, "%u", (unsigned)uid);
	return buf;
}

/*
 * Whom a key file (or a symbolic link to one) may belong to: root, the
 * user we run as, and, when we run as root (as "smcproxyd -n" before
 * "systemctl start"), the user the service runs as.  0, or -EPERM with
 * the message in err.
 */
static int
auth_key_owner(const char *what, const char *path, uid_t uid, char *err,
	       size_t errlen)
{
	char owner[96], me[96], arg[64];
	uid_t svc, euid = geteuid();

	if (uid == 0 || uid == euid)
		return 0;
	if (euid == 0 && auth_service_user(&svc)) {
		if (uid == svc)
			return 0;
		snprintf(err, errlen,
			 "%s %s is owned by %s, neither root nor %s, the user "
			 "the service runs as: chown %s it",
			 what, path, auth_user_str(uid, owner, sizeof(owner)),
			 auth_user_str(svc, me, sizeof(me)),
			 auth_chown_arg(svc, arg, sizeof(arg)));
		return -EPERM;
	}
	if (euid == 0)
		snprintf(err, errlen,
			 "%s %s is owned by %s, not root, the user smcproxyd "
			 "runs as: chown root it",
			 what, path, auth_user_str(uid, owner, sizeof(owner)));
	else
		snprintf(err, errlen,
			 "%s %s is owned by %s, neither root nor %s, the user "
			 "smcproxyd runs as: chown %s it",
			 what, path, auth_user_str(uid, owner, sizeof(owner)),
			 auth_user_str(euid, me, sizeof(me)),
			 auth_chown_arg(euid, arg, sizeof(arg)));
	return -EPERM;
}

/*
 * Read the pre-shared key in path into key (room for CONF_KEY_MAX bytes) and
 * its length into *len.  The file must be a regular file owned by root or by
 * us (auth_key_owner), unreadable to group and others, and hold CONF_KEY_MIN
 * to CONF_KEY_MAX bytes.  path may be a symbolic link (a Kubernetes Secret
 * mount is a chain of them) that root or we own, to a file that passes; the
 * checks are on the file itself.  Returns 0 (err empty, or a warning: a key
 * that root may read but the service may not), or a negative errno with a
 * message for the operator in err.
 */
int
auth_key_load(const char *path, unsigned char *key, size_t *len, char *err,
	      size_t errlen)
{
	unsigned char buf[CONF_KEY_MAX + 1];
	char shown[PATH_MAX + 64], real[PATH_MAX], me[96], arg[64];
	size_t n = 0;
	struct stat st;
	ssize_t r;
	uid_t svc;
	int fd = -1, ret;

	if (errlen > 0)
		err[0] = '\0';
	snprintf(shown, sizeof(shown), "%s", path);
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
		ret = auth_key_owner("symbolic link", path, st.st_uid, err,
				     errlen);
		if (ret)
			goto out;
		if (realpath(path, real) != NULL)
			snprintf(shown, sizeof(shown), "%s (-> %s)", path,
				 real);
	}
	/* O_NONBLOCK: a FIFO planted at the path must not hang the daemon */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		ret = -errno;
		if (errno == EACCES)
			snprintf(err, errlen,
				 "key file %s: %s: smcproxyd runs as %s, which "
				 "cannot read it or its directory; chown %s it "
				 "(mode 0600), or keep it root's and pass it "
				 "with systemd's LoadCredential= "
				 "(smcproxyd(8), Keys)",
				 shown, strerror(-ret),
				 auth_user_str(geteuid(), me, sizeof(me)),
				 auth_chown_arg(geteuid(), arg, sizeof(arg)));
		else
			snprintf(err, errlen, "key file %s: %s", shown,
				 strerror(errno));
		goto out;
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		snprintf(err, errlen, "key file %s: %s", shown,
			 strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = -EINVAL;
		snprintf(err, errlen, "key file %s is not a regular file",
			 shown);
		goto out;
	}
	ret = auth_key_owner("key file", shown, st.st_uid, err, errlen);
	if (ret)
		goto out;
	if (st.st_mode & 077) {
		ret = -EPERM;
		snprintf(err, errlen,
			 "key file %s is %s by group/others (mode %04o); chmod "
			 "600 it",
			 shown, st.st_mode & 044 ? "readable" : "writable",
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
			snprintf(err, errlen, "key file %s: %s", shown,
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
			 shown, CONF_KEY_MAX);
		goto out;
	}
	if (n < CONF_KEY_MIN) {
		ret = -EINVAL;
		snprintf(err, errlen,
			 "key file %s has %zu bytes, at least %d are needed "
			 "(head -c 32 /dev/urandom > %s)",
			 shown, n, CONF_KEY_MIN, path);
		goto out;
	}
	memcpy(key, buf, n);
	*len = n;
	ret = 0;
	/* root reads anything: say so when the service will not */
	if (geteuid() == 0 && st.st_uid == 0 && auth_service_user(&svc))
		snprintf(err, errlen,
			 "key file %s is root's (mode %04o): %s, the user the "
			 "service runs as, cannot read it; chown %s it, or "
			 "pass it with systemd's LoadCredential= "
			 "(smcproxyd(8), Keys)",
			 shown, (unsigned)(st.st_mode & 07777),
			 auth_user_str(svc, me, sizeof(me)),
			 auth_chown_arg(svc, arg, sizeof(arg)));
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
		fatalx("authentication: RAND_bytes failed");
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
		fatalx("authentication: message too long");
	memcpy(buf, label, llen);
	len += llen;
	memcpy(buf + len, a, alen);
	len += alen;
	memcpy(buf + len, b, blen);
	len += blen;
	if (HMAC(EVP_sha256(), key, (int)keylen, buf, len, mac, &maclen) ==
		    NULL ||
	    maclen != AUTH_MAC_LEN)
		fatalx("authentication: HMAC failed");
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
