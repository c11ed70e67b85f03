//! Rendering a template tree and classifying the results against the
//! target: every file below `source` is rendered (its name too) with the
//! scaffold's engine; a rendered file is Stable when the target holds the
//! same bytes (or what its `post` commands made of them last time), else
//! Changed; a file in the target that the source does not produce is Purged.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use holo_plugin::root_fs::RootFs;
use minijinja::Environment;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// One rendered file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// Path below the target.
    pub rel: PathBuf,
    pub content: Vec<u8>,
    /// Permission bits of the template file.
    pub mode: u32,
}

/// A managed file in the state record: what was rendered, and what was on
/// disk after the `post` commands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Managed {
    pub path: String,
    pub rendered: String,
    pub written: String,
}

/// CCM's three lists, as paths below the target.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lists {
    pub changed: Vec<PathBuf>,
    pub stable: Vec<PathBuf>,
    pub purged: Vec<PathBuf>,
}

pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Renders every file below `source`, sorted by path. Files that are not
/// UTF-8 are copied as they are. With `skip_empty`, files that render to
/// whitespace only are left out.
pub fn render_tree(
    engine: &Environment<'_>,
    source: &Path,
    skip_empty: bool,
) -> Result<Vec<Rendered>, String> {
    let mut files = Vec::new();
    collect_files(source, Path::new(""), &mut files)?;
    let mut rendered = Vec::new();
    let mut seen = BTreeSet::new();
    for rel in files {
        let template_path = source.join(&rel);
        let shown = template_path.display().to_string();
        let mut target_rel = PathBuf::new();
        for component in rel.components() {
            let name = component.as_os_str().to_string_lossy();
            let name = render_text(engine, &name, &shown, "file name")?;
            let valid = Path::new(&name).components().count() == 1
                && matches!(
                    Path::new(&name).components().next(),
                    Some(Component::Normal(_))
                );
            if !valid {
                return Err(format!(
                    "{shown}: the file name renders to {name:?}, which is not one plain name; make the template yield a name without / or .."
                ));
            }
            target_rel.push(name);
        }
        let bytes =
            fs::read(&template_path).map_err(|err| format!("cannot read {shown}: {err}"))?;
        let content = match String::from_utf8(bytes) {
            Ok(text) => render_text(engine, &text, &shown, "content")?.into_bytes(),
            Err(raw) => raw.into_bytes(),
        };
        if skip_empty && content.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if !seen.insert(target_rel.clone()) {
            return Err(format!(
                "{shown}: renders to {}, which another template renders too",
                target_rel.display()
            ));
        }
        let mode = fs::metadata(&template_path)
            .map(|meta| meta.permissions().mode() & 0o777)
            .unwrap_or(0o644);
        rendered.push(Rendered {
            rel: target_rel,
            content,
            mode,
        });
    }
    rendered.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(rendered)
}

fn render_text(
    engine: &Environment<'_>,
    text: &str,
    shown: &str,
    what: &str,
) -> Result<String, String> {
    engine.render_str(text, minijinja::context! {}).map_err(|err| {
        let line = err.line().map(|line| format!(":{line}")).unwrap_or_default();
        format!(
            "{shown}{line}: cannot render the {what}: {}; fix the template or define the value in etc/holo/data.toml or the resource's data",
            err.detail().unwrap_or(&err.kind().to_string())
        )
    })
}

/// Regular files (and symlinks, not followed) below `dir`, as paths
/// relative to the walk's start.
fn collect_files(dir: &Path, rel: &Path, files: &mut Vec<PathBuf>) -> Result<(), String> {
    let read = fs::read_dir(dir).map_err(|err| format!("cannot list {}: {err}", dir.display()))?;
    let mut entries: Vec<_> = read
        .filter_map(Result::ok)
        .map(|entry| (entry.file_name(), entry.file_type().ok()))
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, kind) in entries {
        let Some(kind) = kind else { continue };
        if kind.is_dir() {
            collect_files(&dir.join(&name), &rel.join(&name), files)?;
        } else {
            files.push(rel.join(&name));
        }
    }
    Ok(())
}

/// Every file in the target (symlinks not followed), relative; `fs`
/// keeps the walk inside the root in test mode.
pub fn target_files(fs: &RootFs, target: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if fs.is_dir(target) {
        collect_target_files(fs, target, Path::new(""), &mut files);
    }
    files
}

