#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# tests/rxe/fault-of, the judge of which failed VM runs may run again, on
# crafted consoles and lane logs (tests/ci/fixtures, shaped on Debian's
# 6.1 and 6.12 oopses and run-checks' TAP): rdma_rxe's known crashes and
# a stalled or ARP-less link are emulator faults; a crash in smc with
# rxe's frames around it, one whose rxe frames are only the unwinder's
# guesses ("? "), an rxe WARNING and a fault after a failed check are not.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
fx=$top/tests/ci/fixtures
judge=$top/tests/rxe/fault-of
T=$(mktemp -d "${TMPDIR:-/tmp}/ci-fault-of.XXXXXX") || exit 99
trap 'rm -rf "$T"' EXIT
failed=0

# expect STATUS PATTERN WHAT ARG...: fault-of ARG... exits STATUS and
# prints a line matching PATTERN (ERE)
expect() {
	local want=$1 pat=$2 what=$3 out rc

	shift 3
	out=$("$judge" "$@" 2>&1)
	rc=$?
	if [ "$rc" = "$want" ] && printf '%s\n' "$out" | grep -qE "$pat"; then
		echo "ok: $what: $out"
	else
		echo "FAIL: $what: exit $rc (want $want), said: $out (want /$pat/)"
		failed=1
	fi
}

expect 0 'RIP in rdma_rxe \(rxe_skb_tx_dtor\)' \
	"6.1's crash in rxe_skb_tx_dtor is a fault" "$fx/console-61-tx-dtor.txt"
expect 0 'kmem_cache_alloc_node_noprof called from rdma_rxe do_task' \
	"6.12's GPF under do_task is a fault" "$fx/console-612-kmem-cache.txt"
expect 0 'net_rx_action under rdma_rxe rxe_xmit_packet' \
	"6.12's NULL dereference under rxe_xmit_packet is a fault" \
	"$fx/console-612-net-rx.txt"
expect 0 'the link stalled: NETDEV WATCHDOG' \
	"a stalled link is a fault" "$fx/console-stall.txt"
expect 2 'not an emulator fault.*RIP in smc_llc_rx_response \[smc\]' \
	"a crash in smc with rxe's frames around it is not" \
	"$fx/console-smc-llc.txt"
expect 2 'not an emulator fault.*RIP in kmem_cache_alloc_node_noprof$' \
	"a crash with only guessed (? ) rxe frames is not" \
	"$fx/console-guessed-rxe.txt"
expect 1 'no emulator fault' "an rxe WARNING is no crash" \
	"$fx/console-rxe-warning.txt"
: >"$T/clean.txt"
expect 1 'no emulator fault' "a quiet console" "$T/clean.txt"

# the serial console's CR LF line ends
sed 's/$/\r/' "$fx/console-61-tx-dtor.txt" >"$T/crlf.txt"
expect 0 'RIP in rdma_rxe \(rxe_skb_tx_dtor\)' "CR LF line ends" "$T/crlf.txt"
# a crash still being written is judged once its trace is complete
head -n 20 "$fx/console-612-kmem-cache.txt" >"$T/partial.txt"
expect 1 'no emulator fault' "half a trace, the rxe frame not yet out" \
	"$T/partial.txt"
# a crash of ours first, rdma_rxe's after it: not a fault
cat "$fx/console-smc-llc.txt" "$fx/console-61-tx-dtor.txt" >"$T/both.txt"
expect 2 'RIP in smc_llc_rx_response' "smc's crash, then rxe's" "$T/both.txt"

# results directories (run-checks): the fault on one host, the checks of
# both; a check that had failed before the fault keeps the lane as it is
mkdir -p "$T/a/200-two-host-lgr" "$T/a/210-two-host-loss" \
	"$T/b/200-two-host-lgr" "$T/b/210-two-host-loss"
cp "$fx/console-612-kmem-cache.txt" "$T/a/console.log"
: >"$T/b/console.log"
echo 0 >"$T/a/200-two-host-lgr/status"
echo 77 >"$T/b/200-two-host-lgr/status"
expect 0 'a/console.log: rdma_rxe crashed' "a fault after checks that passed" \
	"$T/a" "$T/b"
echo 1 >"$T/b/200-two-host-lgr/status"
expect 1 'no rerun: 200-two-host-lgr had failed \(exit 1\)' \
	"a fault after a failed check" "$T/a" "$T/b"
echo 0 >"$T/b/200-two-host-lgr/status"
echo "FAIL: 2 of 4 transfers corrupted" >"$T/a/210-two-host-loss/output.log"
expect 1 'no rerun: 210-two-host-loss had failed \(FAIL: 2 of 4' \
	"a fault during a check that had said FAIL" "$T/a" "$T/b"
rm "$T/a/210-two-host-loss/output.log"
cp "$fx/console-smc-llc.txt" "$T/b/console.log"
expect 2 'b/console.log: .*RIP in smc_llc_rx_response' \
	"rxe's crash on a, smc's on b" "$T/a" "$T/b"

# lane logs (scripts/test): the ARP loss, and what looks like it but is not
lane=$fx/lane-arp-loss.txt
expect 0 'ARP loss.*270-two-host-resume-fail.*neighbour 10\.99\.0\.2 FAILED' \
	"the ARP loss" -l "$lane"
sed 's/^ok 5 - 240-two-host-kill$/# FAIL: connections not reset within 6 s\nnot ok 5 - 240-two-host-kill (exit 1 on a)/;
	s/^ok \([67]\) - \(.*\)/not ok \1 - \2 (exit 1 on a)/' "$lane" >"$T/before.txt"
expect 1 'no rerun: 240-two-host-kill failed first, without the ARP loss' \
	"a check failed before the ARP loss" -l "$T/before.txt"
sed 's/^not ok 10 - \([^ ]*\).*/ok 10 - \1/' "$lane" >"$T/later.txt"
expect 1 'no rerun: a later check passed \(ok 10 - 285-two-host-impostor\)' \
	"a check passed after it" -l "$T/later.txt"
grep -v 'FAILED *$' "$lane" >"$T/neigh.txt"
expect 1 'without the ARP loss' "no neighbour FAILED" -l "$T/neigh.txt"
grep -v 'No route to host' "$lane" >"$T/route.txt"
expect 1 'without the ARP loss' "no \"No route to host\"" -l "$T/route.txt"
sed 's/^not ok/ok/' "$lane" >"$T/passed.txt"
expect 1 'no check failed' "a lane that passed" -l "$T/passed.txt"
printf '1..2\nok 1 - 010-ib-write-bw\nBail out! the Soft-RoCE VM did not finish (vm-run exit 98)\n' \
	>"$T/bail.txt"
expect 1 'bailed out' "a lane that bailed out" -l "$T/bail.txt"

exit $failed
