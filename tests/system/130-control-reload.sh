#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# "smcproxyctl reload" with broken and good files.  A broken file (syntax
# error, a rule naming an unknown peer, a listen address another process
# holds, a missing file) fails with status 1, "configuration has errors,
# not reloading" and its errors as file:line details (-j: ok false, error,
# details); nothing changes, the daemon keeps serving, and a transfer that
# spans every reload completes verified.  A good file adds a rule, changes
# an export and removes the rule again, each visible in "show rules" and
# in what listens.  "smcproxyctl -c FILE reload" (the unit's ExecReload=)
# finds the socket the file names; a file it cannot parse is reported
# and the default socket tried.
. "$(dirname "$0")/lib.sh"
smc_init
need python3 "$SMCPROXYCTL"

. "$(dirname "$0")/lib-control.sh"

# reload_fails NAME WHAT: reload must fail on daemon NAME, as a table and
# as JSON, with details naming its file; nothing may change.
reload_fails()
{
	local d=$1 what=$2 rc

	ctlj "$d" "$T/$d.rules.before" show rules
	ctl "$d" reload >"$T/reload.out" 2>"$T/reload.err"
	rc=$?
	[ "$rc" -eq 1 ] || fail "reload with $what: status $rc, want 1: $(cat "$T/reload.err")"
	[ -s "$T/reload.out" ] && fail "reload with $what printed: $(cat "$T/reload.out")"
	ctl "$d" -j reload >"$T/reload.json" 2>"$T/reload.jerr"
	rc=$?
	[ "$rc" -eq 1 ] || fail "reload -j with $what: status $rc, want 1"
	[ -s "$T/reload.jerr" ] && fail "reload -j with $what: stderr: $(cat "$T/reload.jerr")"
	pycheck "reload with $what" "$T/reload.json" "$T/reload.err" "$T/$d.conf" \
		"${3:-}" <<'EOF'
r = load(A[0])
eq(sorted(r), ["details", "error", "ok", "v"], "reply members")
eq((r["v"], r["ok"], r["error"]), (1, False, "configuration has errors, not reloading"),
   "reply")
det = r["details"]
need(det and all(isinstance(x, str) and x for x in det), "details %r" % det)
need(any(x.startswith(A[2] + ":") for x in det), "no detail names %s: %r" % (A[2], det))
if A[3]:
    need(any(x.startswith(A[3]) for x in det), "no detail starts with %r: %r" % (A[3], det))
err = open(A[1]).read().splitlines()
eq(err, ["smcproxyctl: reload: configuration has errors, not reloading"] +
   ["  " + x for x in det], "stderr of the table form")
EOF
	kill -0 "$(eval echo \$${d}_pid)" || fail "daemon $d died on a reload with $what"
	ctlj "$d" "$T/$d.rules.after" show rules
	# open connections still closing from the last transfer may differ
	cmp -s <(sed 's/"conns": *[0-9]*//g' "$T/$d.rules.before") \
		<(sed 's/"conns": *[0-9]*//g' "$T/$d.rules.after") ||
		fail "reload with $what changed the rules: $(cat "$T/$d.rules.after")"
	grep -q "reload requested by uid 0 pid [0-9]" "$T/$d.log" ||
		fail "daemon $d does not log who asked for the reload"
	xfer_client -n 2 -b 256K || fail "no service after the reload with $what on $d"
}

pair_ports
conf_a "$T/a.conf"
conf_b "$T/b.conf"
cp "$T/a.conf" "$T/a.conf.good"
cp "$T/b.conf" "$T/b.conf.good"
start_server "$PORT_TARGET"
start_pair

# A transfer through every reload below.
"$XFER" client -c "127.0.0.1:$PORT_RULE" -m stream -t 8 --verify -n 2 -T 60 \
	>"$T/stream.log" 2>&1 &
stream_pid=$!
track "$stream_pid" "$T/stream.log"
sleep 0.3

# 1. A syntax error: the line of the error is named.
for d in a b; do
	cp "$T/$d.conf.good" "$T/$d.conf"
	printf 'rules = ( { name = "z"; ;\n' >>"$T/$d.conf"
	reload_fails $d "a syntax error" "$T/$d.conf:$(wc -l <"$T/$d.conf"):"
	cp "$T/$d.conf.good" "$T/$d.conf"
done

