#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the VM booted with systemd as PID 1 (run-checks --systemd): the package
# as an operator gets it.  "make install" into the overlay root (the unit in
# /lib/systemd/system, as the .deb puts it), systemd-sysusers and
# systemd-tmpfiles on the installed files, a configuration and key in the
# installed configuration directory.  Then, with daemon b started by hand
# as the peer on the same rxe device:
#   systemctl start smcproxyd    active once READY=1, StatusText set, runs
#                                as user smcproxyd with no memlock limit
#   traffic through the unit     over RDMA (conns_rdma on both daemons):
#                                the unit's DeviceAllow= lets the verbs
#                                devices in and LimitMEMLOCK= lets it pin
#   systemctl reload, good file  succeeds, the new rule serves
#   systemctl reload, bad file   fails, file:line reason in the journal,
#                                still active and serving over RDMA
#   systemctl stop               a transfer running at the stop finishes
#                                (drain), exit status 0
# and the journal of smcproxyd.service holds each step's lines.  The
# control: with a drop-in that empties DeviceAllow= the same traffic falls
# back to TCP, so the RDMA above is the unit's device policy at work.
# Issue 34's checks:
#   journal events               link up (PEER=, LGR=, LINK=), peer up over
#                                rdma (PEER=), reload and reload_failed
#                                with their MESSAGE_IDs, in journald's
#                                export format
#   keys                         "smcproxyd -n" as root accepts the key owned
#                                by smcproxyd, warns about one of root's,
#                                names smcproxyd for one of nobody's; the
#                                unit refuses root's, saying how to fix it
#   watchdog                     WatchdogSec=30: systemd sees WATCHDOG=1
#   stop with TimeoutStopSec=4   a 10 s drain still finishes
#                                (EXTEND_TIMEOUT_USEC=), Result=success
#   control_gid                  without SupplementaryGroups= a warning and
#                                the socket keeps its group; with it a
#                                member of the group runs "stats reset";
#                                reload through a control_socket the file
#                                names (ExecReload=smcproxyctl -c)
#   smcproxyd@two                a second daemon beside the first, its own
#                                runtime directory, reload, stop
#   systemctl restart            client loops and streams through the unit
#                                see no refused or reset connection: the
#                                listening sockets wait in the fd store
#   systemd-analyze security     its exposure score, printed and bounded
. "$(dirname "$0")/lib.sh"

if [ ! -d /run/systemd/system ] || [ "$(cat /proc/1/comm)" != systemd ]; then
	rxe_die "not under systemd: run this through run-checks --systemd"
fi
echo "# systemd booted: this check starts at $(rxe_now) s of uptime"
rxe_setup
rxe_pair_tools

R=$RXE_RUNDIR
PORT_B=7311
PORT_RULE=16590
PORT_RULE2=16592
PORT_RULE3=16594
PORT_MET=16596
PORT_T=16589
fail=0

# --- install as a package would -------------------------------------------
rxe_install_package
if [ "$(stat -c '%a %U %G' "$etc")" = "750 root smcproxyd" ]; then
	ok "installed: user smcproxyd, $etc 0750 root:smcproxyd"
else
	bad "$etc is $(stat -c '%a %U %G' "$etc"), want 750 root smcproxyd"
fi
# rxe_stat and expect_stat ask $CTL on $R/NAME.sock: the installed
# smcproxyctl, and for a the unit's socket
CTL=$ctl
ln -sf /run/smcproxyd/control.sock "$R/a.sock"

# --- the pair: the unit's daemon is a, b runs by hand ----------------------
rxe_pair_confs "devices = [ \"$RXE_DEV0\" ];"
install -m 0600 -o smcproxyd -g smcproxyd "$R/psk" "$etc/ab.key" ||
	rxe_die "cannot install the key"
# write_conf LINE1 [MORE_RULES]: daemon a's configuration where the unit
# reads it; LINE1 is the smcproxyd section (line 1: the bad file's error
# is reported there).  The control socket is the default one, which is
# what ExecReload= names.
write_conf() {
	cat >"$R/conf.new" <<EOF
smcproxyd: { $1 };
peers = ( { name = "b"; address = "$RXE_IP0:$PORT_B"; key_file = "$etc/ab.key"; } );
rules = ( { name = "x"; listen = "127.0.0.1:$PORT_RULE"; peer = "b";
            export = "x"; }${2:-} );
rdma: { devices = [ "$RXE_DEV0" ]; };
EOF
	install -m 0640 -o root -g smcproxyd "$R/conf.new" "$conf" ||
		rxe_die "cannot write $conf"
}
good='name = "a"; workers = 1; shutdown_timeout = 30;'
write_conf "$good"
rxe_target_start
daemon_start b "$R/b.conf" || rxe_die "daemon b did not start"


