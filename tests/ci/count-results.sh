#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# scripts/count-results, .ci/run's closing line, on crafted build trees
# whose logs the real automake drivers write (build-aux/test-driver,
# tests/rxe/tap-driver.sh) for fake tests: a clean tree is green, and
# nothing that must make it red comes out green: a suite that fails after
# its clean Check summary, a skip under CI that .ci/allowed-skips does
# not list (a whole test or one VM check), a failed or bailed-out lane, a
# run that failed with no failed test, a tree with no results.  Allowed
# skips and reruns are counted, and named, but not failures.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
count=$top/scripts/count-results
driver=$top/build-aux/test-driver
tap_driver=$top/tests/rxe/tap-driver.sh
[ -f "$driver" ] || {
	echo "no $driver (autoreconf -fi makes it)"
	exit 99
}
T=$(mktemp -d "${TMPDIR:-/tmp}/ci-count.XXXXXX") || exit 99
trap 'rm -rf "$T"' EXIT
failed=0

# plain TREE NAME STATUS TEXT: what test-driver records in TREE for a test
# NAME that prints TEXT and exits STATUS
plain() {
	mkdir -p "$1/$(dirname "$2")"
	printf '%s\n' "$4" >"$T/text"
	sh "$driver" --test-name "$2" --log-file "$1/$2.log" \
		--trs-file "$1/$2.trs" --color-tests no --enable-hard-errors yes \
		--expect-failure no -- sh -c 'cat "$0"; exit "$1"' "$T/text" "$3" \
		>/dev/null
}

# tap TREE NAME TEXT: what tap-driver.sh records for a VM lane NAME.rxe
# whose run-checks printed TEXT
tap() {
	mkdir -p "$1/$(dirname "$2")"
	printf '%s\n' "$3" >"$T/text"
	env AM_TAP_AWK=awk sh "$tap_driver" --test-name "$2.rxe" \
		--log-file "$1/$2.log" --trs-file "$1/$2.trs" --color-tests no \
		--enable-hard-errors yes --expect-failure no -- cat "$T/text" \
		>/dev/null
}

# clean TREE: a Check suite of 12, a system test and a lane of 3
clean() {
	plain "$1" tests/unit/check_a 0 "Running suite(s): a
100%: Checks: 12, Failures: 0, Errors: 0"
	plain "$1" tests/system/010-duplex.sh 0 "3 connections, all verified"
	tap "$1" tests/rxe/basic "1..3
# ---- 010-ib-write-bw
ok 1 - 010-ib-write-bw
# ---- 020-list-devices
ok 2 - 020-list-devices
# ---- 030-dev-ops
ok 3 - 030-dev-ops"
}

# expect WHAT CI STATUS LINE PATTERN [ARG...]: count-results [ARG...] on
# $tree with CI=CI exits STATUS, closes with LINE, and says PATTERN (ERE)
expect() {
	local what=$1 ci=$2 want=$3 line=$4 pat=$5 out rc last

	shift 5
	out=$(CI=$ci "$count" -a "$T/allowed" "$@" "$tree" 2>&1)
	rc=$?
	last=$(printf '%s\n' "$out" | tail -n 1)
	if [ "$rc" = "$want" ] && [ "$last" = "$line" ] &&
		printf '%s\n' "$out" | grep -qE "$pat"; then
		echo "ok: $what: $last"
		return
	fi
	echo "FAIL: $what: exit $rc (want $want), closing line \"$last\" (want \"$line\"), pattern /$pat/; it said:"
	printf '%s\n' "$out" | sed 's/^/    /'
	failed=1
}

: >"$T/allowed"

tree=$T/clean
clean "$tree"
expect "a clean tree" true 0 "16 passed, 0 failed, 0 skipped, 0 rerun" .
expect "a run that failed with no failed test" true 1 \
	"16 passed, 1 failed, 0 skipped, 0 rerun" \
	'FAILED: the run exited 2 with no failed test' -r 2

tree=$T/empty
mkdir -p "$tree"
expect "no results at all" true 1 "0 passed, 1 failed, 0 skipped, 0 rerun" \
	'FAILED: no test results'

# a suite whose summary is clean but which then fails (a leak report)
tree=$T/after-summary
clean "$tree"
plain "$tree" tests/unit/check_b 1 "Running suite(s): b
100%: Checks: 5, Failures: 0, Errors: 0

=================================================================
==4711==ERROR: LeakSanitizer: detected memory leaks"
expect "a FAIL after a clean Check summary" true 1 \
	"21 passed, 1 failed, 0 skipped, 0 rerun" \
	'FAILED: tests/unit/check_b.trs: FAIL after a clean Check summary \(5 checks\)'
