#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The operator's commands of smcproxyctl against a real daemon pair:
# show peers says whether a peer answered, its last error and when, and
# the back-off left; show conns filters by rule, peer, state, transport
# and age, and kill conns closes what such a filter matches; a disabled
# rule, and the rules of a drained peer, stop accepting (also across a
# reload) while their connections go on, until enabled or undrained.
#
# A has two rules, x to peer b and y to peer c; both peers are daemon B
# (which knows A as peer a), so that filters have something to tell apart.
. "$(dirname "$0")/lib.sh"
smc_init
need python3 "$SMCPROXYCTL"
. "$(dirname "$0")/lib-control.sh"

pair_ports
PORT_RULE_Y=$PORT_SPARE
cat >"$T/a.conf" <<EOF
smcproxyd: {
	name = "a";
	control_socket = "$T/a.sock";
	workers = $SMC_WORKERS;
	log_level = "${SMC_LOG_LEVEL:-info}";
	shutdown_timeout = 5;
};
peer_listen: { address = "127.0.0.1:$PORT_APEER"; };
peers = (
	{ name = "b"; address = "127.0.0.1:$PORT_BPEER"; insecure = true; },
	{ name = "c"; address = "127.0.0.1:$PORT_BPEER"; insecure = true; }
);
rules = (
	{ name = "x"; listen = "127.0.0.1:$PORT_RULE"; peer = "b"; export = "x"; },
	{ name = "y"; listen = "127.0.0.1:$PORT_RULE_Y"; peer = "c"; export = "x"; }
);
EOF
conf_b "$T/b.conf"
# A target that accepts and holds connections.
python3 -c '
import socket, sys
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", int(sys.argv[1])))
l.listen(64)
held = []
while True:
    held.append(l.accept())' "$PORT_TARGET" >"$T/target.log" 2>&1 &
track $! "$T/target.log"
wait_listen "$PORT_TARGET" 10 $!

# hold N [PORT]: N idle client connections to A's rule x (or the one on
# PORT), held open until killed; their local ports are printed, one a
# line, into $T/hold.N; sets hold_pid
holders=0
hold()
{
	holders=$((holders + 1))
	python3 -c '
import socket, struct, sys, time
ss = []
for _ in range(int(sys.argv[2])):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    ss.append(s)
    print(s.getsockname()[1], flush=True)
time.sleep(600)' "${2:-$PORT_RULE}" "$1" >"$T/hold.$holders" 2>&1 &
	hold_pid=$!
	track $hold_pid "$T/hold.$holders"
}

# wait_conns NAME N: until daemon NAME has N connections
wait_conns()
{
	local i n

	for i in $(seq 100); do
		n=$(ctl "$1" -j show conns 2>/dev/null |
			python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["count"])' 2>/dev/null)
		[ "$n" = "$2" ] && return 0
		sleep 0.1
	done
	fail "daemon $1 has ${n:-?} connections, want $2"
}

# --- show peers: reachability, last error, back-off -----------------------

# A alone: its peer b does not answer yet.
start_daemon a "$T/a.conf"
wait_listen "$PORT_RULE" 10 "$a_pid"
ctlj a "$T/peers0.json" show peers
pycheck "show peers before any try" "$T/peers0.json" <<'EOF'
p = load(A[0])["data"]["peers"][0]
eq(p["name"], "b", "name")
eq((p["reachable"], p["last_error"], p["last_error_code"], p["last_error_at"],
    p["last_error_age_s"]), (None, "", "", "", None), "nothing tried yet")
need(isinstance(p["backoff_left_ms"], int), "backoff_left_ms")
EOF
python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(10)
try:
    sys.exit(0 if s.recv(1) == b"" else 1)
except ConnectionResetError:
    pass' "$PORT_RULE" ||
	fail "the client of an unreachable peer was not closed"
ctlj a "$T/peers1.json" show peers
pycheck "show peers after a refused connect" "$T/peers1.json" "$PORT_BPEER" <<'EOF'
import calendar, time
p = load(A[0])["data"]["peers"][0]
eq(p["reachable"], False, "reachable")
eq(p["last_error"], "connect to 127.0.0.1:%s: Connection refused" % A[1], "last_error")
eq(p["last_error_code"], "ECONNREFUSED", "last_error_code")
need(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", p["last_error_at"]),
     "last_error_at %r" % p["last_error_at"])
