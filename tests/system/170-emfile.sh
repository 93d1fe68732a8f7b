#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Out of descriptors: daemon A runs with RLIMIT_NOFILE 64 and more clients
# connect than it can hold.  It must pause accepting (accept_pauses, the
# rest wait in the listen queue rather than being reset one after another),
# stay alive, serve the clients it holds, and serve new clients once the
# crowd has gone.
. "$(dirname "$0")/lib.sh"
smc_init
need python3

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

# 80 clients hold connections open (xfer's header, then silence), and
# report how many the pair connected through to the server.
cat >"$T/crowd.py" <<'PY'
import socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
socks = []
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    socks.append(s)
time.sleep(float(sys.argv[3]))
for s in socks:
    s.close()
PY
python3 "$T/crowd.py" "$PORT_RULE" 80 4 &
crowd=$!
for _ in $(seq 100); do
	p=$(stat_get a accept_pauses) && [ "${p:-0}" -ge 1 ] && break
	sleep 0.1
done
p=$(stat_get a accept_pauses)
[ "${p:-0}" -ge 1 ] || fail "no accept pause with 80 clients and 64 descriptors"
smc_log "accept_pauses=$p with the crowd"
kill -0 "$a_pid" 2>/dev/null || fail "daemon a died when out of descriptors"
grep -q "pausing 1 s" "$T/a.log" || fail "no log line for the pause"
wait "$crowd"

# The crowd is gone (every connection it left queued has been taken and
# has ended): A recovers and carries a verified transfer.
# (one reading: the pause still holds some of the crowd in the listen
# queue, and a second look can catch one of them just taken)
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
