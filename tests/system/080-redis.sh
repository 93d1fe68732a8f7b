#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# A real application through the pair: redis-benchmark against
# redis-server, plain and pipelined, must complete without errors, and
# redis-cli must read back what it wrote.
. "$(dirname "$0")/lib.sh"
smc_init
need redis-server redis-benchmark redis-cli

pair_ports
conf_a "$T/a.conf"
conf_b "$T/b.conf"
redis-server --port "$PORT_TARGET" --bind 127.0.0.1 --save '' \
	--appendonly no --dir "$T" --logfile "$T/redis.log" >/dev/null 2>&1 &
redis_pid=$!
track "$redis_pid" "$T/redis.log"
wait_listen "$PORT_TARGET" 10 "$redis_pid"
start_pair

out=$(redis-cli -h 127.0.0.1 -p "$PORT_RULE" ping 2>&1)
[ "$out" = PONG ] || fail "redis-cli ping through the pair: $out"
val=$(head -c 3000 /dev/urandom | base64 -w0)
redis-cli -h 127.0.0.1 -p "$PORT_RULE" set smc:key "$val" >/dev/null ||
	fail "redis-cli set"
[ "$(redis-cli -h 127.0.0.1 -p "$PORT_RULE" get smc:key)" = "$val" ] ||
	fail "redis-cli get returned something else"

# bench N ARGS...: N tests must report their rate.
bench()
{
	local want=$1 rc

	shift
	smc_log "redis-benchmark -p $PORT_RULE $*"
	redis-benchmark -h 127.0.0.1 -p "$PORT_RULE" "$@" >"$T/bench.out" 2>&1
	rc=$?
	cat "$T/bench.out" >>"$T/bench.log"
	SMC_LOGS="${SMC_LOGS% $T/bench.log} $T/bench.log"
	tail -n 6 "$T/bench.out"
	[ "$rc" -eq 0 ] || fail "redis-benchmark exited with $rc"
	grep -qiE 'error|refused|reset|timeout' "$T/bench.out" &&
		fail "redis-benchmark reported errors"
	[ "$(grep -o 'requests per second' "$T/bench.out" | wc -l)" -ge "$want" ] ||
		fail "redis-benchmark did not finish all tests"
}
bench 5 -q -n 20000 -c 50 -t set,get,incr,lpush,lpop -d 64
bench 2 -q -n 50000 -c 20 -P 16 -t set,get -d 512
bench 1 -q -n 2000 -c 10 -t set -d 100000

out=$(redis-cli -h 127.0.0.1 -p "$PORT_RULE" dbsize)
[ "${out:-0}" -ge 1 ] || fail "redis-cli dbsize: $out"
