#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Build the Soft-RoCE VM's initramfs: busybox-static as the shell, our /init,
# and just the modules needed to mount the host's root over virtio-9p (and
# overlayfs, which makes that root writable for vm-run --systemd).  Every
# other module (rdma_rxe, veth, ...) is loaded later from the host's own
# /lib/modules, which the VM sees through that root.
#
# usage: mkinitramfs.sh KERNEL-VERSION OUTPUT.cpio.gz
set -eu

kver=$1
output=$2
here=$(cd "$(dirname "$0")" && pwd)
moddir=/lib/modules/$kver
busybox=${RXE_BUSYBOX:-/bin/busybox}
# Leaves of the dependency graph; modules.dep supplies the rest, in order.
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

# Resolve dependencies depth first so each module follows what it needs.
order=$(awk -v wanted="$wanted" '
	{
		name = $1
		sub(":$", "", name)
		short = name
		sub(".*/", "", short)
		sub("\\.ko(\\..*)?$", "", short)
		path[short] = name
		deps[short] = ""
		for (i = NF; i >= 2; i--) {
			d = $i
			sub(".*/", "", d)
			sub("\\.ko(\\..*)?$", "", d)
			deps[short] = deps[short] " " d
		}
	}
	function visit(m,    n, list, i) {
		if (m in seen)
			return
		seen[m] = 1
		if (!(m in path)) {
			missing = missing " " m
			return
		}
		n = split(deps[m], list, " ")
		for (i = 1; i <= n; i++)
			visit(list[i])
		print path[m]
	}
	END {
		n = split(wanted, w, " ")
		for (i = 1; i <= n; i++)
			visit(w[i])
		if (missing != "")
			print "MISSING" missing
	}' "$moddir/modules.dep")

: >"$work/modules/order"
for m in $order; do
	case $m in
	MISSING*) die "modules not in $moddir: ${order#*MISSING }" ;;
	esac
	base=$(basename "$m")
	case $base in
	*.ko) cp "$moddir/$m" "$work/modules/$base" ;;
	*.ko.xz) xz -dc "$moddir/$m" >"$work/modules/${base%.xz}" ;;
	*.ko.zst) zstd -qdc "$moddir/$m" >"$work/modules/${base%.zst}" ;;
	*.ko.gz) gzip -dc "$moddir/$m" >"$work/modules/${base%.gz}" ;;
	*) die "unknown module format: $m" ;;
	esac
	base=${base%.ko*}.ko
	echo "$base" >>"$work/modules/order"
done

(cd "$work" && find . | cpio -o -H newc --quiet) | gzip -1 >"$output.tmp.$$"
mv "$output.tmp.$$" "$output"
