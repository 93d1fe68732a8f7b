#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# "kill conn ID" closes exactly that connection, with reason admin_kill:
# the daemon that killed it counts close_admin_kill, the client sees a
# reset, the other daemon counts the reset of its peer connection
# (close_peer_rst), the target sees a reset, and the other connections
# keep working.  Killing on the rule side (id in hex) and on the export
# side (id in decimal).  Unknown and invalid ids fail with status 1, a
# missing id is a usage error (2).
. "$(dirname "$0")/lib.sh"
smc_init
need python3 "$SMCPROXYCTL"

. "$(dirname "$0")/lib-control.sh"

# conn_id VAR NAME EXPR: set VAR to the id of the one connection of daemon
# NAME for which the Python expression EXPR (on c) is true.
conn_id()
{
	local id

	ctlj "$2" "$T/$2.conns.json" show conns
	id=$(python3 -c '
import json, sys
c = [c for c in json.load(open(sys.argv[1]))["data"]["conns"] if eval(sys.argv[2])]
if len(c) != 1:
    sys.exit("%d connections match %s" % (len(c), sys.argv[2]))
print(c[0]["id"])' "$T/$2.conns.json" "$3" 2>"$T/conn_id.err") ||
		fail "daemon $2: $(cat "$T/conn_id.err")"
	eval "$1=\$id"
}

# expect_conns NAME ID...: show conns on NAME lists exactly these ids.
expect_conns()
{
	local d=$1 got want

	shift
	ctlj "$d" "$T/$d.conns.json" show conns
	got=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["data"]
assert r["count"] == len(r["conns"])
print(" ".join(sorted(c["id"] for c in r["conns"])))' "$T/$d.conns.json") ||
		fail "show conns on $d: bad reply"
	want=$(printf '%s\n' "$@" | sort | xargs)
	[ "$got" = "$want" ] || fail "daemon $d has connections '$got', want '$want'"
}

pair_ports
conf_a "$T/a.conf"
conf_b "$T/b.conf"
start_helpers
start_pair

cli open 3
set -- $REPLY
[ "${1:-}" = opened ] && [ $# -eq 4 ] || fail "client helper: $REPLY"
c0=${2#0=} c1=${3#1=} c2=${4#2=}
xfer_bytes 0 100
xfer_bytes 1 200
xfer_bytes 2 300
conn_id a0 a "c['downstream'] == '$c0'"
conn_id a1 a "c['downstream'] == '$c1'"
conn_id a2 a "c['downstream'] == '$c2'"
conn_id b0 b "c['bytes_in'] == 100"
conn_id b1 b "c['bytes_in'] == 200"
conn_id b2 b "c['bytes_in'] == 300"
smc_log "a: $c0=$a0 $c1=$a1 $c2=$a2; b: $b0 $b1 $b2"

# Kill the middle one on a (rule side), id as show conns prints it.
ctl a kill conn "$a1" >"$T/kill.out" 2>&1 || fail "kill conn $a1: $(cat "$T/kill.out")"
[ "$(cat "$T/kill.out")" = "connection $a1 killed" ] ||
	fail "kill conn printed: $(cat "$T/kill.out")"
cli expect_reset 1 5
[ "$REPLY" = "reset 1" ] || fail "the client of the killed connection saw: $REPLY"
wait_stat a conns_active 2
wait_stat b conns_active 2
expect_conns a "$a0" "$a2"
expect_conns b "$b0" "$b2"
grep -q "conn $a1 killed by uid 0 pid [0-9]" "$T/a.log" ||
	fail "a does not log who killed $a1"
[ "$(grep -c "conn $a1 .* close=admin_kill\$" "$T/a.log")" -eq 1 ] ||
	fail "a does not log the close of $a1 with reason admin_kill"
# one line for the connection above debug (the daemons run with -d): its
# close is not logged twice
[ "$(grep "conn $a1\b" "$T/a.log" | grep -v '^<7>' | grep -vc "killed by uid")" -eq 1 ] ||
	fail "a logs $a1 more than once: $(grep "conn $a1\b" "$T/a.log")"
for i in $(seq 50); do
	grep -q "in=200 out=600 end=" "$T/server.log" && break
	sleep 0.1
done
grep -qx "close 127\.0\.0\.1:[0-9]* in=200 out=600 end=rst" "$T/server.log" ||
	fail "the target did not see a reset: $(grep 'in=200 ' "$T/server.log")"
ctlj a "$T/a.stats.json" stats
ctlj b "$T/b.stats.json" stats
pycheck "counters after the kill on a" "$T/a.stats.json" "$T/b.stats.json" <<'EOF'
a, b = (load(p)["data"]["stats"] for p in A)
closes = lambda s: {k: v for k, v in s.items() if k.startswith("close_") and v}
eq(closes(a), {"close_admin_kill": 1}, "closes on a")
eq(closes(b), {"close_peer_rst": 1}, "closes on b")
EOF
# The others still carry data.
xfer_bytes 0 10
xfer_bytes 2 50

# Kill the last one on b (export side), id in decimal.
dec=$(printf '%d' "$b2")
ctl b -j kill conn "$dec" >"$T/kill.out" 2>&1 || fail "kill conn $dec: $(cat "$T/kill.out")"
[ "$(cat "$T/kill.out")" = "{\"v\":1,\"ok\":true,\"data\":{\"id\":\"$b2\",\"message\":\"connection $b2 killed\"}}" ] ||
	fail "kill conn $dec -j replied: $(cat "$T/kill.out")"
cli expect_reset 2 5
[ "$REPLY" = "reset 2" ] || fail "the client of the connection killed on b saw: $REPLY"
wait_stat a conns_active 1
wait_stat b conns_active 1
expect_conns a "$a0"
expect_conns b "$b0"
for i in $(seq 50); do
	grep -q "in=350 out=1050 end=" "$T/server.log" && break
	sleep 0.1
done
grep -qx "close 127\.0\.0\.1:[0-9]* in=350 out=1050 end=rst" "$T/server.log" ||
	fail "the target did not see a reset: $(grep 'in=350 ' "$T/server.log")"

# Ids that are not there or not ids.
ctl a kill conn "$a1" >"$T/kill.out" 2>"$T/kill.err"
rc=$?
[ "$rc" -eq 1 ] || fail "kill of a closed connection: status $rc, want 1"
[ ! -s "$T/kill.out" ] && [ "$(cat "$T/kill.err")" = "smcproxyctl: kill conn: no connection $a1" ] ||
	fail "kill of a closed connection said: $(cat "$T/kill.out" "$T/kill.err")"
ctl a -j kill conn 0xffffffffffffffff >"$T/kill.out" 2>"$T/kill.err"
rc=$?
[ "$rc" -eq 1 ] || fail "kill -j of an unknown id: status $rc, want 1"
[ "$(cat "$T/kill.out")" = '{"v":1,"ok":false,"error":"no connection 0xffffffffffffffff"}' ] ||
	fail "kill -j of an unknown id replied: $(cat "$T/kill.out" "$T/kill.err")"
for bad in zz -1 0x 0x10000000000000000 "1 " ""; do
	ctl a -- kill conn "$bad" >"$T/kill.out" 2>"$T/kill.err"
	rc=$?
	[ "$rc" -eq 1 ] || fail "kill conn '$bad': status $rc, want 1"
	grep -q '^smcproxyctl: kill conn: invalid connection id' "$T/kill.err" ||
		fail "kill conn '$bad' said: $(cat "$T/kill.out" "$T/kill.err")"
done
for args in "kill conn" "kill" "kill conn 1 2" "kill foo 1"; do
	ctl a $args >"$T/kill.out" 2>"$T/kill.err"
	rc=$?
	[ "$rc" -eq 2 ] || fail "'$args': status $rc, want 2"
	[ -s "$T/kill.err" ] || fail "'$args': no message"
done

# Nothing else was closed: connection 0 still works and ends in order.
xfer_bytes 0 1
cli close 0
[ "$REPLY" = "close 0 eof extra=0" ] || fail "closing connection 0: $REPLY"
wait_stat a conns_active 0
wait_stat b conns_active 0
grep -qx "close 127\.0\.0\.1:[0-9]* in=111 out=333 end=eof" "$T/server.log" ||
	fail "the server did not see connection 0 end in order"
ctlj a "$T/a.stats.json" stats
ctlj b "$T/b.stats.json" stats
pycheck "counters at the end" "$T/a.stats.json" "$T/b.stats.json" <<'EOF'
a, b = (load(p)["data"]["stats"] for p in A)
closes = lambda s: {k: v for k, v in s.items() if k.startswith("close_") and v}
eq(closes(a), {"close_admin_kill": 1, "close_peer_rst": 1, "close_client_fin": 1}, "closes on a")
eq(closes(b), {"close_admin_kill": 1, "close_peer_rst": 1, "close_client_fin": 1}, "closes on b")
eq((a["conns_accepted"], b["conns_from_peers"]), (3, 3), "connections")
EOF
printf 'quit\n' >&"${CLI[1]}"
# shellcheck disable=SC2154 # cli_pid: set by start_helpers (lib-control.sh)
wait "$cli_pid" || fail "client helper exited with status $?"
untrack "$cli_pid"
