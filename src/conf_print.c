// SPDX-License-Identifier: BSD-2-Clause
/*
 * conf.c's tables written out for people: the schema behind the man page
 * (smcproxyd --print-schema) and the example configuration,
 * conf/smcproxyd.conf (smcproxyd --print-example), every section and key
 * with its description, type, range, default and whether a reload changes
 * it.  The unit tests hold the man page and the shipped file to these, so
 * neither can lack a key or go stale.  Reads the tables only; conf.c never
 * calls here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smcproxyd.h"
#include "conf.h"

static const char *const conf_type_names[] = {
	[CONF_T_INT] = "integer",  [CONF_T_MODE] = "mode",
	[CONF_T_BOOL] = "boolean", [CONF_T_PATH] = "path",
	[CONF_T_NAME] = "name",	   [CONF_T_NAMES] = "names",
	[CONF_T_ADDR] = "address", [CONF_T_ENUM] = "string",
	[CONF_T_PEER] = "name",	   [CONF_T_HOST] = "address",
};

static void
conf_print_default(FILE *out, const struct conf_key *k)
{
	if (k->def == NULL)
		fputs(k->def_doc != NULL ? k->def_doc :
		      k->type == CONF_T_NAMES && !(k->flags & CONF_REQUIRED) ?
					   "[ ]" :
		      k->flags & CONF_REQUIRED ? "required" :
						 "none",
		      out);
	else if (k->type == CONF_T_INT || k->type == CONF_T_MODE ||
		 k->type == CONF_T_BOOL)
		fputs(k->def, out);
	else
		fprintf(out, "\"%s\"", k->def);
}

static void
conf_print_range(FILE *out, const struct conf_key *k)
{
	switch (k->type) {
	case CONF_T_INT:
		fprintf(out, "%lld..%lld", k->min, k->max);
		break;
	case CONF_T_MODE:
		fprintf(out, "%#llo..%#llo", k->min, k->max);
		break;
	case CONF_T_BOOL:
		fputs("true|false", out);
		break;
	case CONF_T_ENUM:
		fputs(k->choices, out);
		break;
	case CONF_T_NAMES:
		if (k->range != NULL) {
			fputs(k->range, out);
			break;
		}
		/* FALLTHROUGH */
	case CONF_T_NAME:
		fprintf(out, "[A-Za-z0-9._-]{1,%d}", CONF_NAME_MAX);
		break;
	case CONF_T_PEER:
		fputs("a peers[].name", out);
		break;
	case CONF_T_ADDR:
		fputs("ip:port", out);
		break;
	case CONF_T_HOST:
		fputs("ip", out);
		break;
	default:
		fputs("-", out);
		break;
	}
}

/*
 * Print every section and key, one per line, tab-separated: key, type,
 * default, range, reloadable, description.  Ready for tbl(1) and scripts;
 * docs/smcproxyd.conf.5 documents the same table.
 */
void
conf_print_schema(FILE *out)
{
	const struct conf_section *sec;
	size_t k;
	int id;

	fputs("key\ttype\tdefault\trange\treload\tdescription\n", out);
	for (id = 0; id < CONF_NSECT; id++) {
		sec = &conf_sections[id];
		fprintf(out, "%s\t%s\t%s\t-\t-\t%s\n", sec->name,
			sec->list ? "list" : "group",
			sec->list || sec->optional ? "none" : "{ }", sec->desc);
		for (k = 0; k < sec->nkeys; k++) {
			const struct conf_key *key = &sec->keys[k];

			fprintf(out, "%s%s.%s\t%s\t", sec->name,
				sec->list ? "[]" : "", key->name,
				conf_type_names[key->type]);
			conf_print_default(out, key);
			fputc('\t', out);
			conf_print_range(out, key);
			fprintf(out, "\t%s\t%s\n",
				key->flags & CONF_RELOAD ? "yes" : "no",
				key->desc);
		}
	}
}

/* Write text as "# " comment lines of at most 79 columns after indent. */
static void
conf_print_comment(FILE *out, const char *indent, const char *text)
{
	const int width = 79 - 8 * (int)strspn(indent, "\t") - 2;
	const char *p = text, *end;
	int n;

	while (*p != '\0') {
		n = (int)strlen(p);
		if (n > width) {
			end = p + width;
			while (end > p && *end != ' ')
				end--;
			n = end > p ? (int)(end - p) : width;
		}
		fprintf(out, "%s# %.*s\n", indent, n, p);
		p += n;
		while (*p == ' ')
			p++;
	}
}

/*
 * One key of the example: what it is, then "key = value;".  A key without
 * a default is set to its example, in a section that is commented out
 * anyway; elsewhere the line is a comment, as the key is off without it.
 */
