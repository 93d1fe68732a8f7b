#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# A reload revokes what a changed peer entry authenticated.  A and B share
# a key; a connection is open through them.  B's key_file then names
# another key and B reloads: the open connection ends (auth_failed on B,
# the client sees its end), and A's next connection fails authentication.
# With B's entry for A unchanged, a reload keeps the connection.
. "$(dirname "$0")/lib.sh"
smc_init
need python3

pair_ports
keyfile "$T/ab.key"
keyfile "$T/other.key"
conf_a "$T/a.conf" x "key_file = \"$T/ab.key\";"
conf_b "$T/b.conf" '"a"' "key_file = \"$T/ab.key\";"
start_server "$PORT_TARGET"
start_pair
xfer_client -n 1 -b 64K || fail "no traffic with matching keys"

# hold.py PORT: one connection through the pair, held until it ends
cat >"$T/hold.py" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
print("connected", flush=True)
s.settimeout(20)
try:
    print("ended" if s.recv(1) == b"" else "data", flush=True)
except ConnectionResetError:
    print("ended", flush=True)
except socket.timeout:
    print("still open", flush=True)
PY

# wait_active NAME N: until NAME has N connections open
wait_active()
{
	local i

	for i in $(seq 100); do
		[ "$(stat_get "$1" conns_active)" = "$2" ] && return 0
		sleep 0.1
	done
	fail "daemon $1 has $(stat_get "$1" conns_active) connections open, not $2"
}

python3 "$T/hold.py" "$PORT_RULE" >"$T/hold.log" 2>&1 &
hold=$!
track "$hold" "$T/hold.log"
wait_active b 1

# the same entry: nothing is revoked
ctl b reload >/dev/null || fail "reload of B failed"
sleep 1
[ "$(stat_get b conns_active)" = 1 ] || fail "a reload with A's entry unchanged closed its connection"
grep -q ended "$T/hold.log" && fail "a reload with A's entry unchanged ended the connection"

# another key: the connection authenticated with the old one ends
b_before=$(reason_count b auth_failed)
conf_b "$T/b.conf" '"a"' "key_file = \"$T/other.key\";"
ctl b reload >/dev/null || fail "reload of B failed"
wait "$hold"
untrack "$hold"
grep -q ended "$T/hold.log" || fail "the connection outlived its peer's key ($(cat "$T/hold.log"))"
expect_reason b auth_failed "$b_before"
wait_active b 0
grep -q 'changed on reload' "$T/b.log" || fail "B did not log why it closed the connection"

a_before=$(reason_count a auth_failed)
xfer_client -n 1 -b 64K --expect-close -T 15 ||
	fail "A's next connection was not refused under B's new key"
expect_reason a auth_failed "$a_before"
exit 0
