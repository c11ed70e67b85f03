//! Carrying out one scaffold: rendering it against its target (`Rendering`,
//! from the template tree and the state record), then apply, force-apply,
//! noop and scrub with the decisions of [`crate::apply`], running `post`
//! after each written file, verification, and the diffs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use holo_plugin::atomic::{self, WriteOptions};
use holo_plugin::process::Command;
use holo_plugin::root_fs::RootFs;
use holo_plugin::run_entities::{self, RunEntity};
use holo_plugin::template::TemplateContext;
use holo_plugin::{Diff, Env, Error, Mode, Outcome, Result, state};
use serde::{Deserialize, Serialize};

use crate::apply::{self, Observed};
use crate::go_engine::GoEngine;
use crate::model::{Ensure, ScaffoldSpec, TemplateEngine};
use crate::render::{self, Lists, Managed, Rendered};

/// `$HOLO_STATE_DIR/scaffold:DIR.toml`: the managed files, and what they
/// were rendered from, for `status` (records written before lack it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub target: String,
    /// The template directory as a system path, or the URL (none when it
    /// has a query string, which may hold a secret).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The SHA-256 of a URL source, when its table gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<String>,
    /// The engine (records written before name it only when it was not
    /// minijinja, the default then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// The other properties the table set, by name only: the record is
    /// readable by all, and `data` may hold what others must not read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_set: Vec<String>,
    #[serde(default)]
    pub files: Vec<Managed>,
}

impl Record {
    /// The record of `spec` with `files`.
    fn of(env: &Env, spec: &ScaffoldSpec, files: Vec<Managed>) -> Record {
        let (source, checksum) = match &spec.url {
            Some(url) => (
                (holo_plugin::download::redact_url(&url.url) == url.url).then(|| url.url.clone()),
                url.sha256.clone(),
            ),
            None => (Some(system_path(env, &env.origin_of(&spec.source))), None),
        };
        let default_delimiters = match spec.engine {
            TemplateEngine::Jet => Some(("[[".to_string(), "]]".to_string())),
            TemplateEngine::Jinja | TemplateEngine::Go => None,
        };
        let also_set = [
            ("data", !spec.data.is_empty()),
            ("post", !spec.post.is_empty()),
            ("skip_empty", spec.skip_empty),
            ("purge", spec.purge),
            ("left_delimiter", spec.delimiters != default_delimiters),
            ("right_delimiter", spec.delimiters != default_delimiters),
        ];
        Record {
            target: spec.name.clone(),
            checksum: source.as_ref().and(checksum),
            source,
            engine: Some(spec.engine.name().to_string()),
            also_set: also_set
                .into_iter()
                .filter(|(_, set)| *set)
                .map(|(property, _)| property.to_string())
                .collect(),
            files,
        }
    }

    fn by_rel(&self) -> BTreeMap<PathBuf, Managed> {
        self.files
            .iter()
            .filter_map(|managed| {
                let rel = Path::new(&managed.path).strip_prefix(&self.target).ok()?;
                Some((rel.to_path_buf(), managed.clone()))
            })
            .collect()
    }
}

/// One scaffold rendered against its target.
pub(crate) struct Rendering {
    files: Vec<Rendered>,
    pub(crate) lists: Lists,
    target_exists: bool,
    /// Files in the target the source does not produce that another
    /// entity of the run manages: never purged, and not in `lists`.
    conflicts: Vec<(PathBuf, RunEntity)>,
}

impl Rendering {
    fn observed(&self) -> Observed {
        Observed {
            target_exists: self.target_exists,
            changed: self.lists.changed.len(),
            stable: self.lists.stable.len(),
            purged: self.lists.purged.len(),
        }
    }
}

