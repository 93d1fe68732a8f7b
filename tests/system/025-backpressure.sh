#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Backpressure: clients stop reading for 2 s halfway through a 64 MiB
# answer each.  The daemons must hold the server back (stop reading) rather
# than buffer it or drop it: their memory stays flat, and once the clients
# read again every byte arrives intact.
. "$(dirname "$0")/lib.sh"
smc_init

pair_ports
conf_a "$T/a.conf"
conf_b "$T/b.conf"
start_server "$PORT_TARGET"
start_pair

rss_kb()
{
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}

xfer_client -n 4 -b 1M || fail "warm-up transfer failed"
a0=$(rss_kb "$a_pid")
b0=$(rss_kb "$b_pid")

smc_log "background: xfer client -n 4 -b 1M -B 64M --pause-read 2000"
"$XFER" client -c "127.0.0.1:$PORT_RULE" -n 4 -b 1M -B 64M --pause-read 2000 \
	-T 60 >"$T/paused.log" 2>&1 &
paused_pid=$!
track "$paused_pid" "$T/paused.log"
amax=$a0
bmax=$b0
while kill -0 "$paused_pid" 2>/dev/null; do
	a1=$(rss_kb "$a_pid")
	b1=$(rss_kb "$b_pid")
	[ "${a1:-0}" -gt "$amax" ] && amax=$a1
	[ "${b1:-0}" -gt "$bmax" ] && bmax=$b1
	sleep 0.2
done
wait "$paused_pid"
rc=$?
untrack "$paused_pid"
tail -n 2 "$T/paused.log"
[ "$rc" -eq 0 ] || fail "data lost or corrupted across the pause"
smc_log "RSS A ${a0} -> max ${amax} KiB, B ${b0} -> max ${bmax} KiB"
# 4 x 64 MiB would be 256 MiB if the daemons buffered what the clients
# did not read; allow 32 MiB for pipes and socket buffers.
[ $((amax - a0)) -lt 32768 ] || fail "A grew by $((amax - a0)) KiB while clients were not reading"
[ $((bmax - b0)) -lt 32768 ] || fail "B grew by $((bmax - b0)) KiB while clients were not reading"
grep -q 'all verified' "$T/paused.log" || fail "no verified summary"
