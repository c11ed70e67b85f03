//! Runs every case under tests/corpus: one TOML file per case, written
//! from Jet's documentation and tests and from CCM's scaffold examples.

use std::collections::HashMap;
use std::path::Path;

use holo_jet::{Delims, Engine, MapLoader, Value};

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    /// Where the behaviour is documented.
    doc: String,
    #[serde(default)]
    delims: Option<[String; 2]>,
    #[serde(default = "default_main")]
    main: String,
    #[serde(default)]
    data: Option<String>,
    #[serde(default)]
    context: Option<String>,
    templates: HashMap<String, String>,
    #[serde(default)]
    expected: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

fn default_main() -> String {
    "index.jet".into()
}

fn run(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let case: Case = toml::from_str(&text).map_err(|e| format!("bad case file: {e}"))?;
    if case.doc.trim().is_empty() {
        return Err("the case does not say where its behaviour is documented".into());
    }
    let vars = match &case.data {
        Some(d) => match serde_json::from_str::<Value>(d).map_err(|e| format!("bad data: {e}"))? {
            Value::Object(m) => m,
            _ => return Err("data must be a JSON object".into()),
        },
        None => Default::default(),
    };
    let context = match &case.context {
        Some(c) => serde_json::from_str(c).map_err(|e| format!("bad context: {e}"))?,
        None => Value::Null,
    };
    let loader = MapLoader(case.templates.clone());
    let mut engine = Engine::new(&loader);
    if let Some([l, r]) = &case.delims {
        engine = engine.with_delims(Delims::new(l, r));
    }
    let got = engine.render(&case.main, &vars, &context);
    match (&case.expected, &case.error, got) {
        (Some(want), None, Ok(got)) if *want == got => Ok(()),
        (Some(want), None, Ok(got)) => Err(format!(
            "output differs\n--- want\n{want:?}\n--- got\n{got:?}"
        )),
        (Some(_), None, Err(e)) => Err(format!("unexpected error: {e}")),
        (None, Some(want), Err(e)) if e.to_string() == *want => Ok(()),
        (None, Some(want), Err(e)) => Err(format!("error differs\n--- want\n{want}\n--- got\n{e}")),
        (None, Some(_), Ok(got)) => Err(format!("expected an error, got output {got:?}")),
        _ => Err("a case needs exactly one of expected and error".into()),
    }
}

#[test]
fn corpus() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("corpus directory")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    let filter = std::env::var("JET_CASE").unwrap_or_default();
    let mut failures = Vec::new();
    let mut ran = 0;
    for p in &paths {
        let name = p.file_stem().expect("stem").to_string_lossy().to_string();
        if !name.contains(&filter) {
            continue;
        }
        ran += 1;
        if let Err(e) = run(p) {
            failures.push(format!("{name}: {e}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {ran} cases failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    if filter.is_empty() {
        assert!(ran >= 60, "only {ran} cases in {}", dir.display());
    }
}
