#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two hosts on Debian 12's Linux 6.1 with the patched rdma_rxe
# (ksmc61.rxe, RXE_KERNEL=stock-rxefix): Linux 6.1's own SMC-R client on
# a, which speaks SMC-Rv2 release 0, reaches an export of smcproxyd on b
# through its smc_listen (350's export side, against the kernel most
# Debian 12 users run):
#   - the first connection makes the link group (first contact), timed:
#     a release-0 client waits 2 s for an ADD_LINK after CONFIRM_LINK and
#     1 s more for a DECLINE; smcproxyd offers one without a link, which
#     the client refuses at once (docs/protocol.md, "Kernel peers"), so
#     it must take less than 2 s more than a plain TCP connection through
#     the same export (the baseline, timed too: TCG's own cost);
#   - the second one joins that group: no ADD_LINK wait either;
#   - 16 connections x 4 MiB both ways verify; a's kernel counts 16
#     SMC-Rv2 client connections and no fallback, rxe0 on a carried about
#     the bytes / MTU packets each way, TCP only the handshakes;
#   - b counts 18 connections relayed over RDMA, the baseline as TCP, on link
#     groups it made or joined, and logs the dialect and transport=rdma.
. "$(dirname "$0")/lib.sh"

ksmc_check_init
PORT=16560
PORT_T=16561
N=16

# one: one short SMC connection to b's smc_listen, timed ($rxe_secs)
one() {
	rxe_timed ksmc "$XFER" client -c "$RXE_PEER_IP:$PORT" -n 1 -b 4K \
		-T 60 >"$RXE_OUT/xfer-$1.out" 2>&1 ||
		bad "the $1 connection: $(tail -3 "$RXE_OUT/xfer-$1.out")"
}

if [ "$RXE_HOST" = b ]; then
	ksmc_export_start
	rxe_signal b-ready
	rxe_await moved 240 || bad "a's transfers did not end"
	"$CTL" -s "$R/b.sock" show lgrs >"$RXE_OUT/b-lgrs.log" 2>&1
	expect_stat b smc_conns $((N + 3))
	ksmc_groups b smc_lgrs $((N + 2))
	expect_stat b smc_conns_rdma $((N + 2))
	expect_stat b smc_conns_tcp 1
	expect_stat b smc_opt_absent 1
	# each first contact's offer without a link, refused, no violation
	expect_stat b smc_add_link_none "$(rxe_stat b smc_lgrs)"
	expect_stat b llc_protocol_errors 0
	if logged b "export=x peer=$RXE_PEER_IP:[0-9]+ dialect=smc-r target=127.0.0.1:$PORT_T transport=rdma"; then
		ok "b's connection log names the dialect and transport=rdma"
	else
		bad "b's connection log lacks dialect=smc-r ... transport=rdma"
	fi
	daemon_stop b || bad "b did not stop cleanly"
	kill "$server" 2>/dev/null
	wait "$server" 2>/dev/null
else
	rxe_await b-ready 120 || rxe_die "b did not start"
	# the baseline: plain TCP (no SMC option on the SYN) through the
	# export, which relays it as TCP
	rxe_timed "$XFER" client -c "$RXE_PEER_IP:$PORT" -n 1 -b 4K -T 60 \
		>"$RXE_OUT/xfer-tcp.out" 2>&1 ||
		bad "plain TCP through the export: $(tail -3 "$RXE_OUT/xfer-tcp.out")"
	tcp_s=$rxe_secs
	snap=$(ksmc_snap clnt)
	succ0=$(ksmc_stat clnt_v2_succ) fb0=$(ksmc_stat fback_clnt)
	one first
	first_s=$rxe_secs
	one joining
	join_s=$rxe_secs
	echo "# connect + 4 KiB each way: plain TCP $tcp_s s, SMC-R first contact $first_s s, SMC-R joining $join_s s"
	# deltas: 310, earlier in the lane, counted its own
	succ=$(($(ksmc_stat clnt_v2_succ) - succ0)) fb=$(($(ksmc_stat fback_clnt) - fb0))
	if [ "$succ" = 2 ] && [ "$fb" = 0 ]; then
		ok "a's kernel made both over SMC-Rv2 (first contact $first_s s, joining $join_s s)"
	else
		bad "a's kernel: clnt_v2_succ +$succ, fback_clnt +$fb (want +2 SMC-Rv2 connections, no fallback)"
	fi
	if awk -v j="$first_s" -v t="$tcp_s" 'BEGIN { exit !(j < t + 2) }'; then
		ok "first contact does not wait 3 s for a second link ($first_s s, plain TCP $tcp_s s)"
	else
		bad "first contact took $first_s s (plain TCP $tcp_s s): the client waited for an ADD_LINK"
	fi
	if awk -v j="$join_s" -v t="$tcp_s" 'BEGIN { exit !(j < t + 2) }'; then
		ok "a joining connection does not wait for an ADD_LINK ($join_s s, plain TCP $tcp_s s)"
	else
		bad "a joining connection took $join_s s (plain TCP $tcp_s s): it waited"
	fi
	if ksmc "$XFER" client -c "$RXE_PEER_IP:$PORT" -n $N -b 4M -T 240 \
		>"$RXE_OUT/xfer.out" 2>&1; then
		ok "a Linux 6.1 SMC-R client: $N x 4 MiB both ways verified through b's smc_listen"
	else
		bad "transfer: $(tail -3 "$RXE_OUT/xfer.out")"
	fi
	ksmc_proof clnt "$snap" $((N + 2)) $((N * 4 * 1048576))
	rxe_signal moved
fi
ksmc_kernel_log
rxe_barrier end-ksmc61-export 120 || bad "the hosts are out of step at the end"
exit $fail
