#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# "smcproxyctl --prometheus" (the node_exporter textfile collector's input)
# parses with python3-prometheus-client's Prometheus text parser, and
# "--openmetrics" with its OpenMetrics parser (which refused the old output
# as "Clashing name"), to the same families: counters' samples are _total, the close reasons one
# family with a reason label, smcproxyd_build_info names the daemon's
# version, and after known traffic the counters hold it; "stats reset"
# does not rewind them (Prometheus would take it for a restart) while the
# table's counters drop to zero.
. "$(dirname "$0")/lib.sh"
smc_init
need "$SMCPROXYCTL"
PY=
for p in python3 /usr/bin/python3; do
	if command -v "$p" >/dev/null 2>&1 &&
		"$p" -c 'import prometheus_client.openmetrics.parser' 2>/dev/null; then
		PY=$p
		break
	fi
done
[ -n "$PY" ] || skip "python3-prometheus-client not installed"

pair_ports
conf_a "$T/a.conf"
conf_b "$T/b.conf"
start_server "$PORT_TARGET"
start_pair
xfer_client -n 3 -b 64K || fail "3 connections through the pair"
for i in $(seq 50); do
	[ "$(stat_get a close_client_fin)" = 3 ] && break
	sleep 0.1
done

# parse FILE PHASE: both parsers; the checks of PHASE (before, after reset)
parse()
{
	"$PY" - "$1" "$2" "$("$SMCPROXYD" -V)" >"$T/check.out" 2>&1 <<'PY' ||
import sys
from prometheus_client.parser import text_string_to_metric_families as text
from prometheus_client.openmetrics.parser import \
    text_string_to_metric_families as om
fams = {f.name: f for f in text(open(sys.argv[1]).read())}
omfams = {f.name: f for f in om(open(sys.argv[1] + ".om").read())}
if sorted(fams) != sorted(omfams):
    sys.exit("the parsers disagree: %r %r" % (sorted(fams), sorted(omfams)))
def sample(fam, name, **labels):
    for f in (fams, omfams):
        got = [s.value for s in f[fam].samples
               if s.name == name and s.labels == labels]
        if len(got) != 1:
            sys.exit("%s%r: %r" % (name, labels, f[fam].samples))
    return got[0]
b = omfams["smcproxyd_build_info"]
if b.type != "gauge" or b.samples[0].labels != {"version": sys.argv[3].split()[1]}:
    sys.exit("build_info: %r" % b)
for name in ("smcproxyd_conns_accepted", "smcproxyd_conns_closed",
             "smcproxyd_conns_fallback"):
    if omfams[name].type != "counter":
        sys.exit("%s is a %s" % (name, omfams[name].type))
if omfams["smcproxyd_conns_active"].type != "gauge":
    sys.exit("conns_active is not a gauge")
eq = lambda got, want, what: got == want or sys.exit("%s: %r, want %r" % (what, got, want))
eq(sample("smcproxyd_conns_accepted", "smcproxyd_conns_accepted_total"), 3, "accepted")
eq(sample("smcproxyd_conns_fallback", "smcproxyd_conns_fallback_total"), 3, "fallback")
eq(sample("smcproxyd_conns_closed", "smcproxyd_conns_closed_total",
          reason="client_fin"), 3, "client_fin")
eq(sample("smcproxyd_conns_active", "smcproxyd_conns_active"), 0, "active")
PY
	fail "--prometheus ($2): $(cat "$T/check.out")"
}
prom()
{
	ctl a --prometheus >"$T/a.prom" 2>"$T/err" || fail "--prometheus: $(cat "$T/err")"
	ctl a --openmetrics >"$T/a.prom.om" 2>"$T/err" || fail "--openmetrics: $(cat "$T/err")"
}
prom
parse "$T/a.prom" "after 3 connections"
ctl a stats reset >/dev/null 2>&1 || fail "stats reset"
[ "$(stat_get a conns_accepted)" = 0 ] || fail "stats reset did not reset the table"
prom
parse "$T/a.prom" "after stats reset"
