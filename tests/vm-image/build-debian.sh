#!/bin/sh
# Builds the Debian guest of the real end-to-end holos test (a systemd,
# cloud-init and sshd guest), with debootstrap from the machine's configured
# apt mirror, of the machine's own Debian release (so that the workspace's
# binaries run in it):
#   vmlinuz      the guest's kernel (linux-image-cloud-amd64)
#   initrd.img   its initramfs (initramfs-tools, made inside the chroot)
#   disk.qcow2   the root filesystem (ext4, label holos-root), for image:
# Boot it by direct kernel boot through vm.extra_args:
#   -kernel vmlinuz -initrd initrd.img
#   -append "root=LABEL=holos-root rw console=ttyS0 mitigations=off"
# The output is cached: a second run with the same script, release and mirror
# does nothing. See tests/vm-image/README.md.
#
# Usage: tests/vm-image/build-debian.sh OUTDIR   (e.g. target/vm-image-debian)
# Needs: root, debootstrap, mke2fs (e2fsprogs), qemu-img (qemu-utils).
# HOLOS_DEBIAN_MIRROR overrides the mirror read from /etc/apt/sources.list*.
set -eu

[ $# -eq 1 ] || { echo "usage: build-debian.sh OUTDIR" >&2; exit 2; }
mkdir -p "$1"
out=$(cd "$1" && pwd)

suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$suite" ] || { echo "build-debian: /etc/os-release names no VERSION_CODENAME" >&2; exit 1; }

# The first configured mirror that serves the release itself (not -security
# or -updates), from one-line (.list) or deb822 (.sources) files.
mirror=${HOLOS_DEBIAN_MIRROR:-}
if [ -z "$mirror" ]; then
  for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$file" ] || continue
    mirror=$(sed -n "s/^deb \(\[[^]]*\] \)\{0,1\}\([^ ]*\) $suite .*/\2/p" "$file" | head -n1)
    [ -z "$mirror" ] || break
  done
fi
if [ -z "$mirror" ]; then
  for file in /etc/apt/sources.list.d/*.sources; do
    [ -f "$file" ] || continue
    # One stanza a paragraph: print its first URI when its suites hold $suite.
    mirror=$(awk -v suite="$suite" '
      /^[ \t]*$/ { if (uri != "" && found && types) { print uri; exit } uri = ""; found = 0; types = 0; next }
      /^Types:/ { for (i = 2; i <= NF; i++) if ($i == "deb") types = 1 }
      /^URIs:/ { uri = $2 }
      /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite) found = 1 }
      END { if (uri != "" && found && types) print uri }' "$file" | head -n1)
    [ -z "$mirror" ] || break
  done
fi
[ -n "$mirror" ] || {
  echo "build-debian: no apt source serves $suite (/etc/apt/sources.list*); set HOLOS_DEBIAN_MIRROR" >&2
  exit 1
}

packages=systemd-sysv,udev,dbus,cloud-init,python3-cffi-backend,openssh-server,netplan.io,iproute2,sudo,e2fsprogs,busybox,linux-image-cloud-amd64
stamp=$( (cat "$0"; echo "$suite $mirror") | sha256sum | cut -c1-16)-$suite
if [ -f "$out/stamp" ] && [ "$(cat "$out/stamp")" = "$stamp" ] &&
  [ -f "$out/vmlinuz" ] && [ -f "$out/initrd.img" ] && [ -f "$out/disk.qcow2" ]; then
  echo "build-debian: $out is up to date ($stamp)"
  exit 0
fi

# Building needs root (debootstrap, chroot, owners in the image).
[ "$(id -u)" = 0 ] || { echo "build-debian: building the image needs root (debootstrap)" >&2; exit 1; }
for tool in debootstrap mke2fs qemu-img; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "build-debian: $tool is missing; install it (apt-get install debootstrap e2fsprogs qemu-utils)" >&2
    exit 1
  }
done
started=$(date +%s)
# Beside the output, not in /tmp (a tmpfs may be too small for ~1 GB).
work=$(mktemp -d "$out/.build.XXXXXX")
# `|| true`: under `set -e` a failing umount (nothing left mounted, the usual
# case) would end the trap, and the script, with its status.
# --one-file-system: never reach through a mount debootstrap may have left
# (a bind of the host's /dev in a container) into the host.
trap 'umount -R "$work/root/proc" "$work/root/sys" "$work/root/dev" 2>/dev/null || true; rm -rf --one-file-system "$work"' EXIT
root=$work/root
echo "build-debian: debootstrap $suite from $mirror"
debootstrap --variant=minbase --components=main --include="$packages" \
  "$suite" "$root" "$mirror" >"$work/debootstrap.log" 2>&1 || {
  tail -n 30 "$work/debootstrap.log" >&2
  echo "build-debian: debootstrap failed (the log's end is above)" >&2
  exit 1
}

# The guest's configuration.
echo "LABEL=holos-root / ext4 defaults 0 1" > "$root/etc/fstab"
echo "localhost" > "$root/etc/hostname"
# Empty: systemd makes a machine id on every first boot of an instance.
: > "$root/etc/machine-id"
rm -f "$root/var/lib/dbus/machine-id"
# cloud-init reads only the NoCloud seed that holos attaches (no network
# probing for other clouds); one host key type is enough and quick to make.
# The image has no locales package: cloud-init leaves the locale alone.
# Each stage imports only the modules it lists: those of what holos's seed
# can hold (bootcmd, write_files, growpart and resize_rootfs, hostname and
# /etc/hosts, users and ssh, ssh_pwauth, runcmd, packages, power_state),
# not those of other clouds and tools, each an import under TCG.
cat > "$root/etc/cloud/cloud.cfg.d/90-holos.cfg" <<'CFG'
datasource_list: [NoCloud, None]
ssh_genkeytypes: [ed25519]
locale: false
cloud_init_modules: [migrator, seed_random, bootcmd, write-files, growpart,
  resizefs, set_hostname, update_hostname, update_etc_hosts, users-groups, ssh]
cloud_config_modules: [set-passwords, apt-configure, runcmd]
cloud_final_modules: [package-update-upgrade-install, write-files-deferred,
  scripts-vendor, scripts-per-once, scripts-per-boot, scripts-per-instance,
  scripts-user, final-message, power-state-change]
CFG
# No background jobs that slow a TCG boot or touch the disk during a test,
# and no mounts or module loads that no test uses.
for unit in apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer \
  e2scrub_all.timer e2scrub_reap.service fstrim.timer \
  systemd-binfmt.service proc-sys-fs-binfmt_misc.automount \
  sys-kernel-debug.mount sys-kernel-tracing.mount sys-kernel-config.mount \
  dev-hugepages.mount systemd-pstore.service modprobe@drm.service \
  modprobe@efi_pstore.service modprobe@fuse.service modprobe@loop.service \
  modprobe@dm_mod.service modprobe@configfs.service; do
  ln -sf /dev/null "$root/etc/systemd/system/$unit"
done
# Modules udev would load for the emulated CPU and machine, of no use in a
# TCG guest: each load (a signature check under TCG) slows every boot.
for module in kvm kvm_amd kvm_intel irqbypass aesni_intel crypto_simd cryptd \
  ghash_clmulni_intel sha1_ssse3 sha256_ssse3 sha512_ssse3 crc32_pclmul \
  crct10dif_pclmul serio_raw powernow_k8 qemu_fw_cfg; do
  echo "blacklist $module"
done > "$root/etc/modprobe.d/holos-test-guest.conf"
# netplan (cloud-init's renderer here) writes systemd-networkd's files.
chroot "$root" systemctl enable systemd-networkd.service >/dev/null 2>&1
# The network is online once one link is: an internal NIC, on a segment with
# no router, would hold every boot for its three router solicitations (12 s).
mkdir -p "$root/etc/systemd/system/systemd-networkd-wait-online.service.d"
cat > "$root/etc/systemd/system/systemd-networkd-wait-online.service.d/holos-test-guest.conf" <<'UNIT'
[Service]
ExecStart=
ExecStart=/lib/systemd/systemd-networkd-wait-online --any
UNIT
# Host keys come from cloud-init in each instance.
rm -f "$root"/etc/ssh/ssh_host_*
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb

kernel=$(ls "$root"/boot/vmlinuz-* | head -n1)
initrd=$(ls "$root"/boot/initrd.img-* | head -n1)
[ -f "$kernel" ] && [ -f "$initrd" ] || {
  echo "build-debian: no kernel or initramfs in $root/boot" >&2
  exit 1
}
cp "$kernel" "$work/vmlinuz"
cp "$initrd" "$work/initrd.img"

# The filesystem, made from the tree (mke2fs -d keeps owners and modes), with
# room to spare for what the tests copy in, then qcow2.
used_mb=$(du -sm "$root" | cut -f1)
size_mb=$((used_mb * 3 / 2 + 512))
truncate -s "${size_mb}M" "$work/disk.raw"
mke2fs -q -t ext4 -L holos-root -d "$root" "$work/disk.raw"
qemu-img convert -q -f raw -O qcow2 "$work/disk.raw" "$work/disk.qcow2"
for file in vmlinuz initrd.img disk.qcow2; do mv "$work/$file" "$out/$file"; done
echo "$stamp" > "$out/stamp"
echo "build-debian: built $out ($suite, $(basename "$kernel"), ${size_mb} MiB filesystem) in $(($(date +%s) - started)) s"
