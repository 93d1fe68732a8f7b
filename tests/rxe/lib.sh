# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=sh
#
# Helpers for scripts that run inside the Soft-RoCE VM (sourced, POSIX sh).
# The VM's root is the host's, read-only, so programs are found at their
# host paths; $RXE_OUT is writable and comes back to the host, but it is a
# 9p share that cannot hold sockets: put those in $RXE_RUNDIR (tmpfs).
#
#   rxe_setup             rxe0 on veth0 (10.77.0.1/24), rxe1 on veth1
#                         (10.78.0.1/24); idempotent; RXE_MTU sets the veth MTU
#   rxe_gid_index DEV IP  GID index of the RoCE v2 entry for IPv4 IP (sysfs)
#   daemon_start NAME CONF [ARG...]
#                         start src/smcproxyd -c CONF, wait for READY=1;
#                         $RXE_OUT/NAME.log: stderr, NAME.notify: sd_notify
#   daemon_stop NAME      SIGTERM, wait for exit, return its exit status
#   rxe_wait SECONDS CMD...
#                         poll CMD every 0.1 s until it succeeds
#   rxe_run_checks CHECK...
#                         run each check with its own log, status and timeout
#
# These addresses exist only inside the VM: nothing here leaves it.

RXE_DEV0=rxe0
RXE_DEV1=rxe1
RXE_IP0=10.77.0.1
RXE_IP1=10.78.0.1
RXE_OUT=${RXE_OUT:-/tmp}
RXE_RUNDIR=$(mktemp -d /run/rxe.XXXXXX 2>/dev/null || mktemp -d)
: "${abs_top_builddir:=$(pwd)}"
: "${abs_top_srcdir:=$(cd "$(dirname "$0")/../.." 2>/dev/null && pwd)}"
SMCPROXYD=${SMCPROXYD:-$abs_top_builddir/src/smcproxyd}

rxe_log() {
	echo "rxe: $*" >&2
}

rxe_die() {
	rxe_log "$*"
	exit 1
}

# OpenSSL's SHA-256 (xfer's verification) and HMAC (the daemons' peer
# authentication) without its AVX and AVX2 code: QEMU 7.2's TCG, the first
# to emulate AVX2, crashed xfer inside sha256_block_data_order_avx2 on a
# read of 0x40(%rsp) that cannot fault on a real CPU (SEGV at a high
# address, ksmc2.rxe 345, 2026-12-06; README, "Avoided, not rerun").  The
# SSE paths compute the same digests.
OPENSSL_ia32cap="~0x1000000000000000:~0x20"
export OPENSSL_ia32cap

# Seconds since boot with centiseconds, for bounded polling.
rxe_now() {
	cut -d' ' -f1 /proc/uptime
}

# rxe_nap SECONDS: sleep.  busybox's (static) where there is one: under
# TCG its start costs a third of coreutils' (rxe_await naps ten times a
# second, on a VM of one vCPU that a benchmark measures).
if busybox sleep 0 2>/dev/null; then
	rxe_nap() { busybox sleep "$1"; }
else
	rxe_nap() { sleep "$1"; }
fi

# rxe_wait SECONDS CMD...: poll CMD every 0.1 s until it succeeds.
rxe_wait() {
	_deadline=$(awk -v n="$(rxe_now)" -v t="$1" 'BEGIN { print n + t }')
	shift
	until "$@"; do
		if awk -v n="$(rxe_now)" -v d="$_deadline" 'BEGIN { exit !(n > d) }'
		then
			return 1
		fi
		sleep 0.1
	done
}

# The GID as sysfs prints it: ::ffff:10.77.0.1 is
# 0000:0000:0000:0000:0000:ffff:0a4d:0001.
rxe_gid_of_ipv4() {
	echo "$1" | awk -F. '{
		printf "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n",
		    $1, $2, $3, $4 }'
}

rxe_gid_index() {
	_want=$(rxe_gid_of_ipv4 "$2")
	for _g in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		_i=${_g##*/}
		[ "$(cat "$_g" 2>/dev/null)" = "$_want" ] || continue
		_t=$(cat "/sys/class/infiniband/$1/ports/1/gid_attrs/types/$_i" \
			2>/dev/null)
		[ "$_t" = "RoCE v2" ] || continue
		echo "$_i"
		return 0
	done
	return 1
}

rxe_port_ready() {
	grep -q ACTIVE "/sys/class/infiniband/$1/ports/1/state" 2>/dev/null &&
		rxe_gid_index "$1" "$2" >/dev/null
}

# rxe_link DEV VETH IP: one veth pair with an rxe device on its first end.
rxe_link() {
	if [ ! -e "/sys/class/net/$2" ]; then
		ip link add "$2" mtu "${RXE_MTU:-1500}" type veth \
			peer name "${2}p" mtu "${RXE_MTU:-1500}" ||
			rxe_die "cannot create $2"
		ip addr add "$3/24" dev "$2" || rxe_die "cannot address $2"
		ip link set "${2}p" up && ip link set "$2" up ||
			rxe_die "cannot bring $2 up"
	fi
	if [ ! -e "/sys/class/infiniband/$1" ]; then
		rdma link add "$1" type rxe netdev "$2" ||
			rxe_die "rdma link add $1 on $2 failed"
	fi
	rxe_wait 20 rxe_port_ready "$1" "$3" ||
		rxe_die "$1 did not get an active port with a RoCE v2 GID for $3"
}

rxe_setup() {
	[ "$(id -u)" = 0 ] || rxe_die "rxe_setup needs root (run inside vm-run)"
	[ "$(hostname)" = rxe-vm ] ||
		rxe_die "not inside the Soft-RoCE VM: run this through tests/rxe/vm-run"
	modprobe -a rdma_rxe ib_uverbs veth || rxe_die "modprobe failed"
	ip link set lo up
	rxe_link "$RXE_DEV0" veth0 "$RXE_IP0"
	rxe_link "$RXE_DEV1" veth1 "$RXE_IP1"
}

# --- two hosts (vm-run -2) -----------------------------------------------------
# Hosts a and b, one VM each, joined by one link: $RXE_LINK_IF with
# $RXE_LINK_IP/24 here and $RXE_PEER_IP there (10.99.0.1 and .2, which
# exist only inside the VMs), rxe0 on it.  They coordinate through files in
# $RXE_SYNC_DIR, a folder both see (one per check under rxe_run_checks).
#
#   rxe_host_setup        rxe0 on the link; sets RXE_IP0 to this host's
#                         address, RXE_PEER to the other host's letter;
#                         with RXE_LINKS=2 (vm-run) also rxe1 on the
#                         second link, $RXE_LINK2_IF ($RXE_LINK2_IP here,
#                         $RXE_PEER2_IP there), RXE_IP1 its address
#   rxe_signal NAME [VALUE]
#                         tell the other host NAME (with a one-line VALUE)
#   rxe_await NAME [SECONDS]
#                         wait for the other host's NAME (default: the
#                         check's timeout); fails at once when the other
#                         host's check has ended
#   rxe_value NAME        the VALUE NAME was signalled with
#   rxe_barrier NAME      both hosts at NAME
RXE_SYNC_DIR=${RXE_SYNC_DIR:-${RXE_SYNC:-}}

rxe_host_setup() {
	[ "$(id -u)" = 0 ] || rxe_die "rxe_host_setup needs root (run inside vm-run -2)"
	case ${RXE_HOST:-} in
	a) RXE_PEER=b ;;
	b) RXE_PEER=a ;;
	*) rxe_die "not one of two hosts: run this through tests/rxe/vm-run -2" ;;
	esac
	[ -d "$RXE_SYNC_DIR" ] || rxe_die "no shared folder ($RXE_SYNC_DIR)"
	modprobe -a virtio_net rdma_rxe ib_uverbs sch_netem ||
		rxe_die "modprobe failed"
	ip link set lo up
	if ! ip -4 addr show dev "$RXE_LINK_IF" 2>/dev/null |
		grep -q "inet $RXE_LINK_IP/"; then
		rxe_wait 10 test -e "/sys/class/net/$RXE_LINK_IF" ||
			rxe_die "no $RXE_LINK_IF (virtio-net)"
		ip addr add "$RXE_LINK_IP/24" dev "$RXE_LINK_IF" &&
			ip link set "$RXE_LINK_IF" up ||
			rxe_die "cannot bring $RXE_LINK_IF up"
	fi
	if [ ! -e "/sys/class/infiniband/$RXE_DEV0" ]; then
		rdma link add "$RXE_DEV0" type rxe netdev "$RXE_LINK_IF" ||
			rxe_die "rdma link add $RXE_DEV0 on $RXE_LINK_IF failed"
	fi
	rxe_wait 20 rxe_port_ready "$RXE_DEV0" "$RXE_LINK_IP" ||
		rxe_die "$RXE_DEV0 did not get an active port with a RoCE v2 GID"
	RXE_IP0=$RXE_LINK_IP
	[ -z "${RXE_LINK2_IF:-}" ] || rxe_host_link2
}

