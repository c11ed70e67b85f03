//! Go's `text/template` (CCM's other engine), through gotmpl. Templates see
//! the same map as Jet's as dot: `.facts`, `.data`, `.env` and CCM's
//! `.Facts`, `.Data`, `.Environ`. Files below `_partials/` are not rendered
//! into the target; a template calls one with `{{ template "_partials/x" . }}`
//! (Go's own way) or `{{ render "_partials/x" . }}` (CCM's, which yields
//! the text). `lookup "data.x" default` is minijinja's and Jet's.

use std::cell::OnceCell;
use std::path::Path;
use std::sync::Arc;

use gotmpl::{Template, TemplateError, Value};

use crate::render::{TreeEngine, TreeSource, lookup_path};

/// How deep `render` may call itself through partials.
const MAX_RENDER_DEPTH: usize = 32;

pub struct GoEngine {
    shared: Arc<Shared>,
    data: Value,
    /// The partials of the tree, parsed on first use.
    partials: OnceCell<Result<Arc<Partials>, String>>,
}

/// What the template functions need, shared with their closures.
struct Shared {
    vars: serde_json::Map<String, serde_json::Value>,
    left: String,
    right: String,
}

/// The partials' texts (for `render`) and parse trees (for `template`).
#[derive(Default)]
struct Partials {
    texts: std::collections::BTreeMap<String, String>,
    trees: Vec<(String, gotmpl::parse::ListNode)>,
}

impl GoEngine {
    /// `delimiters` default to Go's `{{` and `}}`.
    pub fn new(
        vars: serde_json::Map<String, serde_json::Value>,
        delimiters: Option<(String, String)>,
    ) -> Result<GoEngine, String> {
        let data = gotmpl::to_value(&vars)
            .map_err(|err| format!("cannot pass the template data to Go templates: {err}"))?;
        let (left, right) = delimiters.unwrap_or_else(|| ("{{".into(), "}}".into()));
        Ok(GoEngine {
            shared: Arc::new(Shared { vars, left, right }),
            data,
            partials: OnceCell::new(),
        })
    }

    fn partials(&self, tree: &TreeSource<'_>) -> Result<Arc<Partials>, String> {
        self.partials
            .get_or_init(|| load_partials(&self.shared, tree).map(Arc::new))
            .clone()
    }
}

fn load_partials(shared: &Arc<Shared>, tree: &TreeSource<'_>) -> Result<Partials, String> {
    let mut partials = Partials::default();
    for rel in tree.partials()? {
        let name = rel.to_string_lossy().into_owned();
        let text = tree
            .read_text(&name)
            .map_err(|err| format!("{}: cannot read the partial: {err}", tree.shown(&name)))?;
        let parsed = template(shared, &name, &text, &Arc::new(Partials::default()), 0)
            .map_err(|err| describe(&tree.shown(&name), "partial", &err))?;
        for defined in parsed.templates() {
            if let Some(body) = parsed.lookup(defined) {
                partials.trees.push((defined.to_string(), body.clone()));
            }
        }
        partials.texts.insert(name, text);
    }
    Ok(partials)
}

/// Parses `text` as the template `name`, with the functions and the
/// partials' definitions.
fn template(
    shared: &Arc<Shared>,
    name: &str,
    text: &str,
    partials: &Arc<Partials>,
    depth: usize,
) -> Result<Template, TemplateError> {
    let for_lookup = Arc::clone(shared);
    let for_render = (Arc::clone(shared), Arc::clone(partials));
    let mut parsed = Template::new(name)
        .delims(&shared.left, &shared.right)
        .func("lookup", move |args| {
            let args: Vec<serde_json::Value> = args.iter().map(to_json).collect();
            let found = lookup_path(&for_lookup.vars, &args).map_err(TemplateError::Exec)?;
            gotmpl::to_value(&found)
        })
        .func("render", move |args| {
            let (shared, partials) = &for_render;
            render_partial(shared, partials, args, depth + 1)
        })
        .parse(text)?;
    for (defined, body) in &partials.trees {
        if parsed.lookup(defined).is_none() {
            parsed = parsed.add_parse_tree(defined, body.clone());
        }
    }
    Ok(parsed)
}

