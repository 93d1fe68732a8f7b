#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# On both hosts of tests/rxe/vm-run -2 (run by contrib/bench/two-host): the
# same loads between host a (clients) and host b (servers) over raw verbs,
# direct TCP across the link, a smcproxyd pair over RDMA (R), the same
# with 1 MiB buffers for the stream (W) and a pair over the TCP fallback
# (F), and with RXE_TH_KSMC=1 (Linux 6.12) Linux's own SMC-R between the
# hosts: the same client and server programs as direct TCP under
# tests/tools/smcpreload.so (ksmc), and the same with the kernel's
# autocorking off, net.smc.autocorking_size = 0 on both hosts for the
# sample (ksmc-nocork); measured interleaved, round by round.  Host a
# drives: what needs b (a perftest server, a loopback sample there) it
# asks for (lib.sh: rxe_on_peer), and b does it and answers (rxe_serve).  Every
# sample is one line in $RXE_OUT/raw.tsv:
#   path round metric size tool-output-on-one-line
# and the host side turns both hosts' lines into medians and ratios.
# With RXE_TH_KSMC=1 also the paths through one smcproxyd to or from the
# kernel: ruleK (a5's target_smc rules to b's kernel SMC-R servers) and
# exportK (a's kernel SMC-R clients to b5's smc_listen exports), and the
# cork's A/B at our door: pairR-nocork (pair 7) and ruleK-nocork (a6) with
# rdma.autocork = false.  RXE_TH_COUNTS=N: after the rounds, each daemon's
# system calls, wake-ups (epoll_wait) and completion events (show links)
# over N 64 B round trips and over 1000 N one-byte writes, per path
# (count_run), untimed.
# Knobs (env): RXE_TH_ROUNDS RXE_TH_ITERS RXE_TH_SECONDS RXE_TH_SIZES
#   RXE_TH_REDIS_N RXE_TH_PAIRN_CONF RXE_TH_KSMC RXE_TH_WSIZES RXE_TH_CONNS
#   RXE_TH_CTN
#   RXE_TH_COUNTS
. "$abs_top_srcdir/tests/rxe/lib.sh"

rounds=${RXE_TH_ROUNDS:-3}
iters=${RXE_TH_ITERS:-500}
secs=${RXE_TH_SECONDS:-3}
sizes=${RXE_TH_SIZES:-1 64 1024}
redis_n=${RXE_TH_REDIS_N:-2000}
ksmc_on=${RXE_TH_KSMC:-0}
wsizes=${RXE_TH_WSIZES:-1 64 1024 65536}	# the stream by write size
nconns=${RXE_TH_CONNS:-100}		# short connections, this many at once
ctn=${RXE_TH_CTN:-50}			# connect times, one after another
counts=${RXE_TH_COUNTS:-0}		# count_run: round trips; 1000x writes

rxe_host_setup
rxe_pair_tools
R=$RXE_RUNDIR
RAW=$RXE_OUT/raw.tsv
: >"$RAW"
PORT_XF=16600		# xfer server on b's loopback: the pairs' target
PORT_XD=16601		# xfer server on b's link address: direct TCP
PORT_XL=16602		# xfer server on each host's loopback: loopback samples
PORT_RD=16603		# redis-server on b, loopback and link address
PORT_PP=18515		# perftest and ibv_rc_pingpong servers on b
PORT_HA=17501		# the HAProxy pair: a listens on 17501 (xfer) and 17502
			# (redis), b on its link address 17503 and 17504
PORT_XK=16604		# xfer server on b's link address over kernel SMC
PORT_RK=16605		# redis-server on b's link address over kernel SMC
PORT_XE=16620		# b5's smc_listen for xfer (exportK), 16621 for redis
GIDX=$(rxe_gid_index "$RXE_DEV0" "$RXE_IP0") || rxe_die "no GID index"
{ echo "gid_index $GIDX"; uname -r; nproc; echo "link_ip $RXE_IP0"; } >"$RXE_OUT/vm.txt"
# Kernel SMC-R: the smc module, the user EID both hosts share, and KS, the
# prefix that runs a program with its TCP sockets as SMC sockets (rec runs
# it under timeout, so a command, not a shell function)
if [ "$ksmc_on" = 1 ]; then
	ksmc_setup
	KS="env LD_PRELOAD=$SMCPRELOAD"
	cork0=$(sysctl -n net.smc.autocorking_size) ||
		rxe_die "no net.smc.autocorking_size (Linux $(uname -r))"
	echo "autocorking_size $cork0" >>"$RXE_OUT/vm.txt"
fi

cmd() {	# log a command line once per kind
	grep -qxF -- "$*" "$RXE_OUT/commands.txt" 2>/dev/null ||
		echo "$*" >>"$RXE_OUT/commands.txt"
}

# links_line PATH TAG WHEN DAEMON: DAEMON's links (show links: WRs,
# completions, completion events) into raw.tsv, for count_run
links_line() {
	printf '%s\t0\tclinks_%s_%s_%s\t0\t%s\n' "$1" "$2" "$3" "$4" \
		"$("$CTL" -s "$R/$4.sock" -j show links 2>&1 | tr '\n\t' '  ')" >>"$RAW"
}

