#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# At start the daemon says what of this host keeps link groups from
# working (its peers are still reached, over the TCP fallback): no uverbs
# device to open, and a locked-memory limit below rdma.max_buffer_memory
# in a process without CAP_IPC_LOCK.  Root keeps CAP_IPC_LOCK and hears no
# limit warning; the same daemon without it, under a 1 MiB limit, does.
. "$(dirname "$0")/lib.sh"
smc_init
need setpriv prlimit

pair_ports
conf_a "$T/a.conf"
start_daemon a "$T/a.conf"
wait_listen "$PORT_RULE" 10 "$a_pid"
if compgen -G "/dev/infiniband/uverbs*" >/dev/null; then
	grep -q "no RDMA device can be opened" "$T/a.log" &&
		fail "a uverbs device is here, yet: $(grep "no RDMA device" "$T/a.log")"
else
	grep -q "no RDMA device can be opened (no /dev/infiniband/uverbs" "$T/a.log" ||
		fail "no uverbs device here, and no warning: $(head -5 "$T/a.log")"
fi
grep -q "locked memory limit" "$T/a.log" &&
	fail "root with CAP_IPC_LOCK warned of the limit: $(grep "locked memory" "$T/a.log")"
stop_daemon a

# The same daemon without CAP_IPC_LOCK, under a 1 MiB limit.
real=$SMCPROXYD
cat >"$T/limited" <<EOS
#!/bin/sh
exec prlimit --memlock=1048576:1048576 setpriv --bounding-set -ipc_lock \
	--inh-caps -ipc_lock "$real" "\$@"
EOS
chmod +x "$T/limited"
SMCPROXYD=$T/limited
: >"$T/a.log"
start_daemon a "$T/a.conf"
wait_listen "$PORT_RULE" 10 "$a_pid"
grep -Eq "locked memory limit 1024 KiB is below rdma.max_buffer_memory \([0-9]+ MiB\)" "$T/a.log" ||
	fail "a 1 MiB limit without CAP_IPC_LOCK, and no warning: $(head -5 "$T/a.log")"
stop_daemon a
SMCPROXYD=$real
