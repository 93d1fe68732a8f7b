#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the Soft-RoCE VM (run by contrib/bench/send-engine through
# tests/rxe/vm-run): A/B pairs of smcproxyd daemon pairs over rxe0, both
# pairs of an experiment up at once, measured interleaved (A B, B A, ...).
# With two hosts (vm-run -2, send-engine --two-host) the b daemons and the
# servers run on host b, which does what host a asks (rxe_serve); the a
# daemons and every client run on host a, the pairs' links cross the link.
# Every sample is one line in $RXE_OUT/raw.tsv:
#   exp variant round metric size tool-output-on-one-line
# and the host side turns them into medians and ratios.
# With two hosts on Linux 6.12 and RXE_SE_KSMC=1 (send-engine --two-host,
# --kernel backports), autocork and inline also measure Linux's own SMC-R
# between the hosts, interleaved with the pairs, as the seeds compare
# against it: variant K, the programs' TCP sockets made kernel SMC sockets
# by tests/tools/smcpreload.so (sockperf and xfer servers on b's link
# address), and variant N (autocork only), the same with
# net.smc.autocorking_size = 0 on both hosts for the sample.  Knobs (env):
#   RXE_SE_ROUNDS RXE_SE_SECONDS RXE_SE_ITERS RXE_SE_BW_SIZES RXE_SE_LAT_SIZES RXE_SE_INL_SIZES
#   RXE_SE_SLOT_CONNS RXE_SE_SLOT_OUT RXE_SE_SLOT_BACK RXE_SE_EXPS
#   RXE_SE_BUSY_MODE RXE_SE_GAP_US
#   RXE_SE_SHORT_CONNS RXE_SE_WK_CONNS RXE_SE_WK_BYTES RXE_SE_RAW_BIG
#   RXE_SE_BUSY_US RXE_SE_RT_SIZES RXE_SE_STRACE_ITERS RXE_SE_BASE_DAEMON
. "$abs_top_srcdir/tests/rxe/lib.sh"

rounds=${RXE_SE_ROUNDS:-3}
secs=${RXE_SE_SECONDS:-2}
iters=${RXE_SE_ITERS:-2000}
bw_sizes=${RXE_SE_BW_SIZES:-16 64 256 4096 65000}
lat_sizes=${RXE_SE_LAT_SIZES:-1 256 4096}
inl_sizes=${RXE_SE_INL_SIZES:-1 64 200 1024}
slot_conns=${RXE_SE_SLOT_CONNS:-200}
slot_out=${RXE_SE_SLOT_OUT:-20K}
slot_back=${RXE_SE_SLOT_BACK:-100K}
exps=${RXE_SE_EXPS:-autocork inline slot raw}
rr_timeout=${RXE_SE_RR_TIMEOUT:-40}
short_conns=${RXE_SE_SHORT_CONNS:-100}
wk_conns=${RXE_SE_WK_CONNS:-32}
wk_bytes=${RXE_SE_WK_BYTES:-2M}
raw_big=${RXE_SE_RAW_BIG:-1048576}	# the raw experiment's B pair: sndbuf = rmb
busy_us=${RXE_SE_BUSY_US:-200}		# busypoll, busyfb: rdma.busy_poll_us of A
busy_mode=${RXE_SE_BUSY_MODE:-adaptive}	# busypoll, busyfb: rdma.busy_poll of A
gap_us=${RXE_SE_GAP_US:-0}		# busymode: xfer --gap-us of its ping-pongs
rt_sizes=${RXE_SE_RT_SIZES:-1 64 1024}	# round trips of busypoll, short, busyfb
strace_iters=${RXE_SE_STRACE_ITERS:-200} # round trips under strace -c; 0: none
base_daemon=${RXE_SE_BASE_DAEMON:-}	# build: the B pair's smcproxyd
ksmc_on=${RXE_SE_KSMC:-0}		# kernel SMC-R rows (two hosts, 6.12)
[ -n "${RXE_HOST:-}" ] || ksmc_on=0

