# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
#
# Helpers shared by the control tests (100-control-*.sh to 160-*), sourced
# after lib.sh and smc_init (they use $T, ctl, stat_get, track, fail ...):
#
#   pycheck WHAT [ARG...]   run the Python check on stdin (all of them)
#   ctlj NAME FILE ARGS...  smcproxyctl -j into FILE, one line
#   start_helpers, cli, xfer_bytes, wait_stat
#                           the x3 server and the line-driven client
#                           (100-control-stats, 110-control-kill)

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
	local v

	for _ in $(seq 50); do
		v=$(stat_get "$1" "$2")
		[ "$v" = "$3" ] && return 0
		sleep 0.1
	done
	fail "daemon $1: $2 is ${v:-?}, want $3"
}
