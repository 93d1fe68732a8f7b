# SPDX-License-Identifier: BSD-2-Clause
# Shared helpers for the system tests: each test sources this file, calls
# smc_init, writes its configs, starts real daemons (A: rule side, B: export
# side) and a real server, runs its scenario and exits 0 (pass), 1 (fail) or
# 77 (skip: a program is missing; a failure instead when CI=true).
#
# Every process started here is recorded and stopped by the EXIT trap, also
# on failure; on failure the daemons' and servers' logs are printed.
#
# Environment: SMCPROXYD, SMCPROXYCTL, XFER override the programs (default:
# the build tree, which is the current directory under "make check");
# SMC_KEEP=1 keeps the temporary directory; SMC_WORKERS sets workers.

set -u

SMC_BUILDDIR=${SMC_BUILDDIR:-$PWD}
SMCPROXYD=${SMCPROXYD:-$SMC_BUILDDIR/src/smcproxyd}
SMCPROXYCTL=${SMCPROXYCTL:-$SMC_BUILDDIR/src/smcproxyctl}
XFER=${XFER:-$SMC_BUILDDIR/tests/tools/xfer}
SMC_WORKERS=${SMC_WORKERS:-2}

T=
SMC_NAME=
SMC_PIDS=
SMC_DAEMONS=
SMC_LOGS=
SMC_FAILED=0

smc_log()
{
	printf '%s: %s\n' "$SMC_NAME" "$*" >&2
}

# Fail the test now; the EXIT trap prints the logs and stops everything.
fail()
{
	printf '%s: FAIL: %s\n' "$SMC_NAME" "$*" >&2
	SMC_FAILED=1
	exit 1
}

skip()
{
	if [ "${CI:-}" = true ]; then
		fail "$* (a skip is a failure when CI=true)"
	fi
	printf '%s: SKIP: %s\n' "$SMC_NAME" "$*"
	exit 77
}

# need PROGRAM...: a program from PATH or an absolute path; skip without it.
need()
{
	local p

	for p in "$@"; do
		case $p in
		/*) [ -x "$p" ] || skip "$p not built or not found" ;;
		*) command -v "$p" >/dev/null 2>&1 ||
			skip "$p not installed" ;;
		esac
	done
}

smc_dump_logs()
{
	local f

	for f in $SMC_LOGS; do
		[ -f "$f" ] || continue
		printf '\n===== %s (last 150 lines) =====\n' "${f##*/}" >&2
		tail -n 150 "$f" >&2
	done
}

# Stop what we started: TERM, then KILL after 5 s.  Only our own pids.
smc_stop_all()
{
	local pid= i

	for pid in $SMC_PIDS; do
		kill -TERM "$pid" 2>/dev/null
	done
	for i in $(seq 50); do
		for pid in $SMC_PIDS; do
			kill -0 "$pid" 2>/dev/null && break
			pid=
		done
		[ -z "$pid" ] && break
		sleep 0.1
	done
	for pid in $SMC_PIDS; do
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	SMC_PIDS=
}

