#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The other ways a connection ends before or without data, each counted
# with its own reason: the target accepts nothing in time (its listen
# queue is full: target_timeout after connect_timeout), the peer daemon is
# down (peer_unreachable), a rule's idle_timeout expires (idle_timeout).
. "$(dirname "$0")/lib.sh"
smc_init
need python3

pair_ports
conf_a "$T/a.conf" x insecure\ =\ true\; "
	, { name = \"idle\"; listen = \"127.0.0.1:$PORT_SPARE\"; peer = \"b\"; export = \"x\"; idle_timeout = 1; }"
conf_b "$T/b.conf"
sed -i 's/connect_timeout = 5;/connect_timeout = 1;/' "$T/b.conf"

# A target whose accept queue is full: further SYNs go unanswered.
python3 - "$PORT_TARGET" >"$T/stuck.log" 2>&1 <<'PY' &
import socket, sys, time
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", int(sys.argv[1])))
l.listen(0)
fill = []
for _ in range(2):
    c = socket.socket()
    c.setblocking(False)
    c.connect_ex(("127.0.0.1", int(sys.argv[1])))
    fill.append(c)
print("stuck target ready", flush=True)
time.sleep(600)
PY
stuck_pid=$!
track "$stuck_pid" "$T/stuck.log"
for i in $(seq 50); do grep -q ready "$T/stuck.log" && break; sleep 0.1; done
start_pair
wait_listen "$PORT_SPARE" 10 "$a_pid"

before=$(reason_count b target_timeout)
a_before=$(reason_count a target_timeout)
t0=$(date +%s%N)
xfer_client -n 2 -b 1K --expect-close -T 20 ||
	fail "client not closed when the target does not accept"
ms=$((($(date +%s%N) - t0) / 1000000))
smc_log "closed after ${ms} ms (connect_timeout = 1 s)"
[ "$ms" -ge 800 ] && [ "$ms" -lt 6000 ] ||
	fail "closed after ${ms} ms; connect_timeout is 1 s"
expect_reason b target_timeout "$before"
expect_reason a target_timeout "$a_before"
kill "$stuck_pid"; wait "$stuck_pid" 2>/dev/null; untrack "$stuck_pid"

# Idle: a connection that carries nothing for idle_timeout (1 s).
start_server "$PORT_TARGET"
before=$(reason_count a idle_timeout)
exec 5<>"/dev/tcp/127.0.0.1/$PORT_SPARE" || fail "cannot connect to the idle rule"
expect_reason a idle_timeout "$before" 5
if read -r -t 2 -u 5 line 2>/dev/null; then
	fail "idle connection got data instead of a close"
fi
exec 5<&-
# ... but a busy one on the same rule is not idle.
smc_log "xfer client -c 127.0.0.1:$PORT_SPARE -m stream -t 3 --verify"
"$XFER" client -c "127.0.0.1:$PORT_SPARE" -m stream -t 3 --verify -T 30 \
	>>"$T/client.log" 2>&1 || fail "a busy connection was closed on an idle_timeout rule"

# The peer daemon is down (its port held, so no test beside this one
# takes it meanwhile).
stop_daemon b
hold_port "$PORT_BPEER"
before=$(reason_count a peer_unreachable)
xfer_client -n 2 -b 1K --expect-close -T 20 ||
	fail "client not closed when the peer daemon is down"
expect_reason a peer_unreachable "$before"
exit 0
