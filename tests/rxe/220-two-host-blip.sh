#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two hosts: an outage shorter than the QPs' retry budget.  While 4
# connections x 4 MiB go both ways over RDMA, host b sends nothing for
# 0.3 s (netem, 100 % loss: the ports stay up, nothing is told): RC
# retransmits, so every transfer verifies and nothing is reset, no link
# is lost.
. "$(dirname "$0")/lib.sh"

rxe_host_setup
rxe_pair_tools

R=$RXE_RUNDIR
PORT_B=7231
PORT_RULE=16530
PORT_T=16529
fail=0

rxe2_pair_start "devices = [ \"$RXE_DEV0\" ];"
rxe2_stats_reset

if [ "$RXE_HOST" = a ]; then
	rxe2_flowing 4 -b 4M -T 200
	rxe_await healed 60 || bad "b did not end its outage"
	if wait "$client"; then
		ok "4 transfers across a 0.3 s outage verify"
	else
		bad "transfers across a 0.3 s outage: $(tail -3 "$RXE_OUT/xfer.out")"
	fi
	rxe_signal moved
else
	rxe_await flowing 60 || rxe_die "a's transfers did not start"
	tc qdisc add dev "$RXE_LINK_IF" root netem loss 100% ||
		rxe_die "cannot add netem to $RXE_LINK_IF"
	sleep 0.3
	tc -s qdisc show dev "$RXE_LINK_IF" | sed 's/^/# /'
	tc qdisc del dev "$RXE_LINK_IF" root
	rxe_signal healed
	rxe_await moved 240 || bad "a's transfer did not end"
fi
expect_stat "$RXE_HOST" conns_rdma 4
expect_stat "$RXE_HOST" close_link_failed 0
expect_stat "$RXE_HOST" close_peer_rst 0
expect_stat "$RXE_HOST" lgr_terminated 0

rxe2_pair_stop
exit $fail
