#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two hosts: a hostile responder on b's peer port while a's connections
# resume (issue 29, H1).  While 6 connections go both ways over RDMA,
# daemon b is killed (SIGKILL) and tests/tools/impostor, which has no key,
# answers on b's peer address: the new group's CLC PROPOSAL with a
# DECLINE, so a resumes each connection over TCP, and each resume HELLO
# with a lie, the modes in turn: RESUMED built from the HELLO's own
# counts with nothing before it; RESULT 0 without a CHALLENGE, then
# RESUMED; a CHALLENGE with a garbage MAC.  Nothing from the impostor may
# be believed: it receives no byte after its answer, nothing it writes
# (a marker) reaches a client (xfer verifies every byte), no connection
# resumes with it, and each one is reset and counted by a as a failed
# resume, the refusal among them.  b restarted (a new instance): a new
# connection gets through.  The impostor listens beside b (SO_REUSEPORT)
# before the kill, so it is there when a's first reconnect comes: b's
# kernel closes the group's control connection as b dies, and a turns to
# the peer port at once.
. "$(dirname "$0")/lib.sh"

rxe_host_setup
rxe_pair_tools

R=$RXE_RUNDIR
PORT_B=7286
PORT_RULE=16585
PORT_T=16584
N=6
MODES=resumed,result0-resumed,challenge
BOUND=20
fail=0
RXE2_GLOBAL="resume_timeout = 60;"
IMPOSTOR=$abs_top_builddir/tests/tools/impostor
[ -x "$IMPOSTOR" ] || rxe_die "$IMPOSTOR is not built (make check builds it)"

rxe2_pair_start "devices = [ \"$RXE_DEV0\" ];"
rxe2_stats_reset

# every resume_failed_* counter daemon a has, one name a line
resume_failed_keys() {
	"$CTL" -s "$R/a.sock" -j stats | grep -o '"resume_failed_[a-z_]*"' |
		tr -d '"' | sort -u
}

resume_failed_sum() {
	_s=0
	for _k in $(resume_failed_keys); do
		_s=$((_s + $(rxe_stat a "$_k")))
	done
	echo "$_s"
}

if [ "$RXE_HOST" = a ]; then
	rxe2_flowing $N -b 1G -T 200
	rxe_await killed 60 || rxe_die "b was not killed"
	t0=$(rxe_now)
	# every connection resumed (with whom?) or reset: none waits any more
	# (one that tries again instead ends when it meets the restarted b)
	rxe_wait $BOUND stat_is a conns_resuming 0 ||
		echo "# a: $(rxe_stat a conns_resuming) connections still resuming $BOUND s after the kill"
	awk -v a="$t0" -v b="$(rxe_now)" \
		'BEGIN { printf "# resuming settled %.1f s after the kill\n", b - a }'
	# what an impostor that got through would have had time to do
	sleep 2
	rxe_signal settled
	rxe_await b-back 90 || rxe_die "b did not restart"
	if rxe_wait 30 eval "! rxe_alive $client"; then
		wait "$client"
		echo "# xfer client exit status $? (its connections were reset)"
	else
		bad "the clients still run 30 s after b's restart"
		kill "$client" 2>/dev/null
	fi
	sed 's/^/# xfer: /' "$RXE_OUT/xfer.out"
	if grep -Eq 'data mismatch|bad header|SHA-256 differs|data after|received data where' \
		"$RXE_OUT/xfer.out"; then
		bad "bytes the impostor wrote reached a client (xfer above)"
	else
		ok "no client received a byte it should not have"
	fi
	if rxe_wait 30 stat_is a conns_active 0; then
		ok "a: no connection left"
	else
		bad "a: conns_active $(rxe_stat a conns_active), want 0"
	fi
	expect_stat a conns_resumed_tcp 0
	expect_stat a close_resume_failed $N
	sum=$(resume_failed_sum)
	if [ "$sum" = $N ]; then
		ok "a: $N failed resumes counted (resume_failed_*)"
	else
		bad "a: resume_failed_* add up to $sum, want $N"
	fi
	# the refusal: a broken handshake, or no proof of the key
	refusals=0
	seen=
	for k in resume_failed_protocol resume_failed_auth auth_failures; do
		v=$(rxe_stat a $k)
		[ -n "$v" ] || continue
		refusals=$((refusals + v))
		seen="$seen${seen:+, }$k $v"
	done
	if [ "$refusals" -ge 1 ]; then
		ok "a: the impostor's answers refused ($seen)"
	else
		bad "a: no refusal counted ($seen)"
	fi
	for k in $(resume_failed_keys) auth_failures; do
		echo "# a: $k $(rxe_stat a $k)"
	done
	grep -E 'not resumed|resum.* over TCP|declined|prove|authenticat' \
		"$RXE_OUT/a.log" | tail -n 20 | sed 's/^/# a.log: /'
	xfer_ok "a new connection to the restarted b" -n 1 -b 64K -T 60
	rxe_signal served
else
	rxe_await flowing 60 || rxe_die "a's transfers did not start"
	"$IMPOSTOR" --reuseport -l "$RXE_IP0:$PORT_B" -m "$MODES" -t 200 \
		-o "$RXE_OUT/impostor.log" >/dev/null 2>"$RXE_OUT/impostor.err" &
	imp=$!
	rxe_wait 10 grep -qs '^listening on' "$RXE_OUT/impostor.log" ||
		rxe_die "the impostor did not listen: $(cat "$RXE_OUT/impostor.err")"
	kill -KILL "$rxe_pid_b"
	wait "$rxe_pid_b" 2>/dev/null
	eval "wait \$rxe_collector_b"
	rxe_pid_b=
	rxe_signal killed
	rxe_await settled 120 || bad "a did not settle"
	kill -TERM "$imp"
	wait "$imp" || bad "the impostor exited with status $?"
	daemon_start b "$R/b.conf" || rxe_die "daemon b did not restart"
	rxe_signal b-back
	sed 's/^/# /' "$RXE_OUT/impostor.log"
	hellos=$(grep -c ': got HELLO' "$RXE_OUT/impostor.log")
	if grep -q ': got CLC PROPOSAL.*sent CLC DECLINE' "$RXE_OUT/impostor.log" &&
		[ "$hellos" -ge 1 ]; then
		ok "the impostor declined a's group and got $hellos resume HELLOs"
	else
		bad "the impostor was not asked to resume anything (no DECLINE or no HELLO): the check proved nothing"
	fi
	for m in $(echo "$MODES" | tr , ' '); do
		grep -q ": got HELLO.*sent mode=$m " "$RXE_OUT/impostor.log" ||
			bad "no resume HELLO was answered in mode $m"
	done
	leaked=$(grep ': got HELLO' "$RXE_OUT/impostor.log" | grep -vc '; after=0;')
	if [ "$leaked" = 0 ]; then
		ok "the impostor received no byte after any of its answers"
	else
		bad "a sent the impostor bytes after its answer on $leaked connections (lines above)"
	fi
	rxe_await served 150 || bad "a did not finish"
fi

rxe2_pair_stop
exit $fail
