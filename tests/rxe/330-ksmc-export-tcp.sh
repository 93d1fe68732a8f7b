#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two hosts on Linux 6.12 (ksmc.rxe): Linux's own SMC-R client on a
# reaches an export of smcproxyd on b through its smc_listen (the SMC-R
# dialect's export side, src/smcr.c).  b's daemon, root here, loads the
# SMC-R option's BPF program itself; a's kernel client (xfer under
# smcpreload.so) gets its option echoed, proposes SMC-Rv2 with the lane's
# EID and its GID, and is declined (350 has the one that is not): CNFERR
# while a's address is not in b's kernel_smc.allow, NOSMCDEV once b's
# ueids no longer hold the lane's EID (a reload).  Each time the client
# goes on as TCP on the same connection, relayed by b to its target,
# every byte verified:
#   - 16 connections x 4 MiB both ways verify; a's kernel counts 16
#     fallbacks and no SMC-R connection; b counts 16 echoed options, 16
#     PROPOSALs, 16 CNFERR declines (the first 10 for allow, the rest at
#     once: each failure is charged to a's host in the peer port's rate
#     table), 16 TCP relays;
#   - after the reload: NOSMCDEV, counted, the data verifies;
#   - a plain TCP client (no library): no option, TCP, counted.
. "$(dirname "$0")/lib.sh"

ksmc_check_init
PORT=16550
PORT_T=16551
N=16

if [ "$RXE_HOST" = b ]; then
	# the daemon attaches to the cgroup v2 it runs in
	ksmc_cgroup2
	cat >"$R/b.conf" <<EOF
smcproxyd: { name = "b"; workers = 1; control_socket = "$R/b.sock"; };
exports = ( { name = "x"; target = "127.0.0.1:$PORT_T";
              smc_listen = "$RXE_LINK_IP:$PORT"; } );
kernel_smc: { ueids = [ "$RXE_KSMC_UEID" ]; allow = [ "192.0.2.0/24" ];
              bpf_object = "$OBJ"; };
EOF
	rxe_target_start
	daemon_start b "$R/b.conf" || rxe_die "daemon b did not start"
	opt=$("$CTL" -s "$R/b.sock" version | sed -n 's/^smc_option *//p')
	case $opt in
	"attached to "*) ok "b attached the SMC-R option's program ($opt)" ;;
	*) bad "b did not attach the option's program: $opt" ;;
	esac
	rxe_signal b-ready
	rxe_await moved 300 || bad "a's transfer did not end"
	expect_stat b smc_conns $N
	expect_stat b smc_opt_echoed $N
	expect_stat b smc_proposals $N
	# each is charged to a's host: after the rate table's burst (10)
	# the rest are declined at once, with the same CNFERR
	_allow=$(rxe_stat b smc_decline_allow)
	_limited=$(rxe_stat b smc_rate_limited)
	if [ "$((_allow + _limited))" = "$N" ] && [ "$_allow" -ge 10 ]; then
		ok "b: $_allow CNFERR for allow, then $_limited at once for the rate table"
	else
		bad "b: smc_decline_allow $_allow + smc_rate_limited $_limited, want $N with 10 or more for allow"
	fi
	expect_stat b smc_conns_tcp $N
	if logged b "export=x peer=$RXE_PEER_IP:[0-9]+ dialect=smc-r target=127.0.0.1:$PORT_T transport=tcp decline=CNFERR connected=yes"; then
		ok "b's connection log names the dialect, the kernel client and the DECLINE"
	else
		bad "b's connection log lacks dialect=smc-r ... decline=CNFERR"
	fi
	sed -i -e "s/ueids = \[ \"$RXE_KSMC_UEID\" \]/ueids = [ \"NOT-THE-LAB\" ]/" \
		-e "s|192.0.2.0/24|$RXE_PEER_IP/32|" "$R/b.conf"
	"$CTL" -s "$R/b.sock" reload >/dev/null || bad "reload refused"
	rxe_signal reloaded
	rxe_await eid-done 120 || bad "a's connection after the reload did not end"
	expect_stat b smc_decline_eid 1
	rxe_signal eid-checked
	rxe_await plain-done 120 || bad "a's plain connection did not end"
	expect_stat b smc_opt_absent 1
	expect_stat b smc_conns_tcp $((N + 2))
	daemon_stop b || bad "b did not stop cleanly"
	kill "$server" 2>/dev/null
	wait "$server" 2>/dev/null
else
	rxe_await b-ready 120 || rxe_die "b did not start"
	succ=$(ksmc_stat clnt_v2_succ)
	fb=$(ksmc_stat fback_clnt)
	if ksmc "$XFER" client -c "$RXE_PEER_IP:$PORT" -n $N -b 4M -T 240 \
		>"$RXE_OUT/xfer.out" 2>&1; then
		ok "a kernel SMC-R client: $N x 4 MiB both ways verified through b's smc_listen, declined (CNFERR) to TCP"
	else
		bad "transfer: $(tail -3 "$RXE_OUT/xfer.out")"
	fi
	s=$(($(ksmc_stat clnt_v2_succ) - succ))
	f=$(($(ksmc_stat fback_clnt) - fb))
	if [ "$s" = 0 ] && [ "$f" = $N ]; then
		ok "a's kernel counts $N fallbacks, no SMC-R connection (the DECLINE reached it)"
	else
		bad "a's kernel: clnt_v2_succ +$s (want 0), fback_clnt +$f (want $N)"
	fi
	rxe_signal moved
	rxe_await reloaded 120 || bad "b did not reload"
	if ksmc "$XFER" client -c "$RXE_PEER_IP:$PORT" -n 1 -b 256K -T 60 \
		>"$RXE_OUT/xfer-eid.out" 2>&1; then
		ok "an EID b does not serve: declined, the data verifies as TCP"
	else
		bad "EID refused: $(tail -3 "$RXE_OUT/xfer-eid.out")"
	fi
	rxe_signal eid-done
	rxe_await eid-checked 120 || bad "b did not check"
	if "$XFER" client -c "$RXE_PEER_IP:$PORT" -n 1 -b 256K -T 60 \
		>"$RXE_OUT/xfer-plain.out" 2>&1; then
		ok "a plain TCP client through smc_listen verifies"
	else
		bad "plain client: $(tail -3 "$RXE_OUT/xfer-plain.out")"
	fi
	rxe_signal plain-done
fi
"$SMCNL" stats >"$RXE_OUT/smc-stats.log" 2>&1
rxe_barrier end-export 120 || bad "the hosts are out of step at the end"
exit $fail
