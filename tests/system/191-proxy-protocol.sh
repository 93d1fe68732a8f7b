#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# PROXY protocol v2 towards the target (exports[].proxy_protocol), over
# the fallback: a client from 127.0.0.5 through the pair reaches a target
# that parses the binary header first and finds the client's address and
# port as source and A's rule listener as destination, then the client's
# bytes unchanged.  B's connection log names that client.  A second export
# without the key sends its target the client's bytes and nothing before.
# A rule side facing an export side older than the hello's origin part
# (which refuses it as malformed) opens again without it, once.
. "$(dirname "$0")/lib.sh"
smc_init
need python3

pair_ports
set -- $(free_ports 4)
PORT_PLAIN=$1
PORT_PLAIN_TARGET=$2
PORT_OLD_RULE=$3
PORT_OLD=$4
conf_a "$T/a.conf" x 'insecure = true;' "
	, { name = \"plain\"; listen = \"127.0.0.1:$PORT_PLAIN\"; peer = \"b\"; export = \"plain\"; },
	{ name = \"o\"; listen = \"127.0.0.1:$PORT_OLD_RULE\"; peer = \"old\"; export = \"x\"; }"
sed -i "s|^peers = (|peers = (\n\t{ name = \"old\"; address = \"127.0.0.1:$PORT_OLD\"; insecure = true; },|" "$T/a.conf"
conf_b "$T/b.conf"
sed -i -e "s|connect_timeout = 5; }|connect_timeout = 5; proxy_protocol = true; },\n\t{ name = \"plain\"; target = \"127.0.0.1:$PORT_PLAIN_TARGET\"; peers = [ \"a\" ]; }|" "$T/b.conf"
grep -q 'proxy_protocol = true' "$T/b.conf" || fail "b.conf: $(cat "$T/b.conf")"

# the targets answer each connection with what they saw first
# (tests/tools/proxy_target.py): "proxy SRC DST" or "plain", and the first
# 5 bytes after it
for p in "$PORT_TARGET" "$PORT_PLAIN_TARGET"; do
	python3 "$(dirname "$0")/../tools/proxy_target.py" "$p" >>"$T/target-$p.log" 2>&1 &
	track $! "$T/target-$p.log"
	wait_listen "$p" 10 $!
done
# an export side older than the origin part: refuses a hello with flag
# 0x04 as malformed (RESULT 8), takes one without and answers "old" and
# the first 5 bytes; it logs which it got
cat >"$T/old.py" <<'PY'
import socket, struct, sys
EYE = b"\xe2\xd4\xc3\xc6"
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
def readn(c, n):
    b = b""
    while len(b) < n:
        d = c.recv(n - len(b))
        if not d:
            raise EOFError
        b += d
    return b
def result(code):
    return EYE + struct.pack(">BBHII", 1, 4, 16, code, 0)
while True:
    c, _ = s.accept()
    try:
        h = readn(c, 8)
        hello = h + readn(c, struct.unpack(">H", h[6:8])[0] - 8)
        if h[:4] != EYE or h[5] != 1:
            print("not a hello", flush=True)
        elif hello[40] & 0x04:
            print("refused origin", flush=True)
            c.sendall(result(8))
        else:
            print("plain hello", flush=True)
            c.sendall(result(0))
            got = b""
            while True:
                d = c.recv(4096)
                if not d:
                    break
                got += d
            c.sendall(b"old " + got[:5] + b"\n")
    except EOFError:
        print("cut", flush=True)
    c.close()
PY
python3 "$T/old.py" "$PORT_OLD" >>"$T/old.log" 2>&1 &
track $! "$T/old.log"
wait_listen "$PORT_OLD" 10 $!
start_pair
wait_listen "$PORT_PLAIN" 10 "$a_pid"

# client PORT: from 127.0.0.5, sends "hello" (padded to 16 bytes for the
# plain target), prints its own port and the target's line
cat >"$T/client.py" <<'PY'
import socket, sys
c = socket.socket()
c.bind(("127.0.0.5", 0))
c.settimeout(20)
c.connect(("127.0.0.1", int(sys.argv[1])))
c.sendall(b"hello" + b"." * 11)
c.shutdown(socket.SHUT_WR)
got = b""
while True:
    d = c.recv(4096)
    if not d:
        break
    got += d
print(c.getsockname()[1], got.decode().strip())
PY
out=$(python3 "$T/client.py" "$PORT_RULE") || fail "client through x: $out"
smc_log "x: $out"
set -- $out
[ "$2 $3 $4 $5" = "proxy 127.0.0.5:$1 127.0.0.1:$PORT_RULE hello" ] ||
	fail "target of x saw \"${out#* }\", want a PROXY header from 127.0.0.5:$1 to 127.0.0.1:$PORT_RULE, then hello"
client_port=$1
for i in $(seq 50); do
	grep -q "export=x .* client=127.0.0.5:$client_port transport=fallback" "$T/b.log" && break
	sleep 0.1
done
grep -q "export=x peer=a target=127.0.0.1:$PORT_TARGET client=127.0.0.5:$client_port transport=fallback.* connected=yes" "$T/b.log" ||
	fail "b's connection log does not name the client: $(grep 'export=x' "$T/b.log")"
grep -q "rule=x peer=b client=127.0.0.5:$client_port transport=fallback" "$T/a.log" ||
	fail "a's connection log: $(grep 'rule=x' "$T/a.log")"

out=$(python3 "$T/client.py" "$PORT_PLAIN") || fail "client through plain: $out"
smc_log "plain: $out"
set -- $out
[ "$2 $3" = "plain hello" ] || fail "target of plain saw \"${out#* }\", want hello first"

# an older export side: the client gets through all the same, with a
# second hello without the origin, and the next goes without at once
for i in 1 2; do
	out=$(python3 "$T/client.py" "$PORT_OLD_RULE") || fail "client through o: $out"
	smc_log "o: $out"
	set -- $out
	[ "$2 $3" = "old hello" ] || fail "connection $i through o: \"${out#* }\""
done
[ "$(cat "$T/old.log")" = "refused origin
plain hello
plain hello" ] || fail "the older export side saw: $(cat "$T/old.log")"
grep -q "peer old refused a hello naming the client" "$T/a.log" ||
	fail "a does not say why it opened again"

# -n and the generated example know the key
"$SMCPROXYD" -n -c "$T/b.conf" >"$T/n.out" 2>&1 || fail "-n: $(cat "$T/n.out")"
sed -i 's/proxy_protocol = true/proxy_protocol = 1/' "$T/b.conf"
"$SMCPROXYD" -n -c "$T/b.conf" >"$T/n.out" 2>&1 && fail "-n took proxy_protocol = 1"
grep -q 'proxy_protocol' "$T/n.out" || fail "-n: $(cat "$T/n.out")"
"$SMCPROXYD" --print-example | grep -q '^[[:space:]#]*proxy_protocol = false;' ||
	fail "the example config lacks exports[].proxy_protocol"
exit 0
