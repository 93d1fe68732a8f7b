#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The small things a new operator trips over: "smcproxyd --help" prints to
# stdout and exits 0 (a bad option: stderr, 2); "smcproxyctl --version"
# prints its version, the daemon's; "smcproxyctl version" shows the whole
# seconds of uptime_s as whole seconds; a listen address that is taken is
# named rules[N].listen, the form every other config error uses; the
# manual's example paths exist and the docs no longer say the data path
# is not wired; "smcproxyd -n" prints warnings (an unauthenticated peer)
# on stderr as file:line and refuses an export name CONN_OPEN cannot carry.
. "$(dirname "$0")/lib.sh"
smc_init
need python3 "$SMCPROXYCTL"
SRC=$(cd "$(dirname "$0")/../.." && pwd)

for h in --help -h; do
	"$SMCPROXYD" $h >"$T/out" 2>"$T/err"
	rc=$?
	[ "$rc" -eq 0 ] || fail "smcproxyd $h: status $rc, want 0"
	grep -q '^usage: smcproxyd' "$T/out" || fail "smcproxyd $h: no usage on stdout: $(cat "$T/out")"
	[ -s "$T/err" ] && fail "smcproxyd $h wrote to stderr: $(cat "$T/err")"
done
"$SMCPROXYD" --no-such-option >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" -eq 2 ] || fail "smcproxyd with a bad option: status $rc, want 2"
grep -q '^usage: smcproxyd' "$T/err" || fail "a bad option: no usage on stderr"
[ -s "$T/out" ] && fail "a bad option: usage on stdout"

want=$("$SMCPROXYD" -V) || fail "smcproxyd -V"
for v in --version -V; do
	got=$("$SMCPROXYCTL" $v 2>"$T/err") || fail "smcproxyctl $v: status $?: $(cat "$T/err")"
	[ "$got" = "smcproxyctl ${want#smcproxyd }" ] ||
		fail "smcproxyctl $v: \"$got\", want \"smcproxyctl ${want#smcproxyd }\""
done

pair_ports
conf_a "$T/a.conf"
start_daemon a "$T/a.conf"
wait_listen "$PORT_RULE" 10 "$a_pid"
ctl a version >"$T/version" || fail "smcproxyctl version"
grep -Eq '^uptime_s +[0-9]+s$' "$T/version" ||
	fail "uptime_s, whole seconds, shown as: $(grep uptime "$T/version")"

# a second daemon on the same rule address: rules[0].listen, and the rule
sed "s|control_socket = \"[^\"]*\"|control_socket = \"$T/a2.sock\"|" \
	"$T/a.conf" >"$T/a2.conf"
sed -i "/^peer_listen/d" "$T/a2.conf"
timeout 20 "$SMCPROXYD" -d -c "$T/a2.conf" >"$T/a2.log" 2>&1 &&
	fail "a second daemon on the same rule address started"
grep -q "a2.conf:[0-9]*: rules\[0\]\.listen: rule x: cannot listen on 127.0.0.1:$PORT_RULE" "$T/a2.log" ||
	fail "the taken address is not named rules[0].listen: $(cat "$T/a2.log")"

# smcproxyd -n: warnings on stderr with file:line, still "configuration OK"
# and 0; an export name longer than CONN_OPEN carries is an error
cat >"$T/n.conf" <<EOF
smcproxyd: { name = "a"; control_socket = "$T/n.sock"; };
peers = ( { name = "b"; address = "127.0.0.1:7102";
            insecure = true; } );
rules = ( { name = "r"; listen = "127.0.0.1:6380"; peer = "b";
            export = "redis"; } );
EOF
"$SMCPROXYD" -n -c "$T/n.conf" >"$T/out" 2>"$T/err" ||
	fail "smcproxyd -n of a file with warnings: status $?: $(cat "$T/err")"
[ "$(cat "$T/out")" = "configuration OK" ] ||
	fail "smcproxyd -n with warnings printed: $(cat "$T/out")"
grep -q "^$T/n.conf:3: warning: peers\[0\].insecure: peer b is not authenticated" "$T/err" ||
	fail "smcproxyd -n: no warning for the insecure peer: $(cat "$T/err")"
sed -i 's/export = "redis"/export = "redis-cache-of-the-west"/' "$T/n.conf"
"$SMCPROXYD" -n -c "$T/n.conf" >"$T/out" 2>"$T/err" &&
	fail "smcproxyd -n accepted a 23-byte export name"
grep -q "^$T/n.conf:5: rules\[0\].export: export name \"redis-cache-of-the-west\" is 23 bytes; over RDMA" "$T/err" ||
	fail "smcproxyd -n: the long export name is not named: $(cat "$T/err")"

# --pin-bpf outside a bpffs says so (libbpf's own error would not)
if [ -f "$SMC_BUILDDIR/src/bpf/smc_opt.bpf.o" ]; then
	"$SMCPROXYD" --pin-bpf "$T/pins" >"$T/out" 2>"$T/err" &&
		fail "--pin-bpf into $T/pins, not a bpffs, succeeded"
	grep -q "^smcproxyd: $T is not on a BPF file system (bpffs), where programs are pinned: give a directory under /sys/fs/bpf" "$T/err" ||
		fail "--pin-bpf outside a bpffs: $(cat "$T/err")"
	[ -e "$T/pins" ] && fail "--pin-bpf outside a bpffs made $T/pins"
fi

# documentation
for f in $(grep -o 'conf/examples/[A-Za-z0-9_.]*' "$SRC/docs/smcproxyd.conf.5" | sort -u); do
	[ -f "$SRC/$f" ] || fail "smcproxyd.conf(5) cites $f, which the tree does not have"
done
grep -q 'conf/examples/a.conf' "$SRC/docs/smcproxyd.conf.5" ||
	fail "smcproxyd.conf(5) does not cite conf/examples/a.conf"
grep -n 'is wired\|not yet wired\|wired into' "$SRC/docs/control.md" "$SRC/docs/stats.md" &&
	fail "the docs still say the data path is not wired"
exit 0
