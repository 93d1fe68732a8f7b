#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# What the .deb's maintainer scripts do to the service, as debhelper
# writes them from debian/rules (dh_installsystemd with the override's
# options, dh_installdeb with debian/smcproxyd.prerm), run with
# deb-systemd-invoke, deb-systemd-helper and systemctl that only log:
#   fresh install (postinst configure)    enabled, not started
#   upgrade (preinst, prerm, postinst)    no stop before, try-restart after,
#                                         so a running daemon runs the new
#                                         files and a stopped one stays so
#   removal (prerm remove)                smcproxyd and its instances stop,
#                                         then smcproxyd-bpf.service (its
#                                         stop removes the pins)
#   purge (postrm purge)                  pins left in /sys/fs/bpf/smcproxyd
#                                         are removed, only on a bpffs
. "$(dirname "$0")/lib.sh"
smc_init
need dh_installsystemd dh_installdeb
SRC=$(cd "$(dirname "$0")/../.." && pwd)

P=$T/pkg
mkdir -p "$P/debian/smcproxyd/lib/systemd/system" "$T/bin" "$T/systemd" ||
	fail "cannot make $P"
cp -r "$SRC/debian/." "$P/debian/" || fail "cannot copy debian/"
for u in smcproxyd.service smcproxyd@.service; do
	[ -f "$SMC_BUILDDIR/systemd/$u" ] || fail "$u is not built"
	cp "$SMC_BUILDDIR/systemd/$u" "$P/debian/smcproxyd/lib/systemd/system/"
done
opts=$(sed -n 's/^\tdh_installsystemd\( .*\)\{0,1\}$/\1/p' "$SRC/debian/rules")
smc_log "debian/rules: dh_installsystemd$opts"
# shellcheck disable=SC2086 # the options as debian/rules gives them
(cd "$P" && dh_installsystemd $opts && dh_installdeb) >"$T/dh.log" 2>&1 ||
	fail "debhelper: $(cat "$T/dh.log")"

for t in deb-systemd-invoke deb-systemd-helper systemctl; do
	printf '#!/bin/sh\necho "%s $*" >>"%s"\n' "$t" "$T/calls" >"$T/bin/$t"
	chmod +x "$T/bin/$t"
done
# script NAME ARG...: run DEBIAN/NAME (if debhelper wrote one) as on a
# machine under systemd (its /run/systemd/system is $T/systemd); what it
# asked for in $T/calls
script()
{
	local f=$P/debian/smcproxyd/DEBIAN/$1

	: >"$T/calls"
	[ -f "$f" ] || return 0
	sed -e "s|/run/systemd/system|$T/systemd|g" \
		-e "s|/sys/fs/bpf/smcproxyd|$T/bpf/smcproxyd|g" "$f" >"$T/script"
	shift
	PATH=$T/bin:$PATH sh -e "$T/script" "$@" >"$T/script.log" 2>&1 ||
		fail "$(basename "$f") $*: $(cat "$T/script.log")"
}
asked() { grep -q -- "$1" "$T/calls"; }

script postinst configure
asked 'deb-systemd-helper enable smcproxyd.service' ||
	fail "a fresh install does not enable the unit: $(cat "$T/calls")"
asked 'deb-systemd-invoke \(start\|restart\|try-restart\)' &&
	fail "a fresh install starts the service: $(cat "$T/calls")"

script preinst upgrade 0.0.9
asked stop && fail "the preinst of an upgrade stops the service: $(cat "$T/calls")"
script prerm upgrade 0.1.1
asked stop && fail "the prerm of an upgrade stops the service: $(cat "$T/calls")"
script postinst configure 0.0.9
asked 'deb-systemd-invoke try-restart smcproxyd.service' ||
	fail "an upgrade does not restart a running service: $(cat "$T/calls")"

script prerm remove
asked 'deb-systemd-invoke stop smcproxyd.service' ||
	fail "removal does not stop the service: $(cat "$T/calls")"
asked 'deb-systemd-invoke stop .*smcproxyd@\*.service' ||
	fail "removal does not stop smcproxyd@ instances: $(cat "$T/calls")"
asked 'deb-systemd-invoke stop smcproxyd-bpf.service' ||
	fail "removal does not stop smcproxyd-bpf.service: $(cat "$T/calls")"
[ "$(grep -n 'stop' "$T/calls" | tail -n 1)" = "$(grep -n 'smcproxyd-bpf' "$T/calls")" ] ||
	fail "removal stops smcproxyd-bpf.service before the daemons: $(cat "$T/calls")"
asked '^systemctl' &&
	fail "removal calls systemctl, not deb-systemd-invoke: $(cat "$T/calls")"

# purge: the pins go when they are on a bpffs (stat -f says so), never
# a directory of another file system
mkdir -p "$T/bpf/smcproxyd" && touch "$T/bpf/smcproxyd/smc_opt" ||
	fail "cannot make the fake pins"
printf '#!/bin/sh\necho %s\n' tmpfs >"$T/bin/stat"
chmod +x "$T/bin/stat"
script postrm purge
[ -e "$T/bpf/smcproxyd/smc_opt" ] ||
	fail "purge removed a pin directory that is not on a bpffs"
printf '#!/bin/sh\necho %s\n' bpf_fs >"$T/bin/stat"
script postrm remove
[ -e "$T/bpf/smcproxyd/smc_opt" ] || fail "a removal (not a purge) removed the pins"
script postrm purge
[ -e "$T/bpf/smcproxyd" ] && fail "purge left the pins in $T/bpf/smcproxyd"
exit 0
