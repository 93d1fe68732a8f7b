#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the VM: connections carried over RDMA between two real daemons.  A
# first connection makes a set up a link group to b over rxe0 (it waits
# for it up to 3 s, else takes the fallback); once the group is active every new connection is
# opened in band (CONN_OPEN / CONN_ACCEPT) and relayed through the send
# rings and RMBs: 16 connections x 4 MiB both ways, verified byte for
# byte by xfer, must all be counted conns_rdma on both daemons, none
# conns_fallback.  Then half-close and reset each way over RDMA, and a
# denied export refused with CONN_REJECT (export_denied on both sides).
. "$(dirname "$0")/lib.sh"

rxe_setup
rxe_pair_tools

R=$RXE_RUNDIR
PORT_B=7111
PORT_RULE=16390
PORT_DENIED=16391
PORT_T=16389
PORT_MET=16392
fail=0

head -c 48 /dev/urandom >"$R/psk" && chmod 600 "$R/psk" ||
	rxe_die "cannot write the key"

# One device, so the group has one link: RMB rkeys are per device and
# are not exchanged for a second link yet.
cat >"$R/a.conf" <<EOF
smcproxyd: { name = "a"; workers = 1; control_socket = "$R/a.sock";
             metrics_listen = "127.0.0.1:$PORT_MET"; };
peers = ( { name = "b"; address = "$RXE_IP0:$PORT_B"; key_file = "$R/psk"; } );
rules = ( { name = "x"; listen = "127.0.0.1:$PORT_RULE"; peer = "b";
            export = "x"; },
          { name = "y"; listen = "127.0.0.1:$PORT_DENIED"; peer = "b";
            export = "y"; } );
rdma: { devices = [ "$RXE_DEV0" ]; };
EOF
cat >"$R/b.conf" <<EOF
smcproxyd: { name = "b"; workers = 1; control_socket = "$R/b.sock"; };
peer_listen: { address = "$RXE_IP0:$PORT_B"; };
peers = ( { name = "a"; address = "$RXE_IP0:7112"; key_file = "$R/psk"; },
          { name = "c"; address = "127.0.0.2:7113"; insecure = true; } );
exports = ( { name = "x"; target = "127.0.0.1:$PORT_T"; peers = [ "a" ]; },
            { name = "y"; target = "127.0.0.1:$PORT_T"; peers = [ "c" ]; } );
rdma: { devices = [ "$RXE_DEV0" ]; };
EOF

"$XFER" server -l "127.0.0.1:$PORT_T" >"$RXE_OUT/server.log" 2>&1 &
server=$!
rxe_wait 20 sh -c "ss -ltn | grep -q ':$PORT_T '" ||
	rxe_die "xfer server did not listen"
daemon_start b "$R/b.conf" || rxe_die "daemon b did not start"
daemon_start a "$R/a.conf" || rxe_die "daemon a did not start"

# --- the group comes up (the first connection falls back) ------------------
xfer_ok "first connection (while the group is set up: waits, or fallback)" -T 60 -n 1 -b 64K
if rxe_wait 30 logged a 'peer b: link group active as client' &&
	rxe_wait 10 logged b 'peer a: link group active as server'; then
	ok "link group a-b active"
else
	bad "no active link group"
fi
"$CTL" -s "$R/a.sock" stats reset >/dev/null || bad "stats reset on a"
"$CTL" -s "$R/b.sock" stats reset >/dev/null || bad "stats reset on b"

# --- 16 x 4 MiB both ways over RDMA ------------------------------------------
t0=$(rxe_now)
xfer_ok "16 connections x 4 MiB both ways verify" -T 60 -n 16 -b 4M
took=$(awk -v a="$t0" -v b="$(rxe_now)" 'BEGIN { printf "%.1f", b - a }')
echo "# 16 x 4 MiB both ways in ${took} s"
for d in a b; do
	expect_stat $d conns_rdma 16
	expect_stat $d conns_fallback 0
	expect_stat $d llc_protocol_errors 0
	expect_stat $d lgr_terminated 0
done
for d in a b; do
	expect_stat $d close_link_failed 0
	expect_stat $d close_protocol_error 0
	expect_stat $d close_peer_rst 0
done
"$CTL" -s "$R/a.sock" -j stats >"$RXE_OUT/a.stats.json" 2>&1
"$CTL" -s "$R/b.sock" -j stats >"$RXE_OUT/b.stats.json" 2>&1

# --- show conns while a transfer runs ----------------------------------------
"$XFER" client -c "127.0.0.1:$PORT_RULE" -m stream -t 4 -T 30 \
	>"$RXE_OUT/stream.out" 2>&1 &
streamer=$!
sleep 2
"$CTL" -s "$R/a.sock" -j show conns >"$RXE_OUT/a.conns.json" 2>&1
wait "$streamer" || bad "stream transfer: $(tail -3 "$RXE_OUT/stream.out")"
if grep -q '"mode": *"rdma"' "$RXE_OUT/a.conns.json" &&
	grep -q '"tx_curs_fin"' "$RXE_OUT/a.conns.json"; then
	ok "show conns: mode rdma with cursors"
else
	bad "show conns shows no rdma connection: $(head -c 400 "$RXE_OUT/a.conns.json")"
fi

# --- the link in Prometheus: active, its completions, no errors -------------
if python3 - "http://127.0.0.1:$PORT_MET/metrics" "$RXE_DEV0" \
	>"$RXE_OUT/metrics.out" 2>&1 <<'PY'
import re, sys, urllib.request
text = urllib.request.urlopen(sys.argv[1], timeout=10).read().decode()
def val(name):
    m = re.search(r'^%s\{lgr="\d+",link="\d+",device="%s",dialect="native"\} (\S+)$'
                  % (name, re.escape(sys.argv[2])), text, re.M)
    if not m:
        sys.exit("no %s sample for %s" % (name, sys.argv[2]))
    return float(m.group(1))
assert val("smcproxyd_link_active") == 1, "link not active"
assert val("smcproxyd_link_completions_total") > 0, "no completions"
assert val("smcproxyd_link_errors_total") == 0, "errors"
assert 0 <= val("smcproxyd_link_test_link_rtt_seconds") < 60, "rtt"
PY
then
	ok "metrics: the link active, with completions, no errors, its TEST_LINK round trip"
else
	bad "metrics: $(tail -3 "$RXE_OUT/metrics.out")"
fi

# --- half-close and resets each way ------------------------------------------
xfer_ok "half-close over RDMA" -T 60 -n 4 -b 1M --half-close
xfer_ok "client reset passes to the server" -T 60 -n 2 --rst-after 1M
xfer_ok "server reset passes to the client" -T 60 -n 2 --server-rst-after 1M

# --- a denied export: CONN_REJECT --------------------------------------------
if "$XFER" client -c "127.0.0.1:$PORT_DENIED" -n 1 -b 64K --expect-close \
	-T 30 >"$RXE_OUT/denied.out" 2>&1; then
	ok "denied export: the client is closed without data"
else
	bad "denied export: $(tail -3 "$RXE_OUT/denied.out")"
fi
expect_stat a close_export_denied 1
expect_stat b export_denied 1
expect_stat a conns_fallback 0
if logged b 'peer a may not use export y'; then
	ok "b logged the refusal"
else
	bad "b did not log the refusal"
fi

daemon_stop a || bad "daemon a exited with status $?"
daemon_stop b || bad "daemon b exited with status $?"
kill "$server" 2>/dev/null
wait "$server" 2>/dev/null
exit $fail