# sc_start PATH TAG DAEMON / sc_stop DAEMON: DAEMON (on this host) under
# strace -c -f, all its threads, into sc.PATH.TAG.DAEMON.txt
sc_start() {
	links_line "$1" "$2" before "$3"
	eval "_pid=\$rxe_pid_$3"
	strace -c -f -p "$_pid" -o "$RXE_OUT/sc.$1.$2.$3.txt" 2>/dev/null &
	eval "_sc_$3=\$!"
	eval "_sc_tag_$3='$1 $2'"
}
sc_stop() {
	eval "kill -INT \$_sc_$1; wait \$_sc_$1"
	eval "links_line \$_sc_tag_$1 after $1"
}

# park_b / unpark_b: while host a takes a sample, host b waits in a
# blocking accept (busybox nc -l), not in rxe_serve's poll of the sync
# folder: b has one vCPU, and what polling burns there it takes from the
# sample's work on b (the rxe responder, daemon b, the server).
# RXE_TH_PARK=0: b polls, as before this was measured.
PORT_PARK=16610
park_b() {
	[ "${RXE_TH_PARK:-1}" = 1 ] || return 0
	rxe_req=$((rxe_req + 1))
	_park=$rxe_req
	rxe_signal "req-$_park" "rxe_signal parked-$_park
		busybox nc -l -p $PORT_PARK </dev/null >/dev/null 2>&1"
	rxe_await "parked-$_park" 60 || rxe_die "host b did not park"
}
unpark_b() {
	[ "${RXE_TH_PARK:-1}" = 1 ] || return 0
	# (b's listener may not be up yet)
	until busybox nc "$RXE_PEER_IP" $PORT_PARK </dev/null >/dev/null 2>&1; do
		rxe_sync_has "ack-$_park" && break
		sleep 0.05
	done
	rxe_await "ack-$_park" 60 || rxe_die "host b did not come back"
}

# RXE_TH_TIMELINE=N: per path, N connect-time connections one after
# another with both hosts' packets captured (tcpdump -i any: the link,
# RoCE and the loopback legs, one clock per host) into tl.PATH.pcap on
# each host; the host side (contrib/bench/timeline.py) cuts them into
# connections at each client SYN and prints where a connect's time goes,
# step by step, beside kernel to kernel.  Untimed samples: tcpdump costs
# each host some CPU per packet, the same on every path.
tl_iters=${RXE_TH_TIMELINE:-0}
# what is not the sample's: the park port, the sync folder is 9p
TL_FILTER="not port $PORT_PARK and (tcp or udp port 4791)"
tl_start() {	# tl_start PATH: tcpdump into tl.PATH.pcap, until tl_stop
	tcpdump -i any -n -s 200 -B 8192 -w "$RXE_OUT/tl.$1.pcap" \
		"$TL_FILTER" >"$RXE_OUT/tl.$1.tcpdump.log" 2>&1 &
	_tl_pid=$!
	rxe_wait 10 grep -q 'listening on' "$RXE_OUT/tl.$1.tcpdump.log" ||
		rxe_log "tcpdump for $1 did not start"
}
tl_stop() {	# (tcpdump reads its ring once a second; SIGINT drops what is left)
	sleep 2
	kill -INT "$_tl_pid" 2>/dev/null
	wait "$_tl_pid"
}
# RXE_TH_PROFILE=N: per path (ksmc, exportK, ruleK, pairR), N 64 B round
# trips with both hosts sampled whole (perf record -a -g, 997 Hz): whose
# CPU each round trip takes on each one-vCPU host (the daemon's user and
# kernel time beside the program's, rxe's and the idle loop's); the host
# side (contrib/bench/two-host) prints it per round trip.  perf takes
# seconds to start under TCG and writes to tmpfs (a 9p share cannot
# mmap); the round trips start after it is up and it stops at their end.
pf_iters=${RXE_TH_PROFILE:-0}
pf_start() {	# pf_start PATH: perf record into $R/pf.PATH.data, until pf_stop
	perf record -a -g -F 997 -o "$R/pf.$1.data" \
		>"$RXE_OUT/pf.$1.log" 2>&1 &
	_pf_pid=$! _pf_path=$1
	sleep 10
}
pf_stop() {
	kill -INT "$_pf_pid" 2>/dev/null
	wait "$_pf_pid"
	cp "$R/pf.$_pf_path.data" "$RXE_OUT/" && rm -f "$R/pf.$_pf_path.data"
}
# rec PATH ROUND METRIC SIZE CMD...: run CMD, its output as one line; on
# host a with host b parked.
rec() {
	_k="$1	$2	$3	$4"
	shift 4
	if [ "$RXE_HOST" = a ]; then park_b; fi
	_o=$(timeout 120 "$@" 2>&1 | tr '\r\n\t' '   ')
	if [ "$RXE_HOST" = a ]; then unpark_b; fi
	printf '%s\t%s\n' "$_k" "$_o" >>"$RAW"
}

listening() {
	ss -ltn | grep -q ":$1 "
}

