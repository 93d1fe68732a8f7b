#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# smcproxyctl against a real daemon pair: every command answers as a table,
# as JSON with -j (one line, {"v":1,"ok":true,"data":...}) and, for stats,
# as Prometheus text; the exit status is 0 for success, 1 for a command
# that failed (unknown connection, no reply in time, connection closed
# without a reply) and 2 for a usage error or a socket that cannot be
# reached, whose message names the socket.  The bash completion file
# parses, and completes commands and connection ids.
. "$(dirname "$0")/lib.sh"
smc_init
need python3 "$SMCPROXYCTL"
SRCDIR=$(cd "$(dirname "$0")/../.." && pwd)

. "$(dirname "$0")/lib-control.sh"

# run_ctl WANT_RC ARGS...: smcproxyctl ARGS (no -s added) with stdout in
# $T/out, stderr in $T/err; the status must be WANT_RC.
run_ctl()
{
	local want=$1 rc

	shift
	"$SMCPROXYCTL" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	[ "$rc" -eq "$want" ] ||
		fail "smcproxyctl $*: status $rc, want $want; stdout: $(head -c 300 "$T/out"); stderr: $(cat "$T/err")"
}

pair_ports
conf_a "$T/a.conf"
conf_b "$T/b.conf"
# A target that accepts and holds connections.
python3 -c '
import socket, sys
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", int(sys.argv[1])))
l.listen(16)
held = []
while True:
    held.append(l.accept())' "$PORT_TARGET" >"$T/target.log" 2>&1 &
track $! "$T/target.log"
wait_listen "$PORT_TARGET" 10 $!
start_pair
# One idle connection through the pair, so that show conns has a row.
python3 -c '
import socket, struct, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
print(s.getsockname()[1], flush=True)
time.sleep(600)' "$PORT_RULE" >"$T/holder.log" 2>&1 &
holder_pid=$!
track $holder_pid "$T/holder.log"
for i in $(seq 50); do
	[ "$(stat_get b conns_active)" = 1 ] && break
	sleep 0.1
done
[ "$(stat_get b conns_active)" = 1 ] || fail "the idle connection did not reach b"
read -r holder_port <"$T/holder.log"
SOCK=$T/a.sock

# --- every command as a table and as JSON ---------------------------------

for cmd in version stats "show rules" "show peers" "show intercept" \
	"show lgrs" "show links" "show conns" schema help; do
	run_ctl 0 -s "$SOCK" $cmd
	[ -s "$T/out" ] || fail "$cmd: no table"
	[ -s "$T/err" ] && fail "$cmd: stderr: $(cat "$T/err")"
	cp "$T/out" "$T/${cmd// /_}.txt"
	run_ctl 0 -s "$SOCK" -j $cmd
	[ -s "$T/err" ] && fail "-j $cmd: stderr: $(cat "$T/err")"
	cp "$T/out" "$T/${cmd// /_}.json"
	pycheck "-j $cmd" "$T/out" <<'EOF'
lines = open(A[0]).read().split("\n")
eq(len(lines), 2, "lines (one reply and its newline)")
eq(lines[1], "", "text after the reply")
r = json.loads(lines[0])
eq(sorted(r), ["data", "ok", "v"], "reply members")
eq((r["v"], r["ok"]), (1, True), "v and ok")
need(isinstance(r["data"], dict), "data is not an object")
EOF
done
run_ctl 0 --json -s "$SOCK" version
cmp -s "$T/out" "$T/version.json" || {
	# uptime_s may have ticked
	pycheck "--json version" "$T/out" "$T/version.json" <<'EOF'
a, b = load(A[0]), load(A[1])
a["data"].pop("uptime_s"); b["data"].pop("uptime_s")
eq(a, b, "--json and -j")
EOF
}

pycheck "version" "$T/version.json" "$T/version.txt" "$a_pid" "$T/a.conf" \
	"$SMC_WORKERS" <<'EOF'
d = load(A[0])["data"]
eq(sorted(d), sorted(["version", "protocol", "pid", "uptime_s", "name", "config",
                      "workers", "stopping", "kernel_smc", "smc_option"]),
   "members")
need(re.fullmatch(r"\d+\.\d+\.\d+.*", d["version"]), "version %r" % d["version"])
eq((d["protocol"], d["pid"], d["name"], d["config"], d["workers"]),
   (1, int(A[2]), "a", A[3], int(A[4])), "protocol, pid, name, config, workers")