# journal_has PATTERN: smcproxyd.service's journal has a matching line
# (journald may take a moment to write it)
journal_lines() {
	journalctl -u smcproxyd --no-pager -o cat 2>/dev/null | grep -Eq -- "$1"
}
journal_has() {
	rxe_wait 10 journal_lines "$1"
}
status_text() {
	systemctl show -p StatusText --value smcproxyd
}
# expect_is WHAT GOT WANT: ok "WHAT: GOT" when GOT is WANT, else bad
expect_is() {
	if [ "$2" = "$3" ]; then
		ok "$1: $2"
	else
		bad "$1 is '$2', want '$3'"
	fi
}

# --- keys, as "smcproxyd -n" run by root and the unit see them --------------
sbin=$(sed -n 's/^ExecStart=\([^ ]*\) .*/\1/p' "$unit")
svc_uid=$(id -u smcproxyd)
if "$sbin" -n -c "$conf" >"$R/n.out" 2>"$R/n.err" && [ ! -s "$R/n.err" ]; then
	ok "smcproxyd -n as root: a key owned by smcproxyd passes, no warning"
else
	bad "smcproxyd -n as root, key owned by smcproxyd: $(cat "$R/n.out" "$R/n.err")"
fi
chown root:root "$etc/ab.key"
if "$sbin" -n -c "$conf" >"$R/n.out" 2>"$R/n.err" &&
	grep -q "^$conf:2: warning: peers\[0\].key_file: key file $etc/ab.key is root's (mode 0600): smcproxyd (uid $svc_uid), the user the service runs as, cannot read it; chown smcproxyd it, or pass it with systemd's LoadCredential=" "$R/n.err"; then
	ok "smcproxyd -n as root: a key of root's passes with a warning"
else
	bad "smcproxyd -n as root, key of root's: $(cat "$R/n.out" "$R/n.err")"
fi
if systemctl start smcproxyd; then
	bad "the unit started with a key it cannot read"
	systemctl stop smcproxyd
elif journal_has "key file $etc/ab.key: Permission denied: smcproxyd runs as smcproxyd \\(uid $svc_uid\\), which cannot read it or its directory; chown smcproxyd it"; then
	ok "the unit refuses a key of root's, naming its user and the fix"
else
	bad "the unit's refusal of a key of root's does not say how to fix it"
fi
systemctl stop smcproxyd 2>/dev/null
systemctl reset-failed smcproxyd 2>/dev/null
chown nobody "$etc/ab.key"
if "$sbin" -n -c "$conf" >"$R/n.out" 2>"$R/n.err"; then
	bad "smcproxyd -n as root accepted a key owned by nobody"
elif grep -q "key file $etc/ab.key is owned by nobody (uid 65534), neither root nor smcproxyd (uid $svc_uid), the user the service runs as: chown smcproxyd it" "$R/n.err"; then
	ok "smcproxyd -n as root: a key of nobody's is refused, naming smcproxyd"
else
	bad "smcproxyd -n as root, key of nobody's: $(cat "$R/n.err")"
fi
chown smcproxyd:smcproxyd "$etc/ab.key"

# --- systemctl start: active once READY=1 ----------------------------------
t0=$(rxe_now)
if systemctl start smcproxyd; then
	ok "systemctl start smcproxyd ($(awk -v a="$t0" -v b="$(rxe_now)" \
		'BEGIN { printf "%.1f", b - a }') s)"
else
	systemctl status --no-pager smcproxyd
	journalctl -u smcproxyd --no-pager -o cat | tail -n 30
	rxe_die "systemctl start smcproxyd failed"
fi
expect_is is-active "$(systemctl is-active smcproxyd)" active
st=$(status_text)
case $st in
"1 rule, 0 exports, 1 peer, "*) ok "READY=1 with StatusText '$st'" ;;
*) bad "StatusText is '$st'" ;;
esac
pid=$(systemctl show -p MainPID --value smcproxyd)
expect_is "its uid" "$(awk '/^Uid:/ { print $2 }' "/proc/$pid/status")" \
	"$(id -u smcproxyd)"
