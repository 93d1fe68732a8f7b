#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Kernel SMC-R peers in the control socket's listings (issue 47 item 3,
# issue 43), on loopback with tests/tools/ksmcclient as a kernel client
# of an export's smc_listen and tests/tools/ksmcdecline as the kernel
# server of a rule's target_smc (at 127.0.0.2, so the two are two hosts):
#   - show peers lists each kernel host by address: its connections, the
#     last DECLINE (ours NOSMCRDEV to the client, the server's NOUEID),
#     who sent it, its budget against kernel_smc's per-host limits, and
#     the rate limit once the client keeps failing its handshakes;
#   - show conns gives a kernel connection its host as PEER, its DIALECT
#     and TRANSPORT as the connection log does, and filters by them, by
#     peer host and by rule; an unknown filter or value is an error;
#   - show smc lists the kernel peers' connections only, as smcss does:
#     the peer's address, transport, decline, group and link;
#   - show rules gives smc_listen and target_smc their kind and why they
#     are TCP only here (loopback; no program; an empty allow list), and
#     start and reload say it in the log, once per reason, with its fix;
#   - stats SECTION keeps one section, -z hides zeros, a bad section is
#     an error naming the sections.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-control.sh"
smc_init

KC=$SMC_BUILDDIR/tests/tools/ksmcclient
KD=$SMC_BUILDDIR/tests/tools/ksmcdecline
OBJ=$SMC_BUILDDIR/src/bpf/smc_opt.bpf.o
[ -x "$KC" ] && [ -x "$KD" ] && [ -f "$OBJ" ] ||
	skip "ksmcclient, ksmcdecline or smc_opt.bpf.o not built (no clang or libbpf)"
[ "$(id -u)" = 0 ] || skip "not root: the BPF program cannot be loaded"
smc_cgroup
need socat python3

set -- $(free_ports 5)
PORT_SMC=$1 PORT_TARGET=$2 PORT_RULE=$3 PORT_SRV=$4 PORT_SMC2=$5
socat "TCP-LISTEN:$PORT_TARGET,bind=127.0.0.1,reuseaddr,fork" EXEC:cat \
	>"$T/echo.log" 2>&1 &
track $! "$T/echo.log"
wait_listen "$PORT_TARGET" 10

# conf NAME SMC_PORT ALLOW BPF_OBJECT
conf()
{
	cat >"$T/$1.conf" <<EOF
smcproxyd: {
	name = "$1";
	control_socket = "$T/$1.sock";
	workers = $SMC_WORKERS;
	log_level = "debug";
};
rules = (
	{ name = "k"; listen = "127.0.0.1:$PORT_RULE"; target_smc = "127.0.0.2:$PORT_SRV"; }
);
exports = (
	{ name = "x"; target = "127.0.0.1:$PORT_TARGET"; smc_listen = "127.0.0.1:$2"; }
);
kernel_smc: {
	ueids = [ "SMCPROXYD-LAB" ];
	allow = [ $3 ];
	bpf_object = "$4";
	max_pending_per_host = 3;
};
EOF
}

# kc ARGS...: ksmcclient to b's smc_listen; its output in $out
kc()
{
	out=$("$KC" -c "127.0.0.1:$PORT_SMC" -o "$OBJ" "$@" 2>&1)
	kc_rc=$?
}

conf b "$PORT_SMC" '"127.0.0.0/8"' "$OBJ"
start_daemon b "$T/b.conf"
wait_listen "$PORT_SMC" 10 "$b_pid"
wait_listen "$PORT_RULE" 10 "$b_pid"

# No kernel host yet: show peers has none, and prints no table for them.
ctlj b "$T/peers0.json" show peers
pycheck "show peers before any kernel host" "$T/peers0.json" <<'EOF'
d = load(A[0])["data"]
eq(d["peers"], [], "peers")
eq(d["kernel_hosts"], [], "kernel_hosts")
EOF
[ "$(ctl b show peers)" = "no peers" ] ||
	fail "show peers without kernel hosts: $(ctl b show peers)"

# A good PROPOSAL: our DECLINE NOSMCRDEV, then TCP.
kc -n 100000
[ "$kc_rc" = 0 ] && printf '%s\n' "$out" | grep -q '^DECLINE NOSMCRDEV 0x03030002 v2$' ||
	fail "a good PROPOSAL: want DECLINE NOSMCRDEV and the data: $out"