need(isinstance(d["uptime_s"], int) and 0 <= d["uptime_s"] < 300, "uptime_s")
rows = open(A[1]).read().splitlines()
eq(rows[0].split(), ["KEY", "VALUE"], "version header")
t = dict(l.split(None, 1) for l in rows[1:])
eq(sorted(t), sorted(d), "table keys")
for k in ("version", "protocol", "pid", "name", "config", "workers"):
    eq(t[k], str(d[k]), "table " + k)
eq(t["stopping"], "no", "table stopping")
need(re.fullmatch(r"\d+(\.\d)?s", t["uptime_s"]), "table uptime %r" % t["uptime_s"])
EOF

[ "$(cat "$T/show_lgrs.txt")" = "no link groups" ] ||
	fail "show lgrs: $(cat "$T/show_lgrs.txt")"
[ "$(cat "$T/show_links.txt")" = "no links" ] ||
	fail "show links: $(cat "$T/show_links.txt")"
[ "$(cat "$T/show_lgrs.json")" = '{"v":1,"ok":true,"data":{"lgrs":[]}}' ] ||
	fail "show lgrs -j: $(cat "$T/show_lgrs.json")"
[ "$(cat "$T/show_links.json")" = '{"v":1,"ok":true,"data":{"links":[]}}' ] ||
	fail "show links -j: $(cat "$T/show_links.json")"

run_ctl 0 -s "$SOCK" -o all show conns
cp "$T/out" "$T/show_conns_all.txt"
pycheck "show conns" "$T/show_conns.json" "$T/show_conns.txt" \
	"127.0.0.1:$holder_port" "$T/show_conns_all.txt" <<'EOF'
d = load(A[0])["data"]
eq(d["count"], 1, "count")
c = d["conns"][0]
eq(sorted(c), sorted(["id", "worker", "mode", "role", "rule", "export", "peer",
                      "state", "downstream", "upstream", "bytes_in", "bytes_out",
                      "age_s", "idle_s", "dialect", "transport"]), "members")
eq((c["downstream"], c["bytes_in"], c["bytes_out"], c["state"]),
   (A[2], 0, 0, "relay"), "the idle connection")
rows = [l.split() for l in open(A[1]).read().splitlines()]
eq(len(rows), 2, "table lines")
eq(rows[0], ["ID", "DIALECT", "TRANSPORT", "ROLE", "RULE", "PEER", "STATE",
             "DOWNSTREAM", "BYTES-IN", "BYTES-OUT", "AGE", "IDLE"], "table header")
eq(rows[1][:10], [c["id"], "native", "fallback", "rule", "x", "b", "relay", A[2],
                  "0", "0"], "table row")
rows = [l.split() for l in open(A[3]).read().splitlines()]
eq(rows[1][:14], [c["id"], str(c["worker"]), "native", "fallback", "fallback",
                  "rule", "x", "x", "b", "relay", A[2], c["upstream"], "0", "0"],
   "-o all: table row")
EOF

pycheck "schema and help" "$T/schema.json" "$T/schema.txt" "$T/help.json" \
	"$T/help.txt" "$T/stats.json" <<'EOF'
s, h = load(A[0])["data"], load(A[2])["data"]
eq(s["protocol"], 1, "protocol")
names = ["version", "stats", "stats reset", "show rules", "show peers",
         "show intercept", "show lgrs", "show links", "show conns", "show smc",
         "kill conn", "kill conns", "disable rule",
         "enable rule", "drain peer", "undrain peer", "enable peer",
         "check smc", "check export", "check",
         "reload", "shutdown", "shutdown now", "log-level", "monitor", "schema",
         "help"]
filters = ["rule", "peer", "state", "transport", "age", "dialect"]
args = {"kill conn": ["id"], "show conns": filters, "show smc": filters,
        "kill conns": filters,
        "stats": ["section"], "log-level": ["level"],
        "check smc": ["address"]}
args.update((n, ["name"]) for n in ("disable rule", "enable rule", "drain peer",
                                    "undrain peer", "enable peer", "check",
                                    "check export"))
