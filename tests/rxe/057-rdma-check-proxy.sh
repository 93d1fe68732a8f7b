#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the VM, over rxe: smcproxyctl check, as smc_chk, sets up a link group
# to the peer when there is none and answers ok with the TEST_LINK round
# trip; asked again (and from the other daemon, on its server-side group)
# it uses the group that is there.  Then the PROXY protocol over RDMA: a
# client from 127.0.0.5 through rule p reaches a target that parses the
# v2 header, which names that client and the rule's listener (CONN_ORIGIN
# before the CONN_OPEN), and b's connection log names the client with
# transport=rdma.
. "$(dirname "$0")/lib.sh"

rxe_setup
rxe_pair_tools

R=$RXE_RUNDIR
PORT_B=7157
PORT_RULE=16580
PORT_T=16581
PORT_P=16582
PORT_PT=16583
fail=0

rxe_pair_confs "devices = [ \"$RXE_DEV0\" ];" "" ",
          { name = \"p\"; listen = \"127.0.0.1:$PORT_P\"; peer = \"b\";
            export = \"p\"; }"
sed -i "s|^exports = ( \(.*\) );\$|exports = ( \1,\n  { name = \"p\"; target = \"127.0.0.1:$PORT_PT\"; peers = [ \"a\" ]; proxy_protocol = true; } );|" \
	"$R/b.conf"
grep -q 'proxy_protocol = true' "$R/b.conf" || rxe_die "b.conf: $(cat "$R/b.conf")"

cat >"$R/client.py" <<'PY'
import socket, sys
c = socket.socket()
c.bind(("127.0.0.5", 0))
c.settimeout(60)
c.connect(("127.0.0.1", int(sys.argv[1])))
c.sendall(b"hello")
c.shutdown(socket.SHUT_WR)
got = b""
while True:
    d = c.recv(4096)
    if not d:
        break
    got += d
print(c.getsockname()[1], got.decode().strip())
PY

rxe_target_start
python3 "$abs_top_srcdir/tests/tools/proxy_target.py" "$PORT_PT" >"$RXE_OUT/target.log" 2>&1 &
target=$!
rxe_wait 20 sh -c "ss -ltn | grep -q ':$PORT_PT '" ||
	rxe_die "the PROXY target did not listen"
daemon_start b "$R/b.conf" || rxe_die "daemon b did not start"
daemon_start a "$R/a.conf" || rxe_die "daemon a did not start"

# --- check: no group yet, the check sets one up ------------------------------
if "$CTL" -s "$R/a.sock" check b >"$RXE_OUT/check1.out" 2>&1 &&
	grep -q '^peer b: ok$' "$RXE_OUT/check1.out" &&
	grep -Eq '^  transport: rdma \(lgr [0-9]+ link [0-9]+, set up now, TEST_LINK round trip [0-9]+\.[0-9]{3} ms\)$' \
		"$RXE_OUT/check1.out"; then
	ok "check b sets up a group: $(cat "$RXE_OUT/check1.out")"
else
	bad "check b (no group): $(cat "$RXE_OUT/check1.out")"
fi
if "$CTL" -s "$R/a.sock" check b >"$RXE_OUT/check2.out" 2>&1 &&
	grep -q '^peer b: ok$' "$RXE_OUT/check2.out" &&
	grep -Eq '^  transport: rdma \(lgr [0-9]+ link [0-9]+, TEST_LINK round trip' \
		"$RXE_OUT/check2.out"; then
	ok "check b on the group there: $(cat "$RXE_OUT/check2.out")"
else
	bad "check b (group up): $(cat "$RXE_OUT/check2.out")"
fi
if "$CTL" -s "$R/b.sock" -j check a >"$RXE_OUT/check3.out" 2>&1 &&
	grep -q '"ok":true.*"transport":"rdma".*"set_up":false' \
		"$RXE_OUT/check3.out"; then
	ok "check a from b, on its server-side group"
else
	bad "check a from b: $(cat "$RXE_OUT/check3.out")"
fi
expect_stat a lgr_created 1

# --- PROXY protocol v2 over RDMA ---------------------------------------------
out=$(python3 "$R/client.py" "$PORT_P" 2>&1)
port=${out%% *}
if [ "${out#* }" = "proxy 127.0.0.5:$port 127.0.0.1:$PORT_P hello" ]; then
	ok "the target got the client in a PROXY v2 header over RDMA"
else
	bad "PROXY over RDMA: '$out'"
fi
expect_stat a conns_fallback 0
if rxe_wait 10 logged b "export=p peer=a target=127.0.0.1:$PORT_PT client=127.0.0.5:$port transport=rdma"; then
	ok "b's connection log names the client"
else
	bad "b's connection log: $(grep 'export=p' "$RXE_OUT/b.log")"
fi

kill "$target" 2>/dev/null
wait "$target" 2>/dev/null
rxe_pair_stop
exit $fail
