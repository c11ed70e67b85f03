//! Rendering a template tree and classifying the results against the
//! target: every file below `source` is rendered (its name too) with the
//! scaffold's engine; a rendered file is Stable when the target holds the
//! same bytes (or what its `post` commands made of them last time), else
//! Changed; a file in the target that the source does not produce is Purged.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use holo_plugin::root_fs::RootFs;
use holo_plugin::template::TreeTemplates;
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
    /// Written, or about to be, by an apply whose `post` commands have not
    /// all succeeded yet: the next apply renders it and runs them again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pending: bool,
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
/// whitespace only are left out. The tree is read as a root of its own: a
/// symlink in it that leads out of it is refused, and none is ever
/// followed outside it.
pub fn render_tree(
    engine: &dyn TreeEngine,
    source: &Path,
    skip_empty: bool,
) -> Result<Vec<Rendered>, String> {
    render_tree_within(
        engine,
        source,
        skip_empty,
        holo_plugin::template::DEFAULT_MAX_RENDER_SIZE,
    )
}

/// [`render_tree`] with each render (a file's name or content) bounded to
/// `max_output` bytes (`max_render_size`), in every engine.
pub fn render_tree_within(
    engine: &dyn TreeEngine,
    source: &Path,
    skip_empty: bool,
    max_output: usize,
) -> Result<Vec<Rendered>, String> {
    let tree = RootFs::contained_in(source)
        .map_err(|err| format!("cannot open {}: {err}", source.display()))?;
    let mut files = Vec::new();
    collect_files(&tree, source, Path::new(""), &mut files)?;
    if engine.has_partials() {
        files.retain(|rel| !rel.starts_with(PARTIALS));
    }
    let tree_source = TreeSource {
        tree: &tree,
        dir: source,
        max_output,
    };
    let mut rendered = Vec::new();
    let mut seen = BTreeSet::new();
    for rel in files {
        let template_path = source.join(&rel);
        let shown = template_path.display().to_string();
        let _watch = holo_plugin::render_memory::Watch::start(&shown, max_output);
        let mut target_rel = PathBuf::new();
        for component in rel.components() {
            let Some(name) = component.as_os_str().to_str() else {
                return Err(format!(
                    "{}: the file name is not UTF-8; rename the template file to a UTF-8 name (the names of rendered files are templates, and the state record keeps them as text)",
                    template_path.as_os_str().as_bytes().escape_ascii()
                ));
            };
            let name = engine.render(&tree_source, &rel, name, &shown, "file name")?;
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
        let bytes = tree
            .read(&template_path)
            .map_err(|err| format!("cannot read {shown}: {err}"))?;
        let content = match String::from_utf8(bytes) {
            Ok(text) => engine
                .render(&tree_source, &rel, &text, &shown, "content")?
                .into_bytes(),
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
        let mode = tree
            .metadata(&template_path)
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

/// The directory of templates that other templates include but that are
/// not rendered into the target (as in CCM's scaffold); Jet only.
pub const PARTIALS: &str = "_partials";

/// The template tree being rendered, for engines that read other files of
/// it (Jet's include, import and extends).
pub struct TreeSource<'a> {
    tree: &'a RootFs,
    dir: &'a Path,
    /// How many bytes one render may write (`max_render_size`).
    pub max_output: usize,
}

impl TreeSource<'_> {
    /// The text of the file `name` (relative to the tree's top), read
    /// inside the tree.
    pub fn read_text(&self, name: &str) -> Result<String, String> {
        let bytes = self
            .tree
            .read(&self.dir.join(name))
            .map_err(|err| err.to_string())?;
        String::from_utf8(bytes).map_err(|_| "the file is not UTF-8".to_string())
    }

    /// The files below `_partials/`, relative to the tree's top.
    pub fn partials(&self) -> Result<Vec<PathBuf>, String> {
        let dir = self.dir.join(PARTIALS);
        if !self.tree.is_dir(&dir) {
            return Ok(Vec::new());
        }
        let mut files = Vec::new();
        collect_files(self.tree, &dir, Path::new(PARTIALS), &mut files)?;
        Ok(files)
    }

    /// The path of `name` below the tree, for messages.
    pub fn shown(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }
}

/// A template language a scaffold renders with.
pub trait TreeEngine {
    /// Renders `text`, the file name or content (`what`) of the template
    /// at `rel` below the tree; `shown` names it in messages.
    fn render(
        &self,
        tree: &TreeSource<'_>,
        rel: &Path,
        text: &str,
        shown: &str,
        what: &str,
    ) -> Result<String, String>;

    /// Whether files below `_partials/` are left out of the target.
    fn has_partials(&self) -> bool {
        false
    }
}

const FIX_HINT: &str =
    "fix the template or define the value in etc/holo/data.toml or the resource's data";

impl TreeEngine for TreeTemplates {
    fn render(
        &self,
        tree: &TreeSource<'_>,
        _rel: &Path,
        text: &str,
        shown: &str,
        what: &str,
    ) -> Result<String, String> {
        // The SDK's words, as holo-file prints them: the tag, the named
        // undefined value, and what to do.
        self.render_within(text, tree.max_output).map_err(|err| {
            let file = err
                .file()
                .map_or_else(|| shown.to_string(), |name| tree.shown(name));
            format!("{file}:{}: cannot render the {what}: {err}", err.line())
        })
    }
}

/// Jet (CCM's default engine), through holo-jet. Templates see `facts`,
/// `data` and `env` (also as CCM spells them: `Facts`, `Data`, `environ`,
/// `Environ`), the same map as `.`, CCM's `render("_partials/x", .)` and
/// `lookup("data.x", default)` as minijinja has it.
pub struct JetEngine {
    vars: std::rc::Rc<serde_json::Map<String, serde_json::Value>>,
    context: serde_json::Value,
    delimiters: holo_jet::Delims,
}

impl JetEngine {
    pub fn new(
        vars: serde_json::Map<String, serde_json::Value>,
        delimiters: holo_jet::Delims,
    ) -> JetEngine {
        let context = serde_json::Value::Object(vars.clone());
        JetEngine {
            vars: std::rc::Rc::new(vars),
            context,
            delimiters,
        }
    }
}

/// `lookup("facts.os.id", default)`, as minijinja's: a dotted path into
/// the variables, the default when it names nothing.
pub(crate) fn lookup_path(
    vars: &serde_json::Map<String, serde_json::Value>,
    args: &[serde_json::Value],
) -> Result<serde_json::Value, String> {
    let (path, default) = match args {
        [serde_json::Value::String(path)] => (path, None),
        [serde_json::Value::String(path), default] => (path, Some(default)),
        _ => return Err("use lookup(\"facts.os.id\") or lookup(\"data.port\", 8080)".into()),
    };
    let mut segments = path.split('.');
    let mut current = segments.next().and_then(|first| vars.get(first));
    for segment in segments {
        current = current.and_then(|value| match value {
            serde_json::Value::Object(map) => map.get(segment),
            serde_json::Value::Array(items) => {
                segment.parse::<usize>().ok().and_then(|i| items.get(i))
            }
            _ => None,
        });
    }
    match (current, default) {
        (Some(value), _) => Ok(value.clone()),
        (None, Some(default)) => Ok(default.clone()),
        (None, None) => Err(format!(
            "{path:?} found nothing; pass a default: lookup({path:?}, DEFAULT)"
        )),
    }
}

/// Serves the template being rendered from memory and every other name
/// from the tree, never outside it.
struct JetLoader<'a> {
    tree: &'a TreeSource<'a>,
    name: String,
    text: &'a str,
}

impl holo_jet::Loader for JetLoader<'_> {
    fn load(&self, name: &str) -> Result<String, String> {
        if name == self.name {
            return Ok(self.text.to_string());
        }
        self.tree.read_text(name)
    }
}

