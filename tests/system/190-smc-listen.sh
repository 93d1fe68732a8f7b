#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# An export's smc_listen (the SMC-R dialect's export side) on loopback,
# against tests/tools/ksmcclient, which does what a Linux kernel SMC-R
# client does first (this host's kernel has no SMC-R; ksmc.rxe runs the
# real one): the daemon, root here, loads the SMC-R option's BPF program
# itself; the client's SYN carries the option and its SYN-ACK echoes it;
# the client's CLC PROPOSAL gets a DECLINE with the kernel's code for
# what is wrong (or NOSMCRDEV when nothing is: the SMC-R dialect's link
# groups are not served yet) and the connection goes on as TCP to the
# export's target, every byte verified; a SYN without the option is TCP
# from the first byte; no CLC where one was owed is a reset, counted; a
# client that keeps failing is declined at once (the peer port's rate
# table); a daemon without the program serves TCP and says why, as does
# smcproxyctl check export (smc_chk -S).
. "$(dirname "$0")/lib.sh"
smc_init

KC=$SMC_BUILDDIR/tests/tools/ksmcclient
OBJ=$SMC_BUILDDIR/src/bpf/smc_opt.bpf.o
[ -x "$KC" ] && [ -f "$OBJ" ] ||
	skip "ksmcclient or smc_opt.bpf.o not built (no clang or libbpf)"
[ "$(id -u)" = 0 ] || skip "not root: the BPF program cannot be loaded"
smc_cgroup
need socat

set -- $(free_ports 4)
PORT_SMC=$1 PORT_TARGET=$2 PORT_SMC2=$3 PORT_SMC3=$4
socat "TCP-LISTEN:$PORT_TARGET,bind=127.0.0.1,reuseaddr,fork" EXEC:cat \
	>"$T/echo.log" 2>&1 &
track $! "$T/echo.log"
wait_listen "$PORT_TARGET" 10

# conf NAME PORT ALLOW BPF_OBJECT (empty: the default)
conf()
{
	local obj=

	[ -n "$4" ] && obj="bpf_object = \"$4\";"
	cat >"$T/$1.conf" <<EOF
smcproxyd: {
	name = "$1";
	control_socket = "$T/$1.sock";
	workers = $SMC_WORKERS;
	log_level = "debug";
};
exports = (
	{ name = "x"; target = "127.0.0.1:$PORT_TARGET"; smc_listen = "127.0.0.1:$2"; }
);
kernel_smc: {
	ueids = [ "SMCPROXYD-LAB" ];
	allow = [ $3 ];
	$obj
};
EOF
}

# kc ARGS...: ksmcclient to b's smc_listen; its output in $out
kc()
{
	smc_log "ksmcclient $*"
	out=$("$KC" -c "127.0.0.1:$PORT_SMC" -o "$OBJ" "$@" 2>&1)
	kc_rc=$?
	printf '%s\n' "$out" | sed 's/^/  /' >&2
}

# count NAME COUNTER BEFORE WANT: the counter rose by WANT
count()
{
	local v

	v=$(stat_get "$1" "$2") || fail "no $2 from $1"
	[ $((v - $3)) = "$4" ] || fail "$1: $2 rose by $((v - $3)), want $4"
}

conf b "$PORT_SMC" '"127.0.0.0/8"' "$OBJ"
"$SMCPROXYD" -n -c "$T/b.conf" >"$T/b.check" 2>&1 ||
	fail "smcproxyd -n rejects b.conf: $(cat "$T/b.check")"
grep -q 'warning: kernel_smc: kernel SMC-R peers are not authenticated' \
	"$T/b.check" || fail "-n does not warn that kernel peers are unauthenticated"
# in the cgroup v2 root the program would act on every socket of the
# host: -n says so (and a daemon there does not attach, unless
# kernel_smc.bpf_root_cgroup); this test runs in a cgroup of its own
(echo "$BASHPID" >"${SMC_CGROUP%/*}/cgroup.procs" &&
	exec "$SMCPROXYD" -n -c "$T/b.conf") >"$T/b-root.check" 2>&1 ||
	fail "-n in the root cgroup rejects b.conf"
grep -q 'will not attach (in the cgroup v2 root, acting on every socket of the host: run it in a cgroup of its own, or set kernel_smc.bpf_root_cgroup)' \
	"$T/b-root.check" || fail "-n in the cgroup v2 root does not warn: $(cat "$T/b-root.check")"
