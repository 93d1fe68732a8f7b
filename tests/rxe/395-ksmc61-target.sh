#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two hosts on Debian 12's Linux 6.1 with the patched rdma_rxe
# (ksmc61.rxe, RXE_KERNEL=stock-rxefix): a plain TCP client on a reaches
# Linux 6.1's own SMC-R server on b through a target_smc rule of
# smcproxyd on a (340's rule side, against a release-0 kernel).  Unlike
# 6.12, which negotiates max_links = 1, a 6.1 server always offers a
# second link after CONFIRM_LINK on first contact (LLC ADD_LINK, on the
# same device when it has no other); smcproxyd refuses it (one link per
# group with kernel peers, smc_add_link_rejects one per group) and
# carries on:
#   - the first connection (first contact) verifies, timed;
#   - 16 connections x 4 MiB both ways verify;
#   - a counts 17 PROPOSALs, ACCEPTs and CONFIRMs, 17 connections relayed
#     over RDMA on link groups it made or joined, none as TCP, and logs
#     the kernel server, the dialect and transport=rdma;
#   - b's kernel counts 17 SMC-Rv2 server connections and no fallback,
#     rxe0 on b carried about the bytes / MTU packets each way, TCP only
#     the handshakes.
# a's daemon logs at debug, and each host's kernel SMC lines and counters
# are kept (kernel-smc.log): if the ADD_LINK went wrong, they say how.
. "$(dirname "$0")/lib.sh"

ksmc_check_init
PORT=16560
PORT_RULE=16561
N=16

if [ "$RXE_HOST" = b ]; then
	ksmc_server_start
	snap=$(ksmc_snap srv)
	rxe_signal b-ready
	rxe_await moved 240 || bad "a's transfers did not end"
	ksmc_proof srv "$snap" $((N + 1)) $((N * 4 * 1048576))
	kill "$server" 2>/dev/null
	wait "$server" 2>/dev/null
else
	KSMC_LOG_LEVEL=debug ksmc_rule_start
	rxe_await b-ready 120 || rxe_die "b did not start its server"
	if rxe_timed "$XFER" client -c "127.0.0.1:$PORT_RULE" -n 1 -b 64K \
		-T 60 >"$RXE_OUT/xfer-first.out" 2>&1; then
		ok "the first connection (first contact with b's 6.1 kernel) verifies, in $rxe_secs s"
	else
		bad "the first connection, after $rxe_secs s: $(tail -3 "$RXE_OUT/xfer-first.out")"
	fi
	echo "# a's log about LLC and links after it:"
	grep -iE 'llc|add.?link|link|violat|protocol|lgr|group' "$RXE_OUT/a.log" |
		head -n 20 | sed 's/^/#   /'
	xfer_ok "a plain TCP client: $N x 4 MiB both ways verified through target_smc to b's 6.1 kernel SMC-R server" \
		-n $N -b 4M -T 120
	"$CTL" -s "$R/a.sock" show links -o all >"$RXE_OUT/a-links.log" 2>&1
	rxe_signal moved
	expect_stat a smc_out_proposals $((N + 1))
	expect_stat a smc_out_accepts $((N + 1))
	expect_stat a smc_out_confirms $((N + 1))
	ksmc_groups a smc_out_lgrs $((N + 1))
	expect_stat a smc_out_rdma $((N + 1))
	expect_stat a smc_out_tcp 0
	# every group's first contact brought the server's ADD_LINK offer,
	# refused, and no LLC message was a violation
	expect_stat a smc_add_link_rejects "$(rxe_stat a smc_out_lgrs)"
	expect_stat a llc_protocol_errors 0
	if logged a "rule=k peer=$RXE_PEER_IP:$PORT dialect=smc-r client=127.0.0.1:[0-9]+ transport=rdma"; then
		ok "a's connection log names the kernel server, the dialect and transport=rdma"
	else
		bad "a's connection log lacks dialect=smc-r ... transport=rdma"
	fi
	daemon_stop a || bad "a did not stop cleanly"
fi
ksmc_kernel_log
rxe_barrier end-ksmc61-target 120 || bad "the hosts are out of step at the end"
exit $fail
