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

# step_fails STEP OUT WANT: CI's step STEP of the copy must fail, its .trs
# say FAIL, its output name WANT, and its log show the overflow
step_fails()
{
	"$tree/scripts/$1" "$2" >"$2.out" 2>&1 &&
		fail "$1 passed with the overflow: $(cat "$2.out")"
	grep -qx ':test-result: FAIL' "$2.trs" ||
		fail "$1's .trs does not say FAIL: $(cat "$2.trs")"
	grep -q "$3" "$2.out" || fail "$1 does not say '$3': $(cat "$2.out")"
	grep -q 'buffer overflow detected' "$2.log" ||
		fail "$1 failed, but not for the overflow: $(tail -n 20 "$2.log")"
	smc_log "$1: $(cat "$2.out")"
}

# the build by hand: configure in the tree, fortified to level 3
CHECK_TESTS=tests/unit/check_conf step_fails build-by-hand "$T/hand" check_conf

# the .deb: dh_auto_test runs the suite under Debian's own flags
sed -i 's|^\tdh_auto_test -- .*|\tdh_auto_test -- TESTS=tests/unit/check_conf|' "$tree/debian/rules"
grep -q 'TESTS=tests/unit/check_conf' "$tree/debian/rules" ||
	fail "debian/rules has no dh_auto_test line to narrow: update this test"
JOBS=2 step_fails deb-lintian "$T/deb" 'dpkg-buildpackage failed'
