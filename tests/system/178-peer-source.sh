#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# peers[].source: the local address a peer's connections leave from.  B
# knows A as 127.0.0.2 and accepts it only from that host (any_source
# false).  A with source = "127.0.0.2" for B is served (its TCP to B's
# port is bound to it; the RDMA GID would be that address's too), and
# show peers says so; without it A leaves from 127.0.0.1, the kernel's
# choice, and B refuses it.
. "$(dirname "$0")/lib.sh"
smc_init

pair_ports
conf_a "$T/a.conf" x 'insecure = true; source = "127.0.0.2";'
conf_b "$T/b.conf"
sed -i "s/address = \"127.0.0.1:$PORT_APEER\"/address = \"127.0.0.2:$PORT_APEER\"/" \
	"$T/b.conf"
grep -q "127.0.0.2:$PORT_APEER" "$T/b.conf" || fail "could not edit b.conf"
start_server "$PORT_TARGET"
start_pair

xfer_client -n 4 -b 1M || fail "no traffic from source 127.0.0.2"
ctl a -o peer,address,source,dscp show peers >"$T/a.peers.txt" ||
	fail "show peers on a"
grep -Eq '^b +127\.0\.0\.1:'"$PORT_BPEER"' +127\.0\.0\.2 +0$' "$T/a.peers.txt" ||
	fail "show peers does not give source 127.0.0.2: $(cat "$T/a.peers.txt")"

# Without the key A leaves from 127.0.0.1: B does not take it for A.
stop_daemon a
conf_a "$T/a.conf"
start_daemon a "$T/a.conf"
wait_listen "$PORT_RULE" 10 "$a_pid"
xfer_client -n 1 -b 64K --expect-close -T 15 ||
	fail "B served A from 127.0.0.1, not its address's host"
exit 0
