// SPDX-License-Identifier: BSD-2-Clause
/*
 * CDC codec and cursor arithmetic: the message round trips at the offsets
 * docs/protocol.md gives, malformed messages are refused, and the cursor
 * helpers are right at every boundary a peer could push them to.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "cdc_wire.h"

#ifndef TOP_SRCDIR
#define TOP_SRCDIR "."
#endif

static void
sample(struct cdc_info *m)
{
	memset(m, 0, sizeof(*m));
	m->seqno = 0x1234;
	m->token = 0xdeadbeef;
	m->prod.wrap = 0x0102;
	m->prod.count = 0x03040506;
	m->cons.wrap = 0xfffe;
	m->cons.count = 0x0000ffff;
	m->prod_flags = CDC_PF_WRITE_BLOCKED | CDC_PF_FAILOVER_VALIDATION;
	m->conn_state_flags = CDC_CS_PEER_DONE_WRITING;
}

static void
encode_ok(const struct cdc_info *m, uint8_t *buf)
{
	ck_assert_int_eq(cdc_msg_encode(buf, CDC_MSG_LEN, m), CDC_MSG_LEN);
}

static int
decode_same(const uint8_t *buf)
{
	struct cdc_info m;
	uint8_t re[CDC_MSG_LEN];
	int rc;

	rc = cdc_msg_decode(buf, CDC_MSG_LEN, &m);
	if (rc)
		return rc;
	encode_ok(&m, re);
	ck_assert_mem_eq(re, buf, CDC_MSG_LEN);
	return 0;
}

static struct cdc_cursor
curs(uint16_t wrap, uint32_t count)
{
	struct cdc_cursor c = {.wrap = wrap, .count = count};

	return c;
}

START_TEST(round_trip_layout)
{
	uint8_t buf[CDC_MSG_LEN];
	struct cdc_info in, out;
	unsigned int f;

	sample(&in);
	encode_ok(&in, buf);
	ck_assert_mem_eq(buf, "\xfe\x2c\x12\x34\xde\xad\xbe\xef", 8);
	ck_assert_mem_eq(buf + 8, "\0\0\x01\x02\x03\x04\x05\x06", 8);
	ck_assert_mem_eq(buf + 16, "\0\0\xff\xfe\x00\x00\xff\xff", 8);
	ck_assert_mem_eq(buf + 24, "\x88\x80", 2);
	for (f = 26; f < CDC_MSG_LEN; f++)
		ck_assert_uint_eq(buf[f], 0);
	memset(&out, 0xee, sizeof(out));
	ck_assert_int_eq(cdc_msg_decode(buf, sizeof(buf), &out), 0);
	ck_assert_uint_eq(out.seqno, 0x1234);
	ck_assert_uint_eq(out.token, 0xdeadbeef);
	ck_assert_uint_eq(out.prod.wrap, 0x0102);
	ck_assert_uint_eq(out.prod.count, 0x03040506);
	ck_assert_uint_eq(out.cons.wrap, 0xfffe);
	ck_assert_uint_eq(out.cons.count, 0xffff);
	ck_assert_uint_eq(out.prod_flags, in.prod_flags);
	ck_assert_uint_eq(out.conn_state_flags, in.conn_state_flags);

	/* every flag in its bit, MSB first */
	for (f = 0; f < 32; f++) {
		in.prod_flags = (uint8_t)(f << 3);
		in.conn_state_flags = (uint8_t)((f & 7) << 5);
		encode_ok(&in, buf);
		ck_assert_uint_eq(buf[24], f << 3);
		ck_assert_int_eq(cdc_msg_decode(buf, sizeof(buf), &out), 0);
		ck_assert_uint_eq(out.prod_flags, f << 3);
		ck_assert_uint_eq(out.conn_state_flags, (f & 7) << 5);
	}
	ck_assert_uint_eq(CDC_PF_WRITE_BLOCKED, 0x80);
	ck_assert_uint_eq(CDC_PF_FAILOVER_VALIDATION, 0x08);
	ck_assert_uint_eq(CDC_CS_PEER_CONN_ABORT, 0x20);
}
END_TEST

