#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Out of descriptors: daemon A runs with RLIMIT_NOFILE 64 and 80 clients
# connect at once, more than it can hold (two descriptors each, and a
# pipe per direction to relay).  It must pause accepting (accept_pauses),
# stay alive, serve the clients it holds (their 1 MiB each way moves while
# the rest are still waiting), leave the rest waiting in the listen queue
# rather than reset them (all 80 verify, none is closed for want of a
# descriptor), and serve new clients once the crowd has gone.
. "$(dirname "$0")/lib.sh"
smc_init

CROWD=80

pair_ports
conf_a "$T/a.conf"
conf_b "$T/b.conf"
start_server "$PORT_TARGET"
start_daemon b "$T/b.conf"
(
	ulimit -n 64
	exec "$SMCPROXYD" -d -c "$T/a.conf" >>"$T/a.log" 2>&1
) &
a_pid=$!
track "$a_pid" "$T/a.log"
SMC_DAEMONS="$SMC_DAEMONS a:$a_pid"
wait_listen "$PORT_BPEER" 10 "$b_pid"
wait_listen "$PORT_RULE" 10 "$a_pid"

# The crowd: one xfer client, 80 connections at once, each 1 MiB both
# ways, every byte verified.  A holds at most (64 - its own) / 2 of them
# at a time, so most must wait for the first ones to be served.
smc_log "xfer client -c 127.0.0.1:$PORT_RULE -n $CROWD -b 1M (A: 64 descriptors)"
"$XFER" client -c "127.0.0.1:$PORT_RULE" -n $CROWD -b 1M -T 120 \
	>"$T/crowd.out" 2>&1
crowd_rc=$?
SMC_LOGS="$SMC_LOGS $T/crowd.out"
tail -n 2 "$T/crowd.out" >&2
p=$(stat_get a accept_pauses)
accepted=$(stat_get a conns_accepted)
res=$(stat_get a close_resource)
smc_log "the crowd: xfer exit $crowd_rc; A: accept_pauses=$p, conns_accepted=$accepted, close_resource=$res"
kill -0 "$a_pid" 2>/dev/null || fail "daemon a died when out of descriptors"
[ "${p:-0}" -ge 1 ] || fail "no accept pause with $CROWD clients and 64 descriptors"
grep -q "pausing 1 s" "$T/a.log" || fail "no log line for the pause"
if [ "$crowd_rc" != 0 ] ||
	! grep -q "^$CROWD connections, .*, all verified," "$T/crowd.out"; then
	fail "the crowd was not served (xfer exit $crowd_rc): of $CROWD connections $(grep -c ': timeout: ' "$T/crowd.out") timed out, $(grep -c 'reset by peer' "$T/crowd.out") were reset"
fi
[ "$res" = 0 ] || fail "A closed $res connections for want of a descriptor (close_resource)"
[ "$accepted" = "$CROWD" ] || fail "A accepted $accepted connections, want $CROWD"

# The crowd is gone: A recovers and carries a verified transfer.
for _ in $(seq 600); do	# 60 s: slow when other tests load the machine
	active=$(stat_get a conns_active)
	[ "$active" = 0 ] && break
	sleep 0.1
done
if [ "$active" != 0 ]; then
	ctl a show conns >&2	# which state they are stuck in, for the log
	ctl a stats >&2
	fail "the crowd's connections did not end"
fi
xfer_client -n 4 -b 1M || fail "no transfer after the descriptors came back"
kill -0 "$a_pid" 2>/dev/null || fail "daemon a died"
