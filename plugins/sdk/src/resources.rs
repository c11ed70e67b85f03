//! TOML resources: every `$HOLO_RESOURCE_DIR/*.toml`, in sorted order, with
//! the `[[KIND]]` tables of one plugin turned into typed resources.
//!
//! The loader keeps each table's line, renders every string property as a
//! template (unless the table sets `template = false`), maps CCM aliases,
//! takes out the common properties (`require`, `subscribe`, `if`, `unless`,
//! `protect`, `alias`, `health_checks`: parsed and aliases resolved here,
//! evaluated by [`crate::common`]),
//! rejects unknown properties with a "did you mean", and rejects
//! duplicate entity ids naming both places. Errors read `ORIGIN:LINE: ...`
//! with the origin path, not the temporary copy.
//!
//! Loading is strict, so that a typo never switches management off in
//! silence: a top-level table other than `[[KIND]]` or a key outside any
//! table is an error (resource directories are per plugin, so another
//! kind's table is a typo here too), and every file in the resource
//! directory that the plugin does not read gets a `>>` warning on stderr.
//! A plugin that reads more than the top-level `*.toml` files (source files,
//! template directories) declares it with [`load_reading`].

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use serde::de::{self, DeserializeOwned, Visitor};
use toml::Spanned;
use toml::de::{DeString, DeTable, DeValue, ValueDeserializer};

use crate::common::{self, Guard, HealthCheck, parse_duration};
use crate::env::Env;
use crate::error::{Error, Result};
use crate::parse_cache::{self, FileKey, ParseCache, TableIn, TableOut};
use crate::template::TemplateContext;

/// A resource kind declared as `[[KIND]]` tables.
pub trait Resource: DeserializeOwned {
    /// The table name, e.g. `file` for `[[file]]`.
    const KIND: &'static str;
    /// CCM spellings accepted for properties: `(alias, property)`, e.g.
    /// `("contents", "content")`.
    const ALIASES: &'static [(&'static str, &'static str)] = &[];
    /// The entity id this resource declares, e.g. `file:/etc/motd`.
    fn entity_id(&self) -> String;
}

/// The properties every resource kind accepts.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Common {
    /// `require`: entity ids that must be applied first (`type#name` is
    /// translated to `type:name`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub require: Vec<String>,
    /// `subscribe`: like `require`, and a change there refreshes this entity.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subscribe: Vec<String>,
    /// `if`: a condition; the entity is managed only when it is true.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub only_if: Option<String>,
    /// `unless`: a condition; the entity is managed only when it is false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unless: Option<String>,
    /// `protect`: opt in to (true) or out of (false) protection of manual edits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protect: Option<bool>,
    /// `alias`: a second name that `require` and `subscribe` may use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    /// `health_checks`: Nagios-style commands run after apply.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub health_checks: Vec<HealthCheck>,
    /// `max_render_size`: how many bytes one template of the resource may
    /// render (its properties, and the files of a template tree).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_render_size: Option<usize>,
}

impl Common {
    /// The render budget: `max_render_size`, else 64 MiB.
    pub fn render_budget(&self) -> usize {
        self.max_render_size
            .unwrap_or(crate::template::DEFAULT_MAX_RENDER_SIZE)
    }
}

/// Where a table was declared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file as the plugin reads it (below `HOLO_RESOURCE_DIR`); report
    /// this as `SOURCE:`.
    pub path: PathBuf,
    /// The same file below `HOLO_RESOURCE_ORIGIN`, for messages.
    pub origin: PathBuf,
    /// 1-based line of the table header.
    pub line: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Written whole when UTF-8: `Path::display` goes through lossy
        // chunks, and a scan shows the location of every entity.
        match self.origin.to_str() {
            Some(origin) => {
                f.write_str(origin)?;
                f.write_str(":")?;
                fmt::Display::fmt(&self.line, f)
            }
            None => write!(f, "{}:{}", self.origin.display(), self.line),
        }
    }
}

/// One loaded resource with its common properties and location.
#[derive(Debug, Clone)]
pub struct Declared<R> {
    /// The typed resource.
    pub resource: R,
    /// The common properties.
    pub common: Common,
    /// Where it was declared.
    pub location: Location,
    /// Why `if`/`unless` leave it unmanaged; `None` when it is managed.
    pub skipped: Option<String>,
    /// Where the table's keys start in `source`, for [`Declared::location_of`]
    /// (looked up only for an error, so loading stays cheap).
    key_offsets: Vec<usize>,
    /// The text of the file, shared by its tables.
    source: std::sync::Arc<SourceText>,
}

/// A resource file's text with its line index.
#[derive(Debug)]
struct SourceText {
    text: String,
    lines: LineIndex,
}

impl<R: Resource> Declared<R> {
    /// Where `property` is written in the table (a CCM alias counts as the
    /// property), so that an error about its value names its own line; the
    /// table's line when it is not there.
    pub fn location_of(&self, property: &str) -> Location {
        let source = &self.source;
        let found = self.key_offsets.iter().find_map(|&offset| {
            let key = key_at(source.text.get(offset..)?);
            let name = R::ALIASES
                .iter()
                .find(|(alias, _)| *alias == key)
                .map_or(key, |(_, property)| property);
            (name == property).then(|| source.lines.line_of(offset))
        });
        Location {
            line: found.unwrap_or(self.location.line),
            ..self.location.clone()
        }
    }
}

/// The key that `text` starts with: bare, or quoted without its quotes.
/// The top-level property whose value holds `offset`: the last key written
/// before it.
fn property_around<'a>(text: &'a str, key_offsets: &[usize], offset: usize) -> Option<&'a str> {
    let key = key_offsets.iter().filter(|&&key| key <= offset).max()?;
    Some(key_at(text.get(*key..)?)).filter(|name| !name.is_empty())
}

fn key_at(text: &str) -> &str {
    match text.chars().next() {
        Some(quote @ ('"' | '\'')) => text[1..].split(quote).next().unwrap_or(""),
        _ => {
            let end = text
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                .unwrap_or(text.len());
            &text[..end]
        }
    }
}

impl<R: Resource> Declared<R> {
    /// The scan entry for this resource: its entity id, `SOURCE:` path and
    /// `REQUIRES:`/`SUBSCRIBES:` from `require`/`subscribe`. Add info lines
    /// and the action to the result.
    pub fn scanned<S>(&self, spec: S) -> crate::Scanned<S> {
        let mut scanned =
            crate::Scanned::new(self.resource.entity_id(), spec).source(&self.location.path);
        scanned.requires = self.common.require.clone();
        scanned.subscribes = self.common.subscribe.clone();
        scanned
    }
}

/// Properties the SDK handles for every kind.
const COMMON_PROPERTIES: &[&str] = &[
    "require",
    "subscribe",
    "if",
    "unless",
    "protect",
    "template",
    "alias",
    "health_checks",
    "max_render_size",
];

/// The common properties a one-off gives as flags, with their types
/// (`health_checks`, a list of tables, is only for resource files).
pub(crate) fn common_property_types() -> Vec<(&'static str, crate::plugin::ValueType)> {
    use crate::plugin::ValueType;
    let strings = || ValueType::Array(Box::new(ValueType::String));
    COMMON_PROPERTIES
        .iter()
        .filter_map(|name| {
            let value_type = match *name {
                "require" | "subscribe" => strings(),
                "if" | "unless" | "alias" => ValueType::String,
                "protect" | "template" => ValueType::Bool,
                _ => return None,
            };
            Some((*name, value_type))
        })
        .collect()
}

/// The properties a `[[R::KIND]]` table accepts, by section: `R::KIND`
/// with the struct's fields and the CCM aliases, `common` with the
/// properties every kind accepts, and `health_checks` with the keys of one
/// health check. This is what `holo-ID properties` prints (see
/// [`crate::Plugin::properties`]); the man page test reads it.
pub fn properties<R: Resource>() -> Vec<(String, Vec<&'static str>)> {
    let mut own: Vec<&'static str> = struct_fields::<R>().unwrap_or_default().to_vec();
    own.extend(R::ALIASES.iter().map(|(alias, _)| *alias));
    vec![
        (R::KIND.to_string(), own),
        ("common".to_string(), COMMON_PROPERTIES.to_vec()),
        (
            "health_checks".to_string(),
            HEALTH_CHECK_PROPERTIES.to_vec(),
        ),
    ]
}