# The second link (vm-run -2 with RXE_LINKS=2): $RXE_LINK2_IF (eth1) with
# $RXE_LINK2_IP/24 here, $RXE_PEER2_IP there (10.99.0.11 on a, .12 on b),
# rxe1 on it.  The /24 is noprefixroute: 10.99.0.0/24 stays routed over
# eth0 alone, so the TCP handshakes and rxe0's packets go where they went
# with one link; one host route, to the peer's second address over eth1
# from ours, carries rxe1's.  It is a /24 all the same because kernel
# SMC-Rv2 takes a second RDMA device for ADD_LINK only when its netdev
# has an address in the subnet of the group's CLC source address
# (smc_ib.c, smc_ib_determine_gid_rcu: inet_ifa_match).
rxe_host_link2() {
	if ! ip -4 addr show dev "$RXE_LINK2_IF" 2>/dev/null |
		grep -q "inet $RXE_LINK2_IP/"; then
		rxe_wait 10 test -e "/sys/class/net/$RXE_LINK2_IF" ||
			rxe_die "no $RXE_LINK2_IF (virtio-net; RXE_LINKS=2)"
		ip addr add "$RXE_LINK2_IP/24" dev "$RXE_LINK2_IF" noprefixroute &&
			ip link set "$RXE_LINK2_IF" up ||
			rxe_die "cannot bring $RXE_LINK2_IF up"
	fi
	ip route replace "$RXE_PEER2_IP/32" dev "$RXE_LINK2_IF" \
		src "$RXE_LINK2_IP" ||
		rxe_die "cannot route $RXE_PEER2_IP over $RXE_LINK2_IF"
	if [ ! -e "/sys/class/infiniband/$RXE_DEV1" ]; then
		rdma link add "$RXE_DEV1" type rxe netdev "$RXE_LINK2_IF" ||
			rxe_die "rdma link add $RXE_DEV1 on $RXE_LINK2_IF failed"
	fi
	rxe_wait 20 rxe_port_ready "$RXE_DEV1" "$RXE_LINK2_IP" ||
		rxe_die "$RXE_DEV1 did not get an active port with a RoCE v2 GID"
	RXE_IP1=$RXE_LINK2_IP
}

# rxe_sync_has NAME: NAME is in the sync folder.  A glob reads the folder
# (9p caches negative lookups, so a `test -e` can go on saying no after
# the other VM made the file), and starts no process: rxe_await calls it
# ten times a second, and `ls | grep` there kept a one-vCPU VM 65 % busy.
rxe_sync_has() {
	for _rsh in "$RXE_SYNC_DIR/$1"*; do
		[ "${_rsh##*/}" = "$1" ] && return 0
	done
	return 1
}

rxe_signal() {
	printf '%s\n' "${2:-}" >"$RXE_SYNC_DIR/.$1.$RXE_HOST" &&
		mv "$RXE_SYNC_DIR/.$1.$RXE_HOST" "$RXE_SYNC_DIR/$1"
}

# Polls the folder (rxe_sync_has) ten times a second, starting one
# process a turn (rxe_nap): a host that waits here has one vCPU, which
# what it runs besides (daemons, a benchmark's servers) needs.
rxe_await() {
	_deadline=$(awk -v n="$(rxe_now)" -v t="${2:-${RXE_CHECK_TIMEOUT:-300}}" \
		'BEGIN { printf "%d", n + t + 1 }')
	until rxe_sync_has "$1"; do
		# (NAME may have come just before the end: look again)
		if rxe_sync_has "end.$RXE_PEER" && ! rxe_sync_has "$1"; then
			rxe_log "host $RXE_PEER ended its check before '$1'"
			return 1
		fi
		read -r _up _rest </proc/uptime
		if [ "${_up%.*}" -ge "$_deadline" ]; then
			rxe_log "no '$1' from host $RXE_PEER in time"
			return 1
		fi
		rxe_nap 0.1
	done
}

rxe_value() {
	cat "$RXE_SYNC_DIR/$1"
}

rxe_barrier() {
	rxe_signal "$1.$RXE_HOST" && rxe_await "$1.$RXE_PEER" "${2:-}"
}

# One host asks, the other does (the benchmarks: host a drives, host b
# serves):
#   rxe_serve             run each snippet the other host sends (eval, in
#                         this shell), answer each, until it says quit
#   rxe_on_peer SNIPPET [SECONDS]
#                         have the other host's rxe_serve run SNIPPET and
#                         wait for its answer
#   rxe_serve_end         tell the other host's rxe_serve to return
rxe_req=0

rxe_serve() {
	_n=0
	while :; do
		_n=$((_n + 1))
		rxe_await "req-$_n" 900 || return 1
		_what=$(rxe_value "req-$_n")
		[ "$_what" = quit ] && return 0
		eval "$_what"
		rxe_signal "ack-$_n"
	done
}

rxe_on_peer() {
	rxe_req=$((rxe_req + 1))
	rxe_signal "req-$rxe_req" "$1" &&
		rxe_await "ack-$rxe_req" "${2:-300}" ||
		rxe_die "host $RXE_PEER did not answer request $rxe_req: $1"
}

rxe_serve_end() {
	rxe_req=$((rxe_req + 1))
	rxe_signal "req-$rxe_req" quit
}

# rxe_quote WORD: WORD quoted for a snippet that the other host evals.
rxe_quote() {
	printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}