# The server at 127.0.0.2 declines our PROPOSAL itself (NOUEID).
"$KD" -l "127.0.0.2:$PORT_SRV" -o "$OBJ" -d 0x03030008 >"$T/kd.log" 2>&1 &
kd_pid=$!
track "$kd_pid" "$T/kd.log"
wait_listen "$PORT_SRV" 10 "$kd_pid"
echo_roundtrip 127.0.0.1 "$PORT_RULE" 50000 ||
	fail "target_smc: the bytes did not come back"
wait "$kd_pid" || fail "ksmcdecline: $(cat "$T/kd.log")"
untrack "$kd_pid"

# A plain TCP client of smc_listen (no option on its SYN) held open, for
# show conns; the echo comes back once it is relayed.
python3 - "$PORT_SMC" "$T/held" <<'PY' &
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
s.sendall(b"ping")
assert s.recv(4) == b"ping"
open(sys.argv[2], "w").write("%d\n" % s.getsockname()[1])
time.sleep(120)
PY
held_pid=$!
track "$held_pid"
for i in $(seq 100); do
	[ -s "$T/held" ] && break
	sleep 0.1
done
[ -s "$T/held" ] || fail "the held client got no echo"
held_port=$(cat "$T/held")

ctlj b "$T/peers1.json" show peers
ctl b show peers >"$T/peers1.txt" || fail "show peers table"
ctl b -o all show peers >"$T/peers1-all.txt" || fail "show peers -o all"
pycheck "show peers with kernel hosts" "$T/peers1.json" "$T/peers1.txt" \
	"$T/peers1-all.txt" <<'EOF'
d = load(A[0])["data"]
hosts = {h["host"]: h for h in d["kernel_hosts"]}
eq(sorted(hosts), ["127.0.0.1", "127.0.0.2"], "kernel hosts")
members = ["host", "lgrs", "links", "conns", "conns_rdma", "conns_total",
           "decline_code", "decline_name", "declined_by_peer", "decline_at",
           "decline_age_s", "rate_limited", "budget_pending",
           "max_pending_per_host", "budget_lgrs", "max_lgrs_per_host",
           "budget_conns", "max_conns_per_host", "budget_full", "memory",
           "budget_memory", "memory_per_host"]
c, s = hosts["127.0.0.1"], hosts["127.0.0.2"]
for h in (c, s):
    eq(sorted(h), sorted(members), "members of " + h["host"])
    eq((h["lgrs"], h["links"], h["conns_rdma"]), (0, 0, 0),
       "groups of " + h["host"] + " (no RDMA here)")
    eq((h["budget_pending"], h["max_pending_per_host"], h["budget_lgrs"],
        h["max_lgrs_per_host"], h["budget_conns"], h["max_conns_per_host"],
        h["budget_full"]), (0, 3, 0, 16, 0, 4096, ""), "budget of " + h["host"])
    eq((h["memory"], h["budget_memory"]), (0, 0),
       "registered memory of " + h["host"] + " (no RDMA here)")
    need(h["memory_per_host"] >= 1 << 20,
         "memory_per_host %r" % h["memory_per_host"])
    eq(h["rate_limited"], False, "rate_limited of " + h["host"])
    need(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", h["decline_at"]),
         "decline_at %r" % h["decline_at"])
    need(0 <= h["decline_age_s"] < 120, "decline_age_s %r" % h["decline_age_s"])
eq((c["decline_code"], c["decline_name"], c["declined_by_peer"]),
   ("0x03030002", "NOSMCRDEV", False), "the client's last decline (ours)")
eq((c["conns"], c["conns_total"]), (1, 2), "the client's connections (one held)")
eq((s["decline_code"], s["decline_name"], s["declined_by_peer"]),
   ("0x03030008", "NOUEID", True), "the server's last decline (its own)")
