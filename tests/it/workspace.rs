//! The workspace as cargo sees it, for the tests that check every crate.

use std::path::Path;
use std::process::Command;

/// The repository: the root crate's directory.
pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `cargo metadata --no-deps` of the workspace, offline.
pub fn metadata() -> serde_json::Value {
    let output = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(repo())
        .output()
        .expect("run cargo metadata");
    assert!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON")
}

/// Every README.md and ARCHITECTURE.md of the repository, below `dir`.
fn docs(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("list a directory").flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                docs(&path, found);
            }
        } else if name == "README.md" || name == "ARCHITECTURE.md" {
            found.push(path);
        }
    }
}

/// The backquoted spans of `text` outside fenced code blocks.
fn backquoted(text: &str) -> Vec<&str> {
    let mut fenced = false;
    let mut spans = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            spans.extend(line.split('`').skip(1).step_by(2));
        }
    }
    spans
}

/// A span that names a path of this repository: it starts with one of the
/// repository's top directories and holds no placeholder (`NAME`, `*`,
/// `<kind>`) or anything else a path of ours never holds.
fn repository_path<'a>(span: &'a str, tops: &[String]) -> Option<&'a str> {
    let path = span.trim_end_matches([',', '.', ':']);
    let first = path.split('/').next()?;
    let placeholder = path.contains(|c: char| " *<>{}#:=@…$".contains(c))
        || path
            .as_bytes()
            .windows(2)
            .any(|pair| pair.iter().all(u8::is_ascii_uppercase));
    (path.contains('/') && !placeholder && tops.iter().any(|top| top == first)).then_some(path)
}

#[test]
fn every_repository_path_the_docs_cite_exists() {
    let tops: Vec<String> = std::fs::read_dir(repo())
        .expect("list the repository")
        .flatten()
        .filter(|entry| entry.path().is_dir())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name != "target" && name != ".git")
        .collect();
    let mut found = Vec::new();
    docs(repo(), &mut found);
    let mut missing = Vec::new();
    let mut checked = 0;
    for doc in &found {
        let text = std::fs::read_to_string(doc).expect("read a doc");
        // Relative to the repository, the doc's directory or its crate.
        let dir = doc.parent().expect("a directory");
        let crate_dir = dir
            .ancestors()
            .find(|ancestor| ancestor.join("Cargo.toml").is_file())
            .unwrap_or(repo());
        for path in backquoted(&text)
            .into_iter()
            .filter_map(|span| repository_path(span, &tops))
        {
            checked += 1;
            if ![repo(), dir, crate_dir]
                .iter()
                .any(|base| base.join(path).exists())
            {
                let shown = doc.strip_prefix(repo()).unwrap_or(doc);
                missing.push(format!("{}: `{path}`", shown.display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "these docs cite paths that do not exist; fix the path or the text:\n{}",
        missing.join("\n")
    );
    assert!(checked > 100, "only {checked} paths checked");
}
