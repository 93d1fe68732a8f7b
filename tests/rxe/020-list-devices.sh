#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the VM: smcproxyd --list-devices shows both rxe devices with their port
# state, MTU and GID table, and for a local address picks the RoCE v2 GID
# index the kernel itself lists for it, on the device that has it only.
. "$(dirname "$0")/lib.sh"

rxe_setup
fail=0

# list_for IP: the listing for IP, also kept in $RXE_OUT/list-IP.txt.
list_for() {
	"$SMCPROXYD" --list-devices --local-addr "$1" >"$RXE_OUT/list-$1.txt"
}

# expect FILE PATTERN WHAT
expect() {
	if grep -q -- "$2" "$1"; then
		echo "ok: $3"
	else
		echo "FAIL: $3: no line matching '$2' in $(basename "$1")"
		fail=1
	fi
}

if ! list_for "$RXE_IP0"; then
	echo "FAIL: --list-devices --local-addr $RXE_IP0 exited non-zero"
	fail=1
fi
l0=$RXE_OUT/list-$RXE_IP0.txt
cat "$l0"
expect "$l0" "^$RXE_DEV0: " "$RXE_DEV0 listed"
expect "$l0" "^$RXE_DEV1: " "$RXE_DEV1 listed"
mtu=$(ibv_devinfo -d "$RXE_DEV0" | awk '$1 == "active_mtu:" { print $2 }')
expect "$l0" "port 1: ACTIVE, active_mtu $mtu " \
	"port state and MTU ($mtu, as ibv_devinfo says)"
expect "$l0" "::ffff:$RXE_IP0, RoCE v2, netdev veth0" \
	"IPv4 GID of $RXE_DEV0 with its type and netdev"
expect "$l0" "::ffff:$RXE_IP1, RoCE v2, netdev veth1" \
	"IPv4 GID of $RXE_DEV1 with its type and netdev"

for pair in "$RXE_DEV0 $RXE_IP0" "$RXE_DEV1 $RXE_IP1"; do
	dev=${pair% *}
	ip=${pair#* }
	if [ "$ip" != "$RXE_IP0" ] && ! list_for "$ip"; then
		echo "FAIL: --list-devices --local-addr $ip exited non-zero"
		fail=1
	fi
	want=$(rxe_gid_index "$dev" "$ip")
	got=$(grep "gid index for $ip: [0-9]" "$RXE_OUT/list-$ip.txt")
	none=$(grep -c "gid index for $ip: none" "$RXE_OUT/list-$ip.txt")
	if [ "$got" = "    gid index for $ip: $want" ] && [ "$none" = 1 ]; then
		echo "ok: picks gid index $want for $ip on $dev (sysfs agrees)"
	else
		echo "FAIL: for $ip sysfs says $dev gid $want; we said '$got'" \
			"and 'none' $none time(s) instead of once"
		fail=1
	fi
done

# An address no device has: still listed, but exit status 1.
if "$SMCPROXYD" --list-devices --local-addr 10.79.0.1 \
	>"$RXE_OUT/list-none.txt"; then
	echo "FAIL: --local-addr 10.79.0.1 (on no device) exited 0"
	fail=1
else
	expect "$RXE_OUT/list-none.txt" "gid index for 10.79.0.1: none" \
		"no GID for an address no device has, exit 1"
fi
exit $fail
