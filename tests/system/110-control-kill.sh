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


# pycheck WHAT [ARG...] <<'EOF' ... EOF: run the Python check on stdin with
# ARGs in A[]; load(path) reads a JSON file; fail WHAT with its message.
pycheck()
{
	local what=$1

	shift
	{
		cat <<'PRE'
import json, re, sys
A = sys.argv[1:]
def load(p):
    with open(p) as f:
        return json.load(f)
def need(cond, msg):
    if not cond:
        print(msg)
        sys.exit(1)
def eq(got, want, what):
    need(got == want, "%s: got %r, want %r" % (what, got, want))
PRE
		cat
	} >"$T/check.py"
	python3 "$T/check.py" "$@" >"$T/check.out" 2>&1 ||
		fail "$what: $(cat "$T/check.out")"
}

# ctlj NAME FILE ARGS...: smcproxyctl -j into FILE; must succeed, one line.
ctlj()
{
	local name=$1 file=$2

	shift 2
	ctl "$name" -j "$@" >"$file" 2>"$T/ctl.err" ||
		fail "smcproxyctl -j $* on $name failed: $(cat "$T/ctl.err")"
	[ "$(wc -l <"$file")" -eq 1 ] || fail "smcproxyctl -j $* on $name: not one line"
}

# start_helpers: the x3 server on PORT_TARGET and the client coprocess; the
# client answers one line per command (cli CMD... sets REPLY).
start_helpers()
{
	cat >"$T/peer.py" <<'PY'
import errno, os, selectors, socket, sys, time

def server(port, mult):
    # Per connection: send back MULT copies of every byte received; at EOF
    # flush and close.  One line per closed connection on stdout.
    sel = selectors.DefaultSelector()
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(4096)
    ls.setblocking(False)
    sel.register(ls, selectors.EVENT_READ, None)
    st = {}

    def done(s, how):
        c = st.pop(s)
        sel.unregister(s)
        s.close()
        print("close %s:%d in=%d out=%d end=%s" %
              (c["peer"][0], c["peer"][1], c["in"], c["out"], how), flush=True)

    while True:
        for key, ev in sel.select():
            s = key.fileobj
            if key.data is None:
                while True:
                    try:
                        cs, peer = ls.accept()
                    except BlockingIOError:
                        break
                    cs.setblocking(False)
                    st[cs] = {"peer": peer, "in": 0, "out": 0,
                              "buf": bytearray(), "eof": False}
                    sel.register(cs, selectors.EVENT_READ, 1)
                    print("accept %s:%d" % peer, flush=True)
                continue
            c = st[s]
            try:
                if ev & selectors.EVENT_READ and not c["eof"]:
                    d = s.recv(262144)
                    if d:
                        c["in"] += len(d)
                        c["buf"] += d * mult
                    else:
                        c["eof"] = True
                if c["buf"]:
                    n = s.send(c["buf"])
                    c["out"] += n
                    del c["buf"][:n]
            except BlockingIOError:
                pass
            except (ConnectionResetError, BrokenPipeError):
                done(s, "rst")
                continue
            if c["eof"] and not c["buf"]:
                done(s, "eof")
                continue
            want = (0 if c["eof"] else selectors.EVENT_READ) | \
                (selectors.EVENT_WRITE if c["buf"] else 0)
            sel.modify(s, want, 1)

def client(port):
    # Commands on stdin, one answer line each on stdout.
    conns = []
    pat = bytes(range(256)) * 1024

    def recv_exact(s, n, tmo):
        got = 0
        end = time.monotonic() + tmo
        while got < n:
            s.settimeout(max(0.01, end - time.monotonic()))
            d = s.recv(min(262144, n - got))
            if not d:
                return got, "eof"
            got += len(d)
        return got, "ok"

    for line in sys.stdin:
        w = line.split()
        if not w:
            continue
        out = "?"
        try:
            if w[0] == "open":
                first = len(conns)
                for _ in range(int(w[1])):
                    s = socket.create_connection(("127.0.0.1", port), 10)
                    conns.append(s)
                out = "opened " + " ".join(
                    "%d=%s:%d" % ((i,) + conns[i].getsockname())
                    for i in range(first, len(conns)))
            elif w[0] == "xfer":
                # send N bytes on conn I, read MULT*N back
                i, n, mult = int(w[1]), int(w[2]), int(w[3])
                s = conns[i]
                s.settimeout(30)
                left = n
                while left:
                    k = s.send(pat[:min(left, len(pat))])
                    left -= k
                got, how = recv_exact(s, n * mult, 30)
                out = "xfer %d sent %d got %d %s" % (i, n, got, how)
            elif w[0] == "expect_reset":
                i, secs = int(w[1]), float(w[2])
                s = conns[i]
                s.settimeout(secs)
                try:
                    d = s.recv(65536)
                    out = "data %d" % i if d else "eof %d" % i
                except ConnectionResetError:
                    out = "reset %d" % i
                except socket.timeout:
                    out = "timeout %d" % i
            elif w[0] == "close":
                # orderly: FIN, read to EOF, close
                i = int(w[1])
                s = conns[i]
                s.shutdown(socket.SHUT_WR)
                got, how = recv_exact(s, 1 << 62, 30)
                s.close()
                out = "close %d %s extra=%d" % (i, how, got)
            elif w[0] == "quit":
                break
        except Exception as e:
            out = "error %s: %r" % (w[0], e)
        print(out, flush=True)

if sys.argv[1] == "server":
    server(int(sys.argv[2]), int(sys.argv[3]))
else:
    client(int(sys.argv[2]))
PY
	python3 "$T/peer.py" server "$PORT_TARGET" 3 >"$T/server.log" 2>&1 &
	server_pid=$!
	track "$server_pid" "$T/server.log"
	wait_listen "$PORT_TARGET" 10 "$server_pid"
	coproc CLI { exec python3 "$T/peer.py" client "$PORT_RULE" 2>>"$T/client.log"; }
	cli_pid=$CLI_PID
	track "$cli_pid" "$T/client.log"
}