eq([c["name"] for c in s["commands"]], names, "commands")
eq(h["commands"], s["commands"], "help and schema commands")
for c in s["commands"]:
    eq(sorted(c), ["access", "args", "help", "mutating", "name"], "command members")
    eq(c["mutating"], c["name"] in ("stats reset", "kill conn", "kill conns", "reload",
                                    "disable rule", "enable rule", "drain peer",
                                    "undrain peer", "enable peer", "shutdown",
                                    "shutdown now"),
       "mutating of " + c["name"])
    eq(c["access"], "admin" if c["mutating"] or c["name"].startswith("check") else
       "read, admin to set" if c["name"] == "log-level" else "read",
       "access of " + c["name"])
    eq([a["name"] for a in c["args"]], args.get(c["name"], []),
       "args of " + c["name"])
    need(c["help"], "help of " + c["name"])
eq(s["commands"][names.index("kill conn")]["args"][0]["required"], True,
   "kill conn id required")
stats = load(A[4])["data"]["stats"]
eq([x["name"] for x in s["stats"]], list(stats), "schema stats and stats members")
for x in s["stats"]:
    # "scale" only where the family's unit is not the statistic's
    eq(sorted(x), sorted(["name", "kind", "unit", "description", "metric", "help",
                          "labels"] + (["scale"] if x["unit"] == "microseconds"
                                       else [])), "schema members of " + x["name"])
    need(x["kind"] in ("counter", "gauge"), "kind of " + x["name"])
    need(x["unit"] in ("connections", "bytes", "requests", "events", "handshakes",
                       "microseconds", "calls", "corks"),
         "unit of " + x["name"])
# the schema table: stats, a blank line, then the commands as help prints them
st = open(A[1]).read().split("\n\n")
eq(len(st), 2, "schema table sections")
rows = st[0].splitlines()
eq(rows[0].split(), ["STATISTIC", "KIND", "UNIT", "DESCRIPTION"], "schema header")
eq([r.split(None, 3) for r in rows[1:]],
   [[x["name"], x["kind"], x["unit"], x["description"]] for x in s["stats"]],
   "schema rows")
eq(st[1], open(A[3]).read(), "commands in schema and help tables")
rows = open(A[3]).read().splitlines()
eq(rows[0].split(), ["COMMAND", "ACCESS", "DESCRIPTION"], "help header")
eq(len(rows), 1 + len(names), "help rows")
for c, r in zip(s["commands"], rows[1:]):
    # stats SECTION and log-level LEVEL: bare words; filters: KEY VALUE
    usage = c["name"] + "".join(" " + a["name"].upper() if a["required"]
                                else " [%s]" % a["name"].upper()
                                if c["name"] in ("stats", "log-level")
                                else " [%s %s]" % (a["name"], a["name"].upper())
                                for a in c["args"])
    need(r.startswith(usage + "  "), "help row %r for %r" % (r, usage))
    rest = r[len(usage):].strip()
    need(rest.startswith(c["access"] + "  "), "help row %r: access" % r)
    eq(rest[len(c["access"]):].strip(), c["help"], "help row of " + usage)
EOF

grep -Eq '^x +127\.0\.0\.1:'"$PORT_RULE"' +peer +b +x +0 +1 +yes +yes +-$' "$T/show_rules.txt" ||
	fail "show rules table: $(cat "$T/show_rules.txt")"
[ "$(sed -n 4p "$T/show_rules.txt")" = "no exports" ] ||
	fail "show rules table without exports: $(cat "$T/show_rules.txt")"
head -n 1 "$T/show_peers.txt" | grep -Eq '^PEER +ADDRESS +AUTH +MODE +CONNS +DECLINE +REACHABLE +DRAINING +LAST-ERROR +ERROR-AGE$' ||
	fail "show peers header: $(head -n 1 "$T/show_peers.txt")"
run_ctl 0 -s "$SOCK" -o all show peers
head -n 1 "$T/out" | grep -Eq '^PEER +ADDRESS +SOURCE +DSCP +AUTH +MODE +CONNS +DECLINE +CODE +REASON +BACKOFF +REACHABLE +DRAINING +LAST-ERROR +ERROR-CODE +ERROR-AGE$' ||
	fail "show peers -o all header: $(head -n 1 "$T/out")"
run_ctl 0 -s "$SOCK" -o +code,draining show peers
head -n 1 "$T/out" | grep -Eq '^PEER +ADDRESS +AUTH +MODE +CONNS +DECLINE +REACHABLE +DRAINING +LAST-ERROR +ERROR-AGE +CODE$' ||
	fail "show peers -o +code,draining header: $(head -n 1 "$T/out")"
