#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The main job inside the Soft-RoCE VM (run by contrib/demo through
# tests/rxe/vm-run): two smcproxyd daemons on rxe0 bridge a real
# redis-server; the first connection sets up the link group, then
# redis-benchmark runs through the pair over RDMA and directly, and the
# daemons' statistics, link groups and links are shown.
. "$abs_top_srcdir/tests/rxe/lib.sh"

requests=${RXE_DEMO_REQUESTS:-2000}
CTL=$abs_top_builddir/src/smcproxyctl
R=$RXE_RUNDIR

rxe_setup
head -c 48 /dev/urandom >"$R/psk" && chmod 600 "$R/psk" ||
	rxe_die "cannot write the key"
cat >"$R/a.conf" <<CONF
smcproxyd: { name = "a"; workers = 1; control_socket = "$R/a.sock"; };
peers = ( { name = "b"; address = "$RXE_IP0:7111"; key_file = "$R/psk"; } );
rules = ( { name = "redis"; listen = "127.0.0.1:16380"; peer = "b";
            export = "redis"; } );
rdma: { devices = [ "$RXE_DEV0" ]; };
CONF
cat >"$R/b.conf" <<CONF
smcproxyd: { name = "b"; workers = 1; control_socket = "$R/b.sock"; };
peer_listen: { address = "$RXE_IP0:7111"; };
peers = ( { name = "a"; address = "$RXE_IP0:7112"; key_file = "$R/psk"; } );
exports = ( { name = "redis"; target = "127.0.0.1:16379"; peers = [ "a" ]; } );
rdma: { devices = [ "$RXE_DEV0" ]; };
CONF

redis-server --port 16379 --bind 127.0.0.1 --save '' --appendonly no \
	>"$RXE_OUT/redis.log" 2>&1 &
rxe_wait 20 redis-cli -p 16379 ping >/dev/null || rxe_die "redis-server"
daemon_start b "$R/b.conf" || rxe_die "daemon b did not start"
daemon_start a "$R/a.conf" || rxe_die "daemon a did not start"

echo "== client -> a 127.0.0.1:16380 -> (RDMA over $RXE_DEV0) -> b -> redis 127.0.0.1:16379"
redis-cli -p 16380 ping >/dev/null || rxe_die "first connection failed"
rxe_wait 30 grep -q 'link group active' "$RXE_OUT/a.log" ||
	rxe_die "no link group came up (see $RXE_OUT/a.log)"
"$CTL" -s "$R/a.sock" stats reset >/dev/null
"$CTL" -s "$R/b.sock" stats reset >/dev/null

bench() {
	redis-benchmark -p "$1" -n "$requests" -c 10 -q -t set,get 2>&1 |
		tr '\r' '\n' | grep 'requests per second'
}
echo "== redis-benchmark through the smcproxyd pair (RDMA)"
bench 16380 || rxe_die "redis-benchmark through the pair failed"
echo "== redis-benchmark direct (same VM)"
bench 16379
echo "== smcproxyctl -s a show lgrs; show links"
"$CTL" -s "$R/a.sock" show lgrs
"$CTL" -s "$R/a.sock" show links
echo "== smcproxyctl -s a stats (connections, bytes, send engine)"
"$CTL" -s "$R/a.sock" stats |
	grep -E '^(STATISTIC|conns_|tx_|rx_|lgr_|link_|close_client_fin)'
echo "== smcproxyctl -s b stats (connections, bytes)"
"$CTL" -s "$R/b.sock" stats | grep -E '^(STATISTIC|conns_|tx_|rx_)'
rdma=$(rxe_stat a conns_rdma)
[ "${rdma:-0}" -gt 0 ] || rxe_die "no connection went over RDMA"
daemon_stop a
daemon_stop b
