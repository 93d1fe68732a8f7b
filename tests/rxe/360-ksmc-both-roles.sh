#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two hosts on Linux 6.12 (ksmc.rxe), a daemon on each, both roles of the
# SMC-R dialect at once and the native dialect beside them: a TCP
# client on a -> daemon a (rule k, target_smc) -> standard SMC-R ->
# daemon b (export s, smc_listen) -> the TCP server on b, while rule x
# carries the same kind of traffic to b's export x over the native
# dialect, between the same two daemons:
#   - 8 connections x 4 MiB both ways verify on each path, at once;
#   - a counts 8 connections over SMC-R as the client of a kernel-dialect
#     server (smc_out_rdma) and none as TCP; b counts 8 accepted over
#     SMC-R (smc_conns_rdma) and none as TCP;
#   - and not only by the daemons' word: on each host rxe0 sent and
#     received at least 95 % of both paths' bytes / MTU packets each way
#     (2 x 8 x 4 MiB: 65536 at MTU 1024), so neither path went over TCP
#     (half of that if one had), and eth0 sent fewer than 2 x 8 x 40 + 100
#     packets besides rxe0's: the SMC-R dialect's CLC handshakes only;
#   - each daemon's show lgrs lists a group of each dialect.
. "$(dirname "$0")/lib.sh"

ksmc_check_init
PORT_B=16580
PORT_RULE=16581
PORT_T=16582
PORT_K=16583
PORT_L=16584
N=8

ksmc_cgroup2

RXE2_SECTIONS="kernel_smc: { ueids = [ \"$RXE_KSMC_UEID\" ];
              allow = [ \"$RXE_PEER_IP/32\" ]; bpf_object = \"$OBJ\"; };"
if [ "$RXE_HOST" = b ]; then
	listen_at=$RXE_IP0
else
	listen_at=$RXE_PEER_IP
fi
rxe2_pair_start "" \
	", { name = \"k\"; listen = \"127.0.0.1:$PORT_K\";
	     target_smc = \"$listen_at:$PORT_L\"; }" \
	", { name = \"s\"; target = \"127.0.0.1:$PORT_T\";
	     smc_listen = \"$listen_at:$PORT_L\"; }"

# link_snap: rxe0's packets sent and received, and all eth0 sent, now
link_snap() {
	echo "$(rxe_hwc sent_pkts) $(rxe_hwc rcvd_pkts)" \
		"$(cat "/sys/class/net/$RXE_LINK_IF/statistics/tx_packets")"
}

# link_proof SNAP BYTES CONNS: since SNAP (link_snap), rxe0 carried about
# BYTES / MTU packets each way, and eth0 sent few others (the TCP of
# CONNS connections' handshakes)
link_proof() {
	# shellcheck disable=SC2046,SC2086 # link_snap's three numbers, twice
	set -- $1 $(link_snap) "$2" "$3"
	_tx=$(($4 - $1)) _rx=$(($5 - $2)) _other=$(($6 - $3 - ($4 - $1)))
	_want=$(($7 / $(rxe_active_mtu)))
	echo "# $RXE_HOST: rxe0 sent_pkts +$_tx, rcvd_pkts +$_rx (bytes/MTU each way: $_want); $RXE_LINK_IF sent $_other packets besides rxe0's"
	if [ "$_tx" -ge $((_want * 95 / 100)) ] && [ "$_rx" -ge $((_want * 95 / 100)) ]; then
		ok "rxe0 on $RXE_HOST: +$_tx sent, +$_rx received, about bytes/MTU ($_want) each way: both paths over RDMA"
	else
		bad "rxe0 on $RXE_HOST: +$_tx sent, +$_rx received; both paths' bytes/MTU is $_want each way"
	fi
	if [ "$_other" -lt $(($8 * 40 + 100)) ]; then
		ok "$RXE_LINK_IF on $RXE_HOST: $_other packets besides RoCE, the handshakes only"
	else
		bad "$RXE_LINK_IF on $RXE_HOST: $_other packets besides RoCE: bytes went over TCP"
	fi
}

lgrs_of() {
	"$CTL" -s "$R/$1.sock" -j show lgrs >"$RXE_OUT/$1-lgrs.json" 2>&1
	for d in native smc-r; do
		if grep -q "\"dialect\": *\"$d\"" "$RXE_OUT/$1-lgrs.json"; then
			ok "$1's show lgrs lists a $d group"
		else
			bad "$1's show lgrs lacks a $d group: $(head -c 300 "$RXE_OUT/$1-lgrs.json")"
		fi
	done
}

snap=$(link_snap)
rxe_barrier counted 60 || rxe_die "the hosts are out of step before the transfers"
if [ "$RXE_HOST" = a ]; then
	"$XFER" client -c "127.0.0.1:$PORT_RULE" -n $N -b 4M -T 240 \
		>"$RXE_OUT/xfer-native.out" 2>&1 &
	native=$!
	if "$XFER" client -c "127.0.0.1:$PORT_K" -n $N -b 4M -T 240 \
		>"$RXE_OUT/xfer-smcr.out" 2>&1; then
		ok "$N x 4 MiB both ways verified through target_smc to b's smc_listen"
	else
		bad "SMC-R dialect: $(tail -3 "$RXE_OUT/xfer-smcr.out")"
	fi
	if wait "$native"; then
		ok "$N x 4 MiB both ways verified over the native dialect at the same time"
	else
		bad "native dialect: $(tail -3 "$RXE_OUT/xfer-native.out")"
	fi
	link_proof "$snap" $((2 * N * 4 * 1048576)) $((2 * N))
	expect_stat a smc_out_rdma $N
	expect_stat a smc_out_tcp 0
	lgrs_of a
	rxe_signal moved
else
	rxe_await moved 400 || bad "a's transfers did not end"
	link_proof "$snap" $((2 * N * 4 * 1048576)) $((2 * N))
	expect_stat b smc_conns_rdma $N
	expect_stat b smc_conns_tcp 0
	lgrs_of b
fi
rxe2_pair_stop
exit $fail
