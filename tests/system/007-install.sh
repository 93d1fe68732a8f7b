#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# "make install DESTDIR=..." lays out what a fresh install needs to run as a
# service: the sysusers and tmpfiles files named smcproxyd.conf (systemd
# reads only *.conf there), the unit, a default configuration that the
# unit's ExecStartPre ("smcproxyd -n") accepts and that a second install
# leaves alone once edited, a DeviceAllow= that names devices (a directory
# is ignored) and an ExecReload= that fails when the reload fails and finds
# the socket in the configuration (-c), not at a path of its own; the
# template smcproxyd@.service, each instance with NAME.conf.  As root,
# systemd-sysusers and systemd-tmpfiles run on the tree: the user exists and
# owns the configuration directory's group.
. "$(dirname "$0")/lib.sh"
smc_init
need make

D=$T/root
# the build tree's own make, not the one running the tests (no jobserver)
inst()
{
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$SMC_BUILDDIR" \
		install DESTDIR="$D" >"$T/install.log" 2>&1 ||
		fail "make install: $(tail -n 20 "$T/install.log")"
}
inst
find "$D" -type f | sed "s|^$D||" | sort >"$T/files"
smc_log "installed: $(tr '\n' ' ' <"$T/files")"

one()
{
	local pat=$1 f

	f=$(grep -E "$pat" "$T/files") || fail "nothing installed matches $pat"
	[ "$(printf '%s\n' "$f" | wc -l)" -eq 1 ] || fail "more than one $pat: $f"
	printf '%s\n' "$D$f"
}
one '/lib/sysusers\.d/smcproxyd\.conf$' >/dev/null
tmpfiles=$(one '/lib/tmpfiles\.d/smcproxyd\.conf$')
unit=$(one '/lib/systemd/system/smcproxyd\.service$')
tunit=$(one '/lib/systemd/system/smcproxyd@\.service$')
conf=$(one '/etc/smcproxyd/smcproxyd\.conf$')
daemon=$(one '/sbin/smcproxyd$')
ctlbin=$(one '/bin/smcproxyctl$')
one '/share/bash-completion/completions/smcproxyctl$' >/dev/null
for m in man8/smcproxyd.8 man8/smcproxyctl.8 man5/smcproxyd.conf.5; do
	one "/share/man/$m\$" >/dev/null
done
# the operator's documents and the example configs
for d in README.md control.md protocol.md stats.md performance.md testing.md kubernetes.md \
	examples/smcproxyd.conf examples/pair/a.conf; do
	one "/share/doc/smcproxyd/$d\$" >/dev/null
done
grep -E '\.(sysusers|tmpfiles)$' "$T/files" &&
	fail "files systemd does not read are installed"

# the configuration directory in tmpfiles is the one the unit reads
etc=${conf%/smcproxyd.conf}
grep -q "^d ${etc#$D} 0750 root smcproxyd" "$tmpfiles" ||
	fail "tmpfiles does not create ${etc#$D}: $(cat "$tmpfiles")"
grep -q "^ExecStartPre=.* -n -c ${conf#$D}\$" "$unit" ||
	fail "ExecStartPre does not check ${conf#$D}"

# ExecStartPre on a fresh install
"$SMCPROXYD" -n -c "$conf" >"$T/check" 2>&1 ||
	fail "the installed default config is refused: $(cat "$T/check")"

# an edited configuration survives the next install
printf '# edited by the operator\n' >>"$conf"
inst
grep -q '^# edited by the operator' "$conf" ||
	fail "a second make install replaced the edited $conf"
grep -q 'keeping' "$T/install.log" || fail "make install does not say it kept $conf"

# DeviceAllow= takes device nodes or char-/block- groups, never directories
grep '^DeviceAllow=' "$unit" >"$T/devallow" || fail "no DeviceAllow= in the unit"
grep -q '^DeviceAllow=char-infiniband_verbs rw$' "$T/devallow" ||
	fail "the verbs devices are not allowed: $(cat "$T/devallow")"