eq((s["conns"], s["conns_total"]), (0, 1), "the server's connections")
t = open(A[1]).read().split("\n\n")
eq(len(t), 2, "show peers: the peers' table and the kernel hosts'")
eq(t[0], "no peers", "no native peers")
rows = [l.split() for l in t[1].splitlines()]
eq(rows[0], ["KERNEL-HOST", "LGRS", "LINKS", "CONNS", "DECLINE", "BY",
             "DECLINE-AGE", "RATE-LIMITED", "BUDGET"], "kernel hosts header")
row = [r for r in rows[1:] if r[0] == "127.0.0.1"][0]
eq(row[:6] + row[7:], ["127.0.0.1", "0", "0", "1", "NOSMCRDEV", "us", "no",
                       "pending", "0/3", "lgrs", "0/16", "conns", "0/4096",
                       "memory", "0.0/%.1f" % (c["memory_per_host"] / 2**20),
                       "MiB"],
   "the client's row")
row = [r for r in rows[1:] if r[0] == "127.0.0.2"][0]
eq(row[:6], ["127.0.0.2", "0", "0", "0", "NOUEID", "host"], "the server's row")
head = open(A[2]).read().split("\n\n")[1].splitlines()[0].split()
eq(head, ["KERNEL-HOST", "LGRS", "LINKS", "CONNS", "CONNS-RDMA", "CONNS-TOTAL",
          "DECLINE", "CODE", "BY", "DECLINE-AGE", "RATE-LIMITED", "BUDGET",
          "BUDGET-FULL"], "-o all: kernel hosts header")
EOF

# show conns: the held one is the kernel host's, over TCP.
ctlj b "$T/conns.json" show conns
ctl b show conns >"$T/conns.txt" || fail "show conns table"
pycheck "show conns of a kernel client" "$T/conns.json" "$T/conns.txt" \
	"127.0.0.1:$held_port" <<'EOF'
d = load(A[0])["data"]
eq(d["count"], 1, "count")
c = d["conns"][0]
eq((c["dialect"], c["transport"], c["mode"], c["peer"], c["role"],
    c["export"], c["downstream"], c["state"]),
   ("smc-r", "tcp", "fallback", "127.0.0.1", "export", "x", A[2], "relay"),
   "the held connection")
rows = [l.split() for l in open(A[1]).read().splitlines()]
eq(rows[0], ["ID", "DIALECT", "TRANSPORT", "ROLE", "RULE", "PEER", "STATE",
             "DOWNSTREAM", "BYTES-IN", "BYTES-OUT", "AGE", "IDLE"], "header")
eq(rows[1][:8], [c["id"], "smc-r", "tcp", "export", "-", "127.0.0.1", "relay",
                 A[2]], "row")
EOF

# show smc: the same connection, smcss-like; nothing of another dialect
ctlj b "$T/smc.json" show smc
ctl b show smc >"$T/smc.txt" || fail "show smc table"
ctl b show smc dialect native >"$T/out" 2>"$T/err" && fail "show smc took dialect native"
grep -q 'show smc lists the SMC-R dialect only; show conns dialect native lists the others' "$T/err" ||
	fail "show smc dialect native: $(cat "$T/err")"
pycheck "show smc" "$T/smc.json" "$T/smc.txt" "127.0.0.1:$held_port" <<'EOF'
d = load(A[0])["data"]
eq(d["count"], 1, "count")
c = d["conns"][0]
eq((c["dialect"], c["peer_address"], c["transport"], c["state"]),
   ("smc-r", A[2], "tcp", "relay"), "the held connection")
rows = [l.split() for l in open(A[1]).read().splitlines()]
eq(rows[0], ["ID", "ROLE", "STATE", "PEER-ADDRESS", "TRANSPORT", "DECLINE",
             "LGR", "LINK", "BYTES-IN", "BYTES-OUT", "AGE"], "header")
eq(rows[1][:8], [c["id"], "export", "relay", A[2], "tcp", "-", "-", "-"],
   "row")
EOF

# filters: each that matches it lists it, each that does not lists none
for f in "dialect smc-r" "transport tcp" "transport fallback" \
	"peer 127.0.0.1" "dialect smc-r peer 127.0.0.1 transport tcp"; do
	ctlj b "$T/f.json" show conns $f
	n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["data"]["count"])' "$T/f.json")
	[ "$n" = 1 ] || fail "show conns $f: $n connections, want the held one"
