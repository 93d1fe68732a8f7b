// SPDX-License-Identifier: BSD-2-Clause
/*
 * Replays a fuzz target over its corpus without libFuzzer, so that make
 * check (with gcc and the sanitizers) runs every seed and every crash
 * ever found again.  Each input is also fed cut short at every length,
 * each time from a buffer of exactly that size, so ASan sees any read
 * past the end; a stateful target whose one run takes seconds (a worker,
 * groups that must end) is cut at REPLAY_CUTS lengths spread over the
 * input instead, the whole one last.
 *
 *   replay [DIR-OR-FILE...]     default: the corpus named at build time
 */
#include <sys/stat.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

#define REPLAY_MAX (1 << 20)
#ifndef REPLAY_CUTS
#define REPLAY_CUTS 0 /* every length */
#endif

/* The corpus names say what the seeds are: hold the decoders to it. */
static int
replay_expect(const char *path, const unsigned char *data, size_t n)
{
	const char *base = strrchr(path, '/');
	bool ok, bad;

	base = base ? base + 1 : path;
	ok = strncmp(base, "seed-ok-", 8) == 0;
	bad = strncmp(base, "seed-bad-", 9) == 0;
	if (!ok && !bad)
		return 0;
	fuzz_decoded = -1;
	LLVMFuzzerTestOneInput(data, n);
	if (fuzz_decoded < 0 || (ok && fuzz_decoded == 0) ||
	    (bad && fuzz_decoded != 0)) {
		fprintf(stderr, "replay: %s: %s\n", path,
			ok ? "valid seed refused" : "malformed seed accepted");
		return -1;
	}
	return 0;
}

/* How far apart the cut lengths of an input of n bytes are. */
static size_t
replay_step(size_t n)
{
	size_t cuts = REPLAY_CUTS;

	return cuts > 0 && n / cuts > 1 ? n / cuts : 1;
}

static int
replay_file(const char *path)
{
	unsigned char *data, *cut;
	FILE *f;
	size_t n, len;

	f = fopen(path, "rb");
	if (f == NULL) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	data = malloc(REPLAY_MAX);
	if (data == NULL) {
		fclose(f);
		return -1;
	}
	n = fread(data, 1, REPLAY_MAX, f);
	fclose(f);
	if (replay_expect(path, data, n) != 0) {
		free(data);
		return -1;
	}
	for (len = 0; len <= n; len += replay_step(n)) {
		cut = malloc(len ? len : 1);
		if (cut == NULL) {
			free(data);
			return -1;
		}
		memcpy(cut, data, len);
		LLVMFuzzerTestOneInput(cut, len);
		free(cut);
	}
	free(data);
	return 0;
}

static int
replay_path(const char *path, int *count)
{
	char file[4096];
	struct dirent *de;
	struct stat st;
	DIR *d;
	int rc = 0;

	if (stat(path, &st) != 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		(*count)++;
		return replay_file(path);
	}
	d = opendir(path);
	if (d == NULL) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "%s/%s", path, de->d_name);
		if (stat(file, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		(*count)++;
		rc = replay_file(file);
	}
	closedir(d);
	return rc;
}

int
main(int argc, char **argv)
{
	int i, count = 0;

#ifdef REPLAY_CORPUS
	if (argc < 2) {
		if (replay_path(REPLAY_CORPUS, &count) != 0)
			return EXIT_FAILURE;
		printf("replay: %d inputs from %s\n", count, REPLAY_CORPUS);
		return count > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
	}
#endif
	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR-OR-FILE...\n", argv[0]);
		return EXIT_FAILURE;
	}
	for (i = 1; i < argc; i++)
		if (replay_path(argv[i], &count) != 0)
			return EXIT_FAILURE;
	printf("replay: %d inputs\n", count);
	/* an empty corpus tests nothing: say so */
	return count > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
