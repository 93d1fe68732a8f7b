#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# No local user can hold the control socket: uid 65534 gets 16 clients,
# its 17th (and smcproxyctl run as that uid meanwhile) is told "too many
# control clients for uid 65534 (at most 16 per user)" and closed, while
# root is still served; once the 16 close, uid 65534 is served again.  A
# request line trickling in a byte every half second is cut off 10 s
# after its first byte with "request line not complete within 10 s",
# while a transfer through the daemons verifies.
. "$(dirname "$0")/lib.sh"
smc_init
need python3 "$SMCPROXYCTL" setpriv
[ "$(id -u)" = 0 ] || skip "needs root to open clients as another uid"

. "$(dirname "$0")/lib-control.sh"

OTHER=65534
chmod 755 "$T"
cp "$SMCPROXYCTL" "$T/smcproxyctl"
chmod 755 "$T/smcproxyctl"

cat >"$T/limits.py" <<'PY'
import json, os, socket, sys, time

def conn(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    return s

def line(s):
    buf = b""
    while b"\n" not in buf:
        d = s.recv(4096)
        if not d:
            raise EOFError("closed after %r" % buf)
        buf += d
    return buf

def hold(path, uid, n, release):
    # As uid: n clients, each served, then one more refused and closed.
    # (The privileges are dropped here: python3 may not be runnable by uid.)
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    held = []
    for i in range(n):
        s = conn(path)
        s.sendall(b'{"v":1,"cmd":"version"}\n')
        rep = json.loads(line(s))
        if rep.get("ok") is not True:
            sys.exit("client %d: %r" % (i + 1, rep))
        held.append(s)
    s = conn(path)
    try:
        rep = line(s)
    except socket.timeout:
        sys.exit("client %d: neither a reply nor closed" % (n + 1))
    want = {"v": 1, "ok": False, "error": "too many control clients for uid %d (at most 16 per user)" % os.getuid()}
    if json.loads(rep) != want or s.recv(10) != b"":
        sys.exit("client %d: %r, want %r and EOF" % (n + 1, rep, want))
    print("held %d, client %d refused" % (n, n + 1), flush=True)
    for _ in range(600):
        if os.path.exists(release):
            return
        time.sleep(0.1)
    sys.exit("never released")

def trickle(path):
    s = conn(path)
    s.setblocking(False)
    req, got, t0, k = b'{"v":1,"cmd":"version"}', b"", time.monotonic(), 0
    while time.monotonic() - t0 < 20:
        try:
            s.send(req[k % len(req):k % len(req) + 1])
            k += 1
        except (BrokenPipeError, ConnectionResetError, BlockingIOError):
            pass
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            try:
                d = s.recv(4096)
            except BlockingIOError:
                time.sleep(0.02)
                continue
            except ConnectionResetError:
                d = b""
            if not d:
                print("closed after %.1f s, %d bytes sent: %r" % (time.monotonic() - t0, k, got), flush=True)
                return time.monotonic() - t0, got
            got += d
    sys.exit("still open after 20 s, %d bytes sent" % k)

if sys.argv[1] == "hold":
    hold(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
else:
    took, got = trickle(sys.argv[2])
    want = b'{"v":1,"ok":false,"error":"request line not complete within 10 s"}\n'
    if not 9.5 <= took <= 13 or got != want:
        sys.exit("closed after %.1f s with %r, want 10 s and %r" % (took, got, want))
PY
chmod 644 "$T/limits.py"

pair_ports
conf_a "$T/a.conf"
conf_b "$T/b.conf"
sed -i '/control_socket = /a\	control_mode = 0666;' "$T/a.conf"
start_server "$PORT_TARGET"
start_pair

"$XFER" client -c "127.0.0.1:$PORT_RULE" -m stream -t 2 --verify -n 2 -T 60 \
	>"$T/stream.log" 2>&1 &
stream_pid=$!
track "$stream_pid" "$T/stream.log"

# uid OTHER fills its 16 slots and holds them.
python3 "$T/limits.py" hold "$T/a.sock" "$OTHER" 16 "$T/release" >"$T/hold.log" 2>&1 &
holder=$!
track "$holder" "$T/hold.log"
for i in $(seq 100); do
	grep -q '^held 16, client 17 refused' "$T/hold.log" && break
	kill -0 "$holder" 2>/dev/null || break
	sleep 0.1
done
grep -q '^held 16, client 17 refused' "$T/hold.log" ||
	fail "uid $OTHER's clients: $(cat "$T/hold.log")"

setpriv --reuid "$OTHER" --regid "$OTHER" --clear-groups \
	"$T/smcproxyctl" -s "$T/a.sock" version >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" -eq 1 ] || fail "smcproxyctl as uid $OTHER's 17th client: status $rc, want 1"
[ "$(cat "$T/err")" = "smcproxyctl: version: too many control clients for uid $OTHER (at most 16 per user)" ] ||
	fail "smcproxyctl as uid $OTHER's 17th client said: $(cat "$T/err")"
ctl a version >"$T/out" 2>"$T/err" || fail "root refused while uid $OTHER holds 16: $(cat "$T/err")"
grep -q "refusing one of uid $OTHER pid [0-9]*: too many control clients for uid $OTHER" "$T/a.log" ||
	fail "a does not log the refusal"

touch "$T/release"
wait "$holder" || fail "uid $OTHER's holder: $(cat "$T/hold.log")"
untrack "$holder"
setpriv --reuid "$OTHER" --regid "$OTHER" --clear-groups \
	"$T/smcproxyctl" -s "$T/a.sock" version >"$T/out" 2>"$T/err" ||
	fail "uid $OTHER not served after its clients closed: $(cat "$T/err")"

# A request line that never completes.
python3 "$T/limits.py" trickle "$T/a.sock" >"$T/trickle.log" 2>&1 ||
	fail "trickling client: $(cat "$T/trickle.log")"
cat "$T/trickle.log"
ctl a version >/dev/null || fail "a does not answer after the trickling client"

wait "$stream_pid" || fail "transfer failed: $(cat "$T/stream.log")"
untrack "$stream_pid"