/// [`properties`] and the section `KIND.ensure` with the values `ensure`
/// accepts (the variants of `E`), for a kind whose `ensure` is an enum.
pub fn properties_with_ensure<R: Resource, E: DeserializeOwned>() -> Vec<(String, Vec<&'static str>)>
{
    let mut properties = properties::<R>();
    let ensure = enum_variants::<E>().unwrap_or_default();
    properties.push((format!("{}.ensure", R::KIND), ensure.to_vec()));
    properties
}

/// Scans the declared resources one by one with `scan_one`, which gives an
/// entry's result, or that entry's error as `Ok(Err(..))`: the scan goes on,
/// and every entry's error is reported together, one per line, so that one
/// run shows all the bad entries. An `Err` of `scan_one` itself (reading
/// the machine failed, not the entry) ends the scan at once.
pub fn scan_each<T, S>(
    declared: impl IntoIterator<Item = T>,
    mut scan_one: impl FnMut(T) -> Result<Result<S>>,
) -> Result<Vec<S>> {
    let declared = declared.into_iter();
    // Sized up front: an entity is large, and growing the vector would
    // copy every one of them again.
    let mut found = Vec::with_capacity(declared.size_hint().0);
    let mut errors = Vec::new();
    for item in declared {
        match scan_one(item)? {
            Ok(scanned) => found.push(scanned),
            Err(error) => errors.push(error),
        }
    }
    if errors.is_empty() {
        Ok(found)
    } else {
        Err(Error::many(errors))
    }
}

/// Loads every `[[R::KIND]]` table of every `*.toml` in the resource
/// directory. All errors are collected and reported together. Every other
/// file in the resource directory gets a `>>` warning: the plugin reads
/// nothing else there (see [`load_reading`] for a plugin that does); when
/// a table failed to load, only the errors are shown.
pub fn load<R: Resource>(env: &Env) -> Result<Vec<Declared<R>>> {
    load_reading::<R>(env, |_, _| false)
}

/// Like [`load`], for a plugin that reads more of its resource directory
/// than the top-level `*.toml` files: `reads(path, declared)` is asked for
/// every other entry below `HOLO_RESOURCE_DIR` (a directory before its
/// contents) and answers true for what the plugin reads, e.g. a `source`
/// file named by a resource or a template directory; true for a directory
/// covers everything below it. The rest gets a `>>` warning naming it.
pub fn load_reading<R: Resource>(
    env: &Env,
    reads: impl Fn(&Path, &[Declared<R>]) -> bool,
) -> Result<Vec<Declared<R>>> {
    let listing = ResourceListing::of(&env.resource_dir)?;
    let mut loader = Loader::<R>::new(env);
    for path in &listing.toml_files {
        loader.load_file(path);
    }
    // A table that failed to load may name any of the other files: a
    // warning about them would be false, and moving them out would break
    // the mended table. The errors alone are shown.
    if loader.errors.is_empty() {
        let read = |path: &Path| {
            reads(path, &loader.declared)
                || loader.templates.has_read(path)
                || loader.cached_reads.contains(path)
        };
        for unread in listing.unread(&read) {
            warn_unread::<R>(env, &unread);
        }
    }
    let mut declared = loader.finish()?;
    resolve_aliases(&mut declared)?;
    Ok(declared)
}

/// The `ensure` property of kinds whose entities are either there or not
/// (archive, scaffold).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ensure {
    Present,
    Absent,
}

impl Ensure {
    /// Reads the property: unset means `present`.
    pub fn parse(value: Option<&str>) -> std::result::Result<Ensure, String> {
        match value {
            None | Some("present") => Ok(Ensure::Present),
            Some("absent") => Ok(Ensure::Absent),
            Some(other) => {
                one_of("ensure", other, &["present", "absent"])?;
                Ok(Ensure::Present)
            }
        }
    }

    /// The value as written in a resource.
    pub fn as_str(self) -> &'static str {
        match self {
            Ensure::Present => "present",
            Ensure::Absent => "absent",
        }
    }
}

/// Checks the value of an enumerated property against its `allowed`
/// values and gives back the one it is. The error names every allowed
/// value and, when the value looks like a typo of one, that one:
/// `ensure = "lastest" is not known (did you mean "latest"?); use "present",
/// "absent" or "latest"`.
pub fn one_of<'a>(
    property: &str,
    value: &str,
    allowed: &[&'a str],
) -> std::result::Result<&'a str, String> {
    if let Some(found) = allowed.iter().find(|candidate| **candidate == value) {
        return Ok(found);
    }
    let quoted: Vec<String> = allowed.iter().map(|name| format!("{name:?}")).collect();
    let listed = match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.join(""),
    };
    let suggestion = closest(value, allowed)
        .map(|candidate| format!(" (did you mean {candidate:?}?)"))
        .unwrap_or_default();
    Err(format!(
        "{property} = {value:?} is not known{suggestion}; use {listed}"
    ))
}

/// `path` without `.` components and with `..` taken back lexically.
pub fn lexically_normal(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                normal.pop();
            }
            other => normal.push(other),
        }
    }
    normal
}

/// At most this many `>>` lines name entries that nothing reads; the walk
/// stops there and one more line says that more were left out.
pub const MAX_UNREAD_WARNINGS: usize = 100;

/// The top-level `*.toml` files of a resource directory, and the other
/// entries there.
struct ResourceListing {
    dir: PathBuf,
    toml_files: Vec<PathBuf>,
    others: Vec<PathBuf>,
}

/// What the walk of a resource directory found that nothing reads.
#[derive(Debug, PartialEq, Eq)]
enum Unread {
    /// A file, or a directory that holds no file.
    Entry(PathBuf),
    /// A symlink to a directory that holds it (`link -> .`): not followed.
    Loop(PathBuf),
    /// A symlink to a directory outside the resource directory, with its
    /// target: not followed.
    Outside(PathBuf, PathBuf),
    /// The walk stopped at [`MAX_UNREAD_WARNINGS`].
    More,
}

impl ResourceListing {
    fn of(dir: &Path) -> Result<Self> {
        let mut listing = ResourceListing {
            dir: dir.to_path_buf(),
            toml_files: Vec::new(),
            others: Vec::new(),
        };
        let entries = match sorted_entries(dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(listing),
            Err(err) => return Err(Error::io("list resource directory", dir, &err)),
        };
        for path in entries {
            if is_toml_name(&path) && path.is_file() {
                listing.toml_files.push(path);
            } else {
                listing.others.push(path);
            }
        }
        Ok(listing)
    }

    /// The files below the other entries that `reads` does not claim,
    /// directories that hold no file at all, and symlinks not followed.
    fn unread(&self, reads: &dyn Fn(&Path) -> bool) -> Vec<Unread> {
        let mut walk = UnreadWalk {
            reads,
            tree: self.dir.canonicalize().unwrap_or_else(|_| self.dir.clone()),
            walked: HashSet::new(),
            found: Vec::new(),
        };
        if let Some(id) = dir_id(&self.dir) {
            walk.walked.insert(id);
        }
        walk.entries(self.others.clone());
        walk.found
    }
}

/// A directory's device and inode: the same directory reached twice.
fn dir_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// One walk for unread entries: every directory is entered once, whatever
/// symlinks lead to it, and none outside the resource directory.
struct UnreadWalk<'r> {
    reads: &'r dyn Fn(&Path) -> bool,
    /// The resource directory, resolved.
    tree: PathBuf,
    walked: HashSet<(u64, u64)>,
    found: Vec<Unread>,
}

impl UnreadWalk<'_> {
    fn full(&self) -> bool {
        self.found.len() > MAX_UNREAD_WARNINGS
    }

    fn push(&mut self, unread: Unread) {
        if self.found.len() == MAX_UNREAD_WARNINGS {
            self.found.push(Unread::More);
        } else if !self.full() {
            self.found.push(unread);
        }
    }

    /// Walks `entries` of one directory: real entries first, so that what
    /// a symlink leads to is named by its own path where it has one.
    fn entries(&mut self, mut entries: Vec<PathBuf>) {
        entries.sort_by_key(|path| path.is_symlink());
        for entry in entries {
            if self.full() {
                return;
            }
            self.entry(&entry);
        }
    }

    fn entry(&mut self, path: &Path) {
        if (self.reads)(path) {
            return;
        }
        // A symlink counts as what it points to, as the plugin would read it.
        if !path.is_dir() {
            self.push(Unread::Entry(path.to_path_buf()));
        } else if path.is_symlink() {
            self.linked_dir(path);
        } else {
            self.dir(path);
        }
    }

    fn linked_dir(&mut self, link: &Path) {
        let Ok(target) = link.canonicalize() else {
            self.push(Unread::Entry(link.to_path_buf()));
            return;
        };
        if !target.starts_with(&self.tree) {
            let shown = std::fs::read_link(link).unwrap_or(target);
            self.push(Unread::Outside(link.to_path_buf(), shown));
            return;
        }
        let holder = link
            .parent()
            .and_then(|p| p.canonicalize().ok())
            .unwrap_or_default();
        if holder.starts_with(&target) {
            self.push(Unread::Loop(link.to_path_buf()));
        } else {
            // Inside the tree: walked once, here or under its own name.
            self.dir(link);
        }
    }

    fn dir(&mut self, dir: &Path) {
        if let Some(id) = dir_id(dir)
            && !self.walked.insert(id)
        {
            return;
        }
        match sorted_entries(dir) {
            Ok(entries) if entries.is_empty() => self.push(Unread::Entry(dir.to_path_buf())),
            Ok(entries) => self.entries(entries),
            Err(_) => self.push(Unread::Entry(dir.to_path_buf())),
        }
    }
}

fn sorted_entries(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut paths = std::fs::read_dir(dir)?
        .map(|entry| entry.map(|entry| entry.path()))
        .collect::<std::io::Result<Vec<_>>>()?;
    paths.sort();
    Ok(paths)
}

fn is_toml_name(path: &Path) -> bool {
    path.extension().is_some_and(|ext| ext == "toml")
}

/// The `>>` warning for what the walk found, with what to do about it.
fn warn_unread<R: Resource>(env: &Env, unread: &Unread) {
    let top = env.resource_origin.display();
    match unread {
        Unread::Entry(path) => warn_unread_entry::<R>(env, path),
        Unread::Loop(link) => eprintln!(
            ">> {}: not read: a symlink to a directory that holds it; it is not followed, remove it",
            env.origin_of(link).display()
        ),
        Unread::Outside(link, target) => eprintln!(
            ">> {}: not read: a symlink to a directory outside {top} ({}); it is not followed, remove it or move what it should hold into {top}",
            env.origin_of(link).display(),
            target.display()
        ),
        Unread::More => eprintln!(
            ">> {top}: more entries are not read; only the first {MAX_UNREAD_WARNINGS} are named, tidy those up first"
        ),
    }
}

/// The `>>` warning for an entry of the resource directory that the plugin
/// does not read.
fn warn_unread_entry<R: Resource>(env: &Env, path: &Path) {
    let origin = env.origin_of(path);
    let top = env.resource_origin.display();
    let kind = R::KIND;
    let advice = if path.is_dir() {
        "an empty directory; remove it".to_string()
    } else if path.parent() != Some(env.resource_dir.as_path()) {
        if is_toml_name(path) {
            format!("files in subdirectories are not read; move it up into {top}")
        } else {
            format!(
                "files in subdirectories are only read when a resource names them; move it out of {top}"
            )
        }
    } else {
        format!(
            "only *.toml files with [[{kind}]] tables are read; rename it to end in .toml or move it out of {top}"
        )
    };
    eprintln!(">> {}: not read: {advice}", origin.display());
}

