#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the VM booted with systemd as PID 1 (run-checks --systemd), the
# package installed (rxe_install_package): kernel_smc under the units, the
# daemon unprivileged.  smcproxyd-bpf.service (as root) loads the SMC-R
# option's program and pins it with its maps in /sys/fs/bpf/smcproxyd,
# owned by smcproxyd; the drop-in kernel-smc.conf, installed for an
# instance smcproxyd@ksmc, makes the unit attach the program to the
# service (BPFProgram=) and lets the daemon, user smcproxyd, open the
# maps (the bpf system call, no capability), linked as smcproxyd(8) says:
#   - the daemon says it uses the pinned maps (smc_option), with no
#     capability beyond the unit's two; the loader had no CAP_SYS_ADMIN;
#   - a kernel SMC-R client's first steps (tests/tools/ksmcclient, the
#     option on its SYN) to the instance's smc_listen: the SYN-ACK echoes
#     the option, our DECLINE NOSMCRDEV comes, 1 MiB verifies as TCP;
#   - stopping smcproxyd-bpf.service removes the pins.
. "$(dirname "$0")/lib.sh"

if [ ! -d /run/systemd/system ] || [ "$(cat /proc/1/comm)" != systemd ]; then
	rxe_die "not under systemd: run this through run-checks --systemd"
fi
R=$RXE_RUNDIR
PORT=16596
PORT_T=16597
KC=$abs_top_builddir/tests/tools/ksmcclient
OBJ=$abs_top_builddir/src/bpf/smc_opt.bpf.o
fail=0

[ -x "$KC" ] && [ -f "$OBJ" ] || rxe_die "ksmcclient or $OBJ not built"
rxe_install_package
[ -f /lib/systemd/system/smcproxyd-bpf.service ] ||
	rxe_die "make install put no smcproxyd-bpf.service"
dropin=$prefix/share/smcproxyd/kernel-smc.conf
[ -f "$dropin" ] || rxe_die "make install put no drop-in at $dropin"
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf ||
	rxe_die "no bpffs at /sys/fs/bpf"

socat "TCP-LISTEN:$PORT_T,bind=127.0.0.1,reuseaddr,fork" EXEC:cat \
	>"$RXE_OUT/echo.log" 2>&1 &
echo_pid=$!
cat >"$R/ksmc.conf" <<EOF
smcproxyd: { name = "ksmc"; workers = 1;
             control_socket = "/run/smcproxyd-ksmc/control.sock"; };
exports = ( { name = "x"; target = "127.0.0.1:$PORT_T";
              smc_listen = "127.0.0.1:$PORT"; } );
kernel_smc: { ueids = [ "SMCPROXYD-LAB" ]; allow = [ "127.0.0.0/8" ]; };
EOF
install -m 0640 -o root -g smcproxyd "$R/ksmc.conf" "$etc/ksmc.conf" ||
	rxe_die "cannot write $etc/ksmc.conf"
# as smcproxyd(8) says, for an instance: a link, which upgrades follow
mkdir -p /etc/systemd/system/smcproxyd@ksmc.service.d &&
	ln -s "$dropin" /etc/systemd/system/smcproxyd@ksmc.service.d/ ||
	rxe_die "cannot install the drop-in"
systemctl daemon-reload || rxe_die "systemctl daemon-reload failed"
bpf_mode=$(stat -c %a /sys/fs/bpf)

if systemctl start smcproxyd@ksmc; then
	ok "smcproxyd@ksmc starts with kernel-smc.conf (smcproxyd-bpf.service pulled in)"
else
	bad "smcproxyd@ksmc did not start: $(journalctl -b --no-pager -n 30 -u smcproxyd-bpf -u smcproxyd@ksmc)"
fi
if [ "$(stat -c %U /sys/fs/bpf/smcproxyd/smc_opt_mark 2>/dev/null)" = smcproxyd ]; then
	ok "smcproxyd-bpf.service pinned the program and maps, the maps owned by smcproxyd"
else
	bad "no pinned maps owned by smcproxyd: $(ls -l /sys/fs/bpf/smcproxyd 2>&1)"
fi
# least privilege: the daemon's capabilities are the unit's two
# (CAP_NET_BIND_SERVICE 10, CAP_IPC_LOCK 14), no CAP_BPF; its /sys/fs/bpf
# has the pins only; the host's kept its mode; the loader was bounded
pid=$(systemctl show -p MainPID --value smcproxyd@ksmc)
eff=$(sed -n 's/^CapEff:[[:space:]]*//p' "/proc/$pid/status")
[ "$eff" = 0000000000004400 ] && ok "the daemon's capabilities: $eff (no CAP_BPF)" ||
	bad "the daemon's effective capabilities are $eff, want 0000000000004400"
bset=$(systemctl show -p CapabilityBoundingSet --value smcproxyd-bpf)
case " $bset " in
*cap_sys_admin*) bad "smcproxyd-bpf.service keeps CAP_SYS_ADMIN: $bset" ;;
*cap_bpf*) ok "smcproxyd-bpf.service loads with: $bset" ;;
*) bad "smcproxyd-bpf.service's bounding set: $bset" ;;
esac
opt=$("$ctl" -s /run/smcproxyd-ksmc/control.sock version | sed -n 's/^smc_option *//p')
case $opt in
"pinned in /sys/fs/bpf/smcproxyd"*) ok "the daemon (user smcproxyd) uses the pinned maps: $opt" ;;
*) bad "the daemon does not use the pinned maps: $opt" ;;
esac
out=$("$KC" -c "127.0.0.1:$PORT" -o "$OBJ" -n 1048576 2>&1)
rc=$?
printf '%s\n' "$out" | sed 's/^/# ksmcclient: /'
if [ $rc = 0 ] && printf '%s\n' "$out" | grep -qx echoed &&
	printf '%s\n' "$out" | grep -q '^DECLINE NOSMCRDEV 0x03030002 v2$'; then
	ok "under the unit the option is echoed, the PROPOSAL declined, 1 MiB verified as TCP"
else
	bad "kernel client through smcproxyd@ksmc (exit $rc)"
fi
v=$("$ctl" -s /run/smcproxyd-ksmc/control.sock -j stats |
	grep -o '"smc_opt_echoed": *[0-9]*' | head -n 1 | sed 's/.*: *//')
[ "$v" = 1 ] && ok "smcproxyd@ksmc: smc_opt_echoed = 1" ||
	bad "smcproxyd@ksmc: smc_opt_echoed is '$v', want 1"
systemctl stop smcproxyd@ksmc || bad "systemctl stop smcproxyd@ksmc failed"
systemctl stop smcproxyd-bpf || bad "systemctl stop smcproxyd-bpf failed"
if [ -e /sys/fs/bpf/smcproxyd ]; then
	bad "the pins are left behind after smcproxyd-bpf.service stopped"
else
	ok "stopping smcproxyd-bpf.service removes the pins"
fi
now=$(stat -c %a /sys/fs/bpf)
case $now in
"$bpf_mode") ok "and gives /sys/fs/bpf its mode back, $now" ;;
*) bad "/sys/fs/bpf was $bpf_mode before the unit, is $now after its stop" ;;
esac
journalctl -b --no-pager -u smcproxyd-bpf -u smcproxyd@ksmc >"$RXE_OUT/journal.txt" 2>&1
rm -rf /etc/systemd/system/smcproxyd@ksmc.service.d "$etc/ksmc.conf"
systemctl daemon-reload
kill "$echo_pid" 2>/dev/null
exit $fail
