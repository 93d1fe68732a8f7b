#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# 64 concurrent connections through the daemon pair (TCP fallback), each
# moving 16 MiB of random data both ways at once.  Every byte is checked on
# arrival, and the SHA-256 of each direction must be the same at the client
# and at the server (the client compares them, and so does this script
# from the two programs' own output).
. "$(dirname "$0")/lib.sh"
smc_init

pair_ports
conf_a "$T/a.conf"
conf_b "$T/b.conf"
start_server "$PORT_TARGET"
start_pair

xfer_client -n 1 -b 1M || fail "a single 1 MiB duplex transfer failed"

xfer_client -n 64 -b 16M ||
	fail "64 x 16 MiB duplex transfers failed or did not verify"
grep -q '^64 connections, 1.0 GiB each way, all verified' "$T/client.out" ||
	fail "client summary missing"
n=0
while read -r tx rx; do
	grep -q "recv 16777216 sha256=$tx sent 16777216 sha256=$rx: ok" \
		"$T/server-$PORT_TARGET.log" ||
		fail "server has no connection with sha256 $tx / $rx"
	n=$((n + 1))
done < <(sed -n 's/^conn .*: sent 16777216 sha256=\([0-9a-f]*\) recv 16777216 sha256=\([0-9a-f]*\): ok$/\1 \2/p' "$T/client.out")
[ "$n" -eq 64 ] || fail "only $n of 64 connections reported digests"
smc_log "64 digest pairs equal at client and server"

xfer_client -n 8 -b 3M -B 5M || fail "asymmetric 3 MiB / 5 MiB transfers failed"
xfer_client -n 16 -b 0 -B 1M || fail "one-way (server to client) transfers failed"
