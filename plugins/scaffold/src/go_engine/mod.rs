//! Go's `text/template` (CCM's other engine), through gotmpl and a layer
//! of ours where gotmpl differs from Go: `check.rs` (what Go's parser
//! refuses), `print.rs` (values printed as Go's fmt prints them),
//! `locate.rs` (the line of an execution error) and `sprig/` (the sprig
//! functions CCM registers). Templates see the same map as Jet's as dot:
//! `.facts`, `.data`, `.env` and CCM's `.Facts`, `.Data`, `.Environ`. Files
//! below `_partials/` are not rendered into the target; a template calls
//! one with `{{ template "_partials/x" . }}` (Go's own way) or
//! `{{ render "_partials/x" . }}` (CCM's, which yields the text).
//! `lookup "data.x" default` is minijinja's and Jet's.

mod budget;
mod check;
mod locate;
mod print;
mod sprig;

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use gotmpl::parse::{ListNode, Pos};
use gotmpl::{FuncMap, Template, TemplateError, Value};

use crate::render::{TreeEngine, TreeSource, lookup_path};

/// How deep `render` may call itself through partials.
const MAX_RENDER_DEPTH: usize = 32;

/// Go's own functions, which gotmpl has too.
const BUILTINS: &[&str] = &[
    "and", "call", "html", "index", "slice", "js", "len", "not", "or", "print", "printf",
    "println", "urlquery", "eq", "ge", "gt", "le", "lt", "ne",
];

pub struct GoEngine {
    shared: Arc<Shared>,
    data: Value,
    /// The partials of the tree, parsed on first use.
    partials: OnceCell<Result<Arc<Templates>, String>>,
}

/// What the template functions need, shared with their closures.
struct Shared {
    vars: serde_json::Map<String, serde_json::Value>,
    left: String,
    right: String,
    builtins: print::Builtins,
    max_output: std::sync::atomic::AtomicUsize,
    /// Set while a failed run is run again to find its line: a partial
    /// that `render` runs then does not search for its own line, which
    /// would take time exponential in how deep partials render partials.
    locating: std::sync::atomic::AtomicBool,
}

/// One parsed template: its tree and the file it was written in.
#[derive(Clone)]
struct Tree {
    body: ListNode,
    file: String,
}

/// A set of templates by name (the partials', or those and a file's), with
/// the partials' texts for `render`.
#[derive(Default, Clone)]
struct Templates {
    trees: BTreeMap<String, Tree>,
    texts: BTreeMap<String, String>,
}

/// A render that failed: the file and line where Go would say, and why.
struct Failure {
    place: Option<(String, usize)>,
    message: String,
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
            shared: Arc::new(Shared {
                vars,
                left,
                right,
                builtins: print::Builtins::default(),
                max_output: holo_plugin::template::DEFAULT_MAX_RENDER_SIZE.into(),
                locating: false.into(),
            }),
            data,
            partials: OnceCell::new(),
        })
    }

    fn partials(&self, tree: &TreeSource<'_>) -> Result<Arc<Templates>, String> {
        self.partials
            .get_or_init(|| load_partials(&self.shared, tree).map(Arc::new))
            .clone()
    }
}

fn load_partials(shared: &Arc<Shared>, tree: &TreeSource<'_>) -> Result<Templates, String> {
    let mut partials = Templates::default();
    let mut names: Vec<String> = tree
        .partials()?
        .iter()
        .map(|rel| rel.to_string_lossy().into_owned())
        .collect();
    // In path order, so that a later definition of a name wins.
    names.sort();
    for name in names {
        let shown = tree.shown(&name);
        let text = tree
            .read_text(&name)
            .map_err(|err| format!("{shown}: cannot read the partial: {err}"))?;
        parse_into(shared, &mut partials, &name, &shown, &text)
            .map_err(|failure| describe(&failure, &shown, "partial"))?;
        partials.texts.insert(name, text);
    }
    Ok(partials)
}

/// Parses `text` as the template `name` (written in `file`) into `set`: a
/// later definition replaces an earlier one, except with an empty body.
fn parse_into(
    shared: &Shared,
    set: &mut Templates,
    name: &str,
    file: &str,
    text: &str,
) -> Result<(), Failure> {
    let defined = |function: &str| {
        BUILTINS.contains(&function) || sprig::has(function) || OURS.contains(&function)
    };
    let checked = check::check(text, &shared.left, &shared.right, &defined);
    let parsed = match Template::new(name)
        .delims(&shared.left, &shared.right)
        .parse(text)
    {
        Ok(parsed) => parsed,
        // Go stops at the first line at fault; gotmpl may report a later one.
        Err(err) => {
            return Err(match checked {
                Err(earlier) if earlier.line < error_line(&err) => Failure {
                    place: Some((file.to_string(), earlier.line)),
                    message: earlier.message,
                },
                _ => parse_failure(file, &err),
            });
        }
    };
    checked.map_err(|err| Failure {
        place: Some((file.to_string(), err.line)),
        message: err.message,
    })?;
    let mut names: Vec<String> = parsed.templates().iter().map(|n| n.to_string()).collect();
    if !names.iter().any(|n| n == name) {
        names.push(name.to_string());
    }
    for defined in names {
        let mut body = match parsed.lookup(&defined) {
            Some(body) => body.clone(),
            None => blank_top(&parsed),
        };
        if !body.is_empty_tree() || !set.trees.contains_key(&defined) {
            print::go_printing(&mut body, text);
            let file = file.to_string();
            set.trees.insert(defined, Tree { body, file });
        }
    }
    Ok(())
}