pub(crate) fn render(
    env: &Env,
    context: &TemplateContext,
    spec: &ScaffoldSpec,
    record: &Record,
) -> Result<Rendering> {
    let delimiters = spec
        .delimiters
        .as_ref()
        .map(|(left, right)| (left.as_str(), right.as_str()));
    let source = resolve_source(env, spec).map_err(Error::new)?;
    let engine: Box<dyn render::TreeEngine> = match spec.engine {
        TemplateEngine::Jinja => Box::new(
            context
                .tree_templates(&spec.data, delimiters, &source)
                .map_err(Error::new)?,
        ),
        TemplateEngine::Jet => {
            let (left, right) = spec
                .delimiters
                .clone()
                .unwrap_or_else(|| ("[[".into(), "]]".into()));
            Box::new(render::JetEngine::new(
                template_vars(context, spec),
                holo_jet::Delims::new(&left, &right),
            ))
        }
        TemplateEngine::Go => Box::new(
            GoEngine::new(template_vars(context, spec), spec.delimiters.clone())
                .map_err(Error::new)?,
        ),
    };
    let files = render::render_tree_within(
        engine.as_ref(),
        &source,
        spec.skip_empty,
        spec.max_render_size,
    )
    .map_err(Error::new)?;
    let target = env.root_join(&spec.name);
    let fs = env.root_fs()?;
    let mut lists = render::classify(&fs, &files, &target, &record.by_rel());
    let entities = run_entities::of_this_run()?;
    let own_id = format!("scaffold:{}", spec.name);
    let mut conflicts = Vec::new();
    lists.purged.retain(|rel| {
        let path = Path::new(&spec.name).join(rel).display().to_string();
        match apply::managed_elsewhere(&path, &spec.name, &own_id, &entities) {
            Some(other) => {
                conflicts.push((rel.clone(), other.clone()));
                false
            }
            None => true,
        }
    });
    if spec.ensure == Ensure::Absent {
        // After removal the render would list files to add; only what is
        // on disk counts.
        let exists = |rel: &PathBuf| fs.metadata(&target.join(rel)).is_ok();
        lists.changed.retain(exists);
        lists.stable.retain(exists);
    }
    Ok(Rendering {
        files,
        lists,
        target_exists: fs.is_dir(&target),
        conflicts,
    })
}

/// What Jet and Go templates see: what minijinja sees (the facts, the data
/// with the resource's own on top, and the environment), under CCM's names
/// too.
fn template_vars(
    context: &TemplateContext,
    spec: &ScaffoldSpec,
) -> serde_json::Map<String, serde_json::Value> {
    let to_json = |table: &toml::Table| toml_to_json(&toml::Value::Table(table.clone()));
    let mut data = context.data().clone();
    for (key, value) in &spec.data {
        data.insert(key.clone(), value.clone());
    }
    let facts = to_json(context.facts().as_table());
    let data = to_json(&data);
    let environ: serde_json::Map<String, serde_json::Value> = std::env::vars_os()
        .filter_map(|(key, value)| {
            Some((key.into_string().ok()?, value.into_string().ok()?.into()))
        })
        .collect();
    let environ = serde_json::Value::Object(environ);
    let mut vars = serde_json::Map::new();
    for (names, value) in [
        (&["facts", "Facts"][..], facts),
        (&["data", "Data"][..], data),
        (&["env", "environ", "Environ"][..], environ),
    ] {
        for name in names {
            vars.insert(name.to_string(), value.clone());
        }
    }
    vars
}

/// A TOML value as JSON for Jet and Go; a date or time becomes its TOML text.
fn toml_to_json(value: &toml::Value) -> serde_json::Value {
    match value {
        toml::Value::String(s) => s.clone().into(),
        toml::Value::Integer(i) => (*i).into(),
        toml::Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(serde_json::Value::Number)
            .unwrap_or(serde_json::Value::Null),
        toml::Value::Boolean(b) => (*b).into(),
        toml::Value::Datetime(d) => d.to_string().into(),
        toml::Value::Array(items) => items.iter().map(toml_to_json).collect(),
        toml::Value::Table(table) => table
            .iter()
            .map(|(k, v)| (k.clone(), toml_to_json(v)))
            .collect::<serde_json::Map<_, _>>()
            .into(),
    }
}

/// The template directory's real path: in test mode a source below the
/// root is resolved inside it (symlinks as if the root were `/`), so that
/// nothing outside the root is read. A source in the run's cache
/// directory (copied resources) is taken as it is. A URL source is
/// fetched into the cache unless it is there.
pub(crate) fn resolve_source(
    env: &Env,
    spec: &ScaffoldSpec,
) -> std::result::Result<PathBuf, String> {
    if let Some(url) = &spec.url {
        return crate::provider::url::template_tree(env, url);
    }
    let source = spec.source.as_path();
    let missing = |err: &dyn std::fmt::Display| {
        format!(
            "source {} is not a directory ({err}); create it or fix the path",
            env.origin_of(source).display()
        )
    };
    let real = if env.test_mode && source.starts_with(&env.root) {
        let fs = env.root_fs().map_err(|err| err.to_string())?;
        fs.real_path(source).map_err(|err| missing(&err))?
    } else {
        source.to_path_buf()
    };
    match std::fs::metadata(&real) {
        Ok(meta) if meta.is_dir() => Ok(real),
        Ok(_) => Err(missing(&"it is a file")),
        Err(err) => Err(missing(&err)),
    }
}

pub(crate) fn template_context(env: &Env) -> Result<TemplateContext> {
    TemplateContext::load(&env.root, env.test_mode).map_err(|err| Error::new(err.to_string()))
}

