#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Strangers are cheap.  From 127.0.0.2, while a client on 127.0.0.1 is
# served through the pair:
#  1. 40 idle TCP connections to A's peer port (A has max_conns = 20,
#     preauth_per_source = 16): they never count towards max_conns (the
#     client is not refused), 16 of them are held, those time out after
#     first_byte_timeout (4 s here), count as failures, and the host's
#     next connection is refused at once (rate limit);
#  2. 70 connections that send only a CLC header to B's peer port (B
#     holds them all, preauth_per_source = 100): a real CLC handshake
#     from 127.0.0.1 is still answered (not DECLINE MEM, 0x01010000: its
#     slots full), and a fallback hello through B still works.
. "$(dirname "$0")/lib.sh"
smc_init
need python3

# one worker each: the budgets are per worker
SMC_WORKERS=1
pair_ports
conf_a "$T/a.conf"
sed -i 's/^\tshutdown_timeout = .*/&\n\tmax_conns = 20;/' "$T/a.conf"
sed -i "s/^peer_listen: .*/peer_listen: { address = \"127.0.0.1:$PORT_APEER\"; preauth_per_source = 16; first_byte_timeout = 4; };/" \
	"$T/a.conf"
conf_b "$T/b.conf"
sed -i "s/^peer_listen: .*/peer_listen: { address = \"127.0.0.1:$PORT_BPEER\"; preauth_per_source = 100; handshake_timeout = 30; first_byte_timeout = 30; };/" \
	"$T/b.conf"
grep -q 'max_conns = 20' "$T/a.conf" && grep -q 'preauth_per_source = 16' "$T/a.conf" ||
	fail "could not edit a.conf"
start_server "$PORT_TARGET"
start_pair

# flood.py PORT N SECONDS [HEADER]: N connections from 127.0.0.2 that
# send HEADER (hex, "" for nothing) and then nothing; held SECONDS.
# Then one more from there: "probe refused" when it is reset (or closed)
# within a second, "probe held" when not.
cat >"$T/flood.py" <<'PY'
import socket, sys, time
port, n, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
hdr = bytes.fromhex(sys.argv[4]) if len(sys.argv) > 4 else b""
def conn():
    s = socket.socket()
    s.bind(("127.0.0.2", 0))
    s.connect(("127.0.0.1", port))
    return s
socks = []
for _ in range(n):
    s = conn()
    if hdr:
        s.sendall(hdr)
    socks.append(s)
print("flooding", n, flush=True)
time.sleep(secs)
p = conn()
p.settimeout(1)
try:
    print("probe refused" if p.recv(1) == b"" else "probe data", flush=True)
except ConnectionResetError:
    print("probe refused", flush=True)
except socket.timeout:
    print("probe held", flush=True)
PY
# a CLC PROPOSAL header: eyecatcher, type 1, length 152, version 1
clc_hdr=e2d4c3d901009810

# --- 1: idle connections to A's peer port --------------------------------
python3 "$T/flood.py" "$PORT_APEER" 40 5.5 >"$T/flood-a.log" 2>&1 &
flood=$!
track "$flood" "$T/flood-a.log"
for _ in $(seq 50); do
	grep -q flooding "$T/flood-a.log" && break
	sleep 0.1
done
held=$(stat_get a preauth_conns)
smc_log "A holds ${held:-?} strangers"
[ "${held:-0}" -le 16 ] || fail "A holds $held idle strangers from one host (preauth_per_source 16)"
[ "$(stat_get a preauth_refused)" -ge 24 ] ||
	fail "A did not refuse the strangers beyond preauth_per_source"
xfer_client -n 4 -b 256K || fail "a client was not served while strangers idle on A's peer port"
[ "$(stat_get a conns_refused_limit)" = 0 ] ||
	fail "strangers on the peer port used up max_conns"
# first_byte_timeout: each counts as a failure of 127.0.0.2, whose next
# connection (the probe, 1.5 s later) is then refused at once
wait "$flood"
untrack "$flood"
cat "$T/flood-a.log"
[ "$(stat_get a preauth_timeouts)" -ge 16 ] ||
	fail "idle strangers were not timed out (preauth_timeouts $(stat_get a preauth_timeouts))"
grep -q "probe refused" "$T/flood-a.log" ||
	fail "the host whose strangers timed out is not rate-limited"
[ "$(stat_get a auth_rate_limited)" -ge 1 ] || fail "auth_rate_limited not counted"
for _ in $(seq 50); do
	[ "$(stat_get a preauth_conns)" = 0 ] && break
	sleep 0.1
done
[ "$(stat_get a preauth_conns)" = 0 ] || fail "strangers still held after their deadline"

# --- 2: CLC headers to B's peer port -------------------------------------
python3 "$T/flood.py" "$PORT_BPEER" 70 20 "$clc_hdr" >"$T/flood-b.log" 2>&1 &
flood=$!
track "$flood" "$T/flood-b.log"
for _ in $(seq 100); do
	grep -q flooding "$T/flood-b.log" &&
		[ "$(stat_get b preauth_conns)" -ge 70 ] && break
	sleep 0.1
done
[ "$(stat_get b preauth_conns)" -ge 70 ] ||
	fail "B does not hold the 70 CLC strangers ($(stat_get b preauth_conns))"
# a handshake from elsewhere: whatever B answers, not "too busy"
python3 - "$PORT_BPEER" "$clc_hdr" >"$T/probe.log" 2>&1 <<'PY'
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(bytes.fromhex(sys.argv[2]) + bytes(144))
got = b""
while len(got) < 28:
    d = s.recv(28 - len(got))
    if not d:
        break
    got += d
print("diagnosis 0x%08x" % (struct.unpack(">I", got[16:20])[0] if len(got) >= 20 else 0))
PY
cat "$T/probe.log"
diag=$(sed -n 's/^diagnosis //p' "$T/probe.log")
[ -n "$diag" ] && [ "$diag" != 0x00000000 ] || fail "B did not answer the CLC handshake"
[ "$diag" != 0x01010000 ] || fail "B declined a handshake as too busy (MEM) because of idle strangers"
xfer_client -n 2 -b 256K || fail "a client was not served while CLC strangers wait on B"
kill -0 "$a_pid" && kill -0 "$b_pid" || fail "a daemon died"
exit 0
