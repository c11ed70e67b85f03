//! The QEMU command line of one instance.
//!
//! Order: machine and CPU, memory, the console and QMP sockets, the RNG, the
//! disks (root, volumes, seed), the 9p shares, the NICs, UEFI firmware,
//! passed-through PCI devices, and `vm.extra_args` last so the user can
//! override anything. Every value interpolated into a `-opt key=value,...`
//! list has its commas doubled, as QEMU's option parser wants.

use std::path::Path;

use crate::spec::{Accel, InstanceSpec};
use holos_compose::manifest::SegmentBackend;

/// The QEMU binary holos starts (looked up on `PATH`).
pub const QEMU_SYSTEM: &str = "qemu-system-x86_64";

/// The QEMU binary to run: `HOLOS_QEMU_SYSTEM` (a path, or a name looked up
/// on `PATH`) when set, else [`QEMU_SYSTEM`]. Its file name must start with
/// `qemu-system-`, by which holos tells its QEMU from a reused pid.
pub fn qemu_system_program() -> String {
    std::env::var("HOLOS_QEMU_SYSTEM")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| QEMU_SYSTEM.to_string())
}

/// Doubles every `,` so that a value cannot end its option list early.
pub fn escape(value: &str) -> String {
    value.replace(',', ",,")
}

fn path(p: &Path) -> String {
    escape(&p.to_string_lossy())
}

/// Every argument after the program name.
pub fn argv(spec: &InstanceSpec) -> Vec<String> {
    let mut args = machine_args(spec);
    args.extend(socket_args(spec));
    args.extend(disk_args(spec));
    args.extend(share_args(spec));
    args.extend(net_args(spec));
    args.extend(firmware_and_device_args(spec));
    args.extend(spec.extra_args.iter().cloned());
    args
}

/// An argument list from its words.
fn words(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| s.to_string()).collect()
}

/// The name, machine, CPU, memory and the defaults holos turns off.
fn machine_args(spec: &InstanceSpec) -> Vec<String> {
    let mut args = Vec::new();
    let mut push = |parts: &[&str]| args.extend(words(parts));
    let passthrough = !spec.devices.is_empty();
    push(&[
        "-name",
        &format!(
            "guest={},process=holos-{}",
            escape(&spec.name),
            escape(&spec.name)
        ),
    ]);
    let mut machine = format!("{},accel={}", escape(&spec.machine), spec.accel.name());
    if passthrough && spec.accel == Accel::Kvm {
        // VFIO interrupts are delivered in the kernel.
        machine.push_str(",kernel-irqchip=on");
    }
    push(&["-machine", &machine]);
    let mut cpu = match &spec.cpu_model {
        Some(model) => escape(model),
        None => spec.accel.default_cpu().to_string(),
    };
    if passthrough && spec.cpu_model.is_none() {
        // NVIDIA's drivers refuse to start when they see the KVM signature.
        cpu.push_str(",kvm=off");
    }
    push(&["-cpu", &cpu]);
    push(&["-smp", &spec.vcpu.to_string()]);
    push(&["-m", &spec.memory_mb.to_string()]);
    push(&["-nodefaults", "-no-user-config", "-display", "none"]);
    args
}

/// The serial console and QMP sockets, and the RNG.
fn socket_args(spec: &InstanceSpec) -> Vec<String> {
    let mut args = Vec::new();
    let mut push = |parts: &[&str]| args.extend(words(parts));
    push(&[
        "-chardev",
        &format!(
            "socket,id=serial0,path={},server=on,wait=off,logfile={},logappend=on",
            path(&spec.serial_socket()),
            path(&spec.console_log())
        ),
    ]);
    push(&["-serial", "chardev:serial0"]);
    push(&[
        "-chardev",
        &format!(
            "socket,id=qmp0,path={},server=on,wait=off",
            path(&spec.qmp_socket())
        ),
    ]);
    push(&["-mon", "chardev=qmp0,mode=control"]);
    push(&[
        "-object",
        "rng-random,id=rng0,filename=/dev/urandom",
        "-device",
        "virtio-rng-pci,rng=rng0",
    ]);
    args
}

/// The root disk, the named volumes and the cloud-init seed.
fn disk_args(spec: &InstanceSpec) -> Vec<String> {
    let mut args = Vec::new();
    let mut push = |parts: &[&str]| args.extend(words(parts));
    push(&[
        "-drive",
        &format!(
            "if=none,id=root,file={},format=qcow2,discard=unmap",
            path(&spec.root_disk())
        ),
        "-device",
        // Not 0: `-kernel` in extra_args takes bootindex 0 for itself.
        "virtio-blk-pci,drive=root,bootindex=1",
    ]);
    for (index, volume) in spec.volumes.iter().enumerate() {
        let id = format!("vol{index}");
        let read_only = if volume.read_only { ",readonly=on" } else { "" };
        push(&[
            "-drive",
            &format!(
                "if=none,id={id},file={},format=qcow2{read_only}",
                path(&volume.path)
            ),
            "-device",
            &format!(
                "virtio-blk-pci,drive={id},serial={}",
                escape(&volume.serial())
            ),
        ]);
    }
    push(&[
        "-drive",
        &format!(
            "if=none,id=seed,file={},format=raw,readonly=on",
            path(&spec.seed_iso())
        ),
        "-device",
        "virtio-blk-pci,drive=seed",
    ]);
    args
}

