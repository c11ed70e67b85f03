//! Shared helpers: building and finding the release binaries, timing, and
//! preparing a root for the driver.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Builds the release binaries of `packages` and returns their directory.
pub fn release_binaries(packages: &[&str]) -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let mut command = Command::new(cargo);
    command.args(["build", "--release", "--bins", "--quiet"]);
    for package in packages {
        command.args(["-p", package]);
    }
    let status = command
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err("cargo build --release failed".to_string());
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    exe.parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| "cannot find the release directory".to_string())
}

/// A test-mode root with the given plugins linked from `bin`.
pub fn root_with_plugins(bin: &Path, plugins: &[&str]) -> Result<tempfile::TempDir, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let root = dir.path();
    for sub in ["etc", "run", "tmp", "usr/lib/holo"] {
        std::fs::create_dir_all(root.join(sub)).map_err(|e| e.to_string())?;
    }
    let mut holorc = String::new();
    for plugin in plugins {
        holorc.push_str(&format!("plugin {plugin}\n"));
        std::fs::create_dir_all(root.join("usr/share/holo").join(plugin))
            .map_err(|e| e.to_string())?;
        std::os::unix::fs::symlink(
            bin.join(format!("holo-{plugin}")),
            root.join("usr/lib/holo").join(format!("holo-{plugin}")),
        )
        .map_err(|e| e.to_string())?;
    }
    std::fs::write(root.join("etc/holorc"), holorc).map_err(|e| e.to_string())?;
    Ok(dir)
}

/// Runs `holo ARGS` against `root` and returns the wall time. Fails when
/// holo exits with a code outside `ok_codes`.
pub fn time_holo(
    bin: &Path,
    root: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    ok_codes: &[i32],
) -> Result<Duration, String> {
    let mut command = Command::new(bin.join("holo"));
    command
        .args(args)
        .env("HOLO_ROOT_DIR", root)
        .env("TMPDIR", root.join("tmp"))
        .env_remove("HOLO_NO_BATCH");
    for (k, v) in env {
        command.env(k, v);
    }
    let start = Instant::now();
    let output = command.output().map_err(|e| e.to_string())?;
    let elapsed = start.elapsed();
    let code = output.status.code().unwrap_or(-1);
    if !ok_codes.contains(&code) {
        return Err(format!(
            "holo {} exited with {code}:\n{}{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(elapsed)
}

/// Prints one result line: total and per-entity cost.
pub fn report(what: &str, n: usize, elapsed: Duration) {
    let per = elapsed.as_secs_f64() * 1e6 / n as f64;
    println!(
        "{what:<44} n={n:<6} total {:>9.1} ms   per entity {per:>8.1} µs",
        elapsed.as_secs_f64() * 1e3
    );
}

/// The steps every plugin benchmark times, in order: scan, the first apply,
/// a no-op apply with batching and one without. Returns the last time.
pub fn scan_and_applies(bin: &Path, root: &Path, n: usize) -> Result<Duration, String> {
    report("holo scan", n, time_holo(bin, root, &["scan"], &[], &[0])?);
    let first = time_holo(bin, root, &["apply"], &[], &[0])?;
    report("holo apply (first, batch)", n, first);
    let noop = time_holo(bin, root, &["apply"], &[], &[0])?;
    report("holo apply (no-op, batch)", n, noop);
    let no_batch = time_holo(bin, root, &["apply"], &[("HOLO_NO_BATCH", "1")], &[0])?;
    report("holo apply (no-op, HOLO_NO_BATCH=1)", n, no_batch);
    Ok(no_batch)
}
