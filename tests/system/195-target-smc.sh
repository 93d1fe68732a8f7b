#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# A rule's target_smc (the SMC-R dialect's rule side) on loopback,
# against tests/tools/ksmcdecline as the kernel SMC-R server (this host's
# kernel has no SMC-R; ksmc.rxe runs the real one).  The daemon, root
# here, loads the SMC-R option's BPF program and puts the option on its
# SYN to the server; the server echoes it, so the daemon owes it a CLC
# PROPOSAL (SMC-Rv2, our EID, the GID of our address), and whatever the
# server answers, the connection goes on as TCP, every byte verified:
#   - a first-contact ACCEPT (a 6.12 kernel's, captured, with this
#     server's GID): we DECLINE it NOSMCRDEV (the SMC-R dialect's link
#     groups are not served yet); with another host's GID: NOROUTE;
#   - an ACCEPT that joins a link group we do not have: DECLINE SYNCERR
#     with the first-contact bit, as a kernel client does;
#   - the server's own DECLINE: TCP, counted;
#   - a server without the option (plain TCP): no CLC at all, counted.
# smcproxyctl check smc ADDRESS sends the same PROPOSAL and names each
# answer (an ACCEPT, ended by our DECLINE PEERDECL, that connections from
# loopback could not use; a DECLINE by code; no echo; nothing listening),
# counting nothing.
. "$(dirname "$0")/lib.sh"
smc_init

KD=$SMC_BUILDDIR/tests/tools/ksmcdecline
OBJ=$SMC_BUILDDIR/src/bpf/smc_opt.bpf.o
FIX=$(cd "$(dirname "$0")/../fixtures/ksmc" && pwd)
[ -x "$KD" ] && [ -f "$OBJ" ] ||
	skip "ksmcdecline or smc_opt.bpf.o not built (no clang or libbpf)"
[ "$(id -u)" = 0 ] || skip "not root: the BPF program cannot be loaded"
smc_cgroup
need socat python3

set -- $(free_ports 3)
PORT_RULE=$1 PORT_SRV=$2 PORT_PLAIN=$3

cat >"$T/a.conf" <<EOF
smcproxyd: { name = "a"; control_socket = "$T/a.sock"; workers = $SMC_WORKERS; log_level = "debug"; };
rules = (
	{ name = "k"; listen = "127.0.0.1:$PORT_RULE"; target_smc = "127.0.0.1:$PORT_SRV"; }
);
kernel_smc: { ueids = [ "SMCPROXYD-LAB" ]; bpf_object = "$OBJ"; };
EOF
start_daemon a "$T/a.conf"
wait_listen "$PORT_RULE" 10 "$a_pid"

# server ARGS...: ksmcdecline on PORT_SRV for one connection
server()
{
	"$KD" -l "127.0.0.1:$PORT_SRV" -o "$OBJ" "$@" >"$T/kd.log" 2>&1 &
	kd_pid=$!
	track "$kd_pid" "$T/kd.log"
	wait_listen "$PORT_SRV" 10 "$kd_pid"
}

# roundtrip PORT BYTES: BYTES random bytes through the rule come back
roundtrip()
{
	echo_roundtrip 127.0.0.1 "$1" "$2"
}

# count COUNTER BEFORE WANT
count()
{
	local v

	v=$(stat_get a "$1") || fail "no $1"
	[ $((v - $2)) = "$3" ] || fail "a: $1 rose by $((v - $2)), want $3"
}

