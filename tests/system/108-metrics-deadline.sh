#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# metrics_listen serves 8 scrapers at once; a byte now and then must not
# keep one of those places.  8 clients each send a request line one byte
# every 2 s (never 10 s without progress, never a whole request): each is
# closed about 10 s after it connected, and a real scrape waiting behind
# them is then answered, well before the trickle would have ended.
. "$(dirname "$0")/lib.sh"
smc_init
need python3

SMC_WORKERS=1
pair_ports
set -- $(free_ports 1)
PORT_MET=$1
conf_b "$T/b.conf"
sed -i "s|^\tname = \"b\";|&\n\tmetrics_listen = \"127.0.0.1:$PORT_MET\";|" "$T/b.conf"
start_daemon b "$T/b.conf"
wait_listen "$PORT_MET" 10 "$b_pid"

python3 - "$PORT_MET" >"$T/trickle.log" 2>&1 <<'PY' ||
import socket, sys, threading, time
port = int(sys.argv[1])
TRICKLE = 30  # s: how long the tricklers would go on
t0 = time.monotonic()
closed = {}

def trickle(k):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    line = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
    for i in range(TRICKLE // 2):
        try:
            s.sendall(line[i:i + 1])
            s.settimeout(2)
            if s.recv(4096) == b"":
                break
        except socket.timeout:
            continue
        except OSError:
            break
    closed[k] = time.monotonic() - t0
    s.close()

ts = [threading.Thread(target=trickle, args=(k,)) for k in range(8)]
for t in ts:
    t.start()
time.sleep(1)
# the scrape waits in the backlog until a place is free
s = socket.create_connection(("127.0.0.1", port), timeout=5)
s.settimeout(TRICKLE + 5)
s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
try:
    got = s.recv(64)
except OSError as e:
    got = repr(e).encode()
scraped = time.monotonic() - t0
for t in ts:
    t.join()
print("tricklers closed at %s s" % sorted(round(v, 1) for v in closed.values()))
print("scrape answered at %.1f s: %r" % (scraped, got[:15]))
if len(closed) != 8 or max(closed.values()) > 15:
    sys.exit("a trickling scraper kept its place")
if not got.startswith(b"HTTP/1.1 200") or scraped > 15:
    sys.exit("the scrape behind them was not answered in time")
PY
	fail "$(cat "$T/trickle.log")"
cat "$T/trickle.log"
kill -0 "$b_pid" || fail "the daemon died"
exit 0