at = calendar.timegm(time.strptime(p["last_error_at"], "%Y-%m-%dT%H:%M:%SZ"))
need(abs(time.time() - at) < 60, "last_error_at is not now: %r" % p["last_error_at"])
need(p["last_error_age_s"] in (0, 1, 2, 3), "last_error_age_s %r" % p["last_error_age_s"])
EOF
ctl a show peers >"$T/peers1.txt" || fail "show peers table"
head -n 1 "$T/peers1.txt" | grep -Eq '^PEER +ADDRESS +AUTH +MODE +CONNS +DECLINE +REACHABLE +DRAINING +LAST-ERROR +ERROR-AGE$' ||
	fail "show peers header: $(head -n 1 "$T/peers1.txt")"
ctl a -n -r -o peer,reachable,error-code show peers >"$T/out" || fail "show peers -o"
[ "$(cat "$T/out")" = "$(printf 'b no ECONNREFUSED\nc - -')" ] || fail "show peers -o peer,reachable,error-code: $(cat "$T/out")"

# B comes: the next connection gets through; the last error stays.
start_daemon b "$T/b.conf"
wait_listen "$PORT_BPEER" 10 "$b_pid"
hold 1
wait_conns a 1
ctlj a "$T/peers2.json" show peers
pycheck "show peers once b answers" "$T/peers2.json" "$T/peers1.json" <<'EOF'
p, before = load(A[0])["data"]["peers"][0], load(A[1])["data"]["peers"][0]
eq(p["reachable"], True, "reachable")
eq((p["last_error"], p["last_error_code"], p["last_error_at"]),
   (before["last_error"], before["last_error_code"], before["last_error_at"]),
   "the last error is kept")
eq(p["conns"], 1, "conns")
EOF
kill "$hold_pid"
wait "$hold_pid" 2>/dev/null
untrack "$hold_pid"

# --- show conns filters, kill conns ----------------------------------------

hold 2
x_pid=$hold_pid
hold 1 "$PORT_RULE_Y"
y_pid=$hold_pid
wait_conns a 3
sleep 1.1 # every connection is at least 1 s old

# conns ARGS...: rule/peer/mode of the connections show conns ARGS lists
conns()
{
	ctl a -j show conns "$@" >"$T/conns.json" 2>"$T/ctl.err" ||
		fail "show conns $*: $(cat "$T/ctl.err")"
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))["data"]
assert d["count"] == len(d["conns"])
print(" ".join(sorted("%s/%s/%s" % (c["rule"], c["peer"], c["mode"]) for c in d["conns"])))' "$T/conns.json"
}
for f in "|x/b/fallback x/b/fallback y/c/fallback" \
	"rule x|x/b/fallback x/b/fallback" \
	"rule y|y/c/fallback" \
	"peer c|y/c/fallback" \
	"peer b rule x|x/b/fallback x/b/fallback" \
	"peer b rule y|" \
	"rule nosuch|" \
	"state relay|x/b/fallback x/b/fallback y/c/fallback" \
	"state hello|" \
	"transport fallback|x/b/fallback x/b/fallback y/c/fallback" \
	"transport rdma|" \
	"age 1|x/b/fallback x/b/fallback y/c/fallback" \
	"age 3600|" \
	"rule x state relay transport fallback age 0|x/b/fallback x/b/fallback"; do
	got=$(conns ${f%%|*})
	[ "$got" = "${f#*|}" ] || fail "show conns ${f%%|*}: '$got', want '${f#*|}'"
done
# the table filters the same way
ctl a -n -r -o rule,peer show conns peer c >"$T/out" || fail "show conns peer c"
[ "$(cat "$T/out")" = "y c" ] || fail "show conns peer c table: $(cat "$T/out")"
ctl a show conns age 3600 >"$T/out" || fail "show conns age 3600"
[ "$(cat "$T/out")" = "no connections" ] || fail "show conns age 3600 table: $(cat "$T/out")"

