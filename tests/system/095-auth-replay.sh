#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# A replayed handshake is refused.  A's peer address is a recording relay
# in front of B: one genuine connection goes through (authenticated,
# data verified) while every byte A sends is recorded.  Then the
# recording is sent to B again on a new connection, as someone who saw
# the wire would: B's challenge carries a fresh nonce, the recorded proof
# does not answer it, and B refuses (auth_failures), never connecting to
# its target and sending nothing of it back.
. "$(dirname "$0")/lib.sh"
smc_init
need python3

pair_ports
keyfile "$T/ab.key"
relay_port=$PORT_SPARE
b_port=$PORT_BPEER
PORT_BPEER=$relay_port conf_a "$T/a.conf" x "key_file = \"$T/ab.key\";"
conf_b "$T/b.conf" '"a"' "key_file = \"$T/ab.key\";"
start_server "$PORT_TARGET"

python3 - "$relay_port" "$b_port" "$T/rec" >"$T/relay.log" 2>&1 <<'EOF' &
# One connection relayed to B, A's bytes recorded, then exit.
import socket, sys, threading
lport, bport, rec = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", lport))
ls.listen(1)
print("listening", flush=True)
c, _ = ls.accept()
u = socket.create_connection(("127.0.0.1", bport))
def pump(src, dst, out):
    while True:
        d = src.recv(65536)
        if not d:
            break
        if out is not None:
            out.write(d)
            out.flush()
        dst.sendall(d)
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass
with open(rec, "wb") as f:
    t = threading.Thread(target=pump, args=(u, c, None))
    t.start()
    pump(c, u, f)
    t.join()
print("relayed", flush=True)
EOF
relay_pid=$!
track "$relay_pid" "$T/relay.log"
wait_listen "$relay_port" 10 "$relay_pid"
start_pair

xfer_client -n 1 -b 64K -B 64K || fail "the genuine connection through the relay failed"
wait "$relay_pid" || fail "the relay failed"
untrack "$relay_pid"
[ -s "$T/rec" ] || fail "nothing recorded"
smc_log "recorded $(wc -c <"$T/rec") bytes A sent"
conns=$(grep -c '^server conn id=' "$T/server-$PORT_TARGET.log")
before=$(stat_get b auth_failures)

# the replay: the whole recording at once, then whatever B answers
python3 - "$b_port" "$T/rec" >"$T/replay.log" 2>&1 <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(open(sys.argv[2], "rb").read())
got = b""
try:
    while True:
        d = s.recv(65536)
        if not d:
            break
        got += d
except (ConnectionResetError, socket.timeout) as e:
    print("ended by", type(e).__name__)
print("answer bytes", len(got))
EOF
cat "$T/replay.log"
for i in $(seq 50); do
	after=$(stat_get b auth_failures)
	[ "${after:-0}" -gt "${before:-0}" ] && break
	sleep 0.1
done
[ "${after:-0}" -gt "${before:-0}" ] ||
	fail "B did not count the replay as an authentication failure"
smc_log "B: auth_failures ${before} -> ${after}"
[ "$(grep -c '^server conn id=' "$T/server-$PORT_TARGET.log")" -eq "$conns" ] ||
	fail "the replayed handshake reached the target"
n=$(sed -n 's/^answer bytes //p' "$T/replay.log")
# B's challenge and its refusal are all the replay may get: no 64 KiB
[ "${n:-0}" -lt 4096 ] || fail "the replay got $n bytes back"
grep -q 'auth' "$T/b.log" || fail "B did not log the refusal"
exit 0
