//! One instance's life: its disks and seed, the detached QEMU launch with
//! the checks around it, and the graceful stop (QMP `system_powerdown`,
//! then SIGTERM, then SIGKILL).

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::{Duration, Instant};

use holo_plugin::process::{Command, Status, spawn_detached_recorded};
use nix::sys::signal::Signal;

use crate::cloud_init::SeedDocuments;
use crate::error::Error;
use crate::host;
use crate::plan::FirmwareFiles;
use crate::qemu;
use crate::qmp::Qmp;
use crate::seed_iso;
use crate::spec::InstanceSpec;
use crate::ssh;
use crate::state::make_private_dir;

/// The `qemu-img` binary holos runs (looked up on `PATH`).
pub const QEMU_IMG: &str = "qemu-img";

/// The `qemu-img` to run: `HOLOS_QEMU_IMG` (a path, or a name looked up on
/// `PATH`) when set, else [`QEMU_IMG`].
pub fn qemu_img_program() -> String {
    std::env::var("HOLOS_QEMU_IMG")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| QEMU_IMG.to_string())
}

/// How long a launch may take before QMP answers.
pub const LAUNCH_TIMEOUT: Duration = Duration::from_secs(30);
/// After SIGTERM, how long QEMU gets before SIGKILL.
pub const TERM_GRACE: Duration = Duration::from_secs(5);
/// How long the pre_stop hooks may run, each.
pub const PRE_STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs `qemu-img ARGS`; its stderr tail is the error.
pub fn qemu_img(args: &[&std::ffi::OsStr]) -> Result<(), Error> {
    let command = Command::new(qemu_img_program())
        .args(args)
        .timeout(Duration::from_secs(120));
    let finished = command.run().map_err(|e| {
        Error::Instance(format!(
            "{e}; holos needs qemu-img (Debian package qemu-utils)"
        ))
    })?;
    if finished.success() {
        Ok(())
    } else {
        Err(Error::Instance(format!(
            "{} failed: {}",
            command.command_line(),
            finished.stderr_tail(5).trim()
        )))
    }
}

/// Creates the instance directory, the root overlay over the base image,
/// the UEFI vars copy and the seed image. An existing overlay is kept (its
/// guest state survives `stop`/`start`); the seed is rewritten.
pub fn prepare(
    spec: &InstanceSpec,
    documents: &SeedDocuments,
    firmware: Option<&FirmwareFiles>,
) -> Result<(), Error> {
    make_private_dir(&spec.dir)?;
    let root = spec.root_disk();
    if !root.exists() {
        if !spec.image.is_file() {
            return Err(Error::Instance(format!(
                "service {}: the base image {} does not exist; run `holos pull` for an alias, or point image: at a local disk image",
                spec.service,
                spec.image.display()
            )));
        }
        let backing = spec
            .image
            .canonicalize()
            .unwrap_or_else(|_| spec.image.clone());
        let size = match spec.disk_size_bytes {
            Some(bytes) => Some(overlay_size(spec, &backing, bytes)?),
            None => None,
        };
        let args: Vec<&std::ffi::OsStr> = vec![
            "create".as_ref(),
            "-q".as_ref(),
            "-f".as_ref(),
            "qcow2".as_ref(),
            "-F".as_ref(),
            spec.image_format.as_ref(),
            "-b".as_ref(),
            backing.as_os_str(),
        ];
        in_place_when_whole(&root, |partial| {
            let mut args = args.clone();
            args.push(partial.as_os_str());
            if let Some(size) = &size {
                args.push(size.as_ref());
            }
            qemu_img(&args)
        })?;
    }
    if let (Some(wanted), Some(files)) = (&spec.firmware, firmware)
        && !wanted.vars.exists()
    {
        in_place_when_whole(&wanted.vars, |partial| {
            std::fs::copy(&files.vars_template, partial)
                .map(|_| ())
                .map_err(|e| {
                    Error::Instance(format!(
                        "cannot copy the UEFI vars {} to {}: {e}",
                        files.vars_template.display(),
                        wanted.vars.display()
                    ))
                })
        })?;
    }
    let image = seed_iso::build(documents)?;
    holo_plugin::atomic::write(
        &holo_plugin::root_fs::RootFs::unconfined(),
        &spec.seed_iso(),
        &image,
        &holo_plugin::atomic::WriteOptions::mode(0o600),
    )
    .map_err(|e| Error::Instance(e.to_string()))
}

