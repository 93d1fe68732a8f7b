#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the VM: a daemon whose locked-memory limit is too low for its
# buffers (no CAP_IPC_LOCK, RLIMIT_MEMLOCK 32 KiB, as with a systemd unit
# lacking LimitMEMLOCK=).  Its link group may come up (its few small
# MRs fit), but no connection gets a send ring or RMB element
# registered: each one is carried over the TCP fallback instead, intact,
# counted conns_rdma_nobufs, and the log names the limit to raise
# (ulimit -l, LimitMEMLOCK=).  The daemon keeps serving.
. "$(dirname "$0")/lib.sh"

rxe_setup
rxe_pair_tools

R=$RXE_RUNDIR
PORT_B=7161
PORT_RULE=16440
PORT_T=16439
fail=0

command -v setpriv >/dev/null && command -v prlimit >/dev/null ||
	rxe_die "setpriv and prlimit (util-linux) are needed"
rxe_pair_confs "devices = [ \"$RXE_DEV0\" ];"
# a runs without CAP_IPC_LOCK (root would bypass the limit) under 32 KiB
cat >"$R/lowlock" <<EOF
#!/bin/sh
exec setpriv --bounding-set=-ipc_lock --inh-caps=-ipc_lock \
	prlimit --memlock=32768:32768 -- "$SMCPROXYD" "\$@"
EOF
chmod +x "$R/lowlock"

rxe_target_start
daemon_start b "$R/b.conf" || rxe_die "daemon b did not start"
SMCPROXYD=$R/lowlock daemon_start a "$R/a.conf" ||
	rxe_die "daemon a did not start under the low limit"
capeff=$(awk '/^CapEff/ { print $2 }' "/proc/$rxe_pid_a/status")
if grep -Eq '^Max locked memory +32768 +32768' "/proc/$rxe_pid_a/limits" &&
	[ $((0x$capeff & 0x4000)) = 0 ]; then
	ok "a runs with RLIMIT_MEMLOCK 32 KiB and without CAP_IPC_LOCK"
else
	bad "a's limits: $(grep 'locked memory' "/proc/$rxe_pid_a/limits"), CapEff $capeff"
fi

xfer_ok "first connection" -n 1 -b 64K -T 60
rxe_wait 30 logged a 'link group active|peer declined|ibv_reg_mr' ||
	bad "a neither set up a group nor failed to register memory"
"$CTL" -s "$R/a.sock" stats reset >/dev/null || bad "stats reset on a"
xfer_ok "8 connections x 1 MiB both ways verify under the low limit" \
	-n 8 -b 1M -T 120
expect_stat a conns_fallback 8
expect_stat a conns_rdma 0
expect_stat a close_link_failed 0
if [ "$(rxe_stat a conns_rdma_nobufs)" -ge 1 ] ||
	logged a 'peer b: .*(decline|fall)'; then
	ok "a: the connections fell back for want of registered memory"
else
	bad "a: conns_rdma_nobufs $(rxe_stat a conns_rdma_nobufs)"
fi
if logged a 'ibv_reg_mr .*locked memory limit\? see ulimit -l, LimitMEMLOCK='; then
	ok "a's log names ulimit -l and LimitMEMLOCK="
else
	bad "a's log does not say which limit to raise"
fi
xfer_ok "a still serves" -n 2 -b 64K -T 60

rxe_pair_stop
exit $fail
