//! What the runtime asks of the host: whether a pid is still our QEMU,
//! signals, free and taken TCP ports, and which accelerator works.

use std::net::{Ipv4Addr, SocketAddrV4, TcpListener};
use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::error::Error;
use crate::qemu;
use crate::spec::{Accel, InstanceSpec};
use holo_plugin::command::shell_quote;
use holo_plugin::pid_record::PidRecord;
use holos_compose::manifest::Protocol;

/// Whether `pid` is running the QEMU of `spec`: the process holos started
/// for it, as its pid file records it (pid and start time, so neither a
/// zombie nor a reused pid counts, whatever the program is called). An
/// instance started by an older holos has no pid file: its command line
/// must then be QEMU's with the instance's QMP socket.
pub fn is_our_qemu(pid: u32, spec: &InstanceSpec) -> bool {
    match PidRecord::read(&spec.pid_file()) {
        Some(record) => record.pid == pid && record.is_running(),
        None => std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|cmdline| qemu::cmdline_is_ours(&cmdline, spec))
            .unwrap_or(false),
    }
}

/// The pid of the instance's QEMU if it runs: the one its pid file records
/// (written before QEMU started, so an interrupted `up` or `start` leaves
/// none unknown), else the one in the project record of an older holos.
pub fn running_pid(pid: Option<u32>, spec: &InstanceSpec) -> Option<u32> {
    match PidRecord::read(&spec.pid_file()) {
        Some(record) => record.is_running().then_some(record.pid),
        None => pid.filter(|pid| is_our_qemu(*pid, spec)),
    }
}

/// Sends `signal` to `pid`, and to the whole process group when `pid`
/// leads one (holos starts QEMU in a session of its own, so a wrapper
/// script that runs QEMU as a child is reached too); a process that is
/// already gone is not an error.
pub fn signal(pid: u32, signal: Signal) {
    if let Ok(raw) = i32::try_from(pid) {
        let target = Pid::from_raw(raw);
        if nix::unistd::getpgid(Some(target)) == Ok(target) {
            let _ = nix::sys::signal::killpg(target, signal);
        }
        let _ = kill(target, signal);
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
pub fn free_port() -> Result<u16, Error> {
    TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| Error::Host(format!("cannot find a free TCP port on 127.0.0.1: {e}")))
}

/// Whether `ip:port` can be bound right now.
pub fn port_is_free(ip: Ipv4Addr, port: u16) -> bool {
    TcpListener::bind(SocketAddrV4::new(ip, port)).is_ok()
}

/// Whether `ip:port` of `protocol` can be bound right now.
pub fn port_is_free_for(protocol: Protocol, ip: Ipv4Addr, port: u16) -> bool {
    match protocol {
        Protocol::Tcp => port_is_free(ip, port),
        Protocol::Udp => std::net::UdpSocket::bind(SocketAddrV4::new(ip, port)).is_ok(),
    }
}

/// The accelerator: `HOLOS_ACCEL` when set, else KVM if a short probe
/// launch with KVM works, else TCG. Opening `/dev/kvm` proves nothing:
/// nested KVM opens and then hangs.
pub fn detect_accel(forced: Option<&str>) -> Result<Accel, Error> {
    if let Some(accel) = forced_accel(forced)? {
        return Ok(accel);
    }
    Ok(if kvm_probe().is_ok() {
        Accel::Kvm
    } else {
        Accel::Tcg
    })
}

/// `HOLOS_ACCEL`: `None` when unset, an error when it names no accelerator.
pub fn forced_accel(forced: Option<&str>) -> Result<Option<Accel>, Error> {
    match forced {
        None => Ok(None),
        Some("kvm") => Ok(Some(Accel::Kvm)),
        Some("tcg") => Ok(Some(Accel::Tcg)),
        Some(other) => Err(Error::Host(format!(
            "HOLOS_ACCEL={other:?} is not an accelerator; use kvm or tcg, or unset it"
        ))),
    }
}

/// How long the KVM probe launch may take; a hang (nested KVM) ends here.
pub const KVM_PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// The probe launch: QEMU with KVM, the machine and CPU holos starts guests
/// with by default (q35, `-cpu host`: a vCPU is created, reset and run, so
/// MSRs the host's KVM rejects show here) and QMP on stdin, asked whether
/// KVM is enabled and then to quit. `Err` says why KVM cannot be used (for
/// `holos doctor`); `up` then falls back to TCG.
pub fn kvm_probe() -> Result<(), Error> {
    if !Path::new("/dev/kvm").exists() {
        return Err(Error::Host(
            "/dev/kvm does not exist (no KVM module, or a VM without nested virtualisation)".into(),
        ));
    }
    let program = shell_quote(&qemu::qemu_system_program());
    let script = format!(
        "printf '%s\\n' '{{\"execute\":\"qmp_capabilities\"}}' '{{\"execute\":\"query-kvm\"}}' '{{\"execute\":\"quit\"}}' | \
         {program} -machine q35,accel=kvm -cpu host -m 64 -nodefaults -no-user-config -display none -qmp stdio"
    );
    let probe = holo_plugin::process::Command::shell(script).timeout(KVM_PROBE_TIMEOUT);
    let finished = probe
        .run()
        .map_err(|e| Error::Host(format!("cannot run the probe launch: {e}")))?;
    if finished.status == holo_plugin::process::Status::TimedOut {
        return Err(Error::Host(format!(
            "the probe launch with KVM hung for {}s (nested KVM that opens but does not run)",
            KVM_PROBE_TIMEOUT.as_secs()
        )));
    }
    if finished.success() && String::from_utf8_lossy(&finished.stdout).contains("\"enabled\": true")
    {
        return Ok(());
    }
    let said = finished.stderr_tail(3);
    Err(Error::Host(format!(
        "the probe launch with KVM failed: {}",
        if said.trim().is_empty() {
            "QEMU did not report KVM as enabled".to_string()
        } else {
            said.trim().replace('\n', "; ")
        }
    )))
}
