//! Runs every fixture case under `tests/cases/<suite>/<case>/` through
//! `holo-test`, once as is and once with `HOLO_NO_BATCH=1`: both runs must
//! match the expected outputs, so batching never changes a byte.
//!
//! A suite may list cases that fail for a known reason, one per line, in
//! `tests/cases/<suite>/KNOWN_FAILURES` (`CASE  reason`; `#` starts a
//! comment). Such a case must still fail the same way in both modes, and it
//! must leave the list once it passes.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const HOLO_TEST: &str = env!("CARGO_BIN_EXE_holo-test");
const HOLO: &str = env!("CARGO_BIN_EXE_holo");

#[test]
fn every_fixture_case_passes_with_and_without_batching() {
    let repository = Path::new(env!("CARGO_MANIFEST_DIR"));
    let shell_plugins = repository.join("tests/plugins");
    let binaries = Path::new(HOLO_TEST)
        .parent()
        .expect("a binary lives in a directory");
    let cases = discover_cases(&repository.join("tests/cases"));
    assert!(
        !cases.is_empty(),
        "no fixture cases found below tests/cases/*/*"
    );
    require_workspace_plugins(&cases, &shell_plugins);

    // Cases run side by side (each in its own directory), in both modes one
    // after the other; failures are reported in case order.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4));
    let check = |case: &PathBuf| -> Vec<String> {
        let mut failures = Vec::new();
        let name = case
            .strip_prefix(repository)
            .unwrap_or(case)
            .display()
            .to_string();
        let batched = run_holo_test(case, &shell_plugins, binaries, false);
        let unbatched = run_holo_test(case, &shell_plugins, binaries, true);
        let known_failure = known_failures(case).contains(&case_name(case));

        if known_failure {
            if batched.passed && unbatched.passed {
                failures.push(format!(
                    "{name} passes now: remove it from {}",
                    case.with_file_name("KNOWN_FAILURES").display()
                ));
            } else if batched.report != unbatched.report {
                failures.push(format!(
                    "{name} (a known failure) fails differently with HOLO_NO_BATCH=1.\n\
                         --- batched:\n{}\n--- HOLO_NO_BATCH=1:\n{}",
                    batched.report, unbatched.report
                ));
            } else {
                eprintln!("known failure: {name}");
                // holo-test keeps target/ of a failed case for inspection
                let _ = fs::remove_dir_all(case.join("target"));
            }
            return failures;
        }
        for (mode, run) in [("batched", &batched), ("HOLO_NO_BATCH=1", &unbatched)] {
            if !run.passed {
                failures.push(format!("{name} failed ({mode}):\n{}", run.report));
            }
        }
        failures
    };
    let mut results: Vec<(usize, Vec<String>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let index = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(case) = cases.get(index) else {
                            return done;
                        };
                        done.push((index, check(case)));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|handle| handle.join().expect("a fixture worker panicked"))
            .collect()
    });
    results.sort_by_key(|(index, _)| *index);
    let failures: Vec<String> = results.into_iter().flat_map(|(_, f)| f).collect();
    assert!(
        failures.is_empty(),
        "{} of {} fixture checks failed:\n\n{}",
        failures.len(),
        cases.len() * 2,
        failures.join("\n\n")
    );
}

/// What one holo-test run said.
struct Run {
    passed: bool,
    report: String,
}

fn run_holo_test(case: &Path, shell_plugins: &Path, binaries: &Path, no_batch: bool) -> Run {
    let mut command = Command::new(HOLO_TEST);
    command
        .arg("--plugin-dir")
        .arg(shell_plugins)
        .arg("--plugin-dir")
        .arg(binaries)
        .arg(case)
        .env("HOLO_BINARY", HOLO)
        // a test must never rewrite its own expectations
        .env_remove("HOLO_TEST_UPDATE")
        .env_remove("HOLO_NO_BATCH");
    if no_batch {
        command.env("HOLO_NO_BATCH", "1");
    }
    let output = command
        .output()
        .unwrap_or_else(|err| panic!("cannot run {HOLO_TEST}: {err}"));
    let mut report = String::from_utf8_lossy(&output.stdout).into_owned();
    report.push_str(&String::from_utf8_lossy(&output.stderr));
    Run {
        passed: output.status.success(),
        report,
    }
}

/// Every directory `tests/cases/<suite>/<case>` that looks like a case (it
/// has a `source-tree` or an `expected-*` file), sorted; also what
/// fixture_readmes checks.
pub(crate) fn discover_cases(cases_root: &Path) -> Vec<PathBuf> {
    let mut cases = Vec::new();
    for suite in sorted_subdirectories(cases_root) {
        for case in sorted_subdirectories(&suite) {
            let looks_like_case = fs::read_dir(&case)
                .map(|entries| {
                    entries.flatten().any(|entry| {
                        let name = entry.file_name();
                        let name = name.to_string_lossy();
                        name == "source-tree" || name.starts_with("expected-")
                    })
                })
                .unwrap_or(false);
            if looks_like_case {
                cases.push(case);
            }
        }
    }
    cases
}

fn sorted_subdirectories(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.path())
                .filter(|path| path.is_dir())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs
}

fn case_name(case: &Path) -> String {
    case.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The case names listed in the suite's KNOWN_FAILURES file.
fn known_failures(case: &Path) -> BTreeSet<String> {
    let list = case.with_file_name("KNOWN_FAILURES");
    fs::read_to_string(list)
        .unwrap_or_default()
        .lines()
        .map(|line| line.split('#').next().unwrap_or_default().trim())
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// Plugin IDs named on `plugin ID` lines anywhere in the cases' source trees
/// (holorc files are part of them).
fn plugin_ids(cases: &[PathBuf]) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    for case in cases {
        let source = case.join("source-tree");
        let texts: Vec<String> = if source.is_dir() {
            let mut files = vec![source.join("etc/holorc")];
            if let Ok(entries) = fs::read_dir(source.join("etc/holorc.d")) {
                files.extend(entries.flatten().map(|entry| entry.path()));
            }
            files
                .iter()
                .filter_map(|file| fs::read_to_string(file).ok())
                .collect()
        } else {
            fs::read(&source)
                .map(|bytes| vec![String::from_utf8_lossy(&bytes).into_owned()])
                .unwrap_or_default()
        };
        for text in texts {
            for line in text.lines() {
                if let Some(rest) = line.trim().strip_prefix("plugin ") {
                    let id = rest.split('=').next().unwrap_or_default().trim();
                    if !id.is_empty() {
                        ids.insert(id.to_string());
                    }
                }
            }
        }
    }
    ids
}

/// Checks that the workspace's plugin binaries the cases need are built
/// (a missing `holo-ID` must fail the test, never decide a case). Plugins
/// that are test scripts (tests/plugins) or that no workspace crate provides
/// are left alone: a case may name a missing plugin on purpose.
fn require_workspace_plugins(cases: &[PathBuf], shell_plugins: &Path) {
    let list =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/plugins.list"))
            .expect("packaging/plugins.list");
    let workspace_plugins: BTreeSet<String> = list
        .lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .filter_map(|line| line.split_whitespace().next())
        .chain(["demo"])
        .map(|id| format!("holo-{id}"))
        .collect();
    for binary in plugin_ids(cases)
        .into_iter()
        .map(|id| format!("holo-{id}"))
        .filter(|binary| !shell_plugins.join(binary).exists())
        .filter(|binary| workspace_plugins.contains(binary))
    {
        test_support::binary(&binary);
    }
}
