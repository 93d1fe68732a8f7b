#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# B refuses an export: once because its export does not list A among its
# peers (export_denied), once because A asks for an export B does not have
# (unknown_export).  Either way the client is closed without data and A
# counts the reason; the server never sees a connection.
. "$(dirname "$0")/lib.sh"
smc_init

pair_ports
conf_a "$T/a.conf" x insecure\ =\ true\; "
	, { name = \"nosuch\"; listen = \"127.0.0.1:$PORT_SPARE\"; peer = \"b\"; export = \"nosuch\"; }"
conf_b "$T/b.conf" '"c"'
# B knows a third daemon "c", the only one its export admits.
sed -i "s|^peers = (|peers = (\n\t{ name = \"c\"; address = \"127.0.0.2:$PORT_SPARE\"; insecure = true; },|" "$T/b.conf"
start_server "$PORT_TARGET"
start_pair
wait_listen "$PORT_SPARE" 10 "$a_pid"

before=$(reason_count a export_denied)
xfer_client -n 2 -b 64K --expect-close -T 15 ||
	fail "client not closed when B denies the export"
expect_reason a export_denied "$before"

before=$(reason_count a unknown_export)
smc_log "xfer client -c 127.0.0.1:$PORT_SPARE --expect-close"
"$XFER" client -c "127.0.0.1:$PORT_SPARE" -n 2 -b 64K --expect-close -T 15 \
	>>"$T/client.log" 2>&1 || fail "client not closed for an unknown export"
expect_reason a unknown_export "$before"

grep -q '^server conn id=' "$T/server-$PORT_TARGET.log" &&
	fail "the server saw a connection for a denied export"
exit 0
