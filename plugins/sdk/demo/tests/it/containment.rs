//! Test mode stays inside the root for what the SDK writes: state records
//! and atomic writes (through holo-demo) are reached through symlinks in
//! `HOLO_ROOT_DIR`, an absolute one and a relative one climbing with `..`,
//! and land inside the root, never where the links point on the host.

use test_support::escapes;

use std::fs;
use std::path::Path;

use escapes::{Escapes, write};

#[test]
fn state_records_and_atomic_writes_stay_inside_the_root() {
    let escapes = Escapes::new();
    // var/lib/holo-demo -> /…/elsewhere, inside the root ROOT/…/elsewhere.
    escapes.link_elsewhere("var/lib/holo-demo");
    fs::create_dir_all(escapes.elsewhere_in_root()).expect("mkdir");
    // var/lib/holo -> ../../..: inside the root that climbs to ROOT itself.
    escapes.link("var/lib/holo", Path::new("../../.."));
    let resources = escapes.path("usr/share/holo/demo");
    write(
        &resources.join("demo.toml"),
        "[[demo]]\nname = \"motd\"\nvalue = \"inside\\n\"\n",
    );
    let before = escapes.outside_the_root();

    let run = |operation: &[&str]| {
        let output = escapes
            .plugin(assert_cmd::cargo::cargo_bin!("holo-demo"), "demo")
            .args(operation)
            .resource_dir(&resources)
            .output();
        assert!(
            output.status.success(),
            "{operation:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    run(&["scan"]);
    run(&["apply", "demo:motd"]);

    assert_eq!(
        escapes.outside_the_root(),
        before,
        "nothing outside HOLO_ROOT_DIR changed"
    );
    assert_eq!(
        fs::read_to_string(escapes.elsewhere_in_root().join("motd")).expect("written"),
        "inside\n"
    );
    assert!(
        escapes.path("demo/demo:motd.toml").is_file(),
        "the state record went through var/lib/holo -> ROOT"
    );
}