rxe_alive() {
	[ -r "/proc/$1/status" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status"
}

# Collects the daemon's sd_notify messages, the way systemd would, one line
# per message into a log, until the daemon's pid (once in PIDFILE) is gone.
# perl-base is Essential on Debian, so it is always there.
rxe_notify_collect='
use strict;
use Socket;
use IO::Handle;
my ($path, $log, $pidfile) = @ARGV;
socket(my $s, AF_UNIX, SOCK_DGRAM, 0) or die "socket: $!\n";
bind($s, pack_sockaddr_un($path)) or die "bind $path: $!\n";
open(my $out, ">>", $log) or die "$log: $!\n";
$out->autoflush(1);
my $ready = 0;
$SIG{USR1} = sub { };	# daemon_stop: the daemon is gone, look now
for (;;) {
	my $rin = "";
	vec($rin, fileno($s), 1) = 1;
	# every 0.1 s until READY=1, then every 2 s: under emulation ten
	# looks a second at /proc cost a bench several per cent of a CPU
	if (select(my $rout = $rin, undef, undef, $ready ? 2 : 0.1) > 0) {
		my $msg;
		if (defined(recv($s, $msg, 4096, 0))) {
			$msg =~ s/\n+$//;
			$msg =~ s/\n/ /g;
			print $out "$msg\n";
			$ready = 1 if $msg =~ /(^| )READY=1( |$)/;
		}
		next;
	}
	open(my $f, "<", $pidfile) or next;
	my $pid = <$f> // "";
	chomp $pid;
	next unless $pid;
	my $st = "";
	if (open(my $p, "<", "/proc/$pid/status")) {
		local $/;
		$st = <$p> // "";
	}
	last if $st eq "" || $st =~ /^State:\s*Z/m;
}
unlink $path;
'

rxe_notified() {
	grep -Eq "(^| )$2( |\$)" "$RXE_OUT/$1.notify" 2>/dev/null
}

rxe_start_settled() {
	rxe_notified "$1" READY=1 || ! rxe_alive "$2"
}

# daemon_start NAME CONF [ARG...]: run $SMCPROXYD -c CONF ARG... in the
# background, stderr to $RXE_OUT/NAME.log, its sd_notify messages to
# $RXE_OUT/NAME.notify, and wait (RXE_DAEMON_TIMEOUT, 60 s by default:
# everything is slow under emulation) until it says READY=1.  Sets
# rxe_pid_NAME.  Call daemon_stop from the same shell: the daemon is its
# child.
daemon_start() {
	_name=$1
	_conf=$2
	shift 2
	case $_name in
	'' | *[!A-Za-z0-9_]*) rxe_die "daemon_start: bad name '$_name'" ;;
	esac
	[ -x "$SMCPROXYD" ] || rxe_die "daemon_start: $SMCPROXYD not built"
	_sock=$RXE_RUNDIR/$_name.notify
	_pidf=$RXE_RUNDIR/$_name.pid
	rm -f "$_sock" "$_pidf" "$RXE_OUT/$_name.notify"
	perl -e "$rxe_notify_collect" "$_sock" "$RXE_OUT/$_name.notify" \
		"$_pidf" &
	eval "rxe_collector_$_name=$!"
	rxe_wait 10 test -S "$_sock" ||
		rxe_die "daemon_start $_name: no notify socket"
	NOTIFY_SOCKET=$_sock "$SMCPROXYD" -c "$_conf" "$@" \
		</dev/null >>"$RXE_OUT/$_name.log" 2>&1 &
	_pid=$!
	echo "$_pid" >"$_pidf.tmp" && mv "$_pidf.tmp" "$_pidf"
	eval "rxe_pid_$_name=$_pid"
	rxe_wait "${RXE_DAEMON_TIMEOUT:-60}" rxe_start_settled "$_name" "$_pid"
	if rxe_notified "$_name" READY=1; then
		rxe_log "$_name ready (pid $_pid)"
		return 0
	fi
	if rxe_alive "$_pid"; then
		rxe_log "daemon_start $_name: no READY=1 in time; its log:"
		kill -KILL "$_pid" 2>/dev/null
	else
		rxe_log "daemon_start $_name: exited before READY=1; its log:"
	fi
	wait "$_pid" 2>/dev/null
	eval "wait \$rxe_collector_$_name"
	sed 's/^/  /' "$RXE_OUT/$_name.log" >&2
	eval "rxe_pid_$_name="
	return 1
}

# daemon_stop NAME: SIGTERM, wait (RXE_STOP_TIMEOUT, 30 s) and return the
# daemon's exit status; SIGKILL and fail if it does not go.
daemon_stop() {
	eval "_pid=\${rxe_pid_$1:-}"
	[ -n "$_pid" ] || rxe_die "daemon_stop: $1 was not started"
	eval "rxe_pid_$1="
	kill -TERM "$_pid" 2>/dev/null
	if rxe_wait "${RXE_STOP_TIMEOUT:-30}" eval "! rxe_alive $_pid"; then
		wait "$_pid"
		_rc=$?
		eval "kill -USR1 \$rxe_collector_$1 2>/dev/null"
	else
		rxe_log "daemon_stop $1: still running after SIGTERM; killing it"
		kill -KILL "$_pid" 2>/dev/null
		wait "$_pid" 2>/dev/null
		_rc=1
		eval "kill -USR1 \$rxe_collector_$1 2>/dev/null"
	fi
	eval "wait \$rxe_collector_$1"
	return $_rc
}

# rxe_run_checks CHECK...: run each check script in turn, as its own process
# group with its own timeout (RXE_CHECK_TIMEOUT, 300 s), output in
# $RXE_OUT/NAME/output.log and exit status in $RXE_OUT/NAME/status.  Each
# check's $RXE_OUT is that directory.  run-checks turns this into TAP.
# With two hosts both run the same checks: each starts on both together.
rxe_run_checks() {
	_top=$RXE_OUT
	_sync_top=${RXE_SYNC:-}
	for _check in "$@"; do
		_name=$(basename "$_check" .sh)
		_dir=$_top/$_name
		mkdir -p "$_dir"
		if [ -n "${RXE_HOST:-}" ]; then
			# two hosts: each check starts on both at once and has
			# a shared folder of its own
			RXE_SYNC_DIR=$_sync_top/$_name
			export RXE_SYNC_DIR
			mkdir -p "$RXE_SYNC_DIR"
			case $RXE_HOST in a) RXE_PEER=b ;; *) RXE_PEER=a ;; esac
			if ! rxe_barrier start 120 >"$_dir/output.log" 2>&1; then
				echo 99 >"$_dir/status"
				continue
			fi
		fi
		_t0=$(rxe_now)
		RXE_OUT=$_dir timeout -k 5 "${RXE_CHECK_TIMEOUT:-300}" \
			sh "$_check" </dev/null >>"$_dir/output.log" 2>&1 &
		_pid=$!
		wait "$_pid"
		_rc=$?
		# its time, for run-checks to print (scripts/test times lanes)
		awk -v a="$_t0" -v b="$(rxe_now)" \
			'BEGIN { printf "%.0f\n", b - a }' >"$_dir/seconds"
		[ -n "${RXE_HOST:-}" ] && rxe_signal "end.$RXE_HOST"
		# Anything the check left running would disturb the next one.
		# (dash: no "--" in kill; -PGID right after the signal)
		kill -KILL "-$_pid" 2>/dev/null
		[ "$_rc" = 124 ] && echo "rxe: check timed out" >>"$_dir/output.log"
		[ "$_rc" != 0 ] && [ -n "${RXE_HOST:-}" ] &&
			rxe_link_diag >>"$_dir/output.log" 2>&1
		echo "$_rc" >"$_dir/status"
	done
	RXE_OUT=$_top
}

# rxe_link_diag: after a failed two-host check, the state of this host's end
# of the link, so that a link that stopped carrying anything (a stalled
# transmit queue, neighbours never resolved) is told apart from the
# daemons' own faults.
rxe_link_diag() {
	echo "---- link $RXE_LINK_IF on $RXE_HOST after the failure"
	ip -s link show dev "$RXE_LINK_IF"
	tc -s qdisc show dev "$RXE_LINK_IF"
	ip neigh show dev "$RXE_LINK_IF"
	grep -E '^(MemTotal|MemAvailable|Slab|Unevictable|Mlocked):' /proc/meminfo
	echo "---- kernel log on $RXE_HOST, last 20 lines"
	dmesg | tail -n 20
}

