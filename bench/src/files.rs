//! The holo-files benchmark: a no-op `holo apply` over N repository files
//! (each a plain file over a stock target), after the first apply (whose
//! time is reported too: it writes every base, target and provisioned
//! copy), with our driver and plugin,
//! with Holo 3's driver and our plugin, and with Holo 3's driver and
//! plugin (built from `HOLO3_SOURCE` when Go is installed). Entry point:
//! [`run`].

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::util::{release_binaries, report};

/// Rounds of our no-op apply; the median is reported. Holo 3's driver
/// starts a process per entity and takes a minute per thousand, so its
/// runs get one round.
const ROUNDS: usize = 3;

/// Above this many files Holo 3's driver is left out unless
/// `BENCH_HOLO3_MAX` says more (at 10,000 it takes a quarter of an hour).
const HOLO3_MAX: usize = 2000;

/// Runs the benchmark for each size in `sizes`, printing one line per pair.
pub fn run(sizes: &[usize]) -> Result<(), String> {
    let bin = release_binaries(&["holo", "holo-files"])?;
    let (holo, plugin) = (bin.join("holo"), bin.join("holo-files"));
    let holo3 = holo3()?;
    println!(
        "# holo-files benchmark: no-op holo apply over N repository files (median of {ROUNDS} for ours)"
    );
    if holo3.is_none() {
        println!("# Holo 3 left out: set HOLO3_SOURCE to its checkout and install Go");
    } else {
        println!("# Holo 3's driver: one round, up to BENCH_HOLO3_MAX files (default {HOLO3_MAX})");
    }
    let holo3_max = std::env::var("BENCH_HOLO3_MAX")
        .ok()
        .and_then(|max| max.parse().ok())
        .unwrap_or(HOLO3_MAX);
    for &n in sizes {
        let (first, ours) = no_op_apply(n, &holo, &plugin, ROUNDS)?;
        report("first apply, holo + holo-files (ours)", n, first);
        report("holo + holo-files (ours)", n, ours);
        let Some(go) = holo3.as_ref().filter(|_| n <= holo3_max) else {
            continue;
        };
        let (_, mixed) = no_op_apply(n, go, &plugin, 1)?;
        report("Holo 3's holo + our holo-files", n, mixed);
        let (_, theirs) = no_op_apply(n, go, &go.with_file_name("holo-files"), 1)?;
        report("Holo 3's holo + Holo 3's holo-files", n, theirs);
        println!(
            "{:<44} n={n:<6} {:.0} times faster",
            "ours against Holo 3's pair",
            theirs.as_secs_f64() / ours.as_secs_f64()
        );
    }
    Ok(())
}

/// Holo 3's binary (driver and plugins in one, by name), built offline.
fn holo3() -> Result<Option<PathBuf>, String> {
    let (Some(source), Some(go)) = (std::env::var_os("HOLO3_SOURCE"), test_support::find_go())
    else {
        return Ok(None);
    };
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?.keep();
    let binary = dir.join("holo");
    let cache = std::env::temp_dir().join("holo-bench-go-cache");
    test_support::holo3::build(Path::new(&source), &go, &binary, &cache);
    std::os::unix::fs::symlink("holo", dir.join("holo-files")).map_err(|e| e.to_string())?;
    Ok(Some(binary))
}

/// A root with `n` targets and a repository file for each, applied once;
/// the time of that first apply, and the median of `rounds` no-op applies.
fn no_op_apply(
    n: usize,
    driver: &Path,
    plugin: &Path,
    rounds: usize,
) -> Result<(Duration, Duration), String> {
    let root = tempfile::tempdir().map_err(|e| e.to_string())?;
    write_fixture(root.path(), n, plugin)?;
    let first = time_apply(driver, root.path())?;
    let mut times = Vec::with_capacity(rounds);
    for _ in 0..rounds.max(1) {
        times.push(time_apply(driver, root.path())?);
    }
    times.sort();
    Ok((first, times[times.len() / 2]))
}

fn write_fixture(root: &Path, n: usize, plugin: &Path) -> Result<(), String> {
    let repo = root.join("usr/share/holo/files/10-bench/etc/bench");
    for dir in ["etc/bench", "run", "tmp", "usr/share/holo/generators"] {
        std::fs::create_dir_all(root.join(dir)).map_err(|e| e.to_string())?;
    }
    std::fs::create_dir_all(&repo).map_err(|e| e.to_string())?;
    let write = |path: PathBuf, text: String| std::fs::write(path, text).map_err(|e| e.to_string());
    write(root.join("etc/os-release"), "ID=unittest\n".to_string())?;
    write(
        root.join("etc/holorc"),
        format!("plugin files={}\n", plugin.display()),
    )?;
    for i in 0..n {
        let name = format!("f{i:06}.conf");
        write(root.join("etc/bench").join(&name), format!("stock = {i}\n"))?;
        write(repo.join(&name), format!("value = {i}\n"))?;
    }
    Ok(())
}

fn time_apply(driver: &Path, root: &Path) -> Result<Duration, String> {
    let start = Instant::now();
    let output = Command::new(driver)
        .arg("apply")
        .env("HOLO_ROOT_DIR", root)
        .env("TMPDIR", root.join("tmp"))
        .env_remove("HOLO_NO_BATCH")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", driver.display()))?;
    let elapsed = start.elapsed();
    if !output.status.success() {
        return Err(format!(
            "{} apply failed:\n{}{}",
            driver.display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(elapsed)
}