done
for f in "dialect native" "dialect pair" "transport rdma" "peer 127.0.0.2" \
	"rule k"; do
	ctlj b "$T/f.json" show conns $f
	n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["data"]["count"])' "$T/f.json")
	[ "$n" = 0 ] || fail "show conns $f: $n connections, want none"
done
ctl b show conns dialect klingon >"$T/out" 2>"$T/err" && fail "an unknown dialect was taken"
grep -q 'unknown dialect "klingon" (want native, pair or smc-r)' "$T/err" ||
	fail "unknown dialect: $(cat "$T/err")"
ctl b show conns transport carrier-pigeon >"$T/out" 2>"$T/err" &&
	fail "an unknown transport was taken"
grep -q 'unknown transport "carrier-pigeon" (want rdma, tcp or fallback)' "$T/err" ||
	fail "unknown transport: $(cat "$T/err")"
ctl b show conns colour red >"$T/out" 2>"$T/err"
[ $? = 2 ] && grep -q 'show conns: unknown filter "colour"; valid: rule peer state transport age dialect' "$T/err" ||
	fail "unknown filter: $(cat "$T/err")"
ctl b show conns dialect >"$T/out" 2>"$T/err"
[ $? = 2 ] && grep -q '"dialect" needs a value' "$T/err" ||
	fail "a filter without its value: $(cat "$T/err")"

# show rules: kinds, and why both are TCP only on loopback
ctlj b "$T/rules.json" show rules
ctl b show rules >"$T/rules.txt" || fail "show rules table"
pycheck "show rules" "$T/rules.json" "$T/rules.txt" "$PORT_SRV" "$PORT_SMC" <<'EOF'
d = load(A[0])["data"]
r, e = d["rules"][0], d["exports"][0]
eq((r["kind"], r["target_smc"], r["smc_ready"], r["smc_status"]),
   ("target_smc", "127.0.0.2:" + A[2], False, "TCP only: loopback, no RDMA device"),
   "the target_smc rule")
eq((e["kind"], e["smc_listen"], e["smc_ready"], e["smc_status"]),
   ("smc_listen", "127.0.0.1:" + A[3], False, "TCP only: loopback, no RDMA device"),
   "the smc_listen export")
t = open(A[1]).read()
need(re.search(r"^RULE +LISTEN +KIND +PEER +EXPORT +IDLE-TIMEOUT +CONNS +ENABLED +ACCEPTING +SMC-R$", t, re.M), t)
need(re.search(r"^k +127\.0\.0\.1:\d+ +target_smc +- +- +0 +0 +yes +yes +TCP only: loopback, no RDMA device$", t, re.M), t)
need(re.search(r"^x +127\.0\.0\.1:\d+ +smc_listen +5 +1 +TCP only: loopback, no RDMA device$", t, re.M), t)
EOF

# A client that keeps failing its CLC (garbage instead of a PROPOSAL) is
# rate limited (10 at once, then one a second): show peers says so.  The
# 20 at once, so that a slow machine's second does not refill the bucket
# between them (one after another, 197 passed the limit unnoticed once
# under load).
kcs=
for i in $(seq 20); do
	kc -r &
	kcs="$kcs $!"
done
# shellcheck disable=SC2086 # the pids
wait $kcs
ctlj b "$T/peers2.json" show peers
pycheck "a rate-limited kernel host" "$T/peers2.json" <<'EOF'
h = [h for h in load(A[0])["data"]["kernel_hosts"] if h["host"] == "127.0.0.1"][0]
eq(h["rate_limited"], True, "rate_limited after failed handshakes")
EOF
ctl b show peers | grep -Eq '^127\.0\.0\.1 +0 +0 +1 +NOSMCRDEV +us +[0-9hms.]+ +yes +pending' ||
	fail "show peers table: the client not rate limited: $(ctl b show peers)"

# stats SECTION, -z
ctlj b "$T/stats.json" stats smc
pycheck "stats smc" "$T/stats.json" <<'EOF'
d = load(A[0])["data"]
need(len(d["stats"]) > 10, "stats smc: %d statistics" % len(d["stats"]))
need(all(k == "smc" or k.startswith("smc_") for k in d["stats"]),
     "stats smc: %r" % [k for k in d["stats"] if not k.startswith("smc_")])