START_TEST(malformed)
{
	uint8_t good[CDC_MSG_LEN + 4], buf[CDC_MSG_LEN + 4];
	struct cdc_info m;
	size_t i;
	int v, bit;

	sample(&m);
	encode_ok(&m, good);
	memset(good + CDC_MSG_LEN, 0, 4);
	for (i = 0; i < CDC_MSG_LEN; i++)
		ck_assert_int_eq(cdc_msg_decode(good, i, &m), -EPROTO);
	ck_assert_int_eq(cdc_msg_decode(good, CDC_MSG_LEN + 1, &m), -EPROTO);
	ck_assert_int_eq(cdc_msg_decode(good, CDC_MSG_LEN + 4, &m), -EPROTO);
	for (v = 0; v < 256; v++) {
		memcpy(buf, good, CDC_MSG_LEN);
		buf[0] = (uint8_t)v;
		ck_assert_int_eq(cdc_msg_decode(buf, CDC_MSG_LEN, &m),
				 v == 0xfe ? 0 : -EPROTO);
		memcpy(buf, good, CDC_MSG_LEN);
		buf[1] = (uint8_t)v;
		ck_assert_int_eq(cdc_msg_decode(buf, CDC_MSG_LEN, &m),
				 v == 44 ? 0 : -EPROTO);
	}
	/* token 0 addresses no connection */
	memcpy(buf, good, CDC_MSG_LEN);
	memset(buf + 4, 0, 4);
	ck_assert_int_eq(cdc_msg_decode(buf, CDC_MSG_LEN, &m), -EPROTO);
	/* reserved: cursor halves, flag bits, the tail; data_len (26, 27)
	 * names bytes a 44-byte message does not have */
	for (i = 0; i < CDC_MSG_LEN; i++) {
		bool rsv = i == 8 || i == 9 || i == 16 || i == 17 || i >= 26;

		for (bit = 0; bit < 8; bit++) {
			uint8_t mask = (uint8_t)(1 << bit);

			if (i == 24)
				rsv = mask & CDC_PF_RESERVED;
			else if (i == 25)
				rsv = mask & CDC_CS_RESERVED;
			if (!rsv)
				continue;
			memcpy(buf, good, CDC_MSG_LEN);
			buf[i] ^= mask;
			ck_assert_msg(cdc_msg_decode(buf, CDC_MSG_LEN, &m) ==
					      -EPROTO,
				      "byte %zu bit %d", i, bit);
		}
	}
	/* no bit is ignored */
	for (i = 0; i < CDC_MSG_LEN * 8; i++) {
		memcpy(buf, good, CDC_MSG_LEN);
		buf[i / 8] ^= (uint8_t)(0x80 >> i % 8);
		decode_same(buf);
	}
	/* the encoder refuses what the decoder would */
	sample(&m);
	ck_assert_int_eq(cdc_msg_encode(buf, CDC_MSG_LEN - 1, &m), -ENOSPC);
	m.token = 0;
	ck_assert_int_eq(cdc_msg_encode(buf, CDC_MSG_LEN, &m), -EINVAL);
	sample(&m);
	m.prod_flags = 0x01;
	ck_assert_int_eq(cdc_msg_encode(buf, CDC_MSG_LEN, &m), -EINVAL);
	sample(&m);
	m.conn_state_flags = 0x10;
	ck_assert_int_eq(cdc_msg_encode(buf, CDC_MSG_LEN, &m), -EINVAL);
}
END_TEST