# haproxy_start HOST LISTEN TO [LISTEN TO]: an HAProxy of the HAProxy pair
# (pairH: the fallback pair's path with a relay everybody knows), mode
# tcp, defaults, as contrib/bench/proxy-tax configures it.
haproxy_start() {
	_h=$1
	_port=${2##*:}
	shift
	{
		printf 'global\n    maxconn 4000\n'
		printf 'defaults\n    mode tcp\n    timeout connect 5s\n'
		printf '    timeout client 5m\n    timeout server 5m\n'
		_i=0
		while [ $# -ge 2 ]; do
			printf 'listen l%d\n    bind %s\n    server s %s\n' $_i "$1" "$2"
			_i=$((_i + 1))
			shift 2
		done
	} >"$R/haproxy-$_h.cfg"
	cp "$R/haproxy-$_h.cfg" "$RXE_OUT/"
	haproxy -db -f "$R/haproxy-$_h.cfg" >"$RXE_OUT/haproxy-$_h.log" 2>&1 &
	rxe_wait 60 listening "$_port" || rxe_die "haproxy on $_h did not listen"
}

opts() {	# pair 3 (W): buffers for a stream, 1 MiB each way; pair 4
	# (N): bytes by RDMA WRITE only, none carried in the CDC, or what
	# RXE_TH_PAIRN_CONF says; pair 7 (pairR-nocork): no autocork
	case $1 in
	3) echo "sndbuf = 1048576; rmb = 1048576;" ;;
	4) echo "${RXE_TH_PAIRN_CONF:-cdc_data = false;}" ;;
	7) echo "autocork = false;" ;;
	esac
}

"$XFER" server -q -l "127.0.0.1:$PORT_XL" >"$RXE_OUT/xfer-loop.log" 2>&1 &
rxe_wait 20 listening $PORT_XL || rxe_die "xfer loopback server"

# --- host b: the servers, the two daemons b1 (rxe0) and b2 (no device),
# and whatever a asks for, until a says quit --------------------------------
if [ "$RXE_HOST" = b ]; then
	head -c 48 /dev/urandom >"$R/psk" && chmod 600 "$R/psk" &&
		cp "$R/psk" "$RXE_SYNC_DIR/.psk" &&
		mv "$RXE_SYNC_DIR/.psk" "$RXE_SYNC_DIR/psk" || rxe_die "key"
	"$XFER" server -q -l "127.0.0.1:$PORT_XF" >"$RXE_OUT/xfer.log" 2>&1 &
	"$XFER" server -q -l "$RXE_IP0:$PORT_XD" >"$RXE_OUT/xfer-direct.log" 2>&1 &
	redis-server --port $PORT_RD --bind "127.0.0.1 $RXE_IP0" --save '' \
		--appendonly no --dir "$R" --protected-mode no \
		--logfile "$RXE_OUT/redis.log" &
	rxe_wait 20 listening $PORT_XF && rxe_wait 20 listening $PORT_XD &&
		rxe_wait 20 listening $PORT_RD || rxe_die "servers on b"
	daemons_b="b1 b2 b3 b4 b7"
	if [ "$ksmc_on" = 1 ]; then
		$KS "$XFER" server -q -l "$RXE_IP0:$PORT_XK" \
			>"$RXE_OUT/xfer-ksmc.log" 2>&1 &
		$KS redis-server --port $PORT_RK --bind "$RXE_IP0" --save '' \
			--appendonly no --dir "$R" --protected-mode no \
			--logfile "$RXE_OUT/redis-ksmc.log" &
		rxe_wait 20 listening $PORT_XK && rxe_wait 20 listening $PORT_RK ||
			rxe_die "kernel SMC servers on b"
		# exportK: b5's exports on smc_listen, the same servers as
		# the pairs' behind them (the SMC-R dialect's export side)
		ksmc_cgroup2
		cat >"$R/b5.conf" <<CONF
smcproxyd: { name = "b5"; workers = 1; control_socket = "$R/b5.sock"; };
exports = ( { name = "xf"; target = "127.0.0.1:$PORT_XF";
              smc_listen = "$RXE_IP0:$PORT_XE"; },
            { name = "rd"; target = "127.0.0.1:$PORT_RD";
              smc_listen = "$RXE_IP0:$((PORT_XE + 1))"; } );
kernel_smc: { ueids = [ "$RXE_KSMC_UEID" ]; allow = [ "$RXE_PEER_IP/32" ];
              bpf_object = "$abs_top_builddir/src/bpf/smc_opt.bpf.o"; };
CONF
		cp "$R/b5.conf" "$RXE_OUT/b5.conf"
		daemon_start b5 "$R/b5.conf" -t || rxe_die "daemon b5 did not start"
		daemons_b="$daemons_b b5"
	fi
	for n in 1 2 3 4 7; do
		dev=$RXE_DEV0
		[ $n = 2 ] && dev=nosuchdev
		cat >"$R/b$n.conf" <<CONF
smcproxyd: { name = "b$n"; workers = 1; control_socket = "$R/b$n.sock"; };
peer_listen: { address = "$RXE_IP0:72${n}0"; };
peers = ( { name = "a$n"; address = "$RXE_PEER_IP:72${n}0"; key_file = "$R/psk"; } );
exports = ( { name = "xf"; target = "127.0.0.1:$PORT_XF"; peers = [ "a$n" ]; },
            { name = "rd"; target = "127.0.0.1:$PORT_RD"; peers = [ "a$n" ]; } );
rdma: { devices = [ "$dev" ]; $(opts $n) };
CONF
		daemon_start b$n "$R/b$n.conf" || rxe_die "daemon b$n did not start"
	done
	haproxy_start b "$RXE_IP0:$((PORT_HA + 2))" "127.0.0.1:$PORT_XF" \
		"$RXE_IP0:$((PORT_HA + 3))" "127.0.0.1:$PORT_RD"
	rxe_signal b-ready
	rxe_serve || rxe_log "host a stopped asking"
	[ "$ksmc_on" = 1 ] && "$SMCNL" stats >"$RXE_OUT/smc-stats.txt" 2>&1
	for d in $daemons_b; do
		"$CTL" -s "$R/$d.sock" -j stats 2>/dev/null | tr -d '\n' \
			>"$RXE_OUT/$d.stats.json"
		daemon_stop $d || rxe_log "$d exited with $?"
	done
	echo "== done"
	exit 0
