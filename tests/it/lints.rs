//! Nothing panics, mechanically: the workspace denies `unwrap` and warns on
//! `expect` outside tests, and every crate takes the workspace's lints.

use std::path::Path;

use crate::workspace::{self, repo};

#[test]
fn the_workspace_denies_unwrap_and_every_crate_takes_its_lints() {
    let root = std::fs::read_to_string(repo().join("Cargo.toml")).expect("read Cargo.toml");
    let lints = root
        .split("[workspace.lints.clippy]\n")
        .nth(1)
        .expect("Cargo.toml has [workspace.lints.clippy]");
    let set = |line: &str| {
        lints
            .lines()
            .take_while(|l| !l.starts_with('['))
            .any(|l| l == line)
    };
    assert!(set("unwrap_used = \"deny\""), "{lints}");
    assert!(set("expect_used = \"warn\""), "{lints}");
    let clippy = std::fs::read_to_string(repo().join("clippy.toml")).expect("read clippy.toml");
    assert!(clippy.contains("allow-unwrap-in-tests = true"), "{clippy}");
    assert!(clippy.contains("allow-expect-in-tests = true"), "{clippy}");

    let metadata = workspace::metadata();
    let mut checked = 0;
    for package in metadata["packages"].as_array().expect("packages") {
        let manifest = Path::new(package["manifest_path"].as_str().expect("manifest_path"));
        let relative = manifest
            .strip_prefix(repo())
            .expect("a member of this workspace");
        let text = std::fs::read_to_string(manifest).expect("read the manifest");
        assert!(
            text.contains("\n[lints]\nworkspace = true\n"),
            "{}: add `[lints]` with `workspace = true`",
            relative.display()
        );
        checked += 1;
    }
    assert!(checked >= 16, "{checked} crates checked");
}
