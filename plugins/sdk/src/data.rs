//! Data: Hiera-style configuration data from `$ROOT/etc/holo/data.toml`.
//!
//! The file has three sections, all optional:
//!
//! ```toml
//! [data]                      # the base values
//! log_level = "INFO"
//! packages = ["ca-certificates"]
//!
//! [hierarchy]
//! order = ["os:{{ facts.os.id }}", "host:{{ facts.hostname }}"]
//! merge = "deep"              # or "first" (the default), or "deep_concat"
//!
//! [overrides."os:debian"]
//! packages = ["apt-transport-https"]
//! ```
//!
//! Each `order` entry is a template rendered with the facts; the override of
//! that name, if any, applies. With `first`, the first matching override is
//! merged over the base key by key and the rest are ignored. With `deep`,
//! every matching override is merged in order (later wins): tables merge
//! recursively and arrays become their union in the order of first
//! occurrence, as Hiera 5's deep merge does (`[80]` and `[80, 443]` give
//! `[80, 443]`). `deep_concat` is the same but concatenates arrays, as
//! CCM's resolver does. String values in `[data]` and the overrides are
//! templates too (facts and env in scope). Every error names the file and
//! line. holo-data(5) is the user's documentation of all this.

use std::path::Path;

use toml::de::{DeTable, DeValue};
use toml::{Table, Value};

use crate::facts::{self, Error, Facts, line_at, parse_toml, read_optional};
use crate::template::{LoadError, TemplateContext, TemplateError};

/// Where the data lives, relative to the root.
pub const DATA_FILE: &str = "etc/holo/data.toml";

/// How matching overrides combine with the base data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Merge {
    /// The first matching override wins; its top-level keys replace the base's.
    First,
    /// Every matching override is merged deeply, in hierarchy order; arrays
    /// become their union (Hiera 5).
    Deep,
    /// Like `Deep`, but arrays are concatenated (CCM).
    DeepConcat,
}

impl Merge {
    const NAMES: &'static str = "\"first\", \"deep\" or \"deep_concat\"";

    fn parse(name: &str) -> Option<Merge> {
        match name {
            "first" => Some(Merge::First),
            "deep" => Some(Merge::Deep),
            "deep_concat" => Some(Merge::DeepConcat),
            _ => None,
        }
    }
}

impl TemplateContext {
    /// Gathers the facts, resolves `$ROOT/etc/holo/data.toml` against them,
    /// and takes the process environment as `env`.
    pub fn load(root: &Path, test_mode: bool) -> Result<TemplateContext, LoadError> {
        let facts = Facts::gather(root, test_mode)?;
        let env_vars = std::env::vars_os()
            .filter_map(|(key, value)| Some((key.into_string().ok()?, value.into_string().ok()?)))
            .collect();
        let mut context = TemplateContext::new(facts, Table::new(), env_vars);
        if test_mode {
            context.set_facts_file(root.join(facts::FACTS_FILE));
        }
        // Hierarchy levels and data values are rendered with facts and env only.
        let resolved = resolve(root, &context)?;
        context.set_data(resolved);
        Ok(context)
    }
}

/// Reads `$ROOT/etc/holo/data.toml` and resolves it against the facts in
/// `templates` (whose own data is not consulted). A missing file is empty
/// data.
pub fn resolve(root: &Path, templates: &TemplateContext) -> Result<Table, Error> {
    let path = root.join(DATA_FILE);
    match read_optional(&path)? {
        Some(text) => resolve_text(&path, &text, templates),
        None => Ok(Table::new()),
    }
}

