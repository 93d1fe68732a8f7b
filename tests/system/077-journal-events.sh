#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The journal fields of the events (docs/stats.md "Log events"), as a
# journal receives them: daemon A runs in a mount namespace of its own
# whose /run has a socket at /run/systemd/journal/socket, read by this
# test the way journald reads it (the native protocol), and its standard
# error named by JOURNAL_STREAM as systemd does.  A's peer b comes up over
# the fallback (peer_up, PEER=b), a reload is done (reload) and one
# refused (reload_failed), b stops and a client's try finds it gone
# (peer_down), b comes back with another key (auth_failed, PEER=b
# RULE=x): each with its fixed MESSAGE_ID.  Link events need RDMA: the
# unit test (check_log) and the VM lanes' logs cover their text.
# Needs root (a mount namespace); skipped with a message without it.
. "$(dirname "$0")/lib.sh"
smc_init
need python3
[ "$(id -u)" = 0 ] ||
	skip "not root: no mount namespace for a journal socket of our own"
unshare -m true 2>/dev/null || skip "unshare -m fails here"

pair_ports
keyfile "$T/ab.key"
keyfile "$T/other.key"
conf_a "$T/a.conf" x "key_file = \"$T/ab.key\";"
conf_b "$T/b.conf" '"a"' "key_file = \"$T/ab.key\";"
"$SMCPROXYD" -n -c "$T/a.conf" >"$T/a.check" 2>&1 ||
	fail "smcproxyd -n rejects a.conf: $(cat "$T/a.check")"

# journald's side: each datagram as one JSON object per line
cat >"$T/journal.py" <<'PY'
import json, os, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
out = open(sys.argv[2], "a")
while True:
    d, fields = s.recv(65536), {}
    while d:
        line, nl, rest = d.partition(b"\n")
        if b"=" in line:
            k, v = line.split(b"=", 1)
            d = rest
        else:  # KEY\n, 64-bit little-endian length, value, \n
            n = struct.unpack("<Q", rest[:8])[0]
            k, v, d = line, rest[8:8 + n], rest[9 + n:]
        fields[k.decode()] = v.decode(errors="replace")
    out.write(json.dumps(fields) + "\n")
    out.flush()
PY
# in A's namespace: a private /run, the socket, then the daemon itself
cat >"$T/ns.sh" <<'SH'
mount -t tmpfs tmpfs /run || exit 1
mkdir -p /run/systemd/journal
python3 "$1" /run/systemd/journal/socket "$2" &
echo $! >"$3"
for i in $(seq 200); do
	[ -S /run/systemd/journal/socket ] && break
	sleep 0.05
done
JOURNAL_STREAM=$(stat -L -c '%d:%i' /proc/self/fd/2)
export JOURNAL_STREAM
shift 3
exec "$@"
SH

start_server "$PORT_TARGET"
start_daemon b "$T/b.conf"
unshare -m --propagation private sh "$T/ns.sh" "$T/journal.py" \
	"$T/journal.out" "$T/journal.pid" \
	"$SMCPROXYD" -d -c "$T/a.conf" >>"$T/a.log" 2>&1 &
a_pid=$!
track "$a_pid" "$T/a.log"
SMC_DAEMONS="$SMC_DAEMONS a:$a_pid"
for i in $(seq 100); do
	[ -s "$T/journal.pid" ] && break
	sleep 0.05
done
track "$(cat "$T/journal.pid")" "$T/journal.out"
wait_listen "$PORT_BPEER" 10 "$b_pid"
wait_listen "$PORT_RULE" 10 "$a_pid"

xfer_client -n 1 -b 64K || fail "no traffic through the pair"
ctl a reload >"$T/reload.out" 2>&1 || fail "reload: $(cat "$T/reload.out")"
cp "$T/a.conf" "$T/a.good"
echo 'rules = oops;' >>"$T/a.conf"
ctl a reload >"$T/reload.out" 2>&1 && fail "a broken config was reloaded"
cp "$T/a.good" "$T/a.conf"

stop_daemon b
xfer_client -n 1 -b 1K --expect-close -T 15 >/dev/null 2>&1
conf_b "$T/b.conf" '"a"' "key_file = \"$T/other.key\";"
start_daemon b "$T/b.conf"
wait_listen "$PORT_BPEER" 10 "$b_pid"
xfer_client -n 1 -b 1K --expect-close -T 15 >/dev/null 2>&1

# event [FIELD=VALUE...]: an entry with MESSAGE_ID and those fields
python3 - "$T/journal.out" >"$T/check.out" 2>&1 <<'PY' ||
import json, sys, time
ids = {
    "peer_up": "fc02ec302b63463089d825550f13f637",
    "peer_down": "7f26b048b33b4e3f876f27c3b3cadcb7",
    "auth_failed": "cf64de56aaf1493fb3ae6f27f7457a89",
    "reload": "99eb0c885a0c4c2da9e65459e167112b",
    "reload_failed": "39e84c19d16548c58b3f0b97272411f7",
}
want = [
    ("peer_up", {"PEER": "b", "PRIORITY": "6"}, "peer b: up over the fallback"),
    ("reload", {"PRIORITY": "6"}, "reloaded "),
    ("reload_failed", {"PRIORITY": "4"}, "reload: "),
    ("peer_down", {"PEER": "b", "PRIORITY": "4"}, "peer b: down: "),
    ("auth_failed", {"PEER": "b", "RULE": "x", "PRIORITY": "4"}, "rule x: peer b"),
]
for _ in range(100):
    entries = [json.loads(l) for l in open(sys.argv[1])]
    missing = [w for w in want
               if not any(e.get("MESSAGE_ID") == ids[w[0]] and
                          all(e.get(k) == v for k, v in w[1].items()) and
                          w[2] in e.get("MESSAGE", "") for e in entries)]
    if not missing:
        break
    time.sleep(0.1)
else:
    sys.exit("missing %r in %d entries: %s" % (
        [m[0] for m in missing], len(entries),
        [e for e in entries if "MESSAGE_ID" in e]))
# in order, and every entry as journald wants it
order = [next(i for i, e in enumerate(entries)
              if e.get("MESSAGE_ID") == ids[w[0]]) for w in want]
if order != sorted(order):
    sys.exit("events out of order: %r" % order)
for e in entries:
    if e.get("SYSLOG_IDENTIFIER") != "smcproxyd" or "MESSAGE" not in e:
        sys.exit("entry without identifier or message: %r" % e)
# the link fields only where a link is meant
for e in entries:
    if e.get("MESSAGE_ID") in ids.values() and ("LGR" in e or "LINK" in e):
        sys.exit("LGR or LINK on %r" % e)
print("%d entries, %d events" % (
    len(entries), sum(1 for e in entries if "MESSAGE_ID" in e)))
PY
	fail "journal: $(cat "$T/check.out")"
smc_log "journal: $(cat "$T/check.out")"
exit 0