# no default table is wider than 120 columns
for cmd in "show peers" "show conns" "show rules"; do
	run_ctl 0 -s "$SOCK" $cmd
	awk -v c="$cmd" 'length > 120 { print c ": " length " columns: " $0; bad = 1 }
		END { exit bad }' "$T/out" >&2 || fail "$cmd is wider than 120 columns"
done

# The mutating commands say what they did, in JSON as data.message.
run_ctl 0 -s "$SOCK" stats reset
[ "$(cat "$T/out")" = "statistics reset: counters restart from zero" ] && [ ! -s "$T/err" ] ||
	fail "stats reset printed: $(cat "$T/out" "$T/err")"
run_ctl 0 -s "$SOCK" -j stats reset
[ "$(cat "$T/out")" = '{"v":1,"ok":true,"data":{"message":"statistics reset: counters restart from zero"}}' ] ||
	fail "-j stats reset: $(cat "$T/out")"
# reload: what it loaded, then the file's warnings as -n prints them
run_ctl 0 -s "$SOCK" reload
[ "$(head -n 1 "$T/out")" = "reloaded $T/a.conf: configuration OK, 1 rule, 1 peer, 0 exports" ] &&
	[ "$(wc -l <"$T/out")" -eq 2 ] &&
	grep -q "^$T/a.conf:[0-9]*: warning: peers\[0\]\.insecure: peer b is not authenticated" "$T/out" &&
	[ ! -s "$T/err" ] || fail "reload printed: $(cat "$T/out" "$T/err")"
run_ctl 0 -s "$SOCK" -j reload
pycheck "-j reload" "$T/out" <<'EOF'
r = load(A[0])
eq(r["ok"], True, "ok")
eq(sorted(r["data"]), ["message", "warnings"], "data members")
assert r["data"]["message"].startswith("reloaded "), r
eq(len(r["data"]["warnings"]), 1, "warnings")
assert ": warning: peers[0].insecure: " in r["data"]["warnings"][0], r
EOF

# --- table options (libsmartcols): -o, --noheadings, --raw ---------------

cid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["data"]["conns"][0]["id"])' "$T/show_conns.json")
run_ctl 0 -s "$SOCK" -o id,PEER,State show conns
[ "$(sed -n 1p "$T/out" | tr -s ' ')" = "ID PEER STATE" ] ||
	fail "-o id,PEER,State header: $(cat "$T/out")"
[ "$(sed -n 2p "$T/out" | tr -s ' ')" = "$cid b relay" ] ||
	fail "-o id,PEER,State row: $(cat "$T/out")"
run_ctl 0 -s "$SOCK" --noheadings show conns
[ "$(wc -l <"$T/out")" -eq 1 ] && ! grep -q BYTES-IN "$T/out" ||
	fail "--noheadings show conns: $(cat "$T/out")"
run_ctl 0 -s "$SOCK" --raw -o id,bytes-in,downstream show conns
[ "$(cat "$T/out")" = "$(printf 'ID BYTES-IN DOWNSTREAM\n%s 0 127.0.0.1:%s' "$cid" "$holder_port")" ] ||
	fail "--raw -o id,bytes-in,downstream: $(cat "$T/out")"
run_ctl 0 -s "$SOCK" -n -r -o idle-timeout,rule show rules
[ "$(cat "$T/out")" = "0 x" ] || fail "-n -r -o idle-timeout,rule show rules: $(cat "$T/out")"
run_ctl 0 -s "$SOCK" -o target show rules
[ "$(sed -n 1p "$T/out")" = "no exports" ] && [ "$(wc -l <"$T/out")" -eq 1 ] ||
	fail "-o target show rules (exports table only): $(cat "$T/out")"
run_ctl 0 -s "$SOCK" --noheadings show lgrs
[ -s "$T/out" ] && fail "--noheadings show lgrs without groups: $(cat "$T/out")"
run_ctl 0 -s "$SOCK" -n -o value version
[ "$(sed -n 1p "$T/out" | tr -d ' ')" = "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["data"]["version"])' "$T/version.json")" ] ||
	fail "-n -o value version: $(cat "$T/out")"
run_ctl 0 -s "$SOCK" --noheadings -o statistic,value stats
grep -Eq '^conns_active +1$' "$T/out" && ! grep -q workers "$T/out" ||
	fail "--noheadings -o statistic,value stats: $(head -5 "$T/out")"
