#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two hosts on Linux 6.12 (ksmc.rxe): a real application with Linux
# kernel SMC-R peers, both roles, no smcproxyd on the kernel's side of
# each path:
#   - rule side: redis-server on b under smcpreload.so (kernel SMC-R);
#     redis-benchmark on a, plain TCP, through daemon a's target_smc rule;
#   - export side: redis-benchmark on a under smcpreload.so (a kernel
#     SMC-R client) to daemon b's smc_listen, which relays to a plain
#     redis-server on b.
# Each run completes without an error, redis-cli reads back what it
# wrote, every connection over RDMA (the daemons' counters, no TCP
# relay; the kernels' SMC-Rv2 counters rise).
. "$(dirname "$0")/lib.sh"

ksmc_check_init
PORT_L=16600     # b's smc_listen, to the plain redis
PORT_REDIS=16601 # b's plain redis-server (127.0.0.1)
PORT_KREDIS=16602 # b's redis-server under kernel SMC-R
PORT_RULE=16603  # a's rule to it

command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null ||
	rxe_die "redis-server and redis-benchmark are needed (redis-server, redis-tools)"
ksmc_cgroup2

if [ "$RXE_HOST" = b ]; then
	redis-server --port "$PORT_REDIS" --bind 127.0.0.1 --save '' \
		--appendonly no --dir "$R" --logfile "$RXE_OUT/redis.log" &
	redis=$!
	ksmc redis-server --port "$PORT_KREDIS" --bind "$RXE_LINK_IP" \
		--protected-mode no \
		--save '' --appendonly no --dir "$R" \
		--logfile "$RXE_OUT/redis-smc.log" &
	kredis=$!
	rxe_wait 20 sh -c "ss -ltn | grep -q ':$PORT_REDIS '" ||
		rxe_die "redis-server did not listen"
	rxe_wait 20 sh -c "ss -ltn | grep -q ':$PORT_KREDIS '" ||
		rxe_die "redis-server under kernel SMC-R did not listen"
	cat >"$R/b.conf" <<EOF
smcproxyd: { name = "b"; workers = 1; control_socket = "$R/b.sock"; };
exports = ( { name = "r"; target = "127.0.0.1:$PORT_REDIS";
              smc_listen = "$RXE_LINK_IP:$PORT_L"; } );
kernel_smc: { ueids = [ "$RXE_KSMC_UEID" ]; allow = [ "$RXE_PEER_IP/32" ];
              bpf_object = "$OBJ"; };
EOF
	daemon_start b "$R/b.conf" || rxe_die "daemon b did not start"
	succ=$(ksmc_stat srv_v2_succ)
	rxe_signal b-ready
	rxe_await benched 600 || bad "a's benchmarks did not end"
	s=$(($(ksmc_stat srv_v2_succ) - succ))
	if [ "$s" -ge 4 ]; then
		ok "b's kernel SMC-R server took $s connections over SMC-Rv2"
	else
		bad "b's kernel: srv_v2_succ +$s, want at least 4"
	fi
	c=$(rxe_stat b smc_conns_rdma)
	if [ "$c" -ge 4 ]; then
		ok "b relayed $c kernel clients' connections over RDMA"
	else
		bad "b: smc_conns_rdma $c, want at least 4"
	fi
	expect_stat b smc_conns_tcp 0
	daemon_stop b || bad "b did not stop cleanly"
	kill "$redis" "$kredis" 2>/dev/null
	wait "$redis" "$kredis" 2>/dev/null
else
	cat >"$R/a.conf" <<EOF
smcproxyd: { name = "a"; workers = 1; control_socket = "$R/a.sock"; };
rules = ( { name = "k"; listen = "127.0.0.1:$PORT_RULE";
            target_smc = "$RXE_PEER_IP:$PORT_KREDIS"; } );
kernel_smc: { ueids = [ "$RXE_KSMC_UEID" ]; bpf_object = "$OBJ"; };
EOF
	daemon_start a "$R/a.conf" || rxe_die "daemon a did not start"
	rxe_await b-ready 120 || rxe_die "b did not start"
	# rule side: plain TCP through target_smc to the kernel's redis
	REDIS_PRE=
	redis_bench 4 127.0.0.1 "$PORT_RULE" -q -n 400 -c 4 -t ping,set,get -d 64
	redis_bench 2 127.0.0.1 "$PORT_RULE" -q -n 2000 -c 2 -P 16 -t set,get -d 512
	redis_readback 127.0.0.1 "$PORT_RULE"
	c=$(rxe_stat a smc_out_rdma)
	if [ "$c" -ge 4 ]; then
		ok "a carried $c connections to the kernel's redis over RDMA"
	else
		bad "a: smc_out_rdma $c, want at least 4"
	fi
	expect_stat a smc_out_tcp 0
	# export side: a kernel SMC-R client to b's smc_listen
	REDIS_PRE="env LD_PRELOAD=$SMCPRELOAD"
	succ=$(ksmc_stat clnt_v2_succ)
	fb=$(ksmc_stat fback_clnt)
	redis_bench 4 "$RXE_PEER_IP" "$PORT_L" -q -n 400 -c 4 -t ping,set,get -d 64
	redis_bench 2 "$RXE_PEER_IP" "$PORT_L" -q -n 2000 -c 2 -P 16 -t set,get -d 512
	redis_readback "$RXE_PEER_IP" "$PORT_L"
	s=$(($(ksmc_stat clnt_v2_succ) - succ))
	f=$(($(ksmc_stat fback_clnt) - fb))
	if [ "$s" -ge 4 ] && [ "$f" = 0 ]; then
		ok "a's kernel SMC-R client made $s connections over SMC-Rv2, no fallback"
	else
		bad "a's kernel: clnt_v2_succ +$s (want >= 4), fback_clnt +$f (want 0)"
	fi
	rxe_signal benched
	daemon_stop a || bad "a did not stop cleanly"
fi
"$SMCNL" stats >"$RXE_OUT/smc-stats.log" 2>&1
rxe_barrier end-redis 120 || bad "the hosts are out of step at the end"
exit $fail
