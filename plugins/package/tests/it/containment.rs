//! Test mode stays inside the root: the mock package database and the
//! state records are reached through symlinks in `HOLO_ROOT_DIR` (an
//! absolute one and a relative one climbing with `..`), and every write
//! lands inside the root, never where the links point on the host.

use test_support::escapes;

use std::fs;
use std::path::Path;

use escapes::{Escapes, write};

#[test]
fn the_mock_database_and_state_stay_inside_the_root() {
    let escapes = Escapes::new();
    // The host side of the link holds a database the plugin must not touch.
    write(
        &escapes.elsewhere().join("packages.toml"),
        "[[available]]\nname = \"tool\"\nversions = [\"9.9-9\"]\n",
    );
    // var/lib/holo-mock -> /…/elsewhere, which inside the root is ROOT/…/elsewhere.
    escapes.link_elsewhere("var/lib/holo-mock");
    write(
        &escapes.elsewhere_in_root().join("packages.toml"),
        "[[available]]\nname = \"tool\"\nversions = [\"1.0-1\"]\n",
    );
    // var/lib/holo -> ../../..: inside the root that climbs to ROOT itself.
    escapes.link("var/lib/holo", Path::new("../../.."));
    write(
        &escapes.path("usr/share/holo/package/one.toml"),
        "[[package]]\nname = \"tool\"\nprovider = \"apt\"\n",
    );
    fs::create_dir_all(escapes.path("var/lib/apt/lists")).expect("lists dir");
    let before = escapes.outside_the_root();

    let run = |operation: &[&str]| {
        let output = escapes
            .plugin(assert_cmd::cargo::cargo_bin!("holo-package"), "package")
            .args(operation)
            .output();
        assert!(
            output.status.success(),
            "{operation:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    run(&["scan"]);
    let applied = run(&["apply", "package:tool"]);
    assert!(applied.contains("MOCK: apt-get"), "{applied}");

    assert_eq!(
        escapes.outside_the_root(),
        before,
        "nothing outside HOLO_ROOT_DIR changed"
    );
    let database =
        fs::read_to_string(escapes.elsewhere_in_root().join("packages.toml")).expect("database");
    assert!(
        database.contains("[[installed]]") && database.contains("1.0-1"),
        "{database}"
    );
    assert!(
        escapes.path("package/package:tool.toml").is_file(),
        "the state record went through var/lib/holo -> ROOT"
    );
}