# an unknown column: status 2, the valid ones named, nothing printed
run_ctl 2 -s "$SOCK" -o id,bogus show conns
[ -s "$T/out" ] && fail "-o id,bogus printed: $(cat "$T/out")"
grep -qF 'smcproxyctl: -o: unknown column "bogus"; valid: ID,W,DIALECT,TRANSPORT,MODE,ROLE,RULE,EXPORT,PEER,STATE,DOWNSTREAM,UPSTREAM,BYTES-IN,BYTES-OUT,AGE,IDLE' "$T/err" ||
	fail "-o id,bogus said: $(cat "$T/err")"
# show links knows every column smcproxyctl(8) promises, links or not
for col in lgr link state device gid peer_gid qpn peer_qpn mtu conns \
	max_inline wrs_posted writes inline_wrs completions errors slot_waits wakeups \
	slot_wait_timeouts rx_unknown rx_bad_opcode drained cq_events lazy_posts lazy_wanted \
	data_sends test_link_sent \
	test_link_answered test_link_rtt_us up_s; do
	run_ctl 0 -s "$SOCK" -o "$col" show links
done
run_ctl 0 -s "$SOCK" -o up,wakeups,slot-wait-timeouts,rx-unknown,test-link-sent,test-link-answered show links
[ "$(cat "$T/out")" = "no links" ] || fail "show links -o ...: $(cat "$T/out")"

# --- Prometheus -------------------------------------------------------------

run_ctl 0 -s "$SOCK" --prometheus
cp "$T/out" "$T/prom1"
[ -s "$T/err" ] && fail "--prometheus: stderr: $(cat "$T/err")"
run_ctl 0 -s "$SOCK" -p stats
cmp -s "$T/out" "$T/prom1" || fail "-p stats differs from --prometheus: $(diff "$T/prom1" "$T/out")"
for l in '# TYPE smcproxyd_conns_active gauge' 'smcproxyd_conns_active 1' \
	'# TYPE smcproxyd_tx_bytes_total counter' 'smcproxyd_tx_bytes_total 0' \
	'# TYPE smcproxyd_conns_closed_total counter' \
	'smcproxyd_conns_closed_total{reason="admin_kill"} 0'; do
	grep -qxF "$l" "$T/prom1" || fail "--prometheus lacks the line: $l"
done
[ "$(grep -c '^# TYPE smcproxyd_conns_closed_total ' "$T/prom1")" -eq 1 ] ||
	fail "--prometheus: conns_closed is not one family"
for args in "show conns" "version" "stats reset" "stats stats"; do
	run_ctl 2 -s "$SOCK" --prometheus $args
	[ "$(cat "$T/err")" = "smcproxyctl: --prometheus only exports stats" ] ||
		fail "--prometheus $args said: $(cat "$T/err")"
	[ -s "$T/out" ] && fail "--prometheus $args printed: $(cat "$T/out")"
done

# --- exit status ---------------------------------------------------------

run_ctl 0 -h
grep -q '^usage: smcproxyctl ' "$T/out" || fail "-h: no usage on stdout"
grep -qF 'default socket: /run/smcproxyd/control.sock' "$T/out" || fail "-h: no default socket"
run_ctl 0 --help
# usage errors: 2, a message, nothing on stdout
for args in "" "bogus" "show" "show bogus" "stats bogus extra" "version extra" \
	"kill" "kill conn" "kill conn 1 2" "-t abc stats" "-t -1 stats" \
	"--bogus stats" "-s"; do
	run_ctl 2 -s "$SOCK" $args
	[ -s "$T/err" ] || fail "'$args': no message"
	[ -s "$T/out" ] && fail "'$args': stdout: $(cat "$T/out")"
done
run_ctl 2 -s "$SOCK" stats reset extra
[ "$(cat "$T/err")" = 'smcproxyctl: "stats reset" takes no argument' ] ||
	fail "stats reset extra said: $(cat "$T/err")"
# stats SECTION: the daemon knows the sections
run_ctl 1 -s "$SOCK" stats bogus
grep -q '^smcproxyctl: stats: no statistics in section "bogus" (sections: conns, ' "$T/err" ||
	fail "stats bogus said: $(cat "$T/err")"
run_ctl 2 -s "$SOCK" bogus
[ "$(cat "$T/err")" = 'smcproxyctl: unknown command "bogus" (try "smcproxyctl -h")' ] ||
	fail "unknown command said: $(cat "$T/err")"
