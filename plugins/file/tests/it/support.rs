//! What the modules share: running holo-file as a driver would.

use std::path::Path;

/// Runs `holo-file ARGS` against `root` with the variables a driver gives
/// (one cache directory, as within one run); it must succeed.
pub fn run(root: &Path, args: &[&str]) -> std::process::Output {
    let output = assert_cmd::Command::new(assert_cmd::cargo::cargo_bin!("holo-file"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOLO_ROOT_DIR", root)
        .env("HOLO_RESOURCE_DIR", root.join("usr/share/holo/file"))
        .env("HOLO_STATE_DIR", root.join("var/lib/holo/file"))
        .env("HOLO_CACHE_DIR", root.join("tmp/holo.1"))
        .output()
        .expect("run holo-file");
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}
