//! `engine = "go"`: the conformance corpus (Go text/template cases whose
//! outputs Go itself gives, checked by `go_corpus_agrees_with_go`), run
//! through the engine as scaffolds use it.

use std::path::Path;

use holo_scaffold::go_engine::GoEngine;
use holo_scaffold::render::render_tree;

const CORPUS: &str = include_str!("../go-corpus/corpus.txt");
const DATA: &str = include_str!("../go-corpus/data.json");

/// (name, template, expected output) for every case.
fn cases() -> Vec<(&'static str, &'static str, &'static str)> {
    CORPUS
        .split("\n### ")
        .skip(1)
        .map(|case| {
            let (name, rest) = case.split_once('\n').expect("case name");
            let (template, want) = rest.split_once("\n---\n").expect("--- line");
            (name, template, want.strip_suffix('\n').unwrap_or(want))
        })
        .collect()
}

/// Where gotmpl differs from Go (holo-scaffold(8) lists them): the case
/// and what gotmpl gives. A fix upstream fails this test, so that the
/// list and the man page are brought up to date.
const KNOWN_DEVIATIONS: &[(&str, &str)] = &[
    // Go's %s formats a list element by element.
    ("printf-s-list", "%!s(list=[a b c])"),
    // Go's {{template "t"}} runs t with nil; gotmpl passes dot on.
    ("template-without-data", "[dot]"),
];

#[test]
fn go_corpus_renders_as_go_does() {
    let serde_json::Value::Object(vars) = serde_json::from_str(DATA).expect("data.json") else {
        panic!("data.json is not an object");
    };
    let engine = GoEngine::new(vars, None).expect("engine");
    let dir = tempfile::tempdir().expect("tempdir");
    let cases = cases();
    assert!(cases.len() >= 30, "the corpus has {} cases", cases.len());
    for (name, template, _) in &cases {
        std::fs::write(dir.path().join(name), template).expect("write case");
    }
    let rendered = render_tree(&engine, dir.path(), false).expect("render");
    let mut differ = Vec::new();
    for (name, _, want) in &cases {
        let file = rendered
            .iter()
            .find(|file| file.rel == Path::new(name))
            .expect("rendered case");
        let got = String::from_utf8_lossy(&file.content);
        let want = KNOWN_DEVIATIONS
            .iter()
            .find(|(deviating, _)| deviating == name)
            .map_or(*want, |(_, gives)| *gives);
        if got != want {
            differ.push(format!("{name}: got {got:?}, Go gives {want:?}"));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// The corpus's expected outputs are Go's own: its check program runs
/// every case through Go's text/template.
#[test]
#[ignore = "needs go (golang-go), to run the corpus through Go itself"]
fn go_corpus_agrees_with_go() {
    let go = test_support::require_go("to run the corpus through Go's text/template");
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/go-corpus");
    let cache = tempfile::tempdir().expect("tempdir");
    let output = std::process::Command::new(go)
        .arg("run")
        .arg(corpus.join("check.go"))
        .arg(corpus.join("corpus.txt"))
        .arg(corpus.join("data.json"))
        .env("GOCACHE", cache.path())
        .env("GOFLAGS", "")
        .current_dir(cache.path())
        .output()
        .expect("go run");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains(", 0 differ from Go"), "{stdout}");
}
