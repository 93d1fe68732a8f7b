#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two hosts on Linux 6.12 (ksmc.rxe), a daemon on each, both roles of the
# standard dialect at once and the native dialect beside them: a TCP
# client on a -> daemon a (rule k, target_smc) -> standard SMC-R ->
# daemon b (export s, smc_listen) -> the TCP server on b, while rule x
# carries the same kind of traffic to b's export x over the native
# dialect, between the same two daemons:
#   - 8 connections x 4 MiB both ways verify on each path, at once;
#   - a counts 8 connections over SMC-R as the client of a kernel-dialect
#     server (smc_out_rdma) and none as TCP; b counts 8 accepted over
#     SMC-R (smc_conns_rdma) and none as TCP;
#   - each daemon's show lgrs lists a group of each dialect.
. "$(dirname "$0")/lib.sh"

ksmc_check_init
PORT_B=16580
PORT_RULE=16581
PORT_T=16582
PORT_K=16583
PORT_L=16584
N=8

grep -q ' - cgroup2 ' /proc/self/mountinfo ||
	mount -t cgroup2 none /sys/fs/cgroup ||
	rxe_die "cannot mount cgroup2"

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

if [ "$RXE_HOST" = a ]; then
	"$XFER" client -c "127.0.0.1:$PORT_RULE" -n $N -b 4M -T 240 \
		>"$RXE_OUT/xfer-native.out" 2>&1 &
	native=$!
	if "$XFER" client -c "127.0.0.1:$PORT_K" -n $N -b 4M -T 240 \
		>"$RXE_OUT/xfer-smcr.out" 2>&1; then
		ok "$N x 4 MiB both ways verified through target_smc to b's smc_listen"
	else
		bad "standard dialect: $(tail -3 "$RXE_OUT/xfer-smcr.out")"
	fi
	if wait "$native"; then
		ok "$N x 4 MiB both ways verified over the native dialect at the same time"
	else
		bad "native dialect: $(tail -3 "$RXE_OUT/xfer-native.out")"
	fi
	expect_stat a smc_out_rdma $N
	expect_stat a smc_out_tcp 0
	lgrs_of a
	rxe_signal moved
else
	rxe_await moved 400 || bad "a's transfers did not end"
	expect_stat b smc_conns_rdma $N
	expect_stat b smc_conns_tcp 0
	lgrs_of b
fi
rxe2_pair_stop
exit $fail
