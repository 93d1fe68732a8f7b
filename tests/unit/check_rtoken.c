// SPDX-License-Identifier: BSD-2-Clause
/*
 * The peer's RMBs by their rkeys per link (rtoken.c): what a kernel
 * peer's CONFIRM_RKEY and ADD_LINK tell is found again by the rkey a
 * connection has for any link of the row, DELETE_RKEY drops the row, a
 * new link of an old id clears what was said of the old one, and the
 * table holds Linux's 255 RMBs and no more.  In our own dialect a row is
 * one connection's RMB element, by its rkey and address: a CONFIRM_RKEY
 * for none is ignored, one for another element ends the group, and the
 * row goes with the last connection keyed by it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "lgr.h"
#include "llc_wire.h"

START_TEST(set_get_del)
{
	struct rtoken_table t = {0};
	uint32_t rkey = 0;
	uint64_t vaddr = 0;

	/* CONFIRM_RKEY on link 1: its RMB 0x11 there is 0x21 on link 2 */
	ck_assert_int_eq(rtoken_set(&t, 1, 0x11, 0, 2, 0x21, 0x9000), 0);
	ck_assert_int_eq(rtoken_get(&t, 1, 0x11, 0, 2, &rkey, &vaddr), 0);
	ck_assert_uint_eq(rkey, 0x21);
	ck_assert_uint_eq(vaddr, 0x9000);
	/* found by its rkey on either link */
	ck_assert_int_eq(rtoken_get(&t, 2, 0x21, 0, 1, &rkey, &vaddr), 0);
	ck_assert_uint_eq(rkey, 0x11);
	ck_assert_uint_eq(vaddr, 0); /* never told: the CLC's */
	/* not told for link 3; another RMB; another link's rkey */
	ck_assert_int_eq(rtoken_get(&t, 1, 0x11, 0, 3, &rkey, &vaddr), -ENOENT);
	ck_assert_int_eq(rtoken_get(&t, 1, 0x12, 0, 2, &rkey, &vaddr), -ENOENT);
	ck_assert_int_eq(rtoken_get(&t, 2, 0x11, 0, 1, &rkey, &vaddr), -ENOENT);
	/* ADD_LINK for link 3 over link 2 adds to the same row */
	ck_assert_int_eq(rtoken_set(&t, 2, 0x21, 0, 3, 0x31, 0x9000), 0);
	ck_assert_int_eq(t.n, 1);
	ck_assert_int_eq(rtoken_get(&t, 1, 0x11, 0, 3, &rkey, &vaddr), 0);
	ck_assert_uint_eq(rkey, 0x31);
	/* told again: replaced */
	ck_assert_int_eq(rtoken_set(&t, 1, 0x11, 0, 2, 0x22, 0x9000), 0);
	ck_assert_int_eq(rtoken_get(&t, 1, 0x11, 0, 2, &rkey, &vaddr), 0);
	ck_assert_uint_eq(rkey, 0x22);
	/* a new link 3: what was said of the old one goes */
	rtoken_drop_link(&t, 3);
	ck_assert_int_eq(rtoken_get(&t, 1, 0x11, 0, 3, &rkey, &vaddr), -ENOENT);
	/* DELETE_RKEY on link 2 names the rkey there */
	ck_assert_int_eq(rtoken_del(&t, 2, 0x11, 0), -ENOENT);
	ck_assert_int_eq(rtoken_del(&t, 2, 0x22, 0), 0);
	ck_assert_int_eq(t.n, 0);
	ck_assert_int_eq(rtoken_get(&t, 1, 0x11, 0, 2, &rkey, &vaddr), -ENOENT);
	/* no link 0, no link to itself */
	ck_assert_int_eq(rtoken_set(&t, 0, 0x11, 0, 2, 0x21, 0), -EINVAL);
	ck_assert_int_eq(rtoken_set(&t, 1, 0x11, 0, 0, 0x21, 0), -EINVAL);
	ck_assert_int_eq(rtoken_set(&t, 1, 0x11, 0, 1, 0x21, 0), -EINVAL);
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
		ck_assert_int_eq(rtoken_set(&t, 1, 0x1000u + (uint32_t)i, 0, 2,
					    0x2000u + (uint32_t)i, 0),
				 0);
	ck_assert_int_eq(t.n, RTOKEN_MAX);
	ck_assert_int_eq(rtoken_set(&t, 1, 0x5000, 0, 2, 0x6000, 0), -ENOSPC);
	/* one it has is still told */
	ck_assert_int_eq(rtoken_set(&t, 1, 0x1000, 0, 2, 0x2fff, 0), 0);
	ck_assert_int_eq(rtoken_del(&t, 1, 0x1001, 0), 0);
	ck_assert_int_eq(rtoken_set(&t, 1, 0x5000, 0, 2, 0x6000, 0), 0);
	ck_assert_int_eq(rtoken_get(&t, 1, 0x1000, 0, 2, &rkey, &vaddr), 0);
	ck_assert_uint_eq(rkey, 0x2fff);
	ck_assert_int_eq(rtoken_get(&t, 1, 0x10fe, 0, 2, &rkey, &vaddr), 0);
	ck_assert_uint_eq(rkey, 0x20fe);
	rtoken_free(&t);
}
END_TEST