/// Resolves the text of a data file; `path` is used in messages only.
pub fn resolve_text(path: &Path, text: &str, templates: &TemplateContext) -> Result<Table, Error> {
    let document = parse_toml(path, text)?;
    let at = |segments: &[Segment<'_>], message: String| {
        Error::new(format!(
            "{}:{}: {message}",
            path.display(),
            line_of(text, segments)
        ))
    };

    let mut base = Table::new();
    let mut order: Vec<(usize, String)> = Vec::new();
    let mut merge = Merge::First;
    let mut overrides = Table::new();

    for (section, value) in document {
        let here = [Segment::Key(&section)];
        match (section.as_str(), value) {
            ("data", Value::Table(table)) => base = table,
            ("overrides", Value::Table(table)) => overrides = table,
            ("hierarchy", Value::Table(hierarchy)) => {
                (order, merge) = read_hierarchy(hierarchy, &at)?;
            }
            ("data" | "overrides" | "hierarchy", _) => {
                return Err(at(
                    &here,
                    format!("`{section}` must be a table; write it as [{section}]"),
                ));
            }
            (other, _) => {
                return Err(at(
                    &here,
                    format!(
                        "unknown section `{other}`; a data file has only [data], [hierarchy] and [overrides.\"LEVEL\"]"
                    ),
                ));
            }
        }
    }

    let mut trail = vec![Segment::Key("data")];
    render_table(&mut base, templates, &mut trail, &at)?;

    for (index, entry) in order {
        let entry_at = [
            Segment::Key("hierarchy"),
            Segment::Key("order"),
            Segment::Index(index),
        ];
        let place = at(&entry_at, "hierarchy level".into()).to_string();
        let _watch = crate::render_memory::Watch::start(&place, templates.max_render_size());
        let level = templates.render(&entry).map_err(|err| {
            at(
                &entry_at,
                format!(
                    "hierarchy level `{entry}`: {err}; define the fact in etc/holo/facts.toml or use lookup('facts.NAME', 'default')"
                ),
            )
        })?;
        let Some(found) = overrides.get(&level) else {
            continue;
        };
        let override_at = [Segment::Key("overrides"), Segment::Key(&level)];
        let Value::Table(found) = found else {
            return Err(at(
                &override_at,
                format!("override `{level}` must be a table; write it as [overrides.\"{level}\"]"),
            ));
        };
        let mut found = found.clone();
        let mut trail = override_at.to_vec();
        render_table(&mut found, templates, &mut trail, &at)?;
        match merge {
            Merge::First => {
                base.extend(found);
                break;
            }
            Merge::Deep => deep_merge(&mut base, found, Arrays::Union),
            Merge::DeepConcat => deep_merge(&mut base, found, Arrays::Concatenate),
        }
    }
    Ok(base)
}

type At<'f> = dyn Fn(&[Segment<'_>], String) -> Error + 'f;

fn read_hierarchy(hierarchy: Table, at: &At<'_>) -> Result<(Vec<(usize, String)>, Merge), Error> {
    let mut order = Vec::new();
    let mut merge = Merge::First;
    for (key, value) in hierarchy {
        let here = [Segment::Key("hierarchy"), Segment::Key(&key)];
        match (key.as_str(), value) {
            ("order", Value::Array(entries)) => {
                for (index, entry) in entries.into_iter().enumerate() {
                    match entry {
                        Value::String(level) => order.push((index, level)),
                        other => {
                            let entry_at = [
                                Segment::Key("hierarchy"),
                                Segment::Key("order"),
                                Segment::Index(index),
                            ];
                            return Err(at(
                                &entry_at,
                                format!(
                                    "hierarchy.order entries must be strings such as \"os:{{{{ facts.os.id }}}}\", found a {}",
                                    other.type_str()
                                ),
                            ));
                        }
                    }
                }
            }
            ("merge", Value::String(mode)) => {
                merge = Merge::parse(&mode).ok_or_else(|| {
                    at(
                        &here,
                        format!("unknown merge strategy `{mode}`; use {}", Merge::NAMES),
                    )
                })?;
            }
            ("order", _) => {
                return Err(at(
                    &here,
                    "hierarchy.order must be an array of strings".to_string(),
                ));
            }
            ("merge", _) => {
                return Err(at(
                    &here,
                    format!("hierarchy.merge must be {}", Merge::NAMES),
                ));
            }
            (other, _) => {
                return Err(at(
                    &here,
                    format!("unknown key `{other}` in [hierarchy]; only `order` and `merge` exist"),
                ));
            }
        }
    }
    Ok((order, merge))
}

/// Renders every string in `table` that contains template syntax.
fn render_table<'k>(
    table: &'k mut Table,
    templates: &TemplateContext,
    trail: &mut Vec<Segment<'k>>,
    at: &At<'_>,
) -> Result<(), Error> {
    for (key, value) in table.iter_mut() {
        trail.push(Segment::Key(key.as_str()));
        render_value(value, templates, trail, at)?;
        trail.pop();
    }
    Ok(())
}

fn render_value<'k>(
    value: &'k mut Value,
    templates: &TemplateContext,
    trail: &mut Vec<Segment<'k>>,
    at: &At<'_>,
) -> Result<(), Error> {
    match value {
        Value::String(text) if TemplateContext::is_template(text) => {
            let place = at(trail, dotted(trail)).to_string();
            let _watch = crate::render_memory::Watch::start(&place, templates.max_render_size());
            let rendered = templates
                .render(text)
                .map_err(|err| at(trail, format!("{}: {}", dotted(trail), describe(&err))))?;
            *text = rendered;
        }
        Value::Table(inner) => render_table(inner, templates, trail, at)?,
        Value::Array(items) => {
            for (index, item) in items.iter_mut().enumerate() {
                trail.push(Segment::Index(index));
                render_value(item, templates, trail, at)?;
                trail.pop();
            }
        }
        _ => {}
    }
    Ok(())
}