fi

# --- host a: the two daemons a1 and a2, and every client -------------------
# on_b SNIPPET: have host b run it.
on_b() {
	rxe_on_peer "$1"
}

rxe_await b-ready 300 || rxe_die "b did not start"
cp "$RXE_SYNC_DIR/psk" "$R/psk" && chmod 600 "$R/psk" || rxe_die "b's key"
for n in 1 2 3 4 7; do
	cat >"$R/a$n.conf" <<CONF
smcproxyd: { name = "a$n"; workers = 1; control_socket = "$R/a$n.sock"; };
peers = ( { name = "b$n"; address = "$RXE_PEER_IP:72${n}0"; key_file = "$R/psk"; } );
rules = ( { name = "xf"; listen = "127.0.0.1:17${n}01"; peer = "b$n"; export = "xf"; },
          { name = "rd"; listen = "127.0.0.1:17${n}02"; peer = "b$n"; export = "rd"; } );
rdma: { $(opts $n) };
CONF
	cp "$R/a$n.conf" "$RXE_OUT/a$n.conf"
	daemon_start a$n "$R/a$n.conf" || rxe_die "daemon a$n did not start"
	"$XFER" client -c "127.0.0.1:17${n}01" -n 1 -b 4K -T 60 >/dev/null 2>&1 ||
		rxe_log "first connection through pair $n failed"
done
rxe_wait 60 logged a1 "link group active" || rxe_die "pair R: no link group"
rxe_wait 60 logged a3 "link group active" || rxe_die "pair W: no link group"
rxe_wait 60 logged a4 "link group active" || rxe_die "pair N: no link group"
rxe_wait 60 logged a7 "link group active" || rxe_die "pair 7: no link group"
rxe_wait 60 logged a2 "peer declined, NOSMCRDEV" ||
	rxe_die "pair F: b2 did not decline"
haproxy_start a "127.0.0.1:$PORT_HA" "$RXE_PEER_IP:$((PORT_HA + 2))" \
	"127.0.0.1:$((PORT_HA + 1))" "$RXE_PEER_IP:$((PORT_HA + 3))"
for n in 1 2 3 4 7; do
	"$CTL" -s "$R/a$n.sock" stats reset >/dev/null
done
# ruleK: daemon a5's target_smc rules to b's kernel SMC-R servers (the
# SMC-R dialect's rule side, no daemon on b's side of it)
if [ "$ksmc_on" = 1 ]; then
	ksmc_cgroup2
	cat >"$R/a5.conf" <<CONF
smcproxyd: { name = "a5"; workers = 1; control_socket = "$R/a5.sock"; };
rules = ( { name = "xf"; listen = "127.0.0.1:17601"; target_smc = "$RXE_PEER_IP:$PORT_XK"; },
          { name = "rd"; listen = "127.0.0.1:17602"; target_smc = "$RXE_PEER_IP:$PORT_RK"; } );
kernel_smc: { ueids = [ "$RXE_KSMC_UEID" ];
              bpf_object = "$abs_top_builddir/src/bpf/smc_opt.bpf.o"; };
CONF
	cp "$R/a5.conf" "$RXE_OUT/a5.conf"
	daemon_start a5 "$R/a5.conf" || rxe_die "daemon a5 did not start"
	# ruleK-nocork: a6, the same rules with rdma.autocork = false
	sed -e 's/"a5"/"a6"/; s/a5\.sock/a6.sock/; s/17601/17901/; s/17602/17902/' \
		"$R/a5.conf" >"$R/a6.conf" &&
		echo 'rdma: { autocork = false; };' >>"$R/a6.conf" || rxe_die "a6.conf"
	cp "$R/a6.conf" "$RXE_OUT/a6.conf"
	daemon_start a6 "$R/a6.conf" || rxe_die "daemon a6 did not start"
fi

# The kernel's link group comes up with the first connection (0.2-0.3 s
# under TCG), as the pairs' do above; and it must be SMC-R, not the
# kernel's silent fallback to TCP
if [ "$ksmc_on" = 1 ]; then
	$KS "$XFER" client -c "$RXE_PEER_IP:$PORT_XK" -n 1 -b 4K -T 60 \
		>/dev/null 2>&1 || rxe_die "first kernel SMC connection failed"
	[ "$(ksmc_stat clnt_v2_succ)" -ge 1 ] && [ "$(ksmc_stat fback_clnt)" = 0 ] ||
		rxe_die "kernel SMC fell back to TCP: $("$SMCNL" stats | tr '\n' ' ')"
	"$SMCNL" stats >"$RXE_OUT/smc-stats.before.txt" 2>&1
	for d in a5:17601 a6:17901; do
		"$XFER" client -c "127.0.0.1:${d#*:}" -n 1 -b 4K -T 60 >/dev/null 2>&1 ||
			rxe_die "first connection through ${d%:*} (ruleK) failed"
		[ "$(rxe_stat "${d%:*}" smc_out_rdma)" -ge 1 ] ||
			rxe_die "${d%:*} did not go over RDMA: $("$CTL" -s "$R/${d%:*}.sock" stats | grep smc_out)"
		"$CTL" -s "$R/${d%:*}.sock" stats reset >/dev/null
	done
	ksmc "$XFER" client -c "$RXE_PEER_IP:$PORT_XE" -n 1 -b 4K -T 60 \
		>/dev/null 2>&1 || rxe_die "first connection through exportK failed"
	on_b 'rxe_signal b5-rdma "$(rxe_stat b5 smc_conns_rdma)"'
	[ "$(rxe_value b5-rdma)" -ge 1 ] 2>/dev/null ||
		rxe_die "exportK did not go over RDMA (b5 smc_conns_rdma $(rxe_value b5-rdma))"
