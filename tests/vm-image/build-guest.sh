#!/bin/sh
# Builds the small guest that the real (TCG) holos boot test runs, from
# Debian packages fetched through the machine's configured apt sources:
#   vmlinuz      the Debian cloud kernel (linux-image-cloud-amd64)
#   initrd.img   a busybox initramfs (busybox-static) with the virtio, ACPI
#                button and evdev modules; its init is tests/vm-image/init
#   disk.raw     an empty 64 MiB raw disk to use as the service's image
# The output is cached: a second run with the same script, init and kernel
# package does nothing. See tests/vm-image/README.md.
#
# Usage: tests/vm-image/build-guest.sh OUTDIR      (e.g. target/vm-image)
# Needs: apt-get (lists updated), dpkg-deb, cpio, gzip, sha256sum.
set -eu

[ $# -eq 1 ] || { echo "usage: build-guest.sh OUTDIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)

for tool in apt-get apt-cache dpkg-deb cpio gzip sha256sum; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "build-guest: $tool is missing; install it (cpio: apt-get install cpio)" >&2
    exit 1
  }
done

# The kernel package that linux-image-cloud-amd64 points to today.
kernel_pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null |
  sed -n 's/^ *Depends: \(linux-image-[0-9].*-cloud-amd64\)$/\1/p' | head -n1)
[ -n "$kernel_pkg" ] || {
  echo "build-guest: apt knows no linux-image-cloud-amd64; run apt-get update" >&2
  exit 1
}
stamp=$(cat "$0" "$here/init" "$here/power-button" | sha256sum | cut -c1-16)-$kernel_pkg
if [ -f "$out/stamp" ] && [ "$(cat "$out/stamp")" = "$stamp" ] &&
  [ -f "$out/vmlinuz" ] && [ -f "$out/initrd.img" ] && [ -f "$out/disk.raw" ]; then
  echo "build-guest: $out is up to date ($stamp)"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
# apt-get download as root hands the file to _apt first; a world-writable
# directory avoids its "unsandboxed" warning.
chmod 0777 "$work"
apt-get download -q "$kernel_pkg" busybox-static >/dev/null
mkdir -p pkg
for deb in ./*.deb; do dpkg-deb -x "$deb" pkg; done
kernel_version=${kernel_pkg#linux-image-}
modules=pkg/lib/modules/$kernel_version/kernel

# The initramfs tree.
root=$work/root
mkdir -p "$root/bin" "$root/dev" "$root/proc" "$root/sys" "$root/tmp" "$root/www" \
  "$root/etc/acpi/PWRF" "$root/usr/share/udhcpc" "$root/lib/modules"
cp pkg/bin/busybox "$root/bin/busybox"
install -m 0755 "$here/init" "$root/init"
install -m 0755 "$here/power-button" "$root/etc/acpi/PWRF/00000080"
echo "PWRF PWRF/00000080" > "$root/etc/acpid.conf"
cat > "$root/usr/share/udhcpc/default.script" <<'SCRIPT'
#!/bin/sh
# udhcpc hook: apply the lease.
case "$1" in
  deconfig) ip addr flush dev "$interface"; ip link set "$interface" up ;;
  bound|renew)
    ip addr add "$ip/${mask:-24}" dev "$interface"
    [ -z "${router:-}" ] || ip route add default via "${router%% *}" dev "$interface"
    ;;
esac
SCRIPT
chmod 0755 "$root/usr/share/udhcpc/default.script"

# Modules with their dependencies, dependencies first, in load order.
module_path() {
  find "$modules" -name "$(echo "$1" | sed 's/[-_]/[-_]/g').ko" | head -n1
}
loaded=" "
add_module() {
  case "$loaded" in *" $1 "*) return 0 ;; esac
  file=$(module_path "$1")
  [ -n "$file" ] || { echo "build-guest: module $1 is not in $kernel_pkg" >&2; exit 1; }
  for dep in $(tr '\0' '\n' < "$file" | sed -n 's/^depends=//p' | tr ',' ' '); do
    add_module "$dep"
  done
  file=$(module_path "$1")
  cp "$file" "$root/lib/modules/"
  echo "$(basename "$file")" >> "$root/lib/modules/load-order"
  loaded="$loaded$1 "
}
for module in virtio_pci virtio_net virtio_blk virtio_rng button evdev; do
  add_module "$module"
done

(cd "$root" && find . | sort | cpio --quiet -o -H newc -R 0:0) | gzip -9n > "$work/initrd.img"
cp "pkg/boot/vmlinuz-$kernel_version" "$work/vmlinuz"
rm -f "$work/disk.raw" && : > "$work/disk.raw" && truncate -s 64M "$work/disk.raw"
for file in vmlinuz initrd.img disk.raw; do mv "$work/$file" "$out/$file"; done
echo "$stamp" > "$out/stamp"
echo "build-guest: built $out (kernel $kernel_version)"
