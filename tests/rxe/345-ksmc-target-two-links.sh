#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two hosts with two links (ksmc2.rxe: RXE_LINKS=2, rxe0 on eth0, rxe1 on
# eth1; Linux 6.12): a plain TCP client on a reaches Linux's own SMC-R
# server on b through smcproxyd a's target_smc rule, and the link group
# between them gets a second link and fails over to it (the SMC-R
# dialect's rule side with two links: the kernel server's v2 ADD_LINK
# with rkeys answered with ours, its CONFIRM_RKEY for each new RMB kept,
# failover started by the kernel: its DELETE_LINK and validation CDCs).
#   1. a first contact: b's kernel and a's daemon each have one group
#      with two active links, one on rxe0 and one on rxe1;
#   2. N connections x SIZE both ways on that group (b's kernel spreads
#      them over both links); when about a fifth has crossed, b (the
#      kernel's side) takes eth0 down: every byte still verifies, b's
#      kernel counts N SMC-Rv2 server connections and no fallback, a's
#      connections moved (none failed, all over RDMA), and each side
#      keeps one link, on rxe1;
#   3. b takes eth0 up again: b's kernel adds the link on rxe0 back, a
#      takes it: two links on each side.
. "$(dirname "$0")/lib.sh"

ksmc_check_init
[ -n "${RXE_LINK2_IF:-}" ] && [ -e "/sys/class/infiniband/$RXE_DEV1" ] ||
	rxe_die "no second link: run with RXE_LINKS=2 (ksmc2.rxe)"
PORT=16580
PORT_RULE=16581
N=8
SIZE=16777216
mtu=$(rxe_active_mtu)
want=$((N * SIZE / mtu))

if [ "$RXE_HOST" = b ]; then
	ksmc_server_start
	rxe_signal b-ready
	rxe_await group 120 || rxe_die "a made no link group"
	rxe_expect "b's kernel: one group with two active links, one on $RXE_DEV0, one on $RXE_DEV1" \
		ksmc_kernel_links two 1 1
	sed "s/^/# b: /" "$RXE_OUT/links-two.log"
	s0=$(ksmc_stat srv_v2_succ) f0=$(ksmc_stat fback_srv) r0=$(rxe_rcvd2)
	rxe_signal b-two
	underway() {
		# shellcheck disable=SC2046,SC2086 # the two numbers, twice
		set -- $r0 $(rxe_rcvd2)
		[ $(($3 - $1 + $4 - $2)) -ge $((want / 5)) ] ||
			rxe_sync_has moved
	}
	rxe_wait 180 underway || bad "a's transfer did not get under way"
	ksmc_links_busy b
	ip link set "$RXE_LINK_IF" down || bad "cannot take $RXE_LINK_IF down"
	echo "# b: $RXE_LINK_IF down at $(rxe_now) s"
	rxe_signal down
	rxe_await moved 300 || bad "a's transfer did not end"
	s=$(($(ksmc_stat srv_v2_succ) - s0)) f=$(($(ksmc_stat fback_srv) - f0))
	if [ "$s" = "$N" ] && [ "$f" = 0 ]; then
		ok "b's kernel counts $N SMC-Rv2 server connections, no fallback"
	else
		bad "b's kernel: srv_v2_succ +$s (want $N), fback_srv +$f"
	fi
	rxe_expect "b's kernel: one link left, on $RXE_DEV1" \
		ksmc_kernel_links one 0 1
	sed "s/^/# b: /" "$RXE_OUT/links-one.log"
	ip link set "$RXE_LINK_IF" up || bad "cannot take $RXE_LINK_IF up again"
	echo "# b: $RXE_LINK_IF up at $(rxe_now) s"
	rxe_signal up
	rxe_expect "b's kernel: two links again" ksmc_kernel_links again 1 1
	rxe_await a-done 120 || bad "a did not finish"
	kill "$server" 2>/dev/null
	wait "$server" 2>/dev/null
else
	ksmc_rule_start
	rxe_await b-ready 120 || rxe_die "b did not start its server"
	xfer_ok "a plain TCP client through target_smc: first contact, 2 x 256 KiB both ways verified" \
		-n 2 -b 256K -T 120
	rxe_signal group
	rxe_expect "a's daemon: a group with two active links, one on $RXE_DEV0, one on $RXE_DEV1" \
		ksmc_daemon_links a two 1 1
	expect_stat a smc_add_link_rejects 0
	expect_stat a smc_add_link_gid_refused 0
	rxe_await b-two 120 || rxe_die "b is not ready for the transfer"
	t0=$(rxe_now)
	"$XFER" client -c "127.0.0.1:$PORT_RULE" -n $N -b $SIZE -T 240 \
		>"$RXE_OUT/xfer.out" 2>&1 &
	xpid=$!
	rxe_await down 240 || bad "b did not take $RXE_LINK_IF down"
	rxe_alive "$xpid" ||
		bad "the transfer had ended when b's $RXE_LINK_IF went down"
	if wait "$xpid"; then
		ok "TCP through target_smc: $N x $((SIZE / 1048576)) MiB both ways verified across the kernel's failover"
	else
		bad "transfer: $(tail -3 "$RXE_OUT/xfer.out")"
	fi
	awk -v a="$t0" -v b="$(rxe_now)" \
		'BEGIN { printf "# %d x %d MiB both ways in %.1f s\n", '$N', '$((SIZE / 1048576))', b - a }'
	rxe_signal moved
	rxe_expect "a's daemon: one link left, on $RXE_DEV1" \
		ksmc_daemon_links a one 0 1
	expect_stat a smc_out_rdma $((N + 2))
	expect_stat a smc_out_tcp 0
	expect_stat a conn_failover_failed 0
	expect_stat a llc_protocol_errors 0
	rxe_await up 120 || bad "b did not take $RXE_LINK_IF up again"
	rxe_expect "a's daemon: two links again after b's $RXE_LINK_IF came back up" \
		ksmc_daemon_links a again 1 1
	"$CTL" -s "$R/a.sock" show links -o all >"$RXE_OUT/a-links.log" 2>&1
	rxe_signal a-done
	daemon_stop a || bad "a did not stop cleanly"
fi
ksmc_kernel_log
rxe_barrier end-target-two 120 || bad "the hosts are out of step at the end"
exit $fail
