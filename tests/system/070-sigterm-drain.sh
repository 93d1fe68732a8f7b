#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# SIGTERM drains: the daemon stops accepting at once, lets a running
# transfer finish, closes what is still open when shutdown_timeout runs
# out (reason "shutdown") and exits 0.  With nothing open it exits at once.
. "$(dirname "$0")/lib.sh"
smc_init

SMC_SHUTDOWN_TIMEOUT=5
pair_ports
conf_a "$T/a.conf"
conf_b "$T/b.conf"
start_server "$PORT_TARGET"
start_pair

xfer_client -n 2 -b 1M || fail "pair does not work"

# An idle client connection, held open by this shell.
exec 5<>"/dev/tcp/127.0.0.1/$PORT_RULE" || fail "cannot connect to A"
smc_log "background: xfer client -m stream -t 3 --verify -n 2"
"$XFER" client -c "127.0.0.1:$PORT_RULE" -m stream -t 3 --verify -n 2 -T 60 \
	>"$T/stream.log" 2>&1 &
stream_pid=$!
track "$stream_pid" "$T/stream.log"
sleep 0.5

t0=$(date +%s.%N)
kill -TERM "$a_pid"
wait_not_listening "$PORT_RULE" 2 ||
	fail "A still accepts 2 s after SIGTERM"
smc_log "A stopped listening"

wait "$stream_pid"
rc=$?
untrack "$stream_pid"
cat "$T/stream.log"
[ "$rc" -eq 0 ] || fail "transfer running at SIGTERM was not drained"

stop_daemon a 15
t1=$(date +%s.%N)
took=$(echo "$t1 - $t0" | bc 2>/dev/null || python3 -c "print($t1 - $t0)")
smc_log "A exited with status $stop_rc ${took}s after SIGTERM"
[ "$stop_rc" -eq 0 ] || fail "A exited with status $stop_rc after SIGTERM"
awk -v t="$took" 'BEGIN { exit !(t >= 4 && t <= 9) }' ||
	fail "A exited after ${took}s; shutdown_timeout is 5 s and a connection was open"
grep -q 'closed: shutdown' "$T/a.log" ||
	fail "A did not log the idle connection closed with reason shutdown"
if read -r -t 2 -u 5 line 2>/dev/null; then
	fail "idle connection got data instead of a close"
fi
exec 5<&-

# Nothing open on B: it must exit at once.
t0=$(date +%s%N)
stop_daemon b 5
ms=$((($(date +%s%N) - t0) / 1000000))
smc_log "B exited with status $stop_rc after ${ms} ms"
[ "$stop_rc" -eq 0 ] || fail "B exited with status $stop_rc"
[ "$ms" -lt 2000 ] || fail "idle B took ${ms} ms to stop"
