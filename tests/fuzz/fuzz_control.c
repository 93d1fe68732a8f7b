// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fuzz target for the control socket's requests (control.c): the input is
 * cut into lines as the socket cuts a client's bytes, and each line is
 * answered by control_request() as for a client with the daemon's own
 * credentials, so mutating commands run too.  Every line that is not blank
 * must get exactly one reply line, a JSON object {"v":1,"ok":...} with
 * "data" when ok and "error" when not; a refused request is never ok.
 *
 * Links the whole library but starts no workers, so the commands find no
 * connections, link groups or links; "reload" belongs to the daemon's main
 * program, which is not in the library, and answers here as for a file
 * with errors.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "smcproxyd.h"
#include "fuzz.h"

int fuzz_decoded;

/* What the commands show: two peers, a rule and an export. */
static const char fuzz_conf_text[] =
	"smcproxyd: { name = \"fuzz\"; workers = 1; state_file = \"none\"; };\n"
	"peer_listen: { address = \"127.0.0.1:17999\"; };\n"
	"peers = ( { name = \"b\"; address = \"127.0.0.1:17100\";"
	" insecure = true; },\n"
	"          { name = \"c\"; address = \"[::1]:17101\";"
	" insecure = true; } );\n"
	"rules = ( { name = \"r1\"; listen = \"127.0.0.1:16380\";"
	" peer = \"b\"; export = \"e1\"; idle_timeout = 30; } );\n"
	"exports = ( { name = \"e1\"; target = \"127.0.0.1:16379\";"
	" peers = [ \"b\", \"c\" ]; } );\n";

/* Stands in for src/smcproxyd.c: a configuration file with errors. */
int
smcproxyd_reload(FILE *errors)
{
	fprintf(errors, "fuzz.conf:3: rules[0].listen: bad address\n"
			"fuzz.conf:7: peers[1].name: not UTF-8 \xff\n");
	return -EINVAL;
}

/* Stands in for src/smcproxyd.c: nothing to stop. */
void
smcproxyd_shutdown(bool now)
{
}

static void
fuzz_init(void)
{
	static struct conf *conf;

	if (conf != NULL)
		return;
	/* stats reset, kill and reload log at info: not once per input */
	log_init(1, LOG_LEVEL_WARN);
	conf = conf_load_string(fuzz_conf_text, "fuzz.conf", stderr);
	if (conf == NULL)
		abort();
	control_conf_update(conf);
}

/* One line's answer: no reply for a blank line, else one reply line. */
static void
fuzz_check(int rc, const char *reply)
{
	json_error_t jerr;
	json_t *r, *ok;
	size_t n;

	if (rc == -ENODATA) {
		if (reply != NULL)
			abort();
		return;
	}
	if (rc == -ENOMEM && reply == NULL)
		return;
	if (reply == NULL || (rc != 0 && rc != -EINVAL && rc != -ENOMEM))
		abort();
	n = strlen(reply);
	if (n == 0 || reply[n - 1] != '\n' ||
	    memchr(reply, '\n', n - 1) != NULL)
		abort();
	r = json_loadb(reply, n - 1, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(r) ||
	    json_integer_value(json_object_get(r, "v")) != CONTROL_VERSION)
		abort();
	ok = json_object_get(r, "ok");
	if (json_is_true(ok)) {
		if (rc != 0 || !json_is_object(json_object_get(r, "data")) ||
		    json_object_get(r, "error") != NULL)
			abort();
	} else if (!json_is_false(ok) ||
		   !json_is_string(json_object_get(r, "error")) ||
		   json_object_get(r, "data") != NULL) {
		abort();
	}
	json_decref(r);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *line = (const char *)data, *end = line + size, *nl;
	char *reply;
	size_t len;
	int rc;

	fuzz_init();
	fuzz_decoded = 0;
	/* `log-level debug` in one input is not the next one's level */
	log_set_level(LOG_LEVEL_WARN);
	while (line < end) {
		nl = memchr(line, '\n', (size_t)(end - line));
		len = nl != NULL ? (size_t)(nl - line) : (size_t)(end - line);
		/* longer lines are refused unread by the socket */
		if (len <= CONTROL_LINE_MAX) {
			rc = control_request(line, len, &reply);
			fuzz_check(rc, reply);
			if (rc == 0)
				fuzz_decoded++;
			free(reply);
		}
		if (nl == NULL)
			break;
		line = nl + 1;
	}
	return 0;
}