expect_is "its memlock limit (LimitMEMLOCK=)" \
	"$(awk '/^Max locked memory/ { print $4 }' "/proc/$pid/limits")" unlimited
journal_has 'smcproxyd .* ready: a, 1 workers, 1 rules' ||
	bad "no ready line in the journal"
expect_is WatchdogUSec "$(systemctl show -p WatchdogUSec --value smcproxyd)" 30s
journal_has 'watchdog: WATCHDOG=1 every 10000 ms while the workers answer' ||
	bad "no watchdog line in the journal"
wd0=$(systemctl show -p WatchdogTimestampMonotonic --value smcproxyd)

# --- traffic over RDMA through the unit's daemon ---------------------------
xfer_ok "first connection (while the group is set up: waits, or fallback)" \
	-n 1 -b 64K -T 60
journal_has 'peer b: link group active as client' ||
	bad "no active link group in the journal"
# the events' fields (docs/stats.md "Log events") in journald's export
# format: journal_event ID LINE-REGEX, an entry with that MESSAGE_ID has
# a field line matching
journal_event_lines() {
	journalctl -u smcproxyd --no-pager -o export "MESSAGE_ID=$1" \
		2>/dev/null | grep -Eqx -- "$2"
}
journal_event() {
	rxe_wait 10 journal_event_lines "$1" "$2"
}
link_up=a1019f3f1de7421dbaed4d90612770e0
peer_up=fc02ec302b63463089d825550f13f637
if journal_event $link_up 'PEER=b' && journal_event $link_up 'LGR=[0-9]+' &&
	journal_event $link_up 'LINK=1' &&
	journal_event $link_up 'MESSAGE=lgr [0-9]+ link 1: up .*'; then
	ok "link up in the journal with MESSAGE_ID, PEER=, LGR=, LINK="
else
	bad "no link_up event with its fields: $(journalctl -u smcproxyd \
		--no-pager -o export MESSAGE_ID=$link_up | grep -E '^(MESSAGE|PEER|LGR|LINK)=' | head)"
fi
if journal_event $peer_up 'PEER=b' &&
	journal_event $peer_up 'MESSAGE=peer b: up over rdma'; then
	ok "peer up over rdma in the journal with MESSAGE_ID, PEER="
else
	bad "no peer_up event over rdma"
fi
"$CTL" -s "$R/a.sock" stats reset >/dev/null || bad "stats reset on a"
"$CTL" -s "$R/b.sock" stats reset >/dev/null || bad "stats reset on b"
xfer_ok "8 connections x 1 MiB both ways through the unit" -n 8 -b 1M -T 60
for d in a b; do
	expect_stat $d conns_rdma 8
	expect_stat $d conns_fallback 0
done
watchdog_moved() {
	[ "$(systemctl show -p WatchdogTimestampMonotonic --value smcproxyd)" != "$wd0" ]
}
if rxe_wait 25 watchdog_moved; then
	ok "systemd saw WATCHDOG=1 (WatchdogTimestamp moved from $wd0)"
else
	bad "no WATCHDOG=1 reached systemd in 25 s"
fi

# --- systemctl reload with a good file --------------------------------------
write_conf "$good" ",
          { name = \"y\"; listen = \"127.0.0.1:$PORT_RULE2\"; peer = \"b\";
            export = \"x\"; }"
if systemctl reload smcproxyd; then
	ok "systemctl reload, good file: succeeds"
else
	bad "systemctl reload of a good file failed (exit $?)"
fi
journal_has "reloaded $conf: 2 rules" || bad "no 'reloaded' line in the journal"
journal_event 99eb0c885a0c4c2da9e65459e167112b "MESSAGE=reloaded $conf: 2 rules.*" ||
	bad "the 'reloaded' line has no MESSAGE_ID"
st=$(status_text)
case $st in
"2 rules, 0 exports, 1 peer, 1 link group") ok "StatusText '$st'" ;;
*) bad "StatusText after the reload is '$st'" ;;
esac
if "$XFER" client -c "127.0.0.1:$PORT_RULE2" -n 2 -b 256K -T 60 \
	>"$RXE_OUT/xfer.out" 2>&1; then
	ok "the reloaded rule serves"
else
	bad "the reloaded rule: $(tail -3 "$RXE_OUT/xfer.out")"
fi

# --- systemctl reload with a bad file ---------------------------------------
write_conf 'name = "a"; workers = 1; shutdown_timeout = 99999;'
if systemctl reload smcproxyd; then
	bad "systemctl reload of a bad file succeeded"
