#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Reload: a broken file (SIGHUP) is reported with file and line and
# changes nothing: the daemon keeps running, a transfer that spans the
# reload completes, new connections still work.  A good file then adds a
# rule without disturbing the old one or a transfer in progress.
. "$(dirname "$0")/lib.sh"
smc_init

pair_ports
conf_a "$T/a.conf"
conf_b "$T/b.conf"
start_server "$PORT_TARGET"
start_pair

# A transfer that runs across both broken reloads.
smc_log "background: xfer client -m stream -t 4 --verify -n 2"
"$XFER" client -c "127.0.0.1:$PORT_RULE" -m stream -t 4 --verify -n 2 -T 60 \
	>"$T/stream.log" 2>&1 &
stream_pid=$!
track "$stream_pid" "$T/stream.log"
sleep 0.5

for d in a b; do
	cp "$T/$d.conf" "$T/$d.conf.good"
	cat >>"$T/$d.conf" <<'BROKEN'
no_such_key = 1;
rules = ( { name = "dup"; listen = "127.0.0.1:not-a-port"; } ;
BROKEN
	"$SMCPROXYD" -n -c "$T/$d.conf" >"$T/$d.check" 2>&1 &&
		fail "smcproxyd -n accepts a broken file"
	grep -q "$d.conf:[0-9]" "$T/$d.check" ||
		fail "smcproxyd -n does not say file:line: $(head -n 3 "$T/$d.check")"
	lines=$(wc -l <"$T/$d.log")
	eval "kill -HUP \$${d}_pid"
	for i in $(seq 50); do
		tail -n +$((lines + 1)) "$T/$d.log" | grep -q "$d.conf:[0-9]" && break
		sleep 0.1
	done
	tail -n +$((lines + 1)) "$T/$d.log" | grep -q "$d.conf:[0-9]" ||
		fail "daemon $d did not report the broken file on SIGHUP"
	eval "kill -0 \$${d}_pid" || fail "daemon $d died on a broken reload"
	if [ -x "$SMCPROXYCTL" ]; then
		ctl "$d" reload >"$T/$d.reload" 2>&1 &&
			fail "smcproxyctl reload succeeds with a broken file"
	fi
	xfer_client -n 4 -b 1M || fail "no service after $d's broken reload"
done

wait "$stream_pid"
rc=$?
untrack "$stream_pid"
cat "$T/stream.log"
[ "$rc" -eq 0 ] || fail "the transfer across the reloads failed"

# A good reload on A adds a rule while a transfer runs; the transfer
# survives and both rules work.
cp "$T/a.conf.good" "$T/a.conf"
cp "$T/b.conf.good" "$T/b.conf"
conf_a "$T/a.conf" x insecure\ =\ true\; "
	, { name = \"y\"; listen = \"127.0.0.1:$PORT_SPARE\"; peer = \"b\"; export = \"x\"; }"
"$SMCPROXYD" -n -c "$T/a.conf" >"$T/a.check" 2>&1 ||
	fail "good config rejected: $(cat "$T/a.check")"
smc_log "background: xfer client -m stream -t 3 --verify -n 2"
"$XFER" client -c "127.0.0.1:$PORT_RULE" -m stream -t 3 --verify -n 2 -T 60 \
	>"$T/stream2.log" 2>&1 &
stream_pid=$!
track "$stream_pid" "$T/stream2.log"
sleep 0.5
kill -HUP "$a_pid"
kill -HUP "$b_pid"
wait_listen "$PORT_SPARE" 10 "$a_pid"
grep -q 'reloaded' "$T/a.log" || smc_log "note: A logged no 'reloaded' line"
wait "$stream_pid"
rc=$?
untrack "$stream_pid"
cat "$T/stream2.log"
[ "$rc" -eq 0 ] || fail "a transfer across a good reload failed"
xfer_client -n 2 -b 1M || fail "old rule broken after a good reload"
smc_log "xfer client -c 127.0.0.1:$PORT_SPARE -n 2 -b 1M"
"$XFER" client -c "127.0.0.1:$PORT_SPARE" -n 2 -b 1M -T 60 >>"$T/client.log" 2>&1 ||
	fail "new rule from a good reload does not work"
