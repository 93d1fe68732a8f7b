#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# What a peer may hold on our exports over the TCP fallback.  B (two
# workers) serves an echo server; clients open connections through A
# and hold them:
#  1. B has max_conns = 2 (per worker): of 8 connections at most 4 are
#     served, the others are refused (A's clients are reset, B counts
#     export_refused_limit), B never holds more than 4;
#  2. reloaded with max_conns = 0 and peers[a].max_conns = 3: of 8, exactly
#     3 are served, all workers together (peer_conns_limit);
#  3. once those close their places are free: 3 new ones are served.
. "$(dirname "$0")/lib.sh"
smc_init
need python3 "$SMCPROXYCTL"

SMC_WORKERS=2
pair_ports
conf_a "$T/a.conf"
conf_b "$T/b.conf"
sed -i 's/^\tshutdown_timeout = .*/&\n\tmax_conns = 2;/' "$T/b.conf"
grep -q 'max_conns = 2' "$T/b.conf" || fail "could not edit b.conf"

python3 -c 'import socket, sys, threading
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", int(sys.argv[1])))
l.listen(64)
def echo(c):
    while True:
        try:
            d = c.recv(4096)
        except OSError:
            d = b""
        if not d:
            c.close()
            return
        c.sendall(d)
while True:
    c, _ = l.accept()
    threading.Thread(target=echo, args=(c,), daemon=True).start()' \
	"$PORT_TARGET" >"$T/echo.log" 2>&1 &
echo_pid=$!
track "$echo_pid" "$T/echo.log"
wait_listen "$PORT_TARGET" 10 "$echo_pid"
start_pair

# hold.py PORT N FILE: N connections through A, one after another, each
# sending a byte and waiting for its echo ("served") or its end
# ("refused"); prints both counts, then holds the served ones open until
# FILE exists.
cat >"$T/hold.py" <<'PY'
import os, socket, sys, time
port, n, stop = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
held, refused = [], 0
for _ in range(n):
    s = None
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"x")
        if s.recv(1) == b"x":
            held.append(s)
            continue
    except OSError:
        pass
    refused += 1
    if s is not None:
        s.close()
print("served %d refused %d" % (len(held), refused), flush=True)
while not os.path.exists(stop):
    time.sleep(0.1)
PY

# hold N: run hold.py until its counts are printed; sets served, refused.
hold()
{
	rm -f "$T/stop"
	python3 "$T/hold.py" "$PORT_RULE" "$1" "$T/stop" >"$T/hold.log" 2>&1 &
	hold_pid=$!
	track "$hold_pid" "$T/hold.log"
	for _ in $(seq 300); do
		grep -q served "$T/hold.log" && break
		kill -0 "$hold_pid" 2>/dev/null || break
		sleep 0.1
	done
	cat "$T/hold.log"
	served=$(sed -n 's/^served \([0-9]*\) .*/\1/p' "$T/hold.log")
	refused=$(sed -n 's/.* refused \([0-9]*\)$/\1/p' "$T/hold.log")
	[ -n "$served" ] || fail "hold.py did not finish: $(cat "$T/hold.log")"
}

release()
{
	touch "$T/stop"
	wait "$hold_pid"
	untrack "$hold_pid"
	for _ in $(seq 50); do
		[ "$(stat_get b conns_active)" = 0 ] && return 0
		sleep 0.1
	done
	fail "B still holds $(stat_get b conns_active) connections after they closed"
}

# --- 1: max_conns on the export side ---------------------------------------
hold 8
active=$(stat_get b conns_active)
smc_log "B serves $served of 8, refused $refused, holds $active"
[ "$served" -le 4 ] && [ "${active:-99}" -le 4 ] ||
	fail "B holds $active connections from its peer (max_conns 2, 2 workers)"
[ "$served" -ge 2 ] || fail "B served only $served connections"
[ "$(stat_get b export_refused_limit)" -ge "$refused" ] ||
	fail "export_refused_limit $(stat_get b export_refused_limit), $refused refused"
[ "$(stat_get b conns_refused_limit)" = 0 ] ||
	fail "peer connections counted as rule clients refused"
release

# --- 2: peers[a].max_conns, all workers together ---------------------------
sed -i '/^\tmax_conns = 2;/d' "$T/b.conf"
sed -i 's/insecure = true; }/insecure = true; max_conns = 3; }/' "$T/b.conf"
grep -q 'max_conns = 3' "$T/b.conf" || fail "could not edit b.conf"
ctl b reload >"$T/reload.log" 2>&1 || fail "reload of b: $(cat "$T/reload.log")"
hold 8
smc_log "B serves $served of 8, refused $refused"
[ "$served" = 3 ] || fail "B served $served connections from a peer with max_conns 3"
[ "$(stat_get b peer_conns_limit)" -ge 5 ] ||
	fail "peer_conns_limit $(stat_get b peer_conns_limit), 5 refused"
release

# --- 3: places come back as connections close ------------------------------
hold 3
[ "$served" = 3 ] || fail "after 3 closed, only $served of 3 new ones served"
release
exit 0
