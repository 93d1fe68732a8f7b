#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# What systemd sees of a reload.  sd_notify: READY=1 with a STATUS= line
# saying what is served; each reload RELOADING=1 with MONOTONIC_USEC (the
# CLOCK_MONOTONIC time, for Type=notify-reload), then READY=1 with STATUS=
# the new counts or "reload failed: FILE:LINE: ...".  A refused reload (a
# [restart] key changed) makes "smcproxyctl reload" (the unit's ExecReload)
# exit 1 and the daemon log each file:line reason, also after a SIGHUP.
# A directory where the config file was fails the reload and the daemon
# keeps serving.
. "$(dirname "$0")/lib.sh"
smc_init
need python3 "$SMCPROXYCTL"

pair_ports
conf_a "$T/a.conf"
conf_b "$T/b.conf"

notify_listen "$T/notify.sock" "$T/notify.log"
start_server "$PORT_TARGET"
start_daemon b "$T/b.conf"
NOTIFY_SOCKET=$T/notify.sock start_daemon a "$T/a.conf"
wait_listen "$PORT_BPEER" 10 "$b_pid"
wait_listen "$PORT_RULE" 10 "$a_pid"

# wait_notify N: until the notify log has N datagrams, not counting the
# listening sockets handed to the store (FDSTORE=1, FDSTOREREMOVE=1:
# fdstore.c, 071-fdstore-restart checks those)
wait_notify()
{
	for i in $(seq 100); do
		[ "$(grep -cv FDSTORE "$T/notify.log")" -ge "$1" ] && return 0
		sleep 0.1
	done
	fail "want $1 sd_notify datagrams, got: $(cat "$T/notify.log")"
}

# check_notify FROM WANT...: datagrams FROM (1-based) on, one check each:
#   ready STATUS | reloading | failed STATUS-PREFIX
check_notify()
{
	python3 - "$T/notify.log" "$@" >"$T/check.out" 2>&1 <<'PY' ||
import sys
lines = [l for l in open(sys.argv[1]).read().splitlines()
         if "FDSTORE" not in l]
i = int(sys.argv[2]) - 1
for want in sys.argv[3:]:
    if i >= len(lines):
        sys.exit("datagram %d missing (want %s)" % (i + 1, want))
    at, msg = lines[i].split(" ", 1)
    f = dict(kv.split("=", 1) for kv in msg.split("|"))
    kind, _, arg = want.partition(" ")
    if kind == "reloading":
        if f.get("RELOADING") != "1":
            sys.exit("datagram %d: want RELOADING=1: %s" % (i + 1, msg))
        usec = int(f.get("MONOTONIC_USEC", "-1"))
        if not 0 <= int(at) - usec < 5000000:
            sys.exit("datagram %d: MONOTONIC_USEC %d, received at %s" %
                     (i + 1, usec, at))
    else:
        if f.get("READY") != "1":
            sys.exit("datagram %d: want READY=1: %s" % (i + 1, msg))
        st = f.get("STATUS", "")
        if kind == "ready" and st != arg:
            sys.exit("datagram %d: STATUS=%r, want %r" % (i + 1, st, arg))
        if kind == "failed" and not st.startswith("reload failed: " + arg):
            sys.exit("datagram %d: STATUS=%r, want 'reload failed: %s...'" %
                     (i + 1, st, arg))
    i += 1
PY
	fail "sd_notify: $(cat "$T/check.out")"
}

wait_notify 1
check_notify 1 "ready 1 rule, 0 exports, 1 peer, 0 link groups"
xfer_client -n 1 -b 256K || fail "no service through the pair"

# a good reload: one more rule
conf_a "$T/a.conf" x 'insecure = true;' "
	, { name = \"y\"; listen = \"127.0.0.1:$PORT_SPARE\"; peer = \"b\"; export = \"x\"; }"
ctl a reload >"$T/reload.out" 2>&1 || fail "a good reload failed: $(cat "$T/reload.out")"
wait_notify 3
check_notify 2 reloading "ready 2 rules, 0 exports, 1 peer, 0 link groups"

# a refused reload: workers is a [restart] key
sed -i "s/workers = [0-9]*;/workers = $((SMC_WORKERS + 1));/" "$T/a.conf"
wline=$(grep -n 'workers = ' "$T/a.conf" | cut -d: -f1)
ctl a reload >"$T/reload.out" 2>"$T/reload.err" && fail "reload with workers changed succeeded"
grep -q "^  $T/a.conf:$wline: smcproxyd.workers: " "$T/reload.err" ||
	fail "smcproxyctl reload does not print the reason: $(cat "$T/reload.err")"
wait_notify 5
check_notify 4 reloading "failed $T/a.conf:$wline: smcproxyd.workers: "
for i in $(seq 20); do
	grep -q "$T/a.conf:$wline: smcproxyd.workers: " "$T/a.log" && break
	sleep 0.1
done
grep -q "$T/a.conf:$wline: smcproxyd.workers: " "$T/a.log" ||
	fail "the daemon does not log why the reload failed"

# the same by SIGHUP: logged again
n=$(grep -c "$T/a.conf:$wline: smcproxyd.workers: " "$T/a.log")
kill -HUP "$a_pid"
wait_notify 7
check_notify 6 reloading "failed $T/a.conf:$wline: "
[ "$(grep -c "$T/a.conf:$wline: smcproxyd.workers: " "$T/a.log")" -gt "$n" ] ||
	fail "a refused SIGHUP reload does not log the reason"

# a directory where the file was
mv "$T/a.conf" "$T/a.conf.file"
mkdir "$T/a.conf"
ctl a reload >"$T/reload.out" 2>"$T/reload.err" && fail "reload of a directory succeeded"
grep -q "$T/a.conf: is a directory" "$T/reload.err" ||
	fail "reload of a directory: $(cat "$T/reload.err")"
kill -HUP "$a_pid"
wait_notify 11
kill -0 "$a_pid" 2>/dev/null || fail "the daemon died reloading a directory"
check_notify 8 reloading "failed $T/a.conf: is a directory" reloading "failed $T/a.conf: is a directory"
rmdir "$T/a.conf"
mv "$T/a.conf.file" "$T/a.conf"
sed -i "s/workers = [0-9]*;/workers = $SMC_WORKERS;/" "$T/a.conf"
ctl a reload >"$T/reload.out" 2>&1 || fail "reload after the fixes failed: $(cat "$T/reload.out")"
wait_notify 13
check_notify 12 reloading "ready 2 rules, 0 exports, 1 peer, 0 link groups"
xfer_client -n 2 -b 256K || fail "no service after the reloads"