pub(crate) fn read_record(env: &Env, id: &str, spec: &ScaffoldSpec) -> Result<Record> {
    Ok(state::read::<Record>(env, id)?.unwrap_or_else(|| Record::of(env, spec, Vec::new())))
}

/// A host path as the system path it stands for: below the root in test
/// mode (`/srv/templates`), itself when it is not below the root.
fn system_path(env: &Env, path: &Path) -> String {
    match path.strip_prefix(&env.root) {
        Ok(below) if env.test_mode => Path::new("/").join(below).display().to_string(),
        _ => path.display().to_string(),
    }
}

pub(crate) fn converge(env: &Env, id: &str, spec: &ScaffoldSpec, mode: Mode) -> Result<Outcome> {
    let context = template_context(env)?;
    let record = read_record(env, id, spec)?;
    let rendering = render(env, &context, spec, &record)?;
    let outcome = carry_out(env, id, spec, mode, (&context, &record, &rendering));
    // Last, after everything on standard output: the driver reads the two
    // streams apart, and this keeps their order the same in every run.
    if spec.purge && spec.ensure == Ensure::Present {
        warn_conflicts(id, spec, &rendering.conflicts)?;
    }
    outcome
}

/// [`converge`] once the scaffold is rendered against its target.
fn carry_out(
    env: &Env,
    id: &str,
    spec: &ScaffoldSpec,
    mode: Mode,
    (context, record, rendering): (&TemplateContext, &Record, &Rendering),
) -> Result<Outcome> {
    let fs = env.root_fs()?;
    let observed = rendering.observed();
    if apply::is_stable(spec.ensure, spec.purge, &observed) {
        return Ok(Outcome::NotChanged);
    }
    if spec.protect
        && mode != Mode::Force
        && let Some(outcome) = protected(&fs, env, spec, rendering, record)
    {
        return Ok(outcome);
    }
    if mode == Mode::Noop {
        println!(
            "{}",
            apply::noop_message(
                spec.ensure,
                apply::affected(spec.ensure, spec.purge, &observed)
            )
        );
        return Ok(Outcome::Changed);
    }
    let target = env.root_join(&spec.name);
    match spec.ensure {
        Ensure::Present => {
            // The target is part of the desired state, even for a source
            // without files.
            fs.create_dir_all(&target)
                .map_err(|err| Error::io("create", &target, &err))?;
            let mut files = write_files(env, id, spec, rendering, record)?;
            let failures = purge_files(&fs, &target, spec, rendering, record, &mut files);
            let record = Record::of(env, spec, files);
            if !failures.is_empty() {
                state::write(env, id, &record)?;
                return Err(removal_failed(&spec.name, &failures));
            }
            let after = render(env, context, spec, &record)?;
            verify(spec, &after)?;
            state::write(env, id, &record)?;
        }
        Ensure::Absent => {
            let managed: Vec<PathBuf> = rendering
                .lists
                .changed
                .iter()
                .chain(&rendering.lists.stable)
                .cloned()
                .collect();
            remove_managed(&fs, &target, &spec.name, &managed)?;
            let after = render(env, context, spec, record)?;
            verify(spec, &after)?;
            state::remove(env, id)?;
        }
    }
    Ok(Outcome::Changed)
}

/// Purges (with `purge`) the files the source does not produce; the
/// files of the record that stay are added to `files`, still the
/// scaffold's to purge (once purge is on, or on the next apply). Gives
/// the removals that failed; as CCM, the others are purged all the same.
fn purge_files(
    fs: &RootFs,
    real_target: &Path,
    spec: &ScaffoldSpec,
    rendering: &Rendering,
    record: &Record,
    files: &mut Vec<Managed>,
) -> Vec<String> {
    let target = Path::new(&spec.name);
    let previous = record.by_rel();
    let mut failures = Vec::new();
    let mut emptied = std::collections::BTreeSet::new();
    for rel in &rendering.lists.purged {
        let purged = spec.purge
            && match remove_file(fs, &real_target.join(rel), &spec.name, rel) {
                Ok(()) => {
                    println!("Purged {}", target.join(rel).display());
                    emptied.extend(rel.ancestors().skip(1).map(Path::to_path_buf));
                    true
                }
                Err(failure) => {
                    eprintln!("!! {failure}");
                    failures.push(failure);
                    false
                }
            };
        if let Some(kept) = previous.get(rel).filter(|_| !purged) {
            files.push(kept.clone());
        }
    }
    // Directories the purge emptied go too, deepest first; never the target.
    for dir in emptied
        .iter()
        .rev()
        .filter(|dir| !dir.as_os_str().is_empty())
    {
        let _ = fs.remove_dir(&real_target.join(dir));
    }
    failures
}