else
	ok "systemctl reload, bad file: exit $?"
fi
if journal_has "$conf:1: smcproxyd.shutdown_timeout: 99999 is out of range"
then
	ok "the journal has the file:line reason"
else
	bad "no file:line reason in the journal"
fi
journal_event 39e84c19d16548c58b3f0b97272411f7 'MESSAGE=reload: .* has errors.*' ||
	bad "no reload_failed event in the journal"
expect_is "is-active after it" "$(systemctl is-active smcproxyd)" active
st=$(status_text)
case $st in
"reload failed: "*) ok "StatusText '$st'" ;;
*) bad "StatusText after the refused reload is '$st'" ;;
esac
"$CTL" -s "$R/a.sock" stats reset >/dev/null || bad "stats reset on a"
xfer_ok "still serving over RDMA" -n 2 -b 256K -T 60
expect_stat a conns_rdma 2
write_conf "$good"

# --- systemctl stop drains ---------------------------------------------------
# Streams of 10 s: still running when the stop comes, however slowly the
# two opened over RDMA (the journal's "draining" line says they were).
# TimeoutStopSec=4 here: the drain outlives it only because the daemon
# extends it (EXTEND_TIMEOUT_USEC= of shutdown_timeout + 30 s).
dropin=/run/systemd/system/smcproxyd.service.d
mkdir -p "$dropin" &&
	printf '[Service]\nTimeoutStopSec=4\n' >"$dropin/short-stop.conf" &&
	systemctl daemon-reload || rxe_die "cannot add the drop-in"
expect_is TimeoutStopUSec "$(systemctl show -p TimeoutStopUSec --value smcproxyd)" 4s
"$CTL" -s "$R/a.sock" stats reset >/dev/null || bad "stats reset on a"
"$XFER" client -c "127.0.0.1:$PORT_RULE" -m stream -t 10 --verify -n 2 -T 60 \
	>"$RXE_OUT/stream.out" 2>&1 &
streamer=$!
rxe_wait 30 stat_is a conns_rdma 2 ||
	bad "the streams did not open over RDMA"
t0=$(rxe_now)
systemctl stop smcproxyd || bad "systemctl stop failed (exit $?)"
took=$(awk -v a="$t0" -v b="$(rxe_now)" 'BEGIN { printf "%.1f", b - a }')
if wait "$streamer"; then
	ok "the transfer running at the stop was drained (stop took $took s)"
else
	bad "the transfer running at the stop: $(tail -3 "$RXE_OUT/stream.out")"
fi
expect_is "is-active after stop" "$(systemctl is-active smcproxyd)" inactive
expect_is Result "$(systemctl show -p Result --value smcproxyd)" success
expect_is "exit status" \
	"$(systemctl show -p ExecMainStatus --value smcproxyd)" 0
journal_has 'stopping; open connections get 30 s to finish' ||
	bad "no 'stopping' line in the journal"
journal_has 'worker 0: draining 2 connections' ||
	bad "the stop found no connection to drain"
journal_has '(^|: )stopped$' || bad "no 'stopped' line in the journal"
journal_has 'Started smcproxyd' || bad "no 'Started' line in the journal"
journal_has 'Stopped smcproxyd' || bad "no 'Stopped' line in the journal"
ok "the journal has the start, reload and stop lines"
if awk -v t="$took" 'BEGIN { exit !(t > 4) }'; then
	ok "the drain outlived TimeoutStopSec=4 ($took s)"
else
	bad "the stop took $took s: the streams were not draining past 4 s"
fi
rm -f "$dropin/short-stop.conf"

# --- the control: no DeviceAllow=, no verbs device, no RDMA ----------------
mkdir -p "$dropin" &&
	printf '[Service]\nDeviceAllow=\n' >"$dropin/no-verbs.conf" &&
	systemctl daemon-reload || rxe_die "cannot add the drop-in"
if systemctl start smcproxyd; then
	xfer_ok "without DeviceAllow=: a connection still verifies" \
		-n 1 -b 64K -T 60
	expect_stat a conns_rdma 0
	expect_stat a conns_fallback 1
	if journal_has 'ibv_open_device: Operation not permitted'; then
		ok "without DeviceAllow=: the journal says the device was refused"
	else
		bad "without DeviceAllow=: no refused ibv_open_device in the journal"
	fi
	systemctl stop smcproxyd || bad "systemctl stop failed (exit $?)"