/// Makes `path` through `make`, which writes `PATH.holos-new`, renamed
/// over `path` only once `make` succeeded: an `up` killed midway leaves a
/// partial file under that name, which the next one replaces, never a torn
/// disk that it would take as made and boot.
fn in_place_when_whole(
    path: &Path,
    make: impl FnOnce(&Path) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut partial = path.as_os_str().to_owned();
    partial.push(".holos-new");
    let partial = std::path::PathBuf::from(partial);
    let leftover = std::fs::remove_file(&partial);
    if let Err(e) = leftover
        && e.kind() != std::io::ErrorKind::NotFound
    {
        return Err(Error::Instance(format!(
            "cannot remove the partial {} a killed run left: {e}",
            partial.display()
        )));
    }
    make(&partial)?;
    std::fs::rename(&partial, path).map_err(|e| {
        Error::Instance(format!(
            "cannot rename {} to {}: {e}",
            partial.display(),
            path.display()
        ))
    })
}

/// The overlay size argument for `vm.disk_size`: never below the base
/// image's virtual size, which would cut its file system short.
fn overlay_size(spec: &InstanceSpec, backing: &Path, wanted: u64) -> Result<String, Error> {
    let base = virtual_size(backing, &spec.image_format)?;
    if wanted < base {
        return Err(Error::Instance(format!(
            "service {}: vm.disk_size is {wanted} bytes, smaller than the image {} ({base} bytes); raise it or remove it",
            spec.service,
            spec.image.display()
        )));
    }
    Ok(wanted.to_string())
}

/// The virtual size of a disk image, from `qemu-img info`.
fn virtual_size(image: &Path, format: &str) -> Result<u64, Error> {
    let command = Command::new(qemu_img_program())
        .args(["info", "--output=json", "-f", format])
        .arg(image)
        .timeout(Duration::from_secs(60));
    let finished = command.run().map_err(|e| {
        Error::Instance(format!(
            "{e}; holos needs qemu-img (Debian package qemu-utils)"
        ))
    })?;
    if !finished.success() {
        return Err(Error::Instance(format!(
            "{} failed: {}",
            command.command_line(),
            finished.stderr_tail(5).trim()
        )));
    }
    serde_json::from_slice::<serde_json::Value>(&finished.stdout)
        .ok()
        .and_then(|info| info["virtual-size"].as_u64())
        .ok_or_else(|| {
            Error::Instance(format!(
                "{} printed no virtual-size",
                command.command_line()
            ))
        })
}

/// Creates a named volume at `size` bytes unless it exists.
pub fn ensure_volume(path: &Path, size_bytes: u64) -> Result<(), Error> {
    if path.exists() {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        make_private_dir(dir)?;
    }
    qemu_img(&[
        "create".as_ref(),
        "-q".as_ref(),
        "-f".as_ref(),
        "qcow2".as_ref(),
        path.as_os_str(),
        size_bytes.to_string().as_ref(),
    ])
}

/// Why a launch failed.
#[derive(Debug)]
pub enum LaunchError {
    /// The auto-allocated SSH port was taken: pick another and retry.
    SshPortTaken,
    Failed(String),
}

