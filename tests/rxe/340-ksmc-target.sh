#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two hosts on Linux 6.12 (ksmc.rxe): a plain TCP client on a reaches a
# Linux kernel SMC-R server on b (xfer server under smcpreload.so) through
# a target_smc rule of smcproxyd on a (the SMC-R dialect's rule side,
# src/smcr.c), with no smcproxyd on b.  a's daemon, root here, loads the
# SMC-R option's program and puts the option on its SYNs; b's kernel
# echoes it and answers our PROPOSAL (SMC-Rv2, the lane's EID, a's GID,
# one link) with a first-contact ACCEPT; our CONFIRM, b's CONFIRM_LINK on
# the new link and our answer, and the connection relays over RDMA:
#   - 16 connections x 4 MiB both ways verify; a counts 16 PROPOSALs, 16
#     ACCEPTs from the kernel, 16 CONFIRMs, 16 link groups, 16 RDMA
#     relays and no TCP one; b's kernel counts 16 SMC-Rv2 server
#     connections and no fallback; rxe0 on b sent and received about the
#     bytes / MTU packets each way, TCP only the handshakes;
#   - then 300 short connections one after another, each verified: b's
#     kernel puts each on the link group it has with a (an ACCEPT without
#     first contact naming our QP): a counts 300 joins, no new group, and
#     a DELETE_RKEY as each ends (a group's table holds 255 rkeys);
#   - after a reload whose ueids lack the lane's EID, b's kernel declines
#     our PROPOSAL itself (NOSMCDEV): counted, the data verifies;
#   - with the EID back, smcproxyctl check smc b:PORT (smc_chk -C) gets
#     the kernel's ACCEPT and says SMC-R ready, status 0, nothing counted.
. "$(dirname "$0")/lib.sh"

ksmc_check_init
PORT=16560
PORT_RULE=16561
N=16
SHORT=${SHORT:-300}

if [ "$RXE_HOST" = b ]; then
	ksmc_server_start
	succ=$(ksmc_stat srv_v2_succ)
	snap=$(ksmc_snap srv)
	rxe_signal b-ready
	rxe_await moved 300 || bad "a's transfer did not end"
	ksmc_proof srv "$snap" $N $((N * 4 * 1048576))
	rxe_await short-done 600 || bad "a's short connections did not end"
	s=$(($(ksmc_stat srv_v2_succ) - succ))
	if [ "$s" = $((N + SHORT)) ]; then
		ok "b's kernel counts $SHORT more SMC-Rv2 server connections"
	else
		bad "b's kernel: srv_v2_succ +$s, want $((N + SHORT))"
	fi
	rxe_await eid-done 120 || bad "a's connection after the reload did not end"
	kill "$server" 2>/dev/null
	wait "$server" 2>/dev/null
else
	ksmc_rule_start
	rxe_await b-ready 120 || rxe_die "b did not start its server"
	xfer_ok "a plain TCP client: $N x 4 MiB both ways verified through target_smc to b's kernel SMC-R server" \
		-n $N -b 4M -T 240
	"$CTL" -s "$R/a.sock" -j show conns >"$RXE_OUT/a-conns.log" 2>&1
	"$CTL" -s "$R/a.sock" show links -o all >"$RXE_OUT/a-links.log" 2>&1
	rxe_signal moved
	expect_stat a smc_out_echoed $N
	expect_stat a smc_out_proposals $N
	expect_stat a smc_out_accepts $N
	expect_stat a smc_out_confirms $N
	# the server decides: first contact, or the group it has with us
	ksmc_groups a smc_out_lgrs $N
	j=$(rxe_stat a smc_lgr_joins)
	expect_stat a smc_out_rdma $N
	expect_stat a smc_out_tcp 0
	if logged a "rule=k peer=$RXE_PEER_IP:$PORT dialect=smc-r client=127.0.0.1:[0-9]+ transport=rdma"; then
		ok "a's connection log names the kernel server, the dialect and transport=rdma"
	else
		bad "a's connection log lacks dialect=smc-r ... transport=rdma"
	fi
	lgrs=$(rxe_stat a smc_out_lgrs)
	# one client process opens each when the one before has ended
	# (xfer --serial): a process per connection costs about 0.3 s under
	# emulation and proves nothing more
	if "$XFER" client -c "127.0.0.1:$PORT_RULE" -n "$SHORT" -b 16K \
		--serial -T 200 >"$RXE_OUT/xfer-short.out" 2>&1; then
		ok "$SHORT short connections one after another verified"
	else
		bad "$SHORT short connections: $(grep -v ': ok$' "$RXE_OUT/xfer-short.out" | tail -4)"
	fi
	expect_stat a smc_lgr_joins $((j + SHORT))
	expect_stat a smc_out_lgrs "$lgrs"
	expect_stat a smc_out_rdma $((N + SHORT))
	expect_stat a smc_delete_rkeys $((N + SHORT))
	rxe_signal short-done
	sed -i "s/ueids = \[ \"$RXE_KSMC_UEID\" \]/ueids = [ \"NOT-THE-LAB\" ]/" "$R/a.conf"
	"$CTL" -s "$R/a.sock" reload >/dev/null || bad "reload refused"
	xfer_ok "an EID b's kernel does not serve: it declines, the data verifies as TCP" \
		-n 1 -b 256K -T 60
	expect_stat a smc_out_declines_received 1
	expect_stat a smc_out_tcp 1
	# check smc (as smc_chk -C) against the real kernel server, the lane's
	# EID back: a PROPOSAL, the kernel's ACCEPT, our DECLINE; status 0
	sed -i "s/ueids = \[ \"NOT-THE-LAB\" \]/ueids = [ \"$RXE_KSMC_UEID\" ]/" "$R/a.conf"
	"$CTL" -s "$R/a.sock" reload >/dev/null || bad "reload refused"
	p0=$(rxe_stat a smc_out_proposals)
	if "$CTL" -s "$R/a.sock" check smc "$RXE_PEER_IP:$PORT" \
		>"$RXE_OUT/check-smc.out" 2>&1 &&
		grep -q '^  answer: ACCEPT' "$RXE_OUT/check-smc.out" &&
		grep -q '^  here: SMC-R ready$' "$RXE_OUT/check-smc.out"; then
		ok "check smc $RXE_PEER_IP:$PORT: b's kernel ACCEPTs, SMC-R ready here (status 0)"
	else
		bad "check smc $RXE_PEER_IP:$PORT: $(cat "$RXE_OUT/check-smc.out")"
	fi
	expect_stat a smc_out_proposals "$p0"
	rxe_signal eid-done
	daemon_stop a || bad "a did not stop cleanly"
fi
"$SMCNL" stats >"$RXE_OUT/smc-stats.log" 2>&1
rxe_barrier end-target 120 || bad "the hosts are out of step at the end"
exit $fail
