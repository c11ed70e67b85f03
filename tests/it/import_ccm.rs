//! `holo import-ccm` on every manifest of CCM's documentation and examples
//! (`tests/ccm-manifests/`): each imports, or is refused with the lines of
//! what holo cannot express and nothing written; an import keeps the
//! manifest's order as a `require` chain, and `holo apply --noop` on it names
//! the imported entities in that order.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const KINDS: [&str; 6] = ["archive", "exec", "file", "package", "scaffold", "service"];

fn manifests() -> Vec<PathBuf> {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ccm-manifests");
    let mut all = Vec::new();
    for dir in [base.clone(), base.join("docs"), base.join("object-store")] {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|ext| ext == "yaml") {
                all.push(path);
            }
        }
    }
    all.sort();
    all
}

/// A root with the six plugins, a Fedora os-release and root's accounts.
fn ccm_root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for sub in ["etc", "run", "tmp", "var/lib/holo-mock"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    let mut holorc = String::new();
    for kind in KINDS {
        std::fs::create_dir_all(root.join("usr/share/holo").join(kind)).unwrap();
        let binary = test_support::binary(&format!("holo-{kind}"));
        holorc.push_str(&format!("plugin {kind}={}\n", binary.display()));
    }
    for (file, text) in [
        ("etc/holorc", holorc.as_str()),
        ("etc/os-release", "ID=fedora\n"),
        ("etc/hostname", "web01\n"),
        ("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n"),
        ("etc/group", "root:x:0:\n"),
    ] {
        std::fs::write(root.join(file), text).unwrap();
    }
    dir
}

fn run(root: &Path, args: &[&str]) -> Output {
    Command::new(test_support::binary("holo"))
        .args(args)
        .env("HOLO_ROOT_DIR", root)
        .env("TMPDIR", root.join("tmp"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The imported resources as `(id, require)`, from the written TOML.
fn imported(root: &Path) -> Vec<(String, Vec<String>)> {
    let mut resources = Vec::new();
    for kind in KINDS {
        let dir = root.join("usr/share/holo").join(kind);
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            // Bundled source files are copied beside the TOML.
            if path.extension().is_none_or(|ext| ext != "toml") {
                continue;
            }
            let table: toml::Table = std::fs::read_to_string(path).unwrap().parse().unwrap();
            for item in table[kind].as_array().unwrap() {
                let name = item["name"].as_str().unwrap();
                let require = item.get("require").and_then(|r| r.as_array()).map(|list| {
                    list.iter()
                        .map(|id| id.as_str().unwrap().to_string())
                        .collect()
                });
                resources.push((format!("{kind}:{name}"), require.unwrap_or_default()));
            }
        }
    }
    resources
}

/// The ids in manifest order, following the chain: each resource requires
/// the one before it, as the last entry of its `require`.
fn chain_order(resources: &[(String, Vec<String>)]) -> Vec<String> {
    let previous = |id: &str| {
        resources
            .iter()
            .find(|(_, require)| require.last().is_some_and(|last| last == id))
            .map(|(next, _)| next.clone())
    };
    let first = resources
        .iter()
        .find(|(_, require)| {
            !require
                .last()
                .is_some_and(|last| resources.iter().any(|(id, _)| id == last))
        })
        .map(|(id, _)| id.clone());
    let mut order = Vec::new();
    let mut at = first;
    while let Some(id) = at {
        at = previous(&id);
        order.push(id);
        assert!(order.len() <= resources.len(), "the chain loops: {order:?}");
    }
    order
}

/// The entity ids that head a paragraph of `holo apply`'s output
/// (`VERB KIND:NAME`), in order.
fn headed(output: &str) -> Vec<String> {
    output
        .lines()
        .filter(|line| !line.starts_with([' ', '!', '>']))
        .filter_map(|line| {
            KINDS
                .iter()
                .filter_map(|kind| line.find(&format!(" {kind}:")))
                .min()
                .map(|at| line[at + 1..].to_string())
        })
        .collect()
}

/// Checks one refused import: every line names the manifest and a line.
fn check_refused(manifest: &Path, root: &Path, stderr: &str) {
    let name = manifest.file_name().unwrap().to_string_lossy().into_owned();
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|line| !line.starts_with(">>"))
        .collect();
    let (last, problems) = lines.split_last().unwrap();
    assert!(
        last.ends_with("nothing was written; change or remove the parts above"),
        "{stderr}"
    );
    for line in problems {
        let after = line.split_once(&format!("{name}:")).map(|(_, rest)| rest);
        let numbered =
            after.is_some_and(|rest| rest.split(':').next().unwrap().parse::<usize>().is_ok());
        assert!(
            line.starts_with("!! ") && numbered,
            "no manifest line in {line:?}"
        );
    }
    assert!(!root.join("etc/holo/data.toml").exists());
    assert!(
        imported(root).is_empty(),
        "{name}: a refused import wrote files"
    );
}

#[test]
fn every_ccm_manifest_imports_or_names_what_holo_cannot_express() {
    let (mut refused, mut noop_ran, mut scan_failed) = (Vec::new(), Vec::new(), Vec::new());
    let all = manifests();
    for manifest in &all {
        let name = manifest.file_name().unwrap().to_string_lossy().into_owned();
        let dir = ccm_root();
        let root = dir.path();
        let to = root.to_str().unwrap();
        let import = run(
            root,
            &["import-ccm", manifest.to_str().unwrap(), "--to", to],
        );
        let stderr = text(&import.stderr);
        if import.status.code() == Some(1) {
            check_refused(manifest, root, &stderr);
            refused.push(name);
            continue;
        }
        assert_eq!(import.status.code(), Some(0), "{name}: {stderr}");
        let resources = imported(root);
        let order = chain_order(&resources);
        assert_eq!(
            order.len(),
            resources.len(),
            "{name}: not one chain: {resources:?}"
        );
        let noop = run(root, &["apply", "--noop"]);
        let output = format!("{}{}", text(&noop.stdout), text(&noop.stderr));
        if noop.status.code() == Some(255) {
            let first = output
                .lines()
                .find(|line| line.starts_with("!!"))
                .unwrap_or_default();
            scan_failed.push(format!("{name}: {first}"));
            continue;
        }
        // The entities it names come in manifest order.
        // (A templated name shows rendered; only the others are compared.)
        let shown = headed(&output);
        let known: Vec<&String> = shown.iter().filter(|id| order.contains(id)).collect();
        let mut expected = order.iter().filter(|id| known.contains(id));
        assert!(
            known.iter().all(|id| expected.next() == Some(*id)),
            "{name}: {shown:?} is not in manifest order {order:?}\n{output}"
        );
        // Nothing named: nothing would change (an absent file that is absent).
        assert!(
            !shown.is_empty() || noop.status.code() == Some(0),
            "{name}: noop names no entity\n{output}"
        );
        noop_ran.push(name);
    }
    let report = format!(
        "{} manifests: {} imported and checked with holo apply --noop, {} imported whose scan \
         fails on what the documentation's excerpt leaves out, {} refused\nrefused: {refused:?}\n\
         scan failed:\n{}",
        all.len(),
        noop_ran.len(),
        scan_failed.len(),
        refused.len(),
        scan_failed.join("\n")
    );
    eprintln!("{report}");
    assert_eq!(
        (all.len(), noop_ran.len(), scan_failed.len(), refused.len()),
        (77, 37, 21, 19),
        "{report}"
    );
}