/// Says, for each file in the target that another entity of the run
/// manages, that `purge` leaves it alone, naming both entities.
fn warn_conflicts(id: &str, spec: &ScaffoldSpec, conflicts: &[(PathBuf, RunEntity)]) -> Result<()> {
    if conflicts.is_empty() {
        return Ok(());
    }
    let entities = run_entities::of_this_run()?;
    let own_at = entities
        .iter()
        .find(|entity| entity.id == id)
        .map(|entity| format!(" (found in {})", entity.declared_at))
        .unwrap_or_default();
    for (rel, other) in conflicts {
        let other_at = if other.declared_at.is_empty() {
            String::new()
        } else {
            format!(" (found in {})", other.declared_at)
        };
        eprintln!(
            ">> {id}{own_at} has purge = true, but {} is managed by {}{other_at} in this run, so it is not purged; move that file out of {}, or set purge = false",
            Path::new(&spec.name).join(rel).display(),
            other.id,
            spec.name
        );
    }
    Ok(())
}

/// The outcome that leaves files edited or deleted since the last apply
/// alone (`None` when apply may go ahead); a restore wins over an
/// overwrite. For `present` the files to write are checked, and with
/// `purge` the files to purge; for `absent` the files to remove.
fn protected(
    fs: &RootFs,
    env: &Env,
    spec: &ScaffoldSpec,
    rendering: &Rendering,
    record: &Record,
) -> Option<Outcome> {
    let target = env.root_join(&spec.name);
    let previous = record.by_rel();
    let lists = &rendering.lists;
    let checked: Vec<(&PathBuf, apply::Change)> = match spec.ensure {
        Ensure::Present => lists
            .changed
            .iter()
            .map(|rel| (rel, apply::Change::Write))
            .chain(
                lists
                    .purged
                    .iter()
                    .filter(|_| spec.purge)
                    .map(|rel| (rel, apply::Change::Purge)),
            )
            .collect(),
        Ensure::Absent => lists
            .changed
            .iter()
            .chain(&lists.stable)
            .map(|rel| (rel, apply::Change::Remove))
            .collect(),
    };
    let mut outcome = None;
    for (rel, change) in checked {
        let managed = previous.get(rel);
        let written = match managed {
            Some(managed) if managed.pending => apply::Written::Unfinished,
            Some(managed) => apply::Written::Checksum(managed.written.as_str()),
            None => apply::Written::Never,
        };
        let current = fs
            .read(&target.join(rel))
            .ok()
            .map(|bytes| render::sha256(&bytes));
        let rendered_now = lists.stable.contains(rel);
        match apply::protection(change, written, current.as_deref(), rendered_now) {
            apply::Protection::Proceed => {}
            apply::Protection::RequiresForceRestore => return Some(Outcome::RequiresForceRestore),
            apply::Protection::RequiresForceOverwrite => {
                outcome = Some(Outcome::RequiresForceOverwrite);
            }
        }
    }
    outcome
}

fn verify(spec: &ScaffoldSpec, after: &Rendering) -> Result<()> {
    if apply::is_stable(spec.ensure, spec.purge, &after.observed()) {
        return Ok(());
    }
    let lists = &after.lists;
    let remaining: Vec<String> = match spec.ensure {
        Ensure::Present => lists
            .changed
            .iter()
            .chain(if spec.purge { &lists.purged[..] } else { &[] })
            .map(|rel| rel.display().to_string())
            .collect(),
        Ensure::Absent => lists
            .changed
            .iter()
            .chain(&lists.stable)
            .map(|rel| rel.display().to_string())
            .collect(),
    };
    Err(Error::new(format!(
        "desired state not achieved: {} still differ in {}: {}",
        remaining.len(),
        spec.name,
        remaining.join(", ")
    )))
}

