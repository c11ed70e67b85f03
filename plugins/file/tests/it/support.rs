//! What the modules share: running holo-file as a driver would.

use std::path::Path;
use test_support::plugin_run::PluginRun;

/// Runs `holo-file ARGS` against `root` with the variables a driver gives
/// (one cache directory, as within one run); it must succeed.
pub fn run(root: &Path, args: &[&str]) -> std::process::Output {
    let output = PluginRun::new(assert_cmd::cargo::cargo_bin!("holo-file"), "file", root)
        .args(args)
        .cache_dir(root.join("tmp/holo.1"))
        .output();
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}
