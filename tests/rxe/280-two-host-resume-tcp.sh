#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two hosts: connections resume over TCP when RDMA cannot be had again
# (issue 14).  While 4 connections x 12 MiB go both ways over RDMA, b stops
# sending RoCE (a tc filter drops its UDP 4791 packets; TCP still flows):
# the link group ends, and the new one's CLC handshake goes through but
# its first link never confirms, so a resumes each connection over a TCP
# connection to b's peer port with a HELLO that names it: every transfer
# verifies byte for byte both ways, nothing is reset, and afterwards
# nothing is left over.  (Deleting b's rxe device would say it more
# plainly, but rxe cannot let go of a device a process still has open:
# `rdma link delete` waits for the daemon.)
. "$(dirname "$0")/lib.sh"

rxe_host_setup
rxe_pair_tools

R=$RXE_RUNDIR
PORT_B=7281
PORT_RULE=16580
PORT_T=16579
BOUND=90
fail=0
RXE2_GLOBAL="resume_timeout = 120;"

rxe2_pair_start "devices = [ \"$RXE_DEV0\" ]; test_link_time = 5;"
rxe2_stats_reset
me=$RXE_HOST

if [ "$me" = a ]; then
	"$XFER" client -c "127.0.0.1:$PORT_RULE" -n 4 -b 12M -T 240 \
		>"$RXE_OUT/xfer.out" 2>&1 &
	client=$!
	rxe_wait 30 stat_is a conns_rdma 4 ||
		bad "the 4 connections did not open over RDMA"
	sleep 1
	rxe_signal flowing
	rxe_await back 120 || rxe_die "b did not stop RoCE"
	t0=$(rxe_now)
	if rxe_wait $BOUND eval "! rxe_alive $client"; then
		if wait "$client"; then
			ok "4 x 12 MiB both ways verified, resumed over TCP"
		else
			bad "the transfers: $(tail -2 "$RXE_OUT/xfer.out")"
		fi
		awk -v a="$t0" -v b="$(rxe_now)" \
			'BEGIN { printf "# done %.1f s after RoCE stopped\n", b - a }'
	else
		bad "the transfers still run $BOUND s after RoCE stopped"
		kill "$client" 2>/dev/null
	fi
	rxe_signal done
else
	rxe_await flowing 60 || rxe_die "a's transfers did not start"
	modprobe -a sch_prio cls_u32 act_gact || rxe_die "modprobe tc modules"
	tc qdisc add dev "$RXE_LINK_IF" root handle 1: prio &&
		tc filter add dev "$RXE_LINK_IF" parent 1: protocol ip prio 1 \
			u32 match ip protocol 17 0xff match ip dport 4791 0xffff \
			action drop ||
		rxe_die "cannot drop RoCE on $RXE_LINK_IF"
	rxe_signal back
	rxe_await done 200 || bad "a's transfers did not end"
	tc -s filter show dev "$RXE_LINK_IF" | grep -E 'Sent|drop' | sed 's/^/# /'
	tc -s qdisc show dev "$RXE_LINK_IF" | sed 's/^/# /'
fi
expect_stat "$me" conns_resumed_tcp 4
expect_stat "$me" close_resume_failed 0
expect_stat "$me" close_link_failed 0
expect_stat "$me" close_peer_rst 0
if rxe_wait 30 stat_is "$me" conns_active 0; then
	ok "$me: no connection left"
else
	bad "$me: conns_active $(rxe_stat "$me" conns_active), want 0"
fi
expect_stat "$me" conns_resuming 0
grep -E 'resum|DECLINE|declin' "$RXE_OUT/$me.log" | tail -n 10 | sed 's/^/# /'

rxe2_pair_stop
[ "$me" = b ] && tc qdisc del dev "$RXE_LINK_IF" root
exit $fail