# --- helpers for the two-daemon checks (040-lgr, 050 to 070) ----------------
# They count on $CTL (smcproxyctl) and $R ($RXE_RUNDIR, where NAME.sock is);
# bad sets fail=1, which the check starts at 0 and exits with.
#
#   rxe_pair_tools        XFER and CTL set to the built xfer and smcproxyctl
#   ok MSG / bad MSG      one "ok:" / "FAIL:" line (bad sets fail=1)
#   logged NAME PATTERN   $RXE_OUT/NAME.log has a line matching PATTERN (ERE)
#   rxe_stat NAME KEY     a counter from `smcproxyctl -j stats` on NAME
#   expect_stat NAME KEY VALUE
#                         ok if that counter is VALUE, bad otherwise
#   stat_is NAME KEY VALUE
#                         true if that counter is VALUE now
#   xfer_ok WHAT ARG...   an xfer client on $PORT_RULE must verify
#
# and for the usual pair (a: rule x on 127.0.0.1:$PORT_RULE to peer b's
# export x, which is an xfer server on 127.0.0.1:$PORT_T; b listens for
# peers on $RXE_IP0:$PORT_B; one pre-shared key):
#   rxe_pair_confs RDMA_A [RDMA_B [MORE_RULES]]
#                         write $R/psk, $R/a.conf and $R/b.conf; RDMA_x goes
#                         into the rdma section (RDMA_B defaults to RDMA_A),
#                         MORE_RULES after rule x (", { ... }")
#   rxe_target_start      the xfer server ($server)
#   rxe_pair_start        daemons b, then a; a first connection (it waits
#                         for the group being set up, or takes the
#                         fallback) must verify and the group become active
#   rxe_pair_stop         stop a, b (bad if one exits non-zero), the server

rxe_pair_tools() {
	XFER=$abs_top_builddir/tests/tools/xfer
	CTL=$abs_top_builddir/src/smcproxyctl
	[ -x "$XFER" ] || rxe_die "$XFER is not built (make check builds it)"
	[ -x "$CTL" ] || rxe_die "$CTL is not built"
}

ok() {
	echo "ok: $*"
}

bad() {
	echo "FAIL: $*"
	# shellcheck disable=SC2034 # the check exits with $fail
	fail=1
}

# logged NAME PATTERN: the daemon's log has a line matching PATTERN.
logged() {
	grep -Eq -- "$2" "$RXE_OUT/$1.log"
}

# rxe_stat NAME KEY: a counter from `smcproxyctl -j stats`: the first one,
# in "stats" (rewound by stats reset), not the one in "totals" after it.
rxe_stat() {
	"$CTL" -s "$R/$1.sock" -j stats |
		grep -o "\"$2\": *[0-9]*" | head -n 1 | sed 's/.*: *//'
}

expect_stat() {
	_v=$(rxe_stat "$1" "$2")
	if [ "$_v" = "$3" ]; then
		ok "$1: $2 = $3"
	else
		bad "$1: $2 is '$_v', want $3"
	fi
}

stat_is() {
	[ "$(rxe_stat "$1" "$2")" = "$3" ]
}

xfer_ok() {
	_what=$1
	shift
	if "$XFER" client -c "127.0.0.1:$PORT_RULE" "$@" \
		>"$RXE_OUT/xfer.out" 2>&1; then
		ok "$_what"
	else
		bad "$_what: $(tail -3 "$RXE_OUT/xfer.out")"
	fi
}

# (RXE_PEER_EXTRA: more keys for each daemon's one peer entry)
rxe_pair_confs() {
	head -c 48 /dev/urandom >"$R/psk" && chmod 600 "$R/psk" ||
		rxe_die "cannot write the key"
	cat >"$R/a.conf" <<EOF
smcproxyd: { name = "a"; workers = 1; control_socket = "$R/a.sock"; ${RXE2_GLOBAL:-} };
peers = ( { name = "b"; address = "$RXE_IP0:$PORT_B"; key_file = "$R/psk"; ${RXE_PEER_EXTRA:-} } );
rules = ( { name = "x"; listen = "127.0.0.1:$PORT_RULE"; peer = "b";
            export = "x"; }${3:-} );
rdma: { $1 };
EOF
	cat >"$R/b.conf" <<EOF
smcproxyd: { name = "b"; workers = 1; control_socket = "$R/b.sock"; ${RXE2_GLOBAL:-} };
peer_listen: { address = "$RXE_IP0:$PORT_B"; };
peers = ( { name = "a"; address = "$RXE_IP0:$((PORT_B + 1))"; key_file = "$R/psk"; ${RXE_PEER_EXTRA:-} } );
exports = ( { name = "x"; target = "127.0.0.1:$PORT_T"; peers = [ "a" ]; } );
rdma: { ${2:-$1} };
EOF
}

rxe_target_start() {
	"$XFER" server -q -l "127.0.0.1:$PORT_T" >>"$RXE_OUT/server.log" 2>&1 &
	server=$!
	rxe_wait 20 sh -c "ss -ltn | grep -q ':$PORT_T '" ||
		rxe_die "xfer server did not listen"
}

rxe_pair_start() {
	daemon_start b "$R/b.conf" || rxe_die "daemon b did not start"
	daemon_start a "$R/a.conf" || rxe_die "daemon a did not start"
	xfer_ok "first connection (while the group is set up: waits, or fallback)" \
		-n 1 -b 64K -T 60
	rxe_wait 30 logged a 'peer b: link group active as client' ||
		rxe_die "no active link group"
}

rxe_pair_stop() {
	daemon_stop a || bad "daemon a exited with status $?"
	daemon_stop b || bad "daemon b exited with status $?"
	kill "$server" 2>/dev/null
	wait "$server" 2>/dev/null
}

# --- the pair across two hosts (vm-run -2: the 2NN checks) -------------------
# Daemon a and its clients on host a: rule x on 127.0.0.1:$PORT_RULE to peer
# b's export x; daemon b and the servers on host b: it listens for peers on
# $RXE_IP0:$PORT_B across the link, export x is an xfer server on
# 127.0.0.1:$PORT_T there.  One pre-shared key, made on b and handed over
# through the shared folder.  Each helper is called on both hosts; each
# daemon is asked (stats, expect_stat) only on its own host.
#
#   rxe2_pair_confs RDMA [MORE_RULES [MORE_EXPORTS]]
#                         this host's $R/NAME.conf (a or b); RDMA goes into
#                         the rdma section on both, RXE_PEER_EXTRA into
#                         this host's one peer entry
#   rxe2_pair_start RDMA [MORE_RULES [MORE_EXPORTS]]
#                         b: key, confs, the xfer server, daemon b; a:
#                         daemon a, a first connection that must verify,
#                         and the group active on both
#   rxe2_stats_reset      both daemons' counters reset, hosts in step
#   rxe2_flowing N XFER-ARG...
#                         a: N transfers running over RDMA ($client), b
#                         told so ("flowing")
#   rxe2_pair_stop        once both hosts are there: a stops first, then b
#                         and its server
#   rxe_fds NAME          how many descriptors daemon NAME holds
#   rxe_no_lgrs NAME      NAME's `show lgrs` lists no group

rxe2_pair_confs() {
	if [ "$RXE_HOST" = b ]; then
		cat >"$R/b.conf" <<EOF
smcproxyd: { name = "b"; workers = 1; control_socket = "$R/b.sock"; ${RXE2_GLOBAL:-} };
peer_listen: { address = "$RXE_IP0:$PORT_B"; };
peers = ( { name = "a"; address = "$RXE_PEER_IP:$PORT_B"; key_file = "$R/psk"; ${RXE_PEER_EXTRA:-} } );
exports = ( { name = "x"; target = "127.0.0.1:$PORT_T"; peers = [ "a" ]; }${3:-} );
rdma: { $1 };
${RXE2_SECTIONS:-}
EOF
	else
		cat >"$R/a.conf" <<EOF
smcproxyd: { name = "a"; workers = 1; control_socket = "$R/a.sock"; ${RXE2_GLOBAL:-} };
peers = ( { name = "b"; address = "$RXE_PEER_IP:$PORT_B"; key_file = "$R/psk"; ${RXE_PEER_EXTRA:-} } );
rules = ( { name = "x"; listen = "127.0.0.1:$PORT_RULE"; peer = "b";
            export = "x"; }${2:-} );
rdma: { $1 };
${RXE2_SECTIONS:-}
EOF
	fi
}

