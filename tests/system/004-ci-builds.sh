#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# CI's build steps fail when a documented build fails (issue 49): the .deb
# (scripts/deb-lintian, dpkg-buildpackage with its tests) and the build by
# hand under the hardening flags (scripts/build-by-hand, _FORTIFY_SOURCE=3)
# each get a copy of this tree with a fixed buffer put back in check_conf's
# test_key_symlink: realpath() into 256 bytes, the overflow that Debian's
# build flags catch and the sanitizer build does not.  Each step must say
# FAIL in its .trs and name what failed.  One suite runs in each (TESTS),
# to keep the two builds short.
. "$(dirname "$0")/lib.sh"
smc_init
need dpkg-buildpackage dpkg-buildflags lintian autoreconf git tar
SRC=$(cd "$(dirname "$0")/../.." && pwd)

tree=$T/tree
mkdir "$tree"
(cd "$SRC" && git ls-files -z -co --exclude-standard |
	tar --null -T - --ignore-failed-read -cf -) | tar -C "$tree" -xf - ||
	fail "cannot copy the tree"
f=$tree/tests/unit/check_conf.c
grep -q 'real = realpath(target, NULL);' "$f" ||
	fail "test_key_symlink's realpath moved: update this test"
sed -i -e 's/target\[TPATH\], \*real;/target[TPATH], real[TPATH];/' \
	-e 's/real = realpath(target, NULL);/ck_assert_ptr_nonnull(realpath(target, real));/' \
	-e '/^\tck_assert_ptr_nonnull(real);$/d' -e '/^\tfree(real);$/d' "$f"
grep -q 'real\[TPATH\]' "$f" || fail "cannot put the fixed buffer back: update this test"

# the build by hand: configure in the tree, fortified to level 3
CHECK_TESTS=tests/unit/check_conf "$tree/scripts/build-by-hand" "$T/hand" \
	>"$T/hand.out" 2>&1 && fail "build-by-hand passed with the overflow: $(cat "$T/hand.out")"
grep -qx ':test-result: FAIL' "$T/hand.trs" ||
	fail "build-by-hand's .trs does not say FAIL: $(cat "$T/hand.trs")"
grep -q 'check_conf' "$T/hand.out" ||
	fail "build-by-hand does not name check_conf: $(cat "$T/hand.out")"
grep -q 'buffer overflow detected' "$T/hand.log" ||
	fail "build-by-hand failed, but not for the overflow: $(tail -n 20 "$T/hand.log")"
smc_log "build-by-hand: $(cat "$T/hand.out")"

# the .deb: dh_auto_test runs the suite under Debian's own flags
sed -i 's|^\tdh_auto_test -- .*|\tdh_auto_test -- TESTS=tests/unit/check_conf|' "$tree/debian/rules"
grep -q 'TESTS=tests/unit/check_conf' "$tree/debian/rules" ||
	fail "debian/rules has no dh_auto_test line to narrow: update this test"
JOBS=2 "$tree/scripts/deb-lintian" "$T/deb" >"$T/deb.out" 2>&1 &&
	fail "deb-lintian passed with the overflow: $(cat "$T/deb.out")"
grep -qx ':test-result: FAIL' "$T/deb.trs" ||
	fail "deb-lintian's .trs does not say FAIL: $(cat "$T/deb.trs")"
grep -q 'dpkg-buildpackage failed' "$T/deb.out" ||
	fail "deb-lintian failed, but not in dpkg-buildpackage: $(cat "$T/deb.out")"
grep -q 'buffer overflow detected' "$T/deb.log" ||
	fail "the .deb build failed, but not for the overflow: $(tail -n 20 "$T/deb.log")"
smc_log "deb-lintian: $(cat "$T/deb.out")"
