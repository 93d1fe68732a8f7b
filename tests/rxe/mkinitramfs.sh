#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Build the Soft-RoCE VM's initramfs: busybox-static as the shell, our /init,
# and just the modules needed to mount the host's root over virtio-9p (and
# overlayfs, which makes that root writable for vm-run --systemd).  Every
# other module (rdma_rxe, veth, ...) is loaded later from the host's own
# /lib/modules, which the VM sees through that root.  With MODULE.ko
# (vm-run's RXE_KERNEL=stock-rxefix: tests/rxe/build-rxe's rdma_rxe.ko),
# that module file is loaded at boot after the modules it depends on, in
# place of the kernel's own module of that name: a later "modprobe
# rdma_rxe" finds it loaded.
#
# usage: mkinitramfs.sh KERNEL-VERSION OUTPUT.cpio.gz [MODULE.ko]
set -eu

kver=$1
output=$2
extra=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
moddir=/lib/modules/$kver
busybox=${RXE_BUSYBOX:-/bin/busybox}
# Leaves of the dependency graph; modprobe supplies the rest, in order.
wanted="virtio_pci 9pnet_virtio 9p overlay"

die() {
	echo "mkinitramfs.sh: $*" >&2
	exit 1
}

[ -f "$moddir/modules.dep" ] || die "$moddir/modules.dep missing (install linux-image-amd64)"
[ -x "$busybox" ] || die "$busybox missing (install busybox-static)"
"$busybox" --list | grep -qx switch_root ||
	die "$busybox has no switch_root applet (install busybox-static)"

work=$(mktemp -d "${TMPDIR:-/tmp}/rxe-initramfs.XXXXXX")
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/bin" "$work/dev" "$work/proc" "$work/sys" \
	"$work/newroot" "$work/share" "$work/hosttmp" "$work/modules" \
	"$work/lower" "$work/rw"
cp "$busybox" "$work/bin/busybox"
cp "$here/init" "$work/init"
chmod 755 "$work/init" "$work/bin/busybox"

# modprobe resolves each leaf's dependencies for this kernel (6.1 and 6.12
# differ: netfs and fscache, say), dependencies first; a module built into
# the kernel needs nothing.  A module two leaves share is taken once.
order=
# With MODULE.ko, its name's dependencies follow, then the file itself
# (not the kernel's module of that name, which modprobe lists last).
extra_name=
[ -z "$extra" ] || {
	[ -f "$extra" ] || die "$extra: no such module"
	extra_name=$(basename "$extra" .ko)
	wanted="$wanted $extra_name"
}
for w in $wanted; do
	deps=$(modprobe --show-depends -S "$kver" "$w" 2>&1) ||
		die "modprobe --show-depends -S $kver $w: $deps"
	for m in $(printf '%s\n' "$deps" | sed -n 's|^insmod \([^ ]*\).*|\1|p'); do
		case $(basename "$m") in
		"$extra_name".ko*) continue ;;
		esac
		case " $order " in
		*" $m "*) ;;
		*) order="$order $m" ;;
		esac
	done
done
[ -z "$extra" ] || order="$order $extra"

: >"$work/modules/order"
for m in $order; do
	base=$(basename "$m")
	case $base in
	*.ko) cp "$m" "$work/modules/$base" ;;
	*.ko.xz) xz -dc "$m" >"$work/modules/${base%.xz}" ;;
	*.ko.zst) zstd -qdc "$m" >"$work/modules/${base%.zst}" ;;
	*.ko.gz) gzip -dc "$m" >"$work/modules/${base%.gz}" ;;
	*) die "unknown module format: $m" ;;
	esac
	base=${base%.ko*}.ko
	echo "$base" >>"$work/modules/order"
done

(cd "$work" && find . | cpio -o -H newc --quiet) | gzip -1 >"$output.tmp.$$"
mv "$output.tmp.$$" "$output"
