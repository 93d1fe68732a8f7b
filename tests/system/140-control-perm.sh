#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Control socket permissions, with smcproxyctl run as another uid (65534):
# read-only commands work for anyone who can open the socket, while
# "stats reset", "kill conn", "reload", "log-level LEVEL" and "check",
# "check smc", "check export" (they connect out, may set a link group
# up) are refused
# (status 1, "permission denied ... (you are uid 65534)") and change
# nothing; traffic
# is not disturbed.  control_uid (set by a reload) and control_gid (primary
# or supplementary group, SO_PEERGROUPS) grant them; a socket of mode 0660
# keeps other users out (status 2, the message names the socket).
. "$(dirname "$0")/lib.sh"
smc_init
need python3 "$SMCPROXYCTL" setpriv
[ "$(id -u)" = 0 ] || skip "needs root to run smcproxyctl as another uid"

. "$(dirname "$0")/lib-control.sh"

OTHER=65534
GROUP=65533
# The program and the temporary directory must be usable by uid OTHER.
chmod 755 "$T"
cp "$SMCPROXYCTL" "$T/smcproxyctl"
chmod 755 "$T/smcproxyctl"

# as_other [-g GID] [-G GROUPS] ARGS...: smcproxyctl as uid OTHER, stdout
# in $T/out, stderr in $T/err; sets rc.
as_other()
{
	local gid=$OTHER groups=

	while :; do
		case $1 in
		-g) gid=$2; shift 2 ;;
		-G) groups=$2; shift 2 ;;
		*) break ;;
		esac
	done
	if [ -n "$groups" ]; then
		setpriv --reuid "$OTHER" --regid "$gid" --groups "$groups" \
			"$T/smcproxyctl" "$@" >"$T/out" 2>"$T/err"
	else
		setpriv --reuid "$OTHER" --regid "$gid" --clear-groups \
			"$T/smcproxyctl" "$@" >"$T/out" 2>"$T/err"
	fi
	rc=$?
}

# denied CMD...: CMD as OTHER on a's socket is refused, table and -j.
denied()
{
	local msg="permission denied: \"$1${2:+ $2}\" needs root, the daemon's user, or control_uid/control_gid (you are uid $OTHER)"
	local cmd="$1${2:+ $2}"

	as_other -s "$T/a.sock" "$@"
	[ "$rc" -eq 1 ] || fail "$* as uid $OTHER: status $rc, want 1: $(cat "$T/err")"
	[ "$(cat "$T/err")" = "smcproxyctl: $cmd: $msg" ] ||
		fail "$* as uid $OTHER said: $(cat "$T/err")"
	as_other -s "$T/a.sock" -j "$@"
	[ "$rc" -eq 1 ] || fail "-j $* as uid $OTHER: status $rc, want 1"
	pycheck "-j $* as uid $OTHER" "$T/out" "$msg" <<'EOF'
eq(load(A[0]), {"v": 1, "ok": False, "error": A[1]}, "reply")
EOF
}

pair_ports
conf_a "$T/a.conf"
conf_b "$T/b.conf"
sed -i '/control_socket = /a\	control_mode = 0666;' "$T/a.conf"
sed -i "/control_socket = /a\\	control_gid = $GROUP;" "$T/b.conf"
cp "$T/a.conf" "$T/a.conf.good"
start_server "$PORT_TARGET"
start_pair
[ "$(stat -c '%a %u %g' "$T/a.sock")" = "666 0 0" ] ||
	fail "a.sock: mode/owner $(stat -c '%a %u %g' "$T/a.sock"), want 666 0 0"
[ "$(stat -c '%a %u %g' "$T/b.sock")" = "660 0 $GROUP" ] ||
	fail "b.sock: mode/owner $(stat -c '%a %u %g' "$T/b.sock"), want 660 0 $GROUP"

# An idle connection: its client reports how it ends (reset or EOF).
python3 -c '
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
print(s.getsockname()[1], flush=True)
try:
    s.settimeout(60)
    while s.recv(65536):
        pass
    print("eof")
