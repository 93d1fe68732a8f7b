#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the VM: the foundation's integrity suite over RDMA.  64 connections
# each carry 16 MiB both ways through a link group between two daemons,
# verified byte for byte by xfer (SHA-256 of each stream at both ends);
# every one of them must be counted conns_rdma on both daemons and none
# conns_fallback, and each daemon must count the 1 GiB it sent and the
# 1 GiB it received (plus xfer's few header bytes per connection) as
# relayed over RDMA.  Under emulation this
# takes minutes: integrity.rxe runs it in a VM of its own.
. "$(dirname "$0")/lib.sh"

rxe_setup
rxe_pair_tools

R=$RXE_RUNDIR
PORT_B=7151
PORT_RULE=16430
PORT_T=16429
CONNS=64
MIB=16
fail=0

rxe_pair_confs "devices = [ \"$RXE_DEV0\" ];"
rxe_target_start
rxe_pair_start
"$CTL" -s "$R/a.sock" stats reset >/dev/null || bad "stats reset on a"
"$CTL" -s "$R/b.sock" stats reset >/dev/null || bad "stats reset on b"

t0=$(rxe_now)
xfer_ok "$CONNS connections x $MIB MiB both ways verify" \
	-n $CONNS -b ${MIB}M -T $((${RXE_CHECK_TIMEOUT:-900} - 60))
took=$(awk -v a="$t0" -v b="$(rxe_now)" 'BEGIN { printf "%.1f", b - a }')
echo "# $CONNS x $MIB MiB both ways in ${took} s"
tail -2 "$RXE_OUT/xfer.out"
total=$((CONNS * MIB * 1048576))
# bytes_about NAME KEY: the counter is the payload plus at most 1 KiB of
# xfer's own framing per connection
bytes_about() {
	_v=$(rxe_stat "$1" "$2")
	if [ "${_v:-0}" -ge "$total" ] &&
		[ "$_v" -le $((total + CONNS * 1024)) ]; then
		ok "$1: $2 = $_v (1 GiB + framing)"
	else
		bad "$1: $2 is '$_v', want $total + framing"
	fi
}
for d in a b; do
	expect_stat $d conns_rdma $CONNS
	expect_stat $d conns_fallback 0
	bytes_about $d tx_bytes
	bytes_about $d rx_bytes
	expect_stat $d close_link_failed 0
	expect_stat $d close_peer_rst 0
	expect_stat $d llc_protocol_errors 0
done

rxe_pair_stop
exit $fail
