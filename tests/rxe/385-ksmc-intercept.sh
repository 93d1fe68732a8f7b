#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two hosts on Linux 6.12 (ksmc.rxe): transparent SMC-R (issue 46).  On
# a, unmodified redis-benchmark and redis-cli in a cgroup that daemon
# a's intercept rule takes (intercept = [ "b/32:*" ], target_smc =
# "original") connect straight to b's address, no loopback port, no
# LD_PRELOAD:
#   (a) a Linux kernel SMC-R redis-server on b (under smcpreload.so):
#       over RDMA end to end; b's kernel counts SMC-Rv2 server
#       connections; a's kernel SMC-R takes no part (its module unloaded
#       when it can be, else its client counters unmoved);
#   (b) daemon b's smc_listen export in front of a plain redis: over
#       RDMA, counted on b;
#   (c) a plain-TCP redis on b: redis-cli reads back what it wrote (the
#       first connect through the daemon as TCP on the same connection,
#       the destination learned as TCP), the rest go direct: a counts
#       them bypassed and carries no more;
#   (d) redis-cli outside the cgroup is never taken;
#   (e) kill -9 of daemon a in the middle of a benchmark: the next
#       connects from the cgroup succeed directly;
# and a static binary (busybox-static's nc) in the cgroup is taken as
# the rest are.
. "$(dirname "$0")/lib.sh"

ksmc_check_init
PORT_L=16620     # b's smc_listen, to the plain redis on loopback
PORT_REDIS=16621 # b's plain redis-server behind it (127.0.0.1)
PORT_KREDIS=16622 # b's redis-server under kernel SMC-R
PORT_PLAIN=16623 # b's plain redis-server on the link
PORT_RULE=16624  # a's intercept listener

command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null ||
	rxe_die "redis-server and redis-benchmark are needed (redis-server, redis-tools)"
ksmc_cgroup2
unloaded=
CG=$(awk '/ - cgroup2 / && $4 == "/" { print $5; exit }' /proc/self/mountinfo)/rxe-checks
APP=$CG/app

# incg CMD ARGS...: CMD in the intercepted cgroup (as a service would be)
incg() {
	sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$APP" "$@"
}

# shown KEY: rule t's KEY in "smcproxyctl -j show intercept"
shown() {
	"$CTL" -s "$R/a.sock" -j show intercept | python3 -c '
import json, sys
print(json.load(sys.stdin)["data"]["rules"][0][sys.argv[1]])' "$1"
}

if [ "$RXE_HOST" = b ]; then
	redis-server --port "$PORT_REDIS" --bind 127.0.0.1 --save '' \
		--appendonly no --dir "$R" --logfile "$RXE_OUT/redis.log" &
	redis=$!
	redis-server --port "$PORT_PLAIN" --bind "$RXE_LINK_IP" \
		--protected-mode no --save '' --appendonly no --dir "$R" \
		--logfile "$RXE_OUT/redis-plain.log" &
	predis=$!
	ksmc redis-server --port "$PORT_KREDIS" --bind "$RXE_LINK_IP" \
		--protected-mode no --save '' --appendonly no --dir "$R" \
		--logfile "$RXE_OUT/redis-smc.log" &
	kredis=$!
	for p in $PORT_REDIS $PORT_PLAIN $PORT_KREDIS; do
		rxe_wait 20 sh -c "ss -ltn | grep -q ':$p '" ||
			rxe_die "redis-server on $p did not listen"
	done
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
	rxe_await kernel-done 600 || bad "a's runs to the kernel's redis did not end"
	s=$(($(ksmc_stat srv_v2_succ) - succ))
	if [ "$s" -ge 4 ]; then
		ok "(a) b's kernel SMC-R server took $s intercepted connections over SMC-Rv2"
	else
		bad "(a) b's kernel: srv_v2_succ +$s, want at least 4"
	fi
	rxe_await export-done 600 || bad "a's runs to b's smc_listen did not end"
	c=$(rxe_stat b smc_conns_rdma)
	if [ "$c" -ge 4 ]; then
		ok "(b) b relayed $c intercepted connections over RDMA"
	else
		bad "(b) b: smc_conns_rdma $c, want at least 4"
	fi
	expect_stat b smc_conns_tcp 0
	rxe_await a-done 600 || bad "a's checks did not end"
	daemon_stop b || bad "b did not stop cleanly"
	kill "$redis" "$predis" "$kredis" 2>/dev/null
	wait "$redis" "$predis" "$kredis" 2>/dev/null
