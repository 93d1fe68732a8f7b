#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# A restart refuses no one: under a service manager (fdstore-manager.py
# keeps what the daemon sends with FDSTORE=1 and starts the next process
# with it, as systemd does) A stores every listening socket, each worker's
# own (rules, peer port) and the metrics one.  Clients that connect after
# A stopped wait in those sockets' queues and are served by the next A,
# which takes the sockets by name (LISTEN_FDNAMES) instead of binding.  A
# stored socket whose rule is gone is closed and removed from the store;
# a reload that adds and removes a rule, and "disable rule", update the
# store, so that a closed rule refuses instead of queueing forever; a rule
# disabled stays so across a restart.
. "$(dirname "$0")/lib.sh"
smc_init
need python3 "$SMCPROXYCTL"

SMC_WORKERS=2
pair_ports
set -- $(free_ports 3)
PORT_Y=$1 PORT_Z=$2 PORT_AMET=$3
# conf_a_rules [RULE...]: A's file with rule x, the rules named (on
# their PORT_*) and metrics_listen.
conf_a_rules()
{
	local r extra= port

	for r in "$@"; do
		eval "port=\$PORT_$(echo "$r" | tr a-z A-Z)"
		extra="$extra,
	{ name = \"$r\"; listen = \"127.0.0.1:$port\"; peer = \"b\"; export = \"x\"; }"
	done
	conf_a "$T/a.conf" x "insecure = true;" "$extra"
	sed -i "s|^\tname = \"a\";|&\n\tmetrics_listen = \"127.0.0.1:$PORT_AMET\";|" "$T/a.conf"
}
conf_a_rules y
conf_b "$T/b.conf"
start_server "$PORT_TARGET"
start_daemon b "$T/b.conf"
wait_listen "$PORT_BPEER" 10 "$b_pid"

M=$T/m
mkdir "$M"
python3 "$(dirname "$0")/fdstore-manager.py" "$M" \
	"$SMCPROXYD" -d -c "$T/a.conf" >"$T/manager.log" 2>&1 &
track "$!" "$T/manager.log"
SMC_LOGS="$SMC_LOGS $M/daemon.log $M/notify.log"
for i in $(seq 100); do
	[ -p "$M/cmd" ] && break
	sleep 0.05
done
[ -p "$M/cmd" ] || fail "the manager did not start: $(cat "$T/manager.log")"

# a_start: the manager starts A; sets a_pid once A said READY=1.
a_start()
{
	local ready i

	ready=$(grep -c 'READY=1' "$M/notify.log" 2>/dev/null)
	echo start >"$M/cmd"
	for i in $(seq 200); do
		[ "$(grep -c 'READY=1' "$M/notify.log")" -gt "$ready" ] && break
		sleep 0.05
	done
	[ "$(grep -c 'READY=1' "$M/notify.log")" -gt "$ready" ] ||
		fail "A sent no READY=1"
	a_pid=$(cat "$M/pid")
	track "$a_pid"
	smc_log "the manager started A (pid $a_pid)"
}

# a_stop: SIGTERM to A; it must exit 0 within 10 s.
a_stop()
{
	local i st

	kill -TERM "$a_pid"
	for i in $(seq 100); do
		grep -q "^$a_pid " "$M/exits" 2>/dev/null && break
		sleep 0.1
	done
	st=$(awk -v p="$a_pid" '$1 == p { print $2 }' "$M/exits" 2>/dev/null)
	untrack "$a_pid"
	[ "$st" = 0 ] || fail "A (pid $a_pid) exited with status '${st}' after SIGTERM"
}

# stored PORT: the names the store holds for PORT, sorted, on one line.
stored()
{
	awk -v p="$1" '$2 == p { print $1 }' "$M/store" | sort | tr '\n' ' '
}

# expect_stored PORT NAMES: the store holds exactly NAMES for PORT.
expect_stored()
{
	local i

	for i in $(seq 50); do
		[ "$(stored "$1")" = "$2" ] && return 0
		sleep 0.1
	done
	fail "the store holds '$(stored "$1")' for port $1, want '$2'"
}

a_start
wait_listen "$PORT_RULE" 10 "$a_pid"
expect_stored "$PORT_RULE" "rule-0-127.0.0.1_$PORT_RULE rule-1-127.0.0.1_$PORT_RULE "
expect_stored "$PORT_Y" "rule-0-127.0.0.1_$PORT_Y rule-1-127.0.0.1_$PORT_Y "
expect_stored "$PORT_APEER" "peer-0-127.0.0.1_$PORT_APEER peer-1-127.0.0.1_$PORT_APEER "
expect_stored "$PORT_AMET" "metrics-127.0.0.1_$PORT_AMET "
smc_log "A stored: $(tr '\n' ',' <"$M/store")"
xfer_client -n 4 -b 256K --verify || fail "the pair does not work"

# Stop A; its sockets stay in the store and keep listening.  Rule y goes
# from the file before the next start.
a_stop
port_listening "$PORT_RULE" || fail "rule x's socket closed with A's stop"
conf_a_rules
"$SMCPROXYD" -n -c "$T/a.conf" >"$T/a.check" 2>&1 || fail "a.conf without y: $(cat "$T/a.check")"

# Clients of the gap: they connect while no A runs, send, and wait.
smc_log "background: xfer client -n 8 -b 256K --verify while A is down"
"$XFER" client -c "127.0.0.1:$PORT_RULE" -n 8 -b 256K --verify -T 60 \
	>"$T/gap.log" 2>&1 &
gap_pid=$!
track "$gap_pid" "$T/gap.log"
sleep 1
kill -0 "$gap_pid" 2>/dev/null || fail "the clients of the gap ended while A was down: $(cat "$T/gap.log")"

a_start
wait "$gap_pid"
rc=$?
untrack "$gap_pid"
cat "$T/gap.log"
[ "$rc" -eq 0 ] || fail "clients that connected while A was down were not served"
grep -q '7 listening sockets passed by the service manager' "$M/daemon.log" ||
	fail "A does not say it was passed 7 sockets: $(grep -i passed "$M/daemon.log")"
grep -q "fd store: closing rule-0-127.0.0.1_$PORT_Y: no listener" "$M/daemon.log" ||
	fail "A did not close rule y's stored socket"
expect_stored "$PORT_Y" ""
wait_not_listening "$PORT_Y" 2 || fail "rule y's socket still listens after the restart without it"
expect_stored "$PORT_RULE" "rule-0-127.0.0.1_$PORT_RULE rule-1-127.0.0.1_$PORT_RULE "
expect_stored "$PORT_APEER" "peer-0-127.0.0.1_$PORT_APEER peer-1-127.0.0.1_$PORT_APEER "
python3 -c 'import sys, urllib.request
r = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=10)
sys.exit(0 if b"smcproxyd_" in r.read() else 1)' "$PORT_AMET" ||
	fail "the metrics socket taken over does not serve"