fi

# cork_set VALUE: net.smc.autocorking_size on both hosts (ksmc-nocork runs
# with 0, everything else with the kernel's default)
cork_set() {
	sysctl -qw net.smc.autocorking_size="$1" || rxe_die "sysctl on a"
	on_b "sysctl -qw net.smc.autocorking_size=$1"
}

# ksmc_rec PATH ROUND METRIC SIZE CMD...: rec over kernel SMC-R (CMD under
# the library), ksmc-nocork with autocorking off on both hosts
ksmc_rec() {
	[ "$ksmc_on" = 1 ] || return 0
	[ "$1" = ksmc-nocork ] && cork_set 0
	_kp=$1 _kr=$2 _km=$3 _ks=$4
	shift 4
	rec "$_kp" "$_kr" "$_km" "$_ks" $KS "$@"
	[ "$_kp" = ksmc-nocork ] && cork_set "$cork0"
	return 0
}

# pp_tcp PATH ROUND SIZE HOST:PORT: an xfer ping-pong sample.
pp_tcp() {
	cmd "xfer client -c $4 -m pingpong -s SIZE -i $iters --json -T 120 ($1)"
	rec "$1" "$2" xfer_pp "$3" "$XFER" client -c "$4" -m pingpong -s "$3" \
		-i "$iters" --json -T 120
}

# pp_raw PATH ROUND SIZE [-e]: ibv_rc_pingpong, b serving (a port per
# sample: no wait for the last one's to be free).
pp_raw() {
	_p=$((PORT_PP + rxe_req % 500))
	_opt="-s $3 -n $iters -p $_p ${4:-}"
	cmd "ibv_rc_pingpong -d $RXE_DEV0 -g GID -s SIZE -n $iters ${4:-} [$RXE_PEER_IP] ($1)"
	on_b "timeout 120 ibv_rc_pingpong -d \$RXE_DEV0 -g \$GIDX $_opt \
		>>\$RXE_OUT/pingpong-server.log 2>&1 &
		rxe_wait 20 listening $_p"
	# shellcheck disable=SC2086
	rec "$1" "$2" rc_pingpong "$3" ibv_rc_pingpong -d "$RXE_DEV0" -g "$GIDX" \
		$_opt "$RXE_PEER_IP"
}

# links_of PATH ROUND WHEN SIZE: a1's links, to count WRs per round trip.
links_of() {
	printf '%s\t%s\tlinks_%s\t%s\t%s\n' "$1" "$2" "$3" "$4" \
		"$("$CTL" -s "$R/a1.sock" -j show links 2>&1 | tr '\n\t' '  ')" >>"$RAW"
}

# pkts_of PATH ROUND WHEN SIZE: what a's rxe0 sent and received (its
# hw_counters), to count RoCE packets per round trip.
HWC=/sys/class/infiniband/$RXE_DEV0/ports/1/hw_counters
pkts_of() {
	printf '%s\t%s\tpkts_%s\t%s\t%s %s\n' "$1" "$2" "$3" "$4" \
		"$(cat "$HWC/sent_pkts" 2>/dev/null)" \
		"$(cat "$HWC/rcvd_pkts" 2>/dev/null)" >>"$RAW"
}

redis_one() {	# PATH ROUND PORT [HOST]
	cmd "redis-benchmark -h HOST -p PORT -n $redis_n -c 8 -t ping,set,get -d 64 -q ($1)"
	rec "$1" "$2" redis 64 redis-benchmark -h "${4:-127.0.0.1}" -p "$3" \
		-n "$redis_n" -c 8 -t ping,set,get -d 64 -q
}

order() {	# the paths in the order of round $1: reversed every other round
	if [ $(($1 % 2)) = 1 ]; then echo "$2"; else echo "$2" | tr ' ' '\n' | tac | tr '\n' ' '; fi
}

# kpath PATH: PATH needs kernel SMC-R (RXE_TH_KSMC=1)
kpath() {
	case $1 in ksmc* | ruleK* | exportK) return 0 ;; esac
	return 1
}

# xf_of PATH: where PATH's xfer client connects (exportK and ksmc run
# under ksmc_rec, the client's socket an SMC one)
xf_of() {
	case $1 in
	direct) echo "$RXE_PEER_IP:$PORT_XD" ;;
	pairR) echo 127.0.0.1:17101 ;;
	pairF) echo 127.0.0.1:17201 ;;
	pairW) echo 127.0.0.1:17301 ;;
	pairN) echo 127.0.0.1:17401 ;;
	pairR-nocork) echo 127.0.0.1:17701 ;;
	pairH) echo "127.0.0.1:$PORT_HA" ;;
	loop_a) echo "127.0.0.1:$PORT_XL" ;;
	ruleK) echo 127.0.0.1:17601 ;;
	ruleK-nocork) echo 127.0.0.1:17901 ;;
	exportK) echo "$RXE_PEER_IP:$PORT_XE" ;;
	ksmc*) echo "$RXE_PEER_IP:$PORT_XK" ;;
	esac
}