except ConnectionResetError:
    print("reset")' "$PORT_RULE" >"$T/victim.log" 2>&1 &
victim=$!
track $victim "$T/victim.log"
for i in $(seq 50); do
	[ "$(stat_get b conns_active)" = 1 ] && break
	sleep 0.1
done
[ "$(stat_get b conns_active)" = 1 ] || fail "the idle connection did not open"
ctlj a "$T/conns.json" show conns
id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["data"]["conns"][0]["id"])' "$T/conns.json")

# Traffic that runs through everything below and must verify.
"$XFER" client -c "127.0.0.1:$PORT_RULE" -m stream -t 4 --verify -n 2 -T 60 \
	>"$T/stream.log" 2>&1 &
stream_pid=$!
track "$stream_pid" "$T/stream.log"
seen=
for i in $(seq 50); do
	n=$(stat_get a conns_active)
	seen="$seen $n"
	[ "$n" = 3 ] && break
	sleep 0.1
done
[ "$n" = 3 ] || fail "the stream connections did not open (conns_active:$seen)"

# Read-only commands: fine for uid OTHER.
for cmd in version stats "show rules" "show peers" "show lgrs" "show links" \
	"show conns" schema help; do
	as_other -s "$T/a.sock" $cmd
	[ "$rc" -eq 0 ] && [ -s "$T/out" ] ||
		fail "$cmd as uid $OTHER: status $rc: $(cat "$T/err")"
	as_other -s "$T/a.sock" -j $cmd
	[ "$rc" -eq 0 ] || fail "-j $cmd as uid $OTHER: status $rc: $(cat "$T/err")"
done
as_other -s "$T/a.sock" --prometheus
[ "$rc" -eq 0 ] && grep -q '^smcproxyd_tx_bytes_total ' "$T/out" ||
	fail "--prometheus as uid $OTHER: status $rc: $(cat "$T/err")"

# Admin commands: refused, and without effect.
denied stats reset
denied kill conn "$id"
denied kill conn 0xdead
denied reload
as_other -s "$T/a.sock" check b
[ "$rc" -eq 1 ] && [ "$(cat "$T/err")" = "smcproxyctl: check: permission denied: \"check\" needs root, the daemon's user, or control_uid/control_gid (you are uid $OTHER)" ] ||
	fail "check b as uid $OTHER: status $rc: $(cat "$T/err")"
as_other -s "$T/a.sock" check smc 127.0.0.1:9
[ "$rc" -eq 1 ] && [ "$(cat "$T/err")" = "smcproxyctl: check smc: permission denied: \"check smc\" needs root, the daemon's user, or control_uid/control_gid (you are uid $OTHER)" ] ||
	fail "check smc as uid $OTHER: status $rc: $(cat "$T/err")"
as_other -s "$T/a.sock" check export x
[ "$rc" -eq 1 ] && grep -q 'permission denied: "check export" needs root' "$T/err" ||
	fail "check export as uid $OTHER: status $rc: $(cat "$T/err")"
grep -q 'checked by' "$T/a.log" && fail "a logged a check it refused"
grep -q 'statistics reset by' "$T/a.log" && fail "a logged a reset"
grep -q 'killed by' "$T/a.log" && fail "a logged a kill"
grep -q 'reload requested' "$T/a.log" && fail "a logged a reload"
# log-level: reading it is for anyone, setting it is not
as_other -s "$T/a.sock" log-level
[ "$rc" -eq 0 ] && grep -q '^log level: debug$' "$T/out" ||
	fail "log-level as uid $OTHER: status $rc: $(cat "$T/out" "$T/err")"
as_other -s "$T/a.sock" log-level error
[ "$rc" -eq 1 ] || fail "log-level error as uid $OTHER: status $rc, want 1"
[ "$(cat "$T/err")" = "smcproxyctl: log-level: permission denied: \"log-level\" with an argument needs root, the daemon's user, or control_uid/control_gid (you are uid $OTHER)" ] ||
	fail "log-level error as uid $OTHER said: $(cat "$T/err")"
