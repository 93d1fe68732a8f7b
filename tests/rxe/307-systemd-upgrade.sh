#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the VM booted with systemd as PID 1 (run-checks --systemd): the .deb
# as dpkg installs, upgrades and removes it, with two daemons under units
# bridging a rule to an export over RDMA (rxe0): smcproxyd.service is
# daemon a (the rule), smcproxyd@b.service daemon b (the export).  The
# package is made from this build tree by debian/rules' own packaging
# steps (lib.sh: rxe_build_deb); the upgrade is the same package with a
# higher version (dpkg-deb -R, Version bumped, dpkg-deb -b).
#   dpkg -i                  fresh install: enabled, not started; the
#                            package's autopkgtest (debian/tests/pair: two
#                            instances over the TCP fallback, 1 MiB
#                            verified, stopped) passes on it
#   dpkg -i of the newer     while four client loops (connections one after
#   .deb (upgrade)           another, verified) and a slow pingpong run
#                            through the pair: smcproxyd.service is active
#                            again, its process runs the new package's
#                            file, no loop connection was refused or reset,
#                            the pingpong open at the restart was drained
#                            and verified, and the next connections go over
#                            RDMA.  Fails with debian/rules' dh_installsystemd
#                            --no-start alone: its preinst stops the
#                            service and nothing starts it again.
#   systemctl restart        the export side's unit under the same loops: no
#   smcproxyd@b              connection fails (RDMA opens refused during the
#                            drain reopen over TCP, into the stored peer
#                            port), and once the new b is up connections
#                            go over RDMA again
#   dpkg -r                  both units stopped, their processes gone
. "$(dirname "$0")/lib.sh"

if [ ! -d /run/systemd/system ] || [ "$(cat /proc/1/comm)" != systemd ]; then
	rxe_die "not under systemd: run this through run-checks --systemd"
fi
echo "# systemd booted: this check starts at $(rxe_now) s of uptime"
start=$(date +%s)
rxe_setup
rxe_pair_tools

R=$RXE_RUNDIR
PORT_B=7331
PORT_RULE=16610
PORT_T=16609
fail=0

# pid_logged PID PATTERN: process PID's journal since this check began
# has a matching line (the lane's other checks ran smcproxyd.service
# before, and a pid comes again from one boot to the next)
pid_lines() {
	journalctl --since "@$start" "_PID=$1" --no-pager -o cat 2>/dev/null |
		grep -Eq -- "$2"
}
pid_logged() {
	rxe_wait 10 pid_lines "$1" "$2"
}
expect_is() {
	if [ "$2" = "$3" ]; then
		ok "$1: $2"
	else
		bad "$1 is '$2', want '$3'"
	fi
}
since() {
	awk -v a="$1" -v b="$(rxe_now)" 'BEGIN { printf "%.1f", b - a }'
}
main_pid() {
	systemctl show -p MainPID --value "$1"
}
pkg_version() {
	dpkg-query -W -f '${Status} ${Version}' smcproxyd 2>/dev/null
}
# lgr_up UNIT: UNIT's process has set up a link group
lgr_up() {
	pid_lines "$(main_pid "$1")" 'link group active as'
}

# --- the package, and a newer one -------------------------------------------
# The container image the host root comes from forbids starting services
# from maintainer scripts (policy-rc.d exits 101); a machine does not.
rm -f /usr/sbin/policy-rc.d
t0=$(rxe_now)
rxe_build_deb "$R/deb" ||
	rxe_die "cannot build the .deb: $(tail -n 20 "$RXE_OUT/deb-build.txt")"
old=$(dpkg-deb -f "$deb" Version)
new=$old+upgrade1
dpkg-deb -R "$deb" "$R/newer" &&
	sed -i "s/^Version: .*/Version: $new/" "$R/newer/DEBIAN/control" &&
	dpkg-deb -Znone -b "$R/newer" "$R/smcproxyd_${new}_amd64.deb" \
		>/dev/null || rxe_die "cannot build the newer .deb"
newdeb=$R/smcproxyd_${new}_amd64.deb
echo "# $(basename "$deb") and $(basename "$newdeb") built in $(since "$t0") s"

# a make install of an earlier check of the lane left a configuration
# that belongs to no package: the package's own comes in its place
unit=/lib/systemd/system/smcproxyd.service
rm -f "$(sed -n 's/^ExecStart=.* -c \([^ ]*\)$/\1/p' \
	"$R/deb/smcproxyd/debian/smcproxyd$unit")"

# --- dpkg -i: enabled, not started -------------------------------------------
t0=$(rxe_now)
if dpkg -i "$deb" >"$RXE_OUT/dpkg-install.txt" 2>&1; then
	t_install=$(since "$t0")
	ok "dpkg -i $(basename "$deb") ($t_install s)"