/* A CDC carrying data: data_len at offset 26, the bytes behind. */
START_TEST(data_behind_header)
{
	uint8_t buf[CDC_MSG_LEN + CDC_DATA_MAX + 1];
	struct cdc_info m, out;

	sample(&m);
	m.prod_flags = 0;
	m.data_len = 5;
	encode_ok(&m, buf);
	ck_assert_mem_eq(buf + 26, "\x00\x05", 2);
	memcpy(buf + CDC_MSG_LEN, "hello", 5);
	ck_assert_int_eq(cdc_msg_decode(buf, CDC_MSG_LEN + 5, &out), 0);
	ck_assert_uint_eq(out.data_len, 5);
	/* the length must be the header and exactly the data it names */
	ck_assert_int_eq(cdc_msg_decode(buf, CDC_MSG_LEN, &out), -EPROTO);
	ck_assert_int_eq(cdc_msg_decode(buf, CDC_MSG_LEN + 4, &out), -EPROTO);
	ck_assert_int_eq(cdc_msg_decode(buf, CDC_MSG_LEN + 6, &out), -EPROTO);
	/* at most CDC_DATA_MAX */
	m.data_len = CDC_DATA_MAX;
	encode_ok(&m, buf);
	ck_assert_int_eq(cdc_msg_decode(buf, CDC_MSG_LEN + CDC_DATA_MAX, &out),
			 0);
	buf[27]++;
	ck_assert_int_eq(
		cdc_msg_decode(buf, CDC_MSG_LEN + CDC_DATA_MAX + 1, &out),
		-EPROTO);
	m.data_len = CDC_DATA_MAX + 1;
	ck_assert_int_eq(cdc_msg_encode(buf, sizeof(buf), &m), -EINVAL);
	/* never on a failover validation: its cursors are not believed */
	m.data_len = 5;
	m.prod_flags = CDC_PF_FAILOVER_VALIDATION;
	ck_assert_int_eq(cdc_msg_encode(buf, sizeof(buf), &m), -EINVAL);
	m.prod_flags = 0;
	encode_ok(&m, buf);
	buf[24] = CDC_PF_FAILOVER_VALIDATION;
	ck_assert_int_eq(cdc_msg_decode(buf, CDC_MSG_LEN + 5, &out), -EPROTO);
}
END_TEST

START_TEST(curs_add)
{
	const size_t size = 16384;
	struct cdc_cursor c;

	c = curs(0, 0);
	cdc_curs_add(&c, 0, size);
	ck_assert(c.wrap == 0 && c.count == 0);
	cdc_curs_add(&c, 1, size);
	ck_assert(c.wrap == 0 && c.count == 1);
	c = curs(0, size - 1);
	cdc_curs_add(&c, 1, size);
	ck_assert(c.wrap == 1 && c.count == 0);
	c = curs(0, size - 1);
	cdc_curs_add(&c, 2, size);
	ck_assert(c.wrap == 1 && c.count == 1);
	/* an exact fill comes back to the same count one turn later */
	c = curs(7, 100);
	cdc_curs_add(&c, size, size);
	ck_assert(c.wrap == 8 && c.count == 100);
	c = curs(7, 0);
	cdc_curs_add(&c, size, size);
	ck_assert(c.wrap == 8 && c.count == 0);
	/* the wrap counter wraps */
	c = curs(0xffff, size - 10);
	cdc_curs_add(&c, 10, size);
	ck_assert(c.wrap == 0 && c.count == 0);
	c = curs(0xffff, size - 10);
	cdc_curs_add(&c, 9, size);
	ck_assert(c.wrap == 0xffff && c.count == size - 1);
	/* more than a turn at once */
	c = curs(1, 5);
	cdc_curs_add(&c, 2 * size + 3, size);
	ck_assert(c.wrap == 3 && c.count == 8);
	/* a one-byte ring */
	c = curs(0, 0);
	cdc_curs_add(&c, 3, 1);
	ck_assert(c.wrap == 3 && c.count == 0);
	c = curs(4, 2);
	cdc_curs_add(&c, 99, 0);
	ck_assert(c.wrap == 4 && c.count == 2);
}
END_TEST

START_TEST(curs_diff_comp)
{
	const size_t size = 65536;
	struct cdc_cursor a, b;

	a = curs(3, 10);
	b = curs(3, 10);
	ck_assert_uint_eq(cdc_curs_diff(size, &a, &b), 0);
	ck_assert(cdc_curs_comp(size, &a, &b) == 0);
	b = curs(3, 11);
	ck_assert_uint_eq(cdc_curs_diff(size, &a, &b), 1);
	ck_assert(cdc_curs_comp(size, &a, &b) == 1);
	ck_assert(cdc_curs_comp(size, &b, &a) == -1);
	ck_assert_uint_eq(cdc_curs_diff(size, &b, &a), 0); /* behind: 0 */
	b = curs(4, 0);
	ck_assert_uint_eq(cdc_curs_diff(size, &a, &b), size - 10);
	ck_assert(cdc_curs_comp(size, &a, &b) == (int64_t)size - 10);
	b = curs(4, 10); /* exact fill */
	ck_assert_uint_eq(cdc_curs_diff(size, &a, &b), size);
	ck_assert(cdc_curs_comp(size, &a, &b) == (int64_t)size);
	ck_assert(cdc_curs_comp(size, &b, &a) == -(int64_t)size);
	/* 0xffff -> 0 is one turn forward, not 65535 back */
	a = curs(0xffff, size - 1);
	b = curs(0, 0);
	ck_assert_uint_eq(cdc_curs_diff(size, &a, &b), 1);
	ck_assert(cdc_curs_comp(size, &a, &b) == 1);
	ck_assert(cdc_curs_comp(size, &b, &a) == -1);
	a = curs(0, 0);
	b = curs(0x8000, 0);
	ck_assert(cdc_curs_comp(size, &a, &b) < 0); /* half way: behind */
	b = curs(0x7fff, 0);
	ck_assert(cdc_curs_comp(size, &a, &b) == 0x7fffLL * (int64_t)size);
}
END_TEST