struct Loader<'e, R> {
    env: &'e Env,
    fields: Option<&'static [&'static str]>,
    templates: Templates,
    declared: Vec<Declared<R>>,
    /// Where each entity id was declared: its index in `declared`.
    /// Quick to hash: a scan looks up every id it loads.
    ids: holo_protocol::fast_hash::FastMap<String, usize>,
    errors: Vec<Error>,
    cache: ParseCache,
    /// The files that the templates of tables taken from the cache read.
    cached_reads: HashSet<PathBuf>,
}

impl<'e, R: Resource> Loader<'e, R> {
    fn new(env: &'e Env) -> Self {
        Loader {
            env,
            fields: struct_fields::<R>(),
            templates: Templates::new(env),
            declared: Vec::new(),
            ids: Default::default(),
            errors: Vec::new(),
            cache: ParseCache::open(env),
            cached_reads: HashSet::new(),
        }
    }

    fn finish(self) -> Result<Vec<Declared<R>>> {
        self.cache.write(self.env);
        if self.errors.is_empty() {
            Ok(self.declared)
        } else {
            Err(Error::many(self.errors))
        }
    }

    fn load_file(&mut self, path: &Path) {
        let origin = self.env.origin_of(path);
        let Some((source, key)) = self.read_source(path, &origin) else {
            return;
        };
        if !self.load_cached(path, &origin, key, &source) {
            self.parse_file(path, &origin, key, &source);
        }
    }

    /// The text of a resource file and what identifies this version of
    /// it; `None`, with the error kept, when it cannot be read as UTF-8.
    fn read_source(
        &mut self,
        path: &Path,
        origin: &Path,
    ) -> Option<(std::sync::Arc<SourceText>, FileKey)> {
        if origin.to_str().is_none() || path.to_str().is_none() {
            // The scan cache, state records and messages hold paths as
            // UTF-8 text: refuse here, naming the file, rather than fail
            // later on an entity.
            self.errors.push(Error::new(format!(
                "{}: the file name is not valid UTF-8 (shown with U+FFFD for each invalid byte); rename it to a UTF-8 name (for example with mv, or convmv -f latin1 -t utf8)",
                origin.display()
            )));
            return None;
        }
        let (bytes, key) = match read_with_key(path) {
            Ok(read) => read,
            Err(err) => {
                self.errors
                    .push(Error::io("read resource file", origin, &err));
                return None;
            }
        };
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(err) => {
                self.errors.push(Error::new(not_utf8(
                    origin,
                    err.as_bytes(),
                    &err.utf8_error(),
                )));
                return None;
            }
        };
        let lines = LineIndex::new(&text);
        Some((std::sync::Arc::new(SourceText { text, lines }), key))
    }

    /// Parses a resource file's tables, and keeps them in the parse cache
    /// when the file is large enough and loaded without an error.
    fn parse_file(
        &mut self,
        path: &Path,
        origin: &Path,
        key: FileKey,
        source: &std::sync::Arc<SourceText>,
    ) {
        let (errors_before, keep) = (self.errors.len(), self.cache.keep_from);
        self.templates.used = false;
        let (text, lines) = (&source.text, &source.lines);
        let at = |offset: usize| Location {
            path: path.to_path_buf(),
            origin: origin.to_path_buf(),
            line: lines.line_of(offset) + usize::from(opens_trimmed_multiline(text, offset)),
        };
        let mut document = match DeTable::parse(text) {
            Ok(document) => document.into_inner(),
            Err(err) => {
                let location = at(err.span().map_or(0, |span| span.start));
                self.errors.push(Error::new(format!(
                    "{location}: {}; fix the TOML syntax",
                    err.message().trim()
                )));
                return;
            }
        };
        let kind_table = document.remove(R::KIND);
        let mut unknown: Vec<_> = document.iter().collect();
        unknown.sort_by_key(|(key, _)| key.span().start);
        for (key, value) in unknown {
            let location = at(key.span().start);
            let error = self.unknown_top_level(&location, key.get_ref(), value.get_ref());
            self.errors.push(error);
        }
        let Some(value) = kind_table else {
            return;
        };
        let value_start = value.span().start;
        let tables = match value.into_inner() {
            DeValue::Array(array) => array,
            DeValue::Table(_) => {
                self.errors.push(Error::new(format!(
                    "{}: [{kind}] is a single table; write [[{kind}]] (one per resource)",
                    at(value_start),
                    kind = R::KIND
                )));
                return;
            }
            other => {
                self.errors.push(Error::new(format!(
                    "{}: {kind} is a {}, expected [[{kind}]] tables",
                    at(value_start),
                    other.type_str(),
                    kind = R::KIND
                )));
                return;
            }
        };
        let mut kept = (tables.len() >= keep).then(Vec::new);
        for table in tables {
            let span = table.span();
            let location = at(span.start);
            match table.into_inner() {
                DeValue::Table(entries) => {
                    let keep = kept.is_some();
                    match self.load_table(entries, span, &location, &at, source, keep) {
                        Ok((declared, line)) => {
                            match (line, &mut kept) {
                                (Some(line), Some(kept)) => kept.push(line),
                                _ => kept = None,
                            }
                            self.add(declared);
                        }
                        Err(err) => self.errors.push(err),
                    }
                }
                other => self.errors.push(Error::new(format!(
                    "{location}: {} in {}, expected a [[{}]] table",
                    other.type_str(),
                    R::KIND,
                    R::KIND
                ))),
            }
        }
        if let (Some(kept), true) = (kept, self.errors.len() == errors_before) {
            self.keep_parsed(path, key, kept);
        }
    }

    /// Puts a file that loaded without an error into the parse cache, with
    /// what its templates saw when they took part.
    fn keep_parsed(&mut self, path: &Path, key: FileKey, tables: Vec<String>) {
        let context = self.templates.context.as_ref();
        let (fingerprint, looked_up) = match context.filter(|_| self.templates.used) {
            Some(context) => {
                let looked_up: Vec<PathBuf> = context.files_read().into_iter().collect();
                (
                    Some(parse_cache::fingerprint(context, &looked_up)),
                    looked_up,
                )
            }
            None => (None, Vec::new()),
        };
        self.cache.put(path, key, fingerprint, looked_up, tables);
    }

    /// Takes the tables of a file from the parse cache, when it holds them
    /// for this version of the file and what its templates saw is the
    /// same; false when it does not.
    fn load_cached(
        &mut self,
        path: &Path,
        origin: &Path,
        key: FileKey,
        source: &std::sync::Arc<SourceText>,
    ) -> bool {
        let templates = &mut self.templates;
        let fingerprint = |looked_up: &[PathBuf]| {
            let context = templates.loaded().ok()?;
            Some(parse_cache::fingerprint(context, looked_up))
        };
        let Some(hit) = self.cache.lookup(path, key, fingerprint) else {
            return false;
        };
        // The count comes from a file: a damaged one must not size memory.
        let mut declared = Vec::with_capacity(hit.count.min(1 << 16));
        for line in hit.tables {
            let Ok(table) = serde_json::from_str::<TableIn<R, Common>>(line) else {
                return false;
            };
            declared.push(Declared {
                resource: table.resource,
                common: table.common,
                location: Location {
                    path: path.to_path_buf(),
                    origin: origin.to_path_buf(),
                    line: table.line,
                },
                skipped: table.skipped,
                key_offsets: table.key_offsets,
                source: source.clone(),
            });
        }
        self.cached_reads.extend(hit.looked_up.iter().cloned());
        self.cache.keep(path);
        self.declared.reserve(declared.len());
        self.ids.reserve(declared.len());
        for item in declared {
            self.add(item);
        }
        true
    }

    /// A top-level key other than `R::KIND`: a mistyped or foreign table,
    /// or a property written above the first table header.
    fn unknown_top_level(&self, location: &Location, name: &str, value: &DeValue<'_>) -> Error {
        let kind = R::KIND;
        let is_table_array = match value {
            DeValue::Array(items) => {
                !items.is_empty() && items.iter().all(|item| item.get_ref().is_table())
            }
            _ => false,
        };
        if is_table_array || value.is_table() {
            let written = if is_table_array {
                format!("[[{name}]]")
            } else {
                format!("[{name}]")
            };
            let suggestion = closest(name, &[kind])
                .map(|_| format!("did you mean [[{kind}]]? "))
                .unwrap_or_default();
            return Error::new(format!(
                "{location}: unknown table {written}; {suggestion}this resource directory holds only [[{kind}]] tables"
            ));
        }
        let properties: Vec<&str> = self
            .fields
            .unwrap_or_default()
            .iter()
            .chain(COMMON_PROPERTIES)
            .copied()
            .collect();
        if properties.contains(&name) {
            return Error::new(format!(
                "{location}: property {name} is outside any table; move it below a [[{kind}]] header"
            ));
        }
        let suggestion = closest(name, &properties)
            .map(|candidate| format!("did you mean {candidate} (inside a [[{kind}]] table)? "))
            .unwrap_or_default();
        Error::new(format!(
            "{location}: unknown key {name} outside any table; {suggestion}keys belong below a [[{kind}]] header"
        ))
    }

    fn add(&mut self, declared: Declared<R>) {
        let id = declared.resource.entity_id();
        if id.contains('\n') || id.trim() != id {
            // Refused here, where the table's place is known, rather than
            // when the scan reports the entity; at the line of `name`, which
            // the id is made of (the table's line when it is not written).
            self.errors.push(Error::new(format!(
                "{}: the entity id {id:?} would hold a line break or surrounding spaces; an entity id must be one line, so remove them from the name",
                declared.location_of("name")
            )));
            return;
        }
        if let Some(first) = self.ids.get(&id).and_then(|at| self.declared.get(*at)) {
            self.errors.push(Error::new(format!(
                "{}: duplicate entity {id}, first declared at {}; remove or rename one of them",
                declared.location, first.location
            )));
            return;
        }
        common::register(
            &id,
            Guard {
                skipped: declared.skipped.clone(),
                health_checks: declared.common.health_checks.clone(),
                alias: (declared.common.alias.as_ref()).map(|alias| alias_id(&id, alias)),
            },
        );
        self.ids.insert(id, self.declared.len());
        self.declared.push(declared);
    }

    fn load_table(
        &mut self,
        mut table: DeTable<'_>,
        span: std::ops::Range<usize>,
        location: &Location,
        at: &dyn Fn(usize) -> Location,
        source: &std::sync::Arc<SourceText>,
        keep: bool,
    ) -> Result<(Declared<R>, Option<String>)> {
        let kind = R::KIND;
        rename_aliases::<R>(&mut table, at)?;
        let render = match table.remove("template") {
            None => true,
            Some(value) => value.get_ref().as_bool().ok_or_else(|| {
                Error::new(format!(
                    "{}: template must be true or false",
                    at(value.span().start)
                ))
            })?,
        };
        let max_render_size = match table.remove("max_render_size") {
            None => None,
            Some(value) => Some(parse_render_size(value.get_ref()).ok_or_else(|| {
                Error::new(format!(
                    "{}: max_render_size must be a size in bytes, such as 1048576 or \"128M\" (K, M and G count 1024s)",
                    at(value.span().start)
                ))
            })?),
        };
        self.templates.max_render_size =
            max_render_size.unwrap_or(crate::template::DEFAULT_MAX_RENDER_SIZE);
        let skipped = self.evaluate_conditions(&mut table, render, location, at)?;
        if render {
            self.render_properties(&mut table, skipped.is_some(), at)?;
        }
        let key_offsets: Vec<usize> = table.keys().map(|key| key.span().start).collect();
        let mut common = take_common(&mut table, at)?;
        common.max_render_size = max_render_size;
        if let Some(fields) = self.fields {
            for key in table.keys() {
                let name = key.get_ref().as_ref();
                if !fields.contains(&name) {
                    return Err(unknown_property(&at(key.span().start), kind, name, fields));
                }
            }
        }
        // The table as the parse cache keeps it: `None` for what JSON cannot hold.
        let kept = keep.then(|| json_of_table(&table)).flatten();
        let deserializer = ValueDeserializer::from(Spanned::new(span, DeValue::Table(table)));
        let resource = R::deserialize(deserializer).map_err(|err| {
            let place = err
                .span()
                .map_or_else(|| location.clone(), |span| at(span.start));
            let message = err.message().trim().to_string();
            if message.starts_with("missing field") {
                return Error::new(format!(
                    "{place}: [[{kind}]] {message}; add it to the table"
                ));
            }
            // Named unless the message already says which property it is.
            let property = err
                .span()
                .and_then(|span| property_around(&source.text, &key_offsets, span.start))
                .filter(|name| {
                    !message
                        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .any(|word| word == *name)
                });
            let named = property.map_or_else(String::new, |name| format!(" property `{name}`:"));
            Error::new(format!(
                "{place}: [[{kind}]]{named} {message}; fix the property's value"
            ))
        })?;
        let line = kept.and_then(|resource| {
            serde_json::to_string(&TableOut {
                resource,
                common: &common,
                line: location.line,
                skipped: &skipped,
                key_offsets: &key_offsets,
            })
            .ok()
        });
        let declared = Declared {
            resource,
            common,
            location: location.clone(),
            skipped,
            key_offsets,
            source: source.clone(),
        };
        Ok((declared, line))
    }

    /// Renders `if` and `unless` (when `render`) and evaluates them: why
    /// the entity is left unmanaged, if it is.
    ///
    /// The condition comes first: in an entity that `if`/`unless` leave
    /// unmanaged, a template that fails to render is no error, so a value
    /// it uses need not be defined where the entity does not apply.
    fn evaluate_conditions(
        &mut self,
        table: &mut DeTable<'_>,
        render: bool,
        location: &Location,
        at: &dyn Fn(usize) -> Location,
    ) -> Result<Option<String>> {
        if render {
            for (key, value) in table.iter_mut() {
                if CONDITIONS.contains(&key.get_ref().as_ref()) {
                    self.templates
                        .render_value(value, &|offset| at(offset), key.get_ref())?;
                }
            }
        }
        let condition_places: Vec<(&str, Location)> = CONDITIONS
            .into_iter()
            .filter_map(|property| Some((property, at(table.get(property)?.span().start))))
            .collect();
        let condition = |property: &str| {
            table
                .get(property)
                .and_then(|value| value.get_ref().as_str())
                .map(str::to_string)
        };
        let (only_if, unless) = (condition("if"), condition("unless"));
        common::condition_skip(
            only_if.as_deref(),
            unless.as_deref(),
            |property, expression| {
                let place = condition_places
                    .iter()
                    .find(|(name, _)| *name == property)
                    .map_or(location, |(_, place)| place);
                let limit = self.templates.max_render_size;
                let context = self.templates.context(place, property)?;
                let _watch =
                    crate::render_memory::Watch::start(&format!("{place}: {property}"), limit);
                context.is_true(expression).map_err(|err| {
                    Error::new(format!(
                        "{place}: {property} = {expression:?}: {}; write a minijinja expression over facts and data, like facts.os.id == \"debian\"",
                        err.message()
                    ))
                })
            },
        )
    }

    /// Renders the properties other than the conditions; in an unmanaged
    /// (`skipped`) entity, only those that render without an error.
    fn render_properties(
        &mut self,
        table: &mut DeTable<'_>,
        skipped: bool,
        at: &dyn Fn(usize) -> Location,
    ) -> Result<()> {
        for (key, value) in table.iter_mut() {
            if CONDITIONS.contains(&key.get_ref().as_ref()) {
                continue;
            }
            if !skipped {
                self.templates
                    .render_value(value, &|offset| at(offset), key.get_ref())?;
            } else {
                // Unmanaged: rendered where it can be (a mode from
                // data still validates), left as written where not.
                let mut rendered = value.clone();
                if self
                    .templates
                    .render_value(&mut rendered, &|offset| at(offset), key.get_ref())
                    .is_ok()
                {
                    *value = rendered;
                }
            }
        }
        Ok(())
    }
}

