#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The small things a new operator trips over: "smcproxyd --help" prints to
# stdout and exits 0 (a bad option: stderr, 2); "smcproxyctl --version"
# prints its version, the daemon's; "smcproxyctl version" shows the whole
# seconds of uptime_s as whole seconds; a listen address that is taken is
# named rules[N].listen, the form every other config error uses; the
# manual's example paths exist and the docs no longer say the data path
# is not wired.
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

# documentation
for f in $(grep -o 'conf/examples/[A-Za-z0-9_.]*' "$SRC/docs/smcproxyd.conf.5" | sort -u); do
	[ -f "$SRC/$f" ] || fail "smcproxyd.conf(5) cites $f, which the tree does not have"
done
grep -q 'conf/examples/a.conf' "$SRC/docs/smcproxyd.conf.5" ||
	fail "smcproxyd.conf(5) does not cite conf/examples/a.conf"
grep -n 'is wired\|not yet wired\|wired into' "$SRC/docs/control.md" "$SRC/docs/stats.md" &&
	fail "the docs still say the data path is not wired"
exit 0