start_daemon b "$T/b.conf"
wait_listen "$PORT_SMC" 10 "$b_pid"
ctl b version | grep -q '^smc_option *attached to ' ||
	fail "b did not attach the option's program: $(ctl b version)"

s0=$(stat_get b smc_opt_echoed) d0=$(stat_get b smc_decline_nodev)
t0=$(stat_get b smc_conns_tcp) c0=$(stat_get b declines_sent_0x03030002)
kc -n 1048576
[ "$kc_rc" = 0 ] || fail "a good PROPOSAL: the bytes did not come back"
printf '%s\n' "$out" | grep -qx echoed || fail "the SYN-ACK did not echo the option"
printf '%s\n' "$out" | grep -q '^DECLINE NOSMCRDEV 0x03030002 v2$' ||
	fail "a good PROPOSAL: no DECLINE NOSMCRDEV"
printf '%s\n' "$out" | grep -q '^verified 1048576 bytes$' || fail "1 MiB not verified"
count b smc_opt_echoed "$s0" 1
count b smc_decline_nodev "$d0" 1
count b smc_conns_tcp "$t0" 1
# and in the per-code counters both dialects share
count b declines_sent_0x03030002 "$c0" 1

# what is wrong decides the code; the data goes through every time
for c in "NOSMCDEV 0x03030000:smc_decline_eid:-e OTHER-LAB" \
	"NOROUTE 0x030e0000:smc_decline_gid:-g 10.9.9.9"; do
	code=${c%%:*} rest=${c#*:} stat=${rest%%:*} args=${rest#*:}
	v0=$(stat_get b "$stat")
	kc $args
	[ "$kc_rc" = 0 ] || fail "$code: the bytes did not come back"
	printf '%s\n' "$out" | grep -q "^DECLINE $code v2\$" ||
		fail "want DECLINE $code"
	count b "$stat" "$v0" 1
done

# a SYN without the option: TCP from the first byte, no CLC
a0=$(stat_get b smc_opt_absent)
kc -p -n 200000
[ "$kc_rc" = 0 ] && printf '%s\n' "$out" | grep -qx 'not echoed' ||
	fail "a plain client was not served as TCP"
count b smc_opt_absent "$a0" 1

# garbage where the PROPOSAL belongs: reset, counted, nothing relayed
m0=$(stat_get b smc_clc_malformed)
kc -r
[ "$kc_rc" = 1 ] || fail "garbage instead of a PROPOSAL was served"
count b smc_clc_malformed "$m0" 1

# the client's address out of allow (after a reload): CNFERR, then TCP
sed -i 's|allow = \[ "127.0.0.0/8" \];|allow = [ "10.0.0.0/8" ];|' "$T/b.conf"
ctl b reload >/dev/null || fail "reload refused"
n0=$(stat_get b smc_decline_allow)
kc
[ "$kc_rc" = 0 ] && printf '%s\n' "$out" | grep -q '^DECLINE CNFERR 0x03000000 v2$' ||
	fail "a client out of allow: want DECLINE CNFERR and its data"
count b smc_decline_allow "$n0" 1
grep -q "export=x peer=127.0.0.1:[0-9]* dialect=smc-r target=127.0.0.1:$PORT_TARGET transport=tcp decline=CNFERR connected=yes" \
	"$T/b.log" || fail "the connection log does not name the dialect and the DECLINE"

# a client that keeps failing (out of allow now: each is charged to its
# host, as a failed handshake on the peer port) is soon declined at once,
# before anything is judged or set up; its data still goes through.  The
# host's bucket holds 10 failures and gains one a second: the failures go
# 12 at a time, so that a loaded machine's slow handshakes cannot refill
# it as fast as they drain it
l0=$(stat_get b smc_rate_limited)
i=0
for round in 1 2 3 4 5; do
	pids=
	for j in $(seq 12); do
		"$KC" -c "127.0.0.1:$PORT_SMC" -o "$OBJ" -n 1000 >"$T/kc-$j.out" 2>&1 &
		pids="$pids $!"
	done
	for p in $pids; do
		wait "$p" || fail "failing client (round $round): the bytes did not come back: $(cat "$T"/kc-*.out | tail -3)"
	done
	i=$((i + 12))
	[ "$(stat_get b smc_rate_limited)" -gt "$l0" ] && break
done
[ "$(stat_get b smc_rate_limited)" -gt "$l0" ] ||
	fail "a client that failed $i handshakes is still judged each time"
kc -n 1000
[ "$kc_rc" = 0 ] || fail "a rate-limited client: the bytes did not come back"
printf '%s\n' "$out" | grep -q '^DECLINE CNFERR 0x03000000 v2$' ||
	fail "a rate-limited client: want DECLINE CNFERR"
smc_log "declined at once after $i handshakes"

# no program: TCP, counted, and the reason shown
conf c "$PORT_SMC2" '"127.0.0.0/8"' "$T/nonexistent.bpf.o"
start_daemon c "$T/c.conf"
wait_listen "$PORT_SMC2" 10 "$c_pid"
ctl c version | grep -q "^smc_option *cannot read $T/nonexistent.bpf.o" ||
	fail "c does not say why the program is missing: $(ctl c version)"
smc_log "ksmcclient to c"
out=$("$KC" -c "127.0.0.1:$PORT_SMC2" -o "$OBJ" 2>&1) ||
	fail "c without the program did not serve TCP: $out"
printf '%s\n' "$out" | grep -qx 'not echoed' || fail "c echoed without a program"
[ "$(stat_get c smc_opt_unavailable)" = 1 ] || fail "c did not count smc_opt_unavailable"

# check export (as smc_chk -S): b's program is attached, loopback is not
# on an RDMA device; c's program is not there; both exit 1 and say why,
# each ingredient shown (the allow list since the reload above)
ctl b check export x >"$T/out" 2>"$T/err" && fail "check export x on b: status 0"
grep -q "^smcproxyctl: check export: export x: kernel SMC-R clients at 127.0.0.1:$PORT_SMC get TCP: loopback, no RDMA device$" "$T/err" &&
	grep -q '^  SMC-R option: attached to ' "$T/err" &&
	grep -q '^  kernel_smc.ueids: SMCPROXYD-LAB$' "$T/err" &&
	grep -q '^  kernel_smc.allow: 10.0.0.0/8$' "$T/err" &&
	grep -q '^  fix: use an address of an interface on an RDMA device$' "$T/err" ||
	fail "check export x on b: $(cat "$T/err")"
ctl c check export x >"$T/out" 2>"$T/err" && fail "check export x on c: status 0"
grep -q '^smcproxyctl: check export: export x: kernel SMC-R clients at .* get TCP: SMC-R option program not attached$' "$T/err" &&
	grep -q "^  SMC-R option: cannot read $T/nonexistent.bpf.o" "$T/err" ||
	fail "check export x on c: $(cat "$T/err")"

# smcproxyd -n says when kernel peers would get TCP, and the fix, where
# it once said only "configuration OK" (issue 47): a program that will
# not attach, an empty allow; not for b, whose program attaches
"$SMCPROXYD" -n -c "$T/c.conf" >"$T/c.check" 2>&1 || fail "-n rejects c.conf"
grep -q "warning: kernel_smc: the SMC-R option program will not attach (cannot read $T/nonexistent.bpf.o: .*set kernel_smc.bpf_object)" \
	"$T/c.check" || fail "-n does not say that c's program will not attach: $(cat "$T/c.check")"
grep -q 'configuration OK' "$T/c.check" || fail "-n on c.conf: no verdict"
if grep -q 'will not attach\|allow is empty' "$T/b.check"; then
	fail "-n warns about b, whose program attaches: $(cat "$T/b.check")"
fi
conf e "$PORT_SMC3" '' "$OBJ"
"$SMCPROXYD" -n -c "$T/e.conf" >"$T/e.check" 2>&1 || fail "-n rejects e.conf"
grep -q 'allow is empty: every kernel SMC-R client of an smc_listen is declined (CNFERR)' \
	"$T/e.check" || fail "-n does not say that an empty allow declines everyone: $(cat "$T/e.check")"

# no bpf_object: a daemon run from the build tree finds the program built
# beside it (src/bpf/) when none is installed, instead of serving TCP
conf d "$PORT_SMC3" '"127.0.0.0/8"' ""
"$SMCPROXYD" -n -c "$T/d.conf" >"$T/d.check" 2>&1 || fail "-n rejects d.conf"
if grep -q 'will not attach' "$T/d.check"; then
	fail "-n: no program found for d, with none configured: $(cat "$T/d.check")"
fi
start_daemon d "$T/d.conf"
wait_listen "$PORT_SMC3" 10 "$d_pid"
ctl d version | grep -q '^smc_option *attached to ' ||
	fail "d, with no bpf_object, did not attach a program: $(ctl d version)"
grep -q "SMC-R option program .*smc_opt.bpf.o attached" "$T/d.log" ||
	fail "d does not log which program it attached"
exit 0