plain "$tree" tests/unit/check_b 99 "Running suite(s): b
100%: Checks: 5, Failures: 0, Errors: 0"
expect "an ERROR after a clean Check summary" true 1 \
	"21 passed, 1 failed, 0 skipped, 0 rerun" 'ERROR after a clean Check summary'

# a whole test skipped, as check_smc_opt does without root
tree=$T/skip
clean "$tree"
plain "$tree" tests/unit/check_smc_opt 77 "SKIP: not root"
expect "a skip outside CI" "" 0 "16 passed, 0 failed, 1 skipped, 0 rerun" \
	'skipped: tests/unit/check_smc_opt \(not root\)'
expect "a skip under CI, not allowed" true 1 \
	"16 passed, 1 failed, 0 skipped, 0 rerun" \
	'FAILED: tests/unit/check_smc_opt skipped under CI, not in .*allowed \(not root\)'
printf '# test  why\ntests/unit/check_smc_opt  the CI host runs the tests without root\n' \
	>"$T/allowed"
expect "an allowed skip under CI" true 0 \
	"16 passed, 0 failed, 1 skipped, 0 rerun" \
	'skipped: tests/unit/check_smc_opt \(not root; allowed under CI: the CI host runs the tests without root\)'
: >"$T/allowed"

# one VM check skipped inside a lane, and a system test's own skip line
tree=$T/skip-tap
clean "$tree"
tap "$tree" tests/rxe/ksmc "1..2
ok 1 - 310-ksmc-stream
ok 2 - 320-ksmc-decline # SKIP ksmcdecline not built (configure found no clang or libbpf)"
plain "$tree" tests/system/190-smc-listen.sh 77 \
	"190-smc-listen: SKIP: no smc module"
expect "VM check and system test skipped under CI, not allowed" true 1 \
	"17 passed, 2 failed, 0 skipped, 0 rerun" \
	'FAILED: tests/rxe/ksmc.rxe:320-ksmc-decline skipped under CI'
expect "... the system test named with its reason" true 1 \
	"17 passed, 2 failed, 0 skipped, 0 rerun" \
	'FAILED: tests/system/190-smc-listen.sh skipped under CI, .*\(no smc module\)'
printf 'tests/rxe/ksmc.rxe:320-ksmc-decline  no clang here\n' >"$T/allowed"
expect "the VM check allowed, the system test not" true 1 \
	"17 passed, 1 failed, 1 skipped, 0 rerun" 'allowed under CI: no clang here'
: >"$T/allowed"

# a lane that failed one check, one that bailed out
tree=$T/lanes
clean "$tree"
tap "$tree" tests/rxe/two-host "1..2
ok 1 - 200-two-host-lgr
# FAIL: 2 of 4 transfers corrupted
# <4>smcproxyd: lgr 3 link 1 (rxe0): down: no answer to TEST_LINK
# [   88.1] smc: SMC-R lg 00000100 net 1 link removed: id 00000101
not ok 2 - 210-two-host-loss (exit 1 on a)"
tap "$tree" tests/rxe/ksmc "1..3
ok 1 - 310-ksmc-stream
Bail out! the Soft-RoCE VM did not finish (vm-run exit 99)"
expect "a failed and a bailed-out lane" true 1 \
	"18 passed, 2 failed, 0 skipped, 0 rerun" 'FAIL: 2 of 4 transfers corrupted'
expect "... with what its links and the kernel said" true 1 \
	"18 passed, 2 failed, 0 skipped, 0 rerun" 'lgr 3 link 1 \(rxe0\): down: no answer'
expect "... the kernel's SMC line too" true 1 \
	"18 passed, 2 failed, 0 skipped, 0 rerun" '\] smc: SMC-R lg 00000100 net 1 link removed'

# reruns: counted and named, not failures
tree=$T/rerun
clean "$tree"
printf '%s\n' \
	'tests/rxe/two-host.rxe: ARP loss on the emulated link: 270-two-host-resume-fail failed with "No route to host", neighbour 10.99.0.2 FAILED, and no check after it passed' \
	'tests/rxe/ksmc.rxe: attempt 1 of 5 ended in an emulator fault: a/console.log: rdma_rxe crashed' \
	>"$tree/reruns"
expect "two reruns" true 0 "16 passed, 0 failed, 0 skipped, 2 rerun" \
	'rerun: tests/rxe/two-host.rxe: ARP loss'

exit $failed