if [ -n "${RXE_HOST:-}" ]; then
	rxe_host_setup
	if [ "$RXE_HOST" = a ]; then
		A_IP=$RXE_IP0 B_IP=$RXE_PEER_IP
	else
		A_IP=$RXE_PEER_IP B_IP=$RXE_IP0
	fi
else
	rxe_setup
	A_IP=$RXE_IP0 B_IP=$RXE_IP0
fi
rxe_pair_tools
R=$RXE_RUNDIR
RAW=$RXE_OUT/raw.tsv
: >"$RAW"
PORT_SP=16389		# sockperf server (target of every pair)
PORT_XF=16388		# xfer server
PORT_SPK=16390		# sockperf server on b's link address over kernel SMC
PORT_XFK=16391		# xfer server on b's link address over kernel SMC
GIDX=$(rxe_gid_index "$RXE_DEV0" "$RXE_IP0") || rxe_die "no GID index"
echo "gid_index $GIDX" >"$RXE_OUT/vm.txt"
uname -r >>"$RXE_OUT/vm.txt"
nproc >>"$RXE_OUT/vm.txt"
# Kernel SMC-R: the smc module and the user EID both hosts share (lib.sh),
# and KS, the prefix that runs a program with its TCP sockets as SMC
# sockets (rec runs it under timeout: a command, not a shell function)
if [ "$ksmc_on" = 1 ]; then
	ksmc_setup
	KS="env LD_PRELOAD=$SMCPRELOAD ASAN_OPTIONS=verify_asan_link_order=0"
	cork0=$(sysctl -n net.smc.autocorking_size) ||
		rxe_die "no net.smc.autocorking_size (Linux $(uname -r))"
	echo "autocorking_size $cork0" >>"$RXE_OUT/vm.txt"
fi

# on_b SNIPPET: run SNIPPET where the b daemons are (host b, or here).
on_b() {
	if [ -n "${RXE_HOST:-}" ]; then
		rxe_on_peer "$1"
	else
		eval "$1"
	fi
}

if [ "${RXE_HOST:-a}" = b ]; then
	head -c 48 /dev/urandom >"$R/psk" && chmod 600 "$R/psk" &&
		cp "$R/psk" "$RXE_SYNC_DIR/.psk" &&
		mv "$RXE_SYNC_DIR/.psk" "$RXE_SYNC_DIR/psk" || rxe_die "key"
elif [ -n "${RXE_HOST:-}" ]; then
	rxe_await psk 300 || rxe_die "no key from b"
	cp "$RXE_SYNC_DIR/psk" "$R/psk" && chmod 600 "$R/psk" || rxe_die "b's key"
else
	head -c 48 /dev/urandom >"$R/psk" && chmod 600 "$R/psk" || rxe_die "key"
fi

if [ "${RXE_HOST:-b}" = b ]; then
	sockperf server --tcp -i 127.0.0.1 -p $PORT_SP >"$RXE_OUT/sockperf-server.log" 2>&1 &
	"$XFER" server -q -l "127.0.0.1:$PORT_XF" >"$RXE_OUT/xfer-server.log" 2>&1 &
	rxe_wait 20 sh -c "ss -ltn | grep -q ':$PORT_XF '" || rxe_die "xfer server"
	rxe_wait 20 sh -c "ss -ltn | grep -q ':$PORT_SP '" || rxe_die "sockperf server"
	if [ "$ksmc_on" = 1 ]; then
		$KS sockperf server --tcp -i "$B_IP" -p $PORT_SPK \
			>"$RXE_OUT/sockperf-server-ksmc.log" 2>&1 &
		$KS "$XFER" server -q -l "$B_IP:$PORT_XFK" \
			>"$RXE_OUT/xfer-server-ksmc.log" 2>&1 &
		rxe_wait 20 sh -c "ss -ltn | grep -q ':$PORT_XFK '" &&
			rxe_wait 20 sh -c "ss -ltn | grep -q ':$PORT_SPK '" ||
			rxe_die "kernel SMC servers on b"
	fi
