//! `holo-run-scripts scan` and `apply` on a root of their own: each
//! executable of the repository is an entity, and apply runs it with its
//! output passed through. (Holo 3's own case runs through
//! `tests/it/holo3_suite.rs`.)

use std::fs;
use std::os::unix::fs::PermissionsExt;

use test_support::plugin_run::PluginRun;

fn root_with_script(body: &str) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    for dir in [
        "usr/share/holo/run-scripts",
        "var/lib/holo/run-scripts",
        "tmp/cache",
    ] {
        fs::create_dir_all(root.path().join(dir)).unwrap();
    }
    let script = root.path().join("usr/share/holo/run-scripts/10-hello.sh");
    fs::write(&script, body).unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    root
}

fn run(root: &tempfile::TempDir, args: &[&str]) -> std::process::Output {
    PluginRun::new(
        env!("CARGO_BIN_EXE_holo-run-scripts"),
        "run-scripts",
        root.path(),
    )
    .args(args)
    .output()
}

#[test]
fn scan_reports_each_script_as_an_entity_to_execute() {
    let root = root_with_script("#!/bin/sh\necho hello\n");
    let scan = run(&root, &["scan"]);
    assert!(scan.status.success(), "{scan:?}");
    let script = root.path().join("usr/share/holo/run-scripts/10-hello.sh");
    assert_eq!(
        String::from_utf8_lossy(&scan.stdout),
        format!(
            "ENTITY: script:10-hello.sh\nSOURCE: {0}\nACTION: Executing\nfound at: {0}\n",
            script.display()
        )
    );
}

#[test]
fn apply_runs_the_script_and_passes_its_output_and_failure_on() {
    let root = root_with_script("#!/bin/sh\necho hello\nexit 3\n");
    let apply = run(&root, &["apply", "script:10-hello.sh"]);
    assert_eq!(String::from_utf8_lossy(&apply.stdout), "hello\n");
    assert!(
        !apply.status.success(),
        "a failing script fails the entity: {apply:?}"
    );
}
