#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The operator's run-time controls (issue 47): "smcproxyctl monitor"
# prints one line per event as it happens (-j: the daemon's JSON) -- a
# peer coming up, rules disabled and enabled, a peer drained, reloads
# done and refused, a log level change, the shutdown, after which it
# exits 0 -- and a monitor that sends a request is told it takes none and
# closed; "log-level" says the level and sets it, which changes what the
# daemon logs (not what monitors see) until a reload sets the
# configuration's (here -d's) again; and the rules disabled and peers
# drained stay so across a restart (state.json beside the control
# socket), while names the configuration no longer has are dropped, a
# broken file is said and ignored, and state_file = "none" keeps nothing.
. "$(dirname "$0")/lib.sh"
smc_init
need python3 "$SMCPROXYCTL"
. "$(dirname "$0")/lib-control.sh"

pair_ports
conf_a "$T/a.conf"
conf_b "$T/b.conf"
start_server "$PORT_TARGET"
start_pair

# monitor_start NAME: "smcproxyctl monitor" (text) and -j, into
# $T/NAME.txt and $T/NAME.json, once both are subscribed; sets
# mon_pid and monj_pid
monitor_start()
{
	local i

	: >"$T/$1.txt"
	: >"$T/$1.json"
	ctl a monitor >"$T/$1.txt" 2>"$T/$1.err" &
	mon_pid=$!
	track $mon_pid "$T/$1.err"
	ctl a -j monitor >"$T/$1.json" 2>"$T/$1.jerr" &
	monj_pid=$!
	track $monj_pid "$T/$1.jerr"
	# the -j one prints the answer first; the text one is subscribed
	# once the daemon counts two monitors' connections gone from the
	# control slots: wait for a debug line per monitor
	for i in $(seq 100); do
		[ "$(grep -c 'monitor: client uid .* monitors' "$T/a.log")" -ge "$2" ] &&
			[ -s "$T/$1.json" ] && return 0
		sleep 0.1
	done
	fail "the monitors did not subscribe: $(cat "$T/$1.err" "$T/$1.jerr")"
}

# wait_event FILE EVENT [KEY VALUE]: until the -j monitor's FILE has
# that event (with that member)
wait_event()
{
	local i

	for i in $(seq 100); do
		python3 - "$@" <<'EOF' && return 0
import json, sys
f, ev = sys.argv[1], sys.argv[2]
for line in open(f):
    try:
        o = json.loads(line)
    except ValueError:
        continue
    if o.get("event") == ev and (len(sys.argv) < 5 or
                                 str(o.get(sys.argv[3])) == sys.argv[4]):
        sys.exit(0)
sys.exit(1)
EOF
		sleep 0.1
	done
	fail "no $2 ${3:+($3 $4) }event in $1: $(cat "$1")"
}

monitor_start mon 2
pycheck "the monitor's answer" "$T/mon.json" <<'EOF'
first = json.loads(open(A[0]).readline())
eq(first["ok"], True, "ok")
need("monitoring" in first["data"]["message"], "message: %r" % first)
EOF

# --- events ---------------------------------------------------------------
xfer_client -n 2 -b 64K --verify || fail "the pair does not work"
wait_event "$T/mon.json" peer_up peer b
ctl a disable rule x >"$T/out" 2>&1 || fail "disable rule x: $(cat "$T/out")"
wait_event "$T/mon.json" rule_disabled rule x
ctl a enable rule x >"$T/out" 2>&1 || fail "enable rule x: $(cat "$T/out")"
wait_event "$T/mon.json" rule_enabled rule x
ctl a drain peer b >"$T/out" 2>&1 || fail "drain peer b: $(cat "$T/out")"
wait_event "$T/mon.json" peer_drained peer b
ctl a undrain peer b >"$T/out" 2>&1 || fail "undrain peer b: $(cat "$T/out")"
wait_event "$T/mon.json" peer_undrained peer b
ctl a reload >"$T/out" 2>&1 || fail "reload: $(cat "$T/out")"
wait_event "$T/mon.json" reload
cp "$T/a.conf" "$T/a.good"
echo 'bogus = ;' >>"$T/a.conf"
ctl a reload >"$T/out" 2>&1 && fail "a broken file reloaded"
wait_event "$T/mon.json" reload_failed
cp "$T/a.good" "$T/a.conf"
# the text monitor has the same, one readable line each
grep -qE '^20[0-9-]+T[0-9:.]+Z rule_disabled +rule x disabled by uid [0-9]+ pid [0-9]+$' "$T/mon.txt" ||
	fail "the text monitor has no rule_disabled line: $(cat "$T/mon.txt")"