/// Writes every Changed file atomically and runs its `post` commands;
/// returns the managed files for the record. Before the first write the
/// record marks the files to write as pending, and a file stays pending
/// until its post commands succeed, so that a run killed or failed in
/// between renders the file and runs them again next time.
fn write_files(
    env: &Env,
    id: &str,
    spec: &ScaffoldSpec,
    rendering: &Rendering,
    record: &Record,
) -> Result<Vec<Managed>> {
    let target = env.root_join(&spec.name);
    let fs = env.root_fs()?;
    let shown_of = |rel: &Path| Path::new(&spec.name).join(rel).display().to_string();
    let changed = &rendering.lists.changed;
    let mut entries = record.by_rel();
    if !changed.is_empty() {
        for file in rendering
            .files
            .iter()
            .filter(|file| changed.contains(&file.rel))
        {
            entries.insert(
                file.rel.clone(),
                Managed {
                    path: shown_of(&file.rel),
                    rendered: render::sha256(&file.content),
                    written: String::new(),
                    pending: true,
                },
            );
        }
        let intent = Record::of(env, spec, entries.values().cloned().collect());
        state::write(env, id, &intent)?;
    }
    let mut managed = Vec::new();
    for file in &rendering.files {
        let path = target.join(&file.rel);
        let shown = shown_of(&file.rel);
        if changed.contains(&file.rel) {
            if let Some(parent) = path.parent() {
                fs.create_dir_all(parent)
                    .map_err(|err| Error::io("create", parent, &err))?;
            }
            atomic::write(&fs, &path, &file.content, &WriteOptions::mode(file.mode))?;
            println!("Rendered {shown}");
            if let Err(err) = run_post(&fs, spec, file, &path, &shown) {
                // The others that finished are recorded as done; this one
                // stays pending.
                let done: BTreeMap<PathBuf, Managed> = managed
                    .iter()
                    .map(|done: &Managed| (PathBuf::from(&done.path), done.clone()))
                    .collect();
                let files = entries
                    .values()
                    .map(|entry| done.get(Path::new(&entry.path)).unwrap_or(entry).clone())
                    .collect();
                let partial = Record::of(env, spec, files);
                state::write(env, id, &partial)?;
                return Err(err);
            }
        }
        // Stable files hold what was rendered, or what post made of it.
        let written = match fs.read(&path) {
            Ok(bytes) => render::sha256(&bytes),
            Err(err) => return Err(Error::io("read", &path, &err)),
        };
        managed.push(Managed {
            path: shown,
            rendered: render::sha256(&file.content),
            written,
            pending: false,
        });
    }
    Ok(managed)
}

fn run_post(
    fs: &RootFs,
    spec: &ScaffoldSpec,
    file: &Rendered,
    path: &Path,
    shown: &str,
) -> Result<()> {
    let name = file
        .rel
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut posts = spec
        .post
        .iter()
        .filter(|post| post.matches(&name))
        .peekable();
    if posts.peek().is_none() {
        return Ok(());
    }
    // The command resolves the path itself: it gets the one every symlink
    // in the target was already resolved in (inside the root in test mode).
    let real = fs
        .real_path(path)
        .map_err(|err| Error::io("resolve", path, &err))?;
    for post in posts {
        let argv = post.argv(&real.display().to_string()).map_err(Error::new)?;
        let finished = Command::from_argv(&argv)?.run()?;
        if !finished.success() {
            return Err(Error::new(format!(
                "post command {:?} failed for {shown} ({}): {}; it runs again on the next apply",
                post.command,
                finished.status,
                finished.stderr_tail(5).trim()
            )));
        }
    }
    Ok(())
}

/// Removes one file (gone already is fine); the error names it and why.
fn remove_file(
    fs: &RootFs,
    path: &Path,
    target: &str,
    rel: &Path,
) -> std::result::Result<(), String> {
    match fs.remove_file(path) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(format!(
            "cannot remove {}: {err}",
            Path::new(target).join(rel).display()
        )),
    }
}

/// The error after removals that failed, each named (each was also
/// printed when it happened).
fn removal_failed(target: &str, failures: &[String]) -> Error {
    Error::new(format!(
        "{} of the files in {target} could not be removed (the others were): {}; fix the cause and apply again",
        failures.len(),
        failures.join("; ")
    ))
}

/// Removes the managed files, then empty directories deepest first, then
/// the target itself if it is empty. A file that cannot be removed is
/// reported and the others are removed all the same, as CCM does; the
/// error at the end names every failure.
fn remove_managed(fs: &RootFs, target: &Path, name: &str, managed: &[PathBuf]) -> Result<()> {
    let mut dirs = std::collections::BTreeSet::new();
    let mut failures = Vec::new();
    for rel in managed {
        if let Err(failure) = remove_file(fs, &target.join(rel), name, rel) {
            eprintln!("!! {failure}");
            failures.push(failure);
            continue;
        }
        println!("Removed {}", Path::new(name).join(rel).display());
        let mut parent = rel.parent();
        while let Some(dir) = parent.filter(|dir| !dir.as_os_str().is_empty()) {
            dirs.insert(dir.to_path_buf());
            parent = dir.parent();
        }
    }
    let mut dirs: Vec<PathBuf> = dirs.into_iter().collect();
    dirs.sort_by_key(|dir| std::cmp::Reverse(dir.components().count()));
    for dir in dirs {
        // Only empty directories go; others hold unrelated files.
        let _ = fs.remove_dir(&target.join(dir));
    }
    let _ = fs.remove_dir(target);
    if failures.is_empty() {
        Ok(())
    } else {
        Err(removal_failed(name, &failures))
    }
}