/*
 * Rows are keyed by rkey and address: two RMB elements that share an
 * rkey at different addresses (one MR) are two rows; an address not told
 * (0) matches either.  A row left on no link by rtoken_drop_link goes.
 */
START_TEST(keyed_by_address)
{
	struct rtoken_table t = {0};
	uint32_t rkey = 0;
	uint64_t vaddr = 0;

	ck_assert_int_eq(rtoken_add(&t, 1, 0x11, 0x1000), 0);
	ck_assert_int_eq(rtoken_add(&t, 1, 0x11, 0x2000), 0);
	ck_assert_int_eq(t.n, 2);
	ck_assert_int_eq(rtoken_add(&t, 1, 0x11, 0x2000), 0); /* again */
	ck_assert_int_eq(t.n, 2);
	ck_assert_int_eq(rtoken_add(&t, 0, 0x11, 0x2000), -EINVAL);
	ck_assert_int_eq(rtoken_set(&t, 1, 0x11, 0x1000, 2, 0x21, 0x1000), 0);
	ck_assert_int_eq(rtoken_set(&t, 1, 0x11, 0x2000, 2, 0x22, 0x2000), 0);
	ck_assert_int_eq(t.n, 2);
	ck_assert_int_eq(rtoken_get(&t, 1, 0x11, 0x1000, 2, &rkey, &vaddr), 0);
	ck_assert_uint_eq(rkey, 0x21);
	ck_assert_uint_eq(vaddr, 0x1000);
	ck_assert_int_eq(rtoken_get(&t, 1, 0x11, 0x2000, 2, &rkey, &vaddr), 0);
	ck_assert_uint_eq(rkey, 0x22);
	ck_assert_uint_eq(vaddr, 0x2000);
	ck_assert_int_eq(rtoken_get(&t, 1, 0x11, 0x3000, 2, &rkey, &vaddr),
			 -ENOENT);
	/* back from link 2 to link 1 by the second's rkey there */
	ck_assert_int_eq(rtoken_get(&t, 2, 0x22, 0x2000, 1, &rkey, &vaddr), 0);
	ck_assert_uint_eq(rkey, 0x11);
	ck_assert_uint_eq(vaddr, 0x2000);
	/* one goes, the other stays */
	ck_assert_int_eq(rtoken_del(&t, 1, 0x11, 0x1000), 0);
	ck_assert_int_eq(rtoken_get(&t, 1, 0x11, 0x1000, 2, &rkey, &vaddr),
			 -ENOENT);
	ck_assert_int_eq(rtoken_get(&t, 1, 0x11, 0x2000, 2, &rkey, &vaddr), 0);
	/* link 1's id taken by a new link: the row is on link 2 only; with
	 * link 2's gone too it is on none, and goes */
	rtoken_drop_link(&t, 1);
	ck_assert_int_eq(t.n, 1);
	ck_assert_int_eq(rtoken_get(&t, 2, 0x22, 0x2000, 2, &rkey, &vaddr), 0);
	rtoken_drop_link(&t, 2);
	ck_assert_int_eq(t.n, 0);
	rtoken_free(&t);
}
END_TEST

/* ---- a group of our own dialect: connections and CONFIRM_RKEY ---- */

static struct lgr G;

static void
group(bool smcr)
{
	int i;

	memset(&G, 0, sizeof(G));
	G.smcr = smcr;
	G.id = 7;
	TAILQ_INIT(&G.conns);
	for (i = 0; i < LGR_LINK_SLOTS; i++) {
		G.link[i].lgr = &G;
		G.link[i].id = (uint8_t)(i + 1);
		G.link[i].state = LGR_LINK_ACTIVE;
	}
}