# xrec PATH ROUND METRIC SIZE XFER-ARGS...: an xfer client sample on PATH
xrec() {
	_xp=$1 _xr=$2 _xm=$3 _xs=$4
	shift 4
	case $_xp in
	ksmc* | exportK)
		ksmc_rec "$_xp" "$_xr" "$_xm" "$_xs" "$XFER" client \
			-c "$(xf_of "$_xp")" "$@" ;;
	*) rec "$_xp" "$_xr" "$_xm" "$_xs" "$XFER" client -c "$(xf_of "$_xp")" "$@" ;;
	esac
}

r=1
while [ $r -le "$rounds" ]; do
	echo "== round $r"
	for s in $sizes; do
		for p in $(order $r "raw raw_e direct loop_a loop_b pairR pairN pairF pairH ksmc ksmc-nocork ruleK exportK"); do
			case $p in
			raw) pp_raw raw $r $s ;;
			raw_e)
				pkts_of raw_e $r before $s
				pp_raw raw_e $r $s -e
				pkts_of raw_e $r after $s ;;
			direct) pp_tcp direct $r $s "$RXE_PEER_IP:$PORT_XD" ;;
			loop_a) pp_tcp loop_a $r $s "127.0.0.1:$PORT_XL" ;;
			loop_b)
				on_b "rec loop_b $r xfer_pp $s $XFER client \
					-c 127.0.0.1:$PORT_XL -m pingpong -s $s \
					-i $iters --json -T 120" ;;
			pairR)
				links_of pairR $r before $s
				pkts_of pairR $r before $s
				pp_tcp pairR $r $s 127.0.0.1:17101
				pkts_of pairR $r after $s
				links_of pairR $r after $s ;;
			pairN)
				pkts_of pairN $r before $s
				pp_tcp pairN $r $s 127.0.0.1:17401
				pkts_of pairN $r after $s ;;
			pairF) pp_tcp pairF $r $s 127.0.0.1:17201 ;;
			pairH) pp_tcp pairH $r $s 127.0.0.1:$PORT_HA ;;
			ruleK)
				[ "$ksmc_on" = 1 ] || continue
				pp_tcp ruleK $r $s 127.0.0.1:17601 ;;
			exportK)
				[ "$ksmc_on" = 1 ] || continue
				cmd "LD_PRELOAD=smcpreload.so xfer client -c B:$PORT_XE -m pingpong -s SIZE -i $iters --json -T 120 (exportK)"
				xrec exportK $r xfer_pp $s -m pingpong -s "$s" \
					-i "$iters" --json -T 120 ;;
			ksmc | ksmc-nocork)
				[ "$ksmc_on" = 1 ] || continue
				cmd "LD_PRELOAD=smcpreload.so xfer client -c B:$PORT_XK -m pingpong -s SIZE -i $iters --json -T 120 ($p)"
				pkts_of $p $r before $s
				ksmc_rec $p $r xfer_pp $s "$XFER" client \
					-c "$RXE_PEER_IP:$PORT_XK" -m pingpong \
					-s "$s" -i "$iters" --json -T 120
				pkts_of $p $r after $s ;;
			esac
		done
	done
	for p in $(order $r "raw direct pairR pairW pairF pairH ksmc ksmc-nocork ruleK exportK"); do
		kpath $p && [ "$ksmc_on" != 1 ] && continue
		case $p in
		raw)
			_p=$((PORT_PP + rxe_req % 500))
			_opt="-s 65536 -D $secs -F -p $_p"
			cmd "ib_write_bw -d $RXE_DEV0 -x GID $_opt [$RXE_PEER_IP] (raw)"
			on_b "timeout 120 ib_write_bw -d \$RXE_DEV0 -x \$GIDX $_opt \
				>>\$RXE_OUT/ibw-server.log 2>&1 &
				rxe_wait 20 listening $_p"
			# shellcheck disable=SC2086
			rec raw $r ib_write_bw 65536 ib_write_bw -d "$RXE_DEV0" \
				-x "$GIDX" $_opt "$RXE_PEER_IP"
			sleep 0.5 ;;
		ksmc | ksmc-nocork)
			cmd "LD_PRELOAD=smcpreload.so xfer client -c B:$PORT_XK -m stream -t $secs --json -T 120 ($p)"
			ksmc_rec $p $r xfer_stream 65536 "$XFER" client \
				-c "$RXE_PEER_IP:$PORT_XK" -m stream -t "$secs" \
				--json -T 120 ;;
		*)
			cmd "xfer client -c HOST:PORT -m stream -t $secs --json -T 120 ($p)"
			xrec $p $r xfer_stream 65536 -m stream -t "$secs" \
				--json -T 120 ;;
		esac
	done
	# one stream by write size (the seeds' autocork table): xfer
	# --write-size, one write() per SIZE bytes
	for ws in $wsizes; do
		for p in $(order $r "direct loop_a loop_b pairR pairR-nocork pairF ksmc ksmc-nocork ruleK ruleK-nocork exportK"); do
			kpath $p && [ "$ksmc_on" != 1 ] && continue
			cmd "xfer client -c HOST:PORT -m stream -t $secs --write-size SIZE --json -T 120 ($p)"
			if [ $p = loop_b ]; then
				on_b "rec loop_b $r xfer_ws $ws $XFER client \
					-c 127.0.0.1:$PORT_XL -m stream -t $secs \
					--write-size $ws --json -T 120"
				continue
			fi
			xrec $p $r xfer_ws $ws -m stream -t "$secs" \
				--write-size $ws --json -T 120
		done
	done
	# short connections: connect, 64 B each way, close, $nconns at once
	for p in $(order $r "direct pairR pairF ksmc ksmc-nocork ruleK exportK"); do
		kpath $p && [ "$ksmc_on" != 1 ] && continue
		cmd "xfer client -c HOST:PORT -n $nconns -b 64 -B 64 --json -T 120 ($p)"
		xrec $p $r xfer_conn $nconns -n "$nconns" -b 64 -B 64 --json -T 120
	done
	# connect time: $ctn connections one after another, each timed from
	# before its connect() to the echo of its first 64 B (xfer
	# --connect-time): the handshake a program waits for, CLC and all
	for p in $(order $r "direct pairR pairF ksmc ruleK exportK"); do
		kpath $p && [ "$ksmc_on" != 1 ] && continue
		cmd "xfer client -c HOST:PORT --connect-time -n $ctn -s 64 --json -T 120 ($p)"
		xrec $p $r xfer_ct 64 --connect-time -n "$ctn" -s 64 --json -T 120
	done
	for p in $(order $r "direct pairR pairF pairH ksmc ksmc-nocork ruleK exportK"); do
		kpath $p && [ "$ksmc_on" != 1 ] && continue
		case $p in
		direct) redis_one direct $r $PORT_RD "$RXE_PEER_IP" ;;
		ruleK) redis_one ruleK $r 17602 ;;
		pairR) redis_one pairR $r 17102 ;;
		pairF) redis_one pairF $r 17202 ;;
		pairH) redis_one pairH $r $((PORT_HA + 1)) ;;
		exportK)
			cmd "LD_PRELOAD=smcpreload.so redis-benchmark -h B -p $((PORT_XE + 1)) -n $redis_n -c 8 -t ping,set,get -d 64 -q (exportK)"
			ksmc_rec exportK $r redis 64 redis-benchmark -h "$RXE_PEER_IP" \
				-p $((PORT_XE + 1)) -n "$redis_n" -c 8 -t ping,set,get -d 64 -q ;;
		ksmc | ksmc-nocork)
			cmd "LD_PRELOAD=smcpreload.so redis-benchmark -h B -p $PORT_RK -n $redis_n -c 8 -t ping,set,get -d 64 -q ($p)"
			ksmc_rec $p $r redis 64 redis-benchmark -h "$RXE_PEER_IP" \
				-p $PORT_RK -n "$redis_n" -c 8 -t ping,set,get -d 64 -q ;;
		esac
	done
	r=$((r + 1))