/// The top of a file that holds only white space and definitions, which
/// gotmpl keeps to itself: its text, which running it gives.
fn blank_top(parsed: &Template) -> ListNode {
    let pos = Pos::new(0, 1);
    let text = parsed.execute_to_string(&Value::Nil).unwrap_or_default();
    let nodes = if text.is_empty() {
        Vec::new()
    } else {
        vec![gotmpl::parse::Node::Text(gotmpl::parse::TextNode {
            pos,
            text: text.into(),
        })]
    };
    ListNode { pos, nodes }
}

/// The functions of ours beside Go's and sprig's.
const OURS: &[&str] = &["lookup", "render", print::PRINT_VALUE, print::NO_DATA];

fn error_line(err: &TemplateError) -> usize {
    match err {
        TemplateError::Parse { line, .. } | TemplateError::Lex { line, .. } => *line,
        _ => usize::MAX,
    }
}

fn parse_failure(file: &str, err: &TemplateError) -> Failure {
    match err {
        TemplateError::Parse {
            line, col, message, ..
        }
        | TemplateError::Lex {
            line, col, message, ..
        } => Failure {
            place: Some((format!("{file}:{line}"), *col)),
            message: message.clone(),
        },
        other => Failure {
            place: None,
            message: other.to_string(),
        },
    }
}

/// The function map: Go's print functions as Go prints, sprig's, and ours.
fn functions(shared: &Arc<Shared>, set: &Arc<Templates>, depth: usize) -> FuncMap {
    let mut funcs = sprig::functions();
    let add = |funcs: &mut FuncMap, name: &str, f: gotmpl::ValueFunc| {
        funcs.insert(name.to_string(), f);
    };
    add(&mut funcs, print::PRINT_VALUE, Arc::new(print::print_value));
    add(&mut funcs, print::NO_DATA, Arc::new(|_| Ok(Value::Nil)));
    add(
        &mut funcs,
        "print",
        Arc::new(|args| Ok(Value::String(print::sprint(args).into()))),
    );
    add(
        &mut funcs,
        "println",
        Arc::new(|args| Ok(Value::String(print::sprintln(args).into()))),
    );
    let for_printf = Arc::clone(shared);
    add(
        &mut funcs,
        "printf",
        Arc::new(move |args| for_printf.builtins.printf(args)),
    );
    add(&mut funcs, "index", Arc::new(print::Builtins::index));
    for escaper in ["html", "js", "urlquery"] {
        let for_escaper = Arc::clone(shared);
        add(
            &mut funcs,
            escaper,
            Arc::new(move |args| for_escaper.builtins.escape(escaper, args)),
        );
    }
    let for_lookup = Arc::clone(shared);
    add(
        &mut funcs,
        "lookup",
        Arc::new(move |args| {
            let args: Vec<serde_json::Value> = args.iter().map(to_json).collect();
            let found = lookup_path(&for_lookup.vars, &args).map_err(TemplateError::Exec)?;
            gotmpl::to_value(&found)
        }),
    );
    let for_render = (Arc::clone(shared), Arc::clone(set));
    add(
        &mut funcs,
        "render",
        Arc::new(move |args| {
            let (shared, set) = &for_render;
            render_partial(shared, set, args, depth + 1)
        }),
    );
    budget::bounded(funcs)
}

/// Runs the template `name` of `set` (with `overrides` in place of some
/// trees) into `out`.
fn execute(
    shared: &Arc<Shared>,
    set: &Arc<Templates>,
    name: &str,
    overrides: &[(String, ListNode)],
    data: &Value,
    depth: usize,
    out: &mut dyn std::io::Write,
) -> Result<(), TemplateError> {
    let mut template = Template::new(name).funcs(functions(shared, set, depth));
    for (defined, tree) in &set.trees {
        template = template.add_parse_tree(defined, tree.body.clone());
    }
    for (defined, tree) in overrides {
        template = template.add_parse_tree(defined, tree.clone());
    }
    let mut out = out;
    template.execute_template(&mut out, name, data)
}

