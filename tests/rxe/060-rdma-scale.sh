#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the VM: more connections than one link group holds (255).  A first
# connection makes a set up a group to b (waiting for it, or over the
# fallback); 255 idle connections fill that group (a starts setting up a
# second one once it is three quarters full), and one more, finding it
# full, is carried anyway: over the second group, waiting for it if it
# is not active yet, or over the fallback.  Then 300 connections
# at once, verified byte for byte by xfer, must all be carried over RDMA
# on the two groups (conns_rdma 300 on both daemons, none conns_fallback,
# no buffer shortage), and `show lgrs` must list the two groups.
. "$(dirname "$0")/lib.sh"

rxe_setup
rxe_pair_tools

R=$RXE_RUNDIR
PORT_B=7121
PORT_RULE=16400
PORT_T=16399
CONNS=300
fail=0

# groups_active NAME: how many of NAME's link groups are active.
groups_active() {
	"$CTL" -s "$R/$1.sock" -j show lgrs 2>/dev/null |
		grep -o '"state": *"active"' | wc -l
}

# active_as NAME ROLE: how many groups NAME logged as active in ROLE.
active_as() {
	grep -c "link group active as $2" "$RXE_OUT/$1.log"
}

# One device, one link per group, as in 050-rdma-data.sh.
rxe_pair_confs "devices = [ \"$RXE_DEV0\" ];"
rxe_target_start
rxe_pair_start
if rxe_wait 30 logged a 'peer b: link group active as client' &&
	rxe_wait 10 logged b 'peer a: link group active as server'; then
	ok "first link group a-b active"
else
	rxe_die "no active link group"
fi

# the first connection went over the group or the fallback: count from here
"$CTL" -s "$R/a.sock" stats reset >/dev/null || bad "stats reset on a"

# --- fill it: 255 idle connections; the second group comes up beside it -----
# perl-base is Essential on Debian; the connections stay open, sending
# nothing, until the holder is killed (their FIN then ends them).
perl -MSocket -e '
my ($port, $n) = @ARGV;
my @held;
for (1 .. $n) {
	socket(my $s, AF_INET, SOCK_STREAM, 0) or die "socket: $!\n";
	connect($s, pack_sockaddr_in($port, inet_aton("127.0.0.1")))
	    or die "connect: $!\n";
	push @held, $s;
}
sleep 1 while 1;
' "$PORT_RULE" 255 >"$RXE_OUT/holder.log" 2>&1 &
holder=$!
if rxe_wait 60 stat_is a conns_rdma 255; then
	ok "255 idle connections fill the first group"
else
	bad "first group not filled: conns_rdma $(rxe_stat a conns_rdma)"
fi
xfer_ok "connection 256 (the group is full: waits for the next, or fallback)" -n 1 -b 64K -T 60
if rxe_wait 30 sh -c "[ \$(grep -c 'link group active as client' \
		'$RXE_OUT/a.log') = 2 ]" &&
	rxe_wait 10 sh -c "[ \$(grep -c 'link group active as server' \
		'$RXE_OUT/b.log') = 2 ]"; then
	ok "a full group makes a set up a second one"
else
	bad "no second group: a $(active_as a client), b $(active_as b server)"
fi
kill "$holder"
wait "$holder" 2>/dev/null
rxe_wait 60 stat_is a conns_active 0 || bad "a: held connections still open"
rxe_wait 30 stat_is b conns_active 0 || bad "b: held connections still open"
"$CTL" -s "$R/a.sock" stats reset >/dev/null || bad "stats reset on a"
"$CTL" -s "$R/b.sock" stats reset >/dev/null || bad "stats reset on b"

# --- 300 at once over the two groups ----------------------------------------
t0=$(rxe_now)
xfer_ok "$CONNS connections x 64 KiB both ways verify" -n $CONNS -b 64K -T 90
took=$(awk -v a="$t0" -v b="$(rxe_now)" 'BEGIN { printf "%.1f", b - a }')
echo "# $CONNS x 64 KiB both ways in ${took} s"
for d in a b; do
	expect_stat $d conns_rdma $CONNS
	expect_stat $d conns_fallback 0
	expect_stat $d conns_rdma_nobufs 0
	expect_stat $d llc_protocol_errors 0
	expect_stat $d lgr_terminated 0
	expect_stat $d close_link_failed 0
done
rxe_wait 30 stat_is a conns_active 0 || bad "a: connections still open"
"$CTL" -s "$R/a.sock" -j show lgrs >"$RXE_OUT/a.lgrs.json" 2>&1
"$CTL" -s "$R/b.sock" -j show lgrs >"$RXE_OUT/b.lgrs.json" 2>&1
for d in a b; do
	n=$(groups_active $d)
	if [ "$n" = 2 ]; then
		ok "$d: show lgrs lists 2 active groups"
	else
		bad "$d: show lgrs lists $n active groups, want 2"
	fi
done

rxe_pair_stop
exit $fail
