#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the VM: connections that arrive while the link group is still being
# set up wait for it instead of taking the TCP fallback.  a reaches b's
# peer port through a relay that holds every connection back for half a
# second, so a's group cannot be active that soon after a starts; 8
# connections opened at once right after a is ready must all verify,
# each counted conns_lgr_waits (none had a group to go to) and
# conns_rdma, none conns_fallback; `show conns` meanwhile lists them in
# state rdma_wait.  Then b has no device: the connections opened while a
# waits for b's answer take the fallback as soon as b declines, not when
# their wait ends.  (Without a group on its way nothing waits: the system
# tests, which have no RDMA device, take the fallback at once.)
. "$(dirname "$0")/lib.sh"

rxe_setup
rxe_pair_tools

R=$RXE_RUNDIR
PORT_B=7191
PORT_RELAY=7193
PORT_RULE=16470
PORT_T=16469
fail=0

# relay LISTEN_PORT TO_PORT DELAY_S: every connection to LISTEN_PORT is
# connected on to TO_PORT DELAY_S seconds later, then carried both ways.
relay() {
	perl -e '
use strict; use Socket; use IO::Select;
my ($lp, $tp, $delay, $ip) = @ARGV;
$SIG{CHLD} = "IGNORE";
socket(my $l, AF_INET, SOCK_STREAM, 0) or die "socket: $!\n";
setsockopt($l, SOL_SOCKET, SO_REUSEADDR, 1);
bind($l, pack_sockaddr_in($lp, inet_aton($ip))) or die "bind: $!\n";
listen($l, 64) or die "listen: $!\n";
while (accept(my $c, $l)) {
	next if fork();
	close($l);
	select(undef, undef, undef, $delay);
	socket(my $u, AF_INET, SOCK_STREAM, 0) or exit 1;
	connect($u, pack_sockaddr_in($tp, inet_aton($ip))) or exit 1;
	my $sel = IO::Select->new($c, $u);
	for (;;) {
		for my $h ($sel->can_read) {
			my $n = sysread($h, my $buf, 65536);
			exit 0 unless $n;
			syswrite($h == $c ? $u : $c, $buf) == $n or exit 1;
		}
	}
}' "$1" "$2" "$3" "$RXE_IP0" >>"$RXE_OUT/relay.log" 2>&1 &
	relay_pid=$!
	rxe_wait 20 sh -c "ss -ltn | grep -q ':$1 '" ||
		rxe_die "relay did not listen"
}

rxe_pair_confs "devices = [ \"$RXE_DEV0\" ];"
sed -i "s/$RXE_IP0:$PORT_B\"/$RXE_IP0:$PORT_RELAY\"/" "$R/a.conf"
grep -q ":$PORT_RELAY\"" "$R/a.conf" || rxe_die "a.conf: no relay address"
rxe_target_start
relay $PORT_RELAY $PORT_B 0.5
daemon_start b "$R/b.conf" || rxe_die "daemon b did not start"
daemon_start a "$R/a.conf" || rxe_die "daemon a did not start"

# --- 8 connections while the group is on its way ---------------------------
"$XFER" client -c "127.0.0.1:$PORT_RULE" -n 8 -b 256K -T 60 \
	>"$RXE_OUT/xfer.out" 2>&1 &
x=$!
if rxe_wait 10 sh -c "'$CTL' -s '$R/a.sock' -j show conns |
		grep -q '\"state\": *\"rdma_wait\"'"; then
	ok "show conns: connections in state rdma_wait"
else
	bad "no connection seen waiting (show conns)"
fi
if wait $x; then
	ok "8 connections opened during the group's setup verify"
else
	bad "xfer: $(tail -3 "$RXE_OUT/xfer.out")"
fi
rxe_wait 10 logged a 'peer b: link group active as client' ||
	bad "no active link group"
expect_stat a conns_lgr_waits 8
expect_stat a conns_rdma 8
expect_stat a conns_fallback 0
expect_stat b conns_rdma 8
expect_stat b conns_fallback 0
rxe_wait 30 stat_is a conns_active 0 || bad "a: connections still open"

daemon_stop a || bad "daemon a exited with status $?"
daemon_stop b || bad "daemon b exited with status $?"

# --- the group's setup fails: the waiting connections go at once ------------
# b2 has no device and declines NOSMCRDEV; a2 (debug log) must send its
# waiting connections over the fallback on the decline, not when their
# 3 s are up ("no link group in ... ms" is that timer).
rxe_pair_confs "devices = [ \"$RXE_DEV0\" ];" "devices = [ \"nosuchdev\" ];"
sed -i "s/$RXE_IP0:$PORT_B\"/$RXE_IP0:$PORT_RELAY\"/" "$R/a.conf"
for d in a b; do
	sed "s|$R/$d.sock|$R/${d}2.sock|" "$R/$d.conf" >"$R/${d}2.conf"
done
daemon_start b2 "$R/b2.conf" || rxe_die "daemon b2 did not start"
daemon_start a2 "$R/a2.conf" -d || rxe_die "daemon a2 did not start"
if "$XFER" client -c "127.0.0.1:$PORT_RULE" -n 4 -b 64K -T 60 \
	>"$RXE_OUT/xfer2.out" 2>&1; then
	ok "4 connections opened while the setup fails verify"
else
	bad "xfer: $(tail -3 "$RXE_OUT/xfer2.out")"
fi
logged a2 'link group setup failed: peer declined, NOSMCRDEV' ||
	bad "a2 did not log b2's decline"
expect_stat a2 conns_lgr_waits 4
expect_stat a2 conns_fallback 4
if logged a2 'no link group in [0-9]+ ms'; then
	bad "a2: a waiting connection fell back by its timer, not the decline"
else
	ok "a2: the waiting connections went on the decline"
fi
daemon_stop a2 || bad "daemon a2 exited with status $?"
daemon_stop b2 || bad "daemon b2 exited with status $?"
kill "$server" 2>/dev/null
wait "$server" 2>/dev/null
kill "$relay_pid" 2>/dev/null
wait "$relay_pid" 2>/dev/null
exit $fail