# (RXE2_GLOBAL: more keys for both daemons' smcproxyd section;
# RXE2_SECTIONS: more sections for both files)
rxe2_pair_start() {
	if [ "$RXE_HOST" = b ]; then
		head -c 48 /dev/urandom >"$R/psk" && chmod 600 "$R/psk" &&
			cp "$R/psk" "$RXE_SYNC_DIR/.psk" &&
			mv "$RXE_SYNC_DIR/.psk" "$RXE_SYNC_DIR/psk" ||
			rxe_die "cannot write the key"
		rxe2_pair_confs "$@"
		rxe_target_start
		daemon_start b "$R/b.conf" || rxe_die "daemon b did not start"
		rxe_signal b-ready
		rxe_await a-ready || rxe_die "a did not get its group up"
		rxe_wait 10 logged b 'peer a: link group active as server' ||
			rxe_die "no active link group on b"
	else
		rxe_await b-ready || rxe_die "b did not start"
		cp "$RXE_SYNC_DIR/psk" "$R/psk" && chmod 600 "$R/psk" ||
			rxe_die "cannot read b's key"
		rxe2_pair_confs "$@"
		daemon_start a "$R/a.conf" || rxe_die "daemon a did not start"
		xfer_ok "first connection across the link (it waits for the group, or falls back)" \
			-n 1 -b 64K -T 60
		rxe_wait 30 logged a 'peer b: link group active as client' ||
			rxe_die "no active link group on a"
		rxe_signal a-ready
	fi
	ok "link group between the hosts active"
}

rxe2_stats_reset() {
	"$CTL" -s "$R/$RXE_HOST.sock" stats reset >/dev/null ||
		bad "stats reset on $RXE_HOST"
	rxe_barrier "reset${1:-}" 60 || rxe_die "the hosts are out of step"
}

rxe2_pair_stop() {
	# neither stops before the other has looked at its daemon
	rxe_barrier stop 120 || bad "the hosts are out of step at the end"
	if [ "$RXE_HOST" = a ]; then
		daemon_stop a || bad "daemon a exited with status $?"
		rxe_signal a-stopped
	else
		rxe_await a-stopped 60
		daemon_stop b || bad "daemon b exited with status $?"
		kill "$server" 2>/dev/null
		wait "$server" 2>/dev/null
	fi
}

# rxe2_flowing N XFER-ARG...: on a, N xfer clients in the background
# ($client, output in $RXE_OUT/xfer.out) until a has opened them over
# RDMA; then b is told "flowing".
rxe2_flowing() {
	_n=$1
	shift
	"$XFER" client -c "127.0.0.1:$PORT_RULE" -n "$_n" "$@" \
		>"$RXE_OUT/xfer.out" 2>&1 &
	client=$!
	rxe_wait 30 stat_is a conns_rdma "$_n" ||
		bad "the $_n connections did not open over RDMA"
	sleep 1
	rxe_signal flowing
}

rxe_fds() {
	eval "_p=\${rxe_pid_$1:-}"
	ls "/proc/$_p/fd" 2>/dev/null | wc -l
}

rxe_no_lgrs() {
	"$CTL" -s "$R/$1.sock" -j show lgrs >"$RXE_OUT/$1.lgrs.json" 2>&1 &&
		! grep -q '"state"' "$RXE_OUT/$1.lgrs.json"
}

# Linux's own SMC-R between the two hosts (ksmc.rxe on Linux 6.12;
# ksmc61.rxe on 6.1 with the patched rdma_rxe, RXE_KERNEL=stock-rxefix:
# 6.1's own rxe hangs kernel SMC-R at link setup), after rxe_host_setup:
#
#   ksmc_setup            modprobe smc, and the user EID both hosts share
#                         (SMC-Rv2, the only version rxe's RoCE v2 GIDs
#                         allow, needs one); $SMCNL, $SMCPRELOAD; under
#                         stock-rxefix, dies unless the loaded rdma_rxe is
#                         the patched one ($RXE_RXE_KO, vm-run); on 6.1,
#                         the link and rxe0 on one pnetid (smcnl pnet add),
#                         and with two links the second and rxe1 on it too
#   ksmc CMD...           CMD with its TCP sockets as kernel SMC sockets
#                         (LD_PRELOAD tests/tools/smcpreload.so)
#   ksmc_stat NAME        a counter of the kernel's SMC statistics (smcnl)
#   rxe_hwc NAME [DEV]    a counter of rxe0's port (sent_pkts, rcvd_pkts),
#                         or DEV's
#   rxe_active_mtu        rxe0's active RoCE MTU in bytes
#   tcp_out_segs          the TCP segments this host sent (/proc/net/snmp)
# Daemons with kernel peers (340, 350 and ksmc61.rxe's), after
# rxe_pair_tools, with R, PORT and OBJ (the BPF object) set:
#   ksmc_export_start     b: daemon b, root, with export x on smc_listen
#                         $RXE_LINK_IP:PORT relaying to an xfer server on
#                         127.0.0.1:$PORT_T ($server), debug log
#   ksmc_rule_start       a: daemon a, root, with rule k on
#                         127.0.0.1:$PORT_RULE to target_smc
#                         $RXE_PEER_IP:PORT (KSMC_LOG_LEVEL: its log_level)
#   ksmc_server_start     b: a kernel SMC-R xfer server on
#                         $RXE_LINK_IP:PORT ($server)
#   rxe_timed CMD...      run CMD; its wall time in seconds in $rxe_secs
#   ksmc_kernel_log       this host's kernel's SMC and rxe lines, and its
#                         SMC statistics, into $RXE_OUT/kernel-smc.log
RXE_KSMC_UEID=${RXE_KSMC_UEID:-SMCPROXYD-TEST-LAB}

