#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Dead connections are found: every TCP connection the daemons make or
# take to each other, and B's to its target, runs a keepalive timer while
# idle (tcp_keepalive), so a peer or target that vanishes without a reset
# does not pin it forever; with tcp_keepalive = 0 none does.  The client's
# own connection to A, on loopback to a local program, has none.
. "$(dirname "$0")/lib.sh"
smc_init
need python3

pair_ports
conf_a "$T/a.conf"
conf_b "$T/b.conf"
start_server "$PORT_TARGET"
start_pair

cat >"$T/hold.py" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
time.sleep(float(sys.argv[2]))
PY

# timers PORT: "local:remote timer" of each established socket on PORT
timers()
{
	python3 - "$1" <<'PY'
import sys
port = int(sys.argv[1])
for f in ("/proc/net/tcp", "/proc/net/tcp6"):
    try:
        lines = open(f).read().splitlines()[1:]
    except OSError:
        continue
    for l in lines:
        x = l.split()
        lp, rp = int(x[1].split(":")[1], 16), int(x[2].split(":")[1], 16)
        if x[3] == "01" and port in (lp, rp):
            print("%d:%d %s" % (lp, rp, x[5].split(":")[0]))
PY
}

# check_timers WANT: the daemons' sockets towards B's peer port and the
# target have timer WANT (02: keepalive, 00: none)
check_timers()
{
	local want=$1 line n=0

	# held until looked at (3 s ran out on a loaded CI machine before the
	# sockets were read); killed below
	python3 "$T/hold.py" "$PORT_RULE" 120 &
	hold=$!
	for _ in $(seq 50); do
		[ "$(stat_get b conns_active)" = 1 ] && break
		sleep 0.1
	done
	[ "$(stat_get b conns_active)" = 1 ] || fail "no connection through the pair"
	{ timers "$PORT_BPEER"; timers "$PORT_TARGET"; } >"$T/timers"
	cat "$T/timers"
	while read -r line; do
		case $line in
		"$PORT_TARGET":*) continue ;;	# the target's own end
		esac
		n=$((n + 1))
		[ "${line##* }" = "$want" ] ||
			fail "socket $line: timer ${line##* }, want $want"
	done <"$T/timers"
	# A's end and B's end towards B's peer port, B's end to the target
	[ "$n" -eq 3 ] || fail "$n daemon sockets found, want 3"
	timers "$PORT_RULE" | grep "^$PORT_RULE:" | grep -q ' 02$' &&
		fail "the local client's connection has a keepalive timer"
	kill "$hold" 2>/dev/null
	wait "$hold" 2>/dev/null
	for _ in $(seq 100); do
		[ "$(stat_get b conns_active)" = 0 ] && break
		sleep 0.1
	done
}

check_timers 02
grep -q "tcp_keepalive" "$T/a.conf" && fail "conf_a sets tcp_keepalive itself"
sed -i 's/^\tshutdown_timeout = .*/&\n\ttcp_keepalive = 0;/' "$T/a.conf" "$T/b.conf"
ctl a reload >/dev/null && ctl b reload >/dev/null || fail "reload failed"
check_timers 00
exit 0