else
	bad "systemctl start with DeviceAllow= emptied failed"
fi
rm -rf "$dropin"
systemctl daemon-reload

# --- control_gid, and a control_socket of the file's choosing ---------------
groupadd -r smcops && useradd -r -M -g nogroup -G smcops -s /bin/sh smcop ||
	rxe_die "cannot add group smcops and user smcop"
gid=$(getent group smcops | cut -d: -f3)
sock=/run/smcproxyd/ops.sock
write_conf "name = \"a\"; workers = 1; control_socket = \"$sock\"; control_gid = $gid;"
if systemctl start smcproxyd; then
	if journal_has "warning: smcproxyd.control_gid: uid $svc_uid is not in group $gid"; then
		ok "control_gid without SupplementaryGroups=: -n warns"
	else
		bad "control_gid without SupplementaryGroups=: no warning in the journal"
	fi
	expect_is "the socket's group without SupplementaryGroups=" \
		"$(stat -c %G "$sock")" smcproxyd
	systemctl stop smcproxyd
else
	bad "systemctl start with control_gid failed"
fi
mkdir -p "$dropin" &&
	printf '[Service]\nSupplementaryGroups=smcops\n' >"$dropin/ops.conf" &&
	systemctl daemon-reload || rxe_die "cannot add the drop-in"
if systemctl start smcproxyd; then
	expect_is "the socket with SupplementaryGroups=smcops" \
		"$(stat -c '%G %a' "$sock")" "smcops 660"
	if runuser -u smcop -- "$CTL" -s "$sock" stats reset >"$R/op.out" 2>&1; then
		ok "user smcop, in control_gid's group, runs stats reset"
	else
		bad "user smcop cannot run stats reset: $(cat "$R/op.out")"
	fi
	if systemctl reload smcproxyd; then
		ok "systemctl reload through the control_socket the file names"
	else
		bad "systemctl reload with control_socket = $sock failed"
	fi
	systemctl stop smcproxyd || bad "systemctl stop failed (exit $?)"
else
	bad "systemctl start with SupplementaryGroups=smcops failed"
fi
rm -rf "$dropin"
systemctl daemon-reload
write_conf "$good"

# --- smcproxyd@two: a second daemon from the template ----------------------
cat >"$R/two.conf" <<EOF
smcproxyd: { name = "a"; workers = 1;
             control_socket = "/run/smcproxyd-two/control.sock"; };
peers = ( { name = "b"; address = "$RXE_IP0:$PORT_B"; key_file = "$etc/ab.key"; } );
rules = ( { name = "t"; listen = "127.0.0.1:$PORT_RULE3"; peer = "b";
            export = "x"; } );
rdma: { devices = [ "$RXE_DEV0" ]; };
EOF
install -m 0640 -o root -g smcproxyd "$R/two.conf" "$etc/two.conf" ||
	rxe_die "cannot write $etc/two.conf"
if systemctl start smcproxyd && systemctl start smcproxyd@two; then
	ok "smcproxyd and smcproxyd@two both start"
	expect_is "smcproxyd@two StatusText" \
		"$(systemctl show -p StatusText --value smcproxyd@two)" \
		"1 rule, 0 exports, 1 peer, 0 link groups"
	if systemctl reload smcproxyd@two; then
		ok "systemctl reload smcproxyd@two (its own socket)"
	else
		bad "systemctl reload smcproxyd@two failed"
	fi
	if "$XFER" client -c "127.0.0.1:$PORT_RULE3" -n 2 -b 256K -T 60 \
		>"$RXE_OUT/xfer.out" 2>&1; then
		ok "smcproxyd@two's rule serves"
	else
		bad "smcproxyd@two's rule: $(tail -3 "$RXE_OUT/xfer.out")"
	fi
	systemctl stop smcproxyd@two || bad "systemctl stop smcproxyd@two failed"
	[ -d /run/smcproxyd-two ] && bad "/run/smcproxyd-two is left behind"
	if [ -S /run/smcproxyd/control.sock ] &&
		[ "$(systemctl is-active smcproxyd)" = active ]; then
		ok "smcproxyd serves on after smcproxyd@two stopped"
	else
		bad "stopping smcproxyd@two took smcproxyd's socket or service"
	fi
else
	bad "starting smcproxyd and smcproxyd@two failed"
	journalctl -u 'smcproxyd@two' --no-pager -o cat | tail -n 20
fi
systemctl stop smcproxyd smcproxyd@two 2>/dev/null

