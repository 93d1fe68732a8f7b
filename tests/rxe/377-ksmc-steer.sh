#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two hosts on Linux 6.12 (ksmc.rxe): a hostile target_smc server cannot
# steer our connection onto our link group with another server (issue
# 43, M1, item 1).  b holds two addresses: on $RXE_PEER_IP a real Linux
# kernel SMC-R server T (xfer server under smcpreload.so), on 10.99.0.22
# a hostile server S (tests/tools/ksmcdecline -j).  a's daemon has a
# target_smc rule to each, no smcproxyd on b:
#   - 2 connections through the rule to T verify over RDMA: a's group
#     with T (the server's system id, GID and QP number, from show lgrs
#     and show links) is what S is told;
#   - a connection through the rule to S: S answers our PROPOSAL with a
#     join ACCEPT naming that group.  Before the fix we joined it and
#     RDMA-wrote the client's bytes into T's memory at the rkey S chose
#     (with a bogus rkey, T's link faulted and every connection to T
#     reset).  Now: our DECLINE SYNCERR (smc_out_decline_sync +1,
#     smc_join_foreign +1, logged), no join (smc_lgr_joins +0), the connection verifies as TCP on the same
#     socket, S's host is charged;
#   - the group with T is untouched: the same group id, active, no group
#     ended (lgr_terminated +0), and 2 more connections to T verify over
#     RDMA on it (b's kernel: srv_v2_succ +4 in all, no fallback).
. "$(dirname "$0")/lib.sh"

ksmc_check_init
PORT=16600
PORT_RULE=16601
PORT_S=16602
PORT_RULE_S=16603
HOST_S=10.99.0.22
KD=$abs_top_builddir/tests/tools/ksmcdecline
[ -x "$KD" ] || rxe_die "$KD is not built"

if [ "$RXE_HOST" = b ]; then
	ksmc_server_start
	succ=$(ksmc_stat srv_v2_succ) fb=$(ksmc_stat fback_srv)
	ip addr add "$HOST_S/32" dev "$RXE_LINK_IF" ||
		rxe_die "cannot add $HOST_S on $RXE_LINK_IF"
	rxe_signal b-ready
	rxe_await t-group 300 || rxe_die "a did not say its group with T"
	spec=$(rxe_value t-group)
	echo "# S names a's group with T: $spec"
	"$KD" -l "$HOST_S:$PORT_S" -o "$OBJ" -j "$spec" -N 1 \
		>"$RXE_OUT/hostile.out" 2>&1 &
	hostile=$!
	rxe_wait 20 sh -c "ss -ltn | grep -q '$HOST_S:$PORT_S '" ||
		rxe_die "S did not listen: $(cat "$RXE_OUT/hostile.out")"
	rxe_signal s-ready
	rxe_await steered 300 || bad "a's connection to S did not end"
	wait "$hostile"
	rc=$?
	sed 's/^/# S: /' "$RXE_OUT/hostile.out"
	if [ "$rc" = 0 ] && grep -q '^ACCEPT of [0-9]* bytes sent' "$RXE_OUT/hostile.out" &&
		grep -q '^client DECLINE SYNCERR' "$RXE_OUT/hostile.out" &&
		grep -q '^echoed [1-9][0-9]* bytes as TCP' "$RXE_OUT/hostile.out"; then
		ok "S's join ACCEPT naming the group with T: DECLINE SYNCERR, then TCP on the same socket"
	else
		bad "S (status $rc): $(tr '\n' ';' <"$RXE_OUT/hostile.out")"
	fi
	rxe_await again 300 || bad "a's second transfer to T did not end"
	s=$(($(ksmc_stat srv_v2_succ) - succ)) f=$(($(ksmc_stat fback_srv) - fb))
	if [ "$s" = 4 ] && [ "$f" = 0 ]; then
		ok "T's kernel served all 4 over SMC-Rv2: srv_v2_succ +4, no fallback"
	else
		bad "T's kernel: srv_v2_succ +$s, fback_srv +$f"
	fi
	ip addr del "$HOST_S/32" dev "$RXE_LINK_IF"
	kill "$server" 2>/dev/null
	wait "$server" 2>/dev/null
else
	ksmc_cgroup2
	cat >"$R/a.conf" <<EOF
smcproxyd: { name = "a"; workers = 1; control_socket = "$R/a.sock";
              log_level = "debug"; };
rules = ( { name = "t"; listen = "127.0.0.1:$PORT_RULE";
            target_smc = "$RXE_PEER_IP:$PORT"; },
          { name = "s"; listen = "127.0.0.1:$PORT_RULE_S";
            target_smc = "$HOST_S:$PORT_S"; } );
