//! The dependency benchmark: 10,000 holo-file entities as
//! 1,000 directories and 9,000 files that each require their directory,
//! against 10,000 independent files, both as a no-op `holo apply` in the
//! same run. Batches carry the references (batch-order), so dependencies
//! should not cost a process per entity: the target is at most 1.5 times
//! the flat case.

use std::path::Path;
use std::time::Duration;

use crate::file::write_bench_user;
use crate::util::{release_binaries, report, root_with_plugins, time_holo};

/// Files per directory in the dependent tree (1 directory + 9 files).
const FILES_PER_DIRECTORY: usize = 9;

/// No-op applies timed per case, alternating between the cases so that a
/// busy machine slows both alike; the fastest counts.
const ROUNDS: usize = 5;

pub fn run(sizes: &[usize]) -> Result<(), String> {
    let bin = release_binaries(&["holo", "holo-file"])?;
    println!("# holo-file with dependencies (release build, no-op holo apply, best of {ROUNDS})");
    for &n in sizes {
        let flat = prepared_root(&bin, n, write_flat)?;
        let dependent = prepared_root(&bin, n, write_dependent)?;
        let (mut flat_best, mut dependent_best) = (Duration::MAX, Duration::MAX);
        for _ in 0..ROUNDS {
            flat_best = flat_best.min(time_holo(&bin, flat.path(), &["apply"], &[], &[0])?);
            dependent_best =
                dependent_best.min(time_holo(&bin, dependent.path(), &["apply"], &[], &[0])?);
        }
        report("flat: N independent files", n, flat_best);
        report(
            "dependent: N/10 dirs, files require them",
            n,
            dependent_best,
        );
        println!(
            "{:<44} n={n:<6} dependent / flat = {:.2} (target <= 1.50)",
            "ratio",
            dependent_best.as_secs_f64() / flat_best.as_secs_f64()
        );
    }
    Ok(())
}

/// A fresh root with the fixture, applied once.
fn prepared_root(
    bin: &Path,
    n: usize,
    write: fn(&Path, usize) -> Result<(), String>,
) -> Result<tempfile::TempDir, String> {
    let root = root_with_plugins(bin, &["file"])?;
    write_bench_user(root.path())?;
    write(root.path(), n)?;
    time_holo(bin, root.path(), &["apply"], &[], &[0])?;
    Ok(root)
}

fn file_table(toml: &mut String, name: &str, body: &str) {
    toml.push_str(&format!(
        "[[file]]\nname = \"{name}\"\n{body}owner = \"bench\"\ngroup = \"bench\"\n\n"
    ));
}

fn write_flat(root: &Path, n: usize) -> Result<(), String> {
    let mut toml = String::with_capacity(n * 120);
    for i in 0..n {
        let body = format!("content = \"value = {i}\\n\"\nmode = \"0644\"\n");
        file_table(&mut toml, &format!("/srv/bench/f{i:06}.conf"), &body);
    }
    std::fs::write(root.join("usr/share/holo/file/bench.toml"), toml).map_err(|e| e.to_string())
}

fn write_dependent(root: &Path, n: usize) -> Result<(), String> {
    let mut toml = String::with_capacity(n * 160);
    for d in 0..n.div_ceil(FILES_PER_DIRECTORY + 1) {
        let dir = format!("/srv/bench/d{d:05}");
        file_table(&mut toml, &dir, "ensure = \"directory\"\nmode = \"0755\"\n");
        for f in 0..FILES_PER_DIRECTORY {
            let body = format!(
                "content = \"value = {d}.{f}\\n\"\nmode = \"0644\"\nrequire = \"file:{dir}\"\n"
            );
            file_table(&mut toml, &format!("{dir}/f{f}.conf"), &body);
        }
    }
    std::fs::write(root.join("usr/share/holo/file/bench.toml"), toml).map_err(|e| e.to_string())
}
