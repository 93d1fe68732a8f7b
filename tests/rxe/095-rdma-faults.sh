#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the VM: what clients and servers can do to connections carried over
# RDMA, and what a user must see.
#   - clients that stop reading for 10 s halfway through a 32 MiB answer
#     each: the daemons hold the target back through the fixed send rings
#     and RMBs (their memory stays flat) and every byte arrives once they
#     read again;
#   - the target server killed (SIGKILL) mid-stream: its clients are
#     closed promptly, nothing hangs, and once it is back new connections
#     go over RDMA again;
#   - 1000 clients that connect and go silent without closing, through a
#     rule with an idle_timeout: it closes every one of them, the peer is
#     told (an abort each, even with the link's TX slots all taken by the
#     burst) and both daemons give their registered
#     buffers back (rdma_buf_bytes_used 0), while the daemons keep
#     serving.
. "$(dirname "$0")/lib.sh"

rxe_setup
rxe_pair_tools

R=$RXE_RUNDIR
PORT_B=7171
PORT_RULE=16450
PORT_IDLE=16451
PORT_T=16449
IDLE=12 # longer than opening the silent clients takes
HOLD=1000
fail=0
# the silent clients, and the daemons holding them, need descriptors
ulimit -n 16384 2>/dev/null || ulimit -n 4096 ||
	rxe_die "cannot raise the descriptor limit"

rss_kb() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}

rxe_pair_confs "devices = [ \"$RXE_DEV0\" ];" "" ", { name = \"idle\";
            listen = \"127.0.0.1:$PORT_IDLE\"; peer = \"b\"; export = \"x\";
            idle_timeout = $IDLE; }"
rxe_target_start
rxe_pair_start
xfer_ok "warm-up over RDMA" -n 4 -b 1M -T 60
"$CTL" -s "$R/a.sock" stats reset >/dev/null || bad "stats reset on a"
"$CTL" -s "$R/b.sock" stats reset >/dev/null || bad "stats reset on b"

# --- clients that do not read ----------------------------------------------
a0=$(rss_kb "$rxe_pid_a")
b0=$(rss_kb "$rxe_pid_b")
"$XFER" client -c "127.0.0.1:$PORT_RULE" -n 4 -b 1M -B 32M \
	--pause-read 10000 -T 200 >"$RXE_OUT/paused.out" 2>&1 &
paused=$!
amax=$a0
bmax=$b0
while rxe_alive "$paused"; do
	a1=$(rss_kb "$rxe_pid_a")
	b1=$(rss_kb "$rxe_pid_b")
	[ "${a1:-0}" -gt "$amax" ] && amax=$a1
	[ "${b1:-0}" -gt "$bmax" ] && bmax=$b1
	sleep 0.5
done
if wait "$paused"; then
	ok "4 x 32 MiB arrive whole after the clients paused reading for 10 s"
else
	bad "paused transfer: $(tail -2 "$RXE_OUT/paused.out")"
fi
echo "# RSS a ${a0} -> max ${amax} KiB, b ${b0} -> max ${bmax} KiB"
# 4 x 32 MiB is 128 MiB if the daemons buffered it; allow 16 MiB
if [ $((amax - a0)) -lt 16384 ] && [ $((bmax - b0)) -lt 16384 ]; then
	ok "the daemons' memory stays flat while the clients do not read"
else
	bad "memory grew: a +$((amax - a0)) KiB, b +$((bmax - b0)) KiB"
fi
expect_stat a conns_rdma 4

# --- the target dies mid-stream ------------------------------------------------
"$XFER" client -c "127.0.0.1:$PORT_RULE" -n 4 -b 256M -T 120 \
	>"$RXE_OUT/crash.out" 2>&1 &
client=$!
rxe_wait 60 stat_is a conns_active 4 || bad "4 connections did not open"
sleep 2
kill -KILL "$server"
wait "$server" 2>/dev/null
t0=$(rxe_now)
if rxe_wait 15 eval "! rxe_alive $client"; then
	took=$(awk -v a="$t0" -v b="$(rxe_now)" 'BEGIN { printf "%.1f", b - a }')
	ok "the clients are closed ${took} s after the target died"