run_ctl 2 -s "$SOCK" show bogus
[ "$(cat "$T/err")" = 'smcproxyctl: show: unknown word "bogus"; valid: rules peers lgrs links intercept conns smc' ] ||
	fail "show bogus said: $(cat "$T/err")"
# a failed command: 1, the message on stderr; with -j the reply on stdout
run_ctl 1 -s "$SOCK" kill conn 0x999999
[ "$(cat "$T/err")" = "smcproxyctl: kill conn: no connection 0x999999" ] ||
	fail "kill conn 0x999999 said: $(cat "$T/err")"
[ -s "$T/out" ] && fail "kill conn 0x999999: stdout: $(cat "$T/out")"
run_ctl 1 -s "$SOCK" -j kill conn 0x999999
[ "$(cat "$T/out")" = '{"v":1,"ok":false,"error":"no connection 0x999999"}' ] ||
	fail "-j kill conn 0x999999: $(cat "$T/out")"
# no socket: 2, and the message names it
for opt in "" -j --prometheus; do
	run_ctl 2 -s "$T/missing.sock" $opt stats
	[ "$(cat "$T/err")" = "smcproxyctl: connect $T/missing.sock: No such file or directory" ] ||
		fail "missing socket ($opt) said: $(cat "$T/err")"
	[ -s "$T/out" ] && fail "missing socket ($opt): stdout: $(cat "$T/out")"
done
if [ ! -e /run/smcproxyd/control.sock ]; then
	run_ctl 2 version
	[ "$(cat "$T/err")" = "smcproxyctl: connect /run/smcproxyd/control.sock: No such file or directory" ] ||
		fail "missing default socket said: $(cat "$T/err")"
fi
long=$T/$(printf 'x%.0s' $(seq 120)).sock
run_ctl 2 -s "$long" stats
[ "$(cat "$T/err")" = "smcproxyctl: connect $long: File name too long" ] ||
	fail "too long a path said: $(cat "$T/err")"
# Sockets that misbehave: nobody listening (2), a listener that never
# answers (1, after -t), one that closes at once (1).
python3 -c '
import os, socket, sys, time
d = sys.argv[1]
dead = socket.socket(socket.AF_UNIX); dead.bind(d + "/dead.sock")
mute = socket.socket(socket.AF_UNIX); mute.bind(d + "/mute.sock"); mute.listen(4)
shut = socket.socket(socket.AF_UNIX); shut.bind(d + "/shut.sock"); shut.listen(4)
print("ready", flush=True)
while True:
    c, _ = shut.accept()
    c.recv(4096)
    c.close()' "$T" >"$T/fake.log" 2>&1 &
track $! "$T/fake.log"
for i in $(seq 50); do
	grep -q ready "$T/fake.log" && break
	sleep 0.1
done
run_ctl 2 -s "$T/dead.sock" stats
[ "$(cat "$T/err")" = "smcproxyctl: connect $T/dead.sock: Connection refused" ] ||
	fail "socket without a listener said: $(cat "$T/err")"
t0=$(date +%s%N)
run_ctl 1 -s "$T/mute.sock" -t 1 stats
t1=$(date +%s%N)
[ "$(cat "$T/err")" = "smcproxyctl: $T/mute.sock: no reply within 1 s" ] ||
	fail "silent daemon said: $(cat "$T/err")"
[ $(((t1 - t0) / 1000000)) -ge 900 ] && [ $(((t1 - t0) / 1000000)) -lt 5000 ] ||
	fail "-t 1 gave up after $(((t1 - t0) / 1000000)) ms"
run_ctl 1 -s "$T/shut.sock" stats
[ "$(cat "$T/err")" = "smcproxyctl: $T/shut.sock: connection closed by the daemon" ] ||
	fail "daemon that hangs up said: $(cat "$T/err")"

# --- bash completion -----------------------------------------------------

