#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# metrics_listen: both daemons of a pair serve GET /metrics over HTTP, and
# python3-prometheus-client's parser reads what they say after known
# traffic: every counter as _total from the totals (equal, sample for
# sample, to "smcproxyctl --prometheus", and not rewound by "stats reset"),
# the close reasons as one family with a reason label, build_info, the
# start time, peers (up, mode), the connections open per rule, export
# and peer while one is held open, and per rule and export the totals
# since the start (connections ended by transport, bytes, closes).  GET
# /metrics has the same families as smcproxyctl --prometheus, both follow
# Prometheus' naming conventions and "promtool check metrics" finds
# nothing in either (CI fails when promtool is missing; elsewhere that is
# logged and the lint left out).  Another path is 404, POST is 405, a
# bad metrics_listen is a config error with file:line, and a reload
# cannot move the endpoint.
. "$(dirname "$0")/lib.sh"
smc_init
need "$SMCPROXYCTL"
PY=
for p in python3 /usr/bin/python3; do
	if command -v "$p" >/dev/null 2>&1 &&
		"$p" -c 'import prometheus_client.parser' 2>/dev/null; then
		PY=$p
		break
	fi
done
[ -n "$PY" ] || skip "python3-prometheus-client not installed"

pair_ports
set -- $(free_ports 2)
PORT_AMET=$1
PORT_BMET=$2
conf_a "$T/a.conf"
conf_b "$T/b.conf"
sed -i "s|^\tname = \"a\";|&\n\tmetrics_listen = \"127.0.0.1:$PORT_AMET\";|" "$T/a.conf"
sed -i "s|^\tname = \"b\";|&\n\tmetrics_listen = \"127.0.0.1:$PORT_BMET\";|" "$T/b.conf"

# A bad address is refused with the file and line of the key.
sed 's|metrics_listen = "[^"]*"|metrics_listen = "127.0.0.1"|' "$T/a.conf" \
	>"$T/bad.conf"
line=$(grep -n metrics_listen "$T/bad.conf" | cut -d: -f1)
if "$SMCPROXYD" -n -c "$T/bad.conf" >"$T/bad.out" 2>&1; then
	fail "smcproxyd -n accepts metrics_listen = \"127.0.0.1\""
fi
grep -q "^$T/bad.conf:$line: smcproxyd.metrics_listen: invalid address" \
	"$T/bad.out" ||
	fail "no file:line error for a bad metrics_listen: $(cat "$T/bad.out")"

start_server "$PORT_TARGET"
start_pair
wait_listen "$PORT_AMET" 10 "$a_pid"
wait_listen "$PORT_BMET" 10 "$b_pid"
xfer_client -n 3 -b 64K || fail "3 connections through the pair"
for i in $(seq 50); do
	[ "$(stat_get a close_client_fin)" = 3 ] &&
		[ "$(stat_get b conns_active)" = 0 ] && break
	sleep 0.1
done
# Prometheus would take counters that go back for a restart
ctl a stats reset >/dev/null 2>&1 || fail "stats reset"
ctl b stats reset >/dev/null 2>&1 || fail "stats reset"
ctl a --prometheus >"$T/a.ctl.prom" 2>"$T/err" ||
	fail "--prometheus: $(cat "$T/err")"

"$PY" - "$PORT_AMET" "$PORT_BMET" "$PORT_RULE" "$T/a.ctl.prom" \
	"$("$SMCPROXYD" -V)" >"$T/check.out" 2>&1 <<'PY' ||
import socket, sys, time, urllib.error, urllib.request
from prometheus_client.parser import text_string_to_metric_families as text

amet, bmet, rule, ctlfile, version = sys.argv[1:6]

