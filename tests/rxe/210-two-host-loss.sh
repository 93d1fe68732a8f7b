#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two hosts: a lossy link.  netem drops 2 % of what each host sends, both
# ways, while 8 connections x 2 MiB go both ways over RDMA: RC
# retransmission must hide every loss, every byte verified, no link lost,
# nothing over the fallback.  The rxe retransmission counters say how much
# was lost and sent again.
. "$(dirname "$0")/lib.sh"

rxe_host_setup
rxe_pair_tools

R=$RXE_RUNDIR
PORT_B=7221
PORT_RULE=16520
PORT_T=16519
fail=0

rxe2_pair_start "devices = [ \"$RXE_DEV0\" ];"
tc qdisc add dev "$RXE_LINK_IF" root netem loss 2% ||
	rxe_die "cannot add netem to $RXE_LINK_IF"
rxe2_stats_reset

if [ "$RXE_HOST" = a ]; then
	xfer_ok "8 connections x 2 MiB both ways verify with 2 % loss each way" \
		-n 8 -b 2M -T 240
	rxe_signal moved
else
	rxe_await moved 260 || bad "a's transfer did not end"
fi
tc -s qdisc show dev "$RXE_LINK_IF" | sed 's/^/# /'
tc qdisc del dev "$RXE_LINK_IF" root
for c in retry_exceeded_err rcvd_seq_err duplicate_request; do
	f=/sys/class/infiniband/$RXE_DEV0/ports/1/hw_counters/$c
	[ -r "$f" ] && echo "# $RXE_DEV0 $c $(cat "$f")"
done
expect_stat "$RXE_HOST" conns_rdma 8
expect_stat "$RXE_HOST" conns_fallback 0
expect_stat "$RXE_HOST" close_link_failed 0
expect_stat "$RXE_HOST" lgr_terminated 0

rxe2_pair_stop
exit $fail
