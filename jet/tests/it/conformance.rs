//! The conformance corpus: cases under tests/conformance/cases whose
//! expected outputs (tests/conformance/expected.json) were rendered by Jet
//! v6.3.2 itself, with CCM's variables and functions. Every case renders as
//! Jet does, or is one of the differences the man page holo-scaffold(8)
//! lists under DIFFERENCES FROM JET.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;

use holo_jet::{Delims, Engine, Map, MapLoader, Value};

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    doc: String,
    templates: std::collections::HashMap<String, String>,
    #[serde(default)]
    main: Option<String>,
    #[serde(default)]
    vars: Option<Map<String, Value>>,
    #[serde(default)]
    context: Option<Value>,
    #[serde(default)]
    delims: Option<[String; 2]>,
}

/// What Jet rendered: its output, or its error (whose words differ from
/// ours; an error matches an error).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Expected {
    #[serde(default)]
    output: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

fn corpus_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance")
}

fn load_cases() -> Vec<Case> {
    let mut paths: Vec<_> = std::fs::read_dir(corpus_dir().join("cases"))
        .expect("cases directory")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    let mut cases = Vec::new();
    for p in paths {
        let text = std::fs::read_to_string(&p).expect("case file");
        let mut batch: Vec<Case> = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{}: bad case file: {e}", p.display()));
        cases.append(&mut batch);
    }
    cases
}

/// CCM's `lookup("facts.os.id", default)`, over the case's variables.
fn lookup(vars: &Map<String, Value>, args: &[Value]) -> Result<Value, String> {
    let (path, default) = match args {
        [Value::String(p)] => (p, None),
        [Value::String(p), d] => (p, Some(d.clone())),
        _ => return Err("lookup takes a path and an optional default".into()),
    };
    let mut current = Some(&Value::Object(vars.clone())).cloned();
    for segment in path.split('.') {
        current = current.and_then(|v| match v {
            Value::Object(m) => m.get(segment).cloned(),
            Value::Array(a) => segment
                .parse::<usize>()
                .ok()
                .and_then(|i| a.get(i).cloned()),
            _ => None,
        });
    }
    current
        .or(default)
        .ok_or_else(|| format!("{path} not found"))
}

fn render(case: &Case) -> Result<String, holo_jet::Error> {
    let loader = MapLoader(case.templates.clone());
    let mut engine = Engine::new(&loader).with_render_function("render");
    if let Some([l, r]) = &case.delims {
        engine = engine.with_delims(Delims::new(l, r));
    }
    let vars = case.vars.clone().unwrap_or_default();
    let lookup_vars = vars.clone();
    engine.add_function("lookup", move |args| lookup(&lookup_vars, args));
    let context = match &case.context {
        Some(Value::String(s)) if s == "$vars" => Value::Object(vars.clone()),
        Some(c) => c.clone(),
        None => Value::Null,
    };
    let main = case.main.as_deref().unwrap_or("index.jet");
    engine.render(main, &vars, &context)
}

/// Why a case differs from Jet, or None when it renders as Jet does.
fn difference(case: &Case, want: &Expected) -> Option<String> {
    match (render(case), &want.output, &want.error) {
        (Ok(got), Some(out), None) if got == *out => None,
        (Ok(got), Some(out), None) => Some(format!("Jet renders {out:?}, we render {got:?}")),
        (Err(e), Some(out), None) => Some(format!("Jet renders {out:?}, we fail: {e}")),
        (Err(_), None, Some(_)) => None,
        (Ok(got), None, Some(err)) => Some(format!("Jet fails ({err}), we render {got:?}")),
        _ => Some("expected.json has neither output nor error".into()),
    }
}

/// The case names that holo-scaffold(8) lists as differences from Jet: the
/// `Corpus cases:` lines of its DIFFERENCES FROM JET section.
fn documented_differences() -> BTreeSet<String> {
    let man = Path::new(env!("CARGO_MANIFEST_DIR")).join("../man/holo-scaffold.8");
    let text = std::fs::read_to_string(&man).expect("man/holo-scaffold.8");
    let mut in_section = false;
    let mut names = BTreeSet::new();
    for line in text.lines() {
        if let Some(title) = line.strip_prefix(".SH ") {
            in_section = title.trim_matches('"') == "DIFFERENCES FROM JET";
        } else if in_section && let Some(list) = line.strip_prefix("Corpus cases: ") {
            names.extend(
                list.trim_end_matches('.')
                    .split(", ")
                    .map(|n| n.replace("\\_", "_").trim().to_string()),
            );
        }
    }
    names
}

#[test]
fn conformance() {
    let cases = load_cases();
    let text = std::fs::read_to_string(corpus_dir().join("expected.json")).expect("expected.json");
    let expected: BTreeMap<String, Expected> = serde_json::from_str(&text).expect("expected.json");
    let documented = documented_differences();
    let filter = std::env::var("JET_CASE").unwrap_or_default();
    let mut problems = Vec::new();
    let (mut ran, mut same, mut differing) = (0, 0, 0);
    for case in &cases {
        assert!(!case.doc.trim().is_empty(), "{}: no doc", case.name);
        if !case.name.contains(&filter) {
            continue;
        }
        ran += 1;
        let Some(want) = expected.get(&case.name) else {
            problems.push(format!(
                "{}: not in expected.json; regenerate it",
                case.name
            ));
            continue;
        };
        match (difference(case, want), documented.contains(&case.name)) {
            (None, false) => same += 1,
            (None, true) => problems.push(format!(
                "{}: renders as Jet does but holo-scaffold(8) lists it as a difference",
                case.name
            )),
            (Some(_), true) => differing += 1,
            (Some(why), false) => problems.push(format!("{} ({}): {why}", case.name, case.doc)),
        }
    }
    let names: BTreeSet<_> = cases.iter().map(|c| c.name.clone()).collect();
    for name in documented.difference(&names) {
        problems.push(format!("holo-scaffold(8) lists {name}, which is no case"));
    }
    // Written past the test harness's capture, so CI's log shows the
    // count; one write, on a line of its own.
    let line = format!(
        "\nJet conformance corpus: {same} of {ran} cases as Jet renders, {differing} documented differences\n"
    );
    let _ = std::io::stderr().write_all(line.as_bytes());
    assert!(
        problems.is_empty(),
        "{} problems:\n\n{}",
        problems.len(),
        problems.join("\n\n")
    );
    if filter.is_empty() {
        assert_eq!(
            ran,
            expected.len(),
            "expected.json has cases that are not in cases/"
        );
    }
}