/* c joins G (as lgr_conn_add_on does, without the token hash). */
static void
join(struct lgr_conn *c, int link)
{
	memset(c, 0, sizeof(*c));
	c->lgr = &G;
	c->link = &G.link[link];
	TAILQ_INSERT_TAIL(&G.conns, c, entry);
}

/* c leaves G: lgr_conn_del's part in rtoken.c, then its unlink. */
static void
leave(struct lgr_conn *c)
{
	rtoken_conn_gone(c);
	TAILQ_REMOVE(&G.conns, c, entry);
	c->lgr = NULL;
	c->peer_link = 0;
}

/* The CONFIRM_RKEY a peer of ours sends on G's link for its element. */
static int
confirm(int link, uint32_t rkey, uint64_t vaddr, uint8_t id2, uint32_t rkey2,
	uint64_t vaddr2)
{
	struct llc_info m;

	memset(&m, 0, sizeof(m));
	m.type = LLC_CONFIRM_RKEY;
	m.confirm_rkey.num_rkeys = 1;
	m.confirm_rkey.rt[0].rkey = rkey;
	m.confirm_rkey.rt[0].vaddr = vaddr;
	m.confirm_rkey.rt[1].link_id = id2;
	m.confirm_rkey.rt[1].rkey = rkey2;
	m.confirm_rkey.rt[1].vaddr = vaddr2;
	return rtoken_confirm_rkey(&G.link[link], &m);
}

/*
 * Two connections whose peer elements share one rkey on link 1 at two
 * addresses: each finds its own rkey on link 2; a CONFIRM_RKEY for an
 * element of no connection (closed) is ignored and adds nothing; one
 * whose rtokens name two elements is a protocol error; the rows go when
 * the connections end, and the table is empty.
 */
START_TEST(native_conns)
{
	struct lgr_conn a, b, c;
	uint32_t rkey = 0;

	group(false);
	join(&a, 0);
	join(&b, 0);
	ck_assert_int_eq(lgr_conn_peer_rmb(&a, &G.link[0], 0x11, 0xa000), 0);
	ck_assert_int_eq(lgr_conn_peer_rmb(&b, &G.link[0], 0x11, 0xb000), 0);
	ck_assert_int_eq(G.rtokens.n, 2);
	/* only its own link so far */
	ck_assert_int_eq(lgr_conn_peer_rkey(&a, 1, &rkey), 0);
	ck_assert_uint_eq(rkey, 0x11);
	ck_assert_int_eq(lgr_conn_peer_rkey(&a, 2, &rkey), -ENOENT);
	ck_assert_int_eq(confirm(0, 0x11, 0xa000, 2, 0x2a, 0xa000), 0);
	ck_assert_int_eq(confirm(0, 0x11, 0xb000, 2, 0x2b, 0xb000), 0);
	ck_assert_int_eq(lgr_conn_peer_rkey(&a, 2, &rkey), 0);
	ck_assert_uint_eq(rkey, 0x2a);
	ck_assert_int_eq(lgr_conn_peer_rkey(&b, 2, &rkey), 0);
	ck_assert_uint_eq(rkey, 0x2b);
	/* for a connection closed meanwhile: nothing */
	ck_assert_int_eq(confirm(0, 0x11, 0xc000, 2, 0x2c, 0xc000), 0);
	ck_assert_int_eq(confirm(1, 0x2c, 0xc000, 1, 0x99, 0xc000), 0);
	ck_assert_int_eq(G.rtokens.n, 2);
	ck_assert_int_eq(lgr_conn_peer_rkey(&a, 1, &rkey), 0);
	ck_assert_uint_eq(rkey, 0x11);
	/* another element's address, or no link: ends the group */
	ck_assert_int_eq(confirm(0, 0x11, 0xa000, 2, 0x2a, 0xb000), -EPROTO);
	ck_assert_int_eq(confirm(0, 0x11, 0xa000, 0, 0x2a, 0xa000), -EPROTO);
	/* a moves to link 2 and is asked for by its rkey there; link 1's
	 * id goes to a new link, which a's peer tells over link 2 */
	ck_assert_int_eq(lgr_conn_peer_rmb(&a, &G.link[1], 0x2a, 0xa000), 0);
	ck_assert_int_eq(G.rtokens.n, 2);
	rtoken_link_new(&G, 1);
	ck_assert_int_eq(lgr_conn_peer_rkey(&a, 1, &rkey), -ENOENT);
	/* b, not moved (yet), is asked for by its rkey on link 2 now */
	ck_assert_uint_eq(b.peer_link, 2);
	ck_assert_int_eq(lgr_conn_peer_rkey(&b, 2, &rkey), 0);
	ck_assert_uint_eq(rkey, 0x2b);
	ck_assert_int_eq(confirm(1, 0x2a, 0xa000, 1, 0x3a, 0xa000), 0);
	ck_assert_int_eq(lgr_conn_peer_rkey(&a, 1, &rkey), 0);
	ck_assert_uint_eq(rkey, 0x3a);
	ck_assert_int_eq(lgr_conn_peer_rkey(&a, 2, &rkey), 0);
	ck_assert_uint_eq(rkey, 0x2a);
	/* c's peer reuses a's element (same rkey and address): one row,
	 * which stays until the last of them ends */
	join(&c, 1);
	ck_assert_int_eq(lgr_conn_peer_rmb(&c, &G.link[1], 0x2a, 0xa000), 0);
	ck_assert_int_eq(G.rtokens.n, 2);
	leave(&a);
	ck_assert_int_eq(G.rtokens.n, 2);
	ck_assert_int_eq(lgr_conn_peer_rkey(&c, 1, &rkey), 0);
	ck_assert_uint_eq(rkey, 0x3a);
	ck_assert_int_eq(lgr_conn_peer_rkey(&a, 1, &rkey), -ENOENT);
	leave(&c);
	ck_assert_int_eq(G.rtokens.n, 1);
	ck_assert_int_eq(confirm(1, 0x2a, 0xa000, 1, 0x3a, 0xa000), 0);
	ck_assert_int_eq(G.rtokens.n, 1);
	leave(&b);
	ck_assert_int_eq(G.rtokens.n, 0);
	rtoken_free(&G.rtokens);
}
END_TEST