# After a passing test: every daemon still running must stop on SIGTERM
# with status 0, and no daemon log may hold a sanitizer report.
smc_check_daemons()
{
	local d name pid i st bad=0

	for d in $SMC_DAEMONS; do
		name=${d%%:*}
		pid=${d#*:}
		kill -0 "$pid" 2>/dev/null || continue
		kill -TERM "$pid"
		for i in $(seq 150); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			printf '%s: FAIL: daemon %s still runs 15 s after SIGTERM\n' \
				"$SMC_NAME" "$name" >&2
			bad=1
			continue
		fi
		wait "$pid"
		st=$?
		untrack "$pid"
		if [ "$st" -ne 0 ]; then
			printf '%s: FAIL: daemon %s exited with status %s\n' \
				"$SMC_NAME" "$name" "$st" >&2
			bad=1
		fi
	done
	for d in $SMC_DAEMONS; do
		name=${d%%:*}
		if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' \
			"$T/$name.log" 2>/dev/null; then
			printf '%s: FAIL: sanitizer report in %s.log\n' \
				"$SMC_NAME" "$name" >&2
			bad=1
		fi
	done
	return $bad
}

smc_exit()
{
	local rc=$?

	trap - EXIT INT TERM HUP
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
		SMC_FAILED=1
	fi
	if [ "$rc" -eq 0 ] && ! smc_check_daemons; then
		SMC_FAILED=1
		rc=1
	fi
	smc_stop_all
	free_ports_release
	smc_cgroup_leave
	if [ "$SMC_FAILED" -ne 0 ]; then
		smc_dump_logs
		[ "$rc" -eq 0 ] && rc=1
	fi
	if [ -n "$T" ] && [ -d "$T" ]; then
		if [ "${SMC_KEEP:-0}" = 1 ] || [ "$SMC_FAILED" -ne 0 ]; then
			printf '%s: files kept in %s\n' "$SMC_NAME" "$T" >&2
		else
			rm -rf "$T"
		fi
	fi
	# its time, in its log: scripts/test lists the slowest
	printf '%s: took %s s\n' "$SMC_NAME" "$((SECONDS - SMC_START))" >&2
	exit "$rc"
}

# smc_cgroup: this test, and all it starts from now on, in a cgroup v2 of
# its own (left and removed at exit), so that the SMC-R option's program
# a daemon attaches acts on the test's sockets only: a daemon in the
# cgroup v2 root refuses to attach there (kernel_smc.bpf_root_cgroup),
# and the host's other sockets are not ours to touch.
smc_cgroup()
{
	local mnt

	mnt=$(awk '/ - cgroup2 / && $4 == "/" { print $5; exit }' \
		/proc/self/mountinfo)
	[ -n "$mnt" ] || fail "no cgroup v2 mounted for the option's program"
	SMC_CGROUP=$mnt/smcproxyd-test.$$
	mkdir -p "$SMC_CGROUP" && echo $$ >"$SMC_CGROUP/cgroup.procs" ||
		fail "cannot put the test in a cgroup of its own ($SMC_CGROUP)"
	smc_log "in cgroup $SMC_CGROUP"
}

smc_cgroup_leave()
{
	[ -n "${SMC_CGROUP:-}" ] || return 0
	echo $$ >"${SMC_CGROUP%/*}/cgroup.procs" 2>/dev/null
	# the cgroups a test made below its own (empty by now)
	find "$SMC_CGROUP" -mindepth 1 -depth -type d -exec rmdir {} + \
		2>/dev/null
	rmdir "$SMC_CGROUP" 2>/dev/null ||
		smc_log "cgroup $SMC_CGROUP left behind: $(cat "$SMC_CGROUP/cgroup.procs" 2>/dev/null | tr '\n' ' ')"
}

# smc_init: temp dir, traps, the programs every test needs.
smc_init()
{
	SMC_NAME=$(basename "$0" .sh)
	SMC_START=$SECONDS
	trap smc_exit EXIT
	trap 'exit 1' INT TERM HUP
	T=$(mktemp -d "${TMPDIR:-/tmp}/smc-$SMC_NAME.XXXXXX") ||
		fail "mktemp"
	need "$SMCPROXYD" "$XFER"
	smc_log "temp dir $T"
}

# track PID LOGFILE: stop PID at exit, print LOGFILE on failure.
track()
{
	SMC_PIDS="$SMC_PIDS $1"
	[ -n "${2:-}" ] && SMC_LOGS="$SMC_LOGS $2"
}

untrack()
{
	local p out=

	for p in $SMC_PIDS; do
		[ "$p" = "$1" ] || out="$out $p"
	done
	SMC_PIDS=$out
}

# Ports handed out by free_ports, one file per port holding the pid of
# the test that has it, so that tests running side by side never get the
# same port (the kernel's "free now" is forgotten once the probe closes).
SMC_PORT_CLAIMS=${SMC_PORT_CLAIMS:-${TMPDIR:-/tmp}/smcproxyd-test-ports}

# free_ports N: N distinct TCP ports the kernel considers free now and no
# other running test has been given; they are this test's until it exits.
free_ports()
{
	if command -v python3 >/dev/null 2>&1; then
		python3 - "$1" "$$" "$SMC_PORT_CLAIMS" <<'EOF'
import os, socket, sys

n, owner, where = int(sys.argv[1]), sys.argv[2], sys.argv[3]
os.makedirs(where, exist_ok=True)

def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True

def claim(port):
    path = os.path.join(where, str(port))
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        try:
            with open(path) as f:
                pid = int(f.read().strip() or 0)
        except (OSError, ValueError):
            pid = 0
        if pid > 0 and alive(pid):
            return False
        # its test died without giving it back
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    os.write(fd, owner.encode())
    os.close(fd)
    return True

socks, ports = [], []
while len(ports) < n:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)  # held until all are chosen: distinct
    port = s.getsockname()[1]
    if claim(port):
        ports.append(port)
print(" ".join(str(p) for p in ports))
EOF
		return
	fi
	# No python3: a base from our pid, skipping ports that are in use.
	local n=$1 p=$((20000 + ($$ * 7) % 30000)) out=
	while [ "$n" -gt 0 ]; do
		if ! port_listening "$p"; then
			out="$out $p"
			n=$((n - 1))
		fi
		p=$((p + 1))
	done
	echo $out
}