eq(list(d["totals"]), list(d["stats"]), "totals of the section")
EOF
ctl b stats smc >"$T/stats.txt" || fail "stats smc table"
ctl b -z stats smc >"$T/statsz.txt" || fail "stats -z smc table"
ctl b --nonzero stats >"$T/statsz-all.txt" || fail "stats --nonzero"
pycheck "stats tables" "$T/stats.txt" "$T/statsz.txt" "$T/statsz-all.txt" <<'EOF'
def rows(p):
    return [l.split() for l in open(p).read().split("\n\n")[1].splitlines()[1:]]
a, z, za = rows(A[0]), rows(A[1]), rows(A[2])
need(all(r[0].startswith("smc_") for r in a), "stats smc: other sections")
need(any(r[1] == "0" for r in a), "stats smc: no zero to hide")
eq([r for r in a if r[1] != "0"], z, "-z: the rows that are not 0")
need(len(z) > 3, "-z: %d rows" % len(z))
need(all(r[1] != "0" for r in za), "--nonzero: a zero row")
need(any(r[0] == "smc_opt_absent" for r in za), "--nonzero: smc_opt_absent missing")
EOF
ctl b stats klingon >"$T/out" 2>"$T/err" && fail "an unknown section was taken"
grep -q 'stats: no statistics in section "klingon" (sections: conns, .*smc' "$T/err" ||
	fail "unknown section: $(cat "$T/err")"
ctl b stats smc extra >"$T/out" 2>"$T/err"
[ $? = 2 ] && grep -q '"stats" takes at most one argument, SECTION' "$T/err" ||
	fail "stats with two sections: $(cat "$T/err")"
[ "$(ctl b stats reset)" = "statistics reset: counters restart from zero" ] ||
	fail "stats reset is no longer stats reset"

# Why TCP only: no program (c), and an empty allow list (after a reload)
conf c "$PORT_SMC2" '"127.0.0.0/8"' "$T/nonexistent.bpf.o"
sed -i "s/$PORT_RULE/$(free_ports 1)/" "$T/c.conf"
start_daemon c "$T/c.conf"
wait_listen "$PORT_SMC2" 10 "$c_pid"
ctlj c "$T/rules-c.json" show rules
sed -i 's|allow = \[ "127.0.0.0/8" \];|allow = [ ];|' "$T/b.conf"
ctl b reload >/dev/null || fail "reload with an empty allow list refused"
ctlj b "$T/rules-b.json" show rules
pycheck "why TCP only" "$T/rules-c.json" "$T/rules-b.json" <<'EOF'
c, b = load(A[0])["data"], load(A[1])["data"]
for x in c["rules"] + c["exports"]:
    eq(x["smc_status"], "TCP only: SMC-R option program not attached",
       "without the program: " + x["name"])
eq(b["exports"][0]["smc_status"], "TCP only: kernel_smc.allow is empty",
   "smc_listen with an empty allow")
eq(b["rules"][0]["smc_status"], "TCP only: loopback, no RDMA device",
   "target_smc is not judged by allow")
EOF
# ... and start and reload said so, one line per reason, with the fix
why_lines() {
	grep -c "kernel SMC-R peers of $2 get TCP: $3" "$T/$1.log"
}
[ "$(why_lines b "export x" "kernel_smc.allow is empty; list the kernel SMC-R clients. networks in kernel_smc.allow")" = 1 ] ||
	fail "the reload did not say why x gets TCP, with the fix: $(grep 'get TCP' "$T/b.log")"
[ "$(why_lines b "rule k, export x" "loopback, no RDMA device; use an address of an interface on an RDMA device")" = 1 ] ||
	fail "the start did not say once why k and x get TCP: $(grep 'get TCP' "$T/b.log")"
[ "$(why_lines b "rule k" "loopback, no RDMA device")" = 1 ] ||
	fail "the reload did not say why k gets TCP: $(grep 'get TCP' "$T/b.log")"
[ "$(why_lines c "rule k, export x" "SMC-R option program not attached: .*nonexistent.bpf.o.*; run as root, or under smcproxyd-bpf.service")" = 1 ] ||
	fail "without the program, no line with the fix: $(grep 'get TCP' "$T/c.log")"
exit 0
