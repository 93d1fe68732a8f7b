#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two hosts: a real application across them.  redis-server on host b
# behind export r, redis-benchmark on host a through rule r: plain and
# pipelined runs complete without an error, redis-cli reads back what it
# wrote, every connection over RDMA.  Then a run across a 5 s outage of
# b's interface: its connections resume (issue 14) and it finishes
# without an error.
. "$(dirname "$0")/lib.sh"

rxe_host_setup
rxe_pair_tools

R=$RXE_RUNDIR
PORT_B=7261
PORT_RULE=16560
PORT_T=16559
PORT_REDIS_RULE=16561
PORT_REDIS=16562
fail=0

command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null ||
	rxe_die "redis-server and redis-benchmark are needed (redis-server, redis-tools)"
if [ "$RXE_HOST" = b ]; then
	redis-server --port "$PORT_REDIS" --bind 127.0.0.1 --save '' \
		--appendonly no --dir "$R" --logfile "$RXE_OUT/redis.log" &
	redis=$!
	rxe_wait 20 sh -c "ss -ltn | grep -q ':$PORT_REDIS '" ||
		rxe_die "redis-server did not listen"
fi
rxe2_pair_start "devices = [ \"$RXE_DEV0\" ];" \
	", { name = \"r\"; listen = \"127.0.0.1:$PORT_REDIS_RULE\"; peer = \"b\"; export = \"r\"; }" \
	", { name = \"r\"; target = \"127.0.0.1:$PORT_REDIS\"; peers = [ \"a\" ]; }"
rxe2_stats_reset

# bench N ARGS...: N tests report their rate, no error (through rule r)
bench() {
	_n=$1
	shift
	redis_bench "$_n" 127.0.0.1 "$PORT_REDIS_RULE" "$@"
}

if [ "$RXE_HOST" = a ]; then
	bench 4 -q -n 400 -c 4 -t ping,set,get -d 64
	bench 2 -q -n 2000 -c 2 -P 16 -t set,get -d 512
	val=$(head -c 3000 /dev/urandom | base64 -w0)
	redis-cli -h 127.0.0.1 -p "$PORT_REDIS_RULE" set smc:key "$val" \
		>/dev/null || bad "redis-cli set"
	if [ "$(redis-cli -h 127.0.0.1 -p "$PORT_REDIS_RULE" get smc:key)" = "$val" ]
	then
		ok "redis-cli reads back what it wrote"
	else
		bad "redis-cli get returned something else"
	fi
	# The outage comes once the benchmark's 4 connections are open, and
	# the benchmark is long enough (about 26 s here, outage included) to be
	# still running when it does: 2000 requests at a fixed 2 s could finish
	# first.
	(
		rxe_wait 60 eval '[ "$(rxe_stat a conns_active)" -ge 4 ] 2>/dev/null' ||
			echo "# the benchmark's 4 connections did not open"
		rxe_signal outage
	) &
	signaller=$!
	bench 1 -q -n 10000 -c 4 -t set -d 64
	wait "$signaller"
	n=$(rxe_stat a conns_resumed_rdma)
	[ "${n:-0}" -ge 1 ] && ok "a: the benchmark's connections resumed ($n)" ||
		bad "a: conns_resumed_rdma '$n' after the outage"
	rxe_signal done
else
	rxe_await outage 240 || bad "a's benchmarks did not get to the outage"
	ip link set "$RXE_LINK_IF" down || rxe_die "cannot take $RXE_LINK_IF down"
	sleep 5
	ip link set "$RXE_LINK_IF" up || rxe_die "cannot bring $RXE_LINK_IF up"
	rxe_await done 240 || bad "a's benchmark did not end"
fi
n=$(rxe_stat "$RXE_HOST" conns_rdma)
if [ "${n:-0}" -ge 12 ]; then
	ok "$RXE_HOST: $n connections over RDMA"
else
	bad "$RXE_HOST: conns_rdma '$n', want 12 or more"
fi
expect_stat "$RXE_HOST" conns_fallback 0

rxe2_pair_stop
[ "$RXE_HOST" = b ] && kill "$redis" 2>/dev/null
exit $fail