# free_ports_release: give back the ports free_ports handed this test.
free_ports_release()
{
	[ -d "$SMC_PORT_CLAIMS" ] || return 0
	grep -lx "$$" "$SMC_PORT_CLAIMS"/* 2>/dev/null | xargs -r rm -f
}

# port_listening PORT: true when something listens on it (no connection
# is made, so no proxied session is started just to probe).
port_listening()
{
	local hex

	hex=$(printf '%04X' "$1")
	awk -v h=":$hex" 'NR > 1 && $4 == "0A" &&
		substr($2, length($2) - 4) == h { found = 1 }
		END { exit !found }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# wait_listen PORT [SECONDS] [PID]: until PORT listens; fail if PID dies.
wait_listen()
{
	local port=$1 secs=${2:-10} pid=${3:-} i

	for i in $(seq $((secs * 20))); do
		port_listening "$port" && return 0
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			fail "process $pid exited before listening on $port"
		fi
		sleep 0.05
	done
	fail "nothing listens on port $port after ${secs}s"
}

# wait_gone PORT [SECONDS]: until nothing listens on PORT.
wait_not_listening()
{
	local port=$1 secs=${2:-5} i

	for i in $(seq $((secs * 20))); do
		port_listening "$port" || return 0
		sleep 0.05
	done
	return 1
}

# start_daemon NAME CONF: run smcproxyd in the foreground, log to
# $T/NAME.log; sets NAME_pid (e.g. a_pid).
start_daemon()
{
	local name=$1 conf=$2 pid

	"$SMCPROXYD" -n -c "$conf" >"$T/$name.check" 2>&1 ||
		{ cat "$T/$name.check" >&2; fail "smcproxyd -n rejects $conf"; }
	"$SMCPROXYD" -d -c "$conf" >>"$T/$name.log" 2>&1 &
	pid=$!
	track "$pid" "$T/$name.log"
	SMC_DAEMONS="$SMC_DAEMONS $name:$pid"
	eval "${name}_pid=$pid"
	smc_log "started daemon $name (pid $pid) with $conf"
}

# stop_daemon NAME [SECONDS]: SIGTERM and wait; sets stop_rc.
stop_daemon()
{
	local name=$1 secs=${2:-10} pid i

	eval "pid=\${${name}_pid}"
	kill -TERM "$pid" 2>/dev/null
	for i in $(seq $((secs * 10))); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$pid" 2>/dev/null && fail "daemon $name still runs ${secs}s after SIGTERM"
	wait "$pid"
	stop_rc=$?
	untrack "$pid"
}

# notify_listen SOCK LOG: receive sd_notify datagrams on SOCK the way
# systemd does, one line each in LOG with the receiver's CLOCK_MONOTONIC
# in microseconds first; returns once SOCK exists (a daemon started before
# that would lose its READY=1), waiting as long as a loaded machine takes
# to start python.
notify_listen()
{
	python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
while True:
    msg = s.recv(4096).decode()
    print("%d %s" % (time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000,
                     msg.replace("\n", "|")), flush=True)' "$1" >"$2" 2>&1 &
	notify_pid=$!
	track "$notify_pid" "$2"
	local i
	for i in $(seq 600); do
		[ -S "$1" ] && return 0
		kill -0 "$notify_pid" 2>/dev/null || break
		sleep 0.05
	done
	fail "no sd_notify receiver on $1: $(cat "$2")"
}

# hold_port PORT: keep PORT bound but not listening (a connection to it is
# refused), so that no test running beside this one takes it while it is
# meant to be down; release_port gives it back.
hold_port()
{
	python3 -c 'import socket, sys, time
s = socket.socket()
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    # the last owner of the port left connections in TIME_WAIT
    s.close()
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", int(sys.argv[1])))
print("held", flush=True)
time.sleep(3600)' "$1" >"$T/hold-$1.log" 2>&1 &
	hold_pid=$!
	track "$hold_pid"
	local i
	for i in $(seq 100); do
		grep -q held "$T/hold-$1.log" && return 0
		kill -0 "$hold_pid" 2>/dev/null || break
		sleep 0.05
	done
	fail "could not hold port $1: $(cat "$T/hold-$1.log")"
}

release_port()
{
	kill "$hold_pid" 2>/dev/null
	wait "$hold_pid" 2>/dev/null
	untrack "$hold_pid"
}

# start_server PORT: the xfer server on 127.0.0.1:PORT; sets server_pid.
start_server()
{
	"$XFER" server -l "127.0.0.1:$1" >>"$T/server-$1.log" 2>&1 &
	server_pid=$!
	track "$server_pid" "$T/server-$1.log"
	wait_listen "$1" 10 "$server_pid"
}

# --- configs -------------------------------------------------------------

# Port variables every pair test uses.
pair_ports()
{
	set -- $(free_ports 5)
	PORT_RULE=$1	# A's rule listener: clients connect here
	PORT_APEER=$2	# A's peer port
	PORT_BPEER=$3	# B's peer port
	PORT_TARGET=$4	# the real server behind B's export
	PORT_SPARE=$5
}

# conf_a FILE [EXPORT] [PEER_AUTH] [EXTRA_RULES]: the rule side.
# PEER_AUTH is the peer's auth setting, e.g. 'key_file = "/k";'.
conf_a()
{
	local file=$1 export=${2:-x} auth=${3:-insecure = true;} extra=${4:-}

	cat >"$file" <<EOF
smcproxyd: {
	name = "a";
	control_socket = "$T/a.sock";
	workers = $SMC_WORKERS;
	log_level = "${SMC_LOG_LEVEL:-info}";
	shutdown_timeout = ${SMC_SHUTDOWN_TIMEOUT:-5};
};
peer_listen: { address = "127.0.0.1:$PORT_APEER"; };
peers = (
	{ name = "b"; address = "127.0.0.1:$PORT_BPEER"; $auth }
);
rules = (
	{ name = "x"; listen = "127.0.0.1:$PORT_RULE"; peer = "b"; export = "$export"; }$extra
);
EOF
}

# conf_b FILE [ALLOWED_PEERS] [PEER_AUTH] [TARGET_PORT]: the export side.
conf_b()
{
	local file=$1 allowed=${2:-\"a\"} auth=${3:-insecure = true;}
	local target=${4:-$PORT_TARGET}

	cat >"$file" <<EOF
smcproxyd: {
	name = "b";
	control_socket = "$T/b.sock";
	workers = $SMC_WORKERS;
	log_level = "${SMC_LOG_LEVEL:-info}";
	shutdown_timeout = ${SMC_SHUTDOWN_TIMEOUT:-5};
};
peer_listen: { address = "127.0.0.1:$PORT_BPEER"; };
peers = (
	{ name = "a"; address = "127.0.0.1:$PORT_APEER"; $auth }
);
exports = (
	{ name = "x"; target = "127.0.0.1:$target"; peers = [ $allowed ]; connect_timeout = 5; }
);
EOF
}

# start_pair: configs must be in $T/a.conf and $T/b.conf.
start_pair()
{
	start_daemon b "$T/b.conf"
	start_daemon a "$T/a.conf"
	wait_listen "$PORT_BPEER" 10 "$b_pid"
	wait_listen "$PORT_RULE" 10 "$a_pid"
}

# xfer_client ARGS...: a client through the pair; output in $T/client.log.
xfer_client()
{
	local rc

	smc_log "xfer client -c 127.0.0.1:$PORT_RULE $*"
	"$XFER" client -c "127.0.0.1:$PORT_RULE" -T 120 "$@" \
		>"$T/client.out" 2>&1
	rc=$?
	cat "$T/client.out" >>"$T/client.log"
	SMC_LOGS="${SMC_LOGS% $T/client.log} $T/client.log"
	tail -n 3 "$T/client.out"
	return $rc
}

# --- stats and close reasons -------------------------------------------

# ctl NAME ARGS...: smcproxyctl on daemon NAME's control socket.
ctl()
{
	local name=$1

	shift
	"$SMCPROXYCTL" -s "$T/$name.sock" "$@"
}

# stat_rose NAME COUNTER BEFORE WANT: daemon NAME's counter rose by WANT
# since it was BEFORE
stat_rose()
{
	local v

	v=$(stat_get "$1" "$2") || fail "$1: no $2"
	[ $((v - $3)) = "$4" ] || fail "$1: $2 rose by $((v - $3)), want $4"
}

# echo_roundtrip HOST PORT BYTES: BYTES random bytes sent to an echo
# server at HOST:PORT come back whole, and getpeername says HOST:PORT
# (IPv4)
echo_roundtrip()
{
	python3 - "$@" <<'PY'
import os, socket, sys
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = os.urandom(n)
s = socket.create_connection((host, port), timeout=20)
if s.getpeername() != (host, port):
    sys.exit("getpeername says %r" % (s.getpeername(),))
s.sendall(data)
s.shutdown(socket.SHUT_WR)
got = bytearray()
while True:
    b = s.recv(65536)
    if not b:
        break
    got += b
sys.exit(0 if bytes(got) == data else "the bytes did not come back")
PY
}

# stat_get NAME COUNTER: the counter from "smcproxyctl -j stats" (its
# data.stats object, or data itself), or
# nothing when smcproxyctl is missing or does not answer.
stat_get()
{
	local name=$1 key=$2 out

	[ -x "$SMCPROXYCTL" ] || return 1
	out=$(ctl "$name" -j stats 2>/dev/null) || return 1
	if command -v python3 >/dev/null 2>&1; then
		printf '%s' "$out" | python3 -c '
import json, sys
r = json.load(sys.stdin)
d = r.get("data", {}) if r.get("ok") else {}
v = d.get("stats", {}).get(sys.argv[1], d.get(sys.argv[1]))
if not isinstance(v, int):
    sys.exit(1)
print(v)' "$key"
	else
		printf '%s' "$out" | grep -o "\"$key\": *[0-9]*" | head -n 1 |
			grep -o '[0-9]*$'
	fi
}

# reason_count NAME REASON: closes counted for REASON so far.  From
# smcproxyctl when it answers, else from the connection log's lines
# "conn 0x1f rule=x ... close=REASON".  The method is fixed per daemon at
# its first use so that before/after counts compare like with like.
reason_count()
{
	local name=$1 reason=$2 how v

	eval "how=\${reason_how_$name:-}"
	if [ -z "$how" ]; then
		if stat_get "$name" "close_$reason" >/dev/null; then
			how=ctl
		else
			how=log
			smc_log "smcproxyctl not usable for $name: checking its log"
		fi
		eval "reason_how_$name=$how"
	fi
	if [ "$how" = ctl ]; then
		v=$(stat_get "$name" "close_$reason") && { echo "$v"; return; }
	fi
	grep -c " close=$reason\$" "$T/$name.log" 2>/dev/null || true
}

# expect_reason NAME REASON BEFORE [SECONDS]: the count must exceed BEFORE.
expect_reason()
{
	local name=$1 reason=$2 before=$3 secs=${4:-5} i n

	for i in $(seq $((secs * 10))); do
		n=$(reason_count "$name" "$reason")
		if [ "${n:-0}" -gt "$before" ]; then
			smc_log "daemon $name counted close reason $reason ($before -> $n)"
			return 0
		fi
		sleep 0.1
	done
	fail "daemon $name did not count close reason $reason (still ${n:-0})"
}

# keyfile PATH: 32 random bytes, mode 0600.
keyfile()
{
	(umask 077 && head -c 32 /dev/urandom >"$1") || fail "keyfile $1"
	chmod 600 "$1"
}
