#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# smcproxyctl check PEER tests each stage of the path a connection to the
# peer takes and names the one that fails.  On loopback without an RDMA
# device, with a key on both sides: a healthy peer is ok (status 0) over
# the TCP fallback, its port answered, the key proved both ways, the
# rule's export opened to its target, the transport the fallback with our
# decline (NOSMCRDEV); -j gives the same as one JSON line.  Three checks
# leave the RDMA back-off a transfer started as it was (it used to double
# with each).  A target that is down is the export's failure, a peer
# restarted with another key an authentication failure, a stopped peer
# unreachable with nothing listening, something else on its port that
# closes at once no handshake: each status 1, none called another.
# Bad input: no such peer (1), a missing or extra argument (2, usage), a
# raw request without the name or with a number for it (an error, the
# connection still answering).  The pair carries a transfer at the end.
. "$(dirname "$0")/lib.sh"
smc_init
need python3 socat "$SMCPROXYCTL"

pair_ports
keyfile "$T/key"
keyfile "$T/other.key"
conf_a "$T/a.conf" x "key_file = \"$T/key\";"
conf_b "$T/b.conf" '"a"' "key_file = \"$T/key\";"
start_server "$PORT_TARGET"
start_pair
grep -q 'no RDMA device can be opened' "$T/a.log" ||
	skip "an RDMA device is here: this test wants none"

# run_ctl WANT_RC ARGS...: smcproxyctl on A with stdout in $T/out, stderr
# in $T/err; the status must be WANT_RC.
run_ctl()
{
	local want=$1 rc

	shift
	ctl a "$@" >"$T/out" 2>"$T/err"
	rc=$?
	[ "$rc" -eq "$want" ] ||
		fail "smcproxyctl $*: status $rc, want $want; stdout: $(head -c 600 "$T/out"); stderr: $(cat "$T/err")"
}

# has FILE LINE...: each LINE (a grep pattern) is in FILE.
has()
{
	local f=$1 l

	shift
	for l in "$@"; do
		grep -q -- "$l" "$f" || fail "no \"$l\" in: $(cat "$f")"
	done
}

# backoff: A's back-off of RDMA to b, ms left.
backoff()
{
	ctl a -j show peers | python3 -c '
import json, sys
print(json.load(sys.stdin)["data"]["peers"][0]["backoff_left_ms"])'
}

# a healthy peer, over the fallback
run_ctl 0 check b
smc_log "check b: $(cat "$T/out")"
has "$T/out" '^peer b: ok$' \
	"^  reachable: yes, 127.0.0.1:$PORT_BPEER answered in [0-9.]* ms$" \
	'^  authenticated: yes, the peer proved the key and took our proof$' \
	'^  export x (rule x): the peer reached its target$' \
	'^  transport: fallback (RDMA declined by us: NOSMCRDEV)$' \
	'^  decline: NOSMCRDEV 0x03030002 by us$'
[ -s "$T/err" ] && fail "check b printed on stderr: $(cat "$T/err")"
grep -q 'peer b: checking it: setting up a link group' "$T/a.log" ||
	fail "a did not try to set up a group for the check"

run_ctl 0 -j check b
python3 - "$T/out" >"$T/check.out" 2>&1 <<'PY' || fail "check -j: $(cat "$T/check.out")"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, lines
r = json.loads(lines[0])
d = r["data"]
assert r["v"] == 1 and r["ok"] is True, r
assert d["peer"] == "b" and d["reachable"] is True, d
assert d["authenticated"] == "yes", d
assert d["exports"] == [{"rule": "x", "export": "x", "result": "ok"}], d
assert d["transport"] == "fallback" and d["decline"] == "NOSMCRDEV", d
assert d["by_peer"] is False and d["backoff_left_ms"] == 0, d
assert "decline: NOSMCRDEV 0x03030002 by us" in d["lines"], d
PY

# a connection puts RDMA to b on the back-off (60 s); checks leave it so
xfer_client -n 1 -b 4K || fail "a transfer through the pair failed"
before=$(backoff)
[ "$before" -gt 0 ] && [ "$before" -le 60000 ] ||
	fail "after a connection, back-off $before ms, want 60 s or less"
for i in 1 2 3; do
	run_ctl 0 check b
done
has "$T/out" '^  back-off: RDMA to b is tried again in [0-9]* s; connections take the fallback until then$'
after=$(backoff)
smc_log "back-off before three checks: $before ms, after: $after ms"
[ "$after" -gt 0 ] && [ "$after" -le "$before" ] ||
	fail "three checks changed the back-off from $before ms to $after ms"

