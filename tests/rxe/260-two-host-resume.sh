#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two hosts: connections resume after their link group ended (issue 14).
# While 4 connections x 4 MiB go both ways over RDMA (each client pausing
# 3 s at half the answer, so that they outlast the start of the outage),
# b's interface goes down for 1 s, then (new connections) for 5 s and for
# 20 s, and then b sends nothing for 12 s (netem, 100 % loss: the ports
# stay up, past test_link_time and its answer).  Each time the group ends
# (a port error, failed sends, TEST_LINK unanswered) and every transfer
# verifies, byte for byte both ways: nothing is reset, the connections
# move to a new group (conns_resumed_rdma), and afterwards nothing is
# left over.  New connections opened while a's end of a group b already
# dropped open again on the next one (conns_reopened).
. "$(dirname "$0")/lib.sh"

rxe_host_setup
rxe_pair_tools

R=$RXE_RUNDIR
PORT_B=7266
PORT_RULE=16566
PORT_T=16565
BOUND=60
fail=0
RXE2_GLOBAL="resume_timeout = 120;"

rxe2_pair_start "devices = [ \"$RXE_DEV0\" ]; test_link_time = 5;"
rxe2_stats_reset
me=$RXE_HOST
opened=0

# a: 4 transfers while b makes outage NAME; they must verify
a_phase() {
	opened=$((opened + 4))
	# each client stops reading for 3 s at half the answer: a quick
	# machine would otherwise be done before the outage begins
	"$XFER" client -c "127.0.0.1:$PORT_RULE" -n 4 -b 4M -T 240 \
		--pause-read 3000 >"$RXE_OUT/xfer-$1.out" 2>&1 &
	client=$!
	rxe_wait 30 stat_is a conns_rdma "$opened" ||
		bad "$1: the 4 connections did not open over RDMA"
	sleep 1
	rxe_signal "flowing-$1"
	rxe_await "back-$1" 120 || rxe_die "b did not end outage $1"
	t0=$(rxe_now)
	if rxe_wait $BOUND eval "! rxe_alive $client"; then
		if wait "$client"; then
			ok "$1: 4 x 4 MiB both ways verified across the outage"
		else
			bad "$1: $(tail -2 "$RXE_OUT/xfer-$1.out")"
		fi
		awk -v a="$t0" -v b="$(rxe_now)" -v n="$1" \
			'BEGIN { printf "# %s: done %.1f s after the link came back\n", n, b - a }'
	else
		bad "$1: the transfers still run $BOUND s after the link came back"
		kill "$client" 2>/dev/null
	fi
	echo "# $1: conns_resumed_rdma $(rxe_stat a conns_resumed_rdma)," \
		"lgr_terminated $(rxe_stat a lgr_terminated)"
	rxe_signal "done-$1"
}

# b: outage NAME: the interface down for SECONDS, or "silent" SECONDS
b_phase() {
	rxe_await "flowing-$1" 60 || rxe_die "a's transfers $1 did not start"
	if [ "$2" = silent ]; then
		tc qdisc add dev "$RXE_LINK_IF" root netem loss 100% ||
			rxe_die "cannot add netem to $RXE_LINK_IF"
		sleep "$3"
		tc qdisc del dev "$RXE_LINK_IF" root
	else
		ip link set "$RXE_LINK_IF" down ||
			rxe_die "cannot take $RXE_LINK_IF down"
		sleep "$3"
		ip link set "$RXE_LINK_IF" up ||
			rxe_die "cannot bring $RXE_LINK_IF up"
		rxe_wait 20 rxe_port_ready "$RXE_DEV0" "$RXE_IP0" ||
			bad "$RXE_DEV0 did not come back"
	fi
	rxe_signal "back-$1"
	rxe_await "done-$1" 200 || bad "a's transfers $1 did not end"
	echo "# $1: conns_resumed_rdma $(rxe_stat b conns_resumed_rdma)"
}

for p in "down1 down 1" "down5 down 5" "down20 down 20" "silent12 silent 12"
do
	set -- $p
	if [ "$me" = a ]; then
		a_phase "$1"
	else
		b_phase "$@"
	fi
done

n=$(rxe_stat "$me" conns_resumed_rdma)
[ "${n:-0}" -ge 4 ] && ok "$me: connections resumed on new groups ($n)" ||
	bad "$me: conns_resumed_rdma '$n', want at least 4"
expect_stat "$me" close_link_failed 0
expect_stat "$me" close_resume_failed 0
expect_stat "$me" close_peer_rst 0
expect_stat "$me" resume_failed_protocol 0
expect_stat "$me" conns_fallback 0
if rxe_wait 30 stat_is "$me" conns_active 0; then
	ok "$me: no connection left"
else
	bad "$me: conns_active $(rxe_stat "$me" conns_active), want 0"
fi
expect_stat "$me" conns_resuming 0
expect_stat "$me" rdma_buf_bytes_used 0
# b's group ends at its port error; in the 5 s and 20 s outages its QP
# would go while the port is down, and is kept until it is back (ib.c,
# ib_qp_destroy: rxe in the 6.1 kernel can crash otherwise)
if [ "$me" = b ]; then
	n=$(grep -c 'destroyed once the port is back' "$RXE_OUT/b.log")
	[ "$n" -ge 2 ] && ok "b: QPs of ended groups kept while the port was down ($n)" ||
		bad "b: $n QPs kept while the port was down, want 2 or more"
fi
grep -E 'resum' "$RXE_OUT/$me.log" | tail -n 12 | sed 's/^/# /'

rxe2_pair_stop
exit $fail
