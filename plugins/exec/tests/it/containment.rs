//! Test mode stays inside the root: holo-exec looks for `creates` as if
//! `HOLO_ROOT_DIR` were `/`, so a marker reached through a symlink in the
//! root (absolute, or relative and climbing with `..`) is the one inside
//! the root, never a file of the same name on the host.

use test_support::escapes;

use std::fs;
use std::path::Path;

use escapes::{Escapes, write};

fn run(escapes: &Escapes, args: &[&str]) -> std::process::Output {
    escapes
        .plugin(Path::new(env!("CARGO_BIN_EXE_holo-exec")), "exec")
        .args(args)
        .output()
}

/// Runs `scan`, then `apply exec:NAME` for each name; returns the log of
/// the commands that ran (test mode runs them in the root).
fn apply_all(escapes: &Escapes, names: &[&str]) -> String {
    let scan = run(escapes, &["scan"]);
    assert!(
        scan.status.success(),
        "scan: {}",
        String::from_utf8_lossy(&scan.stderr)
    );
    for name in names {
        let apply = run(escapes, &["apply", &format!("exec:{name}")]);
        assert!(
            apply.status.success(),
            "apply {name}: {}",
            String::from_utf8_lossy(&apply.stderr)
        );
    }
    fs::read_to_string(escapes.path("ran.log")).unwrap_or_default()
}

#[test]
fn creates_behind_symlinks_is_looked_for_inside_the_root() {
    let escapes = Escapes::new();
    fs::create_dir_all(escapes.path("tmp/holo.1")).expect("cache");
    // etc/outdir -> /…/elsewhere: inside the root that is ROOT/…/elsewhere.
    escapes.link_elsewhere("etc/outdir");
    // etc/up -> ../../..: inside the root that climbs to ROOT itself.
    escapes.link("etc/up", Path::new("../../.."));
    // The markers exist on the host only: followed there, both commands
    // would be skipped.
    write(&escapes.elsewhere().join("marker"), "host\n");
    write(&escapes.dir.path().join("a/b/marker"), "host\n");
    write(
        &escapes.path("usr/share/holo/exec/markers.toml"),
        r#"
[[exec]]
name = "absolute"
command = "sh -c 'echo absolute >> ran.log'"
creates = "/etc/outdir/marker"

[[exec]]
name = "relative"
command = "sh -c 'echo relative >> ran.log'"
creates = "/etc/up/marker"
"#,
    );
    let names = ["absolute", "relative"];
    let before = escapes.outside_the_root();
    assert_eq!(apply_all(&escapes, &names), "absolute\nrelative\n");

    // With the markers inside the root, both are skipped.
    write(&escapes.elsewhere_in_root().join("marker"), "root\n");
    write(&escapes.path("marker"), "root\n");
    assert_eq!(apply_all(&escapes, &names), "absolute\nrelative\n");
    assert_eq!(escapes.outside_the_root(), before);
}
