//! Property test: `holos config` output reads back to the same resolved
//! manifest, whatever strings the environment and labels hold.

use crate::common;
use common::{ConfigOutput, Fixture};
use proptest::prelude::*;

/// Strings that YAML would read as something else if printed plain.
const TRICKY: &[&str] = &[
    "",
    " ",
    "  ",
    "~",
    "null",
    "Null",
    "NULL",
    "nUlL",
    "true",
    "False",
    "TRUE",
    "tRuE",
    "yes",
    "No",
    "YES",
    "yEs",
    "on",
    "Off",
    "OFF",
    "oN",
    "y",
    "n",
    "Y",
    "N",
    "0",
    "-1",
    "+1",
    "007",
    "1.5",
    ".5",
    "1e3",
    "-.inf",
    ".NaN",
    "inf",
    "0x1F",
    "0o17",
    "1_000",
    "2001-12-14",
    " lead",
    "trail ",
    "\tindented",
    "tabbed\t",
    "a: b",
    "a:b",
    "a #b",
    "#c",
    "a#b",
    ":",
    "- a",
    "-",
    "--",
    "---",
    "...",
    "? x",
    "?",
    "*x",
    "&x",
    "!x",
    "!!str",
    "|",
    "|-",
    ">",
    ">+",
    "'q'",
    "\"dq\"",
    "%YAML",
    "@x",
    "`x`",
    "{a: 1}",
    "[1]",
    "a, b",
    "\\",
    "back\\slash",
    "\n",
    "\n\n",
    "two\nlines",
    "two\nlines\n",
    "trailing\n\n",
    "\nleading",
    " \nspace",
    "a\n  b",
    "a\r\nb",
    "a \nb",
    "a\n\n\nb",
    "x\n---\ny",
    "x\n...\n",
    "<<",
    "=",
    "$",
    "$$",
    "${X}",
    "\u{7f}",
    "\u{85}",
    "\u{a0}",
    "\u{feff}bom",
    "\u{2028}",
    "é",
    "日本",
];

/// An environment or label value: a tricky string, one glued to ordinary
/// text, or anything at all.
fn value() -> impl Strategy<Value = String> {
    let tricky = prop::sample::select(TRICKY).prop_map(str::to_string);
    prop_oneof![
        3 => tricky.clone(),
        1 => (tricky.clone(), "[a-z ]{0,3}", tricky).prop_map(|(a, b, c)| format!("{a}{b}{c}")),
        2 => any::<String>().prop_map(|s| s.chars().take(12).collect::<String>()),
    ]
}

/// How a value reaches the compose file: through `${VAR}` from the
/// environment (the original bug), or written literally in double quotes.
#[derive(Clone, Debug)]
enum Source {
    Variable,
    Literal,
}

fn entries() -> impl Strategy<Value = Vec<(String, Source)>> {
    prop::collection::vec(
        (
            value(),
            prop_oneof![Just(Source::Variable), Just(Source::Literal)],
        ),
        0..6,
    )
}

/// A mapping body for `key` with one entry per value; variables go to `env`.
fn mapping(key: &str, values: &[(String, Source)], env: &mut Vec<(String, String)>) -> String {
    let mut text = format!("    {key}:\n");
    for (i, (value, source)) in values.iter().enumerate() {
        let name = format!("{}_{i}", key.to_uppercase());
        let scalar = match source {
            Source::Variable => {
                env.push((name.clone(), value.clone()));
                format!("${{{name}}}")
            }
            // A JSON string is a valid YAML double-quoted scalar; `$$`
            // keeps dollars literal through interpolation.
            Source::Literal => serde_json::to_string(&value.replace('$', "$$"))
                .expect("a string always serialises"),
        };
        text.push_str(&format!("      {name}: {scalar}\n"));
    }
    if values.is_empty() {
        text = format!("    {key}: {{}}\n");
    }
    text
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn config_output_reads_back_to_the_same_manifest(
        environment in entries(),
        labels in entries(),
    ) {
        let mut env = Vec::new();
        let text = format!(
            "services:\n  web:\n    image: alpine\n{}{}",
            mapping("environment", &environment, &mut env),
            mapping("labels", &labels, &mut env),
        );
        let mut first_project = Fixture::new(&[("holos.yaml", &text)]);
        for (name, value) in env {
            first_project = first_project.env(&name, &value);
        }
        let first = first_project.manifest();
        let config = first_project.config();
        let second_project = Fixture::new(&[("holos.yaml", &config)]);
        let second = match holos_compose::resolve(&second_project.options()) {
            Ok((_, manifest)) => manifest,
            Err(errors) => {
                return Err(TestCaseError::fail(format!(
                    "config output does not read back:\n{}\n--- config output:\n{config}",
                    common::render(&errors, second_project.path())
                )));
            }
        };
        let (web, again) = (&first.services[0], &second.services[0]);
        prop_assert_eq!(&web.environment, &again.environment, "config output:\n{}", config);
        prop_assert_eq!(&web.labels, &again.labels, "config output:\n{}", config);
        let mut second = second;
        second.directory = first.directory.clone();
        prop_assert_eq!(first, second, "config output:\n{}", config);
    }
}

#[test]
fn config_output_of_includes_anchors_extends_and_interpolation_reads_back() {
    let f = Fixture::new(&[
        (
            "holos.yaml",
            "include: [inc.yaml]\nx-a: &a {image: alpine}\nservices:\n  web:\n    <<: *a\n    extends: {service: base}\n    ports: [\"${P:-80}:80\", {target: 81, published: \"8100-8101\"}]\n    environment: [K=v]\n    healthcheck: {test: [\"CMD-SHELL\", \"true\"], interval: 1m30s}\n  base:\n    image: debian\n    cpus: \"2.5\"\n",
        ),
        (
            "inc.yaml",
            "services:\n  db: {image: debian, mem_limit: 1g}\n",
        ),
    ]);
    let first = f.manifest();
    let config = f.config();
    let g = Fixture::new(&[("holos.yaml", &config)]);
    let mut second = g.manifest();
    second.directory = first.directory.clone();
    assert_eq!(first, second, "config output:\n{config}");
}
