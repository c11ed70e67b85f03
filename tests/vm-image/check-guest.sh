#!/bin/sh
# Boots the guest from build-guest.sh with real QEMU under TCG, the way holos
# lays out an instance (serial and QMP on unix sockets, a user-mode NIC with
# a host forward), and checks it: the ready line on the serial log, the file
# served through the forward, and a clean power-off after QMP
# system_powerdown (the guest's acpid acts on the power button).
#
# Usage: tests/vm-image/check-guest.sh OUTDIR [HOST_PORT]
# Needs: qemu-system-x86_64 (qemu-system-x86), socat.
set -eu
[ $# -ge 1 ] || { echo "usage: check-guest.sh OUTDIR [HOST_PORT]" >&2; exit 2; }
image=$(cd "$1" && pwd)
port=${2:-18080}
run=$(mktemp -d)
qemu_pid=
cleanup() {
  [ -z "$qemu_pid" ] || kill -9 "$qemu_pid" 2>/dev/null || true
  rm -rf "$run"
}
trap cleanup EXIT
fail() { echo "check-guest: $*" >&2; echo "--- console.log:" >&2; tail -n 20 "$run/console.log" >&2 || true; exit 1; }

start=$(date +%s)
qemu-system-x86_64 -machine q35,accel=tcg -cpu max -smp 1 -m 256 \
  -nodefaults -no-user-config -display none \
  -chardev "socket,id=serial0,path=$run/serial.sock,server=on,wait=off,logfile=$run/console.log" \
  -serial chardev:serial0 \
  -qmp "unix:$run/qmp.sock,server=on,wait=off" \
  -device virtio-rng-pci \
  -drive "file=$image/disk.raw,format=raw,if=virtio,readonly=on" \
  -netdev "user,id=net0,hostfwd=tcp:127.0.0.1:$port-:80" -device virtio-net-pci,netdev=net0 \
  -kernel "$image/vmlinuz" -initrd "$image/initrd.img" \
  -append "console=ttyS0 quiet panic=-1" </dev/null >"$run/qemu.log" 2>&1 &
qemu_pid=$!

i=0
until grep -q "HOLOS-TEST-GUEST: ready" "$run/console.log" 2>/dev/null; do
  kill -0 "$qemu_pid" 2>/dev/null || fail "QEMU exited: $(cat "$run/qemu.log")"
  i=$((i + 1)); [ $i -lt 240 ] || fail "no ready line within 120 s"
  sleep 0.5
done
echo "check-guest: ready after $(($(date +%s) - start)) s: $(grep -a "HOLOS-TEST-GUEST: ready" "$run/console.log")"

body=$(printf 'GET /index.html HTTP/1.0\r\n\r\n' | socat -t5 - "TCP:127.0.0.1:$port" | tail -n 1)
[ "$body" = "hello from the holos test guest" ] || fail "forwarded port $port answered: $body"
echo "check-guest: port $port -> guest :80 served: $body"

printf '{"execute": "qmp_capabilities"}\n{"execute": "system_powerdown"}\n' |
  socat -t2 - "UNIX-CONNECT:$run/qmp.sock" >"$run/qmp.out"
grep -q '"event": "POWERDOWN"' "$run/qmp.out" || fail "no POWERDOWN event: $(cat "$run/qmp.out")"
i=0
while kill -0 "$qemu_pid" 2>/dev/null; do
  i=$((i + 1)); [ $i -lt 120 ] || fail "the guest did not power off within 30 s"
  sleep 0.25
done
wait "$qemu_pid" || fail "QEMU exited with $?"
qemu_pid=
grep -q "HOLOS-TEST-GUEST: power button, powering off" "$run/console.log" ||
  fail "QEMU ended, but the guest never saw the power button"
echo "check-guest: powered off through ACPI after system_powerdown"