# the captured first-contact ACCEPT names the GID of the lane's b
# (10.99.0.2); the same with 127.0.0.1's, the server here
python3 - "$FIX/02-clc-s2c-accept.bin" "$T/accept-lo.bin" <<'PY'
import sys
m = bytearray(open(sys.argv[1], "rb").read())
m[16:32] = bytes(10) + b"\xff\xff" + bytes([127, 0, 0, 1])
open(sys.argv[2], "wb").write(m)
PY
for c in "$T/accept-lo.bin:NOSMCRDEV (0x03030002)\$:smc_out_decline_nodev" \
	"$FIX/02-clc-s2c-accept.bin:NOROUTE (0x030e0000)\$:smc_out_decline_gid" \
	"$FIX/22-clc-s2c-accept.bin:SYNCERR (0x04000000) sync\$:smc_out_decline_sync"; do
	file=${c%%:*} rest=${c#*:} want=${rest%:*} stat=${rest##*:}
	v0=$(stat_get a "$stat") p0=$(stat_get a smc_out_proposals)
	server -a "$file"
	roundtrip "$PORT_RULE" 1048576 || fail "$file: 1 MiB did not come back"
	wait "$kd_pid" || fail "$file: ksmcdecline: $(cat "$T/kd.log")"
	untrack "$kd_pid"
	sed 's/^/  /' "$T/kd.log" >&2
	grep -q '^PROPOSAL 156 bytes: v1 2, v2 0, release 1, RoCE GID ::ffff:127.0.0.1, max_conns 255, max_links 2, 1 EID(s)$' "$T/kd.log" &&
		grep -qx 'EID SMCPROXYD-LAB' "$T/kd.log" ||
		fail "$file: our PROPOSAL is not what a 6.12 client sends"
	grep -q "^client DECLINE $want" "$T/kd.log" ||
		fail "$file: want our DECLINE $want"
	count "$stat" "$v0" 1
	count smc_out_proposals "$p0" 1
done

# the server declines: TCP
d0=$(stat_get a smc_out_declines_received)
server -d 0x03030008
roundtrip "$PORT_RULE" 200000 || fail "after the server's DECLINE the bytes did not come back"
wait "$kd_pid" || fail "ksmcdecline: $(cat "$T/kd.log")"
untrack "$kd_pid"
count smc_out_declines_received "$d0" 1
grep -q "rule=k peer=127.0.0.1:$PORT_SRV dialect=smc-r client=127.0.0.1:[0-9]* transport=tcp decline=NOUEID connected=yes" \
	"$T/a.log" || fail "the connection log does not name the dialect and the server's DECLINE"

# a server that does not echo: plain TCP, counted
sed -i "s/target_smc = \"127.0.0.1:$PORT_SRV\"/target_smc = \"127.0.0.1:$PORT_PLAIN\"/" "$T/a.conf"
ctl a reload >/dev/null || fail "reload refused"
socat "TCP-LISTEN:$PORT_PLAIN,bind=127.0.0.1,reuseaddr,fork" EXEC:cat >"$T/echo.log" 2>&1 &
track $! "$T/echo.log"
wait_listen "$PORT_PLAIN" 10
n0=$(stat_get a smc_out_plain)
roundtrip "$PORT_RULE" 300000 || fail "a plain server: the bytes did not come back"
count smc_out_plain "$n0" 1

# smcproxyctl check smc ADDRESS (as smc_chk -C): the same PROPOSAL, the
# server's answer named, nothing counted, no connection relayed
# check_smc WANT_RC ADDRESS: its output in $T/err
check_smc()
{
	local rc

	ctl a check smc "$2" >"$T/out" 2>"$T/err"
	rc=$?
	smc_log "check smc $2: status $rc: $(cat "$T/err" "$T/out")"
	[ "$rc" = "$1" ] || fail "check smc $2: status $rc, want $1: $(cat "$T/err" "$T/out")"
}
p0=$(stat_get a smc_out_proposals) c0=$(stat_get a smc_out_conns)
server -a "$T/accept-lo.bin"
check_smc 1 "127.0.0.1:$PORT_SRV"
# a check relays nothing: ksmcdecline says "echoed 0 bytes", status 1
wait "$kd_pid"
untrack "$kd_pid"
grep -q '^PROPOSAL 156 bytes: v1 2, v2 0, release 1, RoCE GID ::ffff:127.0.0.1, max_conns 255, max_links 2, 1 EID(s)$' "$T/kd.log" &&
	grep -q '^client DECLINE PEERDECL (0x05000000)$' "$T/kd.log" ||
	fail "check smc: not the rule side's PROPOSAL, or no DECLINE after the ACCEPT: $(cat "$T/kd.log")"
grep -q "^smcproxyctl: check smc: smc 127.0.0.1:$PORT_SRV: it ACCEPTs SMC-R, but connections from here go on as TCP: loopback, no RDMA device$" "$T/err" &&
	grep -q '^  SMC-R option: echoed$' "$T/err" &&
	grep -q '^  answer: ACCEPT (first contact); our DECLINE PEERDECL 0x05000000 ended it$' "$T/err" ||
	fail "check smc, ACCEPT: $(cat "$T/err")"

server -d 0x03030008
check_smc 1 "127.0.0.1:$PORT_SRV"
wait "$kd_pid"
untrack "$kd_pid"
grep -q "^smcproxyctl: check smc: smc 127.0.0.1:$PORT_SRV: declined: NOUEID 0x03030008 (peer sent no UEID)$" "$T/err" &&
	grep -q '^  answer: DECLINE NOUEID 0x03030008 (peer sent no UEID)$' "$T/err" ||
	fail "check smc, DECLINE: $(cat "$T/err")"

check_smc 1 "127.0.0.1:$PORT_PLAIN"
grep -q "^smcproxyctl: check smc: smc 127.0.0.1:$PORT_PLAIN: does not speak SMC-R: its SYN-ACK did not echo the SMC-R option: plain TCP$" "$T/err" ||
	fail "check smc, a plain server: $(cat "$T/err")"
check_smc 1 "127.0.0.1:$PORT_SRV"
grep -q "^smcproxyctl: check smc: smc 127.0.0.1:$PORT_SRV: unreachable: connect to 127.0.0.1:$PORT_SRV: Connection refused$" "$T/err" ||
	fail "check smc, nothing listening: $(cat "$T/err")"
count smc_out_proposals "$p0" 0
count smc_out_conns "$c0" 0
ctl a check smc >/dev/null 2>"$T/err"
[ $? = 2 ] && grep -q '"check smc" takes one argument, ADDRESS' "$T/err" ||
	fail "check smc without an address: $(cat "$T/err")"
exit 0