kernel_smc: { ueids = [ "$RXE_KSMC_UEID" ]; bpf_object = "$OBJ"; };
EOF
	daemon_start a "$R/a.conf" || rxe_die "daemon a did not start"
	rxe_await b-ready 120 || rxe_die "b did not start its server"
	xfer_ok "2 x 1 MiB both ways verified through target_smc to T" \
		-n 2 -b 1M -T 120
	expect_stat a smc_out_rdma 2
	"$CTL" -s "$R/a.sock" -j show lgrs >"$RXE_OUT/lgrs.json" 2>&1
	"$CTL" -s "$R/a.sock" -j show links >"$RXE_OUT/links.json" 2>&1
	# the group with T and its link: what S names
	spec=$(python3 -c '
import json, sys
lgrs = json.load(open(sys.argv[1]))["data"]["lgrs"]
links = json.load(open(sys.argv[2]))["data"]["links"]
g = [l for l in lgrs if l["dialect"] == "smc-r" and l["state"] == "active"]
k = [l for l in links if l["lgr"] == g[0]["id"] and l["state"] == "active"]
print("%d %s,%s,%d,%s" % (g[0]["id"], g[0]["peer_system_id"],
      k[0]["peer_gid"], k[0]["peer_qpn"], sys.argv[3]))
' "$RXE_OUT/lgrs.json" "$RXE_OUT/links.json" "$RXE_KSMC_UEID") ||
		rxe_die "no active SMC-R group with T: $(cat "$RXE_OUT/lgrs.json")"
	gid=${spec%% *}
	echo "# a's group with T: lgr $gid, ${spec#* }"
	j0=$(rxe_stat a smc_lgr_joins) t0=$(rxe_stat a lgr_terminated)
	y0=$(rxe_stat a smc_out_decline_sync) x0=$(rxe_stat a smc_join_foreign)
	rxe_signal t-group "${spec#* }"
	rxe_await s-ready 120 || rxe_die "b did not start S"
	# S echoes (it is no xfer server): 256 KiB out, the same back
	if python3 -c '
import os, socket, sys
data = os.urandom(262144)
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=60)
s.sendall(data)
s.shutdown(socket.SHUT_WR)
back = bytearray()
while True:
    b = s.recv(65536)
    if not b:
        break
    back += b
sys.exit(0 if bytes(back) == data else "%d bytes back, %s" %
         (len(back), "a prefix" if data.startswith(bytes(back)) else "differing"))
' "$PORT_RULE_S" >"$RXE_OUT/echo-s.out" 2>&1; then
		ok "the connection to S: 256 KiB echoed back verified (as TCP)"
	else
		bad "the connection to S: $(tail -3 "$RXE_OUT/echo-s.out")"
	fi
	rxe_signal steered
	y=$(($(rxe_stat a smc_out_decline_sync) - y0))
	j=$(($(rxe_stat a smc_lgr_joins) - j0))
	x=$(($(rxe_stat a smc_join_foreign) - x0))
	if [ "$y" = 1 ] && [ "$j" = 0 ] && [ "$x" = 1 ]; then
		ok "S's join ACCEPT for T's group declined: smc_out_decline_sync +1, smc_join_foreign +1, smc_lgr_joins +0"
	else
		bad "S's join ACCEPT: smc_out_decline_sync +$y, smc_join_foreign +$x, smc_lgr_joins +$j"
	fi
	logged a "kernel SMC-R server $HOST_S named lgr $gid, which is another host's: refused" &&
		ok "a's log names S and the group it named" ||
		bad "a's log lacks the foreign join warning"
	expect_stat a smc_out_tcp 1
	"$CTL" -s "$R/a.sock" -j show lgrs >"$RXE_OUT/lgrs-after.json" 2>&1
	if python3 -c '
import json, sys
lgrs = json.load(open(sys.argv[1]))["data"]["lgrs"]
sys.exit(not any(l["id"] == int(sys.argv[2]) and l["state"] == "active"
                 for l in lgrs))' "$RXE_OUT/lgrs-after.json" "$gid"; then
		ok "the group with T, lgr $gid, is still active"
	else
		bad "the group with T is gone: $(cat "$RXE_OUT/lgrs-after.json")"
	fi
	xfer_ok "2 more x 1 MiB to T verified" -n 2 -b 1M -T 120
	expect_stat a smc_out_rdma 4
	t=$(($(rxe_stat a lgr_terminated) - t0))
	if [ "$t" = 0 ]; then
		ok "no group ended (lgr_terminated +0)"
	else
		bad "lgr_terminated +$t"
	fi
	rxe_signal again
	daemon_stop a || bad "a did not stop cleanly"
fi
rxe_barrier end-steer 120 || bad "the hosts are out of step at the end"
exit $fail
