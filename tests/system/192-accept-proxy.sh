#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# A load balancer in front of a rule (rules[].accept_proxy), over the
# fallback: each client connection begins with a PROXY header, which the
# rule side reads (not passing it on) and takes the client from.
#   - v2 naming 192.0.2.7:1234: the target behind an export with
#     proxy_protocol sees that client, then the client's bytes; A's
#     connection log says client=192.0.2.7:1234 via=BALANCER, B's
#     client=192.0.2.7:1234;
#   - v1, sent in two parts: taken the same, also with a reload between
#     the parts (the new configuration's rule takes it);
#   - v2 LOCAL (a health check): the connection's own addresses;
#   - an export without proxy_protocol gets the bytes after the header
#     and nothing of it;
#   - no header ("GET /"), a bad one (v2 with UDP) and none within
#     first_byte_timeout: reset, nothing reaches the target, counted in
#     proxy_refused and said with the reason.
. "$(dirname "$0")/lib.sh"
smc_init
need python3

pair_ports
set -- $(free_ports 2)
PORT_PLAIN=$1
PORT_PLAIN_TARGET=$2
conf_a "$T/a.conf" x 'insecure = true;' "
	, { name = \"plain\"; listen = \"127.0.0.1:$PORT_PLAIN\"; peer = \"b\"; export = \"plain\"; accept_proxy = true; }"
sed -i -e 's|export = "x"; }|export = "x"; accept_proxy = true; }|' \
	-e 's|^peer_listen: { address = "\(.*\)"; };|peer_listen: { address = "\1"; first_byte_timeout = 1; };|' "$T/a.conf"
grep -q 'first_byte_timeout = 1;' "$T/a.conf" || fail "a.conf: $(cat "$T/a.conf")"
grep -c 'accept_proxy = true' "$T/a.conf" | grep -qx 2 || fail "a.conf: $(cat "$T/a.conf")"
conf_b "$T/b.conf"
sed -i -e "s|connect_timeout = 5; }|connect_timeout = 5; proxy_protocol = true; },\n\t{ name = \"plain\"; target = \"127.0.0.1:$PORT_PLAIN_TARGET\"; peers = [ \"a\" ]; }|" "$T/b.conf"
"$SMCPROXYD" -n -c "$T/a.conf" >"$T/n.out" 2>&1 || fail "smcproxyd -n a.conf: $(cat "$T/n.out")"

# the targets answer each connection with what they saw first
# (tests/tools/proxy_target.py): "proxy SRC DST" or "plain", and the
# first 5 bytes after it; each connection is a line of their log
for p in "$PORT_TARGET" "$PORT_PLAIN_TARGET"; do
	python3 "$(dirname "$0")/../tools/proxy_target.py" "$p" >>"$T/target-$p.log" 2>&1 &
	track $! "$T/target-$p.log"
	wait_listen "$p" 10 $!
done
start_pair
wait_listen "$PORT_PLAIN" 10 "$a_pid"

# balancer PORT KIND: from 127.0.0.5, a header of KIND (v2, v1, local,
# junk, udp, none) then "hello" and FIN; prints its own port and what
# came back ("reset" or "closed" when nothing did)
cat >"$T/balancer.py" <<'PY'
import socket, struct, subprocess, sys, time
SIG = b"\r\n\r\n\0\r\nQUIT\n"
port, kind = int(sys.argv[1]), sys.argv[2]
def v2(cmd, fam, body):
    return SIG + struct.pack(">BBH", cmd, fam, len(body)) + body
addrs = socket.inet_aton("192.0.2.7") + socket.inet_aton("192.0.2.1") + struct.pack(">HH", 1234, 80)
head = {"v2": [v2(0x21, 0x11, addrs)],
        "v1": [b"PROXY TCP4 198.51.100.9 ", b"198.51.100.1 5555 443\r\n"],
        "reload": [b"PROXY TCP4 198.51.100.9 ", b"198.51.100.1 5555 443\r\n"],
        "local": [v2(0x20, 0x00, b"")],
        "junk": [b"GET / HTTP/1.0\r\n"],
        "udp": [v2(0x21, 0x12, addrs)],
        "none": []}[kind]
c = socket.socket()
c.bind(("127.0.0.5", 0))
c.settimeout(20)
c.connect(("127.0.0.1", port))
try:
    for i, part in enumerate(head):
        if i:
            time.sleep(0.3)
        if i and kind == "reload":  # between the header's parts
            subprocess.run(sys.argv[3:], check=True, stdout=subprocess.DEVNULL)
        c.sendall(part)
    if kind == "none":
        time.sleep(3)
    c.sendall(b"hello" + b"." * 11)
    c.shutdown(socket.SHUT_WR)
    got = b""
    while True:
        d = c.recv(4096)
        if not d:
            break
        got += d
    print(c.getsockname()[1], got.decode().strip() or "closed")
except ConnectionResetError:
    print(c.getsockname()[1], "reset")
except BrokenPipeError:
    print(c.getsockname()[1], "reset")
PY
bal() { python3 "$T/balancer.py" "$@"; }

out=$(bal "$PORT_RULE" v2) || fail "v2 through x: $out"
smc_log "v2: $out"
set -- $out
[ "$2 $3 $4 $5" = "proxy 192.0.2.7:1234 192.0.2.1:80 hello" ] ||
	fail "v2: the target saw \"${out#* }\", want the header's client 192.0.2.7:1234 to 192.0.2.1:80, then hello"
lb=$1
for i in $(seq 50); do
	grep -q "rule=x peer=b client=192.0.2.7:1234 " "$T/a.log" &&
		grep -q "export=x .* client=192.0.2.7:1234 " "$T/b.log" && break
	sleep 0.1
done
grep -q "export=x .* client=192.0.2.7:1234 " "$T/b.log" ||
	fail "b's connection log does not name the balancer's client: $(grep 'export=x' "$T/b.log")"
grep -q "rule=x peer=b client=192.0.2.7:1234 via=127.0.0.5:$lb transport=fallback.* connected=yes" "$T/a.log" ||
	fail "a's connection log: $(grep 'rule=x' "$T/a.log")"

out=$(bal "$PORT_RULE" v1) || fail "v1 through x: $out"
smc_log "v1: $out"
[ "${out#* }" = "proxy 198.51.100.9:5555 198.51.100.1:443 hello" ] ||
	fail "v1 in two parts: the target saw \"${out#* }\""

# a reload while the header is on its way: the rule of the new
# configuration takes the client (the old one is gone by then)
out=$(bal "$PORT_RULE" reload "$SMCPROXYCTL" -s "$T/a.sock" reload) ||
	fail "a reload during the header: $out"
smc_log "reload: $out"
[ "${out#* }" = "proxy 198.51.100.9:5555 198.51.100.1:443 hello" ] ||
	fail "a reload during the header: the target saw \"${out#* }\""

out=$(bal "$PORT_RULE" local) || fail "LOCAL through x: $out"
smc_log "local: $out"
set -- $out
[ "$2 $3 $4 $5" = "proxy 127.0.0.5:$1 127.0.0.1:$PORT_RULE hello" ] ||
	fail "LOCAL: the target saw \"${out#* }\", want the connection's own ends"

out=$(bal "$PORT_PLAIN" v2) || fail "v2 through plain: $out"
smc_log "plain: $out"
[ "${out#* }" = "plain hello" ] ||
	fail "an export without proxy_protocol saw \"${out#* }\", want the bytes after the header only"

lines=$(cat "$T/target-$PORT_TARGET.log" "$T/target-$PORT_PLAIN_TARGET.log" | wc -l)
for kind in junk udp none; do
	out=$(bal "$PORT_RULE" $kind) || fail "$kind: $out"
	smc_log "$kind: $out"
	case ${out#* } in
	reset | closed) ;;
	*) fail "$kind: the balancer got \"${out#* }\", want a reset" ;;
	esac
done
sleep 0.5
[ "$(cat "$T/target-$PORT_TARGET.log" "$T/target-$PORT_PLAIN_TARGET.log" | wc -l)" = "$lines" ] ||
	fail "a connection without a good header reached a target: $(tail -n 3 "$T/target-$PORT_TARGET.log")"
for why in 'no PROXY header' 'PROXY v2: not TCP over IPv4 or IPv6' \
	'no PROXY header within first_byte_timeout'; do
	grep -q "rule x: client 127.0.0.5:[0-9]* reset: $why (accept_proxy: its connections must begin with a PROXY header)" "$T/a.log" ||
		fail "a's log does not say \"$why\": $(grep 'reset:' "$T/a.log")"
done
[ "$(stat_get a proxy_accepted)" = 4 ] || fail "proxy_accepted is $(stat_get a proxy_accepted), want 4"
[ "$(stat_get a proxy_local)" = 1 ] || fail "proxy_local is $(stat_get a proxy_local), want 1"
[ "$(stat_get a proxy_refused)" = 3 ] || fail "proxy_refused is $(stat_get a proxy_refused), want 3"
exit 0
