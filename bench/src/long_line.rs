//! One line of N MB without a newline, through the three places that split
//! output into lines or records: holo-exec's `logoutput` (the SDK's command
//! runner), a plugin's stderr in the driver, and one batch record on FD 3
//! in the driver. Linear handling takes about N times the time of 1 MB; a
//! rescan of the whole partial line at every read takes N² times.
//!
//! With OLD_DIR (a directory holding an older build's `holo` and
//! `holo-exec`), each step runs with both builds, alternately. A run that
//! takes longer than [`LIMIT`] is stopped and reported as such.

use crate::util;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The longest a single run may take.
const LIMIT: Duration = Duration::from_secs(180);

/// `line:stderr` writes the line on stderr; a batch of `line:fd3` and
/// `line:other` sends it as the output of one record. `$SIZE` is in bytes.
const PLUGIN: &str = r#"#!/bin/sh
case "$1" in
info) echo MIN_API_VERSION=3; echo MAX_API_VERSION=3; echo EXTENSIONS=batch ;;
scan)
  echo "ENTITY: line:$LINE_ENTITY"
  if [ "$LINE_ENTITY" = fd3 ]; then echo "ENTITY: line:other"; fi ;;
apply) head -c "$SIZE" /dev/zero | tr '\0' x >&2 ;;
apply-batch)
  cat > /dev/null
  { printf '{"entity":"line:fd3","output":[["out","'
    head -c "$SIZE" /dev/zero | tr '\0' x | base64 -w0
    printf '"]],"fd3":[],"exit":0}\n'
    printf '{"entity":"line:other","output":[],"fd3":[],"exit":0}\n'; } >&3 ;;
*) exit 1 ;;
esac
"#;

pub fn run(old: Option<&Path>, sizes_mb: &[usize]) -> Result<(), String> {
    let bin = util::release_binaries(&["holo", "holo-exec"])?;
    let mut builds = vec![("this build", bin.as_path())];
    if let Some(old) = old {
        builds.push(("old build", old));
    }
    println!("one line of N MB; the command alone is the floor");
    for &mb in sizes_mb {
        let size = mb << 20;
        println!(
            "{:<44} N={mb:<4} {}",
            "command alone (head | tr > /dev/null)",
            show(floor(size)?)
        );
        for (name, dir) in &builds {
            println!(
                "{:<44} N={mb:<4} {}",
                format!("exec logoutput, holo-exec ({name})"),
                show(exec(dir, size)?)
            );
            println!(
                "{:<44} N={mb:<4} {}",
                format!("plugin stderr, holo ({name})"),
                show(driver(dir, size, "stderr")?)
            );
            println!(
                "{:<44} N={mb:<4} {}",
                format!("FD 3 batch record, holo ({name})"),
                show(driver(dir, size, "fd3")?)
            );
        }
    }
    Ok(())
}

fn show(result: Option<Duration>) -> String {
    match result {
        Some(took) => format!("{:>9.2} s", took.as_secs_f64()),
        None => format!("> {} s (stopped)", LIMIT.as_secs()),
    }
}

/// Runs `command` with its output to /dev/null; `None` when it was stopped
/// at [`LIMIT`].
fn timed(command: &mut Command) -> Result<Option<Duration>, String> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let started = Instant::now();
    let mut child = command.spawn().map_err(|e| e.to_string())?;
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            if !status.success() {
                return Err(format!("{command:?} failed with {status}"));
            }
            return Ok(Some(started.elapsed()));
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn floor(size: usize) -> Result<Option<Duration>, String> {
    timed(
        Command::new("/bin/sh")
            .arg("-c")
            .arg(format!("head -c {size} /dev/zero | tr '\\0' x")),
    )
}

/// `holo-exec apply exec:line` with `logoutput`.
fn exec(bin: &Path, size: usize) -> Result<Option<Duration>, String> {
    let root = tempfile::tempdir().map_err(|e| e.to_string())?;
    let resources = root.path().join("usr/share/holo/exec");
    std::fs::create_dir_all(&resources).map_err(|e| e.to_string())?;
    std::fs::write(
        resources.join("line.toml"),
        format!(
            "[[exec]]\nname = \"line\"\nprovider = \"shell\"\ncommand = \"head -c {size} /dev/zero | tr '\\\\0' x\"\nlogoutput = true\n"
        ),
    )
    .map_err(|e| e.to_string())?;
    timed(
        Command::new(bin.join("holo-exec"))
            .args(["apply", "exec:line"])
            .env("HOLO_ROOT_DIR", root.path())
            .env("HOLO_RESOURCE_DIR", &resources)
            .env("HOLO_CACHE_DIR", root.path().join("cache"))
            .env("HOLO_STATE_DIR", root.path().join("state")),
    )
}

/// `holo apply` of the shell plugin above: the line on stderr (per-entity
/// call) or in one FD 3 record (batch).
fn driver(bin: &Path, size: usize, entity: &str) -> Result<Option<Duration>, String> {
    let root = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path = root.path();
    for dir in ["etc", "run", "tmp", "usr/lib/holo", "usr/share/holo/line"] {
        std::fs::create_dir_all(path.join(dir)).map_err(|e| e.to_string())?;
    }
    std::fs::write(path.join("etc/holorc"), "plugin line\n").map_err(|e| e.to_string())?;
    let plugin = path.join("usr/lib/holo/holo-line");
    std::fs::write(&plugin, PLUGIN).map_err(|e| e.to_string())?;
    std::fs::set_permissions(&plugin, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .map_err(|e| e.to_string())?;
    let mut command = Command::new(bin.join("holo"));
    command
        .arg("apply")
        .env("HOLO_ROOT_DIR", path)
        .env("TMPDIR", path.join("tmp"))
        .env("SIZE", size.to_string())
        .env("LINE_ENTITY", entity);
    if entity == "fd3" {
        command.env_remove("HOLO_NO_BATCH");
    } else {
        command.env("HOLO_NO_BATCH", "1");
    }
    timed(&mut command)
}
