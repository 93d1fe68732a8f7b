#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two hosts (vm-run -2): a link group across the link.  Daemon a on host
# a sets up a group with daemon b on host b over their rxe devices, each
# on its own kernel and GID table, every packet crossing the link; then
# 16 connections x 4 MiB both ways, verified byte for byte by xfer, must
# all go over RDMA on both daemons, none over the fallback.  `show links`
# names the other host's GID.
. "$(dirname "$0")/lib.sh"

rxe_host_setup
rxe_pair_tools

R=$RXE_RUNDIR
PORT_B=7211
PORT_RULE=16510
PORT_T=16509
fail=0

rxe2_pair_start "devices = [ \"$RXE_DEV0\" ];"
rxe2_stats_reset

if [ "$RXE_HOST" = a ]; then
	t0=$(rxe_now)
	xfer_ok "16 connections x 4 MiB both ways verify across the link" \
		-n 16 -b 4M -T 200
	awk -v a="$t0" -v b="$(rxe_now)" \
		'BEGIN { printf "# 16 x 4 MiB both ways in %.1f s\n", b - a }'
	rxe_signal moved
else
	rxe_await moved 240 || bad "a's transfer did not end"
fi
expect_stat "$RXE_HOST" conns_rdma 16
expect_stat "$RXE_HOST" conns_fallback 0
expect_stat "$RXE_HOST" close_link_failed 0
expect_stat "$RXE_HOST" lgr_terminated 0
expect_stat "$RXE_HOST" llc_protocol_errors 0
"$CTL" -s "$R/$RXE_HOST.sock" -j show links >"$RXE_OUT/links.json" 2>&1
if grep -q "\"peer_gid\": *\"::ffff:$RXE_PEER_IP\"" "$RXE_OUT/links.json"
then
	ok "show links: the link's peer GID is host $RXE_PEER's ($RXE_PEER_IP)"
else
	bad "show links does not name $RXE_PEER_IP's GID: $(head -c 600 "$RXE_OUT/links.json")"
fi

rxe2_pair_stop
exit $fail
