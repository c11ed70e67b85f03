//! Checks that every manual page in `man/` parses cleanly: with
//! `groff -man -z -ww` (all warnings on), else with `mandoc -T lint`.
//! Skips, with a note on stderr, when neither tool is installed.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The pages the suite ships; each must exist.
const REQUIRED_PAGES: [&str; 5] = [
    "holo.8",
    "holorc.5",
    "holo-data.5",
    "holo-plugin-interface.7",
    "holo-test.7",
];

fn man_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("man")
}

/// Every file in `man/` whose name ends in a section number.
fn pages() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(man_dir())
        .expect("man/ is readable")
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            path.extension()
                .and_then(|ext| ext.to_str())
                .is_some_and(|ext| ext.len() == 1 && ext.chars().all(|c| c.is_ascii_digit()))
        })
        .collect();
    pages.sort();
    pages
}

/// A lint command for one page, or `None` when no checker is installed.
fn checker() -> Option<fn(&Path) -> Command> {
    // A checker counts as installed when it can be started at all.
    let installed = |program: &str, probe: &str| Command::new(program).arg(probe).output().is_ok();
    if installed("groff", "--version") {
        Some(|page| {
            let mut command = Command::new("groff");
            command.args(["-man", "-z", "-ww"]).arg(page);
            command
        })
    } else if installed("mandoc", "-V") {
        Some(|page| {
            let mut command = Command::new("mandoc");
            command.args(["-T", "lint", "-W", "warning"]).arg(page);
            command
        })
    } else {
        None
    }
}

#[test]
fn required_pages_exist() {
    let names: Vec<String> = pages()
        .iter()
        .filter_map(|path| {
            path.file_name()
                .map(|name| name.to_string_lossy().into_owned())
        })
        .collect();
    for required in REQUIRED_PAGES {
        assert!(
            names.iter().any(|name| name == required),
            "man/{required} is missing (pages found: {names:?})"
        );
    }
}

#[test]
fn every_page_parses_without_warnings() {
    let Some(lint) = checker() else {
        eprintln!("neither groff nor mandoc is installed: skipping the man page check");
        return;
    };
    for page in pages() {
        let output = lint(&page).output().expect("the checker runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success() && stderr.trim().is_empty(),
            "{} does not parse cleanly (exit {:?}):\n{stderr}",
            page.display(),
            output.status.code()
        );
    }
}

#[test]
fn pages_name_themselves_in_th_and_name_sections() {
    for page in pages() {
        let text = std::fs::read_to_string(&page).expect("page is UTF-8 text");
        let file_name = page
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default();
        let title = file_name.to_uppercase().replace('-', "\\-");
        assert!(
            text.lines()
                .any(|line| line.starts_with(&format!(".TH {title} "))),
            "{}: the .TH line must name {title}",
            page.display()
        );
        assert!(
            text.contains(".SH NAME") && text.contains(".SH SEE ALSO"),
            "{}: NAME and SEE ALSO sections are required",
            page.display()
        );
    }
}
