// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unit tests for khost.c, the kernel SMC-R hosts seen: a host is its
 * address whatever the port, its connections are counted open and in
 * total, its last DECLINE kept with who sent it; a full table makes room
 * only by forgetting a host without connections, the one heard of
 * longest ago, and records nothing more when every host has some.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <check.h>

#include "smcproxyd.h"

static struct khost_info list[KHOST_MAX + 1];

static struct addr
host(const char *s)
{
	struct addr a;

	ck_assert_msg(addr_parse(s, &a) == 0, "refused %s", s);
	return a;
}

/* The entry of @s in a fresh list, or NULL. */
static const struct khost_info *
find(const char *s, int *n)
{
	struct addr a = host(s);
	int i;

	*n = khost_list(list, KHOST_MAX + 1);
	for (i = 0; i < *n; i++)
		if (addr_same_host(&list[i].host, &a))
			return &list[i];
	return NULL;
}

START_TEST(test_hosts)
{
	const struct khost_info *k;
	struct addr a;
	char name[32];
	time_t now = time(NULL);
	int i, n;

	/* one host whatever the port */
	a = host("10.0.0.1:5");
	ck_assert(khost_open(&a));
	a = host("10.0.0.1:6");
	ck_assert(khost_open(&a));
	khost_decline(&a, 0x03030008, true);
	k = find("10.0.0.1:1", &n);
	ck_assert_int_eq(n, 1);
	ck_assert_ptr_nonnull(k);
	ck_assert_int_eq(k->open, 2);
	ck_assert_uint_eq(k->total, 2);
	ck_assert_uint_eq(k->decline, 0x03030008);
	ck_assert(k->by_peer);
	ck_assert_int_ge(k->decline_at, now);
	/* ours replaces it; closes never go below zero */
	khost_decline(&a, 0x03030002, false);
	khost_close(&a);
	khost_close(&a);
	khost_close(&a);
	k = find("10.0.0.1:1", &n);
	ck_assert_int_eq(k->open, 0);
	ck_assert_uint_eq(k->total, 2);
	ck_assert_uint_eq(k->decline, 0x03030002);
	ck_assert(!k->by_peer);

	/* the table fills with hosts that have connections open */
	for (i = 1; i < KHOST_MAX; i++) {
		snprintf(name, sizeof(name), "10.1.%d.%d:1", i / 256, i % 256);
		a = host(name);
		ck_assert(khost_open(&a));
	}
	ck_assert_ptr_nonnull(find("10.0.0.1:1", &n));
	ck_assert_int_eq(n, KHOST_MAX);
	/* a newcomer takes the place of the one without connections */
	a = host("10.2.0.1:1");
	ck_assert(khost_open(&a));
	ck_assert_ptr_null(find("10.0.0.1:1", &n));
	ck_assert_int_eq(n, KHOST_MAX);
	ck_assert_ptr_nonnull(find("10.2.0.1:1", &n));
	/* every host has connections: the next is not recorded */
	a = host("10.2.0.2:1");
	ck_assert(!khost_open(&a));
	khost_decline(&a, 0x03030002, false);
	ck_assert_ptr_null(find("10.2.0.2:1", &n));
	/* until one has none left */
	a = host("10.1.0.7:1");
	khost_close(&a);
	a = host("10.2.0.2:1");
	ck_assert(khost_open(&a));
	ck_assert_ptr_nonnull(find("10.2.0.2:1", &n));
	ck_assert_ptr_null(find("10.1.0.7:1", &n));
	ck_assert_int_eq(n, KHOST_MAX);
}
END_TEST

static Suite *
khost_suite(void)
{
	Suite *s = suite_create("khost");
	TCase *tc = tcase_create("table");

	tcase_add_test(tc, test_hosts);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(khost_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