grep -qE ' reload_failed +reload: .*a.conf has errors; still serving' "$T/mon.txt" ||
	fail "the text monitor has no reload_failed line: $(cat "$T/mon.txt")"

# A monitor takes no requests: an error, then the connection ends.
python3 - "$T/a.sock" >"$T/garbage.out" 2>&1 <<'EOF' ||
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1])
s.sendall(b'{"v":1,"cmd":"monitor"}\n')
f = s.makefile("rb")
print(f.readline().decode().strip())
s.sendall(b'{"v":1,"cmd":"stats"}\n')
print(f.readline().decode().strip())
print("eof" if f.readline() == b"" else "no eof")
EOF
	fail "monitor with a request: $(cat "$T/garbage.out")"
pycheck "a monitor that sends a request" "$T/garbage.out" <<'EOF'
lines = open(A[0]).read().splitlines()
eq(json.loads(lines[0])["ok"], True, "the monitor's answer")
eq(json.loads(lines[1]), {"v": 1, "ok": False, "error": "this connection is a monitor: it takes no requests (close it to stop monitoring)"}, "the answer to a request")
eq(lines[2], "eof", "then")
EOF

# --- log-level ------------------------------------------------------------
ctl a log-level >"$T/out" 2>&1 || fail "log-level: $(cat "$T/out")"
[ "$(cat "$T/out")" = "log level: debug" ] || fail "log-level under -d said: $(cat "$T/out")"
ctl a log-level warning >"$T/out" 2>&1 || fail "log-level warning: $(cat "$T/out")"
[ "$(cat "$T/out")" = "log level: warning (was debug)" ] ||
	fail "log-level warning said: $(cat "$T/out")"
wait_event "$T/mon.json" log_level
grep -q 'log level set to warning (was debug) by uid' "$T/a.log" ||
	fail "the change is not logged"
ctlj a "$T/ll.json" log-level
pycheck "log-level -j" "$T/ll.json" <<'EOF'
d = load(A[0])["data"]
eq(d["level"], "warning", "level")
EOF
# info lines are no longer written; monitors still see the event
n=$(grep -c 'rule x disabled by' "$T/a.log")
ctl a disable rule x >"$T/out" 2>&1 || fail "disable rule x: $(cat "$T/out")"
ctl a enable rule x >"$T/out" 2>&1 || fail "enable rule x: $(cat "$T/out")"
[ "$(grep -c 'rule x disabled by' "$T/a.log")" = "$n" ] ||
	fail "an info line was logged at level warning"
[ "$(grep -c '"event":"rule_disabled"' "$T/mon.json")" -ge 2 ] ||
	fail "the monitor missed a rule_disabled at level warning"
ctl a log-level info >"$T/out" 2>&1 || fail "log-level info: $(cat "$T/out")"
ctl a disable rule x >"$T/out" 2>&1 || fail "disable rule x: $(cat "$T/out")"
ctl a enable rule x >"$T/out" 2>&1 || fail "enable rule x: $(cat "$T/out")"
[ "$(grep -c 'rule x disabled by' "$T/a.log")" -gt "$n" ] ||
	fail "no info line at level info"
# bad input: unknown level, extra words
ctl a log-level verbose >"$T/out" 2>&1
rc=$?
[ "$rc" -eq 1 ] || fail "log-level verbose: status $rc, want 1"
grep -qF 'log-level: unknown log level "verbose" (want error, warning, info or debug)' "$T/out" ||
	fail "log-level verbose said: $(cat "$T/out")"
ctl a log-level info debug >"$T/out" 2>&1
rc=$?
[ "$rc" -eq 2 ] || fail "log-level info debug: status $rc, want 2"
grep -qF '"log-level" takes at most one argument, LEVEL' "$T/out" ||
	fail "log-level info debug said: $(cat "$T/out")"