fn describe(err: &TemplateError) -> String {
    format!(
        "{err}; data values see only facts and env, so define the value in etc/holo/facts.toml or give a default"
    )
}

fn dotted(trail: &[Segment<'_>]) -> String {
    let mut out = String::new();
    for segment in trail {
        match segment {
            Segment::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Index(index) => out.push_str(&format!("[{index}]")),
        }
    }
    out
}

/// What a deep merge does with two arrays under the same key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrays {
    /// The union, each value once, in the order of first occurrence (Hiera 5).
    Union,
    /// Base then incoming, duplicates kept (CCM).
    Concatenate,
}

/// Deep merge: tables recursively, arrays as `arrays` says, anything else
/// replaced by the incoming value.
pub fn deep_merge(base: &mut Table, incoming: Table, arrays: Arrays) {
    for (key, value) in incoming {
        match (base.get_mut(&key), value) {
            (Some(Value::Table(existing)), Value::Table(incoming)) => {
                deep_merge(existing, incoming, arrays)
            }
            (Some(Value::Array(existing)), Value::Array(incoming)) => {
                existing.extend(incoming);
                if arrays == Arrays::Union {
                    let mut kept: Vec<Value> = Vec::with_capacity(existing.len());
                    for value in existing.drain(..) {
                        if !kept.contains(&value) {
                            kept.push(value);
                        }
                    }
                    *existing = kept;
                }
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// One step of a path into a TOML document, for finding a value's line.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Segment<'a> {
    Key(&'a str),
    Index(usize),
}

/// The line of the value at `path`, or of its nearest ancestor the parser
/// can place; 1 when nothing can be placed. Only called on errors, so the
/// second parse costs nothing in the normal case.
pub(crate) fn line_of(text: &str, path: &[Segment<'_>]) -> usize {
    let Ok(document) = DeTable::parse(text) else {
        return 1;
    };
    let mut best = 1;
    let mut table: Option<&DeTable<'_>> = Some(document.get_ref());
    let mut current: Option<&DeValue<'_>> = None;
    for segment in path {
        let next = match (segment, table, current) {
            (Segment::Key(key), Some(table), _) => table.get(*key),
            (Segment::Index(index), None, Some(value)) => value.get(*index),
            (Segment::Key(key), None, Some(value)) => value.get(*key),
            _ => None,
        };
        let Some(next) = next else {
            break;
        };
        // Implicit tables ([a.b] headers) have empty spans; keep the last real one.
        if !next.span().is_empty() {
            best = line_at(text, next.span().start);
        }
        table = None;
        current = Some(next.get_ref());
        if let DeValue::Table(inner) = next.get_ref() {
            table = Some(inner);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::Facts;
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    fn debian_web01() -> TemplateContext {
        let facts: Table =
            toml::from_str("hostname = \"web01\"\n[os]\nid = \"debian\"\nversion_id = \"12\"\n")
                .expect("facts");
        TemplateContext::new(Facts::from_table(facts), Table::new(), BTreeMap::new())
    }

    fn resolve_str(text: &str) -> Result<Table, Error> {
        resolve_text(
            &PathBuf::from("/r/etc/holo/data.toml"),
            text,
            &debian_web01(),
        )
    }

    const LAYERED: &str = r#"
[data]
log_level = "INFO"
packages = ["ca-certificates"]
[data.web]
listen_port = 80
tls = false

[hierarchy]
order = ["os:{{ facts.os.id }}", "host:{{ facts.hostname }}", "role:none"]
merge = "MERGE"

[overrides."os:debian"]
packages = ["apt-transport-https"]
[overrides."os:debian".web]
tls = true

[overrides."host:web01"]
log_level = "TRACE"
packages = ["nginx"]
[overrides."host:web01".web]
listen_port = 443

[overrides."os:ubuntu"]
log_level = "NEVER"
"#;

    #[test]
    fn deep_merge_unites_arrays_and_merges_tables_in_order() {
        let data = resolve_str(&LAYERED.replace("MERGE", "deep")).expect("resolve");
        let expected: Table = toml::from_str(
            r#"
log_level = "TRACE"
packages = ["ca-certificates", "apt-transport-https", "nginx"]
[web]
listen_port = 443
tls = true
"#,
        )
        .expect("expected");
        assert_eq!(data, expected);
    }

    const LISTEN: &str = r#"
[data]
listen = [80]
[data.web]
names = ["a", "b", "a"]
[hierarchy]
order = ["os:{{ facts.os.id }}", "host:{{ facts.hostname }}"]
merge = "MERGE"
[overrides."os:debian"]
listen = [80, 443]
[overrides."os:debian".web]
names = ["c", "b"]
[overrides."host:web01"]
listen = [8080, 443, 80]
"#;

    #[test]
    fn deep_merge_takes_the_union_of_arrays_in_first_occurrence_order() {
        let data = resolve_str(&LISTEN.replace("MERGE", "deep")).expect("resolve");
        let expected: Table = toml::from_str(
            "listen = [80, 443, 8080]
[web]
names = [\"a\", \"b\", \"c\"]
",
        )
        .expect("expected");
        assert_eq!(data, expected);
    }

    #[test]
    fn deep_concat_merge_keeps_every_element() {
        let data = resolve_str(&LISTEN.replace("MERGE", "deep_concat")).expect("resolve");
        let expected: Table = toml::from_str(
            "listen = [80, 80, 443, 8080, 443, 80]
[web]
names = [\"a\", \"b\", \"a\", \"c\", \"b\"]
",
        )
        .expect("expected");
        assert_eq!(data, expected);
    }

    #[test]
    fn first_merge_takes_only_the_first_matching_level() {
        let data = resolve_str(&LAYERED.replace("MERGE", "first")).expect("resolve");
        let expected: Table = toml::from_str(
            r#"
log_level = "INFO"
packages = ["apt-transport-https"]
[web]
tls = true
"#,
        )
        .expect("expected");
        assert_eq!(data, expected);
    }

    #[test]
    fn first_is_the_default_and_no_hierarchy_means_base_data() {
        let data = resolve_str("[data]\na = 1\n[overrides.x]\na = 2\n").expect("resolve");
        assert_eq!(data.get("a").and_then(Value::as_integer), Some(1));
        let empty = resolve_str("").expect("resolve");
        assert!(empty.is_empty());
    }

    #[test]
    fn data_strings_are_templates_over_facts() {
        let data =
            resolve_str("[data]\nmotd = [\"Welcome to {{ facts.hostname }}\"]\n").expect("resolve");
        assert_eq!(
            data.get("motd")
                .and_then(|v| v.get(0))
                .and_then(Value::as_str),
            Some("Welcome to web01")
        );
    }

    #[test]
    fn errors_name_file_and_line() {
        let cases = [
            (
                "[data]\na = 1\n[hierarchy]\nmerge = \"deeper\"\n",
                4,
                "use \"first\", \"deep\" or \"deep_concat\"",
            ),
            (
                "[hierarchy]\norder = [\n  \"a\",\n  \"x:{{ facts.nope }}\",\n]\n",
                4,
                "facts.nope",
            ),
            ("[hierarchy]\norder = [\"a\", 3]\n", 2, "must be strings"),
            ("[hierarchy]\nsort = true\n", 2, "unknown key `sort`"),
            (
                "[data]\nx = 1\n[extra]\ny = 2\n",
                3,
                "unknown section `extra`",
            ),
            ("data = 3\n", 1, "must be a table"),
            (
                "[data]\n\n[data.deep]\nmsg = \"{{ facts.missing }}\"\n",
                4,
                "data.deep.msg",
            ),
            (
                "[hierarchy]\norder = [\"os:{{ facts.os.id }}\"]\n[overrides]\n\"os:debian\" = 5\n",
                4,
                "must be a table",
            ),
            ("[data]\nbroken = \n", 2, "fix the TOML syntax"),
        ];
        for (text, line, needle) in cases {
            let err = resolve_str(text).expect_err(text);
            let prefix = format!("/r/etc/holo/data.toml:{line}: ");
            assert!(err.message().starts_with(&prefix), "{text:?} gave {err}");
            assert!(err.message().contains(needle), "{text:?} gave {err}");
        }
    }

    #[test]
    fn resolve_reads_below_the_root_and_tolerates_a_missing_file() {
        let root = tempfile::tempdir().expect("tempdir");
        assert!(
            resolve(root.path(), &debian_web01())
                .expect("missing is empty")
                .is_empty()
        );
        let path = root.path().join(DATA_FILE);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, "[data]\nport = 8080\n").expect("write");
        let data = resolve(root.path(), &debian_web01()).expect("resolve");
        assert_eq!(data.get("port").and_then(Value::as_integer), Some(8080));
    }
}