static void
conf_print_example_key(FILE *out, const struct conf_section *sec,
		       const struct conf_key *k)
{
	const char *indent = sec->list ? "\t\t" : "\t";
	char *text = NULL, *range = NULL;
	size_t len = 0, rlen = 0;
	FILE *f, *r;

	f = open_memstream(&text, &len);
	r = open_memstream(&range, &rlen);
	if (f == NULL || r == NULL)
		goto out;
	conf_print_range(r, k);
	fclose(r);
	r = NULL;
	fprintf(f, "%s%s.%s: %s; %s", sec->name, sec->list ? "[]" : "", k->name,
		k->desc, conf_type_names[k->type]);
	if (strcmp(range, "-") != 0)
		fprintf(f, ", %s", range);
	fputs(k->flags & CONF_REQUIRED ? ", required" : "", f);
	if (k->def == NULL && k->def_doc != NULL)
		fprintf(f, ", default: %s", k->def_doc);
	fputs(k->flags & CONF_RELOAD ? "" : "; restart", f);
	fclose(f);
	f = NULL;
	conf_print_comment(out, indent, text);
	if (k->def != NULL) {
		fprintf(out, "%s%s = ", indent, k->name);
		conf_print_default(out, k);
		fputs(";\n", out);
	} else if (k->example != NULL) {
		fprintf(out, "%s%s%s = %s;\n", indent,
			(!sec->list && !sec->optional) ||
					(k->flags & CONF_ALT) ?
				"# " :
				"",
			k->name, k->example);
	} else if (k->type == CONF_T_NAMES) {
		fprintf(out, "%s%s = [ ];\n", indent, k->name);
	} else {
		fprintf(out, "%s# %s: no default, no example\n", indent,
			k->name);
	}
out:
	if (f != NULL)
		fclose(f);
	if (r != NULL)
		fclose(r);
	free(text);
	free(range);
}

/*
 * The example configuration, conf/smcproxyd.conf: every section and key of
 * the tables with its description, type, range, whether a reload changes
 * it, and its default (or, without one, an example value).  Sections a
 * daemon may do without are commented out.  The unit tests compare the
 * shipped file with this, so it cannot lack a key or go stale.
 */
void
conf_print_example(FILE *out)
{
	const struct conf_section *sec;
	char *body = NULL, *line, *next;
	size_t k, len = 0;
	FILE *f;
	int id;

	fputs("# smcproxyd.conf: every key, set to its default.  See "
	      "smcproxyd.conf(5).\n"
	      "# Written by \"smcproxyd --print-example\" from the daemon's "
	      "key table.\n"
	      "#\n"
	      "# Syntax is libconfig's: groups { }, lists ( ), arrays [ ], "
	      "\"strings\",\n"
	      "# true/false, integers (0x.. for hex); \"#\" and \"//\" start "
	      "comments.\n"
	      "# Check a file with \"smcproxyd -n -c FILE\": all errors and "
	      "warnings at once,\n"
	      "# as \"file:line: key: message\".  Keys marked \"restart\" "
	      "cannot be changed by\n"
	      "# a reload (SIGHUP or \"smcproxyctl reload\"); everything else "
	      "can.\n"
	      "# Sections that are commented out are off until written; a "
	      "peer needs a\n"
	      "# key_file readable by the user the daemon runs as (smcproxyd "
	      "under the\n"
	      "# unit), or insecure = true; see smcproxyd(8), Keys.\n",
	      out);
	for (id = 0; id < CONF_NSECT; id++) {
		sec = &conf_sections[id];
		f = open_memstream(&body, &len);
		if (f == NULL)
			return;
		if (sec->list)
			fprintf(f, "%s = (\n\t{\n", sec->name);
		else
			fprintf(f, "%s: {\n", sec->name);
		for (k = 0; k < sec->nkeys; k++) {
			if (k > 0)
				fputs("\n", f);
			conf_print_example_key(f, sec, &sec->keys[k]);
		}
		fputs(sec->list ? "\t}\n);\n" : "};\n", f);
		fclose(f);
		fputs("\n", out);
		conf_print_comment(out, "", sec->desc);
		/* what a daemon may do without is left for the operator */
		for (line = body; *line != '\0'; line = next + 1) {
			next = strchr(line, '\n');
			fprintf(out, "%s%.*s\n",
				!sec->list && !sec->optional ? "" :
				line[0] == '\t'		     ? "#" :
				line[0] == '\n'		     ? "#" :
							       "# ",
				(int)(next - line), line);
		}
		free(body);
		body = NULL;
	}
}