else
	rxe_die "dpkg -i $deb: $(tail -n 20 "$RXE_OUT/dpkg-install.txt")"
fi
expect_is "installed" "$(pkg_version)" "install ok installed $old"
expect_is "smcproxyd after a fresh install" \
	"$(systemctl is-active smcproxyd)" inactive
expect_is "and" "$(systemctl is-enabled smcproxyd)" enabled
conf=$(sed -n 's/^ExecStart=.* -c \([^ ]*\)$/\1/p' "$unit")
etc=${conf%/*}
sbin=$(sed -n 's/^ExecStart=\([^ ]*\) .*/\1/p' "$unit")
CTL=$(sed -n 's/^ExecReload=\([^ ]*\) .*/\1/p' "$unit")
id smcproxyd >/dev/null 2>&1 || bad "the postinst made no user smcproxyd"
[ -x "$sbin" ] && [ -x "$CTL" ] || rxe_die "no $sbin or $CTL from $unit"
ln -sf /run/smcproxyd/control.sock "$R/a.sock"
ln -sf /run/smcproxyd-b/control.sock "$R/b.sock"

# --- a (smcproxyd) and b (smcproxyd@b) over RDMA ----------------------------
# A long drain (shutdown_timeout): the pingpong open at a restart must
# outlast the package's installation, which takes its time under emulation.
head -c 48 /dev/urandom >"$R/psk" &&
	install -m 0600 -o smcproxyd -g smcproxyd "$R/psk" "$etc/ab.key" ||
	rxe_die "cannot install the key"
cat >"$R/a.conf" <<EOF
smcproxyd: { name = "a"; workers = 1; shutdown_timeout = 120; };
peers = ( { name = "b"; address = "$RXE_IP0:$PORT_B"; key_file = "$etc/ab.key"; } );
rules = ( { name = "x"; listen = "127.0.0.1:$PORT_RULE"; peer = "b";
            export = "x"; } );
rdma: { devices = [ "$RXE_DEV0" ]; };
EOF
cat >"$R/b.conf" <<EOF
smcproxyd: { name = "b"; workers = 1; shutdown_timeout = 120;
             control_socket = "/run/smcproxyd-b/control.sock"; };
peer_listen: { address = "$RXE_IP0:$PORT_B"; };
peers = ( { name = "a"; address = "$RXE_IP0:$((PORT_B + 1))"; key_file = "$etc/ab.key"; } );
exports = ( { name = "x"; target = "127.0.0.1:$PORT_T"; peers = [ "a" ]; } );
rdma: { devices = [ "$RXE_DEV0" ]; };
EOF
install -m 0640 -o root -g smcproxyd "$R/a.conf" "$conf" &&
	install -m 0640 -o root -g smcproxyd "$R/b.conf" "$etc/b.conf" ||
	rxe_die "cannot write the configurations"
rxe_sanitizer_dropins
systemctl daemon-reload || rxe_die "systemctl daemon-reload failed"
# the package's autopkgtest, as autopkgtest runs it (root, installed; a
# sanitizer build's daemons with the drop-in above)
if sh "$abs_top_srcdir/debian/tests/pair" >"$RXE_OUT/autopkgtest.txt" 2>&1; then
	ok "autopkgtest debian/tests/pair: $(grep '^pair: ' "$RXE_OUT/autopkgtest.txt" | tr '\n' ' ')"
else
	bad "autopkgtest debian/tests/pair: $(tail -n 20 "$RXE_OUT/autopkgtest.txt")"
fi
rxe_target_start
systemctl start smcproxyd@b smcproxyd ||
	rxe_die "cannot start the units: $(journalctl -b --no-pager -n 30 -u smcproxyd -u smcproxyd@b)"
xfer_ok "first connection (while the group is set up: waits, or fallback)" \
	-n 1 -b 64K -T 60
rxe_wait 30 lgr_up smcproxyd || rxe_die "no active link group"
"$CTL" -s "$R/a.sock" stats reset >/dev/null || bad "stats reset on a"
xfer_ok "4 connections through smcproxyd and smcproxyd@b" -n 4 -b 256K -T 60
expect_stat a conns_rdma 4

# slow_start NAME SECONDS: one connection echoing 16 KiB every 0.2 s for
# about SECONDS, each echo verified ($slow, output in $RXE_OUT/NAME.out),
# open over RDMA on a before it returns
slow_open() {
	_port=$(ss -Htnp state established "( dport = :$PORT_RULE )" |
		awk -v p="pid=$slow," 'index($0, p) { print $3 }')
	[ -n "$_port" ] &&
		"$CTL" -s "$R/a.sock" -o mode,downstream --noheadings show conns |
		awk -v c="$_port" '$1 == "rdma" && $2 == c { f = 1 } END { exit !f }'
}
slow_start() {
	"$XFER" client -c "127.0.0.1:$PORT_RULE" -m pingpong -s 16384 \
		-i $(($2 * 5)) --gap-us 200000 -T 300 >"$RXE_OUT/$1.out" 2>&1 &
	slow=$!
	rxe_wait 30 slow_open || bad "$1: the slow connection did not open over RDMA"
}

# --- dpkg -i of the newer package: an upgrade under traffic -----------------
# The restart comes at the end of the postinst, after a time under
# emulation that the loops' load makes hard to foresee (dpkg -i took 38
# to 58 s here): the slow connection starts when the postinst does, and
# lasts long enough to be open at the restart.
pid_a=$(main_pid smcproxyd)
pid_b=$(main_pid smcproxyd@b)
in_postinst() {
	pgrep -f 'smcproxyd\.postinst' >/dev/null || ! rxe_alive "$dpkg"
}
rxe_loops_start 4
sleep 2
t0=$(rxe_now)
dpkg -i "$newdeb" >"$RXE_OUT/dpkg-upgrade.txt" 2>&1 &
dpkg=$!
rxe_wait 120 in_postinst && rxe_alive "$dpkg" ||
	bad "upgrade: no postinst seen while dpkg -i ran"
slow_start upgrade-slow 25
t_slow=$(rxe_now)
if wait "$dpkg"; then
	ok "dpkg -i $(basename "$newdeb") under traffic ($(since "$t0") s; the pingpong began $(since "$t_slow") s before its end)"
else
	bad "dpkg -i $(basename "$newdeb"): $(tail -n 20 "$RXE_OUT/dpkg-upgrade.txt")"
fi
t1=$(rxe_now)
sleep 3
rxe_loops_stop upgrade
gap=$(rxe_loops_begun "$t0" "$t1")
if [ "$loops_failed" -eq 0 ] && [ "$gap" -ge 1 ]; then
	ok "upgrade: $loops_n connections, $gap begun during dpkg -i, none refused or reset, all verified"
elif [ "$loops_failed" -eq 0 ]; then
	bad "upgrade: no connection began during dpkg -i ($loops_n in all)"
else
	bad "upgrade: $loops_failed of $loops_n connections failed ($gap begun during dpkg -i): $(head -c 600 "$RXE_OUT/loop-failures.txt" 2>/dev/null)"
fi
if wait "$slow"; then
	ok "upgrade: the connection open at the restart was drained, every echo verified"
else
	bad "upgrade: the connection open at the restart: $(tail -3 "$RXE_OUT/upgrade-slow.out")"
fi
expect_is "upgraded" "$(pkg_version)" "install ok installed $new"
expect_is "smcproxyd after the upgrade" "$(systemctl is-active smcproxyd)" active
[ "$(systemctl is-active smcproxyd)" = active ] ||
	rxe_die "upgrade: smcproxyd did not come back: nothing more to check"
pid=$(main_pid smcproxyd)
# dpkg puts each file of the new package in place as a new inode: the
# restarted process runs the file now installed, the old one ran a file
# that is gone
if [ "$pid" != "$pid_a" ] && [ "$pid" != 0 ] &&
	[ "$(stat -L -c %i "/proc/$pid/exe")" = "$(stat -c %i "$sbin")" ]; then
	ok "upgrade: smcproxyd restarted (pid $pid_a, now $pid) and runs the new package's $sbin"
else
	bad "upgrade: smcproxyd's process is $pid (was $pid_a), running $(readlink "/proc/$pid/exe")"
fi
expect_is "smcproxyctl version's pid" \
	"$("$CTL" -s "$R/a.sock" -j version | sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')" \
	"$pid"
pid_logged "$pid_a" 'worker 0: draining [0-9]+ connections' ||
	bad "upgrade: the old process had no connection to drain (the pingpong ended before the restart?)"
pid_logged "$pid" '1 listening socket passed by the service manager' ||
	bad "upgrade: the new process was passed no stored socket"
expect_is "smcproxyd@b (a template's instance: not restarted) pid" \
	"$(main_pid smcproxyd@b)" "$pid_b"
rxe_wait 30 lgr_up smcproxyd || bad "upgrade: no link group from the new process"
"$CTL" -s "$R/a.sock" stats reset >/dev/null || bad "stats reset on a"
xfer_ok "after the upgrade: 4 connections" -n 4 -b 256K -T 60
expect_stat a conns_rdma 4

# --- systemctl restart of the export side -----------------------------------
# b drains the slow connection while a's loops go on: the rule side's
# opens over RDMA that b refuses (CONN_REJECT, shutdown) open again over
# TCP, and wait in b's stored peer port for b's next process.
pid_b=$(main_pid smcproxyd@b)
"$CTL" -s "$R/a.sock" stats reset >/dev/null || bad "stats reset on a"
slow_start export-slow 8
rxe_loops_start 4
sleep 2
t0=$(rxe_now)
systemctl restart smcproxyd@b || bad "systemctl restart smcproxyd@b failed (exit $?)"
t1=$(rxe_now)
echo "# the restart of smcproxyd@b took $(since "$t0") s"
sleep 5
rxe_loops_stop export-restart
gap=$(rxe_loops_begun "$t0" "$t1")
if [ "$loops_failed" -eq 0 ] && [ "$gap" -ge 1 ]; then
	ok "export restart: $loops_n connections, $gap begun during it, none refused or reset, all verified"
elif [ "$loops_failed" -eq 0 ]; then
	bad "export restart: no connection began during it ($loops_n in all)"
else
	bad "export restart: $loops_failed of $loops_n connections failed ($gap begun during it): $(head -c 600 "$RXE_OUT/loop-failures.txt" 2>/dev/null)"
fi
if wait "$slow"; then
	ok "export restart: the connection open at the restart was drained, every echo verified"
else
	bad "export restart: the connection open at the restart: $(tail -3 "$RXE_OUT/export-slow.out")"
fi
# the loops' opens over RDMA that b refused while it drained
reopened=$(rxe_stat a conns_reopened)
if [ "${reopened:-0}" -ge 1 ]; then
	ok "export restart: a opened $reopened connections b refused (shutdown) again over TCP"
else
	bad "export restart: no connection was reopened (conns_reopened '$reopened'): none met b's drain"
fi
pid_logged "$pid_b" 'worker 0: draining [0-9]+ connections' ||
	bad "export restart: b had no connection to drain"
pid=$(main_pid smcproxyd@b)
[ "$pid" != "$pid_b" ] || bad "export restart: smcproxyd@b's MainPID is still $pid_b"
pid_logged "$pid" '1 listening socket passed by the service manager' ||
	bad "export restart: b's new process was passed no stored socket"
if rxe_wait 60 lgr_up smcproxyd@b; then
	ok "export restart: a link group with b's new process"
else
	bad "export restart: no link group with b's new process"
fi
"$CTL" -s "$R/a.sock" stats reset >/dev/null || bad "stats reset on a"
"$CTL" -s "$R/b.sock" stats reset >/dev/null || bad "stats reset on b"
xfer_ok "after the export restart: 4 connections" -n 4 -b 256K -T 60
expect_stat a conns_rdma 4
expect_stat b conns_rdma 4

# --- dpkg -r: both units stop ------------------------------------------------
pid_a=$(main_pid smcproxyd)
pid_b=$(main_pid smcproxyd@b)
if dpkg -r smcproxyd >"$RXE_OUT/dpkg-remove.txt" 2>&1; then
	ok "dpkg -r smcproxyd"
else
	bad "dpkg -r smcproxyd: $(tail -n 20 "$RXE_OUT/dpkg-remove.txt")"
fi
expect_is "removed" "$(pkg_version)" "deinstall ok config-files $new"
expect_is "smcproxyd after dpkg -r" "$(systemctl is-active smcproxyd)" inactive
expect_is "and smcproxyd@b" "$(systemctl is-active smcproxyd@b)" inactive
if ! rxe_alive "$pid_a" && ! rxe_alive "$pid_b"; then
	ok "dpkg -r: both daemons' processes are gone"
else
	bad "dpkg -r: a daemon runs on (pids $pid_a $pid_b)"
fi
if "$XFER" client -c "127.0.0.1:$PORT_RULE" -n 1 -b 1K -T 10 \
	>"$RXE_OUT/xfer.out" 2>&1; then
	bad "dpkg -r: the rule still serves"
else
	ok "dpkg -r: the rule's port refuses"
fi

# the units' journal without each connection's line
journalctl --since "@$start" --no-pager -o short-monotonic -u smcproxyd \
	-u smcproxyd@b 2>&1 | grep -v ': conn 0x' >"$RXE_OUT/smcproxyd.journal.log"
dpkg -P smcproxyd >/dev/null 2>&1
rm -rf /etc/systemd/system/smcproxyd.service.d \
	/etc/systemd/system/smcproxyd@.service.d "$etc"
systemctl daemon-reload
kill "$server" 2>/dev/null
wait "$server" 2>/dev/null
exit $fail
