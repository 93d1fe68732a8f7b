#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# README.md's "Configure a pair" and "Verify" work as written: every
# configuration block after a "<!-- README config: NAME -->" marker passes
# "smcproxyd -n" with the key where the README makes it; then the pair
# a.conf and b.conf runs on loopback (its addresses and ports moved to
# free ones on 127.0.0.1, its control sockets into the test directory),
# a client reaches the server through it, and the README's verification
# commands answer as it says: "smcproxyctl check b" ok, its port, key
# and export good, over RDMA or, where there is no RDMA device, the TCP
# fallback; the
# stats line for conns_rdma or conns_fallback counts the connection;
# "show lgrs" answers.
. "$(dirname "$0")/lib.sh"
smc_init
need "$SMCPROXYCTL" awk sed
SRC=$(cd "$(dirname "$0")/../.." && pwd)
README=$SRC/README.md

mkdir -p "$T/readme"
awk -v dir="$T/readme" '
	/^<!-- README config: [A-Za-z0-9._-]+/ {
		name = $4; want = 1; next
	}
	want && /^```/ { want = 0; out = dir "/" name; next }
	out != "" && /^```/ { close(out); out = ""; next }
	out != "" { print > out }
' "$README"
for c in a.conf b.conf b-kernel-smc.conf; do
	[ -s "$T/readme/$c" ] || fail "README.md has no marked configuration $c"
done

keyfile "$T/ab.key"
for f in "$T"/readme/*; do
	c=${f##*/}
	grep -q '"/etc/smcproxyd/ab.key"' "$f" ||
		fail "README $c: no key_file at /etc/smcproxyd/ab.key, where the README makes the key"
	sed "s|\"/etc/smcproxyd/|\"$T/|g" "$f" >"$T/$c"
	"$SMCPROXYD" -n -c "$T/$c" >"$T/$c.out" 2>&1 ||
		fail "README $c: smcproxyd -n: $(cat "$T/$c.out")"
	smc_log "$c: $(tr '\n' ' ' <"$T/$c.out")"
done

# the pair itself, on loopback
pair_ports
for n in a b; do
	sed -e "s|\"192\\.0\\.2\\.1:7100\"|\"127.0.0.1:$PORT_APEER\"|g" \
		-e "s|\"192\\.0\\.2\\.2:7100\"|\"127.0.0.1:$PORT_BPEER\"|g" \
		-e "s|\"127\\.0\\.0\\.1:6380\"|\"127.0.0.1:$PORT_RULE\"|g" \
		-e "s|\"127\\.0\\.0\\.1:6379\"|\"127.0.0.1:$PORT_TARGET\"|g" \
		-e "s|smcproxyd: { name = \"$n\"; };|smcproxyd: { name = \"$n\"; control_socket = \"$T/$n.sock\"; };|" \
		"$T/$n.conf" >"$T/$n.run.conf"
	grep -q "control_socket = \"$T/$n.sock\"" "$T/$n.run.conf" ||
		fail "README $n.conf: its smcproxyd section is not the one-line form this test rewrites"
	mv "$T/$n.run.conf" "$T/$n.conf"
done
start_server "$PORT_TARGET"
start_pair
xfer_client -n 1 -b 64K || fail "no connection through the README's pair"

ctl a check b >"$T/check.out" 2>&1
rc=$?
smc_log "smcproxyctl check b: status $rc: $(cat "$T/check.out")"
[ "$rc" -eq 0 ] && grep -q '^peer b: ok$' "$T/check.out" &&
	grep -q '^  authenticated: yes' "$T/check.out" &&
	grep -q '^  export .*: the peer reached its target$' "$T/check.out" &&
	grep -Eq '^  transport: (rdma|fallback) \(' "$T/check.out" ||
	fail "check b: status $rc: $(cat "$T/check.out")"
ctl a stats >"$T/stats.out" || fail "smcproxyctl stats"
lines=$(grep -E '^(conns_rdma|conns_fallback) ' "$T/stats.out") ||
	fail "the README's stats line finds nothing: $(head -n 5 "$T/stats.out")"
smc_log "stats: $(echo "$lines" | tr -s ' \n' ' ')"
echo "$lines" | awk '{ n += $2 } END { exit !(n >= 1) }' ||
	fail "neither conns_rdma nor conns_fallback counts the connection: $lines"
ctl a show lgrs >"$T/lgrs.out" 2>&1 || fail "smcproxyctl show lgrs: $(cat "$T/lgrs.out")"
exit 0