xfer_client -n 4 -b 256K --verify || fail "the pair does not work after the restart"

# Reload: rule z comes (stored), then goes (removed: refused).
conf_a_rules z
kill -HUP "$a_pid"
wait_listen "$PORT_Z" 10 "$a_pid"
expect_stored "$PORT_Z" "rule-0-127.0.0.1_$PORT_Z rule-1-127.0.0.1_$PORT_Z "
conf_a_rules
kill -HUP "$a_pid"
expect_stored "$PORT_Z" ""
wait_not_listening "$PORT_Z" 5 || fail "rule z still listens after the reload that removed it"

# disable rule: the socket leaves the store, clients are refused.
ctl a disable rule x >"$T/out" 2>&1 || fail "disable rule x: $(cat "$T/out")"
expect_stored "$PORT_RULE" ""
wait_not_listening "$PORT_RULE" 5 || fail "a disabled rule still listens"
# ... and stays disabled across a restart (state.json): nothing stored,
# nothing listening, until it is enabled
a_stop
a_start
grep -q 'state: rule x stays disabled' "$M/daemon.log" ||
	fail "A does not say rule x stays disabled after the restart"
expect_stored "$PORT_RULE" ""
port_listening "$PORT_RULE" && fail "the disabled rule x listens after a restart"
ctl a enable rule x >"$T/out" 2>&1 || fail "enable rule x: $(cat "$T/out")"
expect_stored "$PORT_RULE" "rule-0-127.0.0.1_$PORT_RULE rule-1-127.0.0.1_$PORT_RULE "
xfer_client -n 2 -b 64K --verify || fail "rule x does not work once enabled again"

a_stop
grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$M/daemon.log" &&
	fail "sanitizer report in A's log"
exit 0