grep -q 'log level set to' "$T/a.log" && fail "a logged a log level change"
ctlj a "$T/stats.json" stats
pycheck "stats after the refused reset" "$T/stats.json" <<'EOF'
d = load(A[0])["data"]
need(0 <= d["uptime_s"] - d["since_reset_s"] <= 1, "counters were reset: %r" % d)
need(d["stats"]["tx_bytes"] > 0, "tx_bytes is 0")
eq(d["stats"]["close_admin_kill"], 0, "close_admin_kill")
EOF
ctlj a "$T/conns2.json" show conns
grep -qF "\"id\":\"$id\"" "$T/conns2.json" || fail "connection $id is gone"
wait "$stream_pid"
rc=$?
untrack "$stream_pid"
cat "$T/stream.log"
[ "$rc" -eq 0 ] || fail "the transfer was disturbed"

# b's socket (0660, group GROUP): OTHER cannot even connect...
for args in version "stats reset"; do
	as_other -s "$T/b.sock" $args
	[ "$rc" -eq 2 ] || fail "$args on b.sock as uid $OTHER: status $rc, want 2"
	[ "$(cat "$T/err")" = "smcproxyctl: connect $T/b.sock: Permission denied" ] ||
		fail "$args on b.sock as uid $OTHER said: $(cat "$T/err")"
done
# ...but may reset as a member of control_gid, primary or supplementary.
as_other -g "$GROUP" -s "$T/b.sock" stats reset
[ "$rc" -eq 0 ] || fail "stats reset with primary group $GROUP: status $rc: $(cat "$T/err")"
grep -q "statistics reset by uid $OTHER pid" "$T/b.log" ||
	fail "b does not log the reset by uid $OTHER"
as_other -G "$GROUP" -s "$T/b.sock" -j stats reset
[ "$rc" -eq 0 ] && [ "$(cat "$T/out")" = '{"v":1,"ok":true,"data":{"message":"statistics reset: counters restart from zero"}}' ] ||
	fail "stats reset with supplementary group $GROUP: status $rc: $(cat "$T/out" "$T/err")"
[ "$(grep -c "statistics reset by uid $OTHER pid" "$T/b.log")" -eq 2 ] ||
	fail "b did not log two resets by uid $OTHER"

# control_uid through a reload (by root): now OTHER may change state on a.
sed -i "/control_socket = /a\\	control_uid = $OTHER;" "$T/a.conf"
ctl a reload >"$T/reload.out" 2>&1 || fail "reload adding control_uid: $(cat "$T/reload.out")"
as_other -s "$T/a.sock" stats reset
[ "$rc" -eq 0 ] || fail "stats reset as control_uid: status $rc: $(cat "$T/err")"
grep -q "statistics reset by uid $OTHER pid" "$T/a.log" ||
	fail "a does not log the reset by uid $OTHER"
ctlj a "$T/conns.json" show conns
id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["data"]["conns"][0]["id"])' "$T/conns.json")
as_other -s "$T/a.sock" kill conn "$id"
[ "$rc" -eq 0 ] || fail "kill conn as control_uid: status $rc: $(cat "$T/err")"
wait $victim
untrack $victim
[ "$(sed -n 2p "$T/victim.log")" = reset ] || fail "the killed client saw: $(cat "$T/victim.log")"
grep -q "conn $id killed by uid $OTHER pid" "$T/a.log" || fail "a does not log the kill by uid $OTHER"
[ "$(stat_get a close_admin_kill)" = 1 ] || fail "close_admin_kill is not 1"
cp "$T/a.conf.good" "$T/a.conf"
as_other -s "$T/a.sock" reload
[ "$rc" -eq 0 ] || fail "reload as control_uid: status $rc: $(cat "$T/err")"
grep -q "reload requested by uid $OTHER pid" "$T/a.log" || fail "a does not log the reload by uid $OTHER"
# the reload dropped control_uid again
denied stats reset
