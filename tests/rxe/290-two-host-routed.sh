#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two hosts in two subnets with a router between them: routed RoCE v2.
# Host a's link moves into a router network namespace ("rtr": forwarding
# on, 10.99.0.1 on the link, 10.98.0.254 on a veth pair); daemon a's rxe
# device sits on the veth's other end in the initial namespace (rxe's UDP
# socket lives there), 10.98.0.1/24, routed to 10.99.0.0/24 through the
# namespace; host b keeps 10.99.0.2/24 (its peer port) and routes
# 10.98.0.0/24 back.  Daemon b's link groups with a use b's second
# address, 10.99.0.3 (peers[].source), daemon a's use rxe0 by name
# (peers[].device).  Every RoCE packet crosses the router, which
# decrements its TTL; tcpdump in the router namespace shows the headers.
#
# The hop limit of RoCE v2 packets is the route's: Linux sets it when a
# queue pair is connected, whatever the program asked for (ib.c).  First
# a's route to b's RDMA address says hoplimit 1 (what ib.c asked for
# before, believing it mattered): a's RoCE packets reach the router with
# TTL 1 and die there while b's reach a, so a takes the group for active
# but b declines it (no CONFIRM_LINK response): the peer goes on the
# fallback's back-off and both connections verify over the TCP fallback
# (its TCP goes to 10.99.0.2, routed with TTL 64), one group tried.  Then
# with the route's default (64) and DSCP 26 (rdma.dscp): the router sees
# a's packets come in with TTL 64 and tos 0x68 and leave with TTL 63, and
# 16 x 4 MiB both ways verify over RDMA, none over the fallback.
. "$(dirname "$0")/lib.sh"

rxe_host_setup
rxe_pair_tools
command -v tcpdump >/dev/null || rxe_die "no tcpdump (apt install tcpdump)"

R=$RXE_RUNDIR
PORT_B=7291
PORT_RULE=16590
PORT_T=16589
NET_A=10.98.0
NET_B=${RXE_LINK_IP%.*}
B_RDMA=$NET_B.3
LINK_FAILED='link group setup failed|lgr [0-9]+ link [0-9]+ .*down|no CONFIRM_LINK'
fail=0

if [ "$RXE_HOST" = a ]; then
	modprobe veth || rxe_die "modprobe veth failed"
	rdma link delete "$RXE_DEV0" || rxe_die "cannot delete $RXE_DEV0"
	ip addr flush dev "$RXE_LINK_IF"
	ip netns add rtr || rxe_die "ip netns add rtr failed"
	ip link set "$RXE_LINK_IF" netns rtr ||
		rxe_die "cannot move $RXE_LINK_IF into the router"
	ip link add vr0 type veth peer name vr0p netns rtr ||
		rxe_die "cannot create the veth pair"
	ip -n rtr link set lo up &&
		ip -n rtr addr add "$RXE_LINK_IP/24" dev "$RXE_LINK_IF" &&
		ip -n rtr link set "$RXE_LINK_IF" up &&
		ip -n rtr addr add "$NET_A.254/24" dev vr0p &&
		ip -n rtr link set vr0p up &&
		ip netns exec rtr sysctl -qw net.ipv4.ip_forward=1 ||
		rxe_die "cannot set the router up"
	ip addr add "$NET_A.1/24" dev vr0 && ip link set vr0 up &&
		ip route add "$NET_B.0/24" via "$NET_A.254" ||
		rxe_die "cannot route through the router"
	rdma link add "$RXE_DEV0" type rxe netdev vr0 ||
		rxe_die "rdma link add $RXE_DEV0 on vr0 failed"
	rxe_wait 20 rxe_port_ready "$RXE_DEV0" "$NET_A.1" ||
		rxe_die "$RXE_DEV0 did not get a RoCE v2 GID for $NET_A.1"
	RXE_IP0=$NET_A.1
	RXE_PEER_EXTRA="device = \"$RXE_DEV0\";"
