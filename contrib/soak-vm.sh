#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the Soft-RoCE VM (contrib/soak boots it; tests/rxe/099-soak.sh runs a
# short one): mixed traffic through a daemon pair over a link group with
# two links (rxe0, rxe1) for RXE_SOAK_SECONDS (600), four loads at once,
# each xfer run verified end to end:
#   bulk    2 connections x 4 MiB both ways
#   rr      64-byte ping-pong, 200 round trips
#   short   10 short connections, 100 B each way
#   abort   2 connections reset by their client after 64 KiB (the server
#           must see a reset, not a FIN, within 10 s)
# Every RXE_SOAK_SAMPLE (10) seconds a sample of both daemons goes to
# $RXE_OUT/samples.csv: RSS, open descriptors, connections, registered
# buffer bytes (all, and held by connections).  At the end, with the
# traffic stopped: every run verified, no growth trend (RSS less the
# registered buffers, which max_buffer_memory bounds, of the last third
# of the samples within RXE_SOAK_RSS_KB, 8192, of the first third, the
# first fifth and at least 60 s being warm-up), descriptors and buffers
# back to where
# they were idle, no error or warning in the daemons' logs.  Prints
# ok:/FAIL: lines and a summary; exits 1 on any FAIL.
. "$abs_top_srcdir/tests/rxe/lib.sh"

secs=${RXE_SOAK_SECONDS:-600}
# ASan keeps freed memory in a quarantine (256 MiB by default), so RSS
# would grow whatever the daemons do; a small one keeps the trend
# meaningful in a sanitizer build (and means nothing otherwise)
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=4
export ASAN_OPTIONS
period=${RXE_SOAK_SAMPLE:-10}
rss_slack=${RXE_SOAK_RSS_KB:-8192}

rxe_setup
rxe_pair_tools
R=$RXE_RUNDIR
PORT_B=7181
PORT_RULE=16460
PORT_T=16459
fail=0

rxe_pair_confs "devices = [ \"$RXE_DEV0\", \"$RXE_DEV1\" ];"
rxe_target_start
rxe_pair_start
rxe_wait 30 logged a 'link 2: up \(CONFIRM_LINK\)' ||
	rxe_log "no second link: soaking on one"
xfer_ok "warm-up over RDMA" -n 4 -b 1M -T 60
"$CTL" -s "$R/a.sock" stats reset >/dev/null || bad "stats reset on a"
"$CTL" -s "$R/b.sock" stats reset >/dev/null || bad "stats reset on b"

fds() {
	ls "/proc/$1/fd" 2>/dev/null | wc -l
}
rss_kb() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}
idle_fds_a=$(fds "$rxe_pid_a")
idle_fds_b=$(fds "$rxe_pid_b")

end=$(awk -v n="$(rxe_now)" -v t="$secs" 'BEGIN { print n + t }')
running() {
	awk -v n="$(rxe_now)" -v e="$end" 'BEGIN { exit !(n < e) }'
}

# load NAME XFER-ARGS...: run xfer again and again until the end
load() {
	_n=$1
	shift
	_runs=0
	_bad=0
	while running; do
		if "$XFER" client -c "127.0.0.1:$PORT_RULE" "$@" \
			>"$RXE_OUT/load-$_n.last" 2>&1; then
			_runs=$((_runs + 1))
		else
			_bad=$((_bad + 1))
			echo "run $((_runs + _bad)): $(tail -2 "$RXE_OUT/load-$_n.last" |
				tr '\n' ' ')" >>"$RXE_OUT/load-$_n.failures"
		fi
	done
	echo "$_runs $_bad" >"$RXE_OUT/load-$_n.result"
}

sample() {
	_t=$(awk -v n="$(rxe_now)" -v s="$start" 'BEGIN { printf "%.0f", n - s }')
	_line=$_t
	for _d in a b; do
		eval "_p=\$rxe_pid_$_d"
		_j=$("$CTL" -s "$R/$_d.sock" -j stats 2>/dev/null)
		_ca=$(echo "$_j" | sed -n 's/.*"conns_active": *\([0-9]*\).*/\1/p')
		_bb=$(echo "$_j" | sed -n 's/.*"rdma_buf_bytes": *\([0-9]*\).*/\1/p')
		_bu=$(echo "$_j" | sed -n 's/.*"rdma_buf_bytes_used": *\([0-9]*\).*/\1/p')
		_line="$_line,$(rss_kb "$_p"),$(fds "$_p"),${_ca:-},${_bb:-},${_bu:-}"
	done
	echo "$_line" >>"$RXE_OUT/samples.csv"
}

echo "t_s,a_rss_kb,a_fds,a_conns,a_buf_bytes,a_buf_used,b_rss_kb,b_fds,b_conns,b_buf_bytes,b_buf_used" \
	>"$RXE_OUT/samples.csv"
