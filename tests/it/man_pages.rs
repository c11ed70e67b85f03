//! Checks that every manual page in `man/` parses cleanly: with
//! `groff -man -z -ww` (all warnings on), else with `mandoc -T lint`, and
//! renders with `man -l` without a warning; that the pages the suite
//! promises exist; and that every property the plugins accept (as each
//! plugin binary lists them with its hidden `properties` operation, straight
//! from the code) is named in bold in its page. The checks that need
//! groff or mandoc, or man, are ignored by default and fail without them.

use crate::root;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The pages the suite ships; each must exist (and one per plugin in
/// packaging/plugins.list, see [`plugin_ids`]).
const REQUIRED_PAGES: [&str; 8] = [
    "holo.8",
    "holo-import-ccm.8",
    "holorc.5",
    "holo-data.5",
    "holo-plugin-interface.7",
    "holo-test.7",
    "holos.1",
    "holos.yaml.5",
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
    let plugin_pages: Vec<String> = plugin_ids()
        .iter()
        .map(|id| format!("holo-{id}.8"))
        .collect();
    for required in REQUIRED_PAGES
        .iter()
        .copied()
        .chain(plugin_pages.iter().map(String::as_str))
    {
        assert!(
            names.iter().any(|name| name == required),
            "man/{required} is missing (pages found: {names:?})"
        );
    }
}

#[test]
#[ignore = "needs groff or mandoc"]
fn every_page_parses_without_warnings() {
    let Some(lint) = checker() else {
        test_support::missing("groff or mandoc (groff-base)", "neither is installed");
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

#[test]
#[ignore = "needs man (man-db)"]
fn every_page_renders_with_man_without_warnings() {
    test_support::require_tools(&["man"], "man-db");
    for page in pages() {
        let output = Command::new("man")
            .args(["--warnings", "-l"])
            .arg(&page)
            .env("MANWIDTH", "80")
            .env("MAN_KEEP_FORMATTING", "")
            .env_remove("MANPAGER")
            .env("PAGER", "cat")
            .output()
            .expect("man runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success() && stderr.trim().is_empty(),
            "MANWIDTH=80 man --warnings -l {} warns (exit {:?}):\n{stderr}",
            page.display(),
            output.status.code()
        );
        assert!(
            output.stdout.len() > 500,
            "{} renders to almost nothing",
            page.display()
        );
    }
}

/// The plugin IDs of packaging/plugins.list.
fn plugin_ids() -> Vec<String> {
    let list = Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/plugins.list");
    std::fs::read_to_string(list)
        .expect("packaging/plugins.list is readable")
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(|line| line.split_whitespace().next().map(str::to_string))
        .collect()
}

/// `SECTION PROPERTY` pairs from `holo-ID properties`.
fn properties(binary: &Path) -> Vec<(String, String)> {
    let output = Command::new(binary)
        .arg("properties")
        .output()
        .unwrap_or_else(|err| panic!("{} does not run: {err}", binary.display()));
    assert!(
        output.status.success(),
        "{} properties failed: {}",
        binary.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .expect("properties are UTF-8")
        .lines()
        .map(|line| {
            let (section, name) = line
                .split_once(' ')
                .unwrap_or_else(|| panic!("not `SECTION PROPERTY`: {line:?}"));
            (section.to_string(), name.to_string())
        })
        .collect()
}

/// The words a page sets in bold: arguments of `.B`, `.BR`, `.RB`, `.BI`
/// and `.IB` lines, and text between `\fB` and the next font change, with
/// roff's escapes for `-` and quotes undone.
fn bold_words(page: &str) -> BTreeSet<String> {
    let text = page
        .replace("\\-", "-")
        .replace("\\(dq", "\"")
        .replace("\\(aq", "'")
        .replace("\\&", "");
    let mut bold = String::new();
    for line in text.lines() {
        let macro_name = line.split_whitespace().next().unwrap_or("");
        if [".B", ".BR", ".RB", ".BI", ".IB"].contains(&macro_name) {
            bold.push_str(&line[macro_name.len()..]);
            bold.push('\n');
        }
        for piece in line.split("\\fB").skip(1) {
            bold.push_str(piece.split("\\f").next().unwrap_or(""));
            bold.push('\n');
        }
    }
    bold.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.'))
        .flat_map(|word| {
            // `a.b` names both `a` and `b`; trailing dots end sentences.
            let word = word.trim_matches(['.', '-']);
            std::iter::once(word.to_string()).chain(word.split('.').map(str::to_string))
        })
        .filter(|word| !word.is_empty())
        .collect()
}

/// The page that documents a plugin's properties: holo-ID(8), or for the
/// compose keys of holo-vms, holos.yaml(5). The SDK's common properties
/// (sections `common` and `health_checks`) are documented once, in the page
/// with a COMMON PROPERTIES section.
fn page_for(id: &str, section: &str) -> PathBuf {
    if section == "common" || section == "health_checks" {
        let with_common: Vec<PathBuf> = pages()
            .into_iter()
            .filter(|page| {
                std::fs::read_to_string(page)
                    .is_ok_and(|text| text.contains("\n.SH COMMON PROPERTIES\n"))
            })
            .collect();
        assert_eq!(
            with_common.len(),
            1,
            "exactly one page must have a COMMON PROPERTIES section: {with_common:?}"
        );
        return with_common[0].clone();
    }
    if id == "vms" {
        return man_dir().join("holos.yaml.5");
    }
    man_dir().join(format!("holo-{id}.8"))
}

/// Holo 3's plugins whose resources are not tables (repository files, key
/// files, scripts): they have no properties to list.
const NOT_TABLES: [&str; 3] = ["files", "ssh-keys", "run-scripts"];

#[test]
fn every_property_the_code_accepts_is_in_its_page() {
    let ids = plugin_ids();
    let id_refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let bin = root::binaries(&id_refs);
    // The SDK's common properties come from every plugin: each is reported once.
    let mut missing = BTreeSet::new();
    let mut checked = 0;
    for id in &ids {
        let listed = properties(&bin.join(format!("holo-{id}")));
        if NOT_TABLES.contains(&id.as_str()) {
            assert!(
                listed.is_empty(),
                "holo-{id} has no resource tables, yet lists properties: {listed:?}"
            );
            continue;
        }
        assert!(
            listed.len() > 3,
            "holo-{id} properties lists almost nothing: {listed:?}; implement Plugin::properties"
        );
        for (section, name) in listed {
            let page = page_for(id, &section);
            let text = std::fs::read_to_string(&page)
                .unwrap_or_else(|err| panic!("{}: {err}", page.display()));
            if !bold_words(&text).contains(&name) {
                missing.insert(format!(
                    "{}: {section} property {name} (holo-{id} properties)",
                    page.display()
                ));
            }
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} properties checked");
    assert!(
        missing.is_empty(),
        "properties the code accepts but the man pages do not name in bold:\n{}",
        missing.into_iter().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn bold_words_finds_terms_in_macros_and_inline_bold() {
    let words = bold_words(
        ".TP\n.BR refresh_only \" (alias \" refreshonly )\nText with \\fBtry_sleep\\fR and \\fIitalic\\fR.\n.B x\\-holo.protect\nplain words\n",
    );
    for word in [
        "refresh_only",
        "refreshonly",
        "try_sleep",
        "x-holo",
        "protect",
    ] {
        assert!(words.contains(word), "{word} in {words:?}");
    }
    for word in ["italic", "plain", "Text"] {
        assert!(!words.contains(word), "{word} is not bold: {words:?}");
    }
}