/// A scaffold that is no longer declared: its managed files that are
/// unchanged since apply are removed; edited ones stay, with a warning.
pub(crate) fn scrub(env: &Env, id: &str, mode: Mode) -> Result<Outcome> {
    let Some(record) = state::read::<Record>(env, id)? else {
        return Ok(Outcome::NotChanged);
    };
    let target = env.root_join(&record.target);
    let fs = env.root_fs()?;
    let mut unchanged = Vec::new();
    for (rel, managed) in record.by_rel() {
        match fs.read(&target.join(&rel)) {
            // A file whose write did not finish is ours if it holds the
            // rendering.
            Ok(bytes) if managed.pending && render::sha256(&bytes) == managed.rendered => {
                unchanged.push(rel)
            }
            Ok(bytes) if render::sha256(&bytes) == managed.written => unchanged.push(rel),
            Ok(_) => eprintln!(">> {} was edited since apply; it stays", managed.path),
            Err(_) => {}
        }
    }
    if mode == Mode::Noop {
        println!("{}", apply::noop_message(Ensure::Absent, unchanged.len()));
        return Ok(Outcome::Changed);
    }
    remove_managed(&fs, &target, &record.target, &unchanged)?;
    state::remove(env, id)?;
    Ok(Outcome::Changed)
}

/// The files below the target that differ from the desired state, sorted.
fn differing_files<'a>(spec: &ScaffoldSpec, lists: &'a Lists) -> Vec<&'a PathBuf> {
    let mut differing: Vec<&PathBuf> = match spec.ensure {
        Ensure::Present => lists
            .changed
            .iter()
            .chain(if spec.purge { &lists.purged[..] } else { &[] })
            .collect(),
        Ensure::Absent => lists.changed.iter().chain(&lists.stable).collect(),
    };
    differing.sort();
    differing
}

/// One diff per differing file (the `diff-files` extension): the desired
/// file is rendered below the cache as `desired/TARGET/REL`, and the current
/// side is the file itself, so each diff names the real path. A current
/// file that resolves outside the root (test mode) is copied instead, so
/// that the driver never reads outside it.
pub(crate) fn render_file_diffs(env: &Env, id: &str, spec: &ScaffoldSpec) -> Result<Vec<Diff>> {
    let context = template_context(env)?;
    let record = read_record(env, id, spec)?;
    let rendering = render(env, &context, spec, &record)?;
    let target = env.root_join(&spec.name);
    let fs = env.root_fs()?;
    let dir = env.cache_dir.join(state::entity_file_name(id, ".diff"));
    match std::fs::remove_dir_all(&dir) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(Error::io("clear", &dir, &err)),
    }
    let write = |side: &str, rel: &Path, bytes: &[u8], mode: u32| -> Result<PathBuf> {
        let path = dir
            .join(side)
            .join(spec.name.trim_start_matches('/'))
            .join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|err| Error::io("create", parent, &err))?;
        }
        std::fs::write(&path, bytes).map_err(|err| Error::io("write", &path, &err))?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
            .map_err(|err| Error::io("set the mode of", &path, &err))?;
        Ok(path)
    };
    let root = std::fs::canonicalize(&env.root).unwrap_or_else(|_| env.root.clone());
    let mut diffs = Vec::new();
    for rel in differing_files(spec, &rendering.lists) {
        let wanted = rendering
            .files
            .iter()
            .find(|file| file.rel == *rel)
            .filter(|_| spec.ensure == Ensure::Present);
        let desired = match wanted {
            Some(file) => write("desired", rel, &file.content, file.mode)?,
            None => PathBuf::from("/dev/null"),
        };
        let real = target.join(rel);
        let current = if resolves_inside(&real, &root) {
            real
        } else {
            match fs.read(&real) {
                Ok(bytes) => write("current", rel, &bytes, 0o644)?,
                Err(_) => PathBuf::from("/dev/null"),
            }
        };
        diffs.push(Diff {
            desired,
            current,
            header: Vec::new(),
        });
    }
    Ok(diffs)
}

/// True when `path`, or for a missing path its nearest existing ancestor,
/// resolves below `root` and `path` is not a directory.
fn resolves_inside(path: &Path, root: &Path) -> bool {
    if path.is_dir() {
        return false;
    }
    path.ancestors()
        .find_map(|existing| std::fs::canonicalize(existing).ok())
        .is_some_and(|resolved| resolved.starts_with(root))
}