START_TEST(curs_check)
{
	const size_t size = 16384;
	struct cdc_cursor old, new;

	old = curs(5, 100);
	new = old;
	ck_assert_int_eq(cdc_curs_check(size, &old, &new), 0);
	new = curs(5, 101);
	ck_assert_int_eq(cdc_curs_check(size, &old, &new), 0);
	new = curs(5, size - 1);
	ck_assert_int_eq(cdc_curs_check(size, &old, &new), 0);
	new = curs(6, 100); /* exactly one window */
	ck_assert_int_eq(cdc_curs_check(size, &old, &new), 0);
	new = curs(6, 101); /* one byte past the window */
	ck_assert_int_eq(cdc_curs_check(size, &old, &new), -EPROTO);
	new = curs(7, 0);
	ck_assert_int_eq(cdc_curs_check(size, &old, &new), -EPROTO);
	new = curs(5, 99); /* backwards */
	ck_assert_int_eq(cdc_curs_check(size, &old, &new), -EPROTO);
	new = curs(4, 100);
	ck_assert_int_eq(cdc_curs_check(size, &old, &new), -EPROTO);
	new = curs(4, size - 1);
	ck_assert_int_eq(cdc_curs_check(size, &old, &new), -EPROTO);
	new = curs(5 + 0x8000, 100);
	ck_assert_int_eq(cdc_curs_check(size, &old, &new), -EPROTO);
	/* outside the element */
	new = curs(5, size);
	ck_assert_int_eq(cdc_curs_check(size, &old, &new), -ERANGE);
	new = curs(5, 0xffffffff);
	ck_assert_int_eq(cdc_curs_check(size, &old, &new), -ERANGE);
	new = curs(5, 100);
	old = curs(5, size);
	ck_assert_int_eq(cdc_curs_check(size, &old, &new), -ERANGE);
	/* across the 0xffff -> 0 wrap */
	old = curs(0xffff, size - 1);
	new = curs(0, 0);
	ck_assert_int_eq(cdc_curs_check(size, &old, &new), 0);
	new = curs(0, size - 1);
	ck_assert_int_eq(cdc_curs_check(size, &old, &new), 0);
	new = curs(0, size);
	ck_assert_int_eq(cdc_curs_check(size, &old, &new), -ERANGE);
	old = curs(0, 0);
	new = curs(0xffff, size - 1);
	ck_assert_int_eq(cdc_curs_check(size, &old, &new), -EPROTO);
	/* sizes */
	ck_assert_int_eq(cdc_curs_check(0, &old, &old), -EINVAL);
	ck_assert_int_eq(cdc_curs_check(((size_t)1 << 32) + 1, &old, &old),
			 -EINVAL);
	ck_assert_int_eq(cdc_curs_check((size_t)1 << 32, &old, &old), 0);
	old = curs(0, 0);
	new = curs(0, 0);
	ck_assert_int_eq(cdc_curs_check(1, &old, &new), 0);
	new = curs(1, 0);
	ck_assert_int_eq(cdc_curs_check(1, &old, &new), 0);
	new = curs(2, 0);
	ck_assert_int_eq(cdc_curs_check(1, &old, &new), -EPROTO);
}
END_TEST

