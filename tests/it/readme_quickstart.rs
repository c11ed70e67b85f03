//! The README's Quickstart block is runnable as written on a fresh checkout:
//! every command starts with a file of the repository, `cargo`, or a binary
//! of the workspace called by its path below `target/debug/` (nothing is
//! installed on `PATH`), and the text tells a newcomer that the `--noop`
//! dry run exits 2 by design and how long the first build takes.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

fn repository() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The Quickstart section of the README, up to the next heading.
fn quickstart() -> String {
    let readme = fs::read_to_string(repository().join("README.md")).expect("README.md is readable");
    let start = readme
        .find("## Quickstart")
        .expect("README.md has a Quickstart section");
    let rest = &readme[start + 2..];
    let end = rest.find("\n## ").unwrap_or(rest.len());
    rest[..end].to_string()
}

/// Every `name = "..."` of a `[[bin]]` table in the workspace's manifests.
fn workspace_binaries() -> BTreeSet<String> {
    let mut manifests = vec![repository().join("Cargo.toml")];
    for entry in fs::read_dir(repository().join("plugins"))
        .expect("plugins/ is readable")
        .flatten()
    {
        manifests.push(entry.path().join("Cargo.toml"));
    }
    let mut names = BTreeSet::new();
    for manifest in manifests {
        let Ok(text) = fs::read_to_string(&manifest) else {
            continue;
        };
        let mut in_bin = false;
        for line in text.lines() {
            let line = line.trim();
            if line.starts_with('[') {
                in_bin = line == "[[bin]]";
            } else if let Some(value) = line.strip_prefix("name = ").filter(|_| in_bin) {
                names.insert(value.trim_matches('"').to_string());
            }
        }
    }
    names
}

#[test]
fn every_quickstart_command_names_a_program_a_fresh_checkout_has() {
    let text = quickstart();
    let block = text
        .split("```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the Quickstart has a ```sh block");
    let binaries = workspace_binaries();
    assert!(binaries.contains("holos"), "{binaries:?}");
    let mut commands = 0;
    for line in block.lines() {
        let command = line.split('#').next().unwrap_or_default().trim();
        let Some(program) = command.split_whitespace().next() else {
            continue;
        };
        commands += 1;
        let runnable = program == "cargo"
            || program
                .strip_prefix("target/debug/")
                .is_some_and(|name| binaries.contains(name))
            || repository().join(program).is_file();
        assert!(
            runnable,
            "the Quickstart command `{command}` starts with `{program}`, which a fresh \
             checkout does not have (binaries are in target/debug/)"
        );
    }
    assert!(commands >= 3, "{block}");
    assert!(
        block.contains("target/debug/holos -f share/examples/compose/two-vms/holos.yaml config"),
        "{block}"
    );
}

#[test]
fn the_quickstart_says_noop_exits_2_and_how_long_the_first_build_takes() {
    let text = quickstart()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        text.contains("exits with status 2 by design"),
        "the Quickstart must say that apply --noop exits 2 when something would change:\n{text}"
    );
    assert!(
        text.contains("first build of the workspace takes about two minutes on two cores"),
        "the Quickstart must say how long the first build takes:\n{text}"
    );
}
