#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In one Soft-RoCE VM (run by contrib/bench/daemon-cost): the user-space
# instructions daemon a executes per ping-pong round trip, counted by
# valgrind's callgrind, for a pair over RDMA (pairR: a -> b over rxe0) and
# a pair over the TCP fallback (pairF: b2 has no device); and, for
# reference, those of an xfer echo server on loopback (loop): what one
# endpoint of a TCP round trip costs.  Per build in $RXE_DC_BUILDS
# ("TAG=PATH_TO_SMCPROXYD ..."): daemons b, b2 and a of that build, a under
# callgrind.  Per path and size: counters zeroed, $RXE_DC_WARM round trips
# (a new connection), dump "TAG.PATH.SIZE.WARM"; zeroed, WARM + ITERS round
# trips, dump "TAG.PATH.SIZE.WARM+ITERS".  The host side takes the
# difference over ITERS: a connection's own setup and teardown cancel out.
# Instruction counts do not depend on the emulator's speed; busy polling's
# do (how often it spins), so a has it off unless RXE_DC_A_CONF says
# otherwise (rdma settings of daemon a, libconfig).
. "$abs_top_srcdir/tests/rxe/lib.sh"

rxe_setup
rxe_pair_tools
command -v valgrind >/dev/null && command -v callgrind_control >/dev/null ||
	rxe_die "valgrind not installed (apt-get install valgrind)"

R=$RXE_RUNDIR
sizes=${RXE_DC_SIZES:-1 64 1024}
iters=${RXE_DC_ITERS:-300}
warm=${RXE_DC_WARM:-100}
PORT_T=16389		# xfer server: the pairs' target
PORT_E=16388		# xfer server under callgrind: the loop reference
PORT_B=7111		# b's peer port (b2: 7121)
PORT_X=16390		# a's rule to b (RDMA); 16391: to b2 (fallback)

head -c 48 /dev/urandom >"$R/psk" && chmod 600 "$R/psk" || rxe_die "key"

listening() {
	ss -ltn | grep -q ":$1 "
}

# callgrind OUT PROGRAM ARGS...: run PROGRAM under callgrind (exec)
cat >"$R/callgrind" <<'EOF'
#!/bin/sh
out=$1
shift
exec valgrind --tool=callgrind --callgrind-out-file="$out" --dump-instr=no \
	--log-file="$out.valgrind.log" "$@"
EOF
chmod +x "$R/callgrind"

# measure TAG PATH PID PORT: the two dumps per size (see above)
measure() {
	for s in $sizes; do
		for n in $warm $((warm + iters)); do
			callgrind_control -z "$3" >>"$RXE_OUT/control.log" 2>&1 ||
				rxe_die "callgrind_control -z $3"
			"$XFER" client -c "127.0.0.1:$4" -m pingpong -s "$s" -i "$n" \
				--json -T 600 >>"$RXE_OUT/xfer.$1.$2.log" 2>&1 ||
				rxe_die "$1 $2: ping-pong $s B x $n failed"
			callgrind_control -d "$1.$2.$s.$n" "$3" \
				>>"$RXE_OUT/control.log" 2>&1 ||
				rxe_die "callgrind_control -d $3"
		done
	done
}

"$XFER" server -q -l "127.0.0.1:$PORT_T" >"$RXE_OUT/server.log" 2>&1 &
"$R/callgrind" "$RXE_OUT/cg.loop.%p" "$XFER" server -q \
	-l "127.0.0.1:$PORT_E" >"$RXE_OUT/echo.log" 2>&1 &
echo_pid=$!
rxe_wait 60 listening $PORT_T && rxe_wait 120 listening $PORT_E ||
	rxe_die "xfer servers did not listen"
"$XFER" client -c "127.0.0.1:$PORT_E" -m pingpong -s 64 -i 20 -T 300 \
	>/dev/null 2>&1 || rxe_die "echo server under callgrind"
measure ref loop "$echo_pid" $PORT_E

for spec in $RXE_DC_BUILDS; do
	tag=${spec%%=*}
	bin=${spec#*=}
	[ -x "$bin" ] || rxe_die "$bin: not built"
	for n in "" 2; do
		dev=$RXE_DEV0
		[ "$n" = 2 ] && dev=nosuchdev
		cat >"$R/b$n.conf" <<CONF
smcproxyd: { name = "b$n"; workers = 1; control_socket = "$R/b$n.$tag.sock"; };
peer_listen: { address = "$RXE_IP0:71${n:-1}1"; };
peers = ( { name = "a"; address = "$RXE_IP0:7112"; key_file = "$R/psk"; } );
exports = ( { name = "x"; target = "127.0.0.1:$PORT_T"; peers = [ "a" ]; } );
rdma: { devices = [ "$dev" ]; };
CONF
	done
	cat >"$R/a.conf" <<CONF
smcproxyd: { name = "a"; workers = 1; control_socket = "$R/a.$tag.sock"; };
peers = ( { name = "b"; address = "$RXE_IP0:$PORT_B"; key_file = "$R/psk"; },
          { name = "b2"; address = "$RXE_IP0:7121"; key_file = "$R/psk"; } );
rules = ( { name = "x"; listen = "127.0.0.1:$PORT_X"; peer = "b"; export = "x"; },
          { name = "f"; listen = "127.0.0.1:$((PORT_X + 1))"; peer = "b2"; export = "x"; } );
rdma: { devices = [ "$RXE_DEV0" ]; ${RXE_DC_A_CONF-busy_poll_us = 0;} };
CONF
	printf '#!/bin/sh\nexec "%s" "%s" "%s" "$@"\n' "$R/callgrind" \
		"$RXE_OUT/cg.$tag.%p" "$bin" >"$R/a.$tag"
	chmod +x "$R/a.$tag"
	SMCPROXYD=$bin daemon_start "b$tag" "$R/b.conf" || rxe_die "b ($tag)"
	SMCPROXYD=$bin daemon_start "b2$tag" "$R/b2.conf" || rxe_die "b2 ($tag)"
	SMCPROXYD=$R/a.$tag RXE_DAEMON_TIMEOUT=300 daemon_start "a$tag" "$R/a.conf" ||
		rxe_die "a ($tag) under callgrind"
	eval "apid=\$rxe_pid_a$tag"
	# the group comes up with the first connection; b2 declines
	"$XFER" client -c "127.0.0.1:$PORT_X" -n 1 -b 4K -T 300 >/dev/null 2>&1
	rxe_wait 120 logged "a$tag" "link group active" ||
		rxe_die "$tag: no link group"
	for p in $PORT_X $((PORT_X + 1)); do
		"$XFER" client -c "127.0.0.1:$p" -m pingpong -s 64 -i 20 -T 300 \
			>/dev/null 2>&1 || rxe_die "$tag: warm-up through $p"
	done
	measure "$tag" pairR "$apid" $PORT_X
	measure "$tag" pairF "$apid" $((PORT_X + 1))
	"$CTL" -s "$R/a.$tag.sock" -j stats >"$RXE_OUT/a.$tag.stats.json" 2>&1
	for d in "a$tag" "b$tag" "b2$tag"; do
		daemon_stop "$d" || rxe_log "$d exited with $?"
	done
done
echo "== done"
