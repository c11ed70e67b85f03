//! Every plugin crate has the shape ARCHITECTURE.md gives: `model.rs` with
//! the resource table, `apply.rs`, `plugin.rs` with the `Plugin` impl, a
//! `lib.rs` of module declarations, a `main.rs` that hands over to the SDK,
//! and every other module named in ARCHITECTURE.md.

use std::path::Path;

/// The plugins built on the SDK's resources (holo-vms has a layout of its
/// own, described in its section).
const PLUGINS: &[&str] = &["archive", "exec", "file", "package", "scaffold", "service"];

/// Holo 3's plugins: the same files, but a scan of their own instead of a
/// TOML resource table, and their modules named in their own section.
const OWN_SCAN: &[&str] = &["files", "users-groups", "ssh-keys", "run-scripts"];

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The lines that are code: no blanks, no comments.
fn code(text: &str) -> Vec<&str> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("//"))
        .collect()
}

#[test]
fn every_plugin_has_model_apply_and_plugin_and_names_its_other_modules() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let architecture = read(&repo.join("ARCHITECTURE.md"));
    let section_of = |heading: &str| {
        architecture
            .split(heading)
            .nth(1)
            .and_then(|rest| rest.split("\n### ").next())
            .unwrap_or_else(|| panic!("ARCHITECTURE.md has no section {heading}"))
            .to_string()
    };
    let kinds = section_of("### `plugins/<kind>/`");
    let holo3 = section_of("### `plugins/files/`");
    for plugin in PLUGINS {
        check_plugin(repo, plugin, &kinds, true);
    }
    for plugin in OWN_SCAN {
        check_plugin(repo, plugin, &holo3, false);
    }
}

fn check_plugin(repo: &Path, plugin: &str, section: &str, with_resource: bool) {
    let src = repo.join("plugins").join(plugin).join("src");
    let model = read(&src.join("model.rs"));
    let plugin_rs = read(&src.join("plugin.rs"));
    assert!(src.join("apply.rs").is_file(), "{plugin}: no apply.rs");
    assert!(
        model.contains("impl Resource for ") || !with_resource,
        "{plugin}: the resource table's Resource impl belongs in model.rs"
    );
    assert!(
        !plugin_rs.contains("impl Resource for "),
        "{plugin}: the Resource impl is in plugin.rs, not model.rs"
    );
    assert!(
        plugin_rs.contains("impl Plugin for "),
        "{plugin}: plugin.rs has no Plugin impl"
    );

    let main = read(&src.join("main.rs"));
    assert_eq!(
        code(&main),
        [
            "fn main() -> std::process::ExitCode {".to_string(),
            format!(
                "holo_plugin::run(holo_{}::{}Plugin)",
                plugin.replace('-', "_"),
                camel_case(plugin)
            ),
            "}".to_string(),
        ],
        "{plugin}: main.rs only hands over to the SDK"
    );

    let lib = read(&src.join("lib.rs"));
    for line in code(&lib) {
        if line.starts_with("pub use plugin::") {
            continue;
        }
        let module = line
            .strip_prefix("pub mod ")
            .and_then(|rest| rest.strip_suffix(';'))
            .unwrap_or_else(|| panic!("{plugin}: lib.rs holds only modules: {line}"));
        let named = match module {
            "model" | "apply" | "plugin" => true,
            "provider" => section.contains("`provider/`"),
            other => {
                section.contains(&format!("`{other}.rs`"))
                    || section.contains(&format!("`{other}/`"))
            }
        };
        assert!(
            named,
            "{plugin}: module {module} is not named in ARCHITECTURE.md's plugins section"
        );
    }
}

/// `users-groups` → `UsersGroups`, the plugin type's prefix.
fn camel_case(name: &str) -> String {
    name.split('-')
        .map(|word| {
            let mut chars = word.chars();
            chars
                .next()
                .map(|first| first.to_ascii_uppercase().to_string() + chars.as_str())
                .unwrap_or_default()
        })
        .collect()
}
