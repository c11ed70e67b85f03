//! The resource loader never panics: arbitrary TOML-like text gives either
//! resources or errors that start with the origin path and a line number.

use holo_plugin::Env;
use holo_plugin::resources::{self, Resource};
use proptest::prelude::*;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct Demo {
    name: String,
    value: Option<String>,
    count: Option<u32>,
    flags: Option<Vec<String>>,
}

impl Resource for Demo {
    const KIND: &'static str = "demo";
    const ALIASES: &'static [(&'static str, &'static str)] = &[("values", "value")];
    fn entity_id(&self) -> String {
        format!("demo:{}", self.name)
    }
}

/// Lines built from the pieces TOML resources are made of, so that many
/// inputs parse and reach the later stages of the loader.
fn toml_like_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("[[demo]]".to_string()),
        Just("[demo]".to_string()),
        Just("demo = 1".to_string()),
        Just("template = false".to_string()),
        "(name|value|values|count|flags|require|subscribe|if|unless|protect|template|bogus) = (\"[a-z#:{}% ]{0,8}\"|[0-9]{1,3}|true|\\[\"[a-z#:]{0,5}\"\\]|\\{\\})",
        "[ -~]{0,20}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn loading_never_panics(lines in proptest::collection::vec(toml_like_line(), 0..12)) {
        let dir = tempfile::tempdir().expect("tempdir");
        let resources_dir = dir.path().join("res");
        std::fs::create_dir_all(&resources_dir).expect("mkdir");
        std::fs::write(resources_dir.join("a.toml"), lines.join("\n")).expect("write");
        let cache = dir.path().join("cache");
        let root = dir.path().join("root");
        let env = Env::from_lookup("demo", |key| match key {
            "HOLO_ROOT_DIR" => Some(root.clone().into()),
            "HOLO_CACHE_DIR" => Some(cache.clone().into()),
            "HOLO_RESOURCE_DIR" => Some(resources_dir.clone().into()),
            "HOLO_RESOURCE_ORIGIN" => Some("/origin".into()),
            _ => None,
        })
        .expect("env");
        let text = lines.join("\n");
        match resources::load::<Demo>(&env) {
            Err(err) => {
                for line in err.message().lines() {
                    prop_assert!(line.starts_with("/origin/a.toml:"), "{}", line);
                }
            }
            // A property is loaded only from a key the text has.
            Ok(declared) => {
                for demo in declared.iter().map(|d| &d.resource) {
                    prop_assert!(text.contains("name"), "{:?}", demo);
                    prop_assert!(demo.value.is_none() || text.contains("value"), "{:?}", demo);
                    prop_assert!(demo.flags.is_none() || text.contains("flags"), "{:?}", demo);
                    let count = demo.count.map(|n| n.to_string());
                    prop_assert!(count.is_none_or(|n| text.contains(&n)), "{:?}", demo);
                }
            }
        }
    }
}