# rxe_install_package: under systemd (run-checks --systemd), "make install"
# into the overlay root as a package would (the units in /lib/systemd/
# system), systemd-sysusers and systemd-tmpfiles on the installed files;
# sets unit, conf, etc, ctl and prefix (300-systemd.sh, 305-...).
rxe_install_package() {
	t0=$(rxe_now)
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$abs_top_builddir" \
		install systemdsystemunitdir=/lib/systemd/system \
		>"$RXE_OUT/install.txt" 2>&1 ||
		rxe_die "make install: $(tail -n 20 "$RXE_OUT/install.txt")"
	echo "# make install took $(awk -v a="$t0" -v b="$(rxe_now)" \
		'BEGIN { printf "%.1f", b - a }') s"
	unit=/lib/systemd/system/smcproxyd.service
	[ -f "$unit" ] || rxe_die "make install put no unit at $unit"
	conf=$(sed -n 's/^ExecStart=.* -c \([^ ]*\)$/\1/p' "$unit")
	etc=${conf%/*}
	ctl=$(sed -n 's/^ExecReload=\([^ ]*\) .*/\1/p' "$unit")
	prefix=$(sed -n 's/^prefix = //p' "$abs_top_builddir/Makefile")
	if [ -z "$conf" ] || [ ! -x "$ctl" ] || [ -z "$prefix" ]; then
		rxe_die "cannot read the paths from $unit: $(grep ^Exec "$unit")"
	fi
	systemd-sysusers "$prefix/lib/sysusers.d/smcproxyd.conf" ||
		rxe_die "systemd-sysusers failed"
	systemd-tmpfiles --create "$prefix/lib/tmpfiles.d/smcproxyd.conf" ||
		rxe_die "systemd-tmpfiles failed"
	rxe_sanitizer_dropins
	systemctl daemon-reload || rxe_die "systemctl daemon-reload failed"
}

# rxe_sanitizer_dropins: a sanitizer build's leak check stops the
# process's threads with ptrace, which SystemCallFilter=@system-service
# refuses: allowed for this lane's build only (in /etc, apart from the
# drop-ins the checks add).  The caller runs daemon-reload.
rxe_sanitizer_dropins() {
	grep -q '^SAN_CFLAGS = .*-fsanitize' "$abs_top_builddir/Makefile" ||
		return 0
	for u in smcproxyd.service smcproxyd@.service smcproxyd-bpf.service; do
		mkdir -p "/etc/systemd/system/$u.d" &&
			printf '[Service]\nSystemCallFilter=ptrace\n' \
				>"/etc/systemd/system/$u.d/sanitizer.conf" ||
			rxe_die "cannot add the sanitizer drop-in"
	done
	echo "# sanitizer build: ptrace allowed by a drop-in"
}

# Client loops across a restart (300-systemd.sh, 307-systemd-upgrade.sh):
#   rxe_loops_start N     N loops of connections to 127.0.0.1:$PORT_RULE,
#                         one after another (64 KiB each way, verified);
#                         each connection one line "START END STATUS"
#                         (uptime seconds), a failed one's output in
#                         $RXE_OUT/loop-failures.txt
#   rxe_loops_stop NAME   stop them and wait; every line in
#                         $RXE_OUT/NAME-loops.txt; sets loops_n (all
#                         connections) and loops_failed
#   rxe_loops_begun A B   how many of them began at A <= START < B
rxe_loop() {
	while [ ! -e "$R/loops.stop" ]; do
		_t0=$(rxe_now)
		"$XFER" client -c "127.0.0.1:$PORT_RULE" -n 1 -b 64K --verify \
			-T 60 >"$R/loop$1.out" 2>&1
		_rc=$?
		echo "$_t0 $(rxe_now) $_rc" >>"$R/loop$1.log"
		[ "$_rc" -eq 0 ] ||
			cat "$R/loop$1.out" >>"$RXE_OUT/loop-failures.txt"
	done
}

rxe_loops_start() {
	rm -f "$R/loops.stop" "$R"/loop*.log
	rxe_loops=
	_i=0
	while [ "$_i" -lt "$1" ]; do
		_i=$((_i + 1))
		: >"$R/loop$_i.log"
		rxe_loop "$_i" &
		rxe_loops="$rxe_loops $!"
	done
}

rxe_loops_stop() {
	touch "$R/loops.stop"
	# shellcheck disable=SC2086 # the loops' pids
	wait $rxe_loops
	cat "$R"/loop*.log >"$RXE_OUT/$1-loops.txt"
	loops_n=$(wc -l <"$RXE_OUT/$1-loops.txt")
	loops_failed=$(awk '$3 != 0' "$RXE_OUT/$1-loops.txt" | wc -l)
	rxe_loops_file=$RXE_OUT/$1-loops.txt
}

rxe_loops_begun() {
	awk -v a="$1" -v b="$2" '$1 >= a && $1 < b' "$rxe_loops_file" | wc -l
}

# rxe_build_deb DIR: the project's .deb made from this build tree the way
# debian/rules makes it, in DIR; sets deb.  "make install" into the
# package's tree (the units in /lib/systemd/system, the sysusers and
# tmpfiles files in /usr/lib, where debhelper looks for them); then
# debian/rules' own override_dh_installsystemd and the debhelper steps
# that write the rest of the maintainer scripts (dh_installsysusers,
# dh_installtmpfiles, dh_installdeb with debian/smcproxyd.prerm),
# dh_gencontrol and dh_builddeb, uncompressed (quicker under emulation).
# A package built with prefix /usr has its configuration in /etc, which
# dh_installdeb makes a conffile: the same is done for this build's, so
# an upgrade keeps the operator's file as it keeps /etc/smcproxyd's.
# (No dh_shlibdeps: the libraries are the host's, already installed.)
rxe_build_deb() {
	_pkg=$1/smcproxyd
	rm -rf "$_pkg" && mkdir -p "$_pkg" &&
		cp -r "$abs_top_srcdir/debian" "$_pkg/" || return 1
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$abs_top_builddir" \
		install DESTDIR="$_pkg/debian/smcproxyd" \
		systemdsystemunitdir=/lib/systemd/system \
		sysusersdir=/usr/lib/sysusers.d tmpfilesdir=/usr/lib/tmpfiles.d \
		>"$RXE_OUT/deb-build.txt" 2>&1 || return 1
	_cf=$(sed -n 's/^ExecStart=.* -c \([^ ]*\)$/\1/p' \
		"$_pkg/debian/smcproxyd/lib/systemd/system/smcproxyd.service")
	(
		cd "$_pkg" &&
			env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
				make -f debian/rules override_dh_installsystemd &&
			dh_installsysusers && dh_installtmpfiles && dh_installdeb &&
			if ! grep -qx "$_cf" debian/smcproxyd/DEBIAN/conffiles \
				2>/dev/null; then
				echo "$_cf" >>debian/smcproxyd/DEBIAN/conffiles
			fi &&
			dh_gencontrol && dh_builddeb --destdir="$1" -- -Znone
	) >>"$RXE_OUT/deb-build.txt" 2>&1 || return 1
	deb=$(ls "$1"/smcproxyd_*.deb 2>/dev/null | head -n 1)
	[ -n "$deb" ]
}

# ksmc_check_init: the start of every kernel SMC-R check: this host's
# rxe and tools, kernel SMC (ksmc_setup), R (the run directory), OBJ (the
# SMC-R option's BPF object, which the daemons load; dies if not built)
# and fail=0.
ksmc_check_init() {
	rxe_host_setup
	rxe_pair_tools
	ksmc_setup
	R=$RXE_RUNDIR
	OBJ=$abs_top_builddir/src/bpf/smc_opt.bpf.o
	fail=0
	[ -f "$OBJ" ] || rxe_die "$OBJ not built (configure found no clang or libbpf)"
	KSMC_OLD_LGRS=$("$SMCNL" links 2>/dev/null | awk '$1 == "lgr" { print $2 }' |
		tr '\n' ' ')
}

ksmc_setup() {
	SMCNL=$abs_top_builddir/tests/tools/smcnl
	SMCPRELOAD=$abs_top_builddir/tests/tools/smcpreload.so
	[ -x "$SMCNL" ] && [ -f "$SMCPRELOAD" ] ||
		rxe_die "$SMCNL or $SMCPRELOAD is not built (make check builds them)"
	modprobe smc || rxe_die "modprobe smc failed (Linux $(uname -r))"
	# the stock module is in-tree and signed; build-rxe's is neither,
	# so the kernel marks it O (out of tree)
	if [ -n "${RXE_RXE_KO:-}" ]; then
		_t=$(cat /sys/module/rdma_rxe/taint 2>/dev/null)
		case $_t in
		*O*) echo "# rdma_rxe: the patched module, $RXE_RXE_KO (taint $_t)" ;;
		*) rxe_die "rdma_rxe is not the patched $RXE_RXE_KO (taint '$_t': the stock module)" ;;
		esac
	fi
	# Linux 6.1's SMC finds the RDMA device of a netdev without a pnet
	# entry only through the driver's get_netdev, which 6.1's rxe lacks:
	# without one every connection falls back to TCP (6.12 asks the RDMA
	# core and needs none)
	case $(uname -r) in
	6.1.*)
		"$SMCNL" pnet add RXELAB "$RXE_LINK_IF" "$RXE_DEV0" 1 ||
			rxe_die "cannot put $RXE_LINK_IF and $RXE_DEV0 on pnetid RXELAB"
		# the second link's on the same one: SMC takes an alternate
		# device for ADD_LINK only on the group's pnetid
		# (smc_pnet.c, _smc_pnet_find_roce_by_pnetid)
		if [ -n "${RXE_LINK2_IF:-}" ]; then
			"$SMCNL" pnet add RXELAB "$RXE_LINK2_IF" "$RXE_DEV1" 1 ||
				rxe_die "cannot put $RXE_LINK2_IF and $RXE_DEV1 on pnetid RXELAB"
		fi
		;;
	esac
	"$SMCNL" ueid add "$RXE_KSMC_UEID" ||
		rxe_die "cannot set the user EID $RXE_KSMC_UEID"
}

