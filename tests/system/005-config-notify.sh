#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Starting up: "smcproxyd -n" accepts the pair's configs and rejects a
# broken one with file:line; the daemon tells systemd READY=1 through
# NOTIFY_SOCKET once it listens, and a single connection works end to end;
# a second daemon with the same listen addresses refuses to start.  Under
# a watchdog (WATCHDOG_USEC, as systemd sets for WatchdogSec=) it sends
# WATCHDOG=1 every third of the period while its workers answer; its stop
# says STOPPING=1 with EXTEND_TIMEOUT_USEC= covering shutdown_timeout.
. "$(dirname "$0")/lib.sh"
smc_init
need python3

pair_ports
conf_a "$T/a.conf"
conf_b "$T/b.conf"
"$SMCPROXYD" -n -c "$T/a.conf" >"$T/check" 2>&1 || fail "-n rejects a.conf: $(cat "$T/check")"
"$SMCPROXYD" -n -c "$T/b.conf" >"$T/check" 2>&1 || fail "-n rejects b.conf: $(cat "$T/check")"
sed 's/workers = [0-9]*;/workers = "two";/' "$T/a.conf" >"$T/broken.conf"
"$SMCPROXYD" -n -c "$T/broken.conf" >"$T/check" 2>&1 && fail "-n accepts workers = \"two\""
grep -q 'broken.conf:[0-9]' "$T/check" || fail "no file:line in: $(cat "$T/check")"

notify_listen "$T/notify.sock" "$T/notify.log"
start_server "$PORT_TARGET"
start_daemon b "$T/b.conf"
NOTIFY_SOCKET=$T/notify.sock WATCHDOG_USEC=600000 start_daemon a "$T/a.conf"
for i in $(seq 100); do
	grep -q 'READY=1' "$T/notify.log" && break
	sleep 0.1
done
grep -q 'READY=1' "$T/notify.log" || fail "A sent no READY=1 to NOTIFY_SOCKET"
port_listening "$PORT_RULE" || fail "A said READY=1 before listening"
smc_log "A sent: $(cat "$T/notify.log")"
wait_listen "$PORT_BPEER" 10 "$b_pid"

xfer_client -n 1 -b 1M || fail "one connection through the pair failed"

# A second daemon with the same addresses must not start: its listeners
# would share the ports with the running ones (SO_REUSEPORT) and take
# every other connection.  It says which address and why; A still serves.
for d in a b; do
	sed "s|control_socket = \"[^\"]*\"|control_socket = \"$T/${d}2.sock\"|" \
		"$T/$d.conf" >"$T/${d}2.conf"
	timeout 20 "$SMCPROXYD" -d -c "$T/${d}2.conf" >"$T/${d}2.log" 2>&1 &&
		fail "a second daemon $d with the same addresses started"
	grep -q 'cannot listen on .*another process' "$T/${d}2.log" ||
		fail "second daemon $d: no address in use named: $(cat "$T/${d}2.log")"
done
for d in a b; do
	grep -Eq 'conf(:[0-9]+)?: (peer_listen\.address|rules\[[0-9]+\]\.listen)' "$T/${d}2.log" ||
		fail "second daemon $d: no config key named: $(cat "$T/${d}2.log")"
done
xfer_client -n 4 -b 1M || fail "the pair no longer serves every connection"

# the watchdog: one WATCHDOG=1 per 200 ms, so a few seconds hold many
n0=$(grep -c 'WATCHDOG=1' "$T/notify.log")
sleep 2
n1=$(grep -c 'WATCHDOG=1' "$T/notify.log")
[ $((n1 - n0)) -ge 5 ] ||
	fail "$((n1 - n0)) WATCHDOG=1 in 2 s with WATCHDOG_USEC=600000, want >= 5"
grep -q 'watchdog: WATCHDOG=1 every 200 ms while the workers answer' "$T/a.log" ||
	fail "a did not log its watchdog period: $(grep watchdog "$T/a.log")"
stop_daemon a
ext=$(((${SMC_SHUTDOWN_TIMEOUT:-5} + 30) * 1000000))
grep -q "STOPPING=1|EXTEND_TIMEOUT_USEC=$ext|" "$T/notify.log" ||
	fail "no STOPPING=1 with EXTEND_TIMEOUT_USEC=$ext (shutdown_timeout + 30 s): $(grep STOPPING "$T/notify.log")"
