#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two hosts on Linux 6.12 (ksmc.rxe): a plain TCP client on a reaches a
# Linux kernel SMC-R server on b (xfer server under smcpreload.so) through
# a target_smc rule of smcproxyd on a (the standard dialect's rule side,
# src/kpeer.c), with no smcproxyd on b.  a's daemon, root here, loads the
# SMC-R option's program and puts the option on its SYNs; b's kernel
# echoes it and answers our PROPOSAL (SMC-Rv2, the lane's EID, a's GID)
# with a first-contact ACCEPT, which the daemon declines NOSMCRDEV while
# the standard dialect's link groups are not served; both go on as TCP:
#   - 16 connections x 4 MiB both ways verify; a counts 16 PROPOSALs, 16
#     ACCEPTs from the kernel, 16 declines, 16 TCP relays; b's kernel
#     counts 16 server fallbacks and no SMC-R connection;
#   - after a reload whose ueids lack the lane's EID, b's kernel declines
#     our PROPOSAL itself (NOSMCDEV): counted, the data verifies.
. "$(dirname "$0")/lib.sh"

rxe_host_setup
rxe_pair_tools
ksmc_setup

R=$RXE_RUNDIR
PORT=16560
PORT_RULE=16561
OBJ=$abs_top_builddir/src/bpf/smc_opt.bpf.o
N=16
fail=0

[ -f "$OBJ" ] || rxe_die "$OBJ not built (configure found no clang or libbpf)"

listening() {
	ss -ltn | grep -q ":$PORT "
}

if [ "$RXE_HOST" = b ]; then
	ksmc "$XFER" server -q -l "$RXE_LINK_IP:$PORT" >"$RXE_OUT/xfer-server.log" 2>&1 &
	server=$!
	rxe_wait 20 listening || rxe_die "the SMC xfer server did not listen"
	succ=$(ksmc_stat srv_v2_succ)
	fb=$(ksmc_stat fback_srv)
	rxe_signal b-ready
	rxe_await moved 300 || bad "a's transfer did not end"
	s=$(($(ksmc_stat srv_v2_succ) - succ))
	f=$(($(ksmc_stat fback_srv) - fb))
	if [ "$s" = 0 ] && [ "$f" = $N ]; then
		ok "b's kernel counts $N server fallbacks, no SMC-R connection (our DECLINE reached it)"
	else
		bad "b's kernel: srv_v2_succ +$s (want 0), fback_srv +$f (want $N)"
	fi
	rxe_await eid-done 120 || bad "a's connection after the reload did not end"
	kill "$server" 2>/dev/null
	wait "$server" 2>/dev/null
else
	grep -q ' - cgroup2 ' /proc/self/mountinfo ||
		mount -t cgroup2 none /sys/fs/cgroup ||
		rxe_die "cannot mount cgroup2"
	cat >"$R/a.conf" <<EOF
smcproxyd: { name = "a"; workers = 1; control_socket = "$R/a.sock"; };
rules = ( { name = "k"; listen = "127.0.0.1:$PORT_RULE";
            target_smc = "$RXE_PEER_IP:$PORT"; } );
kernel_smc: { ueids = [ "$RXE_KSMC_UEID" ]; bpf_object = "$OBJ"; };
EOF
	daemon_start a "$R/a.conf" || rxe_die "daemon a did not start"
	rxe_await b-ready 120 || rxe_die "b did not start its server"
	xfer_ok "a plain TCP client: $N x 4 MiB both ways verified through target_smc to b's kernel SMC-R server" \
		-n $N -b 4M -T 240
	rxe_signal moved
	expect_stat a smc_out_echoed $N
	expect_stat a smc_out_proposals $N
	expect_stat a smc_out_accepts $N
	expect_stat a smc_out_decline_nodev $N
	expect_stat a smc_out_tcp $N
	if logged a "rule=k peer=$RXE_PEER_IP:$PORT dialect=smc-r client=127.0.0.1:[0-9]+ transport=tcp decline=NOSMCRDEV connected=yes"; then
		ok "a's connection log names the kernel server, the dialect and our DECLINE"
	else
		bad "a's connection log lacks dialect=smc-r ... decline=NOSMCRDEV"
	fi
	sed -i "s/ueids = \[ \"$RXE_KSMC_UEID\" \]/ueids = [ \"NOT-THE-LAB\" ]/" "$R/a.conf"
	"$CTL" -s "$R/a.sock" reload >/dev/null || bad "reload refused"
	xfer_ok "an EID b's kernel does not serve: it declines, the data verifies as TCP" \
		-n 1 -b 256K -T 60
	expect_stat a smc_out_declines_received 1
	rxe_signal eid-done
	daemon_stop a || bad "a did not stop cleanly"
fi
"$SMCNL" stats >"$RXE_OUT/smc-stats.log" 2>&1
rxe_barrier end-target 120 || bad "the hosts are out of step at the end"
exit $fail
