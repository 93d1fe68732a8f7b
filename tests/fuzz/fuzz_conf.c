// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target for the configuration parser (conf.c): the input is a
 * libconfig text for conf_load_string(), whose messages go to /dev/null.
 * A config that loads must hold what the rest of the daemon relies on:
 * valid names, unique where the table says so, every rule's peer one of
 * its peers, every export's peers named in peers, a key exactly when the
 * peer is not insecure, and no restart-only change against itself.
 *
 * Key files named in an input are read from their paths and, there being
 * none, refuse the peer.  Inputs that @include a file are skipped: that is
 * file I/O, and /dev/stdin or a FIFO would block the fuzzer.
 *
 * libconfig 1.5 (Debian 12) leaks a string found where a setting name
 * belongs, as in  a "x"  or  a ""  (regression-leak-*): its parser does
 * not free the token it discards on the syntax error.  That leak is
 * libconfig's, not conf.c's, so LeakSanitizer ignores string tokens that
 * libconfig's scanner allocated.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smcproxyd.h"
#include "fuzz.h"

#define FUZZ_NAME_CHARS \
	"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"

int fuzz_decoded;

const char *__lsan_default_suppressions(void);

/* Read by LeakSanitizer at start; unused in a build without it. */
const char *
__lsan_default_suppressions(void)
{
	return "leak:strbuf_append\nleak:libconfig_yylex\n";
}

static bool
fuzz_name_ok(const char *name)
{
	size_t n = strnlen(name, CONF_NAME_MAX + 1);

	return n > 0 && n <= CONF_NAME_MAX &&
	       strspn(name, FUZZ_NAME_CHARS) == n;
}

static void
fuzz_check(const struct conf *conf, FILE *devnull)
{
	const struct conf_rule *r;
	const struct conf_export *e;
	const struct conf_peer *p;
	int i, j;

	if (!fuzz_name_ok(conf->name) || conf->workers < 1 ||
	    conf->workers > 256 || conf_reload_check(conf, conf, devnull) != 0)
		abort();
	for (i = 0; i < conf->npeers; i++) {
		p = &conf->peers[i];
		if (!fuzz_name_ok(p->name) ||
		    conf_peer_find(conf, p->name) != p)
			abort();
		if (p->insecure && (p->key_file != NULL || p->key_len != 0))
			abort();
		if (!p->insecure &&
		    (p->key_file == NULL || p->key_len < CONF_KEY_MIN ||
		     p->key_len > CONF_KEY_MAX))
			abort();
	}
	for (i = 0; i < conf->nrules; i++) {
		r = &conf->rules[i];
		if (!fuzz_name_ok(r->name) || !fuzz_name_ok(r->export) ||
		    r->peer == NULL ||
		    conf_peer_find(conf, r->peer->name) != r->peer)
			abort();
		for (j = 0; j < i; j++)
			if (strcmp(conf->rules[j].name, r->name) == 0 ||
			    addr_equal(&conf->rules[j].listen, &r->listen))
				abort();
	}
	for (i = 0; i < conf->nexports; i++) {
		e = &conf->exports[i];
		if (!fuzz_name_ok(e->name) ||
		    conf_export_find(conf, e->name) != e || e->npeers < 1 ||
		    e->peers[e->npeers] != NULL)
			abort();
		for (j = 0; j < e->npeers; j++)
			if (conf_peer_find(conf, e->peers[j]) == NULL ||
			    !conf_export_allows(e, e->peers[j]))
				abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *devnull;
	struct conf *conf;
	char *text;

	fuzz_decoded = 0;
	if (devnull == NULL) {
		devnull = fopen("/dev/null", "w");
		if (devnull == NULL)
			abort();
	}
	if (memmem(data, size, "@include", 8) != NULL)
		return 0;
	text = malloc(size + 1);
	if (text == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	conf = conf_load_string(text, "fuzz.conf", devnull);
	free(text);
	if (conf != NULL) {
		fuzz_decoded++;
		fuzz_check(conf, devnull);
		conf_free(conf);
	}
	return 0;
}
