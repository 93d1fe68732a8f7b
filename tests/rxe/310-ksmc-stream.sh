#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two hosts on Linux 6.12 (ksmc.rxe): Linux's own SMC-R between them, the
# implementation smcproxyd's send engine comes from, with no daemon of
# ours.  xfer under tests/tools/smcpreload.so on both hosts (its TCP
# sockets are kernel SMC sockets), the same user EID on both (smcnl):
# 16 connections x 4 MiB both ways, every byte verified, and proof that
# they ran over SMC-R and not over the kernel's silent TCP fallback:
#   - the kernel's SMC statistics count 16 SMC-Rv2 connections, a as
#     client and b as server, and no fallback;
#   - rxe0 sent and received about bytes / RoCE MTU packets on each host;
#   - TCP carried only the handshakes (its segment count barely moves).
# Then the control that makes the proof mean something: a plain TCP client
# (no library) to the same SMC listener is counted by b as a fallback, not
# as SMC-R, and its bytes add no RoCE packets to speak of.
. "$(dirname "$0")/lib.sh"

rxe_host_setup
rxe_pair_tools
ksmc_setup

PORT=16520
N=16
SIZE=4194304
fail=0

mtu=$(rxe_active_mtu)
[ -n "$mtu" ] || rxe_die "no active_mtu for $RXE_DEV0"
# each host sends N x SIZE and receives as much, in packets of one MTU
want=$((N * SIZE / mtu))
echo "# Linux $(uname -r), RoCE MTU $mtu, user EID $("$SMCNL" ueid list)"

# snap: sent_pkts rcvd_pkts tcp_out_segs clnt_v2 srv_v2 fback_clnt fback_srv
snap() {
	echo "$(rxe_hwc sent_pkts) $(rxe_hwc rcvd_pkts) $(tcp_out_segs)" \
		"$(ksmc_stat clnt_v2_succ) $(ksmc_stat srv_v2_succ)" \
		"$(ksmc_stat fback_clnt) $(ksmc_stat fback_srv)"
}

# delta BEFORE AFTER FIELD: how much field FIELD (1-based, as in snap) rose
delta() {
	echo "$1 $2" | awk -v f="$3" '{ print $(f + 7) - $f }'
}

# expect_counts BEFORE AFTER SIDE(clnt|srv) N: the SMC-R proof on this host
expect_counts() {
	_b=$1 _a=$2
	if [ "$3" = clnt ]; then _succ=4 _fb=6; else _succ=5 _fb=7; fi
	_s=$(delta "$_b" "$_a" $_succ)
	_f=$(delta "$_b" "$_a" $_fb)
	if [ "$_s" = "$4" ] && [ "$_f" = 0 ]; then
		ok "kernel SMC stats on $RXE_HOST: ${3}_v2_succ +$_s, fallbacks +0"
	else
		bad "kernel SMC stats on $RXE_HOST: ${3}_v2_succ +$_s (want $4), fallbacks +$_f (want 0)"
	fi
	_tx=$(delta "$_b" "$_a" 1)
	_rx=$(delta "$_b" "$_a" 2)
	_tcp=$(delta "$_b" "$_a" 3)
	echo "# $RXE_HOST: rxe0 sent_pkts +$_tx, rcvd_pkts +$_rx (bytes/MTU each way: $want); TCP OutSegs +$_tcp"
	if [ "$_tx" -ge $((want * 95 / 100)) ] && [ "$_rx" -ge $((want * 95 / 100)) ]; then
		ok "rxe0 on $RXE_HOST: +$_tx sent, +$_rx received, about bytes/MTU ($want) each way"
	else
		bad "rxe0 on $RXE_HOST: +$_tx sent, +$_rx received; bytes/MTU is $want each way"
	fi
	# 64 MiB each way as TCP would be about 46000 segments each way
	if [ "$_tcp" -lt 1000 ]; then
		ok "TCP on $RXE_HOST: +$_tcp segments sent, the handshakes only"
	else
		bad "TCP on $RXE_HOST: +$_tcp segments sent: the bytes went over TCP"
	fi
}

listening() {
	ss -ltn | grep -q ":$PORT "
}

if [ "$RXE_HOST" = b ]; then
	ksmc "$XFER" server -l "$RXE_LINK_IP:$PORT" >"$RXE_OUT/xfer-server.log" 2>&1 &
	server=$!
	rxe_wait 20 listening || rxe_die "the SMC xfer server did not listen"
	before=$(snap)
	rxe_signal b-ready
	rxe_await moved 300 || bad "a's transfer did not end"
	after=$(snap)
	expect_counts "$before" "$after" srv $N
	# the control: a plain TCP client
	before=$(snap)
	rxe_signal ctl-ready
	rxe_await ctl-done 120 || bad "a's control connection did not end"
	after=$(snap)
	s=$(delta "$before" "$after" 5)
	f=$(delta "$before" "$after" 7)
	p=$(delta "$before" "$after" 2)
	if [ "$s" = 0 ] && [ "$f" = 1 ] && [ "$p" -lt 200 ]; then
		ok "control: a plain TCP client is counted as a fallback on b (srv_v2_succ +0, fback_srv +1, rxe0 +$p packets received)"
	else
		bad "control: srv_v2_succ +$s (want 0), fback_srv +$f (want 1), rxe0 +$p packets received (want few)"
	fi
	kill "$server" 2>/dev/null
	wait "$server" 2>/dev/null
else
	rxe_await b-ready 120 || rxe_die "b did not start its server"
	before=$(snap)
	t0=$(rxe_now)
	if ksmc "$XFER" client -c "$RXE_PEER_IP:$PORT" -n $N -b $SIZE -T 240 \
		>"$RXE_OUT/xfer.out" 2>&1; then
		ok "kernel SMC-R: $N connections x 4 MiB both ways verified across the link"
	else
		bad "kernel SMC-R transfer: $(tail -3 "$RXE_OUT/xfer.out")"
	fi
	awk -v a="$t0" -v b="$(rxe_now)" \
		'BEGIN { printf "# %d x 4 MiB both ways in %.1f s\n", '$N', b - a }'
	after=$(snap)
	rxe_signal moved
	expect_counts "$before" "$after" clnt $N
	rxe_await ctl-ready 120 || bad "b is not ready for the control"
	if "$XFER" client -c "$RXE_PEER_IP:$PORT" -n 1 -b 64K -T 60 \
		>"$RXE_OUT/xfer-control.out" 2>&1; then
		ok "control: a plain TCP client to the SMC listener verifies"
	else
		bad "control transfer: $(tail -3 "$RXE_OUT/xfer-control.out")"
	fi
	rxe_signal ctl-done
fi
"$SMCNL" stats >"$RXE_OUT/smc-stats.log" 2>&1
dmesg | grep -i -E 'smc|rxe' >"$RXE_OUT/dmesg.log" 2>&1
rxe_barrier end-ksmc 120 || bad "the hosts are out of step at the end"
exit $fail