# a reload sets the configuration's level again (here -d's: debug)
ctl a reload >"$T/out" 2>&1 || fail "reload: $(cat "$T/out")"
ctl a log-level >"$T/out" 2>&1
[ "$(cat "$T/out")" = "log level: debug" ] || fail "after a reload: $(cat "$T/out")"
grep -q 'log level: debug (was info)' "$T/a.log" || fail "the reload did not say the level"

# --- restarts keep what the operator disabled and drained -----------------
ctl a disable rule x >"$T/out" 2>&1 || fail "disable rule x: $(cat "$T/out")"
ctl a drain peer b >"$T/out" 2>&1 || fail "drain peer b: $(cat "$T/out")"
pycheck "state.json" "$T/state.json" <<'EOF'
eq(load(A[0]), {"v": 1, "disabled_rules": ["x"], "drained_peers": ["b"]}, "state")
EOF
stop_daemon a
[ "$stop_rc" = 0 ] || fail "a exited $stop_rc"
# the monitors saw the shutdown and ended with it, status 0
wait_event "$T/mon.json" shutdown
for p in $mon_pid $monj_pid; do
	wait "$p"
	rc=$?
	untrack "$p"
	[ "$rc" -eq 0 ] || fail "smcproxyctl monitor exited $rc after the shutdown"
done
grep -qE ' shutdown +stopping; open connections get 5 s to finish$' "$T/mon.txt" ||
	fail "the text monitor has no shutdown line: $(cat "$T/mon.txt")"

start_daemon a "$T/a.conf"
for i in $(seq 50); do
	grep -q 'ready:' "$T/a.log" && ctl a version >/dev/null 2>&1 && break
	sleep 0.1
done
grep -q "state: rule x stays disabled (from $T/state.json" "$T/a.log" ||
	fail "a does not say rule x stays disabled"
grep -q "state: peer b stays drained" "$T/a.log" ||
	fail "a does not say peer b stays drained"
ctlj a "$T/rules.json" show rules
ctlj a "$T/peers.json" show peers
pycheck "after the restart" "$T/rules.json" "$T/peers.json" <<'EOF'
x = load(A[0])["data"]["rules"][0]
eq((x["name"], x["enabled"], x["accepting"]), ("x", False, False), "rule x")
b = load(A[1])["data"]["peers"][0]
eq((b["name"], b["draining"]), ("b", True), "peer b")
EOF
port_listening "$PORT_RULE" && fail "rule x listens after the restart"
ctl a enable rule x >"$T/out" 2>&1 || fail "enable rule x: $(cat "$T/out")"
ctl a undrain peer b >"$T/out" 2>&1 || fail "undrain peer b: $(cat "$T/out")"
wait_listen "$PORT_RULE" 10 "$a_pid"
xfer_client -n 2 -b 64K --verify || fail "rule x does not work once enabled"

# A name the next configuration does not have is dropped, and said.
ctl a disable rule x >"$T/out" 2>&1 || fail "disable rule x: $(cat "$T/out")"
stop_daemon a
sed -i 's/name = "x"; listen/name = "w"; listen/' "$T/a.conf"
start_daemon a "$T/a.conf"
wait_listen "$PORT_RULE" 10 "$a_pid"
grep -q 'state: rule x was disabled, but the configuration has no such rule: dropped' "$T/a.log" ||
	fail "a does not say it dropped rule x"
pycheck "state.json without x" "$T/state.json" <<'EOF'
eq(load(A[0]), {"v": 1, "disabled_rules": [], "drained_peers": []}, "state")
EOF
# a file that does not parse is said and ignored
stop_daemon a
echo '{"v":1,' >"$T/state.json"
start_daemon a "$T/a.conf"
wait_listen "$PORT_RULE" 10 "$a_pid"
grep -q "state: $T/state.json:.*starting with every rule enabled" "$T/a.log" ||
	fail "a does not say state.json is broken"
# state_file = "none": nothing kept
stop_daemon a
rm -f "$T/state.json"
sed -i 's|^\tname = "a";|&\n\tstate_file = "none";|' "$T/a.conf"
start_daemon a "$T/a.conf"
wait_listen "$PORT_RULE" 10 "$a_pid"
ctl a disable rule w >"$T/out" 2>&1 || fail "disable rule w: $(cat "$T/out")"
[ -e "$T/state.json" ] && fail "state.json written with state_file = \"none\""
stop_daemon a
start_daemon a "$T/a.conf"
wait_listen "$PORT_RULE" 10 "$a_pid"
exit 0
