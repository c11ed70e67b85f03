//! The run report of `holo apply` (`var/lib/holo/last-run.json`,
//! `--report FILE`) and its metrics (`--metrics FILE`, Prometheus text
//! format), written by the real binary for real plugins: a shell plugin
//! with one entity per result, and holo-file through a batch.

use crate::root;

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// One entity per result; `demo:slow` takes at least 200 ms.
const PLUGIN: &str = r#"#!/bin/sh
case "$1" in
  info) echo MIN_API_VERSION=3; echo MAX_API_VERSION=3; echo EXTENSIONS=noop,order ;;
  scan)
    for id in changed same broken edited slow; do echo "ENTITY: demo:$id"; done
    echo "ENTITY: demo:zz-after-broken"
    echo "REQUIRES: demo:broken"
    ;;
  apply|force-apply|noop)
    case "$2" in
      demo:changed) echo "changed it" ;;
      demo:same) echo "not changed" >&3 ;;
      demo:broken) echo "!! it broke" >&2; exit 1 ;;
      demo:edited) echo "requires --force to overwrite" >&3 ;;
      demo:slow) sleep 0.2; echo "not changed" >&3 ;;
      *) echo "applied $2" ;;
    esac ;;
  *) exit 0 ;;
esac
"#;

fn demo_root(holorc: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for sub in ["etc", "tmp", "run", "usr/share/holo/demo", "usr/lib/holo"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    std::fs::write(root.join("etc/holorc"), holorc).unwrap();
    let plugin = root.join("usr/lib/holo/holo-demo");
    std::fs::write(&plugin, PLUGIN).unwrap();
    test_support::make_executable(&plugin);
    dir
}

fn holo(root: &Path, args: &[&str]) -> (i32, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_holo"))
        .args(args)
        .env("HOLO_ROOT_DIR", root)
        .env("HOLO_TEST_RUN_REPORT", "1")
        .env("TMPDIR", root.join("tmp"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code().unwrap_or(-1), text)
}

fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|err| panic!("{} is not there: {err}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|err| panic!("{text}\nis not JSON: {err}"))
}

fn last_run(root: &Path) -> serde_json::Value {
    read_json(&root.join("var/lib/holo/last-run.json"))
}

/// Entity ID to result.
fn results(report: &serde_json::Value) -> BTreeMap<String, String> {
    report["entities"]
        .as_array()
        .expect("entities is a list")
        .iter()
        .map(|entity| {
            (
                entity["id"].as_str().unwrap().to_string(),
                entity["result"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// A time as the report writes it: RFC 3339 in UTC with milliseconds.
fn assert_rfc3339_utc(value: &serde_json::Value) {
    let text = value.as_str().expect("a time is a string");
    let bytes = text.as_bytes();
    let digits =
        |range: std::ops::Range<usize>| range.into_iter().all(|i| bytes[i].is_ascii_digit());
    assert!(
        bytes.len() == 24
            && digits(0..4)
            && bytes[4] == b'-'
            && digits(5..7)
            && bytes[7] == b'-'
            && digits(8..10)
            && bytes[10] == b'T'
            && digits(11..13)
            && bytes[13] == b':'
            && digits(14..16)
            && bytes[16] == b':'
            && digits(17..19)
            && bytes[19] == b'.'
            && digits(20..23)
            && bytes[23] == b'Z',
        "{text} is not an RFC 3339 UTC time like 2026-01-02T03:04:05.678Z"
    );
}

#[test]
fn every_apply_writes_the_report_with_counts_and_entities() {
    let root = demo_root("plugin demo\n");
    let (code, text) = holo(root.path(), &["apply"]);
    assert_eq!(code, 1, "a failed entity makes apply exit 1:\n{text}");
    let report = last_run(root.path());
    assert_eq!(report["version"], 1);
    assert_eq!(report["mode"], "apply");
    assert_eq!(report["exit_code"], 1);
    assert_rfc3339_utc(&report["start"]);
    assert_rfc3339_utc(&report["end"]);
    assert!(report["start"].as_str() <= report["end"].as_str());
    let counts = &report["counts"];
    for (key, value) in [
        ("total", 6),
        ("changed", 1),
        ("unchanged", 2),
        ("failed", 1),
        ("skipped", 1),
        ("needs_force", 1),
    ] {
        assert_eq!(counts[key], value, "counts.{key} in {report:#}");
    }
    let expected: BTreeMap<String, String> = [
        ("demo:broken", "failed"),
        ("demo:changed", "changed"),
        ("demo:edited", "needs_force"),
        ("demo:same", "unchanged"),
        ("demo:slow", "unchanged"),
        ("demo:zz-after-broken", "skipped"),
    ]
    .into_iter()
    .map(|(id, result)| (id.to_string(), result.to_string()))
    .collect();
    assert_eq!(results(&report), expected);
    // Apply order, with the plugin and a duration for each entity.
    let entities = report["entities"].as_array().unwrap();
    let ids: Vec<&str> = entities.iter().map(|e| e["id"].as_str().unwrap()).collect();
    let position = |id: &str| ids.iter().position(|x| *x == id).unwrap();
    assert!(position("demo:broken") < position("demo:zz-after-broken"));
    for entity in entities {
        assert_eq!(entity["plugin"], "demo");
        assert!(entity["duration_seconds"].as_f64().unwrap() >= 0.0);
    }
    let slow = entities.iter().find(|e| e["id"] == "demo:slow").unwrap();
    assert!(
        slow["duration_seconds"].as_f64().unwrap() >= 0.2,
        "demo:slow sleeps 0.2 s: {slow}"
    );
    assert!(
        report["duration_seconds"].as_f64().unwrap() >= 0.2,
        "{report:#}"
    );
    // No temporary file is left beside the report (the plugin's state
    // directory `demo` is there too).
    let mut names: Vec<String> = std::fs::read_dir(root.path().join("var/lib/holo"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["demo", "last-run.json"]);
    let mode = std::fs::metadata(root.path().join("var/lib/holo/last-run.json"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o644, "readable by a monitor");
}

#[test]
fn report_elsewhere_noop_and_failed_runs() {
    let root = demo_root("plugin demo\n");
    let elsewhere = tempfile::tempdir().unwrap();
    let report_path = elsewhere.path().join("run.json");
    let report_arg = report_path.to_str().unwrap();

    // --report FILE replaces the default; selectors still work beside it.
    let (code, text) = holo(
        root.path(),
        &["apply", "demo:changed", "--report", report_arg],
    );
    assert_eq!(code, 0, "{text}");
    assert!(!root.path().join("var/lib/holo/last-run.json").exists());
    let report = read_json(&report_path);
    assert_eq!(
        results(&report),
        BTreeMap::from([("demo:changed".to_string(), "changed".to_string())])
    );

    // A real run, then --noop: the default report keeps the real run, an
    // explicit --report=FILE gets the noop run.
    let (code, text) = holo(root.path(), &["apply", "--force", "demo:same"]);
    assert_eq!(code, 0, "{text}");
    let before = std::fs::read(root.path().join("var/lib/holo/last-run.json")).unwrap();
    assert_eq!(last_run(root.path())["mode"], "force");
    let (code, text) = holo(
        root.path(),
        &[
            "apply",
            "--noop",
            "demo:changed",
            &format!("--report={report_arg}"),
        ],
    );
    assert_eq!(
        code, 2,
        "--noop exits 2 when something would change:\n{text}"
    );
    assert_eq!(
        std::fs::read(root.path().join("var/lib/holo/last-run.json")).unwrap(),
        before,
        "--noop leaves the last real run's report alone"
    );
    let noop = read_json(&report_path);
    assert_eq!(noop["mode"], "noop");
    assert_eq!(noop["exit_code"], 2);
    assert_eq!(noop["counts"]["changed"], 1);

    // A run that fails before applying is reported with its exit code.
    std::fs::write(root.path().join("etc/holorc"), "plugin demo\nbogus line\n").unwrap();
    let (code, text) = holo(root.path(), &["apply"]);
    assert_eq!(code, 255, "{text}");
    let failed = last_run(root.path());
    assert_eq!(failed["exit_code"], 255);
    assert_eq!(failed["counts"]["total"], 0);
    assert_eq!(failed["entities"], serde_json::json!([]));
}

#[test]
fn bad_report_options_are_usage_errors_and_unwritable_files_fail_the_run() {
    let root = demo_root("plugin demo\n");
    for args in [
        &["apply", "--report"][..],
        &["apply", "--metrics="][..],
        &["apply", "demo:same", "--metrics"][..],
    ] {
        let (code, text) = holo(root.path(), args);
        assert_eq!(code, 2, "{args:?}: {text}");
        assert!(text.contains("needs a file name"), "{args:?}: {text}");
    }
    let missing = root.path().join("no/such/dir/run.json");
    let (code, text) = holo(
        root.path(),
        &["apply", "demo:same", "--report", missing.to_str().unwrap()],
    );
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains(&format!("!! cannot write {}", missing.display()))
            && text.contains("make the directory exist"),
        "{text}"
    );
    // `--report` belongs to apply: elsewhere it is a selector as in Holo 3.
    let (code, text) = holo(root.path(), &["scan", "--report"]);
    assert_eq!(code, 255, "{text}");
    assert!(text.contains("Unrecognized argument: --report"), "{text}");
}

#[test]
fn batched_entities_of_holo_file_are_reported_each() {
    let root = root::make(&["file"]);
    std::fs::write(
        root.path().join("usr/share/holo/file/files.toml"),
        "[[file]]\nname = \"/etc/a\"\ncontent = \"a\\n\"\nowner = \"root\"\ngroup = \"root\"\nmode = \"0644\"\n\n\
         [[file]]\nname = \"/etc/b\"\ncontent = \"b\\n\"\nowner = \"root\"\ngroup = \"root\"\nmode = \"0644\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.path().join("etc")).unwrap();
    std::fs::write(root.path().join("etc/b"), "b\n").unwrap();
    std::fs::set_permissions(
        root.path().join("etc/b"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let (code, text) = holo(root.path(), &["apply"]);
    assert_eq!(code, 0, "{text}");
    let first = last_run(root.path());
    assert_eq!(first["counts"]["changed"], 1, "{first:#}");
    assert_eq!(first["counts"]["total"], 2, "{first:#}");
    assert_eq!(results(&first)["file:/etc/a"], "changed", "{first:#}");
    let (code, text) = holo(root.path(), &["apply"]);
    assert_eq!(code, 0, "{text}");
    let second = last_run(root.path());
    assert_eq!(second["counts"]["changed"], 0, "{second:#}");
    assert_eq!(second["counts"]["unchanged"], 2, "{second:#}");
}

/// A strict check of the Prometheus text exposition format (0.0.4): every
/// line is a HELP, a TYPE or a sample; names and labels are well formed;
/// a family's TYPE comes before its samples, which are contiguous; no
/// series repeats; values are floats. Returns the samples.
fn parse_exposition(text: &str) -> BTreeMap<String, f64> {
    fn is_name(name: &str, colon: bool) -> bool {
        let mut chars = name.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || (colon && c == ':'))
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || (colon && c == ':'))
    }
    assert!(text.ends_with('\n'), "the last line must end in a newline");
    let mut typed: BTreeMap<String, String> = BTreeMap::new();
    let mut helped: BTreeSet<String> = BTreeSet::new();
    let mut finished: BTreeSet<String> = BTreeSet::new();
    let mut current: Option<String> = None;
    let mut samples = BTreeMap::new();
    for (number, line) in text.lines().enumerate() {
        let at = format!("line {}: {line:?}", number + 1);
        if let Some(comment) = line.strip_prefix("# ") {
            let mut words = comment.splitn(3, ' ');
            let (keyword, name) = (words.next().unwrap(), words.next().unwrap_or(""));
            let rest = words.next().unwrap_or("");
            assert!(is_name(name, true), "{at}: bad metric name");
            match keyword {
                "HELP" => {
                    assert!(helped.insert(name.to_string()), "{at}: second HELP");
                    assert!(!rest.is_empty(), "{at}: empty HELP");
                }
                "TYPE" => {
                    assert!(
                        ["counter", "gauge", "histogram", "summary", "untyped"].contains(&rest),
                        "{at}: unknown type"
                    );
                    assert!(
                        typed.insert(name.to_string(), rest.to_string()).is_none(),
                        "{at}: second TYPE"
                    );
                    assert!(!finished.contains(name), "{at}: TYPE after samples");
                }
                _ => panic!("{at}: a comment must be HELP or TYPE here"),
            }
            continue;
        }
        assert!(
            !line.is_empty() && !line.starts_with('#'),
            "{at}: stray line"
        );
        let (series, value) = line.rsplit_once(' ').expect("a sample has a value");
        let name = series.split('{').next().unwrap();
        assert!(is_name(name, true), "{at}: bad metric name");
        assert!(typed.contains_key(name), "{at}: sample before its TYPE");
        if current.as_deref() != Some(name) {
            if let Some(previous) = current.replace(name.to_string()) {
                finished.insert(previous);
            }
            assert!(!finished.contains(name), "{at}: family is not contiguous");
        }
        if let Some(labels) = series.strip_prefix(name).filter(|l| !l.is_empty()) {
            let labels = labels
                .strip_prefix('{')
                .and_then(|l| l.strip_suffix('}'))
                .unwrap_or_else(|| panic!("{at}: labels must be in braces"));
            for pair in labels.split(',') {
                let (label, quoted) = pair.split_once('=').expect("label=\"value\"");
                assert!(
                    is_name(label, false) && !label.starts_with("__"),
                    "{at}: bad label"
                );
                let inner = quoted
                    .strip_prefix('"')
                    .and_then(|q| q.strip_suffix('"'))
                    .unwrap_or_else(|| panic!("{at}: label value must be quoted"));
                assert!(
                    !inner.contains(['"', '\\', '\n']),
                    "{at}: unescaped label value"
                );
            }
        }
        let parsed: f64 = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            "NaN" => f64::NAN,
            other => other
                .parse()
                .unwrap_or_else(|_| panic!("{at}: value is not a float")),
        };
        assert!(
            samples.insert(series.to_string(), parsed).is_none(),
            "{at}: series repeats"
        );
    }
    samples
}

#[test]
fn metrics_are_valid_exposition_format_with_the_counts() {
    let root = demo_root("plugin demo\n");
    let dir = tempfile::tempdir().unwrap();
    let metrics = dir.path().join("holo.prom");
    let (code, text) = holo(
        root.path(),
        &["apply", "--metrics", metrics.to_str().unwrap()],
    );
    assert_eq!(code, 1, "{text}");
    let exposition = std::fs::read_to_string(&metrics).unwrap();
    let samples = parse_exposition(&exposition);
    for (series, value) in [
        ("holo_entities{result=\"changed\"}", 1.0),
        ("holo_entities{result=\"unchanged\"}", 2.0),
        ("holo_entities{result=\"failed\"}", 1.0),
        ("holo_entities{result=\"skipped\"}", 1.0),
        ("holo_entities{result=\"needs_force\"}", 1.0),
        ("holo_last_run_exit_code", 1.0),
        ("holo_last_run_noop", 0.0),
    ] {
        assert_eq!(
            samples.get(series),
            Some(&value),
            "{series} in\n{exposition}"
        );
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let ended = samples["holo_last_run_timestamp_seconds"];
    assert!(ended <= now && ended > now - 3600.0, "{exposition}");
    assert!(samples["holo_run_duration_seconds"] >= 0.2, "{exposition}");
    // The default report is written beside the metrics.
    assert_eq!(last_run(root.path())["counts"]["failed"], 1);
    // Only the .prom file: a temporary file never shows to the collector.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["holo.prom"]);
    // promtool, where installed, agrees.
    if let Ok(output) = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(&metrics).unwrap())
        .output()
    {
        assert!(
            output.status.success(),
            "promtool check metrics:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

#[test]
fn the_exposition_check_rejects_what_node_exporter_would() {
    for bad in [
        "holo_x 1\n",                                                  // no TYPE
        "# TYPE holo_x gauge\nholo_x one\n",                           // not a float
        "# TYPE holo_x gauge\nholo_x{a=\"1\"} 1\nholo_x{a=\"1\"} 2\n", // repeated series
        "# TYPE holo_x gauge\nholo_x{a=1} 1\n",                        // unquoted label
        "# TYPE holo_x gauge\nholo_x 1",                               // no final newline
        "# TYPE holo-x gauge\n",                                       // bad name
    ] {
        let caught = std::panic::catch_unwind(|| parse_exposition(bad)).is_err();
        assert!(caught, "accepted {bad:?}");
    }
}

#[test]
fn test_mode_adds_no_report_to_the_root_unless_asked() {
    let root = demo_root("plugin demo\n");
    let output = Command::new(env!("CARGO_BIN_EXE_holo"))
        .arg("apply")
        .env("HOLO_ROOT_DIR", root.path())
        .env_remove("HOLO_TEST_RUN_REPORT")
        .env("TMPDIR", root.path().join("tmp"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(
        !root.path().join("var/lib/holo/last-run.json").exists(),
        "a fixture suite compares the whole root: Holo 3 writes no report there"
    );
    // --report still writes one, also in test mode.
    let elsewhere = root.path().join("tmp/run.json");
    let (code, text) = holo(
        root.path(),
        &["apply", "--report", elsewhere.to_str().unwrap()],
    );
    assert_eq!(code, 1, "{text}");
    assert_eq!(read_json(&elsewhere)["mode"], "apply");
}