impl TreeEngine for JetEngine {
    fn render(
        &self,
        tree: &TreeSource<'_>,
        rel: &Path,
        text: &str,
        shown: &str,
        what: &str,
    ) -> Result<String, String> {
        let name = rel.to_string_lossy().to_string();
        let loader = JetLoader {
            tree,
            name: name.clone(),
            text,
        };
        let mut engine = holo_jet::Engine::new(&loader)
            .with_max_output(tree.max_output)
            .with_delims(self.delimiters.clone())
            .with_render_function("render");
        let vars = std::rc::Rc::clone(&self.vars);
        engine.add_function("lookup", move |args| lookup_path(&vars, args));
        engine
            .render(&name, &self.vars, &self.context)
            .map_err(|err| {
                let file = if err.template == name {
                    shown.to_string()
                } else {
                    tree.dir.join(&err.template).display().to_string()
                };
                let hint = match err.kind {
                    holo_jet::ErrorKind::Syntax => "fix the template's syntax",
                    holo_jet::ErrorKind::Undefined => FIX_HINT,
                    holo_jet::ErrorKind::Render => "fix the template",
                };
                format!(
                    "{file}:{}:{}: cannot render the {what}: {}; {hint}",
                    err.line, err.column, err.message
                )
            })
    }

    fn has_partials(&self) -> bool {
        true
    }
}

