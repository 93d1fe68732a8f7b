#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two hosts with two links (ksmc2.rxe: RXE_LINKS=2, rxe0 on eth0, rxe1 on
# eth1; Linux 6.12): Linux's own SMC-R client on a reaches an export of
# smcproxyd on b through its smc_listen, and the link group between them
# gets a second link and fails over to it (the SMC-R dialect's export
# side with two links: our v2 ADD_LINK with rkeys, CONFIRM_RKEY per new
# RMB, failover with the kernel's validation CDCs).
#   1. a first contact: a's kernel and b's daemon each have one group
#      with two active links, one on rxe0 and one on rxe1; b offered a
#      real second link (no ADD_LINK without a link);
#   2. N connections x SIZE both ways on that group, spread over both
#      links by b's ACCEPTs; when about a fifth has crossed, b (our
#      side) takes eth0 down: every byte still verifies, a's kernel
#      counts N SMC-Rv2 connections and no fallback, b moved its
#      connections (conn_failovers, none failed), and each side keeps
#      one link, on rxe1;
#   3. b takes eth0 up again: b adds the link on rxe0 back (the port
#      came back), two links on each side.
. "$(dirname "$0")/lib.sh"

ksmc_check_init
[ -n "${RXE_LINK2_IF:-}" ] && [ -e "/sys/class/infiniband/$RXE_DEV1" ] ||
	rxe_die "no second link: run with RXE_LINKS=2 (ksmc2.rxe)"
PORT=16570
PORT_T=16571
N=8
SIZE=16777216
mtu=$(rxe_active_mtu)
want=$((N * SIZE / mtu))

if [ "$RXE_HOST" = b ]; then
	ksmc_export_start
	rxe_signal b-ready
	rxe_await group 120 || rxe_die "a made no link group"
	rxe_expect "b's daemon: a group with two active links, one on $RXE_DEV0, one on $RXE_DEV1" \
		ksmc_daemon_links b two 1 1
	expect_stat b smc_add_link_none 0
	expect_stat b smc_add_link_gid_refused 0
	expect_stat b smc_lgrs 1
	rxe_signal b-two
	rxe_await started 180 || rxe_die "a's transfer did not start"
	ip link set "$RXE_LINK_IF" down || bad "cannot take $RXE_LINK_IF down"
	echo "# b: $RXE_LINK_IF down at $(rxe_now) s"
	rxe_signal down
	rxe_await moved 300 || bad "a's transfer did not end"
	rxe_expect "b's daemon: one link left, on $RXE_DEV1" ksmc_daemon_links b one 0 1
	f=$(rxe_stat b conn_failovers)
	if [ "${f:-0}" -ge 1 ]; then
		ok "b moved $f connections to the link on $RXE_DEV1"
	else
		bad "b moved no connection (conn_failovers ${f:-none})"
	fi
	expect_stat b conn_failover_failed 0
	expect_stat b smc_conns_tcp 0
	expect_stat b llc_protocol_errors 0
	ip link set "$RXE_LINK_IF" up || bad "cannot take $RXE_LINK_IF up again"
	echo "# b: $RXE_LINK_IF up at $(rxe_now) s"
	rxe_expect "b's daemon: two links again after $RXE_LINK_IF came back up" \
		ksmc_daemon_links b again 1 1
	rxe_signal up
	rxe_await a-two 120 || bad "a did not look at its links again"
	"$CTL" -s "$R/b.sock" show lgrs >"$RXE_OUT/b-lgrs.log" 2>&1
	daemon_stop b || bad "b did not stop cleanly"
	kill "$server" 2>/dev/null
	wait "$server" 2>/dev/null
else
	rxe_await b-ready 120 || rxe_die "b did not start"
	if ksmc "$XFER" client -c "$RXE_PEER_IP:$PORT" -n 2 -b 256K -T 120 \
		>"$RXE_OUT/xfer-first.out" 2>&1; then
		ok "kernel SMC-R to b's export: first contact, 2 x 256 KiB both ways verified"
	else
		bad "first transfer: $(tail -3 "$RXE_OUT/xfer-first.out")"
	fi
	rxe_signal group
	rxe_expect "a's kernel: one group with two active links, one on $RXE_DEV0, one on $RXE_DEV1" \
		ksmc_kernel_links two 1 1
	sed "s/^/# a: /" "$RXE_OUT/links-two.log"
	rxe_await b-two 120 || rxe_die "b is not ready for the transfer"
	s0=$(ksmc_stat clnt_v2_succ) f0=$(ksmc_stat fback_clnt) r0=$(rxe_rcvd2)
	t0=$(rxe_now)
	ksmc "$XFER" client -c "$RXE_PEER_IP:$PORT" -n $N -b $SIZE -T 240 \
		>"$RXE_OUT/xfer.out" 2>&1 &
	xpid=$!
	rxe_underway "$r0" "$xpid" "$want"
	ksmc_links_busy a
	rxe_signal started
	rxe_await down 60 || bad "b did not take $RXE_LINK_IF down"
	rxe_alive "$xpid" ||
		bad "the transfer had ended when b's $RXE_LINK_IF went down"
	if wait "$xpid"; then
		ok "kernel SMC-R to b's export: $N x $((SIZE / 1048576)) MiB both ways verified across b's failover"
	else
		bad "transfer: $(tail -3 "$RXE_OUT/xfer.out")"
	fi
	awk -v a="$t0" -v b="$(rxe_now)" \
		'BEGIN { printf "# %d x %d MiB both ways in %.1f s\n", '$N', '$((SIZE / 1048576))', b - a }'
	s=$(($(ksmc_stat clnt_v2_succ) - s0)) f=$(($(ksmc_stat fback_clnt) - f0))
	if [ "$s" = "$N" ] && [ "$f" = 0 ]; then
		ok "a's kernel counts $N SMC-Rv2 client connections, no fallback"
	else
		bad "a's kernel: clnt_v2_succ +$s (want $N), fback_clnt +$f"
	fi
	rxe_signal moved
	rxe_expect "a's kernel: one link left, on $RXE_DEV1" ksmc_kernel_links one 0 1
	sed "s/^/# a: /" "$RXE_OUT/links-one.log"
	rxe_await up 120 || bad "b did not take $RXE_LINK_IF up again"
	rxe_expect "a's kernel: two links again" ksmc_kernel_links again 1 1
	rxe_signal a-two
fi
ksmc_kernel_log
rxe_barrier end-export-two 120 || bad "the hosts are out of step at the end"
exit $fail