/// Starts QEMU detached (own session, output to `qemu.log`) and waits until
/// its QMP monitor greets, which QEMU does only once it is fully set up.
/// Returns the pid.
pub fn launch(spec: &InstanceSpec) -> Result<u32, LaunchError> {
    for forward in &spec.forwards {
        if !host::port_is_free_for(forward.protocol, forward.host_ip, forward.host_port) {
            return Err(LaunchError::Failed(port_taken(
                spec,
                forward.host_ip,
                forward.host_port,
                forward.guest_port,
            )));
        }
    }
    if !host::port_is_free(std::net::Ipv4Addr::LOCALHOST, spec.ssh_port) {
        return Err(LaunchError::SshPortTaken);
    }
    for socket in [spec.qmp_socket(), spec.serial_socket()] {
        let _ = std::fs::remove_file(socket);
    }
    let log = spec.qemu_log();
    let log_start = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
    let command = Command::new(qemu::qemu_system_program()).args(qemu::argv(spec));
    // Recorded by the child before QEMU runs: every later command finds it.
    let mut child = spawn_detached_recorded(&command, &log, &spec.pid_file()).map_err(|e| {
        LaunchError::Failed(format!(
            "{e}; holos needs qemu-system-x86_64 (Debian package qemu-system-x86)"
        ))
    })?;
    let pid = child.pid();
    let started = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            let tail = log_tail(&log, log_start);
            if let Some(err) = forward_conflict(spec, &tail) {
                return Err(err);
            }
            return Err(LaunchError::Failed(format!(
                "QEMU for {} exited during start ({}); the end of {}:\n{}",
                spec.name,
                describe(status),
                log.display(),
                tail
            )));
        }
        if spec.qmp_socket().exists()
            && Qmp::connect(&spec.qmp_socket(), Duration::from_secs(2)).is_ok()
        {
            return Ok(pid);
        }
        if started.elapsed() >= LAUNCH_TIMEOUT {
            host::signal(pid, Signal::SIGKILL);
            let _ = child.try_wait();
            return Err(LaunchError::Failed(format!(
                "QEMU for {} did not answer on {} within {}s and was killed; the end of {}:\n{}",
                spec.name,
                spec.qmp_socket().display(),
                LAUNCH_TIMEOUT.as_secs(),
                log.display(),
                log_tail(&log, log_start)
            )));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn describe(status: Status) -> String {
    match status {
        Status::Exited(code) => format!("exit status {code}"),
        Status::Signaled(signal) => format!("killed by signal {signal}"),
        Status::TimedOut => "timed out".to_string(),
    }
}

fn port_taken(spec: &InstanceSpec, ip: std::net::Ipv4Addr, port: u16, guest: u16) -> String {
    format!(
        "port {ip}:{port} is already in use on this host, so service {} ({}) cannot forward it to guest port {guest}; stop what listens there or change the service's ports:",
        spec.service, spec.name
    )
}

/// Maps QEMU's "Could not set up host forwarding rule" to the port.
fn forward_conflict(spec: &InstanceSpec, log: &str) -> Option<LaunchError> {
    if !log.contains("host forwarding rule") {
        return None;
    }
    if log.contains(&format!("tcp:127.0.0.1:{}-:22", spec.ssh_port)) {
        return Some(LaunchError::SshPortTaken);
    }
    spec.forwards.iter().find_map(|f| {
        log.contains(&format!(":{}-", f.host_port))
            .then(|| LaunchError::Failed(port_taken(spec, f.host_ip, f.host_port, f.guest_port)))
    })
}

/// The last lines QEMU wrote to its log since `from`.
fn log_tail(log: &Path, from: u64) -> String {
    let mut text = String::new();
    if let Ok(mut file) = std::fs::File::open(log) {
        let _ = file.seek(SeekFrom::Start(from));
        let mut bytes = Vec::new();
        let _ = file.read_to_end(&mut bytes);
        text = String::from_utf8_lossy(&bytes).into_owned();
    }
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(20)..].join("\n");
    if tail.is_empty() {
        "(QEMU wrote nothing)".to_string()
    } else {
        tail
    }
}

/// How an instance came to stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped {
    /// The guest powered off after the ACPI power button.
    Powerdown,
    Terminated,
    Killed,
}

/// Stops the QEMU `pid` of `spec`: pre_stop hooks over SSH, then QMP
/// `system_powerdown` and up to `stop_grace_period` for the guest to halt,
/// then SIGTERM, then SIGKILL.
pub fn stop(spec: &InstanceSpec, pid: u32, key: &Path) -> Result<Stopped, Error> {
    if !spec.pre_stop.is_empty() {
        match ssh::wait_for_sshd(spec.ssh_port, Duration::from_secs(2)) {
            Ok(()) => ssh::run_pre_stop(key, spec, PRE_STOP_TIMEOUT),
            Err(_) => eprintln!(
                "holos: {}: sshd does not answer, pre_stop hooks skipped",
                spec.label()
            ),
        }
    }
    let grace = Duration::from_millis(spec.stop_grace_period_ms);
    match Qmp::connect(&spec.qmp_socket(), Duration::from_secs(5))
        .and_then(|mut qmp| qmp.execute("system_powerdown"))
    {
        Ok(_) => {
            if host::wait_gone(pid, spec, grace) {
                return Ok(Stopped::Powerdown);
            }
            eprintln!(
                "holos: {}: the guest did not power off within {}s, sending SIGTERM",
                spec.label(),
                grace.as_secs_f64()
            );
        }
        Err(e) => eprintln!("holos: {}: {e}; sending SIGTERM", spec.label()),
    }
    host::signal(pid, Signal::SIGTERM);
    if host::wait_gone(pid, spec, TERM_GRACE) {
        return Ok(Stopped::Terminated);
    }
    eprintln!(
        "holos: {}: QEMU ignored SIGTERM for {}s, sending SIGKILL",
        spec.label(),
        TERM_GRACE.as_secs()
    );
    host::signal(pid, Signal::SIGKILL);
    if host::wait_gone(pid, spec, Duration::from_secs(10)) {
        return Ok(Stopped::Killed);
    }
    Err(Error::Instance(format!(
        "QEMU pid {pid} of {} survived SIGKILL; check it with ps",
        spec.name
    )))
}