def get(port, path="/metrics", method="GET"):
    req = urllib.request.Request("http://127.0.0.1:%s%s" % (port, path),
                                 method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, "", ""

def scrape(port):
    status, ctype, body = get(port)
    if status != 200 or not ctype.startswith("text/plain; version=0.0.4"):
        sys.exit("GET /metrics on %s: %s %r" % (port, status, ctype))
    return {f.name: f for f in text(body)}

def sample(fams, fam, name, **labels):
    got = [s.value for s in fams[fam].samples
           if s.name == name and s.labels == labels]
    if len(got) != 1:
        sys.exit("%s%r: %r" % (name, labels, fams[fam].samples))
    return got[0]

def eq(got, want, what):
    if got != want:
        sys.exit("%s: %r, want %r" % (what, got, want))

a, b = scrape(amet), scrape(bmet)

# one writer (prom.c), the same commands: the same families, sample for
# sample, as smcproxyctl --prometheus
ctl = {f.name: f for f in text(open(ctlfile).read())}
eq(sorted(a), sorted(ctl), "families of GET /metrics and of --prometheus")
for name, f in ctl.items():
    if name not in a or a[name].type != f.type:
        sys.exit("%s (%s) missing or retyped" % (name, f.type))
    want = sorted((s.name, sorted(s.labels.items()), s.value) for s in f.samples)
    got = sorted((s.name, sorted(s.labels.items()), s.value) for s in a[name].samples)
    eq(got, want, name + " against smcproxyctl --prometheus")

bi = a["smcproxyd_build_info"]
eq((bi.type, bi.samples[0].labels), ("gauge", {"version": version.split()[1]}),
   "build_info")
for name in ("smcproxyd_conns_accepted", "smcproxyd_conns_closed",
             "smcproxyd_conns_fallback", "smcproxyd_tx_bytes"):
    eq(a[name].type, "counter", name)
eq(sample(a, "smcproxyd_conns_accepted", "smcproxyd_conns_accepted_total"), 3,
   "A accepted after stats reset")
eq(sample(a, "smcproxyd_conns_fallback", "smcproxyd_conns_fallback_total"), 3,
   "A fallback")
eq(sample(a, "smcproxyd_conns_closed", "smcproxyd_conns_closed_total",
          reason="client_fin"), 3, "A client_fin")
eq(sample(b, "smcproxyd_conns_from_peers", "smcproxyd_conns_from_peers_total"),
   3, "B conns from peers")
if sample(a, "smcproxyd_tx_bytes", "smcproxyd_tx_bytes_total") < 3 * 65536:
    sys.exit("A tx_bytes below the 3 x 64 KiB sent")
eq(sample(a, "smcproxyd_conns_active", "smcproxyd_conns_active"), 0, "A active")
start = sample(a, "smcproxyd_start_time_seconds", "smcproxyd_start_time_seconds")
if not time.time() - 600 < start <= time.time():
    sys.exit("start time %r" % start)
eq(sample(a, "smcproxyd_peer_up", "smcproxyd_peer_up", peer="b",
          transport="rdma"), 0, "A peer_up over rdma")
eq(sample(a, "smcproxyd_peer_up", "smcproxyd_peer_up", peer="b",
          transport="fallback"), 1, "A peer_up over the fallback")
eq(sample(a, "smcproxyd_peer_mode", "smcproxyd_peer_mode", peer="b",
          mode="fallback"), 1, "A peer b fallback")
eq(sample(a, "smcproxyd_peer_mode", "smcproxyd_peer_mode", peer="b",
          mode="rdma"), 0, "A peer b rdma")
eq(sample(b, "smcproxyd_peer_mode", "smcproxyd_peer_mode", peer="a",
          mode="fallback"), 1, "B peer a fallback")
eq(sample(a, "smcproxyd_rule_conns", "smcproxyd_rule_conns", rule="x"), 0,
   "A rule x, nothing open")

# totals per rule and export since the start: not rewound by stats reset
def total(fams, fam, **labels):
    return sample(fams, fam, fam + "_total", **labels)
eq(a["smcproxyd_rule_conns_ended"].type, "counter", "rule_conns_ended type")
eq(total(a, "smcproxyd_rule_conns_ended", rule="x", transport="fallback"), 3,
   "A rule x ended over the fallback")
eq(total(a, "smcproxyd_rule_conns_ended", rule="x", transport="rdma"), 0,
   "A rule x ended over RDMA")
eq(total(a, "smcproxyd_rule_closes", rule="x", reason="client_fin"), 3,
   "A rule x client_fin")
if total(a, "smcproxyd_rule_bytes", rule="x", direction="in") < 3 * 65536:
    sys.exit("A rule x bytes in below the 3 x 64 KiB sent")
eq(total(b, "smcproxyd_export_conns_ended", export="x", transport="fallback"),
   3, "B export x ended over the fallback")
if total(b, "smcproxyd_export_bytes", export="x", direction="in") < 3 * 65536:
    sys.exit("B export x bytes in below the 3 x 64 KiB received")
# setup time histograms: one observation per connection that relayed
for fams, kind in ((a, "rule"), (b, "export")):
    fam = "smcproxyd_%s_setup_seconds" % kind
    eq(fams[fam].type, "histogram", fam + " type")
    eq(sample(fams, fam, fam + "_count", **{kind: "x"}), 3, fam + " count")
    bk = sorted((float(s.labels["le"]), s.value) for s in fams[fam].samples
                if s.name == fam + "_bucket" and s.labels.get(kind) == "x")
    eq(len(bk), 14, fam + " buckets")
    eq(bk[-1], (float("inf"), 3), fam + " +Inf bucket")
    if any(x[1] > y[1] for x, y in zip(bk, bk[1:])):
        sys.exit("%s buckets not cumulative: %r" % (fam, bk))
    if not 0 <= sample(fams, fam, fam + "_sum", **{kind: "x"}) < 60:
        sys.exit("%s sum: %r" % (fam, fams[fam].samples))

# one connection held open shows per rule, peer and export
held = socket.create_connection(("127.0.0.1", int(rule)))
for _ in range(100):
    a, b = scrape(amet), scrape(bmet)
    # one scrape reads the counters and the connection lists one after
    # the other: wait until both have seen the connection
    if (sample(a, "smcproxyd_rule_conns", "smcproxyd_rule_conns", rule="x") == 1
            and sample(b, "smcproxyd_export_conns", "smcproxyd_export_conns",
                       export="x") == 1
            and sample(a, "smcproxyd_conns_active", "smcproxyd_conns_active") == 1):
        break
    time.sleep(0.1)
else:
    sys.exit("the held connection never showed: %r %r" % (
        a["smcproxyd_rule_conns"].samples, b["smcproxyd_export_conns"].samples))
eq(sample(a, "smcproxyd_peer_conns", "smcproxyd_peer_conns", peer="b"), 1,
   "A peer b conns")
eq(sample(a, "smcproxyd_conns_active", "smcproxyd_conns_active"), 1,
   "A active with one held")
held.close()

eq(get(amet, "/")[0], 404, "GET /")
eq(get(amet, "/metricsx")[0], 404, "GET /metricsx")
eq(get(amet, "/metrics", "POST")[0], 405, "POST /metrics")
PY
	fail "scrape: $(cat "$T/check.out")"

# Prometheus' naming conventions, in both outputs (the same writer): no
# "_cnt", no unit but a base one (seconds, bytes) and that one last, a
# counter's samples _total; and promtool (Debian's prometheus) lints them.
python3 -c 'import sys, urllib.request
sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' \
	"http://127.0.0.1:$PORT_AMET/metrics" >"$T/a.http.prom" ||
	fail "scrape for the lint"
for f in a.http.prom a.ctl.prom; do
	bad=$(grep '^# TYPE ' "$T/$f" | awk '
		$3 ~ /_cnt(_|$)|_us(_|$)|_ms(_|$)|micro|milli/ { print; next }
		$4 == "counter" && $3 !~ /_total$/ { print; next }
		$3 ~ /_(seconds|bytes)_/ && $3 !~ /_(seconds|bytes)_total$/ { print }')
	[ -z "$bad" ] || fail "$f: families off Prometheus' conventions: $bad"
	grep -q '^smcproxyd_busy_poll_seconds_total ' "$T/$f" ||
		fail "$f: no smcproxyd_busy_poll_seconds_total"
done
if command -v promtool >/dev/null 2>&1; then
	for f in a.http.prom a.ctl.prom; do
		promtool check metrics <"$T/$f" >"$T/promtool.out" 2>&1 ||
			fail "promtool check metrics $f: $(cat "$T/promtool.out")"
	done
	smc_log "promtool check metrics: both outputs clean"
elif [ -n "${CI:-}" ]; then
	fail "promtool not installed (scripts/setup installs prometheus)"
else
	smc_log "promtool not installed (Debian package prometheus): not linted"
fi

# The address is bound once: a reload that moves it is refused whole.
sed -i "s|127.0.0.1:$PORT_AMET|127.0.0.1:$PORT_SPARE|" "$T/a.conf"
if ctl a reload >"$T/reload.out" 2>&1; then
	fail "a reload moved metrics_listen"
fi
grep -q "smcproxyd.metrics_listen: cannot be changed by reload" \
	"$T/reload.out" || fail "reload: $(cat "$T/reload.out")"
port_listening "$PORT_AMET" || fail "the endpoint is gone after a reload"

# B gone: a client's try finds it down, and A reads the peer up over
# neither transport.
stop_daemon b
xfer_client -n 1 -b 1K --expect-close -T 15 >/dev/null 2>&1
python3 -c 'import sys, urllib.request
sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' \
	"http://127.0.0.1:$PORT_AMET/metrics" >"$T/down.prom" ||
	fail "scrape after B stopped"
grep -qx 'smcproxyd_peer_up{peer="b",transport="fallback"} 0' "$T/down.prom" ||
	fail "B down, peer_up: $(grep '^smcproxyd_peer_up' "$T/down.prom")"
grep -qx 'smcproxyd_peer_up{peer="b",transport="rdma"} 0' "$T/down.prom" ||
	fail "B down, peer_up over rdma: $(grep '^smcproxyd_peer_up' "$T/down.prom")"