# usage errors (2) and the daemon's refusals (1)
for args in "show conns bogus 1" "show conns rule" "show conns age abc" \
	"show conns age -1" "show conns rule x rule y" "kill conns" \
	"kill conns peer"; do
	ctl a $args >"$T/out" 2>"$T/err"
	rc=$?
	[ "$rc" -eq 2 ] && [ -s "$T/err" ] && [ ! -s "$T/out" ] ||
		fail "$args: status $rc, stderr '$(cat "$T/err")', stdout '$(cat "$T/out")'"
done
ctl a show conns bogus 1 2>&1 | grep -qxF 'smcproxyctl: show conns: unknown filter "bogus"; valid: rule peer state transport age dialect' ||
	fail "show conns bogus 1 said: $(ctl a show conns bogus 1 2>&1)"
ctl a show conns state bogus >"$T/out" 2>&1
[ $? -eq 1 ] && grep -qF 'unknown state "bogus"' "$T/out" ||
	fail "show conns state bogus: $(cat "$T/out")"
ctl a show conns transport udp >"$T/out" 2>&1
[ $? -eq 1 ] && grep -qF 'unknown transport "udp" (want rdma, tcp or fallback)' "$T/out" ||
	fail "show conns transport udp: $(cat "$T/out")"

# kill conns peer c: only rule y's connection closes, reason admin_kill
before=$(stat_get a close_admin_kill)
ctl a kill conns peer c >"$T/out" 2>"$T/err" || fail "kill conns peer c: $(cat "$T/err")"
[ "$(cat "$T/out")" = "1 connection killed" ] || fail "kill conns peer c said: $(cat "$T/out")"
[ "$(stat_get a close_admin_kill)" = $((before + 1)) ] ||
	fail "kill conns peer c: close_admin_kill $(stat_get a close_admin_kill), was $before"
[ "$(conns)" = "x/b/fallback x/b/fallback" ] || fail "after kill conns peer c: $(conns)"
ctlj a "$T/kill.json" kill conns peer c
[ "$(cat "$T/kill.json")" = '{"v":1,"ok":true,"data":{"count":0,"ids":[],"message":"0 connections killed"}}' ] ||
	fail "-j kill conns peer c again: $(cat "$T/kill.json")"
ctlj a "$T/kill.json" kill conns rule x age 0
pycheck "kill conns rule x age 0" "$T/kill.json" <<'EOF'
d = load(A[0])["data"]
eq(d["count"], 2, "count")
need(all(re.fullmatch(r"0x[0-9a-f]+", i) for i in d["ids"]), "ids %r" % d["ids"])
EOF
[ "$(conns)" = "" ] || fail "after kill conns rule x: $(conns)"
for p in $x_pid $y_pid; do
	kill "$p"
	wait "$p" 2>/dev/null
	untrack "$p"
done

# --- disable / enable a rule, drain / undrain a peer ----------------------

# rules: "NAME:ENABLED:ACCEPTING ..." from show rules -j
rules()
{
	ctl a -j show rules | python3 -c '
import json, sys
print(" ".join("%s:%s:%s" % (r["name"], r["enabled"], r["accepting"])
               for r in json.load(sys.stdin)["data"]["rules"]))'
}
# refused PORT: a new client to A on PORT is refused
refused()
{
	python3 -c '
import socket, sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
except ConnectionRefusedError:
    sys.exit(0)
sys.exit(1)' "$1"
}

hold 1 "$PORT_RULE_Y"
y_pid=$hold_pid
wait_conns a 1
[ "$(rules)" = "x:True:True y:True:True" ] || fail "rules at first: $(rules)"
closed0=$(stat_get a conns_closed)
ctl a disable rule y >"$T/out" 2>"$T/err" || fail "disable rule y: $(cat "$T/err")"
[ "$(cat "$T/out")" = "rule y disabled: 1 connection left open" ] ||
	fail "disable rule y said: $(cat "$T/out")"