# 2. A well-formed file with a rule for a peer that does not exist.
conf_a "$T/a.conf" x 'insecure = true;' "
	, { name = \"y\"; listen = \"127.0.0.1:$PORT_SPARE\"; peer = \"nosuch\"; export = \"x\"; }"
line=$(grep -n nosuch "$T/a.conf" | cut -d: -f1)
reload_fails a "an unknown peer" "$T/a.conf:$line:"
port_listening "$PORT_SPARE" && fail "the broken rule's port listens"

# 3. A rule on an address another process holds.
python3 -c '
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(1)
print("bound", flush=True)
time.sleep(300)' "$PORT_SPARE" >"$T/squatter.log" 2>&1 &
squatter=$!
track $squatter "$T/squatter.log"
wait_listen "$PORT_SPARE" 10 $squatter
conf_a "$T/a.conf" x 'insecure = true;' "
	, { name = \"y\"; listen = \"127.0.0.1:$PORT_SPARE\"; peer = \"b\"; export = \"x\"; }"
reload_fails a "a listen address in use"
kill $squatter
wait $squatter
untrack $squatter
wait_not_listening "$PORT_SPARE" || fail "port $PORT_SPARE still in use"

# 4. No file at all.
mv "$T/a.conf" "$T/a.conf.moved"
reload_fails a "a missing file"
mv "$T/a.conf.moved" "$T/a.conf"

# Good files.  a gets rule y (idle timeout 30 s): both rules work.
conf_a "$T/a.conf" x 'insecure = true;' "
	, { name = \"y\"; listen = \"127.0.0.1:$PORT_SPARE\"; peer = \"b\"; export = \"x\"; idle_timeout = 30; }"
ctl a reload >"$T/reload.out" 2>&1 || fail "good reload failed: $(cat "$T/reload.out")"
[ "$(head -n 1 "$T/reload.out")" = "reloaded $T/a.conf: configuration OK, 2 rules, 1 peer, 0 exports" ] ||
	fail "good reload printed: $(cat "$T/reload.out")"
wait_listen "$PORT_SPARE" 10 "$a_pid"
ctlj a "$T/a.rules.json" show rules
pycheck "rules after the good reload" "$T/a.rules.json" "$PORT_RULE" "$PORT_SPARE" <<'EOF'
eq([(r["name"], r["listen"], r["peer"], r["export"], r["idle_timeout_s"])
    for r in load(A[0])["data"]["rules"]],
   [("x", "127.0.0.1:" + A[1], "b", "x", 0), ("y", "127.0.0.1:" + A[2], "b", "x", 30)],
   "rules")
EOF
xfer_client -n 2 -b 1M || fail "rule x broken after the good reload"
"$XFER" client -c "127.0.0.1:$PORT_SPARE" -n 2 -b 1M -T 60 >>"$T/client.log" 2>&1 ||
	fail "rule y from the good reload does not work"

# b: the export's connect timeout changes; -j answers what it loaded.
sed 's/connect_timeout = 5;/connect_timeout = 7;/' "$T/b.conf.good" >"$T/b.conf"
out=$(ctl b -j reload) || fail "good reload -j on b failed: $out"
echo "$out" >"$T/reload.json"
pycheck "good reload -j on b" "$T/reload.json" "$T/b.conf" <<'EOF'
r = load(A[0])
eq(r["ok"], True, "ok")
eq(r["data"]["message"], "reloaded " + A[1] + ": configuration OK, 0 rules, 1 peer, 1 export", "message")
EOF
ctlj b "$T/b.rules.json" show rules
pycheck "export after the good reload" "$T/b.rules.json" <<'EOF'
eq([e["connect_timeout_s"] for e in load(A[0])["data"]["exports"]], [7], "connect_timeout_s")
EOF

# a again, without rule y: its port closes, x still works.
cp "$T/a.conf.good" "$T/a.conf"
ctl a reload >"$T/reload.out" 2>&1 || fail "reload removing y failed: $(cat "$T/reload.out")"
wait_not_listening "$PORT_SPARE" 10 || fail "the removed rule's port still listens"
ctlj a "$T/a.rules.json" show rules
pycheck "rules after removing y" "$T/a.rules.json" <<'EOF'
eq([r["name"] for r in load(A[0])["data"]["rules"]], ["x"], "rules")
EOF
xfer_client -n 2 -b 1M || fail "rule x broken after removing y"

# -c: the socket from the file (a's is $T/a.sock), as ExecReload= uses it
"$SMCPROXYCTL" -c "$T/a.conf" reload >"$T/reload.out" 2>&1 ||
	fail "smcproxyctl -c a.conf reload: $(cat "$T/reload.out")"
grep -q "control_socket = \"$T/a.sock\"" "$T/a.conf" ||
	fail "a.conf does not name $T/a.sock: the -c check proves nothing"
printf 'smcproxyd: {\n' >"$T/broken.conf"
"$SMCPROXYCTL" -c "$T/broken.conf" -t 2 version >"$T/reload.out" 2>&1 &&
	fail "smcproxyctl -c with an unparsable file found a daemon"
grep -q "broken.conf:2: syntax error; trying the default socket /run/smcproxyd/control.sock" "$T/reload.out" ||
	fail "smcproxyctl -c with an unparsable file said: $(cat "$T/reload.out")"

wait "$stream_pid"
rc=$?
untrack "$stream_pid"
cat "$T/stream.log"
[ "$rc" -eq 0 ] || fail "the transfer across the reloads failed"
