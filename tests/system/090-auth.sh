#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Peer authentication with a pre-shared key file on both sides: with the
# same key, traffic flows; when B holds a different key, the client is
# closed without data and the reason auth_failed is counted, and the
# server behind B never sees a connection.
. "$(dirname "$0")/lib.sh"
smc_init

pair_ports
keyfile "$T/ab.key"
keyfile "$T/other.key"
conf_a "$T/a.conf" x "key_file = \"$T/ab.key\";"
conf_b "$T/b.conf" '"a"' "key_file = \"$T/ab.key\";"
start_server "$PORT_TARGET"
start_pair

xfer_client -n 4 -b 4M || fail "no traffic with matching keys"
xfer_client -n 2 --rst-after 64K || fail "reset not propagated with auth on"
conns=$(grep -c '^server conn id=' "$T/server-$PORT_TARGET.log")

# B restarts with another key.
stop_daemon b
conf_b "$T/b.conf" '"a"' "key_file = \"$T/other.key\";"
start_daemon b "$T/b.conf"
wait_listen "$PORT_BPEER" 10 "$b_pid"

a_before=$(reason_count a auth_failed)
xfer_client -n 2 -b 64K --expect-close -T 15 ||
	fail "client not closed when B has a different key"
expect_reason a auth_failed "$a_before"
[ "$(grep -c '^server conn id=' "$T/server-$PORT_TARGET.log")" -eq "$conns" ] ||
	fail "the server saw a connection from an unauthenticated peer"

# A key file that is too short or readable by others is refused.
head -c 16 /dev/urandom >"$T/short.key"
chmod 600 "$T/short.key"
conf_a "$T/bad.conf" x "key_file = \"$T/short.key\";"
"$SMCPROXYD" -n -c "$T/bad.conf" >"$T/bad.check" 2>&1 &&
	fail "smcproxyd -n accepts a 16-byte key"
keyfile "$T/open.key"
chmod 644 "$T/open.key"
conf_a "$T/bad.conf" x "key_file = \"$T/open.key\";"
"$SMCPROXYD" -n -c "$T/bad.conf" >"$T/bad.check" 2>&1 &&
	fail "smcproxyd -n accepts a key file readable by others"
exit 0
