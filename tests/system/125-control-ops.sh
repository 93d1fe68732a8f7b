#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The operator's commands of smcproxyctl against a real daemon pair:
# show peers says whether a peer answered, its last error and when, and
# the back-off left.
. "$(dirname "$0")/lib.sh"
smc_init
need python3 "$SMCPROXYCTL"
. "$(dirname "$0")/lib-control.sh"

pair_ports
conf_a "$T/a.conf"
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

# hold N: N idle client connections to A's rule, held open until killed;
# their local ports are printed, one a line, into $T/hold.N
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
time.sleep(600)' "$PORT_RULE" "$1" >"$T/hold.$holders" 2>&1 &
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
head -n 1 "$T/peers1.txt" | grep -Eq '^PEER +ADDRESS +AUTH +MODE +CONNS +DECLINE +CODE +REASON +BACKOFF +REACHABLE +LAST-ERROR +ERROR-CODE +ERROR-AGE$' ||
	fail "show peers header: $(head -n 1 "$T/peers1.txt")"
ctl a -n -r -o peer,reachable,error-code show peers >"$T/out" || fail "show peers -o"
[ "$(cat "$T/out")" = "b no ECONNREFUSED" ] || fail "show peers -o peer,reachable,error-code: $(cat "$T/out")"

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
