//! `holos doctor`: what this host needs to run holos, each check `ok`,
//! `warn` or `FAIL` with what to install or fix (Debian package names).
//! It exits 1 when a check failed, that is when `holos up` cannot work;
//! warnings (no KVM, no OVMF, QEMU tools of different releases, little free
//! disk) leave `up` working, slower or for fewer services.
//!
//! It runs what `up` runs: `qemu-system-x86_64 --version` and
//! `qemu-img --version` from `PATH`, the KVM probe launch of
//! [`host::kvm_probe`], the OVMF lookup of [`plan::find_firmware`], and it
//! creates the state directory as `up` would and writes a file in it (then
//! removes both again).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use holo_plugin::process::Command;

use crate::error::Error;
use crate::host;
use crate::instance::QEMU_IMG;
use crate::plan;
use crate::qemu::QEMU_SYSTEM;
use crate::settings::HostSettings;
use crate::spec::Accel;
use crate::state::make_private_dir;

/// Below this much free space `up` fails: no room for an overlay and a seed.
pub const FREE_FAIL_BYTES: u64 = 512 * 1024 * 1024;
/// Below this much, an image download or a volume that fills up may not fit.
pub const FREE_WARN_BYTES: u64 = 10 * 1024 * 1024 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Ok,
    Warn,
    Fail,
}

impl Level {
    fn label(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Warn => "warn",
            Level::Fail => "FAIL",
        }
    }
}

/// One line of the report.
#[derive(Debug, serde::Serialize)]
pub struct Check {
    pub level: Level,
    pub what: &'static str,
    pub text: String,
}

fn check(level: Level, what: &'static str, text: impl Into<String>) -> Check {
    Check {
        level,
        what,
        text: text.into(),
    }
}

