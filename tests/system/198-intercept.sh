#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Transparent SMC-R (a rule's intercept, target_smc = "original") on
# loopback: the daemon attaches its intercept programs to a cgroup below
# the test's, and unmodified python clients in that cgroup connect to
# plain TCP echo servers on 127.0.0.2.  The first connect to a server is
# taken to the daemon, which carries it to the original destination with
# the SMC-R option; the server does not echo it, so it goes on as TCP on
# the same connection, every byte verified, the client's getpeername the
# server's address; the daemon remembers the server as TCP, and the next
# connect to it goes direct (the daemon takes no more).  A client outside
# the cgroup is never taken.  After kill -9 of the daemon, a connect to a
# server it never saw (which it would have taken) goes direct too.
# smcproxyctl show intercept counts and lists what was learned, the
# connection log names the destination, and smcproxyd -n refuses a
# cgroup that is none.
. "$(dirname "$0")/lib.sh"
smc_init

OBJ=$SMC_BUILDDIR/src/bpf/smc_opt.bpf.o
[ -f "$OBJ" ] && [ -f "$SMC_BUILDDIR/src/bpf/intercept.bpf.o" ] ||
	skip "the BPF programs are not built (no clang or libbpf)"
[ "$(id -u)" = 0 ] || skip "not root: the BPF programs cannot be loaded"
smc_cgroup
need socat python3
APP=$SMC_CGROUP/app
mkdir "$APP" || fail "cannot make the cgroup $APP"

set -- $(free_ports 3)
PORT_RULE=$1 PORT_SRV=$2 PORT_SRV2=$3

cat >"$T/a.conf" <<EOF
smcproxyd: { name = "a"; control_socket = "$T/a.sock"; workers = $SMC_WORKERS; log_level = "debug"; };
rules = (
	{ name = "t"; listen = "127.0.0.1:$PORT_RULE";
	  intercept = [ "127.0.0.2/32:*" ]; intercept_cgroup = "$APP";
	  target_smc = "original"; }
);
kernel_smc: { ueids = [ "SMCPROXYD-LAB" ]; bpf_object = "$OBJ"; };
EOF

for p in "$PORT_SRV" "$PORT_SRV2"; do
	socat "TCP-LISTEN:$p,bind=127.0.0.2,reuseaddr,fork" EXEC:cat \
		>"$T/echo-$p.log" 2>&1 &
	track $! "$T/echo-$p.log"
done
# -n: a directory that is no cgroup v2
sed "s|intercept_cgroup = \"$APP\"|intercept_cgroup = \"$T/nocg\"|" \
	"$T/a.conf" >"$T/bad.conf"
"$SMCPROXYD" -n -c "$T/bad.conf" >"$T/bad.out" 2>&1 &&
	fail "smcproxyd -n accepts an intercept_cgroup that is no cgroup"
grep -q "rule t: intercept would not attach: $T/nocg is not in a cgroup v2 hierarchy" \
	"$T/bad.out" || fail "smcproxyd -n: $(cat "$T/bad.out")"

start_daemon a "$T/a.conf"
wait_listen "$PORT_RULE" 10 "$a_pid"
for i in $(seq 100); do
	grep -q "rule t: intercepting the connects of $APP" "$T/a.log" && break
	sleep 0.1
done
grep -q "rule t: intercepting the connects of $APP" "$T/a.log" ||
	fail "the daemon did not attach its intercept programs"

# roundtrip IN_CGROUP PORT BYTES: echo_roundtrip to 127.0.0.2:PORT from a
# process in the intercepted cgroup (yes) or in the test's (no)
roundtrip()
{
	local cg=$SMC_CGROUP

	[ "$1" = yes ] && cg=$APP
	# a subshell of its own, moved into the cgroup with what it starts
	(echo "$BASHPID" >"$cg/cgroup.procs" &&
		echo_roundtrip 127.0.0.2 "$2" "$3")
}

# count COUNTER BEFORE WANT: a's counter rose by WANT
count()
{
	stat_rose a "$@"
}

c0=$(stat_get a intercept_conns) p0=$(stat_get a smc_out_plain)
t0=$(stat_get a smc_out_tcp)
roundtrip yes "$PORT_SRV" 1048576 || fail "the first connect: 1 MiB"
count intercept_conns "$c0" 1
count smc_out_plain "$p0" 1
count smc_out_tcp "$t0" 1

# learned as TCP: the next connects go direct
roundtrip yes "$PORT_SRV" 200000 || fail "the second connect"
roundtrip yes "$PORT_SRV" 1000 || fail "the third connect"
count intercept_conns "$c0" 1

grep -q "rule=t peer=127.0.0.2:$PORT_SRV dialect=smc-r client=127.0.0.1:[0-9]* destination=127.0.0.2:$PORT_SRV transport=tcp" \
	"$T/a.log" || fail "the connection log does not name the destination"
ctl a -j show intercept >"$T/show.json" || fail "show intercept"
python3 - "$T/show.json" "127.0.0.2:$PORT_SRV" "$APP" <<'PY' ||
import json, sys
d = json.load(open(sys.argv[1]))["data"]
r, = d["rules"]
want = {"rule": "t", "cgroup": sys.argv[3], "attached": True, "taken": 1,
        "smc": 0, "tcp": 1, "bypassed": 2}
bad = {k: r.get(k) for k in want if r.get(k) != want[k]}
dst, = d["destinations"]
if dst["destination"] != sys.argv[2] or dst["speaks"] != "tcp" or \
        not 590 <= dst["expires_s"] <= 600:
    bad["destination"] = dst
sys.exit("show intercept: %r" % bad if bad else 0)
PY
	fail "show intercept: $(cat "$T/show.json")"
ctl a show intercept | grep -q "^t .*$APP" || fail "show intercept: no table"

# outside the cgroup, never taken
roundtrip no "$PORT_SRV2" 1000 || fail "a client outside the cgroup"
count intercept_conns "$c0" 1

# fail open: the daemon killed, a destination it would have taken
kill -9 "$a_pid"
wait "$a_pid" 2>/dev/null
untrack "$a_pid"
roundtrip yes "$PORT_SRV2" 300000 ||
	fail "after kill -9 a connect from the cgroup did not go direct"
exit 0