/// CCM's `render "_partials/x" DATA`: the partial rendered with DATA.
fn render_partial(
    shared: &Arc<Shared>,
    partials: &Arc<Partials>,
    args: &[Value],
    depth: usize,
) -> Result<Value, TemplateError> {
    let (name, data) = match args {
        [Value::String(name)] => (name, &Value::Nil),
        [Value::String(name), data] => (name, data),
        _ => {
            return Err(TemplateError::Exec(
                "use render \"_partials/NAME\" . (a partial's path and its data)".into(),
            ));
        }
    };
    if depth > MAX_RENDER_DEPTH {
        return Err(TemplateError::Exec(format!(
            "render {name:?}: partials render each other more than {MAX_RENDER_DEPTH} deep; break the cycle"
        )));
    }
    let Some(text) = partials.texts.get(name.as_ref()) else {
        return Err(TemplateError::Exec(format!(
            "render {name:?}: no such partial; partials are the files below _partials/"
        )));
    };
    let output = template(shared, name, text, partials, depth)
        .and_then(|parsed| parsed.execute_to_string(data))
        .map_err(|err| TemplateError::Exec(format!("render {name:?}: {err}")))?;
    Ok(Value::String(output.into()))
}

fn to_json(value: &Value) -> serde_json::Value {
    match value {
        Value::Nil | Value::Function(_) => serde_json::Value::Null,
        Value::Bool(b) => (*b).into(),
        Value::Int(i) => (*i).into(),
        Value::Uint(u) => (*u).into(),
        Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(serde_json::Value::Number)
            .unwrap_or(serde_json::Value::Null),
        Value::String(s) => s.as_ref().into(),
        Value::List(items) => items.iter().map(to_json).collect(),
        Value::Map(map) => map
            .iter()
            .map(|(k, v)| (k.to_string(), to_json(v)))
            .collect::<serde_json::Map<_, _>>()
            .into(),
    }
}

/// Go (and CCM) write `<no value>` for a missing map key and go on, and
/// `{{ if .data.x }}` relies on it; a file that holds `<no value>` where
/// its template did not gets a warning naming the line and the action.
fn no_value_warning(shared: &Shared, text: &str, output: &str, shown: &str) -> Option<String> {
    if output.matches(NO_VALUE).count() <= text.matches(NO_VALUE).count() {
        return None;
    }
    let place = match no_value_action(shared, text, output) {
        Some((line, action)) => format!(
            "{shown}:{line}: {}{action}{} has no value (the map has no such key)",
            shared.left, shared.right
        ),
        None => format!("{shown}: a key the map does not have"),
    };
    Some(format!(
        "{place}, so the rendered file holds \"{NO_VALUE}\" (as Go and CCM write it); define the key in etc/holo/data.toml or the resource's data, or give a default with {} lookup \"PATH.TO.KEY\" \"DEFAULT\" {}",
        shared.left, shared.right
    ))
}

const NO_VALUE: &str = "<no value>";

/// The template line and action that wrote the first `<no value>`: the
/// line whose text before its first action is what the output line has
/// before `<no value>`. gotmpl does not say where a value was missing.
fn no_value_action(shared: &Shared, text: &str, output: &str) -> Option<(usize, String)> {
    let written = output.lines().find(|line| line.contains(NO_VALUE))?;
    let prefix = &written[..written.find(NO_VALUE)?];
    text.lines().enumerate().find_map(|(index, line)| {
        let after = line.strip_prefix(prefix)?.strip_prefix(&shared.left)?;
        let action = &after[..after.find(&shared.right)?];
        Some((index + 1, format!(" {} ", action.trim_matches([' ', '-']))))
    })
}

/// One message naming the file, and the line and column where Go's parser
/// knows them.
fn describe(shown: &str, what: &str, err: &TemplateError) -> String {
    let hint = "fix the template or define the value in etc/holo/data.toml or the resource's data";
    match err {
        TemplateError::Parse {
            line, col, message, ..
        }
        | TemplateError::Lex {
            line, col, message, ..
        } => format!("{shown}:{line}:{col}: cannot render the {what}: {message}; {hint}"),
        other => format!("{shown}: cannot render the {what}: {other}; {hint}"),
    }
}