/// Runs `name` of `set`; on failure, finds the file and line.
fn run(
    shared: &Arc<Shared>,
    set: &Arc<Templates>,
    name: &str,
    data: &Value,
    depth: usize,
    out: &mut holo_plugin::template::LimitedOutput,
) -> Result<(), Failure> {
    let Err(err) = execute(shared, set, name, &[], data, depth, out) else {
        return Ok(());
    };
    if out.exceeded {
        return Err(Failure {
            place: None,
            message: out.exceeded_message(),
        });
    }
    let message = err.to_string();
    let message = message
        .strip_prefix("execution error: ")
        .unwrap_or(&message);
    if shared.locating.swap(true, Ordering::Relaxed) {
        return Err(Failure {
            place: None,
            message: message.to_string(),
        });
    }
    let limit = shared.max_output.load(Ordering::Relaxed);
    let mut trees = |wanted: &str| set.trees.get(wanted).map(|tree| tree.body.clone());
    let mut fails = |overrides: &[(String, ListNode)]| {
        let mut sink = holo_plugin::template::LimitedOutput::new(limit);
        execute(shared, set, name, overrides, data, depth, &mut sink).is_err()
    };
    let place = locate::locate(&mut trees, &mut fails, name).map(|(template, line)| {
        let file = set
            .trees
            .get(&template)
            .map_or(template, |tree| tree.file.clone());
        (file, line)
    });
    shared.locating.store(false, Ordering::Relaxed);
    Err(Failure {
        place,
        message: message.to_string(),
    })
}

/// CCM's `render "_partials/x" DATA`: the partial rendered with DATA.
fn render_partial(
    shared: &Arc<Shared>,
    set: &Arc<Templates>,
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
    let Some(text) = set.texts.get(name.as_ref()) else {
        return Err(TemplateError::Exec(format!(
            "render {name:?}: no such partial; partials are the files below _partials/"
        )));
    };
    // CCM parses the partial on its own, with the same functions.
    let mut own = Templates {
        trees: BTreeMap::new(),
        texts: set.texts.clone(),
    };
    let rendered = parse_into(shared, &mut own, name, name, text).and_then(|()| {
        let limit = shared.max_output.load(Ordering::Relaxed);
        let mut out = holo_plugin::template::LimitedOutput::new(limit);
        run(shared, &Arc::new(own), name, data, depth, &mut out)?;
        Ok(out.bytes)
    });
    match rendered {
        Ok(bytes) => Ok(Value::String(String::from_utf8_lossy(&bytes).into())),
        Err(failure) => Err(TemplateError::Exec(format!(
            "render {name:?}: {}",
            place_text(&failure, name)
        ))),
    }
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

/// "FILE:LINE: what Go says" where the place is known, else "FILE: ...".
fn place_text(failure: &Failure, file: &str) -> String {
    match &failure.place {
        Some((at, line)) => format!("{at}:{line}: {}", failure.message),
        None => format!("{file}: {}", failure.message),
    }
}

/// One message naming the file and line, and what to do.
fn describe(failure: &Failure, shown: &str, what: &str) -> String {
    // A message that says what to do already needs no second hint.
    let hint = if failure.message.contains("max_render_size") {
        ""
    } else {
        "; fix the template or define the value in etc/holo/data.toml or the resource's data"
    };
    let place = match &failure.place {
        Some((file, line)) => format!("{file}:{line}"),
        None => shown.to_string(),
    };
    format!(
        "{place}: cannot render the {what}: {}{hint}",
        failure.message
    )
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
        let _budget = budget::Scope::enter(tree.max_output);
        let partials = self.partials(tree)?;
        let name = rel.to_string_lossy();
        self.shared
            .max_output
            .store(tree.max_output, Ordering::Relaxed);
        let mut set = Templates::clone(&partials);
        parse_into(&self.shared, &mut set, &name, shown, text)
            .map_err(|failure| describe(&failure, shown, what))?;
        let mut out = holo_plugin::template::LimitedOutput::new(tree.max_output);
        run(&self.shared, &Arc::new(set), &name, &self.data, 0, &mut out)
            .map_err(|failure| describe(&failure, shown, what))?;
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
        fs::write(
            dir.path().join("a"),
            "{{ with .data.none }}a{{ else with .data.name }}{{ . }}{{ end }}",
        )
        .expect("t");
        let files = render_tree(&engine(None), dir.path(), false).expect("else with");
        assert_eq!(files[0].content, b"app", "else with, as Go 1.23");
        fs::write(dir.path().join("a"), "ok\n{{ index .data.list 9 }}\n").expect("t");
        let err = render_tree(&engine(None), dir.path(), false).expect_err("exec");
        assert!(
            err.contains("/a:2: cannot render the content: index out of range: 9; fix"),
            "{err}"
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