fn collect_target_files(fs: &RootFs, dir: &Path, rel: &Path, files: &mut Vec<PathBuf>) {
    for name in fs.read_dir_names(dir).unwrap_or_default() {
        let path = dir.join(&name);
        match fs.symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => {
                collect_target_files(fs, &path, &rel.join(&name), files);
            }
            Ok(_) => files.push(rel.join(&name)),
            Err(_) => {}
        }
    }
}

/// Classifies `rendered` against the target directory `target` (the real
/// path, read through `fs`). `record` maps target paths to what was rendered and written
/// last time, so that a file its `post` command changed stays Stable.
pub fn classify(
    fs: &RootFs,
    rendered: &[Rendered],
    target: &Path,
    record: &BTreeMap<PathBuf, Managed>,
) -> Lists {
    let mut lists = Lists::default();
    for file in rendered {
        let current = fs.read(&target.join(&file.rel)).ok();
        let stable = match &current {
            None => false,
            Some(bytes) if *bytes == file.content => true,
            Some(bytes) => record.get(&file.rel).is_some_and(|managed| {
                managed.rendered == sha256(&file.content) && managed.written == sha256(bytes)
            }),
        };
        if stable {
            lists.stable.push(file.rel.clone());
        } else {
            lists.changed.push(file.rel.clone());
        }
    }
    let produced: BTreeSet<&PathBuf> = rendered.iter().map(|file| &file.rel).collect();
    lists.purged = target_files(fs, target)
        .into_iter()
        .filter(|rel| !produced.contains(rel))
        .collect();
    lists
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine() -> Environment<'static> {
        let mut engine = Environment::new();
        let mut syntax = minijinja::syntax::SyntaxConfig::builder();
        syntax.keep_trailing_newline(true);
        engine.set_syntax(syntax.build().expect("syntax"));
        engine.add_global("data", minijinja::context! { name => "web" });
        engine
    }

    #[test]
    fn names_and_contents_are_rendered_and_classified() {
        let dir = tempfile::tempdir().expect("tempdir");
        let source = dir.path().join("src");
        let target = dir.path().join("dst");
        fs::create_dir_all(source.join("conf.d")).expect("mkdir");
        fs::write(
            source.join("conf.d/{{ data.name }}.conf"),
            "name={{ data.name }}\n",
        )
        .expect("t");
        fs::write(source.join("same.txt"), "same\n").expect("t");
        fs::write(source.join("empty.txt"), "  \n").expect("t");
        fs::create_dir_all(&target).expect("mkdir");
        fs::write(target.join("same.txt"), "same\n").expect("t");
        fs::write(target.join("stray.txt"), "x").expect("t");
        let rendered = render_tree(&engine(), &source, true).expect("render");
        let rels: Vec<_> = rendered
            .iter()
            .map(|f| f.rel.display().to_string())
            .collect();
        assert_eq!(rels, ["conf.d/web.conf", "same.txt"]);
        assert_eq!(rendered[0].content, b"name=web\n");
        let lists = classify(&RootFs::unconfined(), &rendered, &target, &BTreeMap::new());
        assert_eq!(lists.changed, [PathBuf::from("conf.d/web.conf")]);
        assert_eq!(lists.stable, [PathBuf::from("same.txt")]);
        assert_eq!(lists.purged, [PathBuf::from("stray.txt")]);
    }

    #[test]
    fn a_post_processed_file_stays_stable() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(dir.path().join("a.go"), "formatted").expect("t");
        let rendered = vec![Rendered {
            rel: "a.go".into(),
            content: b"raw".to_vec(),
            mode: 0o644,
        }];
        let record = BTreeMap::from([(
            PathBuf::from("a.go"),
            Managed {
                path: "/t/a.go".into(),
                rendered: sha256(b"raw"),
                written: sha256(b"formatted"),
            },
        )]);
        assert_eq!(
            classify(&RootFs::unconfined(), &rendered, dir.path(), &record)
                .stable
                .len(),
            1
        );
        assert_eq!(
            classify(
                &RootFs::unconfined(),
                &rendered,
                dir.path(),
                &BTreeMap::new()
            )
            .changed
            .len(),
            1
        );
    }

    #[test]
    fn bad_templates_name_the_file_and_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(dir.path().join("x.conf"), "ok\n{{ missing.value }}\n").expect("t");
        let mut strict = engine();
        strict.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        let err = render_tree(&strict, dir.path(), false).expect_err("undefined");
        assert!(err.contains("x.conf:2:"), "{err}");
    }
}