/// One side of the diff: `==> PATH <==` and the content of every file that
/// differs, in path order, like `head` prints several files. Drivers without
/// `diff-files` (Holo 3) get this.
pub(crate) fn render_diff(
    env: &Env,
    id: &str,
    spec: &ScaffoldSpec,
) -> Result<Option<(PathBuf, PathBuf)>> {
    let context = template_context(env)?;
    let record = read_record(env, id, spec)?;
    let rendering = render(env, &context, spec, &record)?;
    let target = env.root_join(&spec.name);
    let fs = env.root_fs()?;
    let differing = differing_files(spec, &rendering.lists);
    if differing.is_empty() {
        return Ok(None);
    }
    let desired_of = |rel: &Path| -> Option<Vec<u8>> {
        if spec.ensure == Ensure::Absent {
            return None;
        }
        rendering
            .files
            .iter()
            .find(|file| file.rel == rel)
            .map(|file| file.content.clone())
    };
    let mut desired = Vec::new();
    let mut current = Vec::new();
    for rel in differing {
        let shown = Path::new(&spec.name).join(rel).display().to_string();
        append_section(&mut desired, &shown, desired_of(rel));
        append_section(&mut current, &shown, fs.read(&target.join(rel)).ok());
    }
    let dir = env.cache_dir.join(state::entity_file_name(id, ".diff"));
    std::fs::create_dir_all(&dir).map_err(|err| Error::io("create", &dir, &err))?;
    let write = |name: &str, bytes: &[u8]| -> Result<PathBuf> {
        let path = dir.join(name);
        std::fs::write(&path, bytes).map_err(|err| Error::io("write", &path, &err))?;
        Ok(path)
    };
    Ok(Some((
        write("desired", &desired)?,
        write("current", &current)?,
    )))
}

fn append_section(out: &mut Vec<u8>, shown: &str, content: Option<Vec<u8>>) {
    match content {
        None => out.extend_from_slice(format!("==> {shown} (absent) <==\n").as_bytes()),
        Some(bytes) => {
            out.extend_from_slice(format!("==> {shown} <==\n").as_bytes());
            if std::str::from_utf8(&bytes).is_ok() {
                out.extend_from_slice(&bytes);
                if !bytes.ends_with(b"\n") && !bytes.is_empty() {
                    out.extend_from_slice(b"\n\\ No newline at end of file\n");
                }
            } else {
                out.extend_from_slice(
                    format!(
                        "(binary, {} bytes, sha256 {})\n",
                        bytes.len(),
                        render::sha256(&bytes)
                    )
                    .as_bytes(),
                );
            }
        }
    }
}

/// The most files `status` lists in a comment.
const STATUS_FILES_SHOWN: usize = 50;

/// The table of `holo-scaffold status DIR`: `ensure` from the target
/// directory, the managed files of the record (or, without one, the files
/// present) as comments, and the properties of the last `holo-scaffold
/// ensure`; without those, `source` is to fill in.
pub(crate) fn status_table(env: &Env, name: &str) -> Result<holo_plugin::StatusTable> {
    use holo_plugin::oneoff::Value;
    if !Path::new(name).is_absolute() {
        return Err(Error::new(format!(
            "holo-scaffold status: {name:?} is not an absolute path; give the target directory as a [[scaffold]] table names it, like /etc/app"
        )));
    }
    let id = format!("scaffold:{name}");
    let record: Option<Record> = state::read(&holo_plugin::oneoff::record_env(env, &id)?, &id)?;
    let ensured = holo_plugin::oneoff::ensured(env, &id)?;
    let fs = env.root_fs()?;
    let target = env.root_join(name);
    let target_exists = fs.is_dir(&target);
    let managed = record.as_ref().map_or(&[][..], |record| &record.files[..]);
    let (ensure, note) = apply::read_back(target_exists, managed.len());
    let mut found = holo_plugin::StatusTable {
        properties: ensured.map(|ensured| ensured.table).unwrap_or_default(),
        ..holo_plugin::StatusTable::default()
    };
    found.properties.insert(
        "ensure".to_string(),
        Value::String(ensure.as_str().to_string()),
    );
    found.notes.extend(note.map(str::to_string));
    let total = if record.is_some() {
        found.notes.push(format!(
            "holo-scaffold's record lists {} managed file{}:",
            managed.len(),
            if managed.len() == 1 { "" } else { "s" }
        ));
        for file in managed.iter().take(STATUS_FILES_SHOWN) {
            let current = fs
                .read(&env.root_join(&file.path))
                .ok()
                .map(|bytes| render::sha256(&bytes));
            found.notes.push(format!(
                "  {} ({})",
                file.path,
                apply::managed_file_state(&file.written, current.as_deref())
            ));
        }
        managed.len()
    } else if target_exists {
        let (present, total) = render::files_below(&fs, &target, STATUS_FILES_KEPT);
        found.notes.push(format!(
            "holo-scaffold has no record of {name}; {total} file{} there now:",
            if total == 1 { " is" } else { "s are" }
        ));
        for rel in present.iter().take(STATUS_FILES_SHOWN) {
            found
                .notes
                .push(format!("  {}", Path::new(name).join(rel).display()));
        }
        total
    } else {
        0
    };
    if total > STATUS_FILES_SHOWN {
        found
            .notes
            .push(format!("  and {} more", total - STATUS_FILES_SHOWN));
    }
    if let Some(record) = &record {
        add_recorded_source(&mut found, record);
    }
    if !found.properties.contains_key("source") {
        found.unknown.push((
            "source".to_string(),
            format!(
                "{}; fill in the template directory or URL (and engine, unless jet)",
                if record.is_some() {
                    "holo-scaffold's record was written before records kept the source (or the source is a URL with a query string, which is not kept), and the files do not say what they were rendered from"
                } else {
                    "neither a holo-scaffold ensure nor a state record says what the files were rendered from"
                }
            ),
        ));
    }
    Ok(found)
}