start=$(rxe_now)
log_a0=$(wc -l <"$RXE_OUT/a.log")
log_b0=$(wc -l <"$RXE_OUT/b.log")
load bulk -n 2 -b 4M -T 120 &
l1=$!
load rr -m pingpong -s 64 -i 200 -T 60 &
l2=$!
load short -n 10 -b 100 -B 100 -T 60 &
l3=$!
load abort -n 2 --rst-after 64K --rst-max-ms 10000 -T 60 &
l4=$!
while running; do
	sample
	sleep "$period"
done
wait $l1 $l2 $l3 $l4
sleep 3
sample
echo "# soaked $secs s; samples in samples.csv:"
cat "$RXE_OUT/samples.csv"

# --- verdicts -------------------------------------------------------------------
total_runs=0
for n in bulk rr short abort; do
	read -r runs badruns <"$RXE_OUT/load-$n.result" || { runs=0; badruns=1; }
	total_runs=$((total_runs + runs))
	if [ "$badruns" = 0 ] && [ "$runs" -gt 0 ]; then
		ok "$n: $runs runs, every one verified"
	else
		bad "$n: $badruns of $((runs + badruns)) runs failed: $(head -3 "$RXE_OUT/load-$n.failures" 2>/dev/null)"
	fi
done
# Memory trend: RSS less the registered buffers (a pool that keeps idle
# buffers for reuse, bounded by max_buffer_memory and sampled apart),
# first third vs last third of the samples after the warm-up (the first
# fifth, at least 60 s: the allocators fill up in the first minute).  A
# soak too short to leave 4 samples after it is not judged on this.
for col in 2 7; do
	d=$([ $col = 2 ] && echo a || echo b)
	trend=$(awk -F, -v c=$col 'NR > 1 { t[++n] = $1; v[n] = $c - $(c + 3) / 1024 } END {
		w = int(n / 5); while (w < n && t[w + 1] < 60) w++
		m = n - w; k = int(m / 3)
		if (m < 4) { print "- - -"; exit }
		for (i = w + 1; i <= w + k; i++) f += v[i]
		for (i = n - k + 1; i <= n; i++) l += v[i]
		printf "%d %d %d\n", f / k, l / k, l / k - f / k }' "$RXE_OUT/samples.csv")
	set -- $trend
	if [ "$3" = - ]; then
		echo "# $d: memory trend not judged: under 4 samples after 60 s of warm-up"
	elif [ "$3" -le "$rss_slack" ]; then
		ok "$d: no growth trend: RSS less buffers $1 -> $2 KiB (slack $rss_slack)"
	else
		bad "$d: RSS less buffers grew $1 -> $2 KiB over the soak"
	fi
done
last=$(tail -1 "$RXE_OUT/samples.csv")
a_fds=$(echo "$last" | cut -d, -f3)
b_fds=$(echo "$last" | cut -d, -f8)
if [ "$a_fds" -le $((idle_fds_a + 2)) ] && [ "$b_fds" -le $((idle_fds_b + 2)) ]; then
	ok "descriptors back: a $idle_fds_a -> $a_fds, b $idle_fds_b -> $b_fds"
else
	bad "descriptors leaked: a $idle_fds_a -> $a_fds, b $idle_fds_b -> $b_fds"
fi
for d in a b; do
	if rxe_wait 10 stat_is $d conns_active 0 &&
		rxe_wait 5 stat_is $d rdma_buf_bytes_used 0; then
		ok "$d: no connection and no buffer held once the traffic stopped"
	else
		bad "$d: conns_active $(rxe_stat $d conns_active), rdma_buf_bytes_used $(rxe_stat $d rdma_buf_bytes_used)"
	fi
	expect_stat $d conns_fallback 0
	expect_stat $d lgr_terminated 0
	expect_stat $d llc_protocol_errors 0
done
# the injected faults are client resets, logged at info level: anything
# at error or warning level during the soak is a finding
for d in a b; do
	eval "_from=\$((log_${d}0 + 1))"
	tail -n "+$_from" "$RXE_OUT/$d.log" >"$RXE_OUT/$d.soak.log"
	n=$(grep -c '^<[0-4]>' "$RXE_OUT/$d.soak.log")
	if [ "$n" = 0 ]; then
		ok "$d: no error or warning logged during the soak"
	else
		bad "$d: $n error/warning lines, first: $(grep -m3 '^<[0-4]>' "$RXE_OUT/$d.soak.log" | tr '\n' ' ')"
	fi
done
echo "# $total_runs verified runs; conns_rdma a $(rxe_stat a conns_rdma), tx_bytes a $(rxe_stat a tx_bytes)"

rxe_pair_stop
exit $fail
