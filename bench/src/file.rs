//! The holo-file benchmark: N generated `[[file]]` resources, timed
//! through `holo` for scan, the first apply, a no-op apply (batch and one
//! process per entity) and diff. Entry point: [`run`].

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::util::{release_binaries, report, root_with_plugins, scan_and_applies, time_holo};

/// Runs the benchmark for each size in `sizes`, printing one line per step.
pub fn run(sizes: &[usize]) -> Result<(), String> {
    let bin = release_binaries(&["holo", "holo-file"])?;
    println!("# holo-file benchmark (release build, N files with inline content)");
    for &n in sizes {
        let root = root_with_plugins(&bin, &["file"])?;
        write_fixture(root.path(), n)?;
        let root = root.path();
        scan_and_applies(&bin, root, n)?;
        report(
            "holo diff (no changes)",
            n,
            time_holo(&bin, root, &["diff"], &[], &[0])?,
        );
    }
    Ok(())
}

/// Writes `etc/passwd`, `etc/group` (a user for whoever runs the benchmark,
/// so that chown works without root) and one TOML file with `n` resources.
pub(crate) fn write_fixture(root: &Path, n: usize) -> Result<(), String> {
    write_bench_user(root)?;
    let mut toml = String::with_capacity(n * 110);
    for i in 0..n {
        toml.push_str(&format!(
            "[[file]]\nname = \"/srv/bench/f{i:06}.conf\"\ncontent = \"value = {i}\\n\"\nowner = \"bench\"\ngroup = \"bench\"\nmode = \"0644\"\n\n"
        ));
    }
    std::fs::write(root.join("usr/share/holo/file/bench.toml"), toml).map_err(|e| e.to_string())
}

/// The user and group `bench` (whoever runs the benchmark) in `etc/passwd`
/// and `etc/group`, and the directory `/srv/bench`.
pub(crate) fn write_bench_user(root: &Path) -> Result<(), String> {
    let probe = root.join("etc/passwd");
    std::fs::write(&probe, "").map_err(|e| e.to_string())?;
    let meta = std::fs::metadata(&probe).map_err(|e| e.to_string())?;
    let (uid, gid) = (meta.uid(), meta.gid());
    std::fs::write(&probe, format!("bench:x:{uid}:{gid}::/:/bin/sh\n"))
        .map_err(|e| e.to_string())?;
    std::fs::write(root.join("etc/group"), format!("bench:x:{gid}:\n"))
        .map_err(|e| e.to_string())?;
    std::fs::create_dir_all(root.join("srv/bench")).map_err(|e| e.to_string())
}