else
	mkdir -p "$APP" || rxe_die "cannot make the cgroup $APP"
	cat >"$R/a.conf" <<EOF
smcproxyd: { name = "a"; workers = 1; control_socket = "$R/a.sock";
              log_level = "debug"; };
rules = ( { name = "t"; listen = "127.0.0.1:$PORT_RULE";
            intercept = [ "$RXE_PEER_IP/32:*" ];
            intercept_cgroup = "$APP";
            target_smc = "original"; } );
kernel_smc: { ueids = [ "$RXE_KSMC_UEID" ]; bpf_object = "$OBJ"; };
EOF
	"$SMCPROXYD" -n -c "$R/a.conf" >"$RXE_OUT/a-check.log" 2>&1 ||
		bad "smcproxyd -n: $(cat "$RXE_OUT/a-check.log")"
	# a's own kernel SMC-R takes no part: out, when nothing holds it
	csucc=$(ksmc_stat clnt_v2_succ) cfb=$(ksmc_stat fback_clnt)
	modprobe -r smc_diag smc 2>/dev/null && unloaded=yes
	daemon_start a "$R/a.conf" || rxe_die "daemon a did not start"
	rxe_await b-ready 120 || rxe_die "b did not start"
	REDIS_PRE=incg

	# (a) the kernel's redis over SMC-R
	redis_bench 4 "$RXE_PEER_IP" "$PORT_KREDIS" -q -n 400 -c 4 -t ping,set,get -d 64
	redis_bench 2 "$RXE_PEER_IP" "$PORT_KREDIS" -q -n 2000 -c 2 -P 16 -t set,get -d 512
	redis_readback "$RXE_PEER_IP" "$PORT_KREDIS"
	c=$(rxe_stat a smc_out_rdma)
	if [ "$c" -ge 4 ]; then
		ok "(a) a carried $c intercepted connections to the kernel's redis over RDMA"
	else
		bad "(a) a: smc_out_rdma $c, want at least 4"
	fi
	expect_stat a smc_out_tcp 0
	# a static binary (busybox-static's nc: no libc for an LD_PRELOAD to
	# go into) is taken as the rest
	bb=$(command -v busybox)
	t0=$(shown taken)
	got=$( (printf 'PING\r\n'; sleep 2) |
		incg "$bb" nc -w 3 "$RXE_PEER_IP" "$PORT_KREDIS" 2>&1 | tr -d '\r')
	t=$(($(shown taken) - t0))
	if ! ldd "$bb" 2>&1 | grep -q 'not a dynamic executable'; then
		bad "(a) $bb is not a static binary"
	elif [ "$got" = "+PONG" ] && [ "$t" = 1 ]; then
		ok "(a) a static binary ($bb nc) was taken and answered +PONG"
	else
		bad "(a) static $bb nc: answer '$got', taken +$t (want +PONG, 1)"
	fi
	if logged a "rule=t peer=$RXE_PEER_IP:$PORT_KREDIS dialect=smc-r client=127.0.0.1:[0-9]+ destination=$RXE_PEER_IP:$PORT_KREDIS transport=rdma"; then
		ok "(a) a's connection log names the original destination"
	else
		bad "(a) a's connection log lacks destination=$RXE_PEER_IP:$PORT_KREDIS"
	fi
	if [ -n "$unloaded" ]; then
		if grep -q '^smc ' /proc/modules; then
			bad "(a) a's smc module is loaded"
		else
			ok "(a) a's kernel has no smc module loaded"
		fi
	fi
	rxe_signal kernel-done

	# (b) b's smc_listen
	r0=$(rxe_stat a smc_out_rdma)
	redis_bench 4 "$RXE_PEER_IP" "$PORT_L" -q -n 400 -c 4 -t ping,set,get -d 64
	redis_readback "$RXE_PEER_IP" "$PORT_L"
	r=$(($(rxe_stat a smc_out_rdma) - r0))
	if [ "$r" -ge 4 ]; then
		ok "(b) a carried $r intercepted connections to b's smc_listen over RDMA"
	else
		bad "(b) a: smc_out_rdma +$r, want at least 4"
	fi
	rxe_signal export-done

	# (c) plain TCP: the first connect through us, the rest direct
	t0=$(shown taken) b0=$(shown bypassed)
	redis_readback "$RXE_PEER_IP" "$PORT_PLAIN"
	expect_stat a smc_out_plain 1
	expect_stat a smc_out_tcp 1
	redis_bench 4 "$RXE_PEER_IP" "$PORT_PLAIN" -q -n 400 -c 4 -t ping,set,get -d 64
	t=$(($(shown taken) - t0)) b=$(($(shown bypassed) - b0))
	if [ "$t" = 1 ] && [ "$b" -ge 5 ]; then
		ok "(c) the plain redis: 1 connect taken, $b went direct (bypassed)"
	else
		bad "(c) the plain redis: taken +$t (want 1), bypassed +$b (want >= 5)"
	fi
	expect_stat a smc_out_tcp 1
	"$CTL" -s "$R/a.sock" show intercept >"$RXE_OUT/a-intercept.log" 2>&1
	if grep -Eq "^t +$RXE_PEER_IP:$PORT_PLAIN +tcp " "$RXE_OUT/a-intercept.log"; then
		ok "(c) show intercept lists $RXE_PEER_IP:$PORT_PLAIN as TCP"
	else
		bad "(c) show intercept: $(cat "$RXE_OUT/a-intercept.log")"
	fi

	# (d) outside the cgroup: untouched
	t0=$(shown taken)
	REDIS_PRE=
	redis_readback "$RXE_PEER_IP" "$PORT_KREDIS"
	t=$(($(shown taken) - t0))
	if [ "$t" = 0 ]; then
		ok "(d) redis-cli outside the cgroup went direct"
	else
		bad "(d) a took $t connects from outside the cgroup"
	fi
	REDIS_PRE=incg

	# (e) kill -9 mid-run: the next connects go direct
	t0=$(shown taken)
	incg redis-benchmark -h "$RXE_PEER_IP" -p "$PORT_KREDIS" -q -n 200000 \
		-c 2 -t set,get -d 64 >"$RXE_OUT/bench-killed.out" 2>&1 &
	bench=$!
	i=0
	while [ "$(shown taken)" -le "$t0" ] && [ $i -lt 30 ]; do
		sleep 1
		i=$((i + 1))
	done
	sleep 1
	kill -KILL "$rxe_pid_a"
	wait "$rxe_pid_a" 2>/dev/null
	kill -USR1 "$rxe_collector_a" 2>/dev/null
	wait "$rxe_collector_a"
	kill "$bench" 2>/dev/null
	wait "$bench" 2>/dev/null
	echo "# the benchmark through daemon a, killed under it: $(tr '\r' '\n' <"$RXE_OUT/bench-killed.out" | tail -2 | tr '\n' ' ')"
	redis_readback "$RXE_PEER_IP" "$PORT_KREDIS"
	redis_readback "$RXE_PEER_IP" "$PORT_L"
	redis_bench 2 "$RXE_PEER_IP" "$PORT_KREDIS" -q -n 400 -c 2 -t set,get -d 64
	if [ -z "$unloaded" ]; then
		s=$(($(ksmc_stat clnt_v2_succ) - csucc))
		f=$(($(ksmc_stat fback_clnt) - cfb))
		if [ "$s" = 0 ] && [ "$f" = 0 ]; then
			ok "(a) a's kernel SMC-R made no connection of its own (module in use, not unloaded)"
		else
			bad "(a) a's kernel: clnt_v2_succ +$s, fback_clnt +$f, want 0"
		fi
	fi
	rxe_signal a-done
fi
[ -n "$unloaded" ] && modprobe smc
"$SMCNL" stats >"$RXE_OUT/smc-stats.log" 2>&1
rxe_barrier end-intercept 120 || bad "the hosts are out of step at the end"
exit "$fail"
