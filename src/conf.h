// SPDX-License-Identifier: BSD-2-Clause
/*
 * Private to the configuration: conf.c (the key tables and the parsing of
 * one section by them), conf_load.c (a whole file: read, checked across
 * sections, compared with the running one on reload) and conf_print.c
 * (the tables as schema and example file).  Both of those are above
 * conf.c, which never calls them.  Everybody else holds struct conf_src
 * opaque and uses the conf_* functions of smcproxyd.h.
 */
#ifndef SMCPROXYD_CONF_H
#define SMCPROXYD_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <libconfig.h>

#include "smcproxyd.h"

#define CONF_PATH_LEN 128 /* "exports[123].connect_timeout" and more */
#define CONF_QUOTE_LEN 80 /* file text echoed in a message, quoted */

enum conf_type {
	CONF_T_INT,   /* int, min..max */
	CONF_T_MODE,  /* int, a file mode written in octal as for chmod */
	CONF_T_BOOL,  /* bool */
	CONF_T_PATH,  /* char *, never empty */
	CONF_T_NAME,  /* char[CONF_NAME_MAX + 1], conf_name_valid() */
	CONF_T_NAMES, /* char **, NULL-terminated, count at count_off */
	CONF_T_ADDR,  /* struct addr, "ip:port" */
	CONF_T_ENUM,  /* an enum stored as int, parsed by parse() */
	CONF_T_PEER,  /* const struct conf_peer *, named in peers */
	CONF_T_HOST,  /* struct addr, "ip" (port 0) */
};

#define CONF_REQUIRED 0x1 /* no default: the key must be there */
#define CONF_RELOAD 0x2	  /* a reload may change it */
#define CONF_UNIQUE 0x4	  /* no two list elements may share it */
#define CONF_ALT 0x8	  /* instead of other keys: the example leaves it out */
#define CONF_ORIGINAL 0x10 /* CONF_T_ADDR: or "original" (AF_UNSPEC) */

/* Where a key was set; line 0: not in the file, its default applies. */
struct conf_loc {
	int file; /* index into conf_src.files */
	int line;
};

struct conf_parse;

struct conf_key {
	const char *name;
	enum conf_type type;
	size_t off;	     /* field in the section's struct */
	size_t count_off;    /* CONF_T_NAMES: its int count */
	const char *def;     /* as a file would write it, unquoted */
	const char *def_doc; /* schema text for a computed default */
	long long min, max;  /* CONF_T_INT, CONF_T_MODE */
	int (*parse)(const char *s, int *out); /* CONF_T_ENUM */
	const char *choices;		       /* CONF_T_ENUM: "a|b|c" */
	/* After a value is stored: 0, or -EINVAL with msg filled. */
	int (*check)(struct conf_parse *p, const void *field, char *msg,
		     size_t len);
	/* CONF_T_NAMES: each element, when not a name; 0 or -EINVAL */
	int (*elem)(const char *s, char *msg, size_t len);
	const char *range; /* what elem accepts, for the schema */
	unsigned flags;
	const char *desc;
	const char *example; /* no default: a value for the example file */
};

enum conf_sect_id {
	CONF_SECT_MAIN,
	CONF_SECT_LISTEN,
	CONF_SECT_PEERS, /* before rules and exports, which name peers */
	CONF_SECT_EXPORTS,
	CONF_SECT_RULES,
	CONF_SECT_RDMA,
	CONF_SECT_SMCR,
	CONF_NSECT
};

struct conf_section {
	const char *name;
	bool list;     /* a list of groups, else one group */
	bool optional; /* a group that is off when absent */
	const struct conf_key *keys;
	size_t nkeys;
	size_t obj_off;	 /* group: its struct inside struct conf */
	size_t arr_off;	 /* list: array pointer in struct conf */
	size_t n_off;	 /* list: element count in struct conf */
	size_t size;	 /* list: element size */
	size_t line_off; /* list: the element's int line */
	/* After the keys of one group (list element) are stored. */
	void (*post)(struct conf_parse *p, void *obj,
		     const struct conf_loc *locs, const char *prefix,
		     struct conf_loc at);
	const char *desc;
};

/* Kept with the config so a reload can point at the line that changed. */
struct conf_src {
	char **files; /* [0]: the config itself, then @includes */
	int nfiles;
	struct conf_loc sect[CONF_NSECT];
	struct conf_loc *keys[CONF_NSECT]; /* [elem * nkeys + key] */
};

struct conf_msg;

struct conf_parse {
	struct conf *conf;
	struct conf_src *src;
	const char *dir; /* relative key files live here; NULL: cwd */
	struct conf_msg *msgs;
	size_t nmsgs, cap;
	int nerrors;
	int lost; /* messages that found no memory */
};

/* conf.c */
extern const struct conf_section conf_sections[CONF_NSECT];
void conf_err(struct conf_parse *p, struct conf_loc loc, const char *key,
	      const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void conf_flush(struct conf_parse *p, FILE *errors, FILE *warnings);
int conf_file_intern(struct conf_src *src, const char *file);
const char *conf_quote(const char *s, char *buf, size_t len);
bool conf_addr_is_v4(const struct addr *a);
bool conf_addr_overlap(const struct addr *a, const struct addr *b);
size_t conf_key_index(const struct conf_key *keys, size_t n, const char *name);
void conf_parse_root(struct conf_parse *p, const config_setting_t *root);

#endif