else
	bad "the clients still run 15 s after the target died"
	kill "$client" 2>/dev/null
fi
wait "$client" && bad "the transfer to a dead target reported success"
if rxe_wait 10 stat_is a conns_active 0 && rxe_wait 5 stat_is b conns_active 0
then
	ok "no connection left on either daemon"
else
	bad "conns_active a $(rxe_stat a conns_active) b $(rxe_stat b conns_active)"
fi
tr=$(($(rxe_stat b close_target_rst) + $(rxe_stat b close_target_fin)))
if [ "$tr" -ge 4 ]; then
	ok "b: the 4 closes are the target's (target_rst/target_fin)"
else
	bad "b: close_target_rst + close_target_fin = $tr, want 4"
fi
rxe_target_start
xfer_ok "the target back: new connections verify" -n 4 -b 1M -T 60
expect_stat a conns_fallback 0
expect_stat a lgr_terminated 0

# --- clients that go silent -------------------------------------------------------
"$CTL" -s "$R/a.sock" stats reset >/dev/null || bad "stats reset on a"
"$CTL" -s "$R/b.sock" stats reset >/dev/null || bad "stats reset on b"
python3 - "$PORT_IDLE" "$HOLD" $((IDLE * 3 + 6)) >"$RXE_OUT/hold.out" 2>&1 <<'PY' &
import selectors, socket, sys, time
port, n, hold = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
socks = []
t0 = time.time()
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(b"x")        # one byte, then silence
    socks.append(s)
print("open", len(socks), "in %.1f s" % (time.time() - t0), flush=True)
# until each is closed (EOF or reset) or hold s have passed, whichever
# comes first: a fixed sleep of hold s waited out the daemon's closes
end = time.time() + hold
sel = selectors.DefaultSelector()
for s in socks:
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ)
closed = 0
left = n
while left > 0 and time.time() < end:
    for key, _ in sel.select(max(end - time.time(), 0)):
        try:
            got = key.fileobj.recv(1)
        except (ConnectionResetError, BrokenPipeError):
            got = b""
        except BlockingIOError:
            continue
        if got == b"":
            closed += 1
        sel.unregister(key.fileobj)
        left -= 1
print("closed by the daemon", closed, flush=True)
PY
holder=$!
rxe_wait 60 grep -q '^open' "$RXE_OUT/hold.out" || bad "the clients did not connect"
rxe_wait 30 sh -c "[ \$('$CTL' -s '$R/a.sock' -j stats |
	sed -n 's/.*\"conns_active\": *\([0-9]*\).*/\1/p') -ge $HOLD ]" ||
	bad "not all $HOLD silent connections open on a"
echo "# a: conns_rdma $(rxe_stat a conns_rdma) of $HOLD"
t0=$(rxe_now)
if rxe_wait $((IDLE * 3 + 5)) stat_is a conns_active 0 &&
	rxe_wait 10 stat_is b conns_active 0; then
	took=$(awk -v a="$t0" -v b="$(rxe_now)" 'BEGIN { printf "%.1f", b - a }')
	ok "all $HOLD silent connections closed by idle_timeout ($IDLE s) within ${took} s"
else
	bad "conns_active a $(rxe_stat a conns_active) b $(rxe_stat b conns_active)"
fi
expect_stat a close_idle_timeout $HOLD
wait "$holder"
cat "$RXE_OUT/hold.out"
if grep -q "closed by the daemon $HOLD\$" "$RXE_OUT/hold.out"; then
	ok "each silent client saw its connection closed"
else
	bad "not every silent client was closed: $(tail -1 "$RXE_OUT/hold.out")"
fi
for d in a b; do
	if rxe_wait 5 stat_is $d rdma_buf_bytes_used 0; then
		ok "$d: every registered buffer back (rdma_buf_bytes_used 0, $(rxe_stat $d rdma_buf_bytes) bytes kept for reuse)"
	else
		bad "$d: rdma_buf_bytes_used $(rxe_stat $d rdma_buf_bytes_used)"
	fi
done
xfer_ok "the daemons still serve" -n 4 -b 1M -T 60

rxe_pair_stop
exit $fail