/// Runs every check, prints the report on stdout (as JSON with `json`),
/// and exits 1 on a failure.
pub fn run(runtime: Result<HostSettings, Error>, json: bool) -> ExitCode {
    let checks = checks(runtime);
    let failed = checks.iter().filter(|c| c.level == Level::Fail).count();
    let warned = checks.iter().filter(|c| c.level == Level::Warn).count();
    let out = if json {
        json_report(&checks, failed, warned)
    } else {
        text_report(&checks, failed, warned)
    };
    // A closed stdout (doctor | head) is not worth a panic.
    let _ = std::io::Write::write_all(&mut std::io::stdout(), out.as_bytes());
    if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// `{"up_can_work": …, "failed": N, "warnings": N, "checks": [{"level",
/// "what", "text"}…]}`, the checks in the order of the text report.
fn json_report(checks: &[Check], failed: usize, warned: usize) -> String {
    let report = serde_json::json!({
        "up_can_work": failed == 0,
        "failed": failed,
        "warnings": warned,
        "checks": checks,
    });
    let mut text = serde_json::to_string_pretty(&report).unwrap_or_default();
    text.push('\n');
    text
}

fn text_report(checks: &[Check], failed: usize, warned: usize) -> String {
    let mut out = String::new();
    for c in checks {
        out.push_str(&format!(
            "{:<4}  {:<20} {}\n",
            c.level.label(),
            c.what,
            c.text
        ));
    }
    if failed > 0 {
        out.push_str(&format!(
            "holos doctor: {failed} check{} failed: holos up cannot work on this host until {} fixed\n",
            if failed == 1 { "" } else { "s" },
            if failed == 1 { "it is" } else { "they are" }
        ));
    } else {
        out.push_str(&format!(
            "holos doctor: holos up can work on this host ({warned} warning{})\n",
            if warned == 1 { "" } else { "s" }
        ));
    }
    out
}

/// Every check, in the order the report shows them.
pub fn checks(runtime: Result<HostSettings, Error>) -> Vec<Check> {
    let mut checks = Vec::new();
    let system = tool_version(
        &crate::qemu::qemu_system_program(),
        "qemu-system-x86",
        "QEMU emulator version",
    );
    let img = tool_version(
        &crate::instance::qemu_img_program(),
        "qemu-utils",
        "qemu-img version",
    );
    let versions = match (&system, &img) {
        (Ok(system), Ok(img)) => Some((system.version.clone(), img.version.clone())),
        _ => None,
    };
    checks.push(tool_check(QEMU_SYSTEM, &system));
    checks.push(tool_check(QEMU_IMG, &img));
    if let Some((system, img)) = versions {
        checks.push(if system == img {
            check(Level::Ok, "qemu versions", format!("both {system}"))
        } else {
            check(
                Level::Warn,
                "qemu versions",
                format!(
                    "{QEMU_SYSTEM} is {system} but {QEMU_IMG} is {img}; they come from different QEMU releases: install both from one (apt-get install qemu-system-x86 qemu-utils)"
                ),
            )
        });
    }
    let forced = runtime.as_ref().ok().and_then(|r| r.forced_accel.clone());
    checks.push(accel_check(system.is_ok(), forced.as_deref()));
    let system_root = runtime
        .as_ref()
        .map(|r| r.system_root.clone())
        .unwrap_or_else(|_| PathBuf::from("/"));
    checks.push(match plan::find_firmware(&system_root) {
        Some(files) => check(
            Level::Ok,
            "uefi firmware",
            format!("OVMF at {}", files.code.display()),
        ),
        None => check(
            Level::Warn,
            "uefi firmware",
            "no OVMF firmware in /usr/share/OVMF: services with vm.uefi or PCI devices cannot start; install ovmf",
        ),
    });
    checks.push(match find_on_path("ssh-keygen") {
        Some(path) => check(Level::Ok, "ssh-keygen", path.display().to_string()),
        None => check(
            Level::Fail,
            "ssh-keygen",
            "not found on PATH: up makes each project's SSH key with it; install openssh-client",
        ),
    });
    checks.push(match find_on_path("ssh") {
        Some(path) => check(Level::Ok, "ssh", path.display().to_string()),
        None => check(
            Level::Fail,
            "ssh",
            "not found on PATH: health checks, depends_on waits, pre_stop hooks and holos exec run over it; install openssh-client",
        ),
    });
    match runtime {
        Ok(runtime) => {
            let root = runtime.layout.root;
            let writable = state_dir_check(&root);
            let ok = writable.level == Level::Ok;
            checks.push(writable);
            if ok {
                checks.push(free_space_check(&root));
            }
        }
        Err(message) => checks.push(check(Level::Fail, "state directory", message)),
    }
    checks
}

/// A tool's `--version` first line and the version in it.
struct ToolVersion {
    path: PathBuf,
    version: String,
    line: String,
}

/// Why a tool cannot be used: not on PATH, or it does not answer `--version`.
enum ToolError {
    Missing(&'static str),
    Broken(PathBuf, String),
}

fn tool_version(
    program: &str,
    package: &'static str,
    prefix: &str,
) -> Result<ToolVersion, ToolError> {
    let Some(path) = find_on_path(program) else {
        return Err(ToolError::Missing(package));
    };
    let command = Command::new(&path)
        .arg("--version")
        .timeout(Duration::from_secs(30));
    let finished = command
        .run()
        .map_err(|e| ToolError::Broken(path.clone(), e.to_string()))?;
    let stdout = String::from_utf8_lossy(&finished.stdout);
    let line = stdout.lines().next().unwrap_or_default().trim().to_string();
    if !finished.success() {
        return Err(ToolError::Broken(
            path,
            format!(
                "{} failed: {}",
                command.command_line(),
                finished.stderr_tail(3).trim()
            ),
        ));
    }
    let version = line
        .strip_prefix(prefix)
        .and_then(|rest| rest.split_whitespace().next())
        .filter(|v| v.starts_with(|c: char| c.is_ascii_digit()));
    match version {
        Some(version) => Ok(ToolVersion {
            version: version.to_string(),
            path,
            line,
        }),
        None => Err(ToolError::Broken(
            path,
            format!("its --version printed {line:?}, not \"{prefix} X.Y.Z\""),
        )),
    }
}

fn tool_check(program: &'static str, found: &Result<ToolVersion, ToolError>) -> Check {
    match found {
        Ok(tool) => check(
            Level::Ok,
            program,
            format!("{} ({})", tool.line, tool.path.display()),
        ),
        Err(ToolError::Missing(package)) => check(
            Level::Fail,
            program,
            format!("not found on PATH; install {package} (apt-get install {package})"),
        ),
        Err(ToolError::Broken(path, why)) => check(
            Level::Fail,
            program,
            format!(
                "{} does not work: {why}; reinstall it from your distribution's QEMU packages",
                path.display()
            ),
        ),
    }
}

/// KVM through the probe launch `up` uses; TCG otherwise.
fn accel_check(have_qemu: bool, forced: Option<&str>) -> Check {
    const WHAT: &str = "accelerator";
    const HOW: &str = "load kvm_intel or kvm_amd, enable (nested) virtualisation for this machine, and give this user access to /dev/kvm (group kvm)";
    let forced_accel = match host::forced_accel(forced) {
        Ok(accel) => accel,
        Err(message) => return check(Level::Fail, WHAT, message),
    };
    if forced_accel == Some(Accel::Tcg) {
        return check(
            Level::Ok,
            WHAT,
            "TCG, as HOLOS_ACCEL=tcg says (KVM not probed)",
        );
    }
    if !have_qemu {
        return check(
            Level::Warn,
            WHAT,
            format!("not probed: {QEMU_SYSTEM} is missing"),
        );
    }
    match (host::kvm_probe(), forced_accel) {
        (Ok(()), _) => check(Level::Ok, WHAT, "KVM (the probe launch with KVM worked)"),
        (Err(why), Some(Accel::Kvm)) => check(
            Level::Fail,
            WHAT,
            format!("HOLOS_ACCEL=kvm, but {why}; {HOW}, or unset HOLOS_ACCEL to run under TCG"),
        ),
        (Err(why), _) => check(
            Level::Warn,
            WHAT,
            format!("TCG (emulation, many times slower than KVM): {why}; to use KVM, {HOW}"),
        ),
    }
}

/// Creates the state directory as `up` would, writes a file in it, and
/// removes the file and the directories it created: no trace is left.
fn state_dir_check(root: &Path) -> Check {
    const WHAT: &str = "state directory";
    let created: Vec<&Path> = root.ancestors().take_while(|dir| !dir.exists()).collect();
    let probe = root.join(format!(".holos-doctor-{}", std::process::id()));
    let written = make_private_dir(root).and_then(|()| {
        std::fs::write(&probe, b"holos doctor\n")
            .map_err(|e| Error::Host(format!("cannot write {}: {e}", probe.display())))
    });
    let _ = std::fs::remove_file(&probe);
    for dir in &created {
        let _ = std::fs::remove_dir(dir);
    }
    match written {
        Ok(()) => check(Level::Ok, WHAT, format!("{} is writable", root.display())),
        Err(why) => check(
            Level::Fail,
            WHAT,
            format!(
                "{why}; make it writable for this user, or point HOLOS_STATE_DIR at a directory that is"
            ),
        ),
    }
}

fn free_space_check(root: &Path) -> Check {
    const WHAT: &str = "free disk";
    // The check removed the directories it created: ask their filesystem.
    let existing = root.ancestors().find(|d| d.exists()).unwrap_or(root);
    match nix::sys::statvfs::statvfs(existing) {
        Ok(stats) => {
            let free = stats.blocks_available() * stats.fragment_size();
            let (level, advice) = free_space_level(free);
            check(
                level,
                WHAT,
                format!(
                    "{} free for images and disks in {}{advice}",
                    super::volumes::human_bytes(free),
                    root.display()
                ),
            )
        }
        Err(e) => check(
            Level::Warn,
            WHAT,
            format!("cannot tell the free space of {}: {e}", root.display()),
        ),
    }
}

/// What a free space means for `up`, with the advice to print after it.
pub fn free_space_level(free: u64) -> (Level, &'static str) {
    if free < FREE_FAIL_BYTES {
        (
            Level::Fail,
            ": too little for a root overlay and a seed; free some space or move HOLOS_STATE_DIR",
        )
    } else if free < FREE_WARN_BYTES {
        (
            Level::Warn,
            ": a cloud image (up to 1 GiB) and growing disks may not fit; free some space or move HOLOS_STATE_DIR",
        )
    } else {
        (Level::Ok, "")
    }
}

/// `program` as `PATH` finds it: the first executable file of that name.
fn find_on_path(program: impl AsRef<OsStr>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(program.as_ref()))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_space_fails_below_what_one_instance_needs_and_warns_below_an_image() {
        assert_eq!(free_space_level(0).0, Level::Fail);
        assert_eq!(free_space_level(FREE_FAIL_BYTES - 1).0, Level::Fail);
        assert_eq!(free_space_level(FREE_FAIL_BYTES).0, Level::Warn);
        assert_eq!(free_space_level(FREE_WARN_BYTES - 1).0, Level::Warn);
        assert_eq!(free_space_level(FREE_WARN_BYTES), (Level::Ok, ""));
    }
}
