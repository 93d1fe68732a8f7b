#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two hosts on Linux 6.12 (ksmc.rxe): one kernel SMC-R host floods b's
# smc_listen with handshakes it never finishes, and starves nobody else
# (issue 43, M2 and M3, item 7).  a holds two addresses, so it is two
# kernel hosts to b: 10.99.0.21 floods, 10.99.0.1 is a well-behaved
# Linux SMC-R client; and a's daemon is b's native peer.  (Not the other
# way round: Linux's SMC-Rv2 client proposes the first IPv4 GID of its
# device whatever address it connects from, smc_ib_determine_gid_rcu,
# and b declines a GID that is not the connection's address, NOROUTE.)
#   - the flood (tests/tools/ksmcclient -H): round after round, 24
#     PROPOSALs at once from 10.99.0.21, each from a system id of its own
#     (so each is a first contact), and every ACCEPT left without its
#     CONFIRM, held past b's CLC timeout;
#   - b accepts at most kernel_smc.max_pending_per_host (4) of a round and
#     declines the rest, counted (smc_budget_host_pending); the groups it
#     set up for a round go at its CLC timeout (6 s), so the next round
#     gets its 4 again, and each counts as a CLC timeout of that host
#     (smc_clc_timeouts, charged to its rate limit);
#   - while it runs, a's daemon starts again, and its new group with b
#     (a native CLC on b's peer port) comes up (M2: native and SMC-R
#     pending handshakes never share one limit); then 4 connections of
#     the native peer through a's rule
#     verify over RDMA (a: conns_rdma +4, conns_fallback +0), and 4
#     connections of Linux's own SMC-R client from 10.99.0.1 verify
#     over SMC-Rv2 (a's kernel: clnt_v2_succ +4, no fallback; b:
#     smc_conns_rdma 4, the flood's never got there).
. "$(dirname "$0")/lib.sh"

ksmc_check_init
PORT_B=16590
PORT_RULE=16591
PORT_T=16592
PORT_L=16593
HOST2=10.99.0.21
# b's budgets: RXE_FLOOD_PENDING=4 RXE_FLOOD_PER_HOST=32 takes the
# per-host bound away (the second host is then starved: this fails)
PENDING=${RXE_FLOOD_PER_HOST:-4}
KC=$abs_top_builddir/tests/tools/ksmcclient
[ -x "$KC" ] || rxe_die "$KC is not built"

ksmc_cgroup2
if [ "$RXE_HOST" = b ]; then
	RXE2_SECTIONS="kernel_smc: { ueids = [ \"$RXE_KSMC_UEID\" ];
	      allow = [ \"$RXE_PEER_IP/32\", \"$HOST2/32\" ];
	      bpf_object = \"$OBJ\"; max_pending_per_host = $PENDING;
	      max_pending = ${RXE_FLOOD_PENDING:-32}; };"
	listen_at=$RXE_IP0
else
	RXE2_SECTIONS=
	listen_at=$RXE_PEER_IP
fi
rxe2_pair_start "" "" \
	", { name = \"s\"; target = \"127.0.0.1:$PORT_T\";
	     smc_listen = \"$listen_at:$PORT_L\"; }"

# gid_of IPV4: the RoCE v2 GID of an IPv4 address as sysfs writes it
gid_of() {
	printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n' \
		$(echo "$1" | tr . ' ')
}

has_gid() {
	cat "/sys/class/infiniband/$RXE_DEV0/ports/1/gids/"* 2>/dev/null |
		grep -qx "$(gid_of "$1")"
}