wait_not_listening "$PORT_RULE_Y" 5 || fail "rule y still listens once disabled"
refused "$PORT_RULE_Y" || fail "a client of disabled rule y was not refused"
port_listening "$PORT_RULE" || fail "rule x stopped listening with y"
[ "$(rules)" = "x:True:True y:False:False" ] || fail "rules with y disabled: $(rules)"
ctl a -n -r -o rule,enabled,accepting show rules >"$T/out"
[ "$(cat "$T/out")" = "$(printf 'x yes yes\ny no no')" ] || fail "show rules table: $(cat "$T/out")"
# its open connection goes on
[ "$(conns rule y state relay)" = "y/c/fallback" ] || fail "rule y's connection after disable: $(conns rule y)"
[ "$(stat_get a conns_closed)" = "$closed0" ] || fail "disable rule y closed a connection"
# a reload keeps it disabled
ctl a reload || fail "reload"
sleep 0.3
port_listening "$PORT_RULE_Y" && fail "reload opened disabled rule y again"
[ "$(rules)" = "x:True:True y:False:False" ] || fail "rules after reload: $(rules)"
ctl a enable rule y >"$T/out" || fail "enable rule y"
[ "$(cat "$T/out")" = "rule y enabled: accepting on 127.0.0.1:$PORT_RULE_Y" ] ||
	fail "enable rule y said: $(cat "$T/out")"
wait_listen "$PORT_RULE_Y" 5
hold 1 "$PORT_RULE_Y"
y2_pid=$hold_pid
wait_conns a 2
[ "$(rules)" = "x:True:True y:True:True" ] || fail "rules after enable: $(rules)"
for args in "disable rule nosuch|no rule \"nosuch\"" "drain peer nosuch|no peer \"nosuch\""; do
	ctl a ${args%%|*} >"$T/out" 2>&1
	[ $? -eq 1 ] && grep -qF "${args#*|}" "$T/out" || fail "${args%%|*}: $(cat "$T/out")"
done
ctl a disable rule >"$T/out" 2>&1
[ $? -eq 2 ] && grep -qF '"disable rule" takes one argument, NAME' "$T/out" ||
	fail "disable rule without a name: $(cat "$T/out")"

# drain peer c: rule y (to c) stops accepting, x (to b) goes on
ctl a drain peer c >"$T/out" || fail "drain peer c"
[ "$(cat "$T/out")" = "peer c draining: its rules stop accepting, 2 connections left open to finish" ] ||
	fail "drain peer c said: $(cat "$T/out")"
wait_not_listening "$PORT_RULE_Y" 5 || fail "rule y still listens with peer c draining"
port_listening "$PORT_RULE" || fail "rule x stopped listening with peer c draining"
[ "$(rules)" = "x:True:True y:True:False" ] || fail "rules with c draining: $(rules)"
ctl a -n -r -o peer,draining show peers >"$T/out"
[ "$(cat "$T/out")" = "$(printf 'b no\nc yes')" ] || fail "show peers draining: $(cat "$T/out")"
[ "$(conns peer c)" = "y/c/fallback y/c/fallback" ] || fail "peer c's connections while draining: $(conns peer c)"
ctl a reload || fail "reload while draining"
sleep 0.3
port_listening "$PORT_RULE_Y" && fail "reload opened rule y of draining peer c"
ctl a disable rule y >/dev/null || fail "disable rule y while c drains"
ctl a enable rule y >"$T/out" || fail "enable rule y while c drains"
[ "$(cat "$T/out")" = "rule y enabled: not accepting while peer c is draining" ] ||
	fail "enable rule y while c drains said: $(cat "$T/out")"
ctl a undrain peer c >"$T/out" || fail "undrain peer c"
[ "$(cat "$T/out")" = "peer c no longer draining: its enabled rules accept again" ] ||
	fail "undrain peer c said: $(cat "$T/out")"
wait_listen "$PORT_RULE_Y" 5
[ "$(rules)" = "x:True:True y:True:True" ] || fail "rules after undrain: $(rules)"
ctl a drain peer b || fail "drain peer b"
wait_not_listening "$PORT_RULE" 5 || fail "rule x still listens with peer b draining"
ctl a enable peer b || fail "enable peer b"
wait_listen "$PORT_RULE" 5
[ "$(stat_get a conns_closed)" = "$closed0" ] || fail "disable, drain or reload closed a connection"
for p in $y_pid $y2_pid; do
	kill "$p"
	wait "$p" 2>/dev/null
	untrack "$p"
done
