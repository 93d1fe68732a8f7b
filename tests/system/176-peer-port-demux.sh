#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The peer port tells a link-group handshake from a fallback connection by
# peeking at the first four bytes (the two eyecatchers begin alike), before
# anything is read and before a connection exists:
#  1. a CLC header that arrives in pieces is still answered as CLC;
#  2. a stranger that sends part of an eyecatcher and then nothing is
#     timed out after first_byte_timeout and counted as a failure;
#  3. a client is served through the pair meanwhile (the fallback hello
#     goes through the same peek).
. "$(dirname "$0")/lib.sh"
smc_init
need python3

pair_ports
conf_a "$T/a.conf"
conf_b "$T/b.conf"
sed -i "s/^peer_listen: .*/peer_listen: { address = \"127.0.0.1:$PORT_BPEER\"; first_byte_timeout = 2; };/" \
	"$T/b.conf"
grep -q 'first_byte_timeout = 2' "$T/b.conf" || fail "could not edit b.conf"
start_server "$PORT_TARGET"
start_pair

# --- 1: a CLC PROPOSAL header in three pieces --------------------------
python3 - "$PORT_BPEER" >"$T/split.log" 2>&1 <<'PY'
import socket, struct, sys, time
hdr = bytes.fromhex("e2d4c3d901009810")
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(hdr[:2])
time.sleep(0.3)
s.sendall(hdr[2:3])
time.sleep(0.3)
s.sendall(hdr[3:] + bytes(144))
got = b""
while len(got) < 28:
    d = s.recv(28 - len(got))
    if not d:
        break
    got += d
print("eyecatcher %s" % got[:4].hex())
PY
cat "$T/split.log"
grep -q "eyecatcher e2d4c3d9" "$T/split.log" ||
	fail "B did not answer a CLC header that came in pieces with CLC"

# --- 2: part of an eyecatcher, then silence ----------------------------
# (looked at again with a growing wait: a few peeks in its 2 s, not one
# per 10 ms, some 200)
before=$(stat_get b preauth_timeouts)
peeks=$(stat_get b preauth_peeks)
python3 - "$PORT_BPEER" >"$T/part.log" 2>&1 <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(bytes.fromhex("e2d4"))
t = time.time()
try:
    d = s.recv(64)
except ConnectionResetError:
    d = b""
print("closed after %.1f s" % (time.time() - t))
PY
cat "$T/part.log"
grep -q "closed after" "$T/part.log" || fail "the silent stranger was not closed"
[ "$(stat_get b preauth_timeouts)" -gt "${before:-0}" ] ||
	fail "a stranger that sent part of an eyecatcher was not timed out as a failure"
[ "$(stat_get b preauth_conns)" = 0 ] || fail "B still holds a stranger"
peeks=$(($(stat_get b preauth_peeks) - ${peeks:-0}))
smc_log "peeks at the silent stranger: $peeks"
[ "$peeks" -le 15 ] ||
	fail "B peeked $peeks times at a stranger that sent 2 bytes in 2 s"

# --- 3: the pair still serves clients --------------------------------------
xfer_client -n 2 -b 256K || fail "a client was not served through the pair"
kill -0 "$a_pid" && kill -0 "$b_pid" || fail "a daemon died"
exit 0
