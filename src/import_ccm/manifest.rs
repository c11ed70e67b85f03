//! A CCM manifest read into what holo writes: the data file's sections and
//! the resources in manifest order, with every part that has no holo form
//! listed by its line.

use super::model::Import;
use super::toml_out::Value;
use holos_compose::yaml::Node;

/// Reads the manifest's top level.
pub fn read(root: &Node) -> Import {
    let mut import = Import::default();
    let Some(entries) = root.as_map() else {
        import.problem(
            root,
            "a manifest is a mapping with data, hierarchy, overrides and ccm",
        );
        return import;
    };
    for (key, value) in entries {
        match key.as_str().unwrap_or_default() {
            "data" => import.data = section(&mut import, value),
            "overrides" => import.overrides = section(&mut import, value),
            "hierarchy" => import.hierarchy = hierarchy(&mut import, value),
            "ccm" => ccm(&mut import, value),
            other => import.problem(key, format!("unknown top-level section {other}; a manifest has data, hierarchy, overrides and ccm")),
        }
    }
    import
}

fn section(import: &mut Import, node: &Node) -> Vec<(String, Value)> {
    match import.value(node) {
        Some(Value::Table(entries)) => entries,
        Some(_) => {
            import.problem(node, "this section must be a mapping");
            Vec::new()
        }
        None => Vec::new(),
    }
}

/// `hierarchy`: `order` as it is, and CCM's `deep` merge, which
/// concatenates lists, as holo's `deep_concat`.
fn hierarchy(import: &mut Import, node: &Node) -> Vec<(String, Value)> {
    let mut entries = section(import, node);
    for (name, value) in &mut entries {
        if name == "merge" {
            match value {
                Value::Str(merge) if merge == "deep" => *merge = "deep_concat".to_string(),
                Value::Str(merge) if merge == "first" => {}
                _ => import.problem(node, "hierarchy merge must be first or deep"),
            }
        }
    }
    entries
}

/// `ccm`: the resources, and what else it holds.
fn ccm(import: &mut Import, node: &Node) {
    let Some(entries) = node.as_map() else {
        import.problem(node, "ccm must be a mapping with resources");
        return;
    };
    for (key, value) in entries {
        let line = key.pos.line;
        match key.as_str().unwrap_or_default() {
            "resources" => super::resources::read(import, value),
            "pre_message" | "post_message" => import
                .notes
                .push((line, format!("{} is not printed by holo apply; left out", key.as_str().unwrap_or_default()))),
            "fail_on_error" => import.notes.push((
                line,
                "fail_on_error: every imported resource requires the one before it, so a failure skips the rest either way".to_string(),
            )),
            "resources_jet_file" => import.problem(
                key,
                "resources_jet_file generates resources from a Jet template at apply time; holo resources are static files, so write them out (a holo generator could)",
            ),
            other => import.problem(
                key,
                format!(
                    "unknown ccm key {other}; ccm has resources, fail_on_error, pre_message, post_message and resources_jet_file"
                ),
            ),
        }
    }
}
