#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two hosts on Linux 6.12 (ksmc.rxe; ksmc61.rxe runs it on 6.1 too): Linux's own SMC-R client on a
# reaches an export of smcproxyd on b through its smc_listen, over RDMA
# end to end (the SMC-R dialect's export side: src/smcr.c for the
# CLC, a link group of the SMC-R dialect per connection, LLC v2 and
# the kernel's CDC).  b's daemon, root here, loads the SMC-R option's BPF
# program itself; a's client is xfer under smcpreload.so:
#   - N connections x SIZE both ways verify;
#   - a's kernel counts N SMC-Rv2 client connections and no fallback;
#     rxe0 on a sent and received about the bytes / MTU packets each way,
#     TCP only the handshakes;
#   - b counts N ACCEPTs, N link groups and N connections relayed over
#     RDMA, none as TCP; show lgrs names the dialect;
#   - the connection log names the dialect and transport=rdma;
#   - then 300 short connections one after another, each verified: each
#     joins the link group the client has with b (no ACCEPT with first
#     contact: b counts 300 joins and no new group), over RDMA; more than
#     the 255 rkeys a group's table holds, so each connection's end must
#     take its rkey off it again (DELETE_RKEY, counted).
# Before all that, smcproxyctl check export x on b (smc_chk -S) says
# SMC-R ready, status 0.  SHORT=n for fewer of them (a quick look).
. "$(dirname "$0")/lib.sh"

ksmc_check_init
PORT=16560
PORT_T=16561
N=${KSMC_N:-16}
SHORT=${SHORT:-300}
SIZE_ARG=${KSMC_SIZE:-4M}
SIZE=$(($(echo "$SIZE_ARG" | tr -d M) * 1048576))

if [ "$RXE_HOST" = b ]; then
	ksmc_export_start
	# check export (as smc_chk -S): the option's program attached, the
	# EID set, rxe0 on the listening address: ready, status 0
	if "$CTL" -s "$R/b.sock" check export x >"$RXE_OUT/check-export.out" 2>&1 &&
		grep -q "export x: SMC-R ready at $RXE_LINK_IP:$PORT" "$RXE_OUT/check-export.out"; then
		ok "check export x: SMC-R ready at $RXE_LINK_IP:$PORT (status 0)"
	else
		bad "check export x: $(cat "$RXE_OUT/check-export.out")"
	fi
	rxe_signal b-ready
	rxe_await moved 300 || bad "a's transfer did not end"
	"$CTL" -s "$R/b.sock" show lgrs >"$RXE_OUT/b-lgrs.log" 2>&1
	expect_stat b smc_conns $N
	expect_stat b smc_accepts $N
	expect_stat b smc_confirms $N
	# concurrent first PROPOSALs each get a group; later ones join
	ksmc_groups b smc_lgrs $N
	j=$(rxe_stat b smc_lgr_joins)
	expect_stat b smc_conns_rdma $N
	expect_stat b smc_conns_tcp 0
	if grep -q "smc-r" "$RXE_OUT/b-lgrs.log"; then
		ok "b's show lgrs names the kernel peers' groups smc-r"
	else
		bad "b's show lgrs: $(head -3 "$RXE_OUT/b-lgrs.log")"
	fi
	if logged b "export=x peer=$RXE_PEER_IP:[0-9]+ dialect=smc-r target=127.0.0.1:$PORT_T transport=rdma"; then
		ok "b's connection log names the dialect and transport=rdma"
	else
		bad "b's connection log lacks dialect=smc-r ... transport=rdma"
	fi
	lgrs=$(rxe_stat b smc_lgrs)
	rxe_signal b-counted
	rxe_await short-done 600 || bad "a's short connections did not end"
	expect_stat b smc_lgr_joins $((j + SHORT))
	expect_stat b smc_lgrs "$lgrs"
	expect_stat b smc_conns_rdma $((N + SHORT))
	expect_stat b smc_conns_tcp 0
	expect_stat b smc_delete_rkeys $((N + SHORT))
	daemon_stop b || bad "b did not stop cleanly"
	kill "$server" 2>/dev/null
	wait "$server" 2>/dev/null
else
	rxe_await b-ready 120 || rxe_die "b did not start"
	snap=$(ksmc_snap clnt)
	if ksmc "$XFER" client -c "$RXE_PEER_IP:$PORT" -n $N -b "$SIZE_ARG" \
		-T 240 >"$RXE_OUT/xfer.out" 2>&1; then
		ok "a kernel SMC-R client: $N x $SIZE_ARG both ways verified through b's smc_listen"
	else
		bad "transfer: $(tail -3 "$RXE_OUT/xfer.out")"
	fi
	ksmc_proof clnt "$snap" $N $((N * SIZE))
	rxe_signal moved
	rxe_await b-counted 120 || bad "b did not count"
	succ=$(ksmc_stat clnt_v2_succ)
	# one client process opens each when the one before has ended
	# (xfer --serial): a process per connection costs about 0.3 s under
	# emulation and proves nothing more
	failed=0
	ksmc "$XFER" client -c "$RXE_PEER_IP:$PORT" -n "$SHORT" -b 16K \
		--serial -T 200 >"$RXE_OUT/xfer-short.out" 2>&1 || failed=1
	s=$(($(ksmc_stat clnt_v2_succ) - succ))
	if [ "$failed" = 0 ] && [ "$s" = "$SHORT" ]; then
		ok "$SHORT short connections one after another verified, each SMC-Rv2 (clnt_v2_succ +$s)"
	else
		bad "$SHORT short connections: clnt_v2_succ +$s: $(grep -v ': ok$' "$RXE_OUT/xfer-short.out" | tail -4)"
	fi
	rxe_signal short-done
fi
"$SMCNL" stats >"$RXE_OUT/smc-stats.log" 2>&1
rxe_barrier end-export-rdma 120 || bad "the hosts are out of step at the end"
exit $fail