# the export's target down: the export's failure, not the peer's
kill "$server_pid"
wait_not_listening "$PORT_TARGET" 10 ||
	fail "the target still listens"
run_ctl 1 check b
smc_log "check b, target down: $(cat "$T/err")"
has "$T/err" '^smcproxyctl: check: peer b: export x (rule x): target refused the connection$' \
	'^  authenticated: yes'
start_server "$PORT_TARGET"

# b with another key: an authentication failure, not a peer down
stop_daemon b
conf_b "$T/b.conf" '"a"' "key_file = \"$T/other.key\";"
start_daemon b "$T/b.conf"
wait_listen "$PORT_BPEER" 10 "$b_pid"
run_ctl 1 check b
smc_log "check b, wrong key: $(cat "$T/err")"
has "$T/err" '^smcproxyctl: check: peer b: authentication failed: peer failed authentication (wrong key?)$' \
	'^  reachable: yes' \
	'^  authenticated: failed, peer failed authentication (wrong key?)$' \
	'^  export x (rule x): not tried$'
grep -q 'unreachable' "$T/err" && fail "a wrong key called unreachable: $(cat "$T/err")"

# b stopped: unreachable, nothing listening, and not an authentication
stop_daemon b
run_ctl 1 check b
smc_log "check b, stopped: $(cat "$T/err")"
has "$T/err" "^smcproxyctl: check: peer b: unreachable: connect to 127.0.0.1:$PORT_BPEER: Connection refused (nothing listens there: is its daemon stopped?)$" \
	"^  reachable: no, connect to 127.0.0.1:$PORT_BPEER: Connection refused$" \
	'^  authenticated: not tried$' \
	'^  transport: none (b cannot be reached)$'
grep -q 'authentication failed' "$T/err" && fail "a stopped peer called an authentication failure: $(cat "$T/err")"

# something else on b's port, which closes without a word: no handshake,
# neither a wrong key nor a stopped peer
socat "TCP-LISTEN:$PORT_BPEER,bind=127.0.0.1,reuseaddr" /dev/null >"$T/socat.log" 2>&1 &
socat_pid=$!
track "$socat_pid" "$T/socat.log"
wait_listen "$PORT_BPEER" 10 "$socat_pid"
run_ctl 1 check b
smc_log "check b, not a daemon: $(cat "$T/err")"
has "$T/err" '^smcproxyctl: check: peer b: no handshake: the peer closed the connection$' \
	'^  reachable: yes' \
	'^  authenticated: unknown, the peer closed the connection$'
kill "$socat_pid" 2>/dev/null
wait "$socat_pid" 2>/dev/null
untrack "$socat_pid"
wait_not_listening "$PORT_BPEER" 10 || fail "socat still listens on b's port"

conf_b "$T/b.conf" '"a"' "key_file = \"$T/key\";"
start_daemon b "$T/b.conf"
wait_listen "$PORT_BPEER" 10 "$b_pid"

# bad input
run_ctl 1 check nosuch
grep -q 'no peer "nosuch"' "$T/err" || fail "check nosuch: $(cat "$T/err")"
run_ctl 2 check
grep -q '"check" takes one argument, NAME' "$T/err" || fail "check: $(cat "$T/err")"
run_ctl 2 check b c
python3 - "$T/a.sock" >"$T/raw.out" 2>&1 <<'PY' || fail "raw requests: $(cat "$T/raw.out")"
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(30)
s.connect(sys.argv[1])
f = s.makefile("rwb")
def ask(req):
    f.write((req + "\n").encode())
    f.flush()
    return json.loads(f.readline())
want = [
    ('{"v":1,"cmd":"check"}', 'command "check" needs argument "name"'),
    ('{"v":1,"cmd":"check","args":{"name":7}}', 'argument "name" must be a string'),
    ('{"v":1,"cmd":"check","args":{"name":"b","id":1}}', 'command "check" takes no argument "id"'),
    ('{"v":1,"cmd":"check","args":{"name":"' + "x" * 300 + '"}}', 'no peer "' + "x" * 64 + '"'),
]
for req, err in want:
    r = ask(req)
    assert r["ok"] is False and r["error"] == err, (req[:60], r)
# pipelined behind a check, in order
f.write(b'{"v":1,"cmd":"check","args":{"name":"b"}}\n{"v":1,"cmd":"version"}\n')
f.flush()
r1, r2 = json.loads(f.readline()), json.loads(f.readline())
assert r1["ok"] is True and r1["data"]["transport"] == "fallback", r1
assert r2["ok"] is True and "version" in r2["data"], r2
PY

xfer_client -n 2 -b 64K || fail "a transfer through the pair failed"
exit 0