/// The bind mounts, as 9p shares.
fn share_args(spec: &InstanceSpec) -> Vec<String> {
    let mut args = Vec::new();
    let mut push = |parts: &[&str]| args.extend(words(parts));
    for (index, share) in spec.binds.iter().enumerate() {
        let read_only = if share.read_only { ",readonly=on" } else { "" };
        push(&[
            "-virtfs",
            &format!(
                "local,id=fs{index},path={},mount_tag={},security_model=none{read_only}",
                path(&share.source),
                escape(&share.tag)
            ),
        ]);
    }
    args
}

/// The user-mode NIC with its forwards, and one NIC per network.
fn net_args(spec: &InstanceSpec) -> Vec<String> {
    let mut args = Vec::new();
    let mut push = |parts: &[&str]| args.extend(words(parts));
    let mut user_net = String::from("user,id=user0");
    let ssh = std::iter::once(format!("hostfwd=tcp:127.0.0.1:{}-:22", spec.ssh_port));
    let forwards = spec.forwards.iter().map(|f| {
        let guest_ip = f.guest_ip.map(|ip| ip.to_string()).unwrap_or_default();
        format!(
            "hostfwd={}:{}:{}-{guest_ip}:{}",
            f.protocol.name(),
            f.host_ip,
            f.host_port,
            f.guest_port
        )
    });
    for forward in ssh.chain(forwards) {
        user_net.push(',');
        user_net.push_str(&forward);
    }
    push(&["-netdev", &user_net]);
    push(&[
        "-device",
        &format!("virtio-net-pci,netdev=user0,mac={}", escape(&spec.mac_user)),
    ]);
    if spec.networks.is_empty() {
        push(&[
            "-netdev",
            &format!(
                "socket,id=internal0,mcast={}:{},localaddr=127.0.0.1",
                spec.multicast_group, spec.multicast_port
            ),
        ]);
        push(&[
            "-device",
            &format!(
                "virtio-net-pci,netdev=internal0,mac={}",
                escape(&spec.mac_internal)
            ),
        ]);
    }
    // One NIC per Compose network, in the order the service lists them.
    for (index, nic) in spec.networks.iter().enumerate() {
        let id = format!("internal{index}");
        let netdev = match &nic.backend {
            SegmentBackend::Multicast { group, port } => {
                format!("socket,id={id},mcast={group}:{port},localaddr=127.0.0.1")
            }
            // QEMU runs qemu-bridge-helper, which attaches a tap to it.
            SegmentBackend::Bridge { bridge } => format!("bridge,id={id},br={}", escape(bridge)),
        };
        push(&["-netdev", &netdev]);
        push(&[
            "-device",
            &format!("virtio-net-pci,netdev={id},mac={}", escape(&nic.mac)),
        ]);
    }
    args
}

/// UEFI firmware and the passed-through PCI devices.
fn firmware_and_device_args(spec: &InstanceSpec) -> Vec<String> {
    let mut args = Vec::new();
    let mut push = |parts: &[&str]| args.extend(words(parts));
    if let Some(firmware) = &spec.firmware {
        push(&[
            "-drive",
            &format!(
                "if=pflash,format=raw,unit=0,readonly=on,file={}",
                path(&firmware.code)
            ),
            "-drive",
            &format!("if=pflash,format=raw,unit=1,file={}", path(&firmware.vars)),
        ]);
    }
    for device in &spec.devices {
        let mut option = format!("vfio-pci,host={}", escape(&device.pci));
        if let Some(rom) = &device.rom_file {
            option.push_str(&format!(",romfile={}", escape(rom)));
        }
        push(&["-device", &option]);
    }
    args
}

/// Whether `/proc/<pid>/cmdline` (NUL-separated) is the QEMU of `spec`: its
/// program is a `qemu-system-*` and it serves this instance's QMP socket.
/// A pid the kernel reused for something else never matches.
pub fn cmdline_is_ours(cmdline: &[u8], spec: &InstanceSpec) -> bool {
    let mut args = cmdline.split(|b| *b == 0);
    let program = args.next().unwrap_or_default();
    let base = program.rsplit(|b| *b == b'/').next().unwrap_or_default();
    if !base.starts_with(b"qemu-system-") {
        return false;
    }
    let qmp = format!("path={},", path(&spec.qmp_socket()));
    args.any(|arg| {
        arg.starts_with(b"socket,id=qmp0,")
            && arg
                .windows(qmp.len())
                .any(|window| window == qmp.as_bytes())
    })
}
