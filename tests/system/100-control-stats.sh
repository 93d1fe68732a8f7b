#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Statistics through the control socket are exact: after known numbers of
# bytes went through a rule in each direction, "stats" (both daemons),
# "show conns", "show rules", "show peers" and "--prometheus" report
# exactly those bytes and connections.  "stats reset" makes every counter
# read zero and keeps the gauges; later traffic counts from zero, while the
# per-connection byte counts of "show conns" keep counting.
#
# The target is a small Python server that sends back three bytes for each
# byte it receives (so the two directions differ), the client a Python
# helper driven line by line, so that each byte count is known.
. "$(dirname "$0")/lib.sh"
smc_init
need python3 "$SMCPROXYCTL"

. "$(dirname "$0")/lib-control.sh"

pair_ports
conf_a "$T/a.conf"
conf_b "$T/b.conf"
start_helpers
start_pair

# Fresh daemons: every statistic is there, in catalogue order, and zero.
for d in a b; do
	ctlj $d "$T/$d.schema.json" schema
	ctlj $d "$T/$d.stats0.json" stats
	pycheck "fresh daemon $d" "$T/$d.schema.json" "$T/$d.stats0.json" \
		"$SMC_WORKERS" <<'EOF'
schema, r = load(A[0])["data"]["stats"], load(A[1])
eq((r["v"], r["ok"]), (1, True), "reply header")
d = r["data"]
eq(d["workers"], int(A[2]), "workers")
names = [s["name"] for s in schema]
eq(list(d["stats"]), names, "stats members (catalogue order)")
for n in names:
    eq(d["stats"][n], 0, n)
need(0 <= d["uptime_s"] - d["since_reset_s"] <= 1,
     "since_reset_s %r is not uptime_s %r before a reset" %
     (d["since_reset_s"], d["uptime_s"]))
EOF
done

