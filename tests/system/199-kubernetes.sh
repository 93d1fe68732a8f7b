#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# docs/kubernetes.md can be applied as written: every configuration of its
# ConfigMap passes "smcproxyd -n" with the key laid out as the Secret's
# volume lays it out (a chain of symbolic links to a file of mode 0400),
# the paths the configurations use (key_file, control_socket) are the
# DaemonSet's mounts, the file the container is told to read is one the
# ConfigMap mounts, and the Secret holds the key the configurations name.
# contrib/container/Containerfile names the package's paths: each is one
# that "make install" with Debian's directories installs.  Nothing is
# built or run in a container.
. "$(dirname "$0")/lib.sh"
smc_init
need make awk sed
SRC=$(cd "$(dirname "$0")/../.." && pwd)
DOC=$SRC/docs/kubernetes.md
CF=$SRC/contrib/container/Containerfile
[ -f "$DOC" ] || fail "no docs/kubernetes.md"
[ -f "$CF" ] || fail "no contrib/container/Containerfile"

# the ConfigMap's files: "  NAME.conf: |" and the lines indented below it
mkdir -p "$T/conf"
awk -v dir="$T/conf" '
	/^```/ { infence = !infence; out = ""; next }
	!infence { next }
	/^  [A-Za-z0-9._-]+\.conf: \|$/ {
		out = dir "/" substr($1, 1, length($1) - 1); next
	}
	out != "" && /^    / { print substr($0, 5) > out; next }
	out != "" && /^ *$/ { print "" > out; next }
	{ out = "" }
' "$DOC"
confs=$(ls "$T/conf")
[ "$(echo "$confs" | wc -w)" -ge 2 ] ||
	fail "docs/kubernetes.md: no ConfigMap with two *.conf files: $confs"

# the DaemonSet's mounts
mount_of() {
	awk -v v="$1" '
		$0 ~ "- name: " v "$" { hit = 1; next }
		hit && /mountPath:/ { print $2; exit }
	' "$DOC"
}
conf_dir=$(mount_of conf)
key_dir=$(mount_of keys)
run_dir=$(mount_of run)
[ -n "$conf_dir" ] && [ -n "$key_dir" ] && [ -n "$run_dir" ] ||
	fail "the DaemonSet lacks a mount: conf '$conf_dir' keys '$key_dir' run '$run_dir'"
grep -q "args: \[\"-c\", \"$conf_dir/\$(NODE_NAME).conf\"\]" "$DOC" ||
	fail "the container does not read $conf_dir/\$(NODE_NAME).conf"
grep -q 'defaultMode: 0400' "$DOC" || fail "the Secret is not mounted with mode 0400"
grep -q 'readinessProbe' "$DOC" && {
	grep -q "smcproxyctl\", \"-s\", \"$run_dir/control.sock\"" "$DOC" ||
		fail "the probe does not use the control socket in $run_dir"
}

# the Secret as its volume has it: NAME -> ..data/NAME -> ..TIMESTAMP/NAME
keys=$(sed -n 's/.*create secret generic smcproxyd-keys\(.*\)/\1/p' "$DOC" |
	grep -o -- '--from-file=[^ ]*' | sed 's/--from-file=//')
[ -n "$keys" ] || fail "docs/kubernetes.md: no kubectl create secret ... --from-file"
mkdir -p "$T/keys/..2026_12_06_00_00_00.1" "$T/run"
for k in $keys; do
	head -c 32 /dev/urandom >"$T/keys/..2026_12_06_00_00_00.1/$k"
	chmod 0400 "$T/keys/..2026_12_06_00_00_00.1/$k"
	ln -s "..data/$k" "$T/keys/$k"
done
ln -s ..2026_12_06_00_00_00.1 "$T/keys/..data"

for c in $confs; do
	f=$T/conf/$c
	for k in $(sed -n 's/.*key_file = "\([^"]*\)".*/\1/p' "$f"); do
		[ "${k%/*}" = "$key_dir" ] || fail "$c: key_file $k is not in the Secret's mount $key_dir"
		[ -e "$T/keys/${k##*/}" ] || fail "$c: key_file $k is not a key of the Secret ($keys)"
	done
	s=$(sed -n 's/.*control_socket = "\([^"]*\)".*/\1/p' "$f")
	[ "${s%/*}" = "$run_dir" ] || fail "$c: control_socket $s is not in the mount $run_dir"
	sed -e "s|\"$key_dir/|\"$T/keys/|g" -e "s|\"$run_dir/|\"$T/run/|g" \
		"$f" >"$T/$c"
	if ! "$SMCPROXYD" -n -c "$T/$c" >"$T/$c.out" 2>&1; then
		fail "docs/kubernetes.md, ConfigMap $c: smcproxyd -n: $(cat "$T/$c.out")"
	fi
	smc_log "$c: $(tr '\n' ' ' <"$T/$c.out")"
done

# the Containerfile's paths, as the package installs them (debian/rules:
# debhelper's directories, --enable-bpf)
D=$T/root
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$SMC_BUILDDIR" install \
	DESTDIR="$D" prefix=/usr sysconfdir=/etc libexecdir=/usr/libexec \
	>"$T/install.log" 2>&1 || fail "make install: $(tail -n 20 "$T/install.log")"
grep -q -- '--enable-bpf' "$SRC/debian/rules" || fail "debian/rules does not build the BPF program"
paths=$(grep -o '/usr/[a-z]*/smcproxy[a-z]*\(/[A-Za-z0-9_.]*\)\?' "$CF" | sort -u)
[ -n "$paths" ] || fail "the Containerfile names no path of the package"
for p in $paths; do
	case $p in
	*.bpf.o)
		# built only where clang and libbpf are (the package always)
		[ -f "$SMC_BUILDDIR/src/bpf/smc_opt.bpf.o" ] || {
			smc_log "no BPF program in this build: $p not checked"
			continue
		}
		;;
	esac
	[ -e "$D$p" ] || fail "the Containerfile names $p, which the package does not install"
done
for p in /usr/sbin/smcproxyd /usr/bin/smcproxyctl /etc/smcproxyd/smcproxyd.conf; do
	grep -q "$p" "$CF" || fail "the Containerfile does not name $p"
	[ -e "$D$p" ] || fail "$p is not installed"
done
grep -q '^FROM .*debian:12' "$CF" || fail "the Containerfile is not on Debian 12"
pkg=$(sed -n 's/^Package: //p' "$SRC/debian/control" | head -n 1)
grep -q "COPY ${pkg}_\*_amd64.deb" "$CF" ||
	fail "the Containerfile does not install the ${pkg}_*_amd64.deb dpkg-buildpackage makes"
exit 0
