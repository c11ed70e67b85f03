//! Test mode stays inside the root: an exec's `cwd` reached through a
//! symlink in the root (absolute, or relative and climbing with `..`) is
//! resolved as if `HOLO_ROOT_DIR` were `/`, so the command runs in the
//! directory inside the root, never in the host directory the link names.

use test_support::escapes;

use std::fs;
use std::path::Path;

use crate::support::run;

use escapes::{Escapes, write};

#[test]
fn cwd_through_symlinks_resolves_inside_the_root() {
    let escapes = Escapes::new();
    fs::create_dir_all(escapes.path("tmp/holo.1")).expect("cache");
    // etc/outdir -> /…/elsewhere: inside the root that is ROOT/…/elsewhere.
    escapes.link_elsewhere("etc/outdir");
    fs::create_dir_all(escapes.elsewhere()).expect("host dir");
    fs::create_dir_all(escapes.elsewhere_in_root()).expect("root dir");
    // etc/up -> ../../..: inside the root that climbs to ROOT itself.
    escapes.link("etc/up", Path::new("../../.."));
    write(
        &escapes.path("usr/share/holo/exec/cwd.toml"),
        r#"
[[exec]]
name = "absolute"
command = "sh -c 'echo absolute > written-here'"
cwd = "/etc/outdir"

[[exec]]
name = "relative"
command = "sh -c 'echo relative > written-here'"
cwd = "/etc/up"
"#,
    );
    let before = escapes.outside_the_root();
    let scan = run(&escapes, &["scan"]);
    assert!(
        scan.status.success(),
        "{}",
        String::from_utf8_lossy(&scan.stderr)
    );
    for name in ["absolute", "relative"] {
        let apply = run(&escapes, &["apply", &format!("exec:{name}")]);
        assert!(
            apply.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&apply.stderr)
        );
    }
    assert_eq!(
        escapes.outside_the_root(),
        before,
        "nothing written outside the root"
    );
    assert_eq!(
        fs::read_to_string(escapes.elsewhere_in_root().join("written-here")).expect("in root"),
        "absolute\n"
    );
    assert_eq!(
        fs::read_to_string(escapes.path("written-here")).expect("in root"),
        "relative\n"
    );

    // A link whose counterpart in the root does not exist is an error,
    // never the host directory.
    fs::remove_dir_all(escapes.elsewhere_in_root()).expect("rm");
    let apply = run(&escapes, &["apply", "exec:absolute"]);
    let stderr = String::from_utf8_lossy(&apply.stderr);
    assert!(!apply.status.success());
    assert!(stderr.contains("working directory /etc/outdir"), "{stderr}");
    assert_eq!(escapes.outside_the_root(), before);
}