fi

cmd() {	# log a command line once per kind
	echo "$*" >>"$RXE_OUT/commands.txt"
}

# daemon_as BIN NAME CONF: daemon_start with smcproxyd BIN ("": ours).
daemon_as() {
	_sd=$SMCPROXYD
	[ -n "$1" ] && SMCPROXYD=$1
	daemon_start "$2" "$3"
	_rc=$?
	SMCPROXYD=$_sd
	return $_rc
}

# b_up N EXTRA_RDMA_KEYS DEV WORKERS [BIN]: daemon bN (on host b, or here),
# smcproxyd BIN if given.
b_up() {
	cat >"$R/b$1.conf" <<CONF
smcproxyd: { name = "b$1"; workers = $4; control_socket = "$R/b$1.sock"; };
peer_listen: { address = "$B_IP:72${1}0"; };
peers = ( { name = "a$1"; address = "$A_IP:72${1}1"; key_file = "$R/psk"; } );
exports = ( { name = "sp"; target = "127.0.0.1:$PORT_SP"; peers = [ "a$1" ]; },
            { name = "xf"; target = "127.0.0.1:$PORT_XF"; peers = [ "a$1" ]; } );
rdma: { devices = [ "$3" ]; $2 };
CONF
	daemon_as "${5:-}" b$1 "$R/b$1.conf" || rxe_die "daemon b$1 did not start"
}

# b_down N: bN's counters and links into $RXE_OUT, then bN stops.
b_down() {
	"$CTL" -s "$R/b$1.sock" -j stats 2>/dev/null | tr -d '\n' >"$RXE_OUT/b$1.stats.json"
	"$CTL" -s "$R/b$1.sock" -j show links 2>/dev/null | tr -d '\n' >"$RXE_OUT/b$1.links.json"
	daemon_stop b$1 || rxe_log "b$1 exited with $?"
}

# Host b of two: serve host a's requests (b_up, b_down, links, a perftest
# server), then end.
if [ "${RXE_HOST:-a}" = b ]; then
	rxe_serve || rxe_log "host a stopped asking"
	[ "$ksmc_on" = 1 ] && "$SMCNL" stats >"$RXE_OUT/smc-stats.txt" 2>&1
	echo "== done"
	exit 0
fi

# pair_up N EXTRA_RDMA_KEYS [fallback | workers=W | base]: daemons aN, bN;
# rules on 127.0.0.1:17N00 (sockperf), 17N01 (xfer).  Waits until the
# link group is active; with "fallback", b has no usable device (it
# declines NOSMCRDEV) and every connection takes the TCP fallback; with
# workers=W both daemons run W workers (else 1); with base both run
# $base_daemon.
pair_up() {
	n=$1
	extra=$2
	bdev=$RXE_DEV0
	wk=1
	bin=
	case ${3:-} in
	fallback) bdev=nosuchdev ;;
	workers=*) wk=${3#workers=} ;;
	base) bin=$base_daemon ;;
	esac
	on_b "b_up $n $(rxe_quote "$extra") $bdev $wk $(rxe_quote "$bin")"
	cat >"$R/a$n.conf" <<CONF
smcproxyd: { name = "a$n"; workers = $wk; control_socket = "$R/a$n.sock"; };
peers = ( { name = "b$n"; address = "$B_IP:72${n}0"; key_file = "$R/psk"; } );
rules = ( { name = "sp"; listen = "127.0.0.1:17${n}00"; peer = "b$n"; export = "sp"; },
          { name = "xf"; listen = "127.0.0.1:17${n}01"; peer = "b$n"; export = "xf"; } );
