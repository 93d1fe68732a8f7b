#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the VM: ib_dev_ops on rxe0 (tests/rxe/devcheck.c): two QPs connected
# to each other, RDMA WRITE inline and not, a SEND received, the bytes in
# place, max_inline_data read back, a receiver not ready waited for, a bad
# rkey failing with REM_ACCESS_ERR and flushing the QP, veth0 going down
# reaching both QPs as DEV_EV_PORT_DOWN; and the GID index
# ib_dev_open() picked for the local address is the one sysfs lists.
. "$(dirname "$0")/lib.sh"

rxe_setup
prog=$abs_top_builddir/tests/rxe/devcheck
[ -x "$prog" ] || rxe_die "$prog is not built (make check builds it)"

"$prog" "$RXE_DEV0" "$RXE_IP0" veth0 2>"$RXE_OUT/devcheck-stderr.log"
rc=$?
# devcheck flapped veth0: leave the port as the next check expects it
ip link set veth0 up
rxe_wait 20 rxe_port_ready "$RXE_DEV0" "$RXE_IP0" ||
	rxe_die "$RXE_DEV0 did not come back after the port-down check"
want=$(rxe_gid_index "$RXE_DEV0" "$RXE_IP0")
if grep -q "ib: $RXE_DEV0 port 1 gid $want," \
	"$RXE_OUT/devcheck-stderr.log"; then
	echo "ok: $RXE_DEV0 opened with gid index $want (sysfs agrees)"
else
	echo "FAIL: $RXE_DEV0 not opened with gid index $want"
	rc=1
fi
exit $rc