/// A resource file's bytes and what identifies this version of it.
fn read_with_key(path: &Path) -> std::io::Result<(Vec<u8>, FileKey)> {
    let mut file = std::fs::File::open(path)?;
    let key = FileKey::of(&file.metadata()?);
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut file, &mut bytes)?;
    Ok((bytes, key))
}

/// A table as JSON, for the parse cache; `None` when it holds what JSON
/// cannot (a datetime, a float that is not finite, an integer beyond i64).
fn json_of_table(table: &DeTable<'_>) -> Option<serde_json::Value> {
    table
        .iter()
        .map(|(key, value)| Some((key.get_ref().to_string(), json_of(value.get_ref())?)))
        .collect::<Option<serde_json::Map<_, _>>>()
        .map(serde_json::Value::Object)
}

fn json_of(value: &DeValue<'_>) -> Option<serde_json::Value> {
    Some(match value {
        DeValue::String(text) => serde_json::Value::String(text.to_string()),
        DeValue::Integer(integer) => {
            serde_json::Value::from(i64::from_str_radix(integer.as_str(), integer.radix()).ok()?)
        }
        DeValue::Float(float) => {
            serde_json::Value::Number(serde_json::Number::from_f64(float.as_str().parse().ok()?)?)
        }
        DeValue::Boolean(value) => serde_json::Value::Bool(*value),
        DeValue::Datetime(_) => return None,
        DeValue::Array(items) => serde_json::Value::Array(
            items
                .iter()
                .map(|item| json_of(item.get_ref()))
                .collect::<Option<_>>()?,
        ),
        DeValue::Table(table) => json_of_table(table)?,
    })
}

fn unknown_property(location: &Location, kind: &str, name: &str, fields: &[&str]) -> Error {
    let known: Vec<&str> = fields.iter().chain(COMMON_PROPERTIES).copied().collect();
    let suggestion = closest(name, &known)
        .map(|candidate| format!("did you mean {candidate}? "))
        .unwrap_or_default();
    Error::new(format!(
        "{location}: unknown property {name} in [[{kind}]]; {suggestion}known properties: {}",
        known.join(", ")
    ))
}

/// The candidate closest to `name`, if it is close enough to be a typo.
pub fn closest<'c>(name: &str, candidates: &[&'c str]) -> Option<&'c str> {
    candidates
        .iter()
        .map(|candidate| (strsim::levenshtein(name, candidate), *candidate))
        .filter(|(distance, candidate)| *distance <= 2.max(candidate.len() / 3))
        .min()
        .map(|(_, candidate)| candidate)
}

/// The properties that decide whether an entity is managed.
const CONDITIONS: [&str; 2] = ["if", "unless"];

/// Renames the resource's aliases to the properties they stand for; a
/// table that sets both is an error.
fn rename_aliases<R: Resource>(
    table: &mut DeTable<'_>,
    at: &dyn Fn(usize) -> Location,
) -> Result<()> {
    let kind = R::KIND;
    for (alias, property) in R::ALIASES {
        if let Some((key, value)) = table.remove_entry(*alias) {
            if table.contains_key(*property) {
                return Err(Error::new(format!(
                    "{}: [[{kind}]] sets both {alias} and {property}; keep only {property}",
                    at(key.span().start)
                )));
            }
            table.insert(
                Spanned::new(key.span(), DeString::Borrowed(property)),
                value,
            );
        }
    }
    Ok(())
}