if [ "$RXE_HOST" = a ]; then
	ip addr add "$HOST2/32" dev "$RXE_LINK_IF" ||
		rxe_die "cannot add $HOST2 on $RXE_LINK_IF"
	rxe_wait 20 has_gid "$HOST2" || rxe_die "rxe0 has no GID for $HOST2"
	# the flood, round after round until told to stop
	(
		while [ ! -e "$R/flood.stop" ]; do
			"$KC" -c "$RXE_PEER_IP:$PORT_L" -o "$OBJ" -e "$RXE_KSMC_UEID" -b "$HOST2" \
				-H 7 -k 24 >>"$RXE_OUT/flood.out" 2>&1
		done
	) &
	flood=$!
	rxe_wait 60 grep -q '^held ' "$RXE_OUT/flood.out" ||
		bad "the flood's first round got no answers: $(tail -3 "$RXE_OUT/flood.out")"

	# a new native handshake under the flood (M2): a's daemon starts
	# again, so its next connection sets up a new group with b (a CLC
	# on b's peer port) while b holds the flood's unconfirmed groups;
	# native and SMC-R handshakes pending never share one limit
	daemon_stop a || bad "daemon a exited with status $?"
	daemon_start a "$R/a.conf" || rxe_die "daemon a did not start again"
	xfer_ok "a's first connection after its restart (waits for the new group, or falls back)" \
		-n 1 -b 64K -T 60
	rxe_wait 30 sh -c "[ \$(grep -c 'peer b: link group active as client' '$RXE_OUT/a.log') -ge 2 ]" &&
		ok "a new native group with b under the flood" ||
		bad "a's new native group with b did not come up under the flood"
	grep -q '^held ' "$RXE_OUT/flood.out" ||
		bad "the flood was not under way"

	# the native peer, under the flood
	r0=$(rxe_stat a conns_rdma) f0=$(rxe_stat a conns_fallback)
	if "$XFER" client -c "127.0.0.1:$PORT_RULE" -n 4 -b 1M -T 120 \
		>"$RXE_OUT/xfer-native.out" 2>&1; then
		ok "the native peer under the flood: 4 x 1 MiB both ways verified"
	else
		bad "the native peer under the flood: $(tail -3 "$RXE_OUT/xfer-native.out")"
	fi
	r=$(($(rxe_stat a conns_rdma) - r0)) f=$(($(rxe_stat a conns_fallback) - f0))
	if [ "$r" = 4 ] && [ "$f" = 0 ]; then
		ok "the native peer kept RDMA: conns_rdma +4, conns_fallback +0"
	else
		bad "the native peer: conns_rdma +$r, conns_fallback +$f"
	fi

	# a second kernel host, under the flood: Linux's SMC-R client
	succ=$(ksmc_stat clnt_v2_succ) fb=$(ksmc_stat fback_clnt)
	if ksmc "$XFER" client -c "$RXE_PEER_IP:$PORT_L" -n 4 -b 1M -T 120 \
		>"$RXE_OUT/xfer-host2.out" 2>&1; then
		ok "a second kernel host under the flood: 4 x 1 MiB both ways verified"
	else
		bad "the second kernel host: $(tail -3 "$RXE_OUT/xfer-host2.out")"
	fi
	s=$(($(ksmc_stat clnt_v2_succ) - succ)) f=$(($(ksmc_stat fback_clnt) - fb))
	if [ "$s" = 4 ] && [ "$f" = 0 ]; then
		ok "the second kernel host kept SMC-R: clnt_v2_succ +4, no fallback"
	else
		bad "the second kernel host: clnt_v2_succ +$s, fback_clnt +$f"
	fi

	# two rounds at least: the second finds the first's groups gone
	rxe_wait 60 sh -c "[ \$(grep -c '^held ' '$RXE_OUT/flood.out') -ge 2 ]" ||
		bad "the flood did not get to a second round"
	touch "$R/flood.stop"
	wait "$flood"
	sed 's/^/# flood: /' "$RXE_OUT/flood.out"
	# every round: at most PENDING accepted, the rest declined
	if awk -v max=$PENDING '
		/^held / { n++; a = $4 + 0; d += $6; if (a > max) over++ }
		END { exit !(n > 0 && over == 0 && d > 0) }' "$RXE_OUT/flood.out"; then
		ok "the flooding host got at most $PENDING ACCEPTs a round, the rest declined"
	else
		bad "the flood: $(grep '^held ' "$RXE_OUT/flood.out" | tr '\n' ';')"
	fi
	# and its groups went at the CLC timeout: the second round had its
	# ACCEPTs again (kept, they held its pending budget for good)
	if awk '/^held / { n++; if (n == 2) a = $4 + 0 } END { exit !(a > 0) }' \
		"$RXE_OUT/flood.out"; then
		ok "the first round's groups went at the CLC timeout: the second round was accepted again"
	else
		bad "the second round got no ACCEPT: the first round's groups stayed"
	fi
	ip addr del "$HOST2/32" dev "$RXE_LINK_IF"
	rxe_signal flooded
else
	rxe_await flooded 400 || bad "a's flood did not end"
	"$CTL" -s "$R/b.sock" show peers >"$RXE_OUT/b-peers.log" 2>&1
	sed 's/^/# b: /' "$RXE_OUT/b-peers.log"
	n=$(rxe_stat b smc_budget_host_pending)
	if [ "${n:-0}" -gt 0 ]; then
		ok "b declined the flooding host's PROPOSALs past its budget: smc_budget_host_pending $n"
	else
		bad "b never hit the per-host pending budget (smc_budget_host_pending ${n:-none})"
	fi
	expect_stat b smc_conns_rdma 4
	# a's restart under the flood: b accepted a's new native group
	n=$(grep -c 'peer a: link group active as server' "$RXE_OUT/b.log")
	if [ "$n" -ge 2 ]; then
		ok "b set up a's second native group under the flood"
	else
		bad "b has $n native groups with a, want 2 (the restart's under the flood)"
	fi
	n=$(rxe_stat b smc_clc_timeouts)
	if [ "${n:-0}" -ge $PENDING ]; then
		ok "b counted the ACCEPTs never confirmed as CLC timeouts: smc_clc_timeouts $n"
	else
		bad "b's smc_clc_timeouts is ${n:-none}, want at least $PENDING"
	fi
	echo "# b: smc_rate_limited $(rxe_stat b smc_rate_limited)," \
		"smc_declines_sent $(rxe_stat b smc_declines_sent)"
fi
rxe2_pair_stop
exit $fail
