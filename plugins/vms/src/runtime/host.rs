//! What the runtime asks of the host: whether a pid is still our QEMU,
//! signals, free and taken TCP ports, and which accelerator works.

use std::net::{Ipv4Addr, SocketAddrV4, TcpListener};
use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::qemu::{self, QEMU_SYSTEM};
use super::spec::{Accel, InstanceSpec};

/// Whether `pid` is running the QEMU of `spec` (a zombie has no cmdline and
/// a reused pid runs something else, so neither counts).
pub fn is_our_qemu(pid: u32, spec: &InstanceSpec) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|cmdline| qemu::cmdline_is_ours(&cmdline, spec))
        .unwrap_or(false)
}

/// The pid in the record if it is still our QEMU.
pub fn running_pid(pid: Option<u32>, spec: &InstanceSpec) -> Option<u32> {
    pid.filter(|pid| is_our_qemu(*pid, spec))
}

/// Sends `signal` to `pid`; a process that is already gone is not an error.
pub fn signal(pid: u32, signal: Signal) {
    if let Ok(raw) = i32::try_from(pid) {
        let _ = kill(Pid::from_raw(raw), signal);
    }
}

/// Waits until `pid` is no longer our QEMU; true if it went within `limit`.
pub fn wait_gone(pid: u32, spec: &InstanceSpec, limit: Duration) -> bool {
    let started = Instant::now();
    loop {
        if !is_our_qemu(pid, spec) {
            return true;
        }
        if started.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An unused TCP port on 127.0.0.1, chosen by the kernel.
pub fn free_port() -> Result<u16, String> {
    TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("cannot find a free TCP port on 127.0.0.1: {e}"))
}

/// Whether `ip:port` can be bound right now.
pub fn port_is_free(ip: Ipv4Addr, port: u16) -> bool {
    TcpListener::bind(SocketAddrV4::new(ip, port)).is_ok()
}

/// The accelerator: `HOLOS_ACCEL` when set, else KVM if a short probe
/// launch with KVM works, else TCG. Opening `/dev/kvm` proves nothing:
/// nested KVM opens and then hangs.
pub fn detect_accel(forced: Option<&str>) -> Result<Accel, String> {
    match forced {
        Some("kvm") => return Ok(Accel::Kvm),
        Some("tcg") => return Ok(Accel::Tcg),
        Some(other) => {
            return Err(format!(
                "HOLOS_ACCEL={other:?} is not an accelerator; use kvm or tcg, or unset it"
            ));
        }
        None => {}
    }
    if !Path::new("/dev/kvm").exists() {
        return Ok(Accel::Tcg);
    }
    Ok(if kvm_probe() { Accel::Kvm } else { Accel::Tcg })
}

/// Starts QEMU with KVM, no devices and QMP on stdin, and asks it to quit.
/// A hang (nested KVM) ends at the timeout and counts as no KVM.
fn kvm_probe() -> bool {
    let script = format!(
        "printf '%s\\n' '{{\"execute\":\"qmp_capabilities\"}}' '{{\"execute\":\"query-kvm\"}}' '{{\"execute\":\"quit\"}}' | \
         {QEMU_SYSTEM} -machine none,accel=kvm -cpu host -nodefaults -no-user-config -display none -qmp stdio"
    );
    let probe = holo_plugin::process::Command::shell(script).timeout(Duration::from_secs(3));
    match probe.run() {
        Ok(finished) => {
            finished.success()
                && String::from_utf8_lossy(&finished.stdout).contains("\"enabled\": true")
        }
        Err(_) => false,
    }
}