/// `max_render_size`: a positive number of bytes, or a string with a
/// `K`, `M` or `G` suffix (binary units).
fn parse_render_size(value: &DeValue<'_>) -> Option<usize> {
    let bytes = match value {
        DeValue::Integer(number) => number.as_str().parse::<u64>().ok()?,
        DeValue::String(text) => {
            let text = text.trim();
            let (digits, unit) = match text.char_indices().last()? {
                (at, 'K' | 'k') => (&text[..at], 1u64 << 10),
                (at, 'M' | 'm') => (&text[..at], 1 << 20),
                (at, 'G' | 'g') => (&text[..at], 1 << 30),
                _ => (text, 1),
            };
            digits.trim().parse::<u64>().ok()?.checked_mul(unit)?
        }
        _ => return None,
    };
    usize::try_from(bytes).ok().filter(|bytes| *bytes > 0)
}

fn take_common(table: &mut DeTable<'_>, at: &dyn Fn(usize) -> Location) -> Result<Common> {
    let mut common = Common::default();
    for (property, target) in [
        ("require", &mut common.require),
        ("subscribe", &mut common.subscribe),
    ] {
        if let Some(value) = table.remove(property) {
            *target = references(&value, property, at)?;
        }
    }
    for (property, target) in [("if", &mut common.only_if), ("unless", &mut common.unless)] {
        if let Some(value) = table.remove(property) {
            let text = value.get_ref().as_str().ok_or_else(|| {
                Error::new(format!(
                    "{}: {property} must be a string (a condition)",
                    at(value.span().start)
                ))
            })?;
            *target = Some(text.to_string());
        }
    }
    if let Some(value) = table.remove("alias") {
        let alias = value.get_ref().as_str().map(str::trim).unwrap_or("");
        if alias.is_empty() || alias.contains(['\n', ' ', '#']) {
            return Err(Error::new(format!(
                "{}: alias must be a non-empty name without spaces or '#', like \"reload-app\"",
                at(value.span().start)
            )));
        }
        common.alias = Some(alias.to_string());
    }
    if let Some(value) = table.remove("health_checks") {
        common.health_checks = parse_health_checks(&value, at)?;
    }
    if let Some(value) = table.remove("protect") {
        common.protect = Some(value.get_ref().as_bool().ok_or_else(|| {
            Error::new(format!(
                "{}: protect must be true or false",
                at(value.span().start)
            ))
        })?);
    }
    Ok(common)
}

fn references(
    value: &Spanned<DeValue<'_>>,
    property: &str,
    at: &dyn Fn(usize) -> Location,
) -> Result<Vec<String>> {
    let items: Vec<&Spanned<DeValue<'_>>> = match value.get_ref() {
        DeValue::Array(array) => array.iter().collect(),
        _ => vec![value],
    };
    items
        .into_iter()
        .map(|item| {
            let location = at(item.span().start);
            let text = item.get_ref().as_str().ok_or_else(|| {
                Error::new(format!(
                    "{location}: {property} must be an entity id or a list of them, like \"package:nginx\""
                ))
            })?;
            entity_reference(text).ok_or_else(|| {
                Error::new(format!(
                    "{location}: {property} = {text:?} is not an entity id; write type:name (or CCM's type#name)"
                ))
            })
        })
        .collect()
}

/// `type:name` stays, CCM's `type#name` becomes `type:name`.
pub fn entity_reference(text: &str) -> Option<String> {
    let text = text.trim();
    // Whichever separator comes first: `exec#a:b` names `exec:a:b`.
    let at = text.find([':', '#'])?;
    let (kind, name) = (&text[..at], &text[at + 1..]);
    if kind.is_empty() || name.is_empty() || kind.contains(['/', ' ']) {
        return None;
    }
    Some(format!("{kind}:{name}"))
}

/// Byte offset to 1-based line number.
#[derive(Debug)]
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(text: &str) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(index, _)| index + 1))
            .collect();
        LineIndex { starts }
    }

    fn line_of(&self, offset: usize) -> usize {
        match self.starts.binary_search(&offset) {
            Ok(index) => index + 1,
            Err(index) => index,
        }
    }
}

/// Renders string properties; the template context (facts, data) is built
/// on first use, so resources without templates never gather facts.
/// Templates may read files of the resource directory (`template()`,
/// `readFile()`, includes); those count as read by the plugin.
struct Templates {
    /// The budget of the table being rendered (`max_render_size`).
    max_render_size: usize,
    root: PathBuf,
    test_mode: bool,
    resource_dir: PathBuf,
    resource_origin: PathBuf,
    context: Option<TemplateContext>,
    /// The file being loaded needed facts and data (see [`parse_cache`]).
    used: bool,
}

impl Templates {
    fn new(env: &Env) -> Self {
        Templates {
            max_render_size: crate::template::DEFAULT_MAX_RENDER_SIZE,
            root: env.root.clone(),
            test_mode: env.test_mode,
            resource_dir: env.resource_dir.clone(),
            resource_origin: env.resource_origin.clone(),
            context: None,
            used: false,
        }
    }

    /// Whether a template has read `path` (below the resource directory).
    fn has_read(&self, path: &Path) -> bool {
        self.context
            .as_ref()
            .is_some_and(|context| context.has_read(path))
    }

    fn render_value(
        &mut self,
        value: &mut Spanned<DeValue<'_>>,
        at: &dyn Fn(usize) -> Location,
        property: &str,
    ) -> Result<()> {
        let offset = value.span().start;
        match value.get_mut() {
            DeValue::String(text) if looks_like_template(text) => {
                let rendered = self.render(text, &at(offset), property)?;
                *text = DeString::Owned(rendered);
            }
            DeValue::Array(array) => {
                for item in array.iter_mut() {
                    self.render_value(item, at, property)?;
                }
            }
            DeValue::Table(table) => {
                for (_, item) in table.iter_mut() {
                    self.render_value(item, at, property)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The facts and data for a property, loaded on first use.
    fn context(&mut self, location: &Location, property: &str) -> Result<&TemplateContext> {
        self.used = true;
        self.loaded().map_err(|err| {
            Error::new(format!(
                "{location}: property {property} needs facts and data, but they cannot be loaded: {err}"
            ))
        })
    }

    /// The facts and data, loaded on first use.
    fn loaded(&mut self) -> std::result::Result<&TemplateContext, String> {
        if self.context.is_none() {
            let context =
                TemplateContext::load(&self.root, self.test_mode).map_err(|err| err.to_string())?;
            self.context = Some(context.with_files(&self.resource_dir, &self.resource_origin));
        }
        self.context
            .as_ref()
            .ok_or_else(|| "they are not loaded".to_string())
    }

    fn render(&mut self, text: &str, location: &Location, property: &str) -> Result<String> {
        let origin = self.resource_origin.clone();
        let limit = self.max_render_size;
        let context = self.context(location, property)?;
        let _watch =
            crate::render_memory::Watch::start(&format!("{location}: property {property}"), limit);
        context
            .render_within(text, limit)
            .map_err(|err| match err.file() {
                // Inside a template file: its own place first, then the property.
                Some(file) => Error::new(format!(
                    "{}:{}: {err}; rendered for property {property} at {location}",
                    origin.join(file).display(),
                    err.line()
                )),
                None => {
                    let place = Location {
                        line: location.line + err.line().saturating_sub(1),
                        ..location.clone()
                    };
                    let literally = if err.may_be_literal() {
                        "; set template = false in the table to take the text literally"
                    } else {
                        ""
                    };
                    Error::new(format!("{place}: property {property}: {err}{literally}"))
                }
            })
    }
}

/// A `"""` or `'''` string whose first newline TOML trims: its content
/// starts on the next line, and so do line numbers inside it.
fn opens_trimmed_multiline(text: &str, offset: usize) -> bool {
    let rest = text.get(offset..).unwrap_or("");
    ["\"\"\"\n", "\"\"\"\r\n", "'''\n", "'''\r\n"]
        .iter()
        .any(|open| rest.starts_with(open))
}

fn looks_like_template(text: &str) -> bool {
    TemplateContext::is_template(text)
}

/// The field names of a `#[derive(Deserialize)]` struct, found by asking it
/// to deserialize from a probe; `None` for other shapes (maps, flatten).
pub(crate) fn struct_fields<R: DeserializeOwned>() -> Option<&'static [&'static str]> {
    let mut shape = None;
    let _ = R::deserialize(FieldProbe(&mut shape));
    match shape {
        Some(Shape::Struct(fields)) => Some(fields),
        _ => None,
    }
}

/// The variant names of a `#[derive(Deserialize)]` enum as resources write
/// them (after `rename_all`), found like [`struct_fields`]; `None` for other
/// types. A plugin adds them to [`properties`] as a section `KIND.PROPERTY`,
/// so that the man page test sees every accepted value.
pub fn enum_variants<E: DeserializeOwned>() -> Option<&'static [&'static str]> {
    let mut shape = None;
    let _ = E::deserialize(FieldProbe(&mut shape));
    match shape {
        Some(Shape::Enum(variants)) => Some(variants),
        _ => None,
    }
}

/// What a probed type asked to be deserialized as.
enum Shape {
    Struct(&'static [&'static str]),
    Enum(&'static [&'static str]),
}

struct FieldProbe<'a>(&'a mut Option<Shape>);

#[derive(Debug)]
struct ProbeDone;

impl fmt::Display for ProbeDone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("field probe")
    }
}

impl std::error::Error for ProbeDone {}

impl de::Error for ProbeDone {
    fn custom<T: fmt::Display>(_: T) -> Self {
        ProbeDone
    }
}

