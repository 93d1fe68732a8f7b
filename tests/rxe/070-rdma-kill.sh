#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the VM: a daemon killed (SIGKILL) in the middle of transfers over
# RDMA.  Daemon b, the export side, dies while 12 connections stream both
# ways over the link group; on a the control connection closes, the group
# ends and every client connection is closed promptly (within $KILL_BOUND
# s, no hang: they would resume, but b's peer port refuses), counted
# resume_failed, and a frees everything: no connection
# left, no group in `show lgrs`.  The buffers are large enough (8 MiB send
# ring and RMB) that the 12 connections take 192 of the 200 MiB of
# registered buffers a may have (max_buffer_memory; its one peer may take
# all of it, buffer_share 100): a 13th connection
# meanwhile finds no room and goes over the TCP fallback, counted
# conns_rdma_nobufs, without disturbing the 12.  Once b is restarted, 12
# new connections are again carried over RDMA with no buffer shortage
# only if a got the first 12 connections' buffers back: their RMB
# elements would cool for 5 s after a's abort, but end cooling when the
# group whose peer could still write into them is gone.
. "$(dirname "$0")/lib.sh"

rxe_setup
rxe_pair_tools

R=$RXE_RUNDIR
PORT_B=7131
PORT_RULE=16410
PORT_T=16409
CONNS=12
KILL_BOUND=15
fail=0

# no_lgrs NAME: NAME's `show lgrs` lists no group.
no_lgrs() {
	"$CTL" -s "$R/$1.sock" -j show lgrs >"$RXE_OUT/$1.lgrs.json" 2>&1 &&
		! grep -q '"state"' "$RXE_OUT/$1.lgrs.json"
}

# group_up: a's and b's logs say the group is active (COUNT times).
group_up() {
	rxe_wait 30 sh -c "[ \$(grep -c 'link group active as client' \
		'$RXE_OUT/a.log') -ge $1 ]" &&
		rxe_wait 10 sh -c "[ \$(grep -c 'link group active as server' \
			'$RXE_OUT/b.log') -ge $1 ]"
}

RXE_PEER_EXTRA="buffer_share = 100;"
rxe_pair_confs "devices = [ \"$RXE_DEV0\" ]; sndbuf = 8388608; rmb = 8388608;
        max_buffer_memory = 200;" \
	"devices = [ \"$RXE_DEV0\" ]; sndbuf = 8388608; rmb = 8388608;"
rxe_target_start
rxe_pair_start
group_up 1 || rxe_die "no active link group"
ok "link group a-b active"
"$CTL" -s "$R/a.sock" stats reset >/dev/null || bad "stats reset on a"

# --- b is killed mid-stream ---------------------------------------------------
"$XFER" client -c "127.0.0.1:$PORT_RULE" -n $CONNS -b 1G -T 120 \
	>"$RXE_OUT/killed.out" 2>&1 &
client=$!
if rxe_wait 60 stat_is a conns_rdma $CONNS; then
	ok "$CONNS connections relay over RDMA"
else
	bad "conns_rdma $(rxe_stat a conns_rdma), want $CONNS"
fi
# the registered-memory cap: one more connection takes the fallback
xfer_ok "a 13th connection with the buffers used up verifies (fallback)" \
	-n 1 -b 1M -T 60
expect_stat a conns_rdma_nobufs 1
expect_stat a conns_fallback 1
if stat_is a close_link_failed 0 && rxe_alive "$client"; then
	ok "the $CONNS connections over RDMA are undisturbed"
else
	bad "the $CONNS connections were disturbed by the cap"
fi
sleep 1
moved=$(rxe_stat a tx_bytes)
echo "# $moved bytes sent by a before the kill"
kill -KILL "$rxe_pid_b"
t0=$(rxe_now)
wait "$rxe_pid_b" 2>/dev/null
eval "wait \$rxe_collector_b"
rxe_pid_b=
if rxe_wait $KILL_BOUND eval "! rxe_alive $client"; then
	took=$(awk -v a="$t0" -v b="$(rxe_now)" \
		'BEGIN { printf "%.1f", b - a }')
	echo "# clients closed ${took} s after the kill"
	ok "the clients are closed within $KILL_BOUND s"
else
	bad "the clients still run $KILL_BOUND s after the kill"
	kill "$client" 2>/dev/null
fi
wait "$client" && bad "the killed transfer reported success"
tail -3 "$RXE_OUT/killed.out"

if rxe_wait 10 stat_is a conns_active 0; then
	t_closed=$(rxe_now)
	ok "a: no connection left"
else
	bad "a: conns_active $(rxe_stat a conns_active), want 0"
fi
if rxe_wait 10 no_lgrs a; then
	ok "a: the link group is gone from show lgrs"
else
	bad "a: show lgrs: $(head -c 300 "$RXE_OUT/a.lgrs.json")"
fi

# --- b back: a new group, and a's buffers are there for it ------------------
# (b comes back at once, while the old connections' RMB elements would
# still cool; what a counted of the kill is looked at meanwhile)
daemon_start b "$R/b.conf" || rxe_die "daemon b did not restart"
expect_stat a lgr_terminated 1
expect_stat a close_resume_failed $CONNS
expect_stat a resume_failed_peer_gone $CONNS
expect_stat a llc_protocol_errors 0
if logged a 'link group ends'; then
	ok "a logged the end of the group"
else
	bad "a did not log the end of the group"
fi
xfer_ok "first connection after the restart" -n 1 -b 64K -T 60
group_up 2 || bad "no new link group after the restart"
# The killed connections' RMB elements cool (b never answered a's abort:
# RMB_COOL_MS, 5 s, in src/smcproxyd.h) only while their link group's QPs
# could still take b's WRITEs; that group is gone, so they are a's again
# however fast b is back.  (Under TCG the group itself takes about 3 s
# to go and the restart 3-4 s, so the 12 often start after the 5 s
# anyway: check_buf's rmb_cooling_ends_when_its_groups_go is the check
# that always sees it.)
awk -v c=$CONNS -v t="${t_closed:-0}" -v n="$(rxe_now)" 'BEGIN {
	printf "# the %d new ones start %.1f s after a closed the old\n", c, n - t
}'
"$CTL" -s "$R/a.sock" stats reset >/dev/null || bad "stats reset on a"
"$CTL" -s "$R/b.sock" stats reset >/dev/null || bad "stats reset on b"
xfer_ok "$CONNS connections x 1 MiB both ways verify after the restart" \
	-n $CONNS -b 1M -T 90
for d in a b; do
	expect_stat $d conns_rdma $CONNS
	expect_stat $d conns_fallback 0
	expect_stat $d conns_rdma_nobufs 0
done

rxe_pair_stop
exit $fail