# rxe_rcvd2: rxe0's and rxe1's received packets (two links), "R0 R1"
rxe_rcvd2() {
	echo "$(rxe_hwc rcvd_pkts) $(rxe_hwc rcvd_pkts "$RXE_DEV1")"
}

# rxe_underway BEFORE PID WANT: within 180 s rxe0 and rxe1 received a
# fifth of WANT packets since BEFORE (rxe_rcvd2), or PID ended; bad
# unless PID (the transfer) still runs then
rxe_underway() {
	_ub=$1 _up=$2 _uw=$3
	rxe_wait 180 rxe_underway_now ||
		bad "$RXE_HOST's transfer did not get under way"
	rxe_alive "$_up" ||
		bad "$RXE_HOST's transfer ended before it was under way (make it bigger)"
}

rxe_underway_now() {
	# shellcheck disable=SC2046,SC2086 # rxe_rcvd2's two numbers, twice
	set -- $_ub $(rxe_rcvd2)
	[ $(($3 - $1 + $4 - $2)) -ge $((_uw / 5)) ] || ! rxe_alive "$_up"
}

# rxe_expect WHAT CMD...: CMD succeeds within 60 s (ok WHAT), else bad
rxe_expect() {
	_what=$1
	shift
	if rxe_wait 60 "$@"; then
		ok "$_what"
	else
		bad "not $_what"
	fi
}

# ksmc_kernel_links NAME N0 N1: this host's kernel has one SMC-R link
# group, with N0 active links on rxe0 and N1 on rxe1 and no other (its
# view in $RXE_OUT/links-NAME.log, smcnl links), leaving out the groups
# it had when the check began (KSMC_OLD_LGRS, ksmc_check_init: an idle
# group of an earlier check in the lane lingers 10 minutes)
ksmc_kernel_links() {
	"$SMCNL" links 2>&1 | awk -v old="$KSMC_OLD_LGRS" '
		BEGIN { n = split(old, o, " "); for (i = 1; i <= n; i++) skip[o[i]] = 1 }
		!($2 in skip)' >"$RXE_OUT/links-$1.log" &&
		[ "$(grep -c '^lgr ' "$RXE_OUT/links-$1.log")" = 1 ] &&
		awk -v d0="$RXE_DEV0" -v d1="$RXE_DEV1" -v w0="$2" -v w1="$3" '
		$1 == "link" && $10 == "ACTIVE" && $6 == d0 { a++ }
		$1 == "link" && $10 == "ACTIVE" && $6 == d1 { b++ }
		$1 == "link" { n++ }
		END { exit !(n == w0 + w1 && a + 0 == w0 && b + 0 == w1) }' \
			"$RXE_OUT/links-$1.log"
}

# ksmc_links_busy HOST: mid-transfer, this kernel's connections are on
# both links, rxe0 and rxe1 (smcnl links, in $RXE_OUT/links-mid.log)
ksmc_links_busy() {
	"$SMCNL" links >"$RXE_OUT/links-mid.log" 2>&1
	sed "s/^/# $1, mid-transfer: /" "$RXE_OUT/links-mid.log"
	if awk -v d0="$RXE_DEV0" -v d1="$RXE_DEV1" '
		$1 == "link" && $6 == d0 && $12 > 0 { a = 1 }
		$1 == "link" && $6 == d1 && $12 > 0 { b = 1 }
		END { exit !(a && b) }' "$RXE_OUT/links-mid.log"; then
		ok "mid-transfer both links carry connections"
	else
		bad "mid-transfer not both links carry connections"
	fi
}

# ksmc_daemon_links HOST NAME N0 N1: the same of daemon HOST's active
# links (show links, in $RXE_OUT/HOST-links-NAME.log)
ksmc_daemon_links() {
	"$CTL" -s "$R/$1.sock" -j show links >"$RXE_OUT/$1-links-$2.log" \
		2>"$RXE_OUT/$1-links-$2.err" &&
		python3 - "$RXE_OUT/$1-links-$2.log" "$RXE_DEV0" "$RXE_DEV1" \
			"$3" "$4" <<'PY'
import json, sys
links = json.load(open(sys.argv[1])).get("data", {}).get("links", [])
act = [l for l in links if l.get("state") == "active"]
d0 = sum(1 for l in act if l.get("device") == sys.argv[2])
d1 = sum(1 for l in act if l.get("device") == sys.argv[3])
w0, w1 = int(sys.argv[4]), int(sys.argv[5])
sys.exit(0 if (d0, d1, len(act)) == (w0, w1, w0 + w1) else 1)
PY
}

# ksmc_cgroup2: a cgroup v2 mounted, and this check (with all it starts
# from now on) in a cgroup of its own below the root: a daemon attaches
# the option's program to the cgroup it runs in, and refuses the root,
# where the program would act on every socket of the host
# (kernel_smc.bpf_root_cgroup)
ksmc_cgroup2() {
	local mnt

	grep -q ' - cgroup2 ' /proc/self/mountinfo ||
		mount -t cgroup2 none /sys/fs/cgroup ||
		rxe_die "cannot mount cgroup2"
	mnt=$(awk '/ - cgroup2 / && $4 == "/" { print $5; exit }' \
		/proc/self/mountinfo)
	mkdir -p "$mnt/rxe-checks" &&
		echo $$ >"$mnt/rxe-checks/cgroup.procs" ||
		rxe_die "cannot put the check in a cgroup of its own"
}

# With two links (RXE_LINKS=2) the peer's second address in
# kernel_smc.allow: a kernel peer's second link may lead only to the
# group's host or to an address allow lists (lgr_smcr_gid_bound)
ksmc_allow2() {
	[ -z "${RXE_PEER2_IP:-}" ] || printf ', "%s/32"' "$RXE_PEER2_IP"
}

ksmc_export_start() {
	ksmc_cgroup2
	cat >"$R/b.conf" <<EOF
smcproxyd: { name = "b"; workers = 1; control_socket = "$R/b.sock";
              log_level = "debug"; };
exports = ( { name = "x"; target = "127.0.0.1:$PORT_T";
              smc_listen = "$RXE_LINK_IP:$PORT"; } );
kernel_smc: { ueids = [ "$RXE_KSMC_UEID" ];
              allow = [ "$RXE_PEER_IP/32"$(ksmc_allow2) ];
              bpf_object = "$OBJ"; };
EOF
	rxe_target_start
	daemon_start b "$R/b.conf" || rxe_die "daemon b did not start"
}

