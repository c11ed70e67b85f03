//! A test-mode root (`HOLO_ROOT_DIR`) that runs plugins from this
//! workspace's debug build, for tests of the admin's tools (completions,
//! fleet recipes) that need real entities.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The directory of the debug binaries, after building `holo-ID` for `ids`.
pub fn binaries(ids: &[&str]) -> PathBuf {
    let cargo = option_env!("CARGO").unwrap_or("cargo");
    let mut build = Command::new(cargo);
    build.args(["build", "--quiet"]);
    for id in ids {
        build.args(["-p", &format!("holo-{id}")]);
    }
    let status = build
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("cargo runs");
    assert!(
        status.success(),
        "cargo build of the plugins {ids:?} failed"
    );
    Path::new(env!("CARGO_BIN_EXE_holo"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A root with the holorc snippet from holorc.d/ and the binary of each
/// plugin in `ids`, root's passwd and group, and empty resource directories.
pub fn make(ids: &[&str]) -> tempfile::TempDir {
    let bin = binaries(ids);
    let root = tempfile::tempdir().unwrap();
    let path = root.path();
    for dir in ["etc/holorc.d", "usr/lib/holo", "run", "tmp"] {
        std::fs::create_dir_all(path.join(dir)).unwrap();
    }
    std::fs::write(path.join("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n").unwrap();
    std::fs::write(path.join("etc/group"), "root:x:0:\n").unwrap();
    let snippets = Path::new(env!("CARGO_MANIFEST_DIR")).join("holorc.d");
    for id in ids {
        let snippet = std::fs::read_dir(&snippets)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .find(|name| name.split_once('-').is_some_and(|(_, rest)| rest == *id))
            .unwrap_or_else(|| panic!("holorc.d has no snippet for {id}"));
        std::fs::copy(
            snippets.join(&snippet),
            path.join("etc/holorc.d").join(&snippet),
        )
        .unwrap();
        std::os::unix::fs::symlink(
            bin.join(format!("holo-{id}")),
            path.join(format!("usr/lib/holo/holo-{id}")),
        )
        .unwrap();
        std::fs::create_dir_all(path.join(format!("usr/share/holo/{id}"))).unwrap();
    }
    root
}
