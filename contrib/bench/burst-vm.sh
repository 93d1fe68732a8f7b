#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the Soft-RoCE VM (run by contrib/bench/burst through tests/rxe/vm-run):
# a daemon pair over rxe0 with its first link group active, then
# RXE_BURST_CONNS client connections at once (xfer, 1 KiB each way, every
# byte verified), and how they were carried: conns_rdma, conns_fallback,
# conns_lgr_waits of daemon a, the link groups a ended up with, the time.
. "$abs_top_srcdir/tests/rxe/lib.sh"

n=${RXE_BURST_CONNS:-1000}
ulimit -n 65536
rxe_setup
rxe_pair_tools
R=$RXE_RUNDIR
PORT_RULE=17001
PORT_B=17010
PORT_T=17020
rxe_pair_confs "devices = [ \"$RXE_DEV0\" ];"
rxe_target_start
rxe_pair_start
"$CTL" -s "$R/a.sock" stats reset >/dev/null || rxe_die "stats reset"
t0=$(rxe_now)
"$XFER" client -c "127.0.0.1:$PORT_RULE" -n "$n" -b 1K -T 300 \
	>"$RXE_OUT/burst.out" 2>&1
rc=$?
echo "burst: $n connections at once, xfer exit $rc, $(awk -v a="$t0" \
	-v b="$(rxe_now)" 'BEGIN { printf "%.1f", b - a }') s"
grep -v '^conn ' "$RXE_OUT/burst.out" | tail -1
for k in conns_accepted conns_rdma conns_fallback conns_lgr_waits \
	conns_rdma_nobufs; do
	echo "a: $k $(rxe_stat a "$k")"
done
echo "a: link groups: $("$CTL" -s "$R/a.sock" -j show lgrs |
	grep -o '"state": *"active"' | wc -l) active"
rxe_pair_stop
[ "$rc" = 0 ]