ksmc_rule_start() {
	ksmc_cgroup2
	cat >"$R/a.conf" <<EOF
smcproxyd: { name = "a"; workers = 1; control_socket = "$R/a.sock";
              ${KSMC_LOG_LEVEL:+log_level = \"$KSMC_LOG_LEVEL\";} };
rules = ( { name = "k"; listen = "127.0.0.1:$PORT_RULE";
            target_smc = "$RXE_PEER_IP:$PORT"; } );
kernel_smc: { ueids = [ "$RXE_KSMC_UEID" ]; bpf_object = "$OBJ";
              ${RXE_PEER2_IP:+allow = [ \"$RXE_PEER2_IP/32\" ];} };
EOF
	daemon_start a "$R/a.conf" || rxe_die "daemon a did not start"
}

ksmc_server_start() {
	ksmc "$XFER" server -q -l "$RXE_LINK_IP:$PORT" \
		>"$RXE_OUT/xfer-server.log" 2>&1 &
	server=$!
	rxe_wait 20 sh -c "ss -ltn | grep -q ':$PORT '" ||
		rxe_die "the SMC xfer server did not listen: $(cat "$RXE_OUT/xfer-server.log")"
}

rxe_timed() {
	_t0=$(rxe_now)
	"$@"
	_rc=$?
	rxe_secs=$(awk -v a="$_t0" -v b="$(rxe_now)" 'BEGIN { printf "%.2f", b - a }')
	return $_rc
}

ksmc_kernel_log() {
	{
		echo "== dmesg (smc, rxe, infiniband) on $RXE_HOST, Linux $(uname -r)"
		dmesg | grep -iE 'smc|rxe|infiniband'
		echo "== smcnl stats on $RXE_HOST"
		"$SMCNL" stats
		# the transport's retries (rnr, sequence errors, timeouts): a
		# retry is what makes 6.1's rxe run a REG_MR twice (README)
		echo "== $RXE_DEV0 hw_counters on $RXE_HOST"
		for _f in "/sys/class/infiniband/$RXE_DEV0/ports/1/hw_counters/"*; do
			printf '%s=%s ' "${_f##*/}" "$(cat "$_f")"
		done
		echo
	} >"$RXE_OUT/kernel-smc.log" 2>&1
}

# A sanitized program (xfer of an --enable-sanitizers build) would refuse
# to run with the library before its runtime in the list.
ksmc() {
	LD_PRELOAD=$SMCPRELOAD \
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
		"$@"
}

ksmc_stat() {
	"$SMCNL" stats "$1"
}

# ksmc_snap ROLE: this host's kernel SMC-Rv2 connections of ROLE (clnt or
# srv) and fallbacks, rxe0's packets and TCP's segments now, for ksmc_proof
ksmc_snap() {
	echo "$(ksmc_stat "$1_v2_succ") $(ksmc_stat "fback_$1")" \
		"$(rxe_hwc sent_pkts) $(rxe_hwc rcvd_pkts) $(tcp_out_segs)"
}

# ksmc_proof ROLE SNAP N BYTES: since SNAP (ksmc_snap ROLE), this host's
# kernel made N SMC-Rv2 connections of ROLE and fell back never, rxe0
# carried about BYTES / MTU packets each way, TCP only the handshakes
ksmc_proof() {
	_now=$(ksmc_snap "$1")
	set -- "$1" "$2 $_now" "$3" "$4"
	_d() { echo "$2" | awk -v f="$1" '{ print $(f + 5) - $f }'; }
	_s=$(_d 1 "$2") _f=$(_d 2 "$2") _tx=$(_d 3 "$2") _rx=$(_d 4 "$2")
	_tcp=$(_d 5 "$2") _want=$(($4 / $(rxe_active_mtu)))
	if [ "$_s" = "$3" ] && [ "$_f" = 0 ]; then
		ok "$RXE_HOST's kernel counts $3 SMC-Rv2 $1 connections, no fallback"
	else
		bad "$RXE_HOST's kernel: $1_v2_succ +$_s (want $3), fback_$1 +$_f (want 0)"
	fi
	echo "# $RXE_HOST: rxe0 sent_pkts +$_tx, rcvd_pkts +$_rx (bytes/MTU each way: $_want); TCP OutSegs +$_tcp"
	if [ "$_tx" -ge $((_want * 95 / 100)) ] && [ "$_rx" -ge $((_want * 95 / 100)) ]; then
		ok "rxe0 on $RXE_HOST: +$_tx sent, +$_rx received, about bytes/MTU ($_want) each way"
	else
		bad "rxe0 on $RXE_HOST: +$_tx sent, +$_rx received; bytes/MTU is $_want each way"
	fi
	if [ "$_tcp" -lt $(($3 * 40 + 100)) ]; then
		ok "TCP on $RXE_HOST: +$_tcp segments sent, the handshakes only"
	else
		bad "TCP on $RXE_HOST: +$_tcp segments sent: the bytes went over TCP"
	fi
}

# ksmc_groups NAME STAT N: daemon NAME's N connections with kernel peers
# went on STAT new link groups (at least one), the others joined one
ksmc_groups() {
	_g=$(rxe_stat "$1" "$2") _j=$(rxe_stat "$1" smc_lgr_joins)
	if [ "$_g" -ge 1 ] && [ $((_g + _j)) = "$3" ]; then
		ok "$1: $3 connections on $_g link groups ($_j joined one)"
	else
		bad "$1: $2 $_g + smc_lgr_joins $_j, want $3"
	fi
}

# redis_readback HOST PORT: redis-cli (under $REDIS_PRE, if set) reads
# back a 3000-byte value it wrote
redis_readback() {
	_val=$(head -c 3000 /dev/urandom | base64 -w0)
	${REDIS_PRE:-} redis-cli -h "$1" -p "$2" set smc:key "$_val" >/dev/null ||
		{ bad "redis-cli set ($1:$2)"; return; }
	if [ "$(${REDIS_PRE:-} redis-cli -h "$1" -p "$2" get smc:key)" = "$_val" ]; then
		ok "redis-cli reads back what it wrote ($1:$2)"
	else
		bad "redis-cli get returned something else ($1:$2)"
	fi
}

# redis_bench WANT HOST PORT ARGS...: redis-benchmark (under $REDIS_PRE,
# if set) runs its tests, WANT of them report their rate, no error
redis_bench() {
	_want=$1 _h=$2 _p=$3
	shift 3
	echo "# redis-benchmark -h $_h -p $_p $*"
	${REDIS_PRE:-} redis-benchmark -h "$_h" -p "$_p" "$@" \
		>"$RXE_OUT/bench.out" 2>&1
	_rc=$?
	cat "$RXE_OUT/bench.out" >>"$RXE_OUT/bench.txt"
	# (its progress lines end in \r: only the results)
	tr '\r' '\n' <"$RXE_OUT/bench.out" | grep 'requests per second' |
		sed 's/^ */# /'
	if [ "$_rc" != 0 ]; then
		bad "redis-benchmark $* exited $_rc"
	elif grep -qiE 'error|refused|reset|timeout' "$RXE_OUT/bench.out"; then
		bad "redis-benchmark $* reported errors"
	elif [ "$(grep -o 'requests per second' "$RXE_OUT/bench.out" |
		wc -l)" -lt "$_want" ]; then
		bad "redis-benchmark $* did not finish its tests"
	else
		ok "redis-benchmark $*"
	fi
}

rxe_hwc() {
	cat "/sys/class/infiniband/${2:-$RXE_DEV0}/ports/1/hw_counters/$1"
}

rxe_active_mtu() {
	ibv_devinfo -d "$RXE_DEV0" | sed -n 's/.*active_mtu:[[:space:]]*\([0-9]*\).*/\1/p'
}

tcp_out_segs() {
	awk '$1 == "Tcp:" && !h { for (i = 2; i <= NF; i++) if ($i == "OutSegs") c = i; h = 1; next }
	     $1 == "Tcp:" { print $c }' /proc/net/snmp
}