done

# --trace N: daemon a1 under strace -f -ttt -T for N 64-byte round trips
# through pairR, untimed (where a round trip's time goes on host a)
trace_iters=${RXE_TH_TRACE:-0}
if [ "$trace_iters" -gt 0 ] && command -v strace >/dev/null; then
	cmd "strace -f -ttt -T -p PID_OF_A1 (xfer ping-pong -s 64 -i $trace_iters, pairR)"
	strace -f -ttt -T -p "$rxe_pid_a1" -o "$RXE_OUT/trace.a1.txt" 2>/dev/null &
	_st=$!
	sleep 2
	"$XFER" client -c 127.0.0.1:17101 -m pingpong -s 64 -i "$trace_iters" \
		--json -T 60 >"$RXE_OUT/trace.xfer.json" 2>&1
	kill -INT $_st 2>/dev/null
	wait $_st
fi
# ... and daemon a1's user and system CPU time for 5 N round trips, from
# /proc (not under strace)
if [ "$trace_iters" -gt 0 ]; then
	cmd "/proc/PID_OF_A1/stat utime, stime around xfer ping-pong -s 64 -i $((trace_iters * 5)) (pairR)"
	read -r _u0 _s0 <<EOF2
$(awk '{ print $14, $15 }' "/proc/$rxe_pid_a1/stat")
EOF2
	"$XFER" client -c 127.0.0.1:17101 -m pingpong -s 64 \
		-i $((trace_iters * 5)) --json -T 120 >"$RXE_OUT/cpu.xfer.json" 2>&1
	read -r _u1 _s1 <<EOF2
$(awk '{ print $14, $15 }' "/proc/$rxe_pid_a1/stat")
EOF2
	echo "a1 ticks over $((trace_iters * 5)) round trips: user $((_u1 - _u0)) system $((_s1 - _s0)) (CLK_TCK $(getconf CLK_TCK))" \
		>"$RXE_OUT/cpu.a1.txt"
fi

