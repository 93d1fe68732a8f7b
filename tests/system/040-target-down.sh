#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The export's target is down (nothing listens): the client's connection
# to A must be closed without data, and the reason (target_refused) must
# be counted where the client was closed (A) and where it happened (B).
# When the target comes back, the same rule works again.
. "$(dirname "$0")/lib.sh"
smc_init

pair_ports
hold_port "$PORT_TARGET"	# down, and no test beside this one may take it
conf_a "$T/a.conf"
conf_b "$T/b.conf"
start_pair

a_before=$(reason_count a target_refused)
b_before=$(reason_count b target_refused)
xfer_client -n 3 -b 64K --expect-close -T 15 ||
	fail "client not closed when the target is down"
expect_reason b target_refused "$b_before"
expect_reason a target_refused "$a_before"

release_port
start_server "$PORT_TARGET"
xfer_client -n 2 -b 1M || fail "transfer failed once the target was back"
