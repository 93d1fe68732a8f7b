#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Half-close through the pair: the client shuts down writing after its
# data; the server must see EOF after exactly all of it, and the half of
# its answer that it sends only after that EOF must reach the client whole.
# The FIN must also travel the other way: the server's close ends the
# client's connection cleanly.
. "$(dirname "$0")/lib.sh"
smc_init

pair_ports
conf_a "$T/a.conf"
conf_b "$T/b.conf"
start_server "$PORT_TARGET"
start_pair

xfer_client -n 8 -b 4M --half-close ||
	fail "half-close: data after the client's FIN did not arrive intact"
xfer_client -n 8 -b 1 -B 8M --half-close ||
	fail "half-close with a 1-byte request and an 8 MiB answer failed"
xfer_client -n 4 -b 0 -B 2M --half-close ||
	fail "half-close right after connecting failed"
grep -q 'half-close: recv 4194304 .*: ok' "$T/server-$PORT_TARGET.log" ||
	fail "server did not confirm EOF after exactly 4 MiB"

before=$(reason_count a client_fin)
xfer_client -n 1 -b 64K --half-close || fail "half-close (counted) failed"
expect_reason a client_fin "$before"
