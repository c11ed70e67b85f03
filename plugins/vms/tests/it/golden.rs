//! Golden resolved manifests (`NAME.yaml`) and normalised files
//! (`NAME.config.yaml`) for every example in `share/examples/compose`
//! (the compose format's reference examples and a fuller project). Run with `HOLOS_BLESS=1` to
//! rewrite the goldens after an intended change, then review the diff.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use holo_vms::cli::{Format, HolosCommand};
use holo_vms::holos::run;
use holos_compose::load::Options;

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../share/examples/compose")
}

fn resolved(dir: &Path, format: Format) -> String {
    output(
        dir,
        HolosCommand::Config {
            file_args: Default::default(),
            resolved: true,
            format,
        },
    )
}

fn output(dir: &Path, command: HolosCommand) -> String {
    let options = Options {
        working_dir: dir.to_path_buf(),
        environment: BTreeMap::new(),
        ..Options::default()
    };
    match run(&command, &options) {
        Ok(text) => text,
        Err(errors) => panic!(
            "{} does not resolve:\n{}",
            dir.display(),
            errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        ),
    }
}

#[test]
fn every_example_matches_its_golden_manifest() {
    let examples = examples_dir()
        .canonicalize()
        .expect("share/examples/compose exists");
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&examples)
        .expect("list examples")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    entries.sort();
    assert!(
        entries.len() >= 9,
        "expected the seed-* examples and full-stack"
    );
    let bless = std::env::var_os("HOLOS_BLESS").is_some();
    let mut mismatches = Vec::new();
    for dir in entries {
        let name = dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let golden = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/golden")
            .join(format!("{name}.yaml"));
        let hide_dir = |text: String| text.replace(&dir.display().to_string(), "$EXAMPLE");
        let config_golden = golden.with_extension("config.yaml");
        let got = hide_dir(resolved(&dir, Format::Yaml));
        let got_config = hide_dir(output(
            &dir,
            HolosCommand::Config {
                file_args: Default::default(),
                resolved: false,
                format: Format::Yaml,
            },
        ));
        if bless {
            std::fs::write(&golden, &got).expect("write golden");
            std::fs::write(&config_golden, &got_config).expect("write golden");
            continue;
        }
        for (path, got) in [(&golden, &got), (&config_golden, &got_config)] {
            let want = std::fs::read_to_string(path).unwrap_or_default();
            if *got != want {
                mismatches.push(format!(
                    "{name}: golden {} differs; got:\n{got}",
                    path.display()
                ));
            }
        }
        // The JSON form carries the same manifest as the library returns.
        let from_json: holos_compose::Manifest =
            serde_json::from_str(&resolved(&dir, Format::Json))
                .expect("the JSON manifest reads back");
        let options = Options {
            working_dir: dir.clone(),
            ..Options::default()
        };
        let (_, direct) = holos_compose::resolve(&options).expect("resolves");
        assert_eq!(from_json, direct, "{name}");
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
