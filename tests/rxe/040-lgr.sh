#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the VM: link groups between two real daemons.  The first client
# connection makes daemon a set up a link group to b over rxe0 (CLC on
# b's peer port, authenticated with a pre-shared key, then CONFIRM_LINK
# over the link); b adds a second link over rxe1; veth1 going down takes
# that link down within its bound (port event, or TEST_LINK after
# test_link_time + 2 s) while the group carries on over rxe0.  Then a
# daemon with no usable device declines NOSMCRDEV and the client falls
# back, the reason in its log, stats and `show peers`.  Each transfer must
# verify, whether it went over the link group or the TCP fallback.
. "$(dirname "$0")/lib.sh"

rxe_setup
rxe_pair_tools

R=$RXE_RUNDIR
PORT_B=7101
PORT_RULE=16380
PORT_T=16379
TEST_LINK_TIME=1
fail=0

# transfer WHAT: one verified connection through a to the target behind b.
transfer() {
	if "$XFER" client -c "127.0.0.1:$PORT_RULE" -n 1 -b 64K -T 30 \
		>"$RXE_OUT/xfer.out" 2>&1; then
		ok "$1: a connection through the pair verifies"
	else
		bad "$1: the transfer failed: $(tail -3 "$RXE_OUT/xfer.out")"
	fi
}

head -c 48 /dev/urandom >"$R/psk" && chmod 600 "$R/psk" ||
	rxe_die "cannot write the key"

# conf_a NAME: the client (rule side) of peer b.
conf_a() {
	cat >"$R/$1.conf" <<EOF
smcproxyd: { name = "a"; workers = 1; control_socket = "$R/$1.sock"; };
peers = ( { name = "b"; address = "$RXE_IP0:$PORT_B"; key_file = "$R/psk"; } );
rules = ( { name = "x"; listen = "127.0.0.1:$PORT_RULE"; peer = "b";
            export = "x"; } );
rdma: { test_link_time = $TEST_LINK_TIME; };
EOF
}

# conf_b NAME [RDMA]: the server (export side) of peer a.
conf_b() {
	cat >"$R/$1.conf" <<EOF
smcproxyd: { name = "b"; workers = 1; control_socket = "$R/$1.sock"; };
peer_listen: { address = "$RXE_IP0:$PORT_B"; };
peers = ( { name = "a"; address = "$RXE_IP0:7102"; key_file = "$R/psk"; } );
exports = ( { name = "x"; target = "127.0.0.1:$PORT_T"; peers = [ "a" ]; } );
rdma: { test_link_time = $TEST_LINK_TIME; ${2:-} };
EOF
}

"$XFER" server -l "127.0.0.1:$PORT_T" >"$RXE_OUT/server.log" 2>&1 &
server=$!
rxe_wait 20 sh -c "ss -ltn | grep -q ':$PORT_T '" ||
	rxe_die "xfer server did not listen"

# --- a link group, confirmed, with a second link ---------------------------
conf_a a
conf_b b
daemon_start b "$R/b.conf" || rxe_die "daemon b did not start"
daemon_start a "$R/a.conf" || rxe_die "daemon a did not start"
transfer "first connection"

if rxe_wait 30 logged a 'link 1: up \(CONFIRM_LINK\): rxe0' &&
	rxe_wait 10 logged b 'link 1: up \(CONFIRM_LINK\): rxe0' &&
	logged a 'peer b: link group active as client' &&
	logged b 'peer a: link group active as server'; then
	ok "link group a-b active, first link confirmed over rxe0"
else
	bad "no confirmed link group over rxe0"
fi
if rxe_wait 30 logged a 'link 2: up \(CONFIRM_LINK\): rxe1' &&
	rxe_wait 10 logged b 'link 2: up \(CONFIRM_LINK\): rxe1'; then
	ok "second link added and confirmed over rxe1"
else
	bad "no second link over rxe1"
