/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The captures of Linux 6.12's own SMC-Rv2 (tests/fixtures/ksmc) for the
 * codec tests that decode them (check_llc, check_smcr_clc): one message's
 * bytes by file name.  Check's assertions end the test on a missing or
 * oversized file.
 */
#ifndef SMCPROXYD_KSMC_FIXTURE_H
#define SMCPROXYD_KSMC_FIXTURE_H

#include <stdint.h>
#include <stdio.h>

#include <check.h>

/* Read tests/fixtures/ksmc/NAME into buf; its length. */
static inline size_t
fixture(const char *name, uint8_t *buf, size_t size)
{
	char path[512];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/tests/fixtures/ksmc/%s", TOP_SRCDIR,
		 name);
	f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	n = fread(buf, 1, size, f);
	ck_assert_msg(feof(f), "%s is longer than %zu bytes", path, size);
	fclose(f);
	return n;
}

#endif /* SMCPROXYD_KSMC_FIXTURE_H */