/*
 * A kernel peer's group: its CONFIRM_RKEY comes before the connection
 * (a row of its own, refused as Linux's is when wrong), the connection
 * finds its rkey on its own link without one, and its end leaves the
 * rows to the peer's DELETE_RKEY.
 */
START_TEST(smcr_conns)
{
	struct lgr_conn a;
	struct llc_info m;
	uint32_t rkey = 0;

	group(true);
	ck_assert_int_eq(confirm(0, 0x11, 0xa000, 2, 0x2a, 0xa000), 0);
	ck_assert_int_eq(confirm(0, 0x11, 0xa000, 1, 0x2a, 0xa000), -EINVAL);
	ck_assert_int_eq(G.rtokens.n, 1);
	join(&a, 0);
	ck_assert_int_eq(lgr_conn_peer_rmb(&a, &G.link[0], 0x11, 0xa000), 0);
	ck_assert_int_eq(lgr_conn_peer_rkey(&a, 2, &rkey), 0);
	ck_assert_uint_eq(rkey, 0x2a);
	ck_assert_int_eq(lgr_conn_peer_rkey(&a, 1, &rkey), 0);
	ck_assert_uint_eq(rkey, 0x11);
	ck_assert_int_eq(lgr_conn_peer_rkey(&a, 3, &rkey), -ENOENT);
	leave(&a);
	ck_assert_int_eq(G.rtokens.n, 1);
	/* one link, no CONFIRM_RKEY: no row, the CLC's rkey */
	join(&a, 0);
	ck_assert_int_eq(lgr_conn_peer_rmb(&a, &G.link[0], 0x12, 0xb000), 0);
	ck_assert_int_eq(G.rtokens.n, 1);
	ck_assert_int_eq(lgr_conn_peer_rkey(&a, 1, &rkey), 0);
	ck_assert_uint_eq(rkey, 0x12);
	leave(&a);
	memset(&m, 0, sizeof(m));
	m.type = LLC_DELETE_RKEY;
	m.delete_rkey.num_rkeys = 1;
	m.delete_rkey.rkey[0] = 0x11;
	rtoken_delete_rkey(&G.link[0], &m);
	ck_assert_int_eq(G.rtokens.n, 0);
	rtoken_free(&G.rtokens);
}
END_TEST

static Suite *
rtoken_suite(void)
{
	Suite *s = suite_create("rtoken");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, set_get_del);
	tcase_add_test(tc, full_at_255);
	tcase_add_test(tc, keyed_by_address);
	tcase_add_test(tc, native_conns);
	tcase_add_test(tc, smcr_conns);
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