fi
for d in a b; do
	expect_stat $d lgr_created 1
	expect_stat $d link_up 2
	expect_stat $d clc_declines_sent 0
	expect_stat $d auth_failures 0
done
# systemd's STATUS= follows the groups (looked at every 5 s), not only
# what was true at READY=1
if rxe_wait 15 grep -q 'STATUS=.*1 link group' "$RXE_OUT/a.notify"; then
	ok "a's sd_notify STATUS= says 1 link group"
else
	bad "a's STATUS= never said 1 link group: $(tail -n 3 "$RXE_OUT/a.notify")"
fi
"$CTL" -s "$R/a.sock" show lgrs >"$RXE_OUT/a.lgrs.txt" 2>&1
"$CTL" -s "$R/a.sock" -j show links >"$RXE_OUT/a.links.json" 2>&1
echo "--- show lgrs on a"
cat "$RXE_OUT/a.lgrs.txt"

# --- one link fails, the group stays on the other ---------------------------
t0=$(rxe_now)
ip link set veth1 down || rxe_die "cannot take veth1 down"
bound=$((TEST_LINK_TIME + 2 + 2))
if rxe_wait "$bound" logged a 'link 2 \(rxe1\): down' &&
	rxe_wait 2 logged b 'link 2 \(rxe1\): down'; then
	took=$(awk -v a="$t0" -v b="$(rxe_now)" 'BEGIN { printf "%.1f", b - a }')
	ok "link 2 down ${took} s after veth1 went down (bound ${bound} s)"
else
	bad "link 2 not down within ${bound} s of veth1 going down"
fi
sleep $((TEST_LINK_TIME + 3))
if logged a 'link group ends' || logged b 'link group ends'; then
	bad "the link group ended with link 1 still up"
else
	ok "the group stays up on link 1"
fi
for d in a b; do
	expect_stat $d link_down 1
	expect_stat $d lgr_terminated 0
done
transfer "after the link failure"
ip link set veth1 up
rxe_wait 20 rxe_port_ready "$RXE_DEV1" "$RXE_IP1" ||
	rxe_die "$RXE_DEV1 did not come back"
daemon_stop a || bad "daemon a exited with status $?"
daemon_stop b || bad "daemon b exited with status $?"

# --- no usable device: DECLINE(NOSMCRDEV), fallback --------------------------
conf_a a2
conf_b b2 'devices = [ "nosuchdev" ];'
daemon_start b2 "$R/b2.conf" || rxe_die "daemon b2 did not start"
daemon_start a2 "$R/a2.conf" || rxe_die "daemon a2 did not start"
transfer "with a peer that has no device"
if rxe_wait 30 logged a2 'peer declined, NOSMCRDEV \(0x03030002\)'; then
	ok "b2 declined NOSMCRDEV, a2 fell back"
else
	bad "no NOSMCRDEV decline seen by a2"
fi
expect_stat a2 clc_declines_received 1
expect_stat b2 clc_declines_sent 1
expect_stat a2 lgr_created 0
"$CTL" -s "$R/a2.sock" show peers >"$RXE_OUT/a2.peers.txt" 2>&1
"$CTL" -s "$R/a2.sock" -j show peers >"$RXE_OUT/a2.peers.json" 2>&1
echo "--- show peers on a2"
cat "$RXE_OUT/a2.peers.txt"
if grep -q '"mode": *"fallback"' "$RXE_OUT/a2.peers.json" &&
	grep -q 'NOSMCRDEV' "$RXE_OUT/a2.peers.json"; then
	ok "show peers: b in fallback, NOSMCRDEV"
else
	bad "show peers does not show the fallback reason"
fi
transfer "again, over the fallback"
daemon_stop a2 || bad "daemon a2 exited with status $?"
daemon_stop b2 || bad "daemon b2 exited with status $?"
kill "$server" 2>/dev/null
wait "$server" 2>/dev/null
exit $fail
