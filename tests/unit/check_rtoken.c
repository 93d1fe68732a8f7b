// SPDX-License-Identifier: BSD-2-Clause
/*
 * A kernel peer's RMBs by their rkeys per link (rtoken.c): what its
 * CONFIRM_RKEY and ADD_LINK tell is found again by the rkey a connection
 * has for any link of the row, DELETE_RKEY drops the row, a new link of
 * an old id clears what was said of the old one, and the table holds
 * Linux's 255 RMBs and no more.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include <check.h>

#include "smcproxyd.h"

START_TEST(set_get_del)
{
	struct rtoken_table t = {0};
	uint32_t rkey = 0;
	uint64_t vaddr = 0;

	/* CONFIRM_RKEY on link 1: its RMB 0x11 there is 0x21 on link 2 */
	ck_assert_int_eq(rtoken_set(&t, 1, 0x11, 2, 0x21, 0x9000), 0);
	ck_assert_int_eq(rtoken_get(&t, 1, 0x11, 2, &rkey, &vaddr), 0);
	ck_assert_uint_eq(rkey, 0x21);
	ck_assert_uint_eq(vaddr, 0x9000);
	/* found by its rkey on either link */
	ck_assert_int_eq(rtoken_get(&t, 2, 0x21, 1, &rkey, &vaddr), 0);
	ck_assert_uint_eq(rkey, 0x11);
	ck_assert_uint_eq(vaddr, 0); /* never told: the CLC's */
	/* not told for link 3; another RMB; another link's rkey */
	ck_assert_int_eq(rtoken_get(&t, 1, 0x11, 3, &rkey, &vaddr), -ENOENT);
	ck_assert_int_eq(rtoken_get(&t, 1, 0x12, 2, &rkey, &vaddr), -ENOENT);
	ck_assert_int_eq(rtoken_get(&t, 2, 0x11, 1, &rkey, &vaddr), -ENOENT);
	/* ADD_LINK for link 3 over link 2 adds to the same row */
	ck_assert_int_eq(rtoken_set(&t, 2, 0x21, 3, 0x31, 0x9000), 0);
	ck_assert_int_eq(t.n, 1);
	ck_assert_int_eq(rtoken_get(&t, 1, 0x11, 3, &rkey, &vaddr), 0);
	ck_assert_uint_eq(rkey, 0x31);
	/* told again: replaced */
	ck_assert_int_eq(rtoken_set(&t, 1, 0x11, 2, 0x22, 0x9000), 0);
	ck_assert_int_eq(rtoken_get(&t, 1, 0x11, 2, &rkey, &vaddr), 0);
	ck_assert_uint_eq(rkey, 0x22);
	/* a new link 3: what was said of the old one goes */
	rtoken_drop_link(&t, 3);
	ck_assert_int_eq(rtoken_get(&t, 1, 0x11, 3, &rkey, &vaddr), -ENOENT);
	/* DELETE_RKEY on link 2 names the rkey there */
	ck_assert_int_eq(rtoken_del(&t, 2, 0x11), -ENOENT);
	ck_assert_int_eq(rtoken_del(&t, 2, 0x22), 0);
	ck_assert_int_eq(t.n, 0);
	ck_assert_int_eq(rtoken_get(&t, 1, 0x11, 2, &rkey, &vaddr), -ENOENT);
	/* no link 0, no link to itself */
	ck_assert_int_eq(rtoken_set(&t, 0, 0x11, 2, 0x21, 0), -EINVAL);
	ck_assert_int_eq(rtoken_set(&t, 1, 0x11, 0, 0x21, 0), -EINVAL);
	ck_assert_int_eq(rtoken_set(&t, 1, 0x11, 1, 0x21, 0), -EINVAL);
	rtoken_free(&t);
	ck_assert_ptr_null(t.v);
}
END_TEST

START_TEST(full_at_255)
{
	struct rtoken_table t = {0};
	uint32_t rkey = 0;
	uint64_t vaddr;
	int i;

	for (i = 0; i < RTOKEN_MAX; i++)
		ck_assert_int_eq(rtoken_set(&t, 1, 0x1000u + (uint32_t)i, 2,
					    0x2000u + (uint32_t)i, 0),
				 0);
	ck_assert_int_eq(t.n, RTOKEN_MAX);
	ck_assert_int_eq(rtoken_set(&t, 1, 0x5000, 2, 0x6000, 0), -ENOSPC);
	/* one it has is still told */
	ck_assert_int_eq(rtoken_set(&t, 1, 0x1000, 2, 0x2fff, 0), 0);
	ck_assert_int_eq(rtoken_del(&t, 1, 0x1001), 0);
	ck_assert_int_eq(rtoken_set(&t, 1, 0x5000, 2, 0x6000, 0), 0);
	ck_assert_int_eq(rtoken_get(&t, 1, 0x1000, 2, &rkey, &vaddr), 0);
	ck_assert_uint_eq(rkey, 0x2fff);
	ck_assert_int_eq(rtoken_get(&t, 1, 0x10fe, 2, &rkey, &vaddr), 0);
	ck_assert_uint_eq(rkey, 0x20fe);
	rtoken_free(&t);
}
END_TEST

static Suite *
rtoken_suite(void)
{
	Suite *s = suite_create("rtoken");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, set_get_del);
	tcase_add_test(tc, full_at_255);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(rtoken_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
