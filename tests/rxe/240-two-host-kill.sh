#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two hosts: daemon b killed (SIGKILL) in the middle of 4 transfers over
# RDMA, its host alive.  On a every client connection is closed within
# $KILL_BOUND s (they would resume, but b's peer port refuses the new
# group's connection: nothing there has them), the group ends and a holds
# nothing: no connection, no group, no buffer in use.  b restarted: new
# connections go over RDMA again, on a new group.
. "$(dirname "$0")/lib.sh"

rxe_host_setup
rxe_pair_tools

R=$RXE_RUNDIR
PORT_B=7251
PORT_RULE=16550
PORT_T=16549
KILL_BOUND=15
fail=0

rxe2_pair_start "devices = [ \"$RXE_DEV0\" ];"
rxe2_stats_reset

if [ "$RXE_HOST" = a ]; then
	rxe2_flowing 4 -b 1G -T 200
	rxe_await killed 60 || rxe_die "b was not killed"
	t0=$(rxe_now)
	if rxe_wait $KILL_BOUND eval "! rxe_alive $client"; then
		awk -v a="$t0" -v b="$(rxe_now)" \
			'BEGIN { printf "# clients closed %.1f s after the kill\n", b - a }'
		ok "a's clients are closed within $KILL_BOUND s"
	else
		bad "a's clients still run $KILL_BOUND s after the kill"
		kill "$client" 2>/dev/null
	fi
	wait "$client" && bad "the killed transfer reported success"
	if rxe_wait 10 stat_is a conns_active 0; then
		ok "a: no connection left"
	else
		bad "a: conns_active $(rxe_stat a conns_active), want 0"
	fi
	if rxe_wait 10 rxe_no_lgrs a; then
		ok "a: no link group left"
	else
		bad "a: show lgrs: $(head -c 300 "$RXE_OUT/a.lgrs.json")"
	fi
	expect_stat a rdma_buf_bytes_used 0
	expect_stat a close_resume_failed 4
	expect_stat a resume_failed_peer_gone 4
	rxe_signal a-checked
	rxe_await b-back 90 || rxe_die "b did not restart"
	xfer_ok "first connection after b's restart" -n 1 -b 64K -T 60
	rxe_wait 30 sh -c "[ \$(grep -c 'link group active as client' \
		'$RXE_OUT/a.log') -ge 2 ]" || bad "no new group after the restart"
	"$CTL" -s "$R/a.sock" stats reset >/dev/null
	xfer_ok "4 connections x 1 MiB both ways after the restart" \
		-n 4 -b 1M -T 120
	expect_stat a conns_rdma 4
	expect_stat a conns_fallback 0
	rxe_signal served
else
	rxe_await flowing 60 || rxe_die "a's transfers did not start"
	kill -KILL "$rxe_pid_b"
	wait "$rxe_pid_b" 2>/dev/null
	eval "wait \$rxe_collector_b"
	rxe_pid_b=
	rxe_signal killed
	rxe_await a-checked 60 || bad "a did not check"
	daemon_start b "$R/b.conf" || rxe_die "daemon b did not restart"
	rxe_signal b-back
	rxe_await served 200 || bad "a did not finish its new connections"
	expect_stat b conns_rdma 5
	expect_stat b conns_fallback 0
fi

rxe2_pair_stop
exit $fail
