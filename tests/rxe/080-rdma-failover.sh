#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the VM: failover of connections carried over RDMA.  a and b both use
# rxe0 and rxe1, so their link group gets a second link on rxe1 (another
# device: the send rings and RMBs are registered on both, and each side
# tells the other its RMB's rkey there with CONFIRM_RKEY).  While
# $CONNS connections stream $SIZE each way, split over both links,
# veth1 goes down: link 2 fails, the connections on it move to link 1,
# re-send everything not confirmed and every byte arrives exactly once
# (xfer verifies both directions).  No connection is reset or falls back;
# the group stays up.  When veth1 comes back, rxe1's port event has b
# offer a new link at once (not after the 60 s retry period): it comes up
# and new connections use it again.
. "$(dirname "$0")/lib.sh"

rxe_setup
rxe_pair_tools

R=$RXE_RUNDIR
PORT_B=7141
PORT_RULE=16420
PORT_T=16419
CONNS=8
SIZE=16M
fail=0

rxe_pair_confs "devices = [ \"$RXE_DEV0\", \"$RXE_DEV1\" ]; test_link_time = 1;"
rxe_target_start
rxe_pair_start
if rxe_wait 30 logged a 'link 2: up \(CONFIRM_LINK\): rxe1' &&
	rxe_wait 10 logged b 'link 2: up \(CONFIRM_LINK\): rxe1'; then
	ok "link group a-b with links over rxe0 and rxe1"
else
	bad "no second link over rxe1"
fi
"$CTL" -s "$R/a.sock" stats reset >/dev/null || bad "stats reset on a"
"$CTL" -s "$R/b.sock" stats reset >/dev/null || bad "stats reset on b"

# --- both links carry connections, with keys on both devices -----------------
xfer_ok "$CONNS connections x 1 MiB both ways over two links" \
	-n $CONNS -b 1M -T 60
"$CTL" -s "$R/a.sock" stats reset >/dev/null || bad "stats reset on a"
"$CTL" -s "$R/b.sock" stats reset >/dev/null || bad "stats reset on b"

# --- veth1 goes down mid-stream ------------------------------------------------
"$XFER" client -c "127.0.0.1:$PORT_RULE" -n $CONNS -b $SIZE -T 240 \
	>"$RXE_OUT/failover.out" 2>&1 &
client=$!
rxe_wait 60 stat_is a conns_rdma $CONNS ||
	bad "conns_rdma $(rxe_stat a conns_rdma), want $CONNS"
"$CTL" -s "$R/a.sock" -j show conns >"$RXE_OUT/a.conns.json" 2>&1
on2=$(grep -c '"link": *2' "$RXE_OUT/a.conns.json")
echo "# $on2 of $CONNS connections on link 2 before the failure"
if [ "$on2" -gt 0 ]; then
	ok "link 2 carries connections"
else
	bad "no connection on link 2: $(head -c 400 "$RXE_OUT/a.conns.json")"
fi
# mid-stream: some, not all, of the bytes are through
rxe_wait 60 sh -c "[ \$('$CTL' -s '$R/a.sock' -j stats |
	sed -n 's/.*\"tx_bytes\": *\([0-9]*\).*/\1/p') -gt 16777216 ]" ||
	bad "the transfer did not get going"
echo "# $(rxe_stat a tx_bytes) bytes sent by a when veth1 goes down"
ip link set veth1 down || rxe_die "cannot take veth1 down"
t0=$(rxe_now)
if wait "$client"; then
	took=$(awk -v a="$t0" -v b="$(rxe_now)" 'BEGIN { printf "%.1f", b - a }')
	ok "$CONNS x $SIZE both ways verify across the failover (${took} s after)"
else
	bad "transfer across the failover: $(tail -3 "$RXE_OUT/failover.out")"
fi
tail -2 "$RXE_OUT/failover.out"
if logged a 'link 2 \(rxe1\): down' && logged b 'link 2 \(rxe1\): down'; then
	ok "link 2 went down on both sides"
else
	bad "link 2 not logged down"
fi
for d in a b; do
	expect_stat $d link_down 1
	expect_stat $d lgr_terminated 0
	expect_stat $d conn_failover_failed 0
	expect_stat $d close_link_failed 0
	expect_stat $d close_peer_rst 0
	expect_stat $d conns_fallback 0
	expect_stat $d llc_protocol_errors 0
	moved=$(rxe_stat $d conn_failovers)
	if [ "${moved:-0}" -ge "$on2" ] && [ "${moved:-0}" -gt 0 ]; then
		ok "$d: $moved connections moved to link 1"
	else
		bad "$d: conn_failovers '$moved', want at least $on2"
	fi
done
xfer_ok "new connections after the failover" -n 4 -b 1M -T 60
expect_stat a conns_fallback 0

# --- veth1 back: the link is re-added ------------------------------------------
ip link set veth1 up
t0=$(rxe_now)
rxe_wait 20 rxe_port_ready "$RXE_DEV1" "$RXE_IP1" ||
	rxe_die "$RXE_DEV1 did not come back"
# the re-added link's id is the next free one: 3, or more when an
# ADD_LINK tried while the port was still down used one up (seen under load)
readded() {
	sed -n 's/.* link \([0-9]*\): up (CONFIRM_LINK): rxe1 .*/\1/p' \
		"$RXE_OUT/$1.log" | awk '$1 > 2' | tail -n 1
}
readded_on_b() {
	[ -n "$(readded b)" ]
}
if rxe_wait 30 readded_on_b &&
	id=$(readded b) &&
	rxe_wait 5 logged a "link $id: up \(CONFIRM_LINK\): rxe1"; then
	took=$(awk -v a="$t0" -v b="$(rxe_now)" 'BEGIN { printf "%.1f", b - a }')
	ok "link $id over rxe1 up ${took} s after veth1 came back"
else
	id=3
	bad "no link re-added over rxe1 within 30 s"
fi
"$XFER" client -c "127.0.0.1:$PORT_RULE" -n $CONNS -b 4M -T 120 \
	>"$RXE_OUT/readded.out" 2>&1 &
client=$!
rxe_wait 30 sh -c "'$CTL' -s '$R/a.sock' -j show conns |
	grep -q '\"link\": *$id'" && on3=yes || on3=no
if wait "$client" && [ $on3 = yes ]; then
	ok "connections use the re-added link and verify"
else
	bad "re-added link $id: on it: $on3; $(tail -2 "$RXE_OUT/readded.out")"
fi
expect_stat a conns_fallback 0
expect_stat a close_link_failed 0
rxe_pair_stop
exit $fail
