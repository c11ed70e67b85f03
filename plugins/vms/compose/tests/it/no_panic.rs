//! Property tests: no input makes the parser or the resolver panic, and
//! every error they give names a file and a line.

use std::collections::BTreeMap;

use holos_compose::keys;
use holos_compose::load::Options;
use proptest::prelude::*;

fn resolve_text(dir: &tempfile::TempDir, text: &str) {
    std::fs::write(dir.path().join("holos.yaml"), text).expect("write holos.yaml");
    let options = Options {
        working_dir: dir.path().to_path_buf(),
        environment: BTreeMap::from([("SET".to_string(), "value".to_string())]),
        ..Options::default()
    };
    // Either outcome is fine, as long as each error says where.
    if let Err(diags) = holos_compose::resolve(&options) {
        assert_positioned(&diags);
    }
}

/// Every error names a file and a line in it.
fn assert_positioned(diags: &[holos_compose::Diag]) {
    assert!(!diags.is_empty(), "an error without a diagnostic");
    for diag in diags {
        assert!(
            !diag.pos.file.as_os_str().is_empty() && diag.pos.line > 0,
            "names no file and line: {diag}"
        );
    }
}

/// Scalars that stress typing, interpolation and the field parsers.
fn scalar() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("~".to_string()),
        Just("''".to_string()),
        any::<i64>().prop_map(|i| i.to_string()),
        any::<f64>().prop_map(|f| f.to_string()),
        "[a-z0-9:./=${}\\-+_ ]{0,16}".prop_map(|s| format!("{s:?}")),
        prop::sample::select(vec![
            "\"8080:80\"",
            "\"1-2:3-4/tcp\"",
            "\"${SET:?x}\"",
            "\"$$\"",
            "1.5G",
            "2s",
            "true",
            "\"::1\"",
            "\"01:00.0\"",
            "[CMD, x]",
            "{}",
            "[]",
            "*a",
            "!reset x",
            "!override []",
            "alpine",
            "./d.qcow2",
        ])
        .prop_map(str::to_string),
    ]
}

/// A value: a scalar, or a small list or mapping of scalars under known keys.
fn value() -> impl Strategy<Value = String> {
    let keys: Vec<&'static str> = keys::SERVICE_MAPPED
        .iter()
        .chain(keys::VM)
        .chain(keys::CLOUD_INIT)
        .chain(keys::HEALTHCHECK)
        .chain(keys::PORT_LONG)
        .chain(keys::VOLUME_LONG)
        .copied()
        .collect();
    let leaf = scalar();
    leaf.prop_recursive(3, 24, 4, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4)
                .prop_map(|items| format!("[{}]", items.join(", "))),
            prop::collection::vec((prop::sample::select(keys.clone()), inner), 0..4).prop_map(
                |pairs| {
                    let body: Vec<String> =
                        pairs.iter().map(|(k, v)| format!("{k}: {v}")).collect();
                    format!("{{{}}}", body.join(", "))
                }
            ),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in "[ -~\\n\\t]{0,200}") {
        if let Err(diags) = holos_compose::yaml::parse_str(&text, std::path::Path::new("p.yaml")) {
            assert_positioned(&diags);
        }
        let dir = tempfile::tempdir().expect("temporary directory");
        resolve_text(&dir, &text);
    }

    #[test]
    fn compose_shaped_documents_never_panic(
        fields in prop::collection::vec((prop::sample::select(keys::SERVICE_MAPPED.to_vec()), value()), 0..8),
        top in prop::collection::vec((prop::sample::select(keys::TOP_LEVEL.to_vec()), value()), 0..3),
    ) {
        let mut text = String::from("x-anchor: &a {image: alpine}\nservices:\n  s:\n");
        for (k, v) in &fields {
            text.push_str(&format!("    {k}: {v}\n"));
        }
        text.push_str("  t:\n    <<: *a\n");
        for (k, v) in &top {
            if *k != "services" {
                text.push_str(&format!("{k}: {v}\n"));
            }
        }
        let dir = tempfile::tempdir().expect("temporary directory");
        resolve_text(&dir, &text);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    fn field_parsers_never_panic(text in "\\PC{0,40}") {
        let env = |name: &str| (name == "SET").then(|| "v".to_string());
        let _ = holos_compose::load::interpolate::interpolate(&text, &env);
        let _ = holos_compose::load::dotenv::parse(&text, &env);
        let _ = holos_compose::load::dotenv::parse_raw(&text);
        let _ = holos_compose::decode::ports::parse_short(&text);
        let _ = holos_compose::decode::reader::parse_duration_ms(&text);
        let _ = holos_compose::decode::reader::parse_bytes(&text);
        let _ = holos_compose::images::resolve_alias(&text);
        let _ = holos_compose::images::format_from_extension(&text);
        let dir = std::env::temp_dir();
        let _ = holos_compose::dockerfile::translate(&text, &dir);
    }

    #[test]
    fn dollar_heavy_strings_never_panic(text in "[${}:?+\\-a-zA-Z_0-9 ]{0,30}") {
        let env = |name: &str| (name == "SET").then(|| "v".to_string());
        let _ = holos_compose::load::interpolate::interpolate(&text, &env);
        let _ = holos_compose::load::dotenv::parse(&format!("K={text}\nexport L=\"{text}\"\n"), &env);
    }
}
