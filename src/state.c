// SPDX-License-Identifier: BSD-2-Clause
/*
 * The operator's state, kept across restarts: the rules disabled and the
 * peers drained by smcproxyctl.  Each change rewrites a small JSON file
 * (state_file; by default state.json beside the control socket, in the
 * runtime directory that the unit keeps across restarts and empties on a
 * stop; "none": nothing kept), {"v":1,"disabled_rules":["x"],"drained_peers":["b"]}, written
 * to a temporary file and renamed over the old one, so that a crash
 * leaves the old state or the new, never half of one.  The next process
 * reads it before its workers open a listener and applies it, logging
 * what it applied; names its configuration no longer has are dropped,
 * logged, and the file rewritten without them.
 */
#include <sys/stat.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "smcproxyd.h"

#define STATE_VERSION 1
#define STATE_NAME "state.json"

/*
 * The file of @conf: state_file, else STATE_NAME beside control_socket.
 * Return: 0, -ENOENT when state_file is "none" (nothing kept), or
 * -ENAMETOOLONG.
 */
static int
state_path(const struct conf *conf, char *buf, size_t len)
{
	const char *sock = conf->control_socket != NULL ?
				   conf->control_socket :
				   CONTROL_SOCKET_DEFAULT;
	const char *slash = strrchr(sock, '/');
	int n;

	if (conf->state_file != NULL && strcmp(conf->state_file, "none") == 0)
		return -ENOENT;
	if (conf->state_file != NULL)
		n = snprintf(buf, len, "%s", conf->state_file);
	else
		n = snprintf(buf, len, "%.*s/%s",
			     slash != NULL ? (int)(slash - sock) : 1,
			     slash != NULL ? sock : ".", STATE_NAME);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* The state under @conf now, as the file has it. */
static json_t *
state_json(const struct conf *conf)
{
	json_t *rules = json_array(), *peers = json_array();
	int i;

	for (i = 0; rules != NULL && i < conf->nrules; i++)
		if (!worker_rule_enabled(conf->rules[i].name))
			json_array_append_new(rules,
					      json_string(conf->rules[i].name));
	for (i = 0; peers != NULL && i < conf->npeers; i++)
		if (peer_draining(conf->peers[i].name))
			json_array_append_new(peers,
					      json_string(conf->peers[i].name));
	return json_pack("{s:i, s:o, s:o}", "v", STATE_VERSION,
			 "disabled_rules", rules, "drained_peers", peers);
}

/**
 * state_save() - Write the rules disabled and the peers drained under
 * @conf, the running configuration, to its state file (atomically).
 * Return: 0, or a negative errno (logged).
 */
int
state_save(const struct conf *conf)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	json_t *state;
	int fd = -1, rc;

	rc = state_path(conf, path, sizeof(path));
	if (rc == -ENOENT)
		return 0;
	if (rc < 0) {
		log_warnx("state: %s: path too long", conf->control_socket);
		return rc;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	state = state_json(conf);
	if (state == NULL) {
		log_warnx("state: out of memory; %s not written", path);
		return -ENOMEM;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd == -1 || json_dumpfd(state, fd, JSON_COMPACT) != 0 ||
	    write(fd, "\n", 1) != 1 || fsync(fd) != 0) {
		rc = -errno;
		if (rc == 0)
			rc = -EIO;
		goto fail;
	}
	if (close(fd) != 0) {
		fd = -1;
		rc = -errno;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) != 0) {
		rc = -errno;
		goto fail;
	}
	json_decref(state);
	return 0;

fail:
	log_warnx("state: cannot write %s: %s; the rules disabled and peers "
		  "drained will not be kept across a restart",
		  path, strerror(-rc));
	if (fd != -1)
		close(fd);
	unlink(tmp);
	json_decref(state);
	return rc;
}

/*
 * Apply one list of the file: each name @conf has is disabled or drained
 * (logged), others dropped (logged).  Return: how many were dropped.
 */
static int
state_apply_list(const struct conf *conf, const json_t *list, bool rules,
		 const char *path)
{
	const char *name;
	const json_t *v;
	int i, dropped = 0;
	size_t k;
	bool known;

	json_array_foreach(list, k, v) {
		name = json_string_value(v);
		if (name == NULL) {
			log_warnx("state: %s: %s[%zu] is not a name; dropped",
				  path,
				  rules ? "disabled_rules" : "drained_peers",
				  k);
			dropped++;
			continue;
		}
		known = false;
		for (i = 0; rules && i < conf->nrules && !known; i++)
			known = strcmp(conf->rules[i].name, name) == 0;
		if (!rules)
			known = conf_peer_find(conf, name) != NULL;
		if (!known) {
			log_info("state: %s %.64s was %s, but the "
				 "configuration has no such %s: dropped",
				 rules ? "rule" : "peer", name,
				 rules ? "disabled" : "drained",
				 rules ? "rule" : "peer");
			dropped++;
			continue;
		}
		if (rules && worker_rule_enable(name, false) < 0) {
			log_warnx("state: rule %s: out of memory; enabled",
				  name);
			dropped++;
			continue;
		}
		if (!rules)
			peer_set_draining(name, true);
		log_info("state: %s %s stays %s (from %s; \"smcproxyctl %s\" "
			 "ends it)",
			 rules ? "rule" : "peer", name,
			 rules ? "disabled" : "drained", path,
			 rules ? "enable rule" : "undrain peer");
	}
	return dropped;
}

/**
 * state_load() - Apply the state file of @conf, the configuration
 * starting, before the workers listen.  A missing file is no state; one
 * that does not parse is logged and ignored (the next change rewrites
 * it).
 * Return: 0, or a negative errno (logged; the daemon starts anyway).
 */
int
state_load(const struct conf *conf)
{
	char path[PATH_MAX];
	json_error_t jerr;
	json_t *state;
	int rc, dropped;

	rc = state_path(conf, path, sizeof(path));
	if (rc == -ENOENT)
		return 0;
	if (rc < 0) {
		log_warnx("state: %s: path too long", conf->control_socket);
		return rc;
	}
	state = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (state == NULL && access(path, F_OK) != 0 && errno == ENOENT)
		return 0;
	if (state == NULL || !json_is_object(state) ||
	    json_integer_value(json_object_get(state, "v")) != STATE_VERSION) {
		log_warnx("state: %s:%d: %s; starting with every rule enabled "
			  "and no peer drained",
			  path, state == NULL ? jerr.line : 1,
			  state == NULL ? jerr.text :
					  "not a version 1 state object");
		json_decref(state);
		return -EINVAL;
	}
	dropped = state_apply_list(
		conf, json_object_get(state, "disabled_rules"), true, path);
	dropped += state_apply_list(
		conf, json_object_get(state, "drained_peers"), false, path);
	json_decref(state);
	if (dropped > 0)
		return state_save(conf);
	return 0;
}
