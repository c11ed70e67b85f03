//! The regression benchmark: the no-op `holo apply` of N
//! holo-file entities with this build and with an older build of `holo`
//! and `holo-file` (a directory with both binaries, for example the
//! `target/release` of a checkout of the commit before), alternately in the
//! same run so that a busy machine slows both alike. The target: this
//! build stays within 10% of the older one.

use std::path::Path;
use std::time::Duration;

use crate::file::write_fixture;
use crate::util::{release_binaries, report, root_with_plugins, time_holo};

/// No-op applies timed per build, alternating; the fastest counts, and the
/// median is shown beside it.
const ROUNDS: usize = 7;

pub fn run(old: &Path, sizes: &[usize]) -> Result<(), String> {
    for binary in ["holo", "holo-file"] {
        if !old.join(binary).is_file() {
            return Err(format!(
                "{} does not exist; give the directory that holds the older build's holo and holo-file (its target/release)",
                old.join(binary).display()
            ));
        }
    }
    let new = release_binaries(&["holo", "holo-file"])?;
    println!(
        "# holo-file no-op apply, this build against {} (release builds, batch, {ROUNDS} rounds each, alternating)",
        old.display()
    );
    for &n in sizes {
        // Both roots get their first apply from this build: builds before
        // the descriptor fix leaked a descriptor per written file in a batch, so
        // they cannot make the first apply of 10,000 files. The records are
        // the same for both builds, and the no-op apply writes nothing.
        let old_root = prepared_root(old, &new, n)?;
        let new_root = prepared_root(&new, &new, n)?;
        let (mut old_times, mut new_times) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            old_times.push(time_holo(old, old_root.path(), &["apply"], &[], &[0])?);
            new_times.push(time_holo(&new, new_root.path(), &["apply"], &[], &[0])?);
        }
        old_times.sort();
        new_times.sort();
        let (old_best, new_best) = (old_times[0], new_times[0]);
        report("older build: no-op apply (best)", n, old_best);
        report("this build: no-op apply (best)", n, new_best);
        report("older build: no-op apply (median)", n, median(&old_times));
        report("this build: no-op apply (median)", n, median(&new_times));
        println!(
            "{:<44} n={n:<6} this / older = {:.3} best, {:.3} median (target <= 1.10)",
            "ratio",
            new_best.as_secs_f64() / old_best.as_secs_f64(),
            median(&new_times).as_secs_f64() / median(&old_times).as_secs_f64()
        );
    }
    Ok(())
}

fn median(sorted: &[Duration]) -> Duration {
    sorted[sorted.len() / 2]
}

/// A fresh root with the holo-file fixture of the `file` benchmark, linked
/// to the plugin in `bin`, applied once with this build (`new`).
fn prepared_root(bin: &Path, new: &Path, n: usize) -> Result<tempfile::TempDir, String> {
    let root = root_with_plugins(bin, &["file"])?;
    write_fixture(root.path(), n)?;
    let plugin = root.path().join("usr/lib/holo/holo-file");
    let relink = |to: &Path| {
        std::fs::remove_file(&plugin)
            .and_then(|()| std::os::unix::fs::symlink(to.join("holo-file"), &plugin))
            .map_err(|e| e.to_string())
    };
    relink(new)?;
    time_holo(new, root.path(), &["apply"], &[], &[0])?;
    relink(bin)?;
    Ok(root)
}
