#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# smcproxyctl check PEER, as smc_chk: on loopback without an RDMA device
# the daemon tries to set up a link group to the peer now and answers
# that it cannot, naming the decline (NOSMCRDEV, ours) and the transport
# the peer's connections take (the TCP fallback), exit status 1; -j gives
# the same as one JSON line with details.  Bad input: no such peer (1), a
# missing or extra argument (2, usage), a raw request without the name or
# with a number for it (an error, the connection still answering).  The
# pair carries a transfer all along.
. "$(dirname "$0")/lib.sh"
smc_init
need python3 "$SMCPROXYCTL"

pair_ports
conf_a "$T/a.conf"
conf_b "$T/b.conf"
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
		fail "smcproxyctl $*: status $rc, want $want; stdout: $(head -c 300 "$T/out"); stderr: $(cat "$T/err")"
}

run_ctl 1 check b
smc_log "check b: $(cat "$T/err")"
grep -q '^smcproxyctl: check: peer b: RDMA declined by us: NOSMCRDEV$' "$T/err" ||
	fail "check b: $(cat "$T/err")"
grep -q '^  transport: fallback (connections to b take the TCP fallback)$' "$T/err" ||
	fail "check b names no transport: $(cat "$T/err")"
grep -q '^  decline: NOSMCRDEV 0x03030002 by us$' "$T/err" ||
	fail "check b names no decline code: $(cat "$T/err")"
[ -s "$T/out" ] && fail "check b printed on stdout: $(cat "$T/out")"
grep -q 'peer b: checking it: setting up a link group' "$T/a.log" ||
	fail "a did not try to set up a group for the check"

run_ctl 1 -j check b
python3 - "$T/out" >"$T/check.out" 2>&1 <<'PY' || fail "check -j: $(cat "$T/check.out")"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, lines
r = json.loads(lines[0])
assert r["v"] == 1 and r["ok"] is False, r
assert r["error"] == "peer b: RDMA declined by us: NOSMCRDEV", r
assert "decline: NOSMCRDEV 0x03030002 by us" in r["details"], r
PY

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
assert r1["ok"] is False and "NOSMCRDEV" in r1["error"], r1
assert r2["ok"] is True and "version" in r2["data"], r2
PY

xfer_client -n 2 -b 64K || fail "a transfer through the pair failed"
exit 0
