#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Resets travel through the pair as resets, both ways, within a second:
# a client that aborts (SO_LINGER 0) must make the server see ECONNRESET,
# not a clean EOF, and a server that aborts must make the client see it.
# Each daemon counts what it saw: A the client's reset, B the target's.
. "$(dirname "$0")/lib.sh"
smc_init

pair_ports
conf_a "$T/a.conf"
conf_b "$T/b.conf"
start_server "$PORT_TARGET"
start_pair

a_before=$(reason_count a client_rst)
xfer_client -n 4 --rst-after 1M --rst-max-ms 1000 ||
	fail "client reset not propagated to the server as a reset"
expect_reason a client_rst "$a_before"

b_before=$(reason_count b target_rst)
xfer_client -n 4 --server-rst-after 1M --rst-max-ms 1000 ||
	fail "server reset not propagated to the client as a reset"
expect_reason b target_rst "$b_before"

# A reset right after the header, with nothing in flight.
xfer_client -n 4 --rst-after 0 || fail "immediate client reset not propagated"
xfer_client -n 4 --server-rst-after 0 || fail "immediate server reset not propagated"

# A few bytes and the reset right behind them: both are queued at the
# daemon when it wakes, and the reset must not be lost behind the short
# read of the bytes (no edge follows; the relay reads on to EAGAIN).
xfer_client -n 8 --rst-after 100 --rst-max-ms 1000 ||
	fail "client reset queued behind 100 bytes not propagated"
xfer_client -n 8 --server-rst-after 100 --rst-max-ms 1000 ||
	fail "server reset queued behind 100 bytes not propagated"

# The pair still carries data afterwards.
xfer_client -n 4 -b 1M || fail "transfer after the resets failed"