else
	ip addr add "$B_RDMA/24" dev "$RXE_LINK_IF" &&
		ip route add "$NET_A.0/24" via "$NET_B.1" ||
		rxe_die "cannot address $B_RDMA or route to $NET_A.0/24"
	rxe_wait 20 rxe_port_ready "$RXE_DEV0" "$B_RDMA" ||
		rxe_die "$RXE_DEV0 has no RoCE v2 GID for $B_RDMA"
	RXE_PEER_IP=$NET_A.1
	RXE_PEER_EXTRA="source = \"$B_RDMA\";"
fi
rxe_barrier routed 60 || rxe_die "the hosts are out of step"
if busybox ping -c 1 -W 5 "$RXE_PEER_IP" >"$RXE_OUT/ping.out" 2>&1; then
	ok "$RXE_PEER_IP answers across the router"
else
	rxe_die "no route to $RXE_PEER_IP: $(cat "$RXE_OUT/ping.out")"
fi

# rtr_capture NAME IF: on a, RoCE packets through the router's IF from
# now on, tcpdump -v into $RXE_OUT/NAME.cap ($cap_NAME: its pid).
rtr_capture() {
	ip netns exec rtr tcpdump -l -n -v -i "$2" udp port 4791 \
		>"$RXE_OUT/$1.cap" 2>"$RXE_OUT/$1.cap.err" &
	eval "cap_$1=$!"
	rxe_wait 10 grep -q listening "$RXE_OUT/$1.cap.err" ||
		bad "tcpdump on the router's $2 did not start"
}

rtr_capture_stop() {
	eval "kill \$cap_$1; wait \$cap_$1"
}

# a's RoCE packets to b: the IP header of each, as tcpdump -v prints it
# on the line before the addresses ("IP (tos 0x68, ttl 64, ..."), counted.
rtr_headers() {
	grep -B1 "$NET_A\.1\.[0-9]* > $B_RDMA\.4791" "$RXE_OUT/$1.cap" |
		grep -o 'tos 0x[0-9a-f]*, ttl [0-9]*' | sort | uniq -c
}

rtr_report() {
	echo "# $1, RoCE from a to b entering the router:"
	rtr_headers "$2" | sed 's/^/#   /'
	echo "# ... and leaving it:"
	rtr_headers "$3" | sed 's/^/#   /'
}

# --- the route's hop limit 1: the packets die at the router ---------------
if [ "$RXE_HOST" = b ]; then
	head -c 48 /dev/urandom >"$R/psk" && chmod 600 "$R/psk" &&
		cp "$R/psk" "$RXE_SYNC_DIR/.psk" &&
		mv "$RXE_SYNC_DIR/.psk" "$RXE_SYNC_DIR/psk" ||
		rxe_die "cannot write the key"
	rxe2_pair_confs ""
	rxe_target_start
	daemon_start b "$R/b.conf" || rxe_die "daemon b did not start"
	rxe_signal hop1-b-ready
	rxe_await hop1-done 240 || bad "a's transfers did not end"
	expect_stat b conns_rdma 0
	daemon_stop b || bad "daemon b exited with status $?"
else
	ip route add "$B_RDMA/32" via "$NET_A.254" hoplimit 1 ||
		rxe_die "cannot add a route with hoplimit 1"
	rxe_await hop1-b-ready || rxe_die "b did not start"
	cp "$RXE_SYNC_DIR/psk" "$R/psk" && chmod 600 "$R/psk" ||
		rxe_die "cannot read b's key"
	rxe2_pair_confs ""
	rtr_capture in1 vr0p
	rtr_capture out1 "$RXE_LINK_IF"
	daemon_start a "$R/a.conf" || rxe_die "daemon a did not start"
	xfer_ok "hop limit 1: a connection verifies (it waits for the group, or falls back)" \
		-n 1 -b 64K -T 60
	if rxe_wait 60 logged a "$LINK_FAILED"; then
		ok "hop limit 1: the link group across the router fails: $(grep -Em1 "$LINK_FAILED" "$RXE_OUT/a.log")"
	else
		bad "hop limit 1: no link failure in a's log"
	fi
	xfer_ok "hop limit 1: a second connection verifies (the fallback, backed off)" \
		-n 1 -b 64K -T 60
	expect_stat a conns_rdma 0
	expect_stat a conns_fallback 2
	_n=$(grep -c 'setting up a link group' "$RXE_OUT/a.log")
	if [ "$_n" = 1 ]; then
		ok "hop limit 1: one link group tried, then the fallback's back-off"
	else
		bad "hop limit 1: $_n link groups tried for two connections"
	fi
	daemon_stop a || bad "daemon a exited with status $?"
	rtr_capture_stop in1
	rtr_capture_stop out1
	rtr_report "route hoplimit 1" in1 out1
	if rtr_headers in1 | grep -q 'ttl 1$' && [ -z "$(rtr_headers out1)" ]
	then
		ok "hop limit 1: a's RoCE packets reach the router with TTL 1 and go no further"
	else
		bad "hop limit 1: the router did not see TTL 1 packets die"
	fi
	ip route del "$B_RDMA/32" || bad "cannot delete the hoplimit 1 route"
	rxe_signal hop1-done