cli()
{
	printf '%s\n' "$*" >&"${CLI[1]}" || fail "client helper gone ($*)"
	IFS= read -r -t 60 REPLY <&"${CLI[0]}" ||
		fail "client helper did not answer \"$*\""
	printf '> %s\n< %s\n' "$*" "$REPLY" >>"$T/client.log"
}

# xfer_bytes I N: N bytes on connection I, 3N back.
xfer_bytes()
{
	cli xfer "$1" "$2" 3
	[ "$REPLY" = "xfer $1 sent $2 got $(($2 * 3)) ok" ] ||
		fail "transfer of $2 bytes on connection $1: $REPLY"
}

# wait_stat NAME STAT VALUE: until the daemon's STAT is VALUE (5 s).
wait_stat()
{
	local i v

	for i in $(seq 50); do
		v=$(stat_get "$1" "$2")
		[ "$v" = "$3" ] && return 0
		sleep 0.1
	done
	fail "daemon $1: $2 is ${v:-?}, want $3"
}

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
[ -s "$T/kill.out" ] && fail "kill conn printed: $(cat "$T/kill.out")"
cli expect_reset 1 5
[ "$REPLY" = "reset 1" ] || fail "the client of the killed connection saw: $REPLY"
wait_stat a conns_active 2
wait_stat b conns_active 2
expect_conns a "$a0" "$a2"
expect_conns b "$b0" "$b2"
grep -q "conn $a1 killed by uid 0 pid [0-9]" "$T/a.log" ||
	fail "a does not log who killed $a1"
grep -q "conn $a1: closed: admin_kill" "$T/a.log" ||
	fail "a does not log the close of $a1 with reason admin_kill"
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
[ "$(cat "$T/kill.out")" = "{\"v\":1,\"ok\":true,\"data\":{\"id\":\"$b2\"}}" ] ||
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
wait "$cli_pid" || fail "client helper exited with status $?"
untrack "$cli_pid"