# Two connections, known bytes each way.
cli open 2
set -- $REPLY
[ "${1:-}" = opened ] && [ $# -eq 3 ] || fail "client helper: $REPLY"
c0=${2#0=}
c1=${3#1=}
xfer_bytes 0 1000
xfer_bytes 0 123457
xfer_bytes 1 1048577
n0=124457 m0=$((124457 * 3)) n1=1048577 m1=$((1048577 * 3))
smc_log "conn $c0: $n0 bytes out, $m0 back; conn $c1: $n1 out, $m1 back"

# check_conns NAME: show conns, -j and table, against the bytes sent.
check_conns()
{
	local d=$1 role

	[ "$d" = a ] && role=rule || role=export
	ctlj "$d" "$T/$d.conns.json" show conns
	ctl "$d" -o all show conns >"$T/$d.conns.txt" 2>"$T/ctl.err" ||
		fail "smcproxyctl show conns on $d: $(cat "$T/ctl.err")"
	pycheck "show conns on $d" "$T/$d.conns.json" "$T/$d.conns.txt" $role \
		"$c0:$n0:$m0" "$c1:$n1:$m1" "127.0.0.1:$PORT_BPEER" \
		"127.0.0.1:$PORT_TARGET" "$SMC_WORKERS" <<'EOF'
r = load(A[0])
eq((r["v"], r["ok"]), (1, True), "reply header")
conns, role = r["data"]["conns"], A[2]
eq(r["data"]["count"], 2, "count")
eq(len(conns), 2, "number of conns")
ids = [c["id"] for c in conns]
eq(len(set(ids)), 2, "distinct ids")
want = [tuple(x.rsplit(":", 2)) for x in A[3:5]]
rows = [l.split() for l in open(A[1]).read().splitlines()]
eq(rows[0], ["ID", "W", "DIALECT", "TRANSPORT", "MODE", "ROLE", "RULE",
             "EXPORT", "PEER", "STATE", "DOWNSTREAM", "UPSTREAM", "BYTES-IN",
             "BYTES-OUT", "AGE", "IDLE"],
   "table header")
eq(len(rows), 3, "table lines")
for addr, n, m in want:
    if role == "rule":
        sel = [c for c in conns if c["downstream"] == addr]
    else:
        sel = [c for c in conns if c["bytes_in"] == int(n)]
    eq(len(sel), 1, "conns for client %s" % addr)
    c = sel[0]
    need(re.fullmatch(r"0x[0-9a-f]+", c["id"]), "id %r" % c["id"])
    need(0 <= c["worker"] < int(A[7]), "worker %r" % c["worker"])
    eq(c["mode"], "fallback", "mode")
    eq((c["dialect"], c["transport"]), ("native", "fallback"), "dialect, transport")
    eq(c["role"], role, "role")
    eq(c["rule"], "x" if role == "rule" else "", "rule")
    eq(c["export"], "x", "export")
    eq(c["peer"], "b" if role == "rule" else "a", "peer")
    eq(c["state"], "relay", "state")
    eq(c["upstream"], A[5] if role == "rule" else A[6], "upstream")
    need(c["downstream"].startswith("127.0.0.1:"), "downstream %r" % c["downstream"])
    eq(c["bytes_in"], int(n), "bytes_in of %s" % addr)
    eq(c["bytes_out"], int(m), "bytes_out of %s" % addr)
    need(isinstance(c["age_s"], (int, float)) and 0 <= c["age_s"] < 120, "age_s %r" % c["age_s"])
    need(0 <= c["idle_s"] <= c["age_s"], "idle_s %r" % c["idle_s"])
    row = [x for x in rows[1:] if x[0] == c["id"]]
    eq(len(row), 1, "table rows for %s" % c["id"])
    row = row[0]
    eq(len(row), 16, "table columns")
    eq(row[1:12], [str(c["worker"]), "native", "fallback", "fallback", role,
                   c["rule"] or "-", "x", c["peer"], "relay", c["downstream"],
                   c["upstream"]],
       "table row of %s" % c["id"])
    eq(row[12:14], [n, m], "table bytes of %s" % c["id"])
EOF
}
check_conns a
check_conns b

# check_stats NAME JSON:... : "stats" -j, table and --prometheus of NAME
# agree and hold exactly the given values.
check_stats()
{
	local d=$1

	shift
	ctlj "$d" "$T/$d.schema.json" schema
	ctlj "$d" "$T/$d.stats.json" stats
	ctl "$d" stats >"$T/$d.stats.txt" 2>"$T/ctl.err" ||
		fail "smcproxyctl stats on $d: $(cat "$T/ctl.err")"
	ctl "$d" --prometheus >"$T/$d.prom" 2>"$T/ctl.err" ||
		fail "smcproxyctl --prometheus on $d: $(cat "$T/ctl.err")"
	pycheck "stats of $d" "$T/$d.schema.json" "$T/$d.stats.json" \
		"$T/$d.stats.txt" "$T/$d.prom" "$@" <<'EOF'
schema, r = load(A[0])["data"]["stats"], load(A[1])
st = r["data"]["stats"]
for kv in A[4:]:
    k, v = kv.split("=")
    eq(st[k], int(v), k)
# the table: same values, units from the schema
lines = open(A[2]).read().splitlines()
need(re.fullmatch(r"%d workers, up \S+, counters cover the last \S+" %
                  r["data"]["workers"], lines[0]), "table title %r" % lines[0])
eq(lines[1], "", "blank line after the title")
eq(lines[2].split(), ["STATISTIC", "VALUE", "UNIT", "DESCRIPTION"], "table header")
# of the counters per decline code only those that counted something
shown = [s for s in schema if "code" not in s["labels"] or st[s["name"]]]
need(len(shown) < len(schema), "no decline code left out of the table")
eq(len(lines), 3 + len(shown), "table lines")
for s, l in zip(shown, lines[3:]):
    eq(l.split(None, 3), [s["name"], str(st[s["name"]]), s["unit"], s["description"]],
       "table row")
# Prometheus: a HELP and TYPE per family, a sample per statistic
prom = open(A[3]).read().splitlines()
seen, samples = {}, {}
for l in prom:
    if "smcproxyd_build_info" in l:
        continue
    # a counter's family and samples are <name>_total
    m = re.fullmatch(r"# (HELP|TYPE) smcproxyd_([a-z_]+) (.*)", l)
    if m:
        fam = m.group(2)
        if m.group(1) == "TYPE" and m.group(3) == "counter":
            need(fam.endswith("_total"), "counter %s without _total" % fam)
        if fam.endswith("_total"):
            fam = fam[:-len("_total")]
        eq(fam in seen and m.group(1) in seen[fam], False,
           "duplicate %s line for %s" % (m.group(1), fam))
        seen.setdefault(fam, {})[m.group(1)] = m.group(3)
        continue
    if l.startswith("#"):
        continue
    m = re.fullmatch(r'smcproxyd_([a-z_]+)(\{[a-z_]+="[^"]*"(?:,[a-z_]+="[^"]*")*\})? (\S+)', l)
    need(m, "not a Prometheus sample: %r" % l)
    fam = m.group(1)
    if fam.endswith("_total"):
        fam = fam[:-len("_total")]
        eq(seen.get(fam, {}).get("TYPE"), "counter", "TYPE of %s" % m.group(1))
    if fam.rsplit("_", 1)[-1] in ("bucket", "sum", "count") and fam not in seen:
        fam = fam.rsplit("_", 1)[0]
    need("TYPE" in seen.get(fam, {}), "sample before its TYPE: %r" % l)
    samples[m.group(1).removesuffix("_total") + (m.group(2) or "")] = \
        float(m.group(3))
metrics = {s["metric"] for s in schema}
eq(len([k for k in samples if k.split("{")[0] in metrics]), len(schema),
   "number of samples of the catalogue")
# counters as totals ("stats reset" does not rewind them), gauges as now
tot = r["data"]["totals"]
for s in schema:
    lab = ",".join('%s="%s"' % kv for kv in s["labels"].items())
    lab = "{%s}" % lab if lab else ""
    key = s["metric"] + lab
    want = (tot if s["kind"] == "counter" else st)[s["name"]]
    eq(samples.get(key), round(want * s.get("scale", 1), 6),
       "Prometheus %s" % key)
    eq(seen[s["metric"]]["TYPE"], s["kind"], "TYPE of %s" % s["metric"])
    eq(seen[s["metric"]]["HELP"], s["help"], "HELP of %s" % s["metric"])
    if s["name"].startswith("close_"):
        eq((s["metric"], lab), ("conns_closed", '{reason="%s"}' % s["name"][6:]),
           "family of %s" % s["name"])
    elif s["name"].startswith("declines_"):
        d, code = s["name"][len("declines_"):].split("_", 1)
        eq((s["metric"], s["labels"]["direction"], s["labels"]["code"]),
           ("declines", d, code), "family of %s" % s["name"])
    elif s["name"] in ("tx_cnt", "busy_poll_time_us"):
        eq((s["metric"], lab), ({"tx_cnt": "tx_requests",
                                 "busy_poll_time_us": "busy_poll_seconds"}
                                [s["name"]], ""), "family of %s" % s["name"])
    elif "_cnt" not in s["name"] and not s["name"].endswith("_used"):
        eq((s["metric"], lab), (s["name"], ""), "family of %s" % s["name"])
EOF
}

check_stats a conns_accepted=2 conns_from_peers=0 conns_active=2 \
	tx_bytes=$((n0 + n1)) rx_bytes=$((m0 + m1)) close_client_fin=0 \
	conns_fallback=2
check_stats b conns_accepted=0 conns_from_peers=2 conns_active=2 \
	tx_bytes=$((m0 + m1)) rx_bytes=$((n0 + n1)) close_client_fin=0
pycheck "request counters" "$T/a.stats.json" "$T/b.stats.json" <<'EOF'
for p in A:
    st = load(p)["data"]["stats"]
    for c, b in (("tx_cnt", "tx_bytes"), ("rx_cnt", "rx_bytes")):
        need(1 <= st[c] <= st[b], "%s %d for %s %d" % (c, st[c], b, st[b]))
EOF

# show rules and show peers count the open connections.
for d in a b; do
	ctlj $d "$T/$d.rules.json" show rules
	ctlj $d "$T/$d.peers.json" show peers
	ctl $d show rules >"$T/$d.rules.txt" || fail "show rules on $d"
	ctl $d show peers >"$T/$d.peers.txt" || fail "show peers on $d"
done
pycheck "show rules / show peers" "$T/a.rules.json" "$T/b.rules.json" \
	"$T/a.peers.json" "$T/b.peers.json" "$PORT_RULE" "$PORT_TARGET" \
	"$PORT_BPEER" "$PORT_APEER" <<'EOF'
ar, br = load(A[0])["data"], load(A[1])["data"]
eq(ar["rules"], [{"name": "x", "listen": "127.0.0.1:" + A[4], "peer": "b",
                  "export": "x", "idle_timeout_s": 0, "conns": 2, "enabled": True,
                  "accepting": True, "kind": "peer"}], "a rules")
eq(ar["exports"], [], "a exports")
eq(br["rules"], [], "b rules")
eq(br["exports"], [{"name": "x", "target": "127.0.0.1:" + A[5], "peers": ["a"],
                    "connect_timeout_s": 5, "conns": 2, "kind": "peers"}],
   "b exports")
# No RDMA device on this host: a, which has the rule, tried a link group
# and declined it itself (NOSMCRDEV, backing off: not the peer's error);
# it reached b over TCP.  b never tried to reach a.
want = {
    "b": {"fallback_reason": "declined by us", "decline_code": "0x03030002",
          "decline_name": "NOSMCRDEV", "reachable": True},
    "a": {"fallback_reason": "no link group tried yet",
          "decline_code": "0x00000000", "decline_name": "", "reachable": None},
}
for p, name, port in ((A[2], "b", A[6]), (A[3], "a", A[7])):
    peers = load(p)["data"]["peers"]
    need(len(peers) == 1, "one peer expected: %r" % peers)
    left = peers[0].pop("backoff_left_ms")
    need(isinstance(left, int) and left >= 0, "backoff_left_ms %r" % left)
    need((left > 0) == (name == "b"), "backoff_left_ms %r for %s" % (left, name))
    w = {"name": name, "address": "127.0.0.1:" + port, "auth": "insecure",
         "mode": "fallback", "declined_by_peer": False, "lgrs": 0, "conns": 2,
         "last_error": "", "last_error_code": "", "last_error_at": "",
         "last_error_age_s": None, "draining": False,
         "device": "", "source": "", "dscp": 0, "priority": 0,
         "qp_timeout": 15, "retry_count": 7, "rnr_retry": 7}
    w.update(want[name])
    eq(peers, [w], "peers")
EOF
grep -Eq '^x +127\.0\.0\.1:'"$PORT_RULE"' +peer +b +x +0 +2 +yes +yes +-$' "$T/a.rules.txt" ||
	fail "show rules table on a: $(cat "$T/a.rules.txt")"
grep -Eq '^x +127\.0\.0\.1:'"$PORT_TARGET"' +peers +5 +2 +a +-$' "$T/b.rules.txt" ||
	fail "show rules table on b: $(cat "$T/b.rules.txt")"
grep -Eq '^b +127\.0\.0\.1:'"$PORT_BPEER"' +insecure +fallback +2 +NOSMCRDEV +yes +no +- +-$' \
	"$T/a.peers.txt" || fail "show peers table on a: $(cat "$T/a.peers.txt")"
ctl a -o all show peers >"$T/a.peers-all.txt" ||
	fail "show peers -o all on a"
grep -Eq '^b +127\.0\.0\.1:'"$PORT_BPEER"' +- +0 +insecure +fallback +2 +NOSMCRDEV +0x03030002 +declined by us +[0-9][0-9hms]* +yes +no +- +- +-$' \
	"$T/a.peers-all.txt" || fail "show peers -o all on a: $(cat "$T/a.peers-all.txt")"

# Connection 0 ends in order; both daemons count it.
cli close 0
[ "$REPLY" = "close 0 eof extra=0" ] || fail "closing connection 0: $REPLY"
wait_stat a conns_active 1
wait_stat b conns_active 1
grep -qx "close 127\.0\.0\.1:[0-9]* in=$n0 out=$m0 end=eof" "$T/server.log" ||
	fail "the server did not see $n0 bytes in, $m0 out and an EOF"
check_stats a conns_accepted=2 conns_active=1 close_client_fin=1 \
	tx_bytes=$((n0 + n1)) rx_bytes=$((m0 + m1))
check_stats b conns_from_peers=2 conns_active=1 close_client_fin=1 \
	tx_bytes=$((m0 + m1)) rx_bytes=$((n0 + n1))

# stats reset on a: counters zero, the gauge keeps its value, b untouched.
ctl a stats reset >"$T/reset.out" 2>&1 || fail "stats reset: $(cat "$T/reset.out")"
[ "$(cat "$T/reset.out")" = "statistics reset: counters restart from zero" ] ||
	fail "stats reset printed: $(cat "$T/reset.out")"
ctlj a "$T/a.stats.json" stats
pycheck "counters after stats reset" "$T/a.schema.json" "$T/a.stats.json" <<'EOF'
schema, d = load(A[0])["data"]["stats"], load(A[1])["data"]
# the gauges as they are: one connection open, no RDMA buffers here
gauges = {"conns_active": 1, "preauth_conns": 0, "rdma_buf_bytes": 0,
          "rdma_buf_bytes_used": 0, "rdma_ring_bytes": 0, "conns_resuming": 0}
for s in schema:
    eq(d["stats"][s["name"]], gauges.get(s["name"], 0),
       "%s (%s)" % (s["name"], s["kind"]))
eq(sorted(s["name"] for s in schema if s["kind"] == "gauge"), sorted(gauges),
   "gauges")
need(0 <= d["since_reset_s"] <= 2, "since_reset_s %r" % d["since_reset_s"])
need(d["uptime_s"] >= d["since_reset_s"], "uptime_s %r" % d["uptime_s"])
EOF
grep -q 'statistics reset by uid 0 pid' "$T/a.log" ||
	fail "the reset is not logged with its uid and pid"
check_stats b conns_from_peers=2 conns_active=1 close_client_fin=1 \
	tx_bytes=$((m0 + m1)) rx_bytes=$((n0 + n1))
out=$(ctl b -j stats reset) || fail "stats reset -j on b"
[ "$out" = '{"v":1,"ok":true,"data":{"message":"statistics reset: counters restart from zero"}}' ] || fail "stats reset -j replied $out"

# Traffic after the reset counts from zero; the connection's own byte
# counts keep counting.
xfer_bytes 1 777
check_stats a conns_accepted=0 conns_active=1 tx_bytes=777 rx_bytes=2331 \
	close_client_fin=0
check_stats b conns_from_peers=0 conns_active=1 tx_bytes=2331 rx_bytes=777 \
	close_client_fin=0
n1=$((n1 + 777)) m1=$((m1 + 2331))
ctlj a "$T/a.conns.json" show conns
pycheck "show conns after the reset" "$T/a.conns.json" "$c1" "$n1" "$m1" <<'EOF'
c = load(A[0])["data"]["conns"]
eq([(x["downstream"], x["bytes_in"], x["bytes_out"]) for x in c],
   [(A[1], int(A[2]), int(A[3]))], "conns")
EOF

cli close 1
[ "$REPLY" = "close 1 eof extra=0" ] || fail "closing connection 1: $REPLY"
wait_stat a conns_active 0
wait_stat b conns_active 0
grep -qx "close 127\.0\.0\.1:[0-9]* in=$n1 out=$m1 end=eof" "$T/server.log" ||
	fail "the server did not see $n1 bytes in, $m1 out and an EOF"
cli open 1
xfer_bytes 2 5
cli close 2
[ "$REPLY" = "close 2 eof extra=0" ] || fail "closing connection 2: $REPLY"
wait_stat a conns_active 0
wait_stat b conns_active 0
check_stats a conns_accepted=1 conns_active=0 tx_bytes=782 rx_bytes=2346 \
	close_client_fin=2 conns_fallback=1
check_stats b conns_from_peers=1 conns_active=0 tx_bytes=2346 rx_bytes=782 \
	close_client_fin=2
for d in a b; do
	out=$(ctl $d show conns) || fail "show conns on $d"
	[ "$out" = "no connections" ] || fail "show conns on $d with none open: $out"
done
printf 'quit\n' >&"${CLI[1]}"
# shellcheck disable=SC2154 # cli_pid: set by start_helpers (lib-control.sh)
wait "$cli_pid" || fail "client helper exited with status $?"
untrack "$cli_pid"