impl TreeEngine for GoEngine {
    fn render(
        &self,
        tree: &TreeSource<'_>,
        rel: &Path,
        text: &str,
        shown: &str,
        what: &str,
    ) -> Result<String, String> {
        let partials = self.partials(tree)?;
        let name = rel.to_string_lossy();
        let mut out = holo_plugin::template::LimitedOutput::new(tree.max_output);
        template(&self.shared, &name, text, &partials, 0)
            .and_then(|parsed| parsed.execute(&mut out, &self.data))
            .map_err(|err| {
                if out.exceeded {
                    format!(
                        "{shown}: cannot render the {what}: {}",
                        out.exceeded_message()
                    )
                } else {
                    describe(shown, what, &err)
                }
            })?;
        let output = String::from_utf8(out.bytes)
            .map_err(|_| format!("{shown}: the {what} renders to bytes that are not UTF-8"))?;
        if let Some(warning) = no_value_warning(&self.shared, text, &output, shown) {
            eprintln!(">> {warning}");
        }
        Ok(output)
    }

    fn has_partials(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::render_tree;
    use std::fs;

    fn engine(delimiters: Option<(String, String)>) -> GoEngine {
        let mut vars = serde_json::Map::new();
        vars.insert("facts".into(), serde_json::json!({ "hostname": "web01" }));
        vars.insert(
            "data".into(),
            serde_json::json!({ "port": 8080, "name": "app", "list": ["a", "b"] }),
        );
        GoEngine::new(vars, delimiters).expect("engine")
    }

    #[test]
    fn partials_are_called_with_template_or_render_and_not_rendered() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::create_dir_all(dir.path().join("_partials")).expect("mkdir");
        fs::write(
            dir.path().join("_partials/log.conf"),
            "log = /var/log/{{ .name }}.log{{ define \"port\" }}port = {{ . }}{{ end }}",
        )
        .expect("t");
        fs::write(
            dir.path().join("{{ .data.name }}.conf"),
            "{{ template \"_partials/log.conf\" .data }}\n{{ template \"port\" .data.port }}\n{{ render \"_partials/log.conf\" .data | printf \"%q\" }}\n",
        )
        .expect("t");
        let files = render_tree(&engine(None), dir.path(), false).expect("render");
        assert_eq!(files.len(), 1, "{files:?}");
        assert_eq!(files[0].rel, Path::new("app.conf"));
        assert_eq!(
            String::from_utf8_lossy(&files[0].content),
            "log = /var/log/app.log\nport = 8080\n\"log = /var/log/app.log\"\n"
        );
    }

    #[test]
    fn render_cycles_and_unknown_partials_are_errors() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::create_dir_all(dir.path().join("_partials")).expect("mkdir");
        fs::write(
            dir.path().join("_partials/loop"),
            "{{ render \"_partials/loop\" . }}",
        )
        .expect("t");
        fs::write(dir.path().join("a"), "{{ render \"_partials/loop\" . }}").expect("t");
        let err = render_tree(&engine(None), dir.path(), false).expect_err("cycle");
        assert!(err.contains("more than 32 deep"), "{err}");
        fs::write(dir.path().join("a"), "{{ render \"_partials/none\" . }}").expect("t");
        let err = render_tree(&engine(None), dir.path(), false).expect_err("unknown");
        assert!(err.contains("no such partial"), "{err}");
    }

    #[test]
    fn lookup_delimiters_and_messages() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(
            dir.path().join("a"),
            "<< lookup \"data.port\" >> << lookup \"data.none\" 7 >> {{ kept }} << index (lookup \"data.list\") 1 >>\n",
        )
        .expect("t");
        let files = render_tree(&engine(Some(("<<".into(), ">>".into()))), dir.path(), false)
            .expect("render");
        assert_eq!(
            String::from_utf8_lossy(&files[0].content),
            "8080 7 {{ kept }} b\n"
        );
        fs::write(dir.path().join("a"), "{{ range 3 }}{{ . }}{{ end }}").expect("t");
        let files = render_tree(&engine(None), dir.path(), false).expect("range int");
        assert_eq!(
            files[0].content, b"012",
            "range over an integer, as Go 1.22"
        );
        fs::write(dir.path().join("a"), "ok\n{{ if }}\n").expect("t");
        let err = render_tree(&engine(None), dir.path(), false).expect_err("parse");
        assert!(
            err.contains("/a:2:") && err.contains("cannot render the content"),
            "{err}"
        );
        fs::write(dir.path().join("a"), "{{ lookup \"data.none\" }}").expect("t");
        let err = render_tree(&engine(None), dir.path(), false).expect_err("lookup");
        assert!(err.contains("pass a default"), "{err}");
    }
}