COMPLETION=$SRCDIR/contrib/bash-completion/smcproxyctl
[ -f "$COMPLETION" ] || fail "no $COMPLETION"
bash -n "$COMPLETION" || fail "$COMPLETION does not parse"
# complete WORDS...: what the completion offers for the last word, with a
# minimal _init_completion (bash-completion itself need not be installed)
complete_words()
{
	PATH=$(dirname "$SMCPROXYCTL"):$PATH bash -c '
_init_completion() {
	words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD
	cur=${words[cword]}; prev=${words[cword-1]}
}
. "$1"
shift
COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
_smcproxyctl
echo "${COMPREPLY[*]}"' complete "$COMPLETION" smcproxyctl "$@"
}
got=$(complete_words "")
[ "$got" = "version stats show kill disable enable drain undrain check reload shutdown log-level monitor schema help" ] ||
	fail "completion of a command: '$got'"
got=$(complete_words log-level "")
[ "$got" = "error warning info debug" ] || fail "completion after log-level: '$got'"
got=$(complete_words shutdown "")
[ "$got" = "now" ] || fail "completion after shutdown: '$got'"
got=$(complete_words enable "")
[ "$got" = "rule peer" ] || fail "completion after enable: '$got'"
got=$(complete_words -s "$SOCK" disable rule "")
[ "$got" = "x" ] || fail "completion after disable rule: '$got'"
got=$(complete_words -s "$SOCK" drain peer "")
[ "$got" = "b" ] || fail "completion after drain peer: '$got'"
got=$(complete_words -s "$SOCK" check "")
[ "$got" = "smc export b" ] || fail "completion after check: '$got'"
got=$(complete_words -s "$T/b.sock" check export "")
[ "$got" = "x" ] || fail "completion after check export (b's exports): '$got'"
got=$(complete_words -s "$SOCK" check export "")
[ "$got" = "" ] || fail "completion after check export (a has none, its rule's export is b's): '$got'"
got=$(complete_words kill "")
[ "$got" = "conn conns" ] || fail "completion after kill: '$got'"
got=$(complete_words show conns "")
[ "$got" = "rule peer state transport age dialect" ] || fail "completion after show conns: '$got'"
got=$(complete_words kill conns peer b transport "")
[ "$got" = "rdma tcp fallback" ] || fail "completion of a transport: '$got'"
got=$(complete_words show conns dialect "")
[ "$got" = "native pair smc-r" ] || fail "completion of a dialect: '$got'"
got=$(complete_words -s "$SOCK" show conns rule "")
[ "$got" = "x" ] || fail "completion of a rule name: '$got'"
got=$(complete_words -s "$SOCK" kill conns peer "")
[ "$got" = "b" ] || fail "completion of a peer name: '$got'"
got=$(complete_words -j show "")
[ "$got" = "rules peers lgrs links intercept conns smc" ] || fail "completion after show: '$got'"
got=$(complete_words stats r)
[ "$got" = "reset" ] || fail "completion after stats: '$got'"
got=$(complete_words stats sm)
[ "$got" = "smc smc_out" ] || fail "completion of a stats section: '$got'"
got=$(complete_words --p)
[ "$got" = "--prometheus" ] || fail "completion of --p: '$got'"
got=$(complete_words -s "$SOCK" kill conn "")
want=$(python3 -c 'import json,sys; print(" ".join(c["id"] for c in json.load(open(sys.argv[1]))["data"]["conns"]))' "$T/show_conns.json")
[ -n "$want" ] && [ "$got" = "$want" ] || fail "completion of kill conn: '$got', want '$want'"

# The idle connection ends (its client is killed: a reset), so that the
# daemons stop at once.
kill "$holder_pid"
wait "$holder_pid"
untrack "$holder_pid"
for i in $(seq 50); do
	[ "$(stat_get a conns_active)" = 0 ] && [ "$(stat_get b conns_active)" = 0 ] && break
	sleep 0.1
done
[ "$(stat_get a close_client_rst)" = 1 ] || fail "a did not count the reset of the idle connection"

# No C function names in the logs (issue 47), debug lines included: no
# line begins with the name of one of the daemon's functions.
if command -v nm >/dev/null 2>&1; then
	nm "$SMCPROXYD" | awk '$2 ~ /^[tT]$/ { print $3 }' | sort -u >"$T/funcs"
	[ -s "$T/funcs" ] || fail "nm found no functions in $SMCPROXYD"
	sed -n 's/^<[0-9]>smcproxyd: \([A-Za-z_0-9]*\):.*/\1/p' "$T/a.log" "$T/b.log" |
		sort -u | comm -12 - "$T/funcs" >"$T/named"
	if [ -s "$T/named" ]; then
		fail "log lines begin with function names: $(tr '\n' ' ' <"$T/named")"
	fi
fi
