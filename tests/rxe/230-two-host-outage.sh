#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two hosts: a long outage with resuming off (resume_timeout = 0, the
# behaviour before connections could resume; 260 has them resume).  While
# 4 connections x 8 MiB go both ways over RDMA, b's interface goes down for
# 5 s (rxe reports a port error, sends fail).  No hang: each transfer
# either verifies or ends with a reset within $BOUND s of the link coming
# back, and none resumes.  Then both daemons serve new connections over
# RDMA again, and hold nothing more than before the outage: no connection,
# the buffers and descriptors of before, no group but an idle one.
. "$(dirname "$0")/lib.sh"

rxe_host_setup
rxe_pair_tools

R=$RXE_RUNDIR
PORT_B=7241
PORT_RULE=16540
PORT_T=16539
BOUND=60
fail=0
RXE2_GLOBAL="resume_timeout = 0;"

rxe2_pair_start "devices = [ \"$RXE_DEV0\" ];"
rxe2_stats_reset
me=$RXE_HOST
fds0=$(rxe_fds "$me")
bufs0=$(rxe_stat "$me" rdma_buf_bytes)
echo "# $me before: $fds0 descriptors, rdma_buf_bytes $bufs0"

if [ "$me" = a ]; then
	rxe2_flowing 4 -b 8M -T 240
	rxe_await back 60 || rxe_die "b did not bring its link back"
	t0=$(rxe_now)
	if rxe_wait $BOUND eval "! rxe_alive $client"; then
		if wait "$client"; then
			ok "the transfers rode out the outage, verified"
		else
			ok "the transfers ended with a reset: $(tail -1 "$RXE_OUT/xfer.out")"
		fi
		awk -v a="$t0" -v b="$(rxe_now)" \
			'BEGIN { printf "# ended %.1f s after the link came back\n", b - a }'
	else
		bad "the transfers still hang $BOUND s after the link came back"
		kill "$client" 2>/dev/null
	fi
	rxe_signal ended
else
	rxe_await flowing 60 || rxe_die "a's transfers did not start"
	ip link set "$RXE_LINK_IF" down || rxe_die "cannot take $RXE_LINK_IF down"
	sleep 5
	ip link set "$RXE_LINK_IF" up || rxe_die "cannot bring $RXE_LINK_IF up"
	rxe_wait 20 rxe_port_ready "$RXE_DEV0" "$RXE_IP0" ||
		bad "$RXE_DEV0 did not come back"
	rxe_signal back
	rxe_await ended 120 || bad "a's transfers did not end"
fi
echo "# $me: close_link_failed $(rxe_stat "$me" close_link_failed)," \
	"lgr_terminated $(rxe_stat "$me" lgr_terminated)"
expect_stat "$me" conns_resumed_rdma 0
if rxe_wait 30 stat_is "$me" conns_active 0; then
	ok "$me: no connection left"
else
	bad "$me: conns_active $(rxe_stat "$me" conns_active), want 0"
fi
rxe2_stats_reset after

# New connections after the outage: over RDMA, on a group set up again
# where the old one ended.
if [ "$me" = a ]; then
	xfer_ok "a first connection after the outage verifies" -n 1 -b 64K -T 60
	rxe_wait 30 sh -c "'$CTL' -s '$R/a.sock' -j show lgrs |
		grep -q '\"state\": *\"active\"'" ||
		bad "a has no active group after the outage"
	"$CTL" -s "$R/a.sock" stats reset >/dev/null
	xfer_ok "4 connections x 1 MiB both ways after the outage" \
		-n 4 -b 1M -T 120
	expect_stat a conns_rdma 4
	expect_stat a conns_fallback 0
	rxe_signal served
else
	rxe_await served 200 || bad "a did not finish its new connections"
fi
if rxe_wait 30 stat_is "$me" conns_active 0; then
	ok "$me: no connection left after the new ones"
else
	bad "$me: conns_active $(rxe_stat "$me" conns_active) after the new ones"
fi
bufs1=$(rxe_stat "$me" rdma_buf_bytes)
used1=$(rxe_stat "$me" rdma_buf_bytes_used)
fds1=$(rxe_fds "$me")
echo "# $me after: $fds1 descriptors, rdma_buf_bytes $bufs1 (used $used1)"
[ "$used1" = 0 ] && ok "$me: no buffer held by a connection" ||
	bad "$me: rdma_buf_bytes_used $used1"
# kept for reuse: no more than the connections of both groups had (4
# each, a send ring and an RMB element of 256 KiB, the defaults)
[ "${bufs1:-0}" -le "$((bufs0 + 2 * 4 * 2 * 262144))" ] &&
	ok "$me: registered buffers bounded ($bufs1)" ||
	bad "$me: rdma_buf_bytes $bufs1, was $bufs0 before"
[ "$fds1" -le "$((fds0 + 2))" ] && ok "$me: descriptors back ($fds1, was $fds0)" ||
	bad "$me: $fds1 descriptors, was $fds0"
"$CTL" -s "$R/$me.sock" -j show lgrs >"$RXE_OUT/$me.lgrs.json" 2>&1
n=$(grep -o '"state"' "$RXE_OUT/$me.lgrs.json" | wc -l)
if [ "$n" -le 1 ] && ! grep -q '"conns": *[1-9]' "$RXE_OUT/$me.lgrs.json"; then
	ok "$me: link groups back to idle ($n)"
else
	bad "$me: show lgrs: $(head -c 600 "$RXE_OUT/$me.lgrs.json")"
fi

rxe2_pair_stop
exit $fail