impl<'de> de::Deserializer<'de> for FieldProbe<'_> {
    type Error = ProbeDone;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, ProbeDone> {
        Err(ProbeDone)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, ProbeDone> {
        *self.0 = Some(Shape::Struct(fields));
        Err(ProbeDone)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, ProbeDone> {
        *self.0 = Some(Shape::Enum(variants));
        Err(ProbeDone)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map identifier ignored_any
    }
}

/// The message for a resource file that is not UTF-8: the file, the line
/// and the first offending byte.
fn not_utf8(origin: &Path, bytes: &[u8], err: &std::str::Utf8Error) -> String {
    let valid = &bytes[..err.valid_up_to()];
    let line = valid.iter().filter(|byte| **byte == b'\n').count() + 1;
    let column = valid.len()
        - valid
            .iter()
            .rposition(|byte| *byte == b'\n')
            .map_or(0, |at| at + 1)
        + 1;
    let byte = bytes.get(err.valid_up_to()).copied().unwrap_or_default();
    format!(
        "{}:{line}: byte 0x{byte:02X} at column {column} is not UTF-8; TOML resources must be UTF-8, so convert the file (for example with iconv -f latin1 -t utf-8)",
        origin.display()
    )
}

/// The keys of one `health_checks` entry.
pub const HEALTH_CHECK_PROPERTIES: &[&str] = &["name", "command", "tries", "try_sleep", "timeout"];

/// Reads `health_checks`: one table or a list of them, each with
/// `command` and optional `name`, `tries`, `try_sleep` and `timeout`.
fn parse_health_checks(
    value: &Spanned<DeValue<'_>>,
    at: &dyn Fn(usize) -> Location,
) -> Result<Vec<HealthCheck>> {
    let items: Vec<&Spanned<DeValue<'_>>> = match value.get_ref() {
        DeValue::Array(array) => array.iter().collect(),
        _ => vec![value],
    };
    items
        .into_iter()
        .map(|item| parse_health_check(item, at))
        .collect()
}

fn parse_health_check(
    item: &Spanned<DeValue<'_>>,
    at: &dyn Fn(usize) -> Location,
) -> Result<HealthCheck> {
    let place = at(item.span().start);
    let DeValue::Table(table) = item.get_ref() else {
        return Err(Error::new(format!(
            "{place}: health_checks must be tables like {{ command = \"check_http -H localhost\", tries = 3 }}"
        )));
    };
    let mut check = HealthCheck {
        name: String::new(),
        command: String::new(),
        argv: Vec::new(),
        tries: 1,
        try_sleep: Duration::from_secs(1),
        timeout: None,
    };
    for (key, value) in table.iter() {
        let place = at(value.span().start);
        let key = key.get_ref().as_ref();
        let duration = || {
            value
                .get_ref()
                .as_str()
                .and_then(parse_duration)
                .ok_or_else(|| {
                    Error::new(format!(
                        "{place}: health check {key} must be a duration like \"10s\", \"500ms\" or \"1m\""
                    ))
                })
        };
        match key {
            "command" => {
                let text = value.get_ref().as_str().ok_or_else(|| {
                    Error::new(format!("{place}: health check command must be a string"))
                })?;
                check.argv = shell_words::split(text).map_err(|err| {
                    Error::new(format!(
                        "{place}: health check command {text:?}: {err}; balance the quotes (it runs without a shell)"
                    ))
                })?;
                check.command = text.to_string();
            }
            "name" => {
                check.name = value
                    .get_ref()
                    .as_str()
                    .filter(|name| !name.trim().is_empty() && !name.contains('\n'))
                    .ok_or_else(|| {
                        Error::new(format!(
                            "{place}: health check name must be a one-line string like \"check_http\""
                        ))
                    })?
                    .to_string();
            }
            "tries" => {
                check.tries = value
                    .get_ref()
                    .as_integer()
                    .and_then(|number| u32::from_str_radix(number.as_str(), number.radix()).ok())
                    .filter(|tries| *tries >= 1)
                    .ok_or_else(|| {
                        Error::new(format!(
                            "{place}: health check tries must be a whole number of at least 1"
                        ))
                    })?;
            }
            "try_sleep" => check.try_sleep = duration()?,
            "timeout" => check.timeout = Some(duration()?),
            other => {
                return Err(Error::new(format!(
                    "{place}: unknown health check property {other}; use {}",
                    HEALTH_CHECK_PROPERTIES.join(", ")
                )));
            }
        }
    }
    if check.argv.is_empty() {
        return Err(Error::new(format!(
            "{place}: health check without a command; add command = \"...\""
        )));
    }
    if check.name.is_empty() {
        check.name = common::default_check_name(&check.argv);
    }
    Ok(check)
}

/// Replaces references to an alias (`type:alias`) with the entity id, among
/// one plugin's resources. An alias that is also an entity id, or that two
/// resources declare, is an error naming both places.
fn resolve_aliases<R: Resource>(declared: &mut [Declared<R>]) -> Result<()> {
    if declared.iter().all(|item| item.common.alias.is_none()) {
        return Ok(());
    }
    let mut ids: HashMap<String, &Location> = HashMap::new();
    for item in declared.iter() {
        ids.insert(item.resource.entity_id(), &item.location);
    }
    let mut aliases: HashMap<String, (String, &Location)> = HashMap::new();
    let mut errors = Vec::new();
    for item in declared.iter() {
        let Some(alias) = &item.common.alias else {
            continue;
        };
        let id = item.resource.entity_id();
        let alias_id = alias_id(&id, alias);
        if let Some(other) = ids.get(&alias_id) {
            errors.push(Error::new(format!(
                "{}: alias {alias:?} is the entity {alias_id} declared at {other}; choose another alias",
                item.location
            )));
        } else if let Some((_, first)) = aliases.get(&alias_id) {
            errors.push(Error::new(format!(
                "{}: alias {alias:?} is already declared at {first}; every alias must be unique",
                item.location
            )));
        } else {
            aliases.insert(alias_id, (id, &item.location));
        }
    }
    if !errors.is_empty() {
        return Err(Error::many(errors));
    }
    let targets: HashMap<String, String> = aliases
        .into_iter()
        .map(|(alias, (id, _))| (alias, id))
        .collect();
    for item in declared.iter_mut() {
        for reference in item
            .common
            .require
            .iter_mut()
            .chain(item.common.subscribe.iter_mut())
        {
            if let Some(id) = targets.get(reference.as_str()) {
                *reference = id.clone();
            }
        }
    }
    Ok(())
}