rdma: { devices = [ "$RXE_DEV0" ]; $extra };
CONF
	cp "$R/a$n.conf" "$RXE_OUT/a$n.conf"
	daemon_as "$bin" a$n "$R/a$n.conf" || rxe_die "daemon a$n did not start"
	"$XFER" client -c "127.0.0.1:17${n}01" -n 1 -b 4K -T 60 >/dev/null 2>&1 ||
		rxe_log "first (fallback) connection through pair $n failed"
	if [ "$bdev" = nosuchdev ]; then
		rxe_wait 60 logged a$n "peer declined, NOSMCRDEV" ||
			rxe_die "pair $n: b$n did not decline (see a$n.log)"
	else
		rxe_wait 60 logged a$n "link group active" ||
			rxe_die "pair $n: no link group (see a$n.log)"
	fi
	# one group per worker: warm them all (connections spread by the kernel)
	_try=0
	while [ "$(grep -c 'link group active as client' "$RXE_OUT/a$n.log")" -lt "$wk" ] &&
		[ $_try -lt 10 ]; do
		"$XFER" client -c "127.0.0.1:17${n}01" -n 8 -b 4K -T 60 >/dev/null 2>&1
		sleep 2
		_try=$((_try + 1))
	done
	"$CTL" -s "$R/a$n.sock" stats reset >/dev/null
	on_b "\"\$CTL\" -s \"\$R/b$n.sock\" stats reset >/dev/null"
}

pair_down() {
	"$CTL" -s "$R/a$1.sock" -j stats 2>/dev/null | tr -d '\n' >"$RXE_OUT/a$1.stats.json"
	"$CTL" -s "$R/a$1.sock" -j show links 2>/dev/null | tr -d '\n' >"$RXE_OUT/a$1.links.json"
	daemon_stop a$1 || rxe_log "a$1 exited with $?"
	on_b "b_down $1"
}

# rec EXP VARIANT ROUND METRIC SIZE CMD...: run CMD, one line into raw.tsv.
rec() {
	_k="$1	$2	$3	$4	$5"
	shift 5
	_o=$(timeout 120 "$@" 2>&1 | tr '\n\t' '  ')
	printf '%s\t%s\n' "$_k" "$_o" >>"$RAW"
}