fi
rxe_barrier hop1 120 || rxe_die "the hosts are out of step"
mv "$RXE_OUT/$RXE_HOST.log" "$RXE_OUT/$RXE_HOST-hop1.log"

# --- the route's default and DSCP 26: RDMA across the router --------------
if [ "$RXE_HOST" = a ]; then
	rtr_capture in2 vr0p
	rtr_capture out2 "$RXE_LINK_IF"
fi
rxe2_pair_start "dscp = 26;"
rxe2_stats_reset
if [ "$RXE_HOST" = a ]; then
	t0=$(rxe_now)
	xfer_ok "16 connections x 4 MiB both ways verify across the router" \
		-n 16 -b 4M -T 200
	awk -v a="$t0" -v b="$(rxe_now)" \
		'BEGIN { printf "# 16 x 4 MiB both ways in %.1f s\n", b - a }'
	rxe_signal moved
else
	rxe_await moved 240 || bad "a's transfer did not end"
fi
expect_stat "$RXE_HOST" conns_rdma 16
expect_stat "$RXE_HOST" conns_fallback 0
expect_stat "$RXE_HOST" lgr_terminated 0
"$CTL" -s "$R/$RXE_HOST.sock" -j show links >"$RXE_OUT/links.json" 2>&1
if [ "$RXE_HOST" = a ]; then
	want_gid=::ffff:$B_RDMA
else
	want_gid=::ffff:$NET_A.1
fi
if grep -q "\"peer_gid\": *\"$want_gid\"" "$RXE_OUT/links.json"; then
	ok "show links: the peer's GID is $want_gid"
else
	bad "show links does not name $want_gid: $(head -c 600 "$RXE_OUT/links.json")"
fi
"$CTL" -s "$R/$RXE_HOST.sock" -o all show peers >"$RXE_OUT/peers.out" 2>&1
sed 's/^/# /' "$RXE_OUT/peers.out"
rxe2_pair_stop
if [ "$RXE_HOST" = a ]; then
	rtr_capture_stop in2
	rtr_capture_stop out2
	rtr_report "route default, dscp 26" in2 out2
	if rtr_headers in2 | grep -q 'tos 0x68, ttl 64$'; then
		ok "a's RoCE packets reach the router with TTL 64 and DSCP 26 (tos 0x68)"
	else
		bad "no RoCE packet with TTL 64 and tos 0x68 reached the router"
	fi
	if rtr_headers out2 | grep -q 'tos 0x68, ttl 63$'; then
		ok "the router forwards them with TTL 63"
	else
		bad "the router forwarded no RoCE packet with TTL 63"
	fi
	if rtr_headers in2 | grep -vq 'tos 0x68'; then
		bad "some RoCE packets of a left without DSCP 26"
	fi
fi

# --- the link as it was, for the checks after this one ----------------------
rxe_barrier unroute 60 || bad "the hosts are out of step at the end"
if [ "$RXE_HOST" = a ]; then
	rdma link delete "$RXE_DEV0"
	ip -n rtr link set "$RXE_LINK_IF" netns 1
	ip link del vr0
	ip netns del rtr
else
	ip route del "$NET_A.0/24"
	ip addr del "$B_RDMA/24" dev "$RXE_LINK_IF"
fi
rxe_host_setup || bad "the link did not come back"
exit $fail
