#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# SIGTERM drains: the daemon stops accepting at once, lets a running
# transfer finish, closes what is still open when shutdown_timeout runs
# out (reason "shutdown") and exits 0.  With nothing open it exits at once.
# The control socket stays up while it drains (show conns, stats answer;
# reload is refused), and a second SIGTERM or "smcproxyctl shutdown now"
# cuts the drain short; "smcproxyctl shutdown" starts one.
. "$(dirname "$0")/lib.sh"
smc_init
need python3 "$SMCPROXYCTL"

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

# The drain can be watched: the control socket still answers.
ctl a -j version >"$T/version.json" || fail "version during the drain"
grep -qF '"stopping":true' "$T/version.json" || fail "version during the drain: $(cat "$T/version.json")"
n=$(ctl a -j show conns | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["count"])') ||
	fail "show conns during the drain"
[ "$n" -ge 1 ] || fail "show conns during the drain lists $n connections"
ctl a stats >/dev/null || fail "stats during the drain"
ctl a reload >"$T/out" 2>&1
[ $? -eq 1 ] && grep -qF 'smcproxyd is shutting down: "reload" is refused' "$T/out" ||
	fail "reload during the drain: $(cat "$T/out")"
port_listening "$PORT_RULE" && fail "A listens again after reload during the drain"

wait "$stream_pid"
rc=$?
untrack "$stream_pid"
cat "$T/stream.log"
[ "$rc" -eq 0 ] || fail "transfer running at SIGTERM was not drained"

# wait, without a second SIGTERM (which would cut the drain short)
for i in $(seq 150); do
	kill -0 "$a_pid" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$a_pid" 2>/dev/null && fail "A still runs 15 s after SIGTERM"
wait "$a_pid"
stop_rc=$?
untrack "$a_pid"
t1=$(date +%s.%N)
took=$(echo "$t1 - $t0" | bc 2>/dev/null || python3 -c "print($t1 - $t0)")
smc_log "A exited with status $stop_rc ${took}s after SIGTERM"
[ "$stop_rc" -eq 0 ] || fail "A exited with status $stop_rc after SIGTERM"
awk -v t="$took" 'BEGIN { exit !(t >= 4 && t <= 9) }' ||
	fail "A exited after ${took}s; shutdown_timeout is 5 s and a connection was open"
grep -q ' close=shutdown$' "$T/a.log" ||
	fail "A did not log the idle connection closed with reason shutdown"
if read -r -t 2 -u 5 line 2>/dev/null; then
	fail "idle connection got data instead of a close"
fi
exec 5<&-

# A second SIGTERM, or "smcproxyctl shutdown now", cuts a drain short;
# "smcproxyctl shutdown" starts one as SIGTERM does.
# conns_a: the number of connections A lists
conns_a()
{
	ctl a -j show conns 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["count"])' 2>/dev/null
}
# idle_conn: a new idle connection through A on fd 5, once A lists it
idle_conn()
{
	local i

	exec 5<>"/dev/tcp/127.0.0.1/$PORT_RULE" || fail "cannot connect to A"
	for i in $(seq 50); do
		[ "$(conns_a)" = 1 ] && return 0
		sleep 0.1
	done
	fail "A does not list the idle connection"
}
# gone_within MS: A exits within MS ms (from now) with status 0
gone_within()
{
	local t0 ms i

	t0=$(date +%s%N)
	for i in $(seq 100); do
		kill -0 "$a_pid" 2>/dev/null || break
		sleep 0.05
	done
	ms=$((($(date +%s%N) - t0) / 1000000))
	kill -0 "$a_pid" 2>/dev/null && fail "A still runs ${ms} ms after the drain was cut short"
	wait "$a_pid"
	stop_rc=$?
	untrack "$a_pid"
	smc_log "A exited with status $stop_rc ${ms} ms after the drain was cut short"
	[ "$stop_rc" -eq 0 ] || fail "A exited with status $stop_rc"
	[ "$ms" -lt "$1" ] || fail "A took ${ms} ms to exit after the drain was cut short"
}

closed0=$(grep -c ' close=shutdown$' "$T/a.log")
start_daemon a "$T/a.conf"
wait_listen "$PORT_RULE" 10 "$a_pid"
idle_conn
kill -TERM "$a_pid"
wait_not_listening "$PORT_RULE" 2 || fail "A still accepts 2 s after SIGTERM"
sleep 0.5
[ "$(conns_a)" = 1 ] || fail "A does not list its draining connection: $(conns_a)"
kill -TERM "$a_pid"
gone_within 2000
exec 5<&-
[ "$(grep -c ' close=shutdown$' "$T/a.log")" -eq $((closed0 + 1)) ] ||
	fail "the second SIGTERM did not close the idle connection with reason shutdown"

start_daemon a "$T/a.conf"
wait_listen "$PORT_RULE" 10 "$a_pid"
idle_conn
ctl a shutdown >"$T/out" 2>&1 || fail "smcproxyctl shutdown: $(cat "$T/out")"
[ "$(cat "$T/out")" = 'stopping: open connections get 5 s to finish ("shutdown now" closes them at once)' ] ||
	fail "smcproxyctl shutdown printed: $(cat "$T/out")"
wait_not_listening "$PORT_RULE" 2 || fail "A still accepts 2 s after smcproxyctl shutdown"
sleep 0.5
kill -0 "$a_pid" || fail "A did not wait for its open connection"
[ "$(conns_a)" = 1 ] || fail "A does not list its draining connection: $(conns_a)"
ctl a shutdown >"$T/out" 2>&1 || fail "a second smcproxyctl shutdown: $(cat "$T/out")"
[ "$(cat "$T/out")" = 'already stopping ("shutdown now" closes the open connections)' ] ||
	fail "a second smcproxyctl shutdown printed: $(cat "$T/out")"
ctl a shutdown now >"$T/out" 2>&1 || fail "smcproxyctl shutdown now: $(cat "$T/out")"
[ "$(cat "$T/out")" = "stopping now: open connections closed" ] ||
	fail "smcproxyctl shutdown now printed: $(cat "$T/out")"
gone_within 2000
exec 5<&-
[ "$(grep -c ' close=shutdown$' "$T/a.log")" -eq $((closed0 + 2)) ] ||
	fail "shutdown now did not close the idle connection with reason shutdown"

# Nothing open on B: it must exit at once.
t0=$(date +%s%N)
stop_daemon b 5
ms=$((($(date +%s%N) - t0) / 1000000))
smc_log "B exited with status $stop_rc after ${ms} ms"
[ "$stop_rc" -eq 0 ] || fail "B exited with status $stop_rc"
[ "$ms" -lt 2000 ] || fail "idle B took ${ms} ms to stop"
