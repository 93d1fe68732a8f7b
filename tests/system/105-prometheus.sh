#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# "smcproxyctl --prometheus" (the node_exporter textfile collector's input)
# parses with python3-prometheus-client's Prometheus text parser, and
# "--openmetrics" with its OpenMetrics parser (which refused the old output
# as "Clashing name"), to the same families: counters' samples are _total, the close reasons one
# family with a reason label, smcproxyd_build_info names the daemon's
# version, and after known traffic the counters hold it; "stats reset"
# does not rewind them (Prometheus would take it for a restart) while the
# table's counters drop to zero.  A stranger's DECLINE (NOSMCRDEV) as the
# first CLC message on a's peer port is counted by code and direction,
# received and the BADMSG a sends back, in "stats" (the table lists only
# codes that counted) and as smcproxyd_declines_total{direction,code,reason}.
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

# a CLC DECLINE (src/clc_wire.h: header, system id, code, reserved,
# trailer) where a PROPOSAL belongs: a answers DECLINE BADMSG
python3 - "$PORT_APEER" >"$T/decline.out" 2>&1 <<'PY' ||
import socket, struct, sys
eye = b"\xe2\xd4\xc3\xd9"
msg = eye + struct.pack(">BHB", 4, 28, 1 << 4) + bytes(8) + \
    struct.pack(">I", 0x03030002) + bytes(4) + eye
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(msg)
ans = b""
while len(ans) < 28:
    got = s.recv(28 - len(ans))
    if not got:
        break
    ans += got
if len(ans) != 28 or ans[4] != 4:
    sys.exit("no DECLINE back: %r" % ans)
code = struct.unpack(">I", ans[16:20])[0]
if code != 0x0a000000:
    sys.exit("DECLINE 0x%08x, want BADMSG" % code)
PY
	fail "DECLINE to a's peer port: $(cat "$T/decline.out")"
for i in $(seq 50); do
	[ "$(stat_get a clc_declines_sent)" = 1 ] && break
	sleep 0.1
done
[ "$(stat_get a declines_received_0x03030002)" = 1 ] ||
	fail "declines_received_0x03030002: $(stat_get a declines_received_0x03030002)"
[ "$(stat_get a declines_sent_0x0a000000)" = 1 ] ||
	fail "declines_sent_0x0a000000: $(stat_get a declines_sent_0x0a000000)"
[ "$(stat_get a declines_sent_0x03030002)" = 0 ] ||
	fail "declines_sent_0x03030002: $(stat_get a declines_sent_0x03030002)"
ctl a stats >"$T/stats.txt" 2>&1 || fail "stats: $(cat "$T/stats.txt")"
grep -q '^declines_received_0x03030002  *1 ' "$T/stats.txt" ||
	fail "stats does not list declines_received_0x03030002: $(cat "$T/stats.txt")"
! grep -q '^declines_sent_0x03030002 ' "$T/stats.txt" ||
	fail "stats lists a decline code that counted nothing"

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
if omfams["smcproxyd_declines"].type != "counter":
    sys.exit("smcproxyd_declines is not a counter")
eq(sample("smcproxyd_declines", "smcproxyd_declines_total", direction="received",
          code="0x03030002", reason="NOSMCRDEV"), 1, "declines received")
eq(sample("smcproxyd_declines", "smcproxyd_declines_total", direction="sent",
          code="0x0a000000", reason="BADMSG"), 1, "declines sent")
eq(sample("smcproxyd_declines", "smcproxyd_declines_total", direction="sent",
          code="unknown", reason="UNKNOWN"), 0, "declines sent, unknown code")
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
