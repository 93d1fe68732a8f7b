#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The export's target is down (nothing listens): the client's connection
# to A must be closed without data, and the reason (target_refused) must
# be counted where the client was closed (A) and where it happened (B).
# A dead target does not flood the log: of 30 connections refused in a
# row B logs the first 10 (log_warn_rl's burst), and the first line after
# its 5 s window says how many it left out, as does B when it stops.
# When the target comes back, the same rule works again.
. "$(dirname "$0")/lib.sh"
smc_init

pair_ports
hold_port "$PORT_TARGET"	# down, and no test beside this one may take it
conf_a "$T/a.conf"
conf_b "$T/b.conf"
start_pair

a_before=$(reason_count a target_refused)
b_before=$(reason_count b target_refused)
xfer_client -n 3 -b 64K --expect-close -T 15 ||
	fail "client not closed when the target is down"
expect_reason b target_refused "$b_before"
expect_reason a target_refused "$a_before"

refused="conn 0x[0-9a-f]+: export [^ ]+: (connect to|target) 127\.0\.0\.1:$PORT_TARGET"
t0=$(grep -Ec "$refused" "$T/b.log")
[ "$t0" -ge 1 ] || fail "B logged no refused target connect: $(tail -3 "$T/b.log")"
xfer_client -n 30 -b 1K --expect-close -T 30 ||
	fail "30 clients not closed when the target is down"
n=$(($(grep -Ec "$refused" "$T/b.log") - t0))
[ "$n" -le 10 ] || fail "B logged $n of 30 refused target connects (rate limit 10)"
sleep 5.5
xfer_client -n 1 -b 1K --expect-close -T 15 || fail "client not closed"
grep -Eq "connect to target 127\.0\.0\.1:$PORT_TARGET: [0-9]+ similar messages suppressed" "$T/b.log" ||
	fail "B did not say how many lines it left out: $(grep -E "$refused" "$T/b.log" | tail -3)"

# Lines still left out when B stops are said as it stops, not lost: 15
# refused in the window the last one opened, then B stops.
xfer_client -n 15 -b 1K --expect-close -T 30 ||
	fail "15 clients not closed when the target is down"
stop_daemon b
[ "$stop_rc" -eq 0 ] || fail "B exited with status $stop_rc"
last_refused=$(grep -En "$refused" "$T/b.log" | tail -n 1 | cut -d: -f1)
said=$(grep -En "connect to target 127\.0\.0\.1:$PORT_TARGET: [0-9]+ similar messages suppressed" "$T/b.log" |
	tail -n 1 | cut -d: -f1)
[ -n "$said" ] && [ "$said" -gt "$last_refused" ] ||
	fail "B did not say at stop how many lines it left out: $(tail -n 5 "$T/b.log")"
start_daemon b "$T/b.conf"
wait_listen "$PORT_BPEER" 10 "$b_pid"

release_port
start_server "$PORT_TARGET"
xfer_client -n 2 -b 1M || fail "transfer failed once the target was back"
