//! The files a manifest bundles: a relative `source` of a file or scaffold
//! resource is found beside the manifest in CCM, and beside the TOML file
//! in holo, so the import copies it into the resource directory.

use super::model::Import;
use super::toml_out::Value;
use std::path::{Component, Path, PathBuf};

/// The kinds whose `source` is a path in the resource directory.
const KINDS_WITH_SOURCE: [&str; 2] = ["file", "scaffold"];

/// Each bundled file to write, relative to the target, with its bytes; a
/// source that is not beside the manifest is a note.
pub fn bundled(import: &mut Import, manifest_dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut notes = Vec::new();
    for resource in &import.resources {
        if !KINDS_WITH_SOURCE.contains(&resource.kind.as_str()) {
            continue;
        }
        let Some(source) = relative_source(&resource.properties) else {
            continue;
        };
        let target = Path::new("usr/share/holo")
            .join(&resource.kind)
            .join(source);
        let found = manifest_dir.join(source);
        match collect(&found, &target, &mut files) {
            Ok(()) => {}
            Err(why) => notes.push((
                resource.line,
                format!(
                    "source {source} {why}, so it is not copied; put it at {} before holo apply",
                    target.display()
                ),
            )),
        }
    }
    import.notes.extend(notes);
    files
}

/// A `source` that names a path below the manifest's directory.
fn relative_source(properties: &[(String, Value)]) -> Option<&str> {
    let source = properties
        .iter()
        .find_map(|(key, value)| match (key.as_str(), value) {
            ("source", Value::Str(source)) => Some(source.as_str()),
            _ => None,
        })?;
    let plain = !source.contains("://") && !source.contains("{{");
    let below = Path::new(source)
        .components()
        .all(|part| matches!(part, Component::Normal(_) | Component::CurDir));
    (plain && below && !source.is_empty()).then_some(source)
}

/// Adds the file at `found`, or the files below the directory, as `target`.
fn collect(found: &Path, target: &Path, files: &mut Vec<(PathBuf, Vec<u8>)>) -> Result<(), String> {
    let meta =
        std::fs::symlink_metadata(found).map_err(|_| "is not beside the manifest".to_string())?;
    if meta.is_file() {
        let bytes = std::fs::read(found).map_err(|err| format!("cannot be read ({err})"))?;
        files.push((target.to_path_buf(), bytes));
        return Ok(());
    }
    if !meta.is_dir() {
        return Err("is neither a file nor a directory".to_string());
    }
    let mut entries: Vec<_> = std::fs::read_dir(found)
        .map_err(|err| format!("cannot be listed ({err})"))?
        .filter_map(Result::ok)
        .map(|entry| entry.file_name())
        .collect();
    entries.sort();
    for name in entries {
        collect(&found.join(&name), &target.join(&name), files)?;
    }
    Ok(())
}