# --- systemctl restart refuses no one ---------------------------------------
# Four client loops (one connection after another, 64 KiB each way,
# verified) and two streams of 8 s run through the unit's daemon across
# "systemctl restart smcproxyd".  The old process drains the streams; its
# listening sockets (each of 2 workers' for the rule, and metrics_listen's)
# wait in systemd's file descriptor store meanwhile, so the loops'
# connections queue there and the new process serves them.  Without the
# store every connection tried during the drain is refused.
write_conf "name = \"a\"; workers = 2; shutdown_timeout = 30; metrics_listen = \"127.0.0.1:$PORT_MET\";"
if systemctl start smcproxyd; then
	xfer_ok "restart: first connection (the link group comes up)" \
		-n 1 -b 64K -T 60
	pid0=$(systemctl show -p MainPID --value smcproxyd)
	rxe_loops_start 4
	"$XFER" client -c "127.0.0.1:$PORT_RULE" -m stream -t 8 --verify -n 2 \
		-T 60 >"$RXE_OUT/restart-stream.out" 2>&1 &
	streamer=$!
	sleep 2
	t0=$(rxe_now)
	systemctl restart smcproxyd || bad "systemctl restart failed (exit $?)"
	t1=$(rxe_now)
	sleep 3
	rxe_loops_stop restart
	if wait "$streamer"; then
		ok "restart: the streams open at the restart were drained, not reset"
	else
		bad "restart: the streams open at the restart: $(tail -3 "$RXE_OUT/restart-stream.out")"
	fi
	n=$loops_n
	failed=$loops_failed
	# connections that began while the old process drained or the new
	# one started: they waited in the stored sockets' queues
	gap=$(rxe_loops_begun "$t0" "$t1")
	echo "# restart took $(awk -v a="$t0" -v b="$t1" \
		'BEGIN { printf "%.1f", b - a }') s; $n connections, $gap begun during it, $failed failed"
	if [ "$failed" -eq 0 ] && [ "$gap" -ge 1 ]; then
		ok "restart: $n connections, $gap of them begun during the restart, none refused or reset, all verified"
	elif [ "$failed" -eq 0 ]; then
		bad "restart: no connection began during the restart ($n in all)"
	else
		bad "restart: $failed of $n connections failed ($gap begun during the restart): $(head -c 600 "$RXE_OUT/loop-failures.txt" 2>/dev/null)"
	fi
	pid1=$(systemctl show -p MainPID --value smcproxyd)
	[ "$pid1" != "$pid0" ] || bad "restart: MainPID is still $pid0"
	if journal_has '3 listening sockets passed by the service manager'; then
		ok "restart: the new process took the 3 stored sockets"
	else
		bad "restart: the new process was passed no stored socket"
	fi
	if "$CTL" -s "$R/a.sock" -j stats >/dev/null &&
		python3 -c 'import sys, urllib.request
r = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=10)
sys.exit(0 if b"smcproxyd_" in r.read() else 1)' "$PORT_MET"; then
		ok "restart: metrics served on the stored socket"
	else
		bad "restart: no metrics on 127.0.0.1:$PORT_MET after the restart"
	fi
	systemctl stop smcproxyd || bad "systemctl stop failed (exit $?)"
else
	bad "systemctl start for the restart check failed"
fi
write_conf "$good"

# --- systemd-analyze security ------------------------------------------------
# the unit as shipped: without the sanitizer build's drop-in
rm -rf /etc/systemd/system/smcproxyd.service.d /etc/systemd/system/smcproxyd@.service.d
systemctl daemon-reload
systemd-analyze security --no-pager smcproxyd >"$RXE_OUT/security.txt" 2>&1
score=$(sed -n 's/.*Overall exposure level for smcproxyd.service: \([0-9.]*\).*/\1/p' \
	"$RXE_OUT/security.txt")
echo "# systemd-analyze security smcproxyd: $score"
if [ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s <= 2.5) }'; then
	ok "systemd-analyze security: exposure $score (at most 2.5)"
else
	bad "systemd-analyze security: exposure '$score', want at most 2.5: $(tail -3 "$RXE_OUT/security.txt")"
fi

journalctl -u smcproxyd --no-pager -o short-monotonic \
	>"$RXE_OUT/smcproxyd.journal.log" 2>&1
daemon_stop b || bad "daemon b exited with status $?"
kill "$server" 2>/dev/null
wait "$server" 2>/dev/null
exit $fail