# RXE_TH_TIMELINE=N (tl_start, tl_stop above): the timeline
if [ "$tl_iters" -gt 0 ] && command -v tcpdump >/dev/null; then
	echo "== timeline"
	echo "timeline $tl_iters" >>"$RXE_OUT/vm.txt"
	for p in ksmc exportK ruleK pairR direct; do
		kpath $p && [ "$ksmc_on" != 1 ] && continue
		cmd "tcpdump -i any -w tl.$p.pcap '$TL_FILTER' on both hosts around xfer client -c HOST:PORT --connect-time -n $tl_iters -s 64 ($p)"
		on_b "tl_start $p"
		tl_start $p
		xrec $p 0 xfer_tl 64 --connect-time -n "$tl_iters" -s 64 \
			--json -T 300
		tl_stop
		on_b tl_stop
	done
	# and exportK once more with b5's debug log on (-t: each line with
	# the time, to line up with tl.exportK.pcap), apart: every debug
	# line is a write
	if [ "$ksmc_on" = 1 ]; then
		on_b '"$CTL" -s "$R/b5.sock" log-level debug >/dev/null'
		cmd "smcproxyctl log-level debug (b5, started with -t) around xfer client --connect-time -n 10 (exportK)"
		on_b 'tl_start exportK-debug'
		xrec exportK 0 xfer_tld 64 --connect-time -n 10 -s 64 --json -T 300
		on_b 'tl_stop; "$CTL" -s "$R/b5.sock" log-level info >/dev/null'
	fi
	# and once more with host b sampled whole (perf record -a -g): where
	# b's one vCPU goes during a connect, the daemon's user and kernel
	# time beside the server's and the kernel's own (perf report -i
	# tl.perf.data --kallsyms tl.kallsyms on the host).  perf takes
	# seconds to start under TCG, so it runs for a fixed 30 s, the
	# connects inside them.
	if [ "$ksmc_on" = 1 ] && command -v perf >/dev/null; then
		cmd "perf record -a -g -F 997 -- sleep 30 on host b, xfer client --connect-time -n $((tl_iters * 2)) inside it (exportK)"
		on_b 'cat /proc/kallsyms >"$RXE_OUT/tl.kallsyms"
			perf record -a -g -F 997 -o "$R/tl.perf.data" -- sleep 30 \
				>"$RXE_OUT/tl.perf.log" 2>&1 & _tl_perf=$!; sleep 10'
		xrec exportK 0 xfer_tlp 64 --connect-time -n $((tl_iters * 2)) \
			-s 64 --json -T 300
		on_b 'wait $_tl_perf; cp "$R/tl.perf.data" "$RXE_OUT/"'
	fi
fi

if [ "$pf_iters" -gt 0 ] && command -v perf >/dev/null; then
	echo "== profile"
	echo "profile $pf_iters" >>"$RXE_OUT/vm.txt"
	cat /proc/kallsyms >"$RXE_OUT/pf.kallsyms"
	on_b 'cat /proc/kallsyms >"$RXE_OUT/pf.kallsyms"'
	for p in ksmc exportK ruleK pairR; do
		kpath $p && [ "$ksmc_on" != 1 ] && continue
		cmd "perf record -a -g -F 997 on both hosts around xfer client -c HOST:PORT -m pingpong -s 64 -i $pf_iters ($p)"
		on_b "pf_start $p"
		pf_start $p
		xrec $p 0 xfer_pf 64 -m pingpong -s 64 -i "$pf_iters" --json -T 300
		pf_stop
		on_b pf_stop
	done
fi

# count_run PATH TAG "DAEMONS" CMD...: CMD with DAEMONS (a1, b1, ...)
# under strace -c -f and their links before and after; untimed.
count_run() {
	_cp=$1 _ct=$2 _cd=$3
	shift 3
	for _d in $_cd; do
		case $_d in
		a*) sc_start "$_cp" "$_ct" "$_d" ;;
		b*) on_b "sc_start $_cp $_ct $_d" ;;
		esac
	done
	sleep 2		# strace has attached every thread
	"$@" >"$RXE_OUT/count.$_cp.$_ct.out" 2>&1 ||
		rxe_log "count $_cp $_ct: the load failed (count.$_cp.$_ct.out)"
	sleep 1		# the last completions reaped
	for _d in $_cd; do
		case $_d in
		a*) sc_stop "$_d" ;;
		b*) on_b "sc_stop $_d" ;;
		esac
	done
}

# RXE_TH_COUNTS=N: per path, its daemons' counts over N and 2N 64 B round
# trips (rt1, rt2) and over 100 N and 200 N one-byte writes in a stream
# (ws1, ws2): the host side takes the differences, so that a connection's
# setup and end cancel out.  pairR: a1 and b1; ruleK: a5; exportK: b5
# (its client a kernel SMC-R one: the writes are corked by a's kernel
# before b5 sees them).
if [ "$counts" -gt 0 ] && command -v strace >/dev/null; then
	echo "== counts"
	echo "counts $counts" >>"$RXE_OUT/vm.txt"
	for p in pairR ruleK exportK; do
		case $p in
		pairR) ds="a1 b1" pre= ;;
		ruleK) ds=a5 pre= ;;
		exportK) ds=b5 pre=ksmc ;;
		esac
		kpath $p && [ "$ksmc_on" != 1 ] && continue
		cmd "strace -c -f -p PID (daemons $ds) around xfer client -c HOST:PORT -m pingpong -s 64 -i N, N = $counts and $((counts * 2)); -m stream -b W --write-size 1, W = $((counts * 100)) and $((counts * 200)) ($p)"
		for k in 1 2; do
			count_run $p rt$k "$ds" $pre "$XFER" client -c "$(xf_of $p)" \
				-m pingpong -s 64 -i $((counts * k)) --json -T 300
			count_run $p ws$k "$ds" $pre "$XFER" client -c "$(xf_of $p)" \
				-m stream -b $((counts * 100 * k)) --write-size 1 \
				--json -T 300
		done
	done
fi

daemons="a1 a2 a3 a4 a7"
[ "$ksmc_on" = 1 ] && daemons="$daemons a5 a6"
for d in $daemons; do
	"$CTL" -s "$R/$d.sock" -j stats 2>/dev/null | tr -d '\n' >"$RXE_OUT/$d.stats.json"
done
[ "$ksmc_on" = 1 ] && "$SMCNL" stats >"$RXE_OUT/smc-stats.txt" 2>&1
rxe_serve_end
for d in $daemons; do
	daemon_stop $d || rxe_log "$d exited with $?"
done
echo "== done"
