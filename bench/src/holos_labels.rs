//! `holos validate` on one service with N labels, in one file and with an
//! override file that sets the same N labels again (Compose's merge). Its
//! time must grow linearly with N. A run that takes longer than the limit
//! is stopped and reported as such.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{release_binaries, report};

/// How long one validate may take before it counts as not finishing.
const LIMIT: Duration = Duration::from_secs(120);

pub fn run(sizes: &[usize]) -> Result<(), String> {
    let bin = release_binaries(&["holo-vms"])?;
    let holos = bin.join("holos");
    println!("# holos validate of one service with N labels (release build, limit {LIMIT:?})");
    for &n in sizes {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        std::fs::write(dir.path().join("holos.yaml"), compose(n, "base"))
            .map_err(|e| e.to_string())?;
        measure("holos validate, N labels", &holos, dir.path(), &[], n)?;
        std::fs::write(dir.path().join("override.yaml"), compose(n, "override"))
            .map_err(|e| e.to_string())?;
        measure(
            "holos validate, N labels + override of N",
            &holos,
            dir.path(),
            &["-f", "holos.yaml", "-f", "override.yaml"],
            n,
        )?;
    }
    Ok(())
}

fn compose(n: usize, value: &str) -> String {
    let mut text = String::with_capacity(n * 32);
    text.push_str("name: labels\nservices:\n  web:\n    image: alpine\n    labels:\n");
    for i in 0..n {
        text.push_str(&format!("      label{i}: {value}{i}\n"));
    }
    text
}

fn measure(what: &str, holos: &Path, dir: &Path, files: &[&str], n: usize) -> Result<(), String> {
    let started = Instant::now();
    let mut child = Command::new(holos)
        .args(files)
        .arg("validate")
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", holos.display()))?;
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            if !status.success() {
                let output = child.wait_with_output().map_err(|e| e.to_string())?;
                return Err(format!(
                    "holos validate exited with {status}:\n{}",
                    String::from_utf8_lossy(&output.stderr)
                ));
            }
            report(what, n, started.elapsed());
            return Ok(());
        }
        if started.elapsed() >= LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            println!("{what:<44} n={n:<6} did not finish within {LIMIT:?}");
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