/// Regular files and symlinks below `dir` (part of the tree `tree`), as
/// paths relative to the walk's start. A symlink must point inside the
/// tree: relative, without climbing above the tree's top.
fn collect_files(
    tree: &RootFs,
    dir: &Path,
    rel: &Path,
    files: &mut Vec<PathBuf>,
) -> Result<(), String> {
    let names = tree
        .read_dir_names(dir)
        .map_err(|err| format!("cannot list {}: {err}", dir.display()))?;
    for name in names {
        let path = dir.join(&name);
        let Ok(meta) = tree.symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            collect_files(tree, &path, &rel.join(&name), files)?;
            continue;
        }
        if meta.is_symlink() {
            let link = tree
                .read_link(&path)
                .map_err(|err| format!("cannot read the symlink {}: {err}", path.display()))?;
            if !stays_below(rel, &link) {
                return Err(format!(
                    "{}: the symlink points to {}, outside the template directory; replace it with the file itself or a relative link inside the directory",
                    path.display(),
                    link.display()
                ));
            }
        }
        files.push(rel.join(&name));
    }
    Ok(())
}

/// Whether the symlink `link`, found in directory `dir` (relative to the
/// tree's top), names a path inside the tree.
fn stays_below(dir: &Path, link: &Path) -> bool {
    let mut depth = dir.components().count();
    for component in link.components() {
        match component {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir if depth > 0 => depth -= 1,
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    true
}

/// Classifies `rendered` against the target directory `target` (the real
/// path, read through `fs`). `record` maps target paths to what was
/// rendered and written last time, so that a file its `post` command
/// changed stays Stable, and a file whose write or post command did not
/// finish is Changed. Purged holds, as in CCM, every file in the target
/// that the source does not produce (whoever wrote it); whether one may go
/// is for the caller to decide.
pub fn classify(
    fs: &RootFs,
    rendered: &[Rendered],
    target: &Path,
    record: &BTreeMap<PathBuf, Managed>,
) -> Lists {
    let mut lists = Lists::default();
    for file in rendered {
        let previous = record.get(&file.rel);
        let current = fs.read(&target.join(&file.rel)).ok();
        let stable = match &current {
            None => false,
            _ if previous.is_some_and(|managed| managed.pending) => false,
            Some(bytes) if *bytes == file.content => true,
            Some(bytes) => previous.is_some_and(|managed| {
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
    let (present, _) = files_below(fs, target, usize::MAX);
    lists.purged = present
        .into_iter()
        .filter(|rel| !produced.contains(rel))
        .collect();
    lists
}

/// The files below `dir` (symbolic links are files here, never followed),
/// relative and sorted, at most `keep` of them, and how many there are.
pub fn files_below(fs: &RootFs, dir: &Path, keep: usize) -> (Vec<PathBuf>, usize) {
    let mut found = Vec::new();
    let mut total = 0;
    let mut pending = vec![PathBuf::new()];
    while let Some(rel) = pending.pop() {
        let Ok(names) = fs.read_dir_names(&dir.join(&rel)) else {
            continue;
        };
        for name in names {
            let child = rel.join(&name);
            let is_dir = fs
                .symlink_metadata(&dir.join(&child))
                .is_ok_and(|meta| meta.is_dir());
            if is_dir {
                pending.push(child);
            } else {
                total += 1;
                if found.len() < keep {
                    found.push(child);
                }
            }
        }
    }
    found.sort();
    (found, total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// The minijinja engine of the template tree `tree`.
    fn engine_in(tree: &Path) -> TreeTemplates {
        let mut data = toml::Table::new();
        data.insert("name".into(), "web".into());
        holo_plugin::template::TemplateContext::new(
            holo_plugin::facts::Facts::default(),
            data,
            std::collections::BTreeMap::new(),
        )
        .tree_templates(&toml::Table::new(), None, tree)
        .expect("engine")
    }

    fn jet() -> JetEngine {
        let mut vars = serde_json::Map::new();
        vars.insert("facts".into(), serde_json::json!({ "hostname": "web01" }));
        vars.insert(
            "data".into(),
            serde_json::json!({ "port": 8080, "log_level": "info", "name": "app" }),
        );
        JetEngine::new(vars, holo_jet::Delims::brackets())
    }

    #[test]
    fn jet_renders_names_contents_and_partials_as_ccm() {
        let dir = tempfile::tempdir().expect("tempdir");
        let source = dir.path().join("src");
        fs::create_dir_all(source.join("_partials")).expect("mkdir");
        fs::create_dir_all(source.join("scripts")).expect("mkdir");
        fs::write(
            source.join("_partials/logging.conf"),
            "log_level = [[ data.log_level ]]\nlog_file = /var/log/myapp/[[ facts.hostname ]].log\n",
        )
        .expect("t");
        fs::write(
            source.join("[[ data.name ]].conf"),
            "[[ include \"_partials/logging.conf\" ]]\n[server]\nport = [[ data.port ]]\n{{ braces stay }}\n",
        )
        .expect("t");
        fs::write(
            source.join("scripts/check.sh"),
            "[[ render(\"_partials/logging.conf\", .) ]]curl localhost:[[ .data.port ]] [[ lookup(\"data.nope\", 9) ]] [[ lookup(\"facts.hostname\") ]]\n",
        )
        .expect("t");
        let rendered = render_tree(&jet(), &source, false).expect("render");
        let rels: Vec<_> = rendered
            .iter()
            .map(|f| f.rel.display().to_string())
            .collect();
        assert_eq!(
            rels,
            ["app.conf", "scripts/check.sh"],
            "_partials is not output"
        );
        assert_eq!(
            String::from_utf8_lossy(&rendered[0].content),
            "log_level = info\nlog_file = /var/log/myapp/web01.log\n\n[server]\nport = 8080\n{{ braces stay }}\n"
        );
        assert_eq!(
            String::from_utf8_lossy(&rendered[1].content),
            "log_level = info\nlog_file = /var/log/myapp/web01.log\ncurl localhost:8080 9 web01\n"
        );
    }

    #[test]
    fn jet_errors_name_the_file_line_and_column() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::create_dir_all(dir.path().join("_partials")).expect("mkdir");
        fs::write(dir.path().join("_partials/p"), "ok\n[[ nope ]]").expect("t");
        fs::write(
            dir.path().join("a.conf"),
            "x\n  [[ include \"_partials/p\" ]]",
        )
        .expect("t");
        let err = render_tree(&jet(), dir.path(), false).expect_err("undefined");
        let partial = dir.path().join("_partials/p").display().to_string();
        assert!(
            err.starts_with(&format!("{partial}:2:4: cannot render the content: \"nope\" is not defined: no variable or global of that name; fix the template")),
            "{err}"
        );
        fs::write(dir.path().join("a.conf"), "[[ if true ]]").expect("t");
        let err = render_tree(&jet(), dir.path(), false).expect_err("unclosed");
        let shown = dir.path().join("a.conf").display().to_string();
        assert!(
            err.starts_with(&format!(
                "{shown}:1:1: cannot render the content: if is never closed: missing [[ end ]]"
            )),
            "{err}"
        );
        fs::write(
            dir.path().join("a.conf"),
            "[[ include \"../../etc/passwd\" ]]",
        )
        .expect("t");
        let err = render_tree(&jet(), dir.path(), false).expect_err("outside");
        assert!(err.contains("leaves the template tree"), "{err}");
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
        let rendered = render_tree(&engine_in(&source), &source, true).expect("render");
        let rels: Vec<_> = rendered
            .iter()
            .map(|f| f.rel.display().to_string())
            .collect();
        assert_eq!(rels, ["conf.d/web.conf", "same.txt"]);
        assert_eq!(rendered[0].content, b"name=web\n");
        let lists = classify(&RootFs::unconfined(), &rendered, &target, &BTreeMap::new());
        assert_eq!(lists.changed, [PathBuf::from("conf.d/web.conf")]);
        assert_eq!(lists.stable, [PathBuf::from("same.txt")]);
        assert_eq!(
            lists.purged,
            [PathBuf::from("stray.txt")],
            "as in CCM, whoever wrote it"
        );
        // A file the scaffold wrote before, no longer produced, is Purged.
        fs::write(target.join("old.txt"), "x").expect("t");
        let record = BTreeMap::from([(
            PathBuf::from("old.txt"),
            Managed {
                path: "/t/old.txt".into(),
                rendered: sha256(b"x"),
                written: sha256(b"x"),
                pending: false,
            },
        )]);
        let lists = classify(&RootFs::unconfined(), &rendered, &target, &record);
        assert_eq!(
            lists.purged,
            [PathBuf::from("old.txt"), PathBuf::from("stray.txt")]
        );
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
                pending: false,
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
    fn a_pending_file_is_changed_even_when_it_holds_the_rendering() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(dir.path().join("a.sh"), "raw").expect("t");
        let rendered = vec![Rendered {
            rel: "a.sh".into(),
            content: b"raw".to_vec(),
            mode: 0o644,
        }];
        let record = BTreeMap::from([(
            PathBuf::from("a.sh"),
            Managed {
                path: "/t/a.sh".into(),
                rendered: sha256(b"raw"),
                written: String::new(),
                pending: true,
            },
        )]);
        let lists = classify(&RootFs::unconfined(), &rendered, dir.path(), &record);
        assert_eq!(lists.changed, [PathBuf::from("a.sh")]);
    }

    #[test]
    fn symlinks_out_of_the_template_tree_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let source = dir.path().join("src");
        fs::create_dir_all(source.join("sub")).expect("mkdir");
        fs::write(source.join("inside.txt"), "in\n").expect("t");
        std::os::unix::fs::symlink("../inside.txt", source.join("sub/link.txt")).expect("ln");
        let files = render_tree(&engine_in(&source), &source, false).expect("inside link");
        assert_eq!(files[1].content, b"in\n");
        for escape in ["/etc/passwd", "../../outside", "../.."] {
            let _ = fs::remove_file(source.join("sub/out"));
            std::os::unix::fs::symlink(escape, source.join("sub/out")).expect("ln");
            let err = render_tree(&engine_in(&source), &source, false).expect_err(escape);
            assert!(err.contains("outside the template directory"), "{err}");
        }
        assert!(stays_below(Path::new("a/b"), Path::new("../../c")));
        assert!(!stays_below(Path::new("a"), Path::new("../../c")));
    }

    #[test]
    fn a_file_name_that_is_not_utf8_is_refused_with_its_path() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
        fs::write(dir.path().join(name), "x").expect("t");
        let err = render_tree(&engine_in(dir.path()), dir.path(), false).expect_err("not UTF-8");
        assert!(
            err.contains("caf\\xe9.txt") && err.contains("rename"),
            "{err}"
        );
    }

    #[test]
    fn bad_templates_name_the_file_and_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(dir.path().join("x.conf"), "ok\n{{ missing.value }}\n").expect("t");
        let err = render_tree(&engine_in(dir.path()), dir.path(), false).expect_err("undefined");
        assert_eq!(
            err,
            format!(
                "{}:2: cannot render the content: in `{{{{ missing.value }}}}`: `missing` is undefined; define it in etc/holo/data.toml or etc/holo/facts.toml, or give a default with `| default('...')`",
                dir.path().join("x.conf").display()
            )
        );
    }

    /// Renders `template` (as `big.conf`) within `limit` bytes.
    fn within(engine: &dyn TreeEngine, template: &str, limit: usize) -> Result<String, String> {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(dir.path().join("big.conf"), template).expect("t");
        render_tree_within(engine, dir.path(), false, limit)
            .map(|files| String::from_utf8_lossy(&files[0].content).into_owned())
    }

    #[test]
    fn every_engine_stops_at_max_render_size() {
        let go = crate::go_engine::GoEngine::new(serde_json::Map::new(), None).expect("go");
        let cases: [(&str, &dyn TreeEngine, &str); 3] = [
            (
                "minijinja",
                &engine_in(Path::new("/nonexistent")),
                "head\n{% for i in range(5000) %}x{% endfor %}\n",
            ),
            ("jet", &jet(), "head\n[[ repeat(\"x\", 5000) ]]\n"),
            ("go", &go, "head\n{{ range 5000 }}x{{ end }}\n"),
        ];
        for (name, engine, template) in cases {
            let err = within(engine, template, 1024).expect_err(name);
            assert!(err.contains("big.conf"), "{name}: {err}");
            assert!(err.contains("1024 bytes"), "{name}: {err}");
            let whole = within(engine, template, 8192).expect(name);
            assert_eq!(whole.len(), 5006, "{name}");
        }
        // Jet: a string doubled in a loop fails before it fills memory.
        let err = within(
            &jet(),
            "[[ s := \"x\" ]][[ range i := split(repeat(\"a,\", 63) + \"a\", \",\") ]][[ s = s + s ]][[ end ]][[ s ]]",
            1 << 20,
        )
        .expect_err("doubling");
        assert!(
            err.contains("big.conf:1:") && err.contains("exceeds 1048576 bytes"),
            "{err}"
        );
    }
}