/// `file:/etc/a` with alias `conf` gives `file:conf`.
pub fn alias_id(entity_id: &str, alias: &str) -> String {
    let kind = entity_id
        .split_once(':')
        .map_or(entity_id, |(kind, _)| kind);
    format!("{kind}:{alias}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_file_that_is_not_utf8_is_named_with_its_line_and_column() {
        let bytes = b"a = 1\n# caf\xe9\n".to_vec();
        let err = String::from_utf8(bytes).expect_err("not UTF-8");
        let message = super::not_utf8(
            std::path::Path::new("/usr/share/holo/file/a.toml"),
            err.as_bytes(),
            &err.utf8_error(),
        );
        assert!(
            message
                .starts_with("/usr/share/holo/file/a.toml:2: byte 0xE9 at column 6 is not UTF-8;"),
            "{message}"
        );
    }

    use super::*;
    use serde::Deserialize;
    use std::time::Duration;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Demo {
        name: String,
        #[serde(default)]
        content: Option<String>,
        #[serde(default)]
        refresh_only: bool,
    }

    impl Resource for Demo {
        const KIND: &'static str = "demo";
        const ALIASES: &'static [(&'static str, &'static str)] =
            &[("contents", "content"), ("refreshonly", "refresh_only")];
        fn entity_id(&self) -> String {
            format!("demo:{}", self.name)
        }
    }

    struct Fixture {
        _dir: tempfile::TempDir,
        env: Env,
    }

    fn fixture(files: &[(&str, &str)]) -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        let resources = dir.path().join("cache/generated-resources/demo");
        std::fs::create_dir_all(&resources).expect("mkdir");
        for (name, text) in files {
            std::fs::write(resources.join(name), text).expect("write");
        }
        let root = dir.path().join("root");
        let cache = dir.path().join("cache");
        let env = Env::from_lookup("demo", |key| match key {
            "HOLO_ROOT_DIR" => Some(root.clone().into()),
            "HOLO_CACHE_DIR" => Some(cache.clone().into()),
            "HOLO_RESOURCE_DIR" => Some(resources.clone().into()),
            _ => None,
        })
        .expect("env");
        Fixture { _dir: dir, env }
    }

    fn origin(fixture: &Fixture, name: &str) -> String {
        fixture.env.resource_origin.join(name).display().to_string()
    }

    #[test]
    fn tables_load_in_sorted_file_order_with_lines_aliases_and_common() {
        let fixture = fixture(&[
            ("10-b.toml", "[[demo]]\nname = \"b\"\n"),
            (
                "00-a.toml",
                "# comment\n# another\n# and another\n\n[[demo]]\nname = \"a\"\ncontents = \"hi\"\nrefreshonly = true\nrequire = [\"package#nginx\", \"file:/etc/x\"]\nsubscribe = \"service:a\"\nprotect = true\n",
            ),
            ("ignored.txt", "[[demo]]\nname = \"txt\"\n"),
        ]);
        let loaded = load::<Demo>(&fixture.env).expect("loads");
        let names: Vec<&str> = loaded.iter().map(|d| d.resource.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        let a = &loaded[0];
        assert_eq!(a.resource.content.as_deref(), Some("hi"));
        assert!(a.resource.refresh_only);
        assert_eq!(a.common.require, ["package:nginx", "file:/etc/x"]);
        assert_eq!(a.common.subscribe, ["service:a"]);
        assert_eq!(a.common.protect, Some(true));
        assert_eq!(a.location.line, 5);
        assert_eq!(
            a.location.to_string(),
            format!("{}:5", origin(&fixture, "00-a.toml"))
        );
        assert!(a.location.path.starts_with(&fixture.env.resource_dir));
        let scanned = a.scanned(());
        assert_eq!(scanned.id, "demo:a");
        assert_eq!(scanned.sources, std::slice::from_ref(&a.location.path));
        assert_eq!(scanned.requires, ["package:nginx", "file:/etc/x"]);
        assert_eq!(scanned.subscribes, ["service:a"]);
        // Each property's own line, aliases under the property's name.
        assert_eq!(a.location_of("content").line, 7);
        assert_eq!(a.location_of("refresh_only").line, 8);
        assert_eq!(a.location_of("missing").line, 5, "the table's line");
    }

    #[test]
    fn keys_are_read_bare_or_quoted() {
        assert_eq!(key_at("mode = \"0644\""), "mode");
        assert_eq!(key_at("allow_setid=true"), "allow_setid");
        assert_eq!(key_at("\"mode\" = 1"), "mode");
        assert_eq!(key_at("'health-checks' = []"), "health-checks");
        assert_eq!(key_at(""), "");
    }

    #[test]
    fn enumerated_values_name_the_choices_and_the_likely_one() {
        let allowed = ["present", "absent", "latest", "purged"];
        assert_eq!(one_of("ensure", "latest", &allowed), Ok("latest"));
        assert_eq!(
            one_of("ensure", "lastest", &allowed),
            Err("ensure = \"lastest\" is not known (did you mean \"latest\"?); use \"present\", \"absent\", \"latest\" or \"purged\"".to_string())
        );
        assert_eq!(
            one_of("ensure", "running", &["present", "absent"]),
            Err("ensure = \"running\" is not known; use \"present\" or \"absent\"".to_string())
        );
        assert_eq!(
            Ensure::parse(Some("absnt")),
            Err("ensure = \"absnt\" is not known (did you mean \"absent\"?); use \"present\" or \"absent\"".to_string())
        );
    }

    #[test]
    fn unknown_tables_and_keys_outside_tables_are_errors_with_a_suggestion() {
        let fixture = fixture(&[
            ("a.toml", "[[demos]]\nname = \"x\"\n"),
            ("b.toml", "name = \"early\"\n[[demo]]\nname = \"y\"\n"),
            ("c.toml", "\n[[other]]\nname = \"z\"\n\n[settings]\nx = 1\n"),
            ("d.toml", "contnet = \"c\"\nweird = 1\n"),
        ]);
        let err = load::<Demo>(&fixture.env).expect_err("strict");
        let lines: Vec<&str> = err.message().lines().collect();
        let expected = [
            format!(
                "{}:1: unknown table [[demos]]; did you mean [[demo]]? this resource directory holds only [[demo]] tables",
                origin(&fixture, "a.toml")
            ),
            format!(
                "{}:1: property name is outside any table; move it below a [[demo]] header",
                origin(&fixture, "b.toml")
            ),
            format!(
                "{}:2: unknown table [[other]]; this resource directory holds only [[demo]] tables",
                origin(&fixture, "c.toml")
            ),
            format!(
                "{}:5: unknown table [settings]; this resource directory holds only [[demo]] tables",
                origin(&fixture, "c.toml")
            ),
            format!(
                "{}:1: unknown key contnet outside any table; did you mean content (inside a [[demo]] table)? keys belong below a [[demo]] header",
                origin(&fixture, "d.toml")
            ),
            format!(
                "{}:2: unknown key weird outside any table; keys belong below a [[demo]] header",
                origin(&fixture, "d.toml")
            ),
        ];
        assert_eq!(lines, expected, "{err}");
    }

    #[test]
    fn listing_separates_top_level_toml_from_what_a_plugin_may_read() {
        let fixture = fixture(&[("a.toml", "[[demo]]\nname = \"x\"\n"), ("motd.tml", "")]);
        let dir = &fixture.env.resource_dir;
        std::fs::create_dir_all(dir.join("sub/deeper")).expect("mkdir");
        std::fs::create_dir_all(dir.join("templates/web")).expect("mkdir");
        std::fs::create_dir_all(dir.join("empty")).expect("mkdir");
        for name in ["sub/b.toml", "sub/deeper/c.txt", "templates/web/index.html"] {
            std::fs::write(dir.join(name), "").expect("write");
        }
        let listing = ResourceListing::of(dir).expect("list");
        assert_eq!(listing.toml_files, [dir.join("a.toml")]);
        let unread = listing.unread(&|path| path.ends_with("templates"));
        assert_eq!(
            unread,
            [
                Unread::Entry(dir.join("empty")),
                Unread::Entry(dir.join("motd.tml")),
                Unread::Entry(dir.join("sub/b.toml")),
                Unread::Entry(dir.join("sub/deeper/c.txt")),
            ]
        );
    }

    #[test]
    fn duplicate_ids_name_both_files_and_lines() {
        let fixture = fixture(&[
            ("a.toml", "[[demo]]\nname = \"x\"\n"),
            ("b.toml", "\n\n[[demo]]\nname = \"x\"\n"),
        ]);
        let err = load::<Demo>(&fixture.env).expect_err("duplicate");
        let first = format!("{}:1", origin(&fixture, "a.toml"));
        let second = format!("{}:3", origin(&fixture, "b.toml"));
        assert!(
            err.message().contains(&first) && err.message().contains(&second),
            "{err}"
        );
    }

    #[test]
    fn a_line_break_in_the_name_is_reported_at_the_name_line() {
        let fixture = fixture(&[(
            "a.toml",
            "[[demo]]\ncontent = \"y\"\nname = \"\"\"\nx\ny\"\"\"\n",
        )]);
        let err = load::<Demo>(&fixture.env).expect_err("a line break");
        let expected = format!(
            "{}:3: the entity id \"demo:x\\ny\" would hold a line break",
            origin(&fixture, "a.toml")
        );
        assert!(err.message().starts_with(&expected), "{err}");
    }

    #[test]
    fn unknown_property_suggests_the_close_one() {
        let fixture = fixture(&[("a.toml", "[[demo]]\nname = \"x\"\ncontnet = \"y\"\n")]);
        let err = load::<Demo>(&fixture.env).expect_err("unknown");
        let expected = format!("{}:3: unknown property contnet", origin(&fixture, "a.toml"));
        assert!(err.message().starts_with(&expected), "{err}");
        assert!(err.message().contains("did you mean content?"), "{err}");
    }

    #[test]
    fn type_and_syntax_errors_carry_origin_and_line() {
        let fixture = fixture(&[
            ("a.toml", "[[demo]]\nname = \"x\"\nrefresh_only = \"yes\"\n"),
            ("b.toml", "[[demo]]\nname = \n"),
            ("c.toml", "[[demo]]\ncontent = \"c\"\n"),
            ("d.toml", "[demo]\nname = \"d\"\n"),
        ]);
        let err = load::<Demo>(&fixture.env).expect_err("errors");
        let lines: Vec<&str> = err.message().lines().collect();
        assert_eq!(lines.len(), 4, "{err}");
        assert!(
            lines[0].starts_with(&format!("{}:3: ", origin(&fixture, "a.toml"))),
            "{err}"
        );
        assert!(
            lines[0].contains("[[demo]] property `refresh_only`: invalid type: string \"yes\""),
            "a type error names its property: {err}"
        );
        assert!(
            lines[1].starts_with(&format!("{}:2: ", origin(&fixture, "b.toml"))),
            "{err}"
        );
        assert!(
            lines[2].starts_with(&format!("{}:1: ", origin(&fixture, "c.toml"))),
            "{err}"
        );
        assert!(
            lines[2].contains("missing field") && lines[2].contains("add it"),
            "{err}"
        );
        assert!(lines[3].contains("write [[demo]]"), "{err}");
    }

    #[test]
    fn string_properties_are_templates_unless_switched_off() {
        let fixture = fixture(&[(
            "a.toml",
            "[[demo]]\nname = \"{{ facts.hostname }}\"\ncontent = \"on {{ facts.hostname }}\"\n\n[[demo]]\nname = \"raw\"\ntemplate = false\ncontent = \"{{ literal }}\"\n",
        )]);
        let etc = fixture.env.root.join("etc");
        std::fs::create_dir_all(&etc).expect("mkdir");
        std::fs::write(etc.join("hostname"), "box\n").expect("hostname");
        let loaded = load::<Demo>(&fixture.env).expect("loads");
        assert_eq!(loaded[0].resource.name, "box");
        assert_eq!(loaded[0].resource.content.as_deref(), Some("on box"));
        assert_eq!(loaded[1].resource.content.as_deref(), Some("{{ literal }}"));
    }

    #[test]
    fn undefined_template_variable_names_file_and_line() {
        let fixture = fixture(&[(
            "a.toml",
            "[[demo]]\nname = \"x\"\n\ncontent = \"{{ data.nope }}\"\n",
        )]);
        let err = load::<Demo>(&fixture.env).expect_err("undefined");
        let expected = format!("{}:4: property content", origin(&fixture, "a.toml"));
        assert!(err.message().starts_with(&expected), "{err}");
    }

    #[test]
    fn undefined_variable_in_a_multiline_string_names_its_own_line() {
        let fixture = fixture(&[(
            "a.toml",
            "[[demo]]\nname = \"x\"\ncontent = \"\"\"\nfirst\n{{ data.nope }}\n\"\"\"\n",
        )]);
        let err = load::<Demo>(&fixture.env).expect_err("undefined");
        // line 3 opens the string, line 4 is "first", line 5 has the error
        let expected = format!("{}:5: property content", origin(&fixture, "a.toml"));
        assert!(err.message().starts_with(&expected), "{err}");
    }

    #[test]
    fn conditions_are_evaluated_over_facts_and_data() {
        let fixture = fixture(&[(
            "a.toml",
            "[[demo]]\nname = \"debian-only\"\nif = \"facts.os.id == 'debian'\"\n\n[[demo]]\nname = \"not-on-debian\"\nunless = \"facts.os.id == 'debian'\"\n\n[[demo]]\nname = \"both\"\nif = \"data.port == 80\"\nunless = \"false\"\n",
        )]);
        let etc = fixture.env.root.join("etc/holo");
        std::fs::create_dir_all(&etc).expect("mkdir");
        std::fs::write(fixture.env.root.join("etc/os-release"), "ID=debian\n").expect("os");
        std::fs::write(etc.join("data.toml"), "[data]\nport = 80\n").expect("data");
        let loaded = load::<Demo>(&fixture.env).expect("loads");
        assert_eq!(loaded[0].skipped, None);
        assert_eq!(
            loaded[1].skipped.as_deref(),
            Some("condition unless = \"facts.os.id == 'debian'\" is true")
        );
        assert_eq!(loaded[2].skipped, None);
        assert_eq!(
            loaded[0].common.only_if.as_deref(),
            Some("facts.os.id == 'debian'")
        );
    }

    #[test]
    fn a_false_condition_makes_template_errors_no_error() {
        let fixture = fixture(&[(
            "a.toml",
            "[[demo]]\nname = \"elsewhere\"\nif = \"data.enabled\"\ncontent = \"{{ data.only_there.port }}\"\n\n[[demo]]\nname = \"here\"\nunless = \"{{ 'data.enabled' }}\"\ncontent = \"{{ data.name }}\"\n\n[[demo]]\nname = \"renderable\"\nif = \"data.enabled\"\ncontent = \"{{ data.name }}\"\n",
        )]);
        let etc = fixture.env.root.join("etc/holo");
        std::fs::create_dir_all(&etc).expect("mkdir");
        std::fs::write(
            etc.join("data.toml"),
            "[data]\nenabled = false\nname = \"web\"\n",
        )
        .expect("data");
        let loaded = load::<Demo>(&fixture.env).expect("an undefined value in a skipped entity");
        assert_eq!(
            loaded[0].skipped.as_deref(),
            Some("condition if = \"data.enabled\" is false")
        );
        assert_eq!(
            loaded[0].resource.content.as_deref(),
            Some("{{ data.only_there.port }}")
        );
        // A managed one is rendered, and its condition is too.
        assert_eq!(loaded[1].skipped, None);
        assert_eq!(loaded[1].resource.content.as_deref(), Some("web"));
        assert_eq!(loaded[1].common.unless.as_deref(), Some("data.enabled"));
        // An unmanaged one whose templates render is rendered as before.
        assert!(loaded[2].skipped.is_some());
        assert_eq!(loaded[2].resource.content.as_deref(), Some("web"));
    }

    #[test]
    fn a_condition_error_names_the_file_and_line_of_the_property() {
        let fixture = fixture(&[(
            "a.toml",
            "[[demo]]\nname = \"x\"\n\nunless = \"data.missing\"\n",
        )]);
        let err = load::<Demo>(&fixture.env).expect_err("undefined");
        let expected = format!(
            "{}:4: unless = \"data.missing\": ",
            origin(&fixture, "a.toml")
        );
        assert!(err.message().starts_with(&expected), "{err}");
    }

    #[test]
    fn health_checks_parse_with_defaults_and_clear_errors() {
        let fixture = fixture(&[(
            "a.toml",
            "[[demo]]\nname = \"x\"\nhealth_checks = [{ command = \"check_http -H 'local host'\" }, { command = \"true\", tries = 3, try_sleep = \"250ms\", timeout = \"5s\" }]\n",
        )]);
        let loaded = load::<Demo>(&fixture.env).expect("loads");
        let checks = &loaded[0].common.health_checks;
        assert_eq!(checks[0].argv, ["check_http", "-H", "local host"]);
        assert_eq!(
            (checks[0].tries, checks[0].try_sleep, checks[0].timeout),
            (1, Duration::from_secs(1), None)
        );
        assert_eq!(
            (checks[1].tries, checks[1].try_sleep, checks[1].timeout),
            (3, Duration::from_millis(250), Some(Duration::from_secs(5)))
        );
        for (text, message) in [
            (
                "health_checks = [{ command = \"echo 'open\" }]",
                "balance the quotes",
            ),
            (
                "health_checks = [{ command = \"true\", tries = 0 }]",
                "at least 1",
            ),
            (
                "health_checks = [{ command = \"true\", timeout = \"5\" }]",
                "duration like",
            ),
            (
                "health_checks = [{ cmd = \"true\" }]",
                "unknown health check property cmd",
            ),
            ("health_checks = [\"true\"]", "must be tables"),
        ] {
            let case =
                super::tests::fixture(&[("a.toml", &format!("[[demo]]\nname = \"x\"\n{text}\n"))]);
            let err = load::<Demo>(&case.env).expect_err(text);
            let place = format!("{}:3:", origin(&case, "a.toml"));
            assert!(err.message().starts_with(&place), "{err}");
            assert!(err.message().contains(message), "{err}");
        }
    }

    #[test]
    fn aliases_resolve_to_entity_ids_within_the_plugin() {
        let fixture = fixture(&[(
            "a.toml",
            "[[demo]]\nname = \"a long name\"\nalias = \"short\"\n\n[[demo]]\nname = \"b\"\nrequire = [\"demo#short\", \"other:short\"]\nsubscribe = \"demo:short\"\n",
        )]);
        let loaded = load::<Demo>(&fixture.env).expect("loads");
        assert_eq!(
            loaded[1].common.require,
            ["demo:a long name", "other:short"]
        );
        assert_eq!(loaded[1].common.subscribe, ["demo:a long name"]);

        let fixture = super::tests::fixture(&[(
            "a.toml",
            "[[demo]]\nname = \"a\"\nalias = \"b\"\n\n[[demo]]\nname = \"b\"\n\n[[demo]]\nname = \"c\"\nalias = \"x\"\n\n[[demo]]\nname = \"d\"\nalias = \"x\"\n",
        )]);
        let err = load::<Demo>(&fixture.env).expect_err("conflicts");
        let file = origin(&fixture, "a.toml");
        assert!(
            err.message().contains(&format!(
                "{file}:1: alias \"b\" is the entity demo:b declared at {file}:5"
            )),
            "{err}"
        );
        assert!(
            err.message().contains(&format!(
                "{file}:12: alias \"x\" is already declared at {file}:8"
            )),
            "{err}"
        );
    }

    #[test]
    fn references_translate_ccm_form_and_reject_garbage() {
        assert_eq!(
            entity_reference("package#nginx").as_deref(),
            Some("package:nginx")
        );
        assert_eq!(
            entity_reference("file:/etc/a#b").as_deref(),
            Some("file:/etc/a#b")
        );
        assert_eq!(
            entity_reference("exec#sh -c 'a:b'").as_deref(),
            Some("exec:sh -c 'a:b'")
        );
        assert_eq!(entity_reference("nginx"), None);
        assert_eq!(entity_reference("/etc/x:y"), None);
    }

    #[test]
    fn closest_finds_typos_only() {
        assert_eq!(closest("contnet", &["content", "owner"]), Some("content"));
        assert_eq!(closest("owner", &["owner"]), Some("owner"));
        assert_eq!(closest("zzzzzz", &["content", "owner"]), None);
    }

    #[test]
    fn struct_fields_are_probed() {
        assert_eq!(
            struct_fields::<Demo>(),
            Some(&["name", "content", "refresh_only"][..])
        );
        assert_eq!(struct_fields::<HashMap<String, String>>(), None);
        assert_eq!(enum_variants::<Ensure>(), Some(&["present", "absent"][..]));
        assert_eq!(enum_variants::<Demo>(), None);
    }

    #[test]
    fn properties_are_the_fields_the_aliases_and_the_common_ones() {
        let properties = properties::<Demo>();
        let sections: Vec<&str> = properties.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(sections, ["demo", "common", "health_checks"]);
        assert_eq!(
            properties[0].1,
            ["name", "content", "refresh_only", "contents", "refreshonly"]
        );
        assert!(properties[1].1.contains(&"subscribe") && properties[1].1.contains(&"template"));
        // Every listed health check key is accepted by the parser.
        for key in &properties[2].1 {
            let value = match *key {
                "command" => "\"true\"",
                "tries" => "2",
                _ => "\"1s\"",
            };
            let text = if *key == "command" {
                format!("health_checks = [{{ command = {value} }}]")
            } else {
                format!("health_checks = [{{ command = \"true\", {key} = {value} }}]")
            };
            let mut table: DeTable = DeTable::parse(&text).unwrap().into_inner();
            let at = |_| Location {
                path: PathBuf::new(),
                origin: PathBuf::new(),
                line: 1,
            };
            take_common(&mut table, &at).unwrap_or_else(|err| panic!("{key}: {}", err.message()));
        }
    }

    #[test]
    fn properties_with_ensure_add_the_ensure_values_of_the_kind() {
        let mut expected = properties::<Demo>();
        expected.push(("demo.ensure".to_string(), vec!["present", "absent"]));
        assert_eq!(properties_with_ensure::<Demo, Ensure>(), expected);
    }

    #[test]
    fn scan_each_reports_every_bad_entry_together() {
        let scanned = scan_each(1..=5, |n| {
            Ok(if n % 2 == 0 {
                Err(Error::new(format!("entry {n} is even")))
            } else {
                Ok(n * 10)
            })
        });
        assert_eq!(
            scanned.map_err(|err| err.message().to_string()),
            Err("entry 2 is even\nentry 4 is even".to_string())
        );
        assert_eq!(scan_each(1..=2, |n| Ok(Ok(n))), Ok(vec![1, 2]));
    }

    #[test]
    fn scan_each_stops_at_a_failure_of_its_own() {
        let mut seen = Vec::new();
        let scanned: Result<Vec<u32>> = scan_each(1..=5, |n| {
            seen.push(n);
            if n == 3 {
                return Err(Error::new("cannot read the machine"));
            }
            Ok(Err(Error::new(format!("entry {n}"))))
        });
        assert_eq!(scanned, Err(Error::new("cannot read the machine")));
        assert_eq!(seen, [1, 2, 3]);
    }

    #[test]
    fn alias_ids_take_the_entity_type() {
        assert_eq!(alias_id("file:/etc/app.conf", "app-conf"), "file:app-conf");
        assert_eq!(alias_id("exec:a b", "x"), "exec:x");
    }
}
