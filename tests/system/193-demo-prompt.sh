#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The README's first command asks before it changes the host: contrib/demo
# lists the Debian packages it would install and, without a terminal and
# without --yes, installs nothing and exits 1 with the hint (so CI or a
# script never blocks on the prompt); with --yes it installs only what its
# own mode needs (no haproxy, prometheus, kernels from backports or
# linux-source, which only scripts/setup's "all" for the tests brings),
# and adds no apt source.  Nothing is installed here: apt-get, dpkg-query
# and id are stand-ins in PATH that log what they were asked, and every
# package looks missing.
. "$(dirname "$0")/lib.sh"
smc_init
SRC=$(cd "$(dirname "$0")/../.." && pwd)

mkdir -p "$T/bin"
cat >"$T/bin/dpkg-query" <<'EOF'
#!/bin/sh
exit 1
EOF
cat >"$T/bin/apt-get" <<EOF
#!/bin/sh
echo "apt-get \$*" >>"$T/apt.log"
case " \$* " in
*" install "*) exit 1 ;;
esac
exit 0
EOF
cat >"$T/bin/apt-cache" <<EOF
#!/bin/sh
echo "apt-cache \$*" >>"$T/apt.log"
exit 1
EOF
cat >"$T/bin/systemctl" <<'EOF'
#!/bin/sh
exit 0
EOF
cat >"$T/bin/id" <<'EOF'
#!/bin/sh
[ "${1:-}" = -u ] && { echo 0; exit 0; }
exec /usr/bin/id "$@"
EOF
chmod +x "$T/bin"/*
export PATH="$T/bin:$PATH"

# what neither demo needs
not_for_demo='haproxy|prometheus|linux-source|linux-headers|bookworm-backports|clang|lintian'

# scripts/setup --print: one line per purpose, "all" says backports
for lane in host vm; do
	sh "$SRC/scripts/setup" --print "$lane" >"$T/print-$lane" ||
		fail "scripts/setup --print $lane: status $?"
	grep -q redis-server "$T/print-$lane" ||
		fail "scripts/setup --print $lane lacks redis-server: $(cat "$T/print-$lane")"
	grep -Eq "$not_for_demo" "$T/print-$lane" &&
		fail "scripts/setup --print $lane lists more than the demo needs: $(cat "$T/print-$lane")"
done
grep -q qemu-system-x86 "$T/print-vm" || fail "the VM demo's list lacks QEMU"
grep -q qemu-system-x86 "$T/print-host" && fail "the host demo's list has QEMU"
sh "$SRC/scripts/setup" --print all >"$T/print-all" || fail "scripts/setup --print all"
grep -q bookworm-backports "$T/print-all" ||
	fail "scripts/setup --print all does not say it adds bookworm-backports"

# no terminal, no --yes: the list, the hint, status 1, nothing installed
for args in "--host" ""; do
	: >"$T/apt.log"
	# shellcheck disable=SC2086
	timeout 60 bash "$SRC/contrib/demo" $args </dev/null >"$T/out" 2>&1
	rc=$?
	[ "$rc" -eq 1 ] || fail "contrib/demo $args without a terminal: status $rc, want 1: $(cat "$T/out")"
	grep -q 'redis-server' "$T/out" || fail "contrib/demo $args: no package list: $(cat "$T/out")"
	grep -q -- '--yes' "$T/out" || fail "contrib/demo $args: no hint to --yes: $(cat "$T/out")"
	grep -q 'nothing installed' "$T/out" || fail "contrib/demo $args: does not say nothing was installed"
	[ -s "$T/apt.log" ] && fail "contrib/demo $args without --yes ran: $(cat "$T/apt.log")"
done

# --yes: apt-get installs the host demo's packages only (the stand-in
# refuses, so the demo stops there, building nothing)
: >"$T/apt.log"
timeout 60 bash "$SRC/contrib/demo" --host --yes </dev/null >"$T/out" 2>&1 &&
	fail "contrib/demo --host --yes went on after apt-get failed"
grep -q '^apt-get install .*redis-server' "$T/apt.log" ||
	fail "contrib/demo --host --yes did not install redis-server: $(cat "$T/apt.log") $(cat "$T/out")"
grep -Eq "$not_for_demo|qemu" "$T/apt.log" &&
	fail "contrib/demo --host --yes installs more than it needs: $(cat "$T/apt.log")"
grep -q 'apt-cache' "$T/apt.log" && fail "contrib/demo --host --yes looked for backports' kernel"
exit 0