/* add, diff, comp and check agree on one step of n bytes from old. */
static void
curs_step(size_t size, struct cdc_cursor old, size_t n)
{
	struct cdc_cursor new = old;

	cdc_curs_add(&new, n, size);
	ck_assert_uint_lt(new.count, size);
	ck_assert_int_eq(cdc_curs_check(size, &old, &new), 0);
	ck_assert_uint_eq(cdc_curs_diff(size, &old, &new), n);
	ck_assert(cdc_curs_comp(size, &old, &new) == (int64_t)n);
	cdc_curs_add(&new, 1, size);
	ck_assert_int_eq(cdc_curs_check(size, &old, &new),
			 n == size ? -EPROTO : 0);
}

/* ... for every step up to a full window, from around the ring. */
START_TEST(curs_consistent)
{
	static const size_t sizes[] = {1, 7, 16384};
	static const uint16_t wraps[] = {0, 1, 0x7fff, 0xfffe, 0xffff};
	size_t s, w, n, size, start;

	for (s = 0; s < 3; s++) {
		size = sizes[s];
		for (w = 0; w < 5; w++)
			for (start = 0; start < size; start += size / 5 + 1)
				for (n = 0; n <= size; n += size / 64 + 1)
					curs_step(
						size,
						curs(wraps[w], (uint32_t)start),
						n);
	}
}
END_TEST

START_TEST(seq_newer)
{
	ck_assert(cdc_seq_newer(1, 0));
	ck_assert(!cdc_seq_newer(0, 1));
	ck_assert(!cdc_seq_newer(5, 5));
	ck_assert(cdc_seq_newer(0, 0xffff));
	ck_assert(!cdc_seq_newer(0xffff, 0));
	ck_assert(cdc_seq_newer(0x7fff, 0));
	ck_assert(!cdc_seq_newer(0x8000, 0));
	ck_assert(cdc_seq_newer(0x1000, 0x9001));
}
END_TEST

/*
 * What Linux 6.12 sent (tests/fixtures/ksmc): its CDCs are ours byte for
 * byte, and a connection's first one has seqno 1.
 */
START_TEST(kernel_cdcs)
{
	uint8_t wire[64], again[CDC_MSG_LEN];
	struct cdc_info m;
	struct dirent *e;
	char path[512];
	unsigned int n = 0;
	size_t len;
	FILE *f;
	DIR *d;

	d = opendir(TOP_SRCDIR "/tests/fixtures/ksmc");
	ck_assert(d != NULL);
	while ((e = readdir(d)) != NULL) {
		if (!strstr(e->d_name, "-cdc-"))
			continue;
		snprintf(path, sizeof(path), "%s/tests/fixtures/ksmc/%s",
			 TOP_SRCDIR, e->d_name);
		f = fopen(path, "rb");
		ck_assert(f != NULL);
		len = fread(wire, 1, sizeof(wire), f);
		fclose(f);
		ck_assert_uint_eq(len, CDC_MSG_LEN);
		ck_assert_msg(cdc_msg_decode(wire, len, &m) == 0, "%s refused",
			      e->d_name);
		ck_assert_uint_eq(m.data_len, 0);
		ck_assert(m.token == 1 || m.token == 2);
		ck_assert_int_eq(cdc_msg_encode(again, sizeof(again), &m),
				 CDC_MSG_LEN);
		ck_assert_mem_eq(again, wire, CDC_MSG_LEN);
		/* 08 and 26 open the two connections, client to server */
		if (strncmp(e->d_name, "08-", 3) == 0 ||
		    strncmp(e->d_name, "26-", 3) == 0)
			ck_assert_uint_eq(m.seqno, 1);
		n++;
	}
	closedir(d);
	ck_assert_uint_eq(n, 14);
}
END_TEST

static Suite *
cdc_suite(void)
{
	Suite *s = suite_create("cdc");
	TCase *tc = tcase_create("codec");

	tcase_add_test(tc, round_trip_layout);
	tcase_add_test(tc, malformed);
	tcase_add_test(tc, data_behind_header);
	tcase_add_test(tc, kernel_cdcs);
	suite_add_tcase(s, tc);
	tc = tcase_create("cursors");
	tcase_add_test(tc, curs_add);
	tcase_add_test(tc, curs_diff_comp);
	tcase_add_test(tc, curs_check);
	tcase_add_test(tc, curs_consistent);
	tcase_add_test(tc, seq_newer);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(cdc_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