# links EXP VARIANT ROUND WHEN N [SIZE]: snapshot of a's and b's links, and
# of the bytes a has sent (tx_bytes) and its busy polling counters, in the
# size column SIZE (default 0)
links() {
	on_b "links_of b $*"
	links_of a "$@"
	printf '%s\t%s\t%s\ttxbytes_%s_a\t%s\t%s\n' "$1" "$2" "$3" "$4" "${6:-0}" \
		"$(rxe_stat "a$5" tx_bytes)" >>"$RAW"
	for _k in bpolls:busy_polls bphits:busy_poll_hits bptime:busy_poll_time_us; do
		printf '%s\t%s\t%s\t%s_%s_a\t%s\t%s\n' "$1" "$2" "$3" "${_k%%:*}" "$4" \
			"${6:-0}" "$(rxe_stat "a$5" "${_k#*:}")" >>"$RAW"
	done
}

# links_of a|b EXP VARIANT ROUND WHEN N [SIZE]: one daemon's snapshot.
links_of() {
	_d=$1
	shift
	printf '%s\t%s\t%s\tlinks_%s_%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$_d" "${6:-0}" \
		"$("$CTL" -s "$R/$_d$5.sock" -j show links 2>&1 | tr '\n\t' '  ')" >>"$RAW"
}

order() {	# variants (default A B) in the order of round $1: as given,
	# then reversed, ...
	_vs=${2:-A B}
	if [ $(($1 % 2)) = 1 ]; then echo "$_vs"; else
		echo "$_vs" | tr ' ' '\n' | tac | tr '\n' ' '; fi
}
port() {	# port VARIANT KIND(0 sockperf, 1 xfer)
	if [ "$1" = A ]; then echo "1710$2"; else echo "1720$2"; fi
}

# Kernel SMC-R (variants K and N): cork_set VALUE sets
# net.smc.autocorking_size on both hosts; ksmc_check says once that the
# kernel's connections are SMC-R, not its silent fallback to TCP
cork_set() {
	sysctl -qw net.smc.autocorking_size="$1" || rxe_die "sysctl on a"
	on_b "sysctl -qw net.smc.autocorking_size=$1"
}
ksmc_checked=0
ksmc_check() {
	[ "$ksmc_on" = 1 ] && [ $ksmc_checked = 0 ] || return 0
	$KS "$XFER" client -c "$B_IP:$PORT_XFK" -n 1 -b 4K -T 60 >/dev/null 2>&1 ||
		rxe_die "first kernel SMC connection failed"
	[ "$(ksmc_stat clnt_v2_succ)" -ge 1 ] && [ "$(ksmc_stat fback_clnt)" = 0 ] ||
		rxe_die "kernel SMC fell back to TCP: $("$SMCNL" stats | tr '\n' ' ')"
	"$SMCNL" stats >"$RXE_OUT/smc-stats.before.txt" 2>&1
	ksmc_checked=1
}
# krec EXP V ROUND METRIC SIZE CMD...: rec of CMD over kernel SMC-R, with
# autocorking off on both hosts for variant N
krec() {
	[ "$2" = N ] && cork_set 0
	_kv=$2
	_kk="$1 $2 $3 $4 $5"
	shift 5
	# shellcheck disable=SC2086
	rec $_kk $KS "$@"
	[ "$_kv" = N ] && cork_set "$cork0"
	return 0
}
kvariant() {	# V: K or N, kernel SMC-R
	[ "$1" = K ] || [ "$1" = N ]
}

bw_one() {	# EXP V ROUND SIZE; links around it: WRs posted per byte sent
	if kvariant "$2"; then
		cmd "LD_PRELOAD=smcpreload.so sockperf throughput --tcp -i B_IP -p $PORT_SPK -t $secs -m SIZE (kernel SMC-R)"
		krec "$1" "$2" "$3" sockperf_bw "$4" sockperf throughput --tcp \
			-i "$B_IP" -p $PORT_SPK -t "$secs" -m "$4"
		return
	fi
	_n=1; [ "$2" = B ] && _n=2
	cmd "sockperf throughput --tcp -i 127.0.0.1 -p PORT -t $secs -m SIZE"
	links "$1" "$2" "$3" before $_n "$4"
	rec "$1" "$2" "$3" sockperf_bw "$4" \
		sockperf throughput --tcp -i 127.0.0.1 -p "$(port "$2" 0)" -t "$secs" -m "$4"
	links "$1" "$2" "$3" after $_n "$4"
}
lat_one() {	# EXP V ROUND SIZE
	if kvariant "$2"; then
		cmd "LD_PRELOAD=smcpreload.so xfer client -c B_IP:$PORT_XFK -m pingpong -s SIZE -i $iters --json -T 60 (kernel SMC-R)"
		krec "$1" "$2" "$3" xfer_pp "$4" "$XFER" client -c "$B_IP:$PORT_XFK" \
			-m pingpong -s "$4" -i "$iters" --json -T 60
		return
	fi
	_g=
	[ "$1" = busymode ] && [ "$gap_us" -gt 0 ] && _g="--gap-us $gap_us"
	cmd "xfer client -c 127.0.0.1:PORT -m pingpong -s SIZE -i $iters${_g:+ $_g} --json -T 60"
	rec "$1" "$2" "$3" xfer_pp "$4" \
		"$XFER" client -c "127.0.0.1:$(port "$2" 1)" -m pingpong -s "$4" -i "$iters" \
		$_g --json -T 60
}
# rt_one EXP V ROUND SIZE: a ping-pong sample with both daemons' links
# around it (WRs, completions, CQ events per round trip), then, untimed,
# strace -c -f on daemon a for strace_iters round trips (syscalls per
# round trip), first round only.
rt_one() {
	_n=1; [ "$2" = B ] && _n=2
	links "$1" "$2" "$3" before $_n "$4"
	lat_one "$@"
	links "$1" "$2" "$3" after $_n "$4"
	if [ "$3" = 1 ] && [ "$strace_iters" -gt 0 ] && command -v strace >/dev/null; then
		eval "_p=\${rxe_pid_a$_n:-}"
		cmd "strace -c -f -p PID_OF_A -o FILE (xfer ping-pong -i $strace_iters)"
		strace -c -f -p "$_p" -o "$RXE_OUT/strace.$1.$2.$4.txt" 2>/dev/null &
		_st=$!
		sleep 2
		"$XFER" client -c "127.0.0.1:$(port "$2" 1)" -m pingpong -s "$4" \
			-i "$strace_iters" -T 60 >/dev/null 2>&1
		kill -INT $_st 2>/dev/null
		wait $_st
	fi
}
stream_one() {	# EXP V ROUND
	cmd "xfer client -c 127.0.0.1:PORT -m stream -t $secs --json -T 60"
	rec "$1" "$2" "$3" xfer_stream 65536 \
		"$XFER" client -c "127.0.0.1:$(port "$2" 1)" -m stream -t "$secs" --json -T 60
}

for e in $exps; do
	case $e in
	autocork) ka="autocork = true;"; kb="autocork = false;" ;;
	inline) ka="inline = true;"; kb="inline = false;" ;;
	slot) ka="slot_wait = \"exclusive\"; max_send_wr = 16; max_conns_per_lgr = 255;"
	      kb="slot_wait = \"all\"; max_send_wr = 16; max_conns_per_lgr = 255;" ;;
	raw | short | workers | build) ka=""; kb="" ;;
	busypoll) ka="busy_poll = \"$busy_mode\"; busy_poll_us = $busy_us;"
		  kb="busy_poll = \"off\";" ;;
	busyfb) ka="busy_poll = \"$busy_mode\"; busy_poll_us = $busy_us;"; kb="" ;;
	busymode) ka="busy_poll = \"adaptive\"; busy_poll_us = $busy_us;"
		  kb="busy_poll = \"always\"; busy_poll_us = $busy_us;" ;;
	lazy) ka="lazy_completions = true;"; kb="lazy_completions = false;" ;;
	esac
	echo "== $e: A { $ka } B { $kb }"
	case $e in
	workers) pair_up 1 "" workers=2 ;;
	*) pair_up 1 "$ka" ;;
	esac
	case $e in
	raw) pair_up 2 "sndbuf = $raw_big; rmb = $raw_big;" ;;
	short | busyfb) pair_up 2 "" fallback ;;
	build) pair_up 2 "" base ;;
	*) pair_up 2 "$kb" ;;
	esac
	# the variants measured: with kernel SMC-R, autocork's K and N and
	# inline's K too
	vs="A B"
	if [ "$ksmc_on" = 1 ]; then
		case $e in
		autocork) vs="A B K N"; ksmc_check ;;
		inline) vs="A B K"; ksmc_check ;;
		esac
	fi
	r=1
	while [ $r -le "$rounds" ]; do
		case $e in
		autocork)
			for s in $bw_sizes; do
				for v in $(order $r "$vs"); do bw_one $e $v $r $s; done
			done
			for s in $lat_sizes; do
				for v in $(order $r "$vs"); do lat_one $e $v $r $s; done
			done ;;
		inline)
			for s in $inl_sizes; do
				for v in $(order $r "$vs"); do lat_one $e $v $r $s; done
			done ;;
		slot)
			for v in $(order $r); do
				n=1; [ $v = B ] && n=2
				links $e $v $r before $n
				cmd "xfer client -c 127.0.0.1:PORT -n $slot_conns -b $slot_out -B $slot_back --json -T $rr_timeout"
				"$XFER" client -c "127.0.0.1:$(port $v 1)" -n "$slot_conns" \
					-b "$slot_out" -B "$slot_back" --json -T "$rr_timeout" \
					>"$RXE_OUT/rr.$v.$r.out" 2>&1 &
				_x=$!
				rxe_wait $((rr_timeout / 2)) eval "! rxe_alive $_x"
				if rxe_alive $_x; then	# still running: what is it waiting for?
					"$CTL" -s "$R/a$n.sock" -j show conns >"$RXE_OUT/rr.$v.$r.a-conns.json" 2>&1
					"$CTL" -s "$R/b$n.sock" -j show conns >"$RXE_OUT/rr.$v.$r.b-conns.json" 2>&1
					links $e $v $r midway $n
				fi
				wait $_x
				printf '%s\t%s\t%s\txfer_rr\t%s\t%s\n' $e $v $r "$slot_conns" \
					"$(grep -v '^conn ' "$RXE_OUT/rr.$v.$r.out" | tr '\n\t' '  ')" >>"$RAW"
				links $e $v $r after $n
			done ;;
		workers)
			for v in $(order $r); do
				cmd "xfer client -c 127.0.0.1:PORT -n $wk_conns -b $wk_bytes --json -T 120"
				rec $e $v $r xfer_rr "$wk_conns" \
					"$XFER" client -c "127.0.0.1:$(port "$v" 1)" \
					-n "$wk_conns" -b "$wk_bytes" --json -T 120
			done ;;
		busypoll | busymode | busyfb | lazy | short | build)
			for s in $rt_sizes; do
				for v in $(order $r); do rt_one $e $v $r $s; done
			done
			for v in $(order $r); do
				cmd "xfer client -c 127.0.0.1:PORT -n $short_conns -b 100 -B 100 --json -T 60"
				rec $e $v $r xfer_conn "$short_conns" \
					"$XFER" client -c "127.0.0.1:$(port "$v" 1)" \
					-n "$short_conns" -b 100 -B 100 --json -T 60
			done ;;
		raw)
			for v in raw A B; do
				if [ $v = raw ]; then
					p=$((18515 + r))
					a="-d $RXE_DEV0 -x $GIDX -s 65536 -D $secs -F -p $p"
					cmd "ib_write_bw $a [$B_IP]"
					# the server where b is (host b: its own GID index)
					on_b "timeout 60 ib_write_bw -d \$RXE_DEV0 -x \$GIDX \
						-s 65536 -D $secs -F -p $p \
						>\$RXE_OUT/ibw-server.$r.txt 2>&1 &
						_srv=\$!
						rxe_wait 20 sh -c \"ss -ltn | grep -q ':$p '\""
					# shellcheck disable=SC2086
					rec $e raw $r ib_write_bw 65536 ib_write_bw $a "$B_IP"
					# one host: the server only (a bare wait would
					# wait for the daemons); two: it ends by itself
					[ -n "${RXE_HOST:-}" ] || wait $_srv
				else
					stream_one $e $v $r
				fi
			done ;;
		esac
		r=$((r + 1))
	done
	pair_down 1
	mv "$RXE_OUT/a1.stats.json" "$RXE_OUT/$e.A.a.stats.json"
	mv "$RXE_OUT/a1.links.json" "$RXE_OUT/$e.A.a.links.json"
	pair_down 2
	mv "$RXE_OUT/a2.stats.json" "$RXE_OUT/$e.B.a.stats.json"
	mv "$RXE_OUT/a2.links.json" "$RXE_OUT/$e.B.a.links.json"
	on_b "for f in b1 b2; do [ -f \$RXE_OUT/\$f.log ] &&
		mv \$RXE_OUT/\$f.log \$RXE_OUT/$e.\$f.log; done; :"
	for f in a1 b1 a2 b2; do
		[ -f "$RXE_OUT/$f.log" ] && mv "$RXE_OUT/$f.log" "$RXE_OUT/$e.$f.log"
	done
done
[ "$ksmc_on" = 1 ] && "$SMCNL" stats >"$RXE_OUT/smc-stats.txt" 2>&1
[ -n "${RXE_HOST:-}" ] && rxe_serve_end
echo "== done"