while read -r line; do
	dev=${line#DeviceAllow=}
	dev=${dev%% *}
	case $dev in
	char-* | block-*) ;;
	/dev/infiniband | /dev/infiniband/) fail "DeviceAllow= names a directory: $line" ;;
	/dev/*/) fail "DeviceAllow= names a directory: $line" ;;
	/dev/*) [ -d "$dev" ] && fail "DeviceAllow= names a directory: $line" ;;
	*) fail "DeviceAllow= names neither a node nor a group: $line" ;;
	esac
done <"$T/devallow"

# ExecReload= waits for the daemon's answer: smcproxyctl reload, which
# exits 1 when the reload was refused (not kill -HUP, which always succeeds)
grep '^ExecReload=' "$unit" >"$T/reload" || fail "no ExecReload= in the unit"
[ "$(wc -l <"$T/reload")" -eq 1 ] || fail "more than one ExecReload=: $(cat "$T/reload")"
grep -q "^ExecReload=${ctlbin#$D} .*reload\$" "$T/reload" ||
	fail "ExecReload= is not smcproxyctl reload: $(cat "$T/reload")"
grep -q 'kill' "$T/reload" && fail "ExecReload= still sends a signal"
grep -q "^ExecReload=${ctlbin#$D} -c ${conf#$D} reload\$" "$T/reload" ||
	fail "ExecReload= does not take the socket from ${conf#$D}: $(cat "$T/reload")"
grep -q -- '-s /' "$T/reload" && fail "ExecReload= names a socket path"
for k in ExecStartPre ExecStart ExecReload; do
	grep -q "^$k=.* -c ${etc#$D}/%i\.conf" "$tunit" ||
		fail "smcproxyd@.service: $k does not use %i.conf: $(grep "^$k=" "$tunit")"
done
grep -q '^RuntimeDirectory=smcproxyd-%i$' "$tunit" ||
	fail "smcproxyd@.service shares a runtime directory: $(grep ^RuntimeDirectory= "$tunit")"

# systemd's own checks of the unit, with the programs where DESTDIR has them
if command -v systemd-analyze >/dev/null 2>&1; then
	sed -e "s|=\(-\{0,1\}\)\(${daemon#$D}\)|=\1$daemon|" \
		-e "s|=${ctlbin#$D}|=$ctlbin|" "$unit" >"$T/smcproxyd.service"
	systemd-analyze verify --man=no "$T/smcproxyd.service" \
		>"$T/verify" 2>&1
	grep -v -e 'sysinit.target' -e 'Unit .* not found' "$T/verify" \
		>"$T/verify.rest"
	[ -s "$T/verify.rest" ] &&
		fail "systemd-analyze verify: $(cat "$T/verify.rest")"
	sed -e "s|=\(-\{0,1\}\)\(${daemon#$D}\)|=\1$daemon|" \
		-e "s|=${ctlbin#$D}|=$ctlbin|" "$tunit" >"$T/smcproxyd@x.service"
	systemd-analyze verify --man=no "$T/smcproxyd@x.service" \
		>"$T/verify" 2>&1
	grep -v -e 'sysinit.target' -e 'Unit .* not found' "$T/verify" \
		>"$T/verify.rest"
	[ -s "$T/verify.rest" ] &&
		fail "systemd-analyze verify smcproxyd@x: $(cat "$T/verify.rest")"
fi

if [ "$(id -u)" -eq 0 ] && command -v systemd-sysusers >/dev/null 2>&1 &&
	command -v systemd-tmpfiles >/dev/null 2>&1; then
	mkdir -p "$D/etc"
	systemd-sysusers --root="$D" >"$T/sysusers" 2>&1 ||
		fail "systemd-sysusers: $(cat "$T/sysusers")"
	uid=$(awk -F: '$1 == "smcproxyd" { print $3 }' "$D/etc/passwd")
	gid=$(awk -F: '$1 == "smcproxyd" { print $3 }' "$D/etc/group")
	[ -n "$uid" ] && [ -n "$gid" ] ||
		fail "systemd-sysusers created no smcproxyd user: $(cat "$T/sysusers")"
	systemd-tmpfiles --root="$D" --create >"$T/tmpfiles" 2>&1 ||
		fail "systemd-tmpfiles: $(cat "$T/tmpfiles")"
	[ "$(stat -c '%a %u %g' "$etc")" = "750 0 $gid" ] ||
		fail "$etc is $(stat -c '%a %u %g' "$etc"), want 750 0 $gid"
else
	smc_log "not root or no systemd tools: sysusers and tmpfiles not run"
fi