/// What holo apply rendered from, for a scaffold no ensure declared: the
/// record's source, checksum and engine, and the names of the other
/// properties it set.
fn add_recorded_source(found: &mut holo_plugin::StatusTable, record: &Record) {
    use holo_plugin::oneoff::Value;
    if record.source.is_none() || found.properties.contains_key("source") {
        return;
    }
    // A record without an engine was written when minijinja was the
    // default.
    let engine = Some(
        record
            .engine
            .clone()
            .unwrap_or_else(|| TemplateEngine::Jinja.name().to_string()),
    );
    let properties = [
        ("source", &record.source),
        ("checksum", &record.checksum),
        ("engine", &engine),
    ];
    for (property, value) in properties {
        if let Some(value) = value {
            found
                .properties
                .insert(property.to_string(), Value::String(value.clone()));
        }
    }
    for property in &record.also_set {
        found.unknown.push((
            property.clone(),
            "set, but holo-scaffold's record keeps only its name; copy it from the resource that declared this scaffold".to_string(),
        ));
    }
}

/// The most paths `status` collects below a target without a record.
const STATUS_FILES_KEPT: usize = 10_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_without_the_source_still_read() {
        let old: Record = toml::from_str(
            "target = \"/srv/app\"\n[[files]]\npath = \"/srv/app/a\"\nrendered = \"x\"\nwritten = \"x\"\n",
        )
        .expect("a record written before");
        assert_eq!(old.source, None);
        assert!(old.also_set.is_empty());
        assert_eq!(old.files.len(), 1);
        let new = Record {
            source: Some("/srv/templates".into()),
            engine: Some("jet".into()),
            also_set: vec!["data".into()],
            ..old
        };
        let text = toml::to_string(&new).expect("toml");
        assert_eq!(toml::from_str::<Record>(&text).expect("reads back"), new);
    }

    #[test]
    fn toml_values_reach_jet_as_json_with_dates_as_text() {
        let table: toml::Table =
            toml::from_str("a = 1\nb = 1.5\nc = [true, \"x\"]\nd = 2024-05-01\n[e]\nf = \"g\"\n")
                .expect("toml");
        assert_eq!(
            toml_to_json(&toml::Value::Table(table)),
            serde_json::json!({"a": 1, "b": 1.5, "c": [true, "x"], "d": "2024-05-01", "e": {"f": "g"}})
        );
    }

    #[test]
    fn only_paths_that_resolve_below_the_root_are_shown_as_they_are() {
        let outside = tempfile::tempdir().expect("tempdir");
        std::fs::write(outside.path().join("secret"), "x").expect("write");
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        std::fs::create_dir_all(root.join("srv/app")).expect("mkdir");
        std::fs::write(root.join("srv/app/a.conf"), "a").expect("write");
        std::os::unix::fs::symlink(outside.path(), root.join("srv/out")).expect("symlink");
        std::os::unix::fs::symlink(outside.path().join("secret"), root.join("srv/app/link"))
            .expect("symlink");

        assert!(resolves_inside(&root.join("srv/app/a.conf"), &root));
        assert!(resolves_inside(
            &root.join("srv/app/missing/deep.conf"),
            &root
        ));
        assert!(
            !resolves_inside(&root.join("srv/app"), &root),
            "a directory"
        );
        assert!(!resolves_inside(&root.join("srv/out/secret"), &root));
        assert!(!resolves_inside(&root.join("srv/out/missing.conf"), &root));
        assert!(!resolves_inside(&root.join("srv/app/link"), &root));
    }
}
