//! holo-jet: a subset of the Jet template language (CloudyKit/jet) over
//! JSON values, with templates read through a caller's [`Loader`].
//!
//! ```
//! use holo_jet::{Delims, Engine, MapLoader};
//! let loader = MapLoader::from([("motd", "Hello [[ facts.hostname | upper ]]!")]);
//! let mut vars = serde_json::Map::new();
//! vars.insert("facts".into(), serde_json::json!({"hostname": "web01"}));
//! let engine = Engine::new(&loader).with_delims(Delims::brackets());
//! assert_eq!(engine.render("motd", &vars, &serde_json::Value::Null).unwrap(), "Hello WEB01!");
//! ```

mod eval;
mod funcs;
mod lex;
mod parse;

use std::collections::HashMap;
use std::fmt;

pub use serde_json::{Map, Value};

/// Most include, import, extends and yield levels in one render.
pub const MAX_DEPTH: usize = 64;
/// Largest output one render may produce by default, in bytes.
pub const MAX_OUTPUT: usize = 64 << 20;

/// Where templates come from. Names are `/`-separated paths relative to the
/// root of the template tree, without a leading `/` and with no `.` or `..`.
pub trait Loader {
    /// The source of template `name`, or a message saying why not.
    fn load(&self, name: &str) -> Result<String, String>;
}

/// Templates held in memory, by name.
#[derive(Debug, Default, Clone)]
pub struct MapLoader(pub HashMap<String, String>);

impl<const N: usize> From<[(&str, &str); N]> for MapLoader {
    fn from(items: [(&str, &str); N]) -> Self {
        MapLoader(
            items
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }
}

impl Loader for MapLoader {
    fn load(&self, name: &str) -> Result<String, String> {
        self.0
            .get(name)
            .cloned()
            .ok_or_else(|| "no such template".to_string())
    }
}

/// Action and comment delimiters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delims {
    pub left: String,
    pub right: String,
    pub comment_left: String,
    pub comment_right: String,
}

impl Delims {
    /// Jet's own: `{{ }}` and `{* *}`.
    pub fn jet() -> Delims {
        Delims::new("{{", "}}")
    }

    /// CCM's scaffold: `[[ ]]` for actions, comments stay `{* *}`.
    pub fn brackets() -> Delims {
        Delims::new("[[", "]]")
    }

    pub fn new(left: &str, right: &str) -> Delims {
        Delims {
            left: left.into(),
            right: right.into(),
            comment_left: "{*".into(),
            comment_right: "*}".into(),
        }
    }
}

impl Default for Delims {
    fn default() -> Self {
        Delims::jet()
    }
}

/// A render failure: the template, 1-based line and column, what is
/// wrong, and what kind of mistake it is (for the caller's advice).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub template: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
    pub kind: ErrorKind,
}

/// What an [`Error`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The template does not parse.
    Syntax,
    /// A name the template reads is not defined.
    Undefined,
    /// Anything else that fails while rendering.
    Render,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.template, self.line, self.column, self.message
        )
    }
}

impl std::error::Error for Error {}

/// An error at a byte offset of the template being read or run.
#[derive(Debug)]
pub(crate) struct Failure {
    pub pos: usize,
    pub message: String,
}

impl Failure {
    pub fn new(pos: usize, message: impl Into<String>) -> Failure {
        Failure {
            pos,
            message: message.into(),
        }
    }

    pub fn locate(self, template: &str, source: &str) -> Error {
        let (line, column) = line_column(source, self.pos);
        Error {
            template: template.to_string(),
            line,
            column,
            message: self.message,
            kind: ErrorKind::Render,
        }
    }
}

fn line_column(source: &str, pos: usize) -> (usize, usize) {
    let mut pos = pos.min(source.len());
    while !source.is_char_boundary(pos) {
        pos -= 1;
    }
    let before = &source[..pos];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    (line, before[line_start..].chars().count() + 1)
}

/// A function the caller adds: takes the evaluated arguments, returns a
/// value or a message saying what is wrong.
pub type Function = Box<dyn Fn(&[Value]) -> Result<Value, String>>;

/// Renders templates from one loader with one set of delimiters and
/// functions.
pub struct Engine<'a> {
    loader: &'a dyn Loader,
    delims: Delims,
    functions: HashMap<String, Function>,
    render_function: Option<String>,
    max_output: usize,
}

impl<'a> Engine<'a> {
    pub fn new(loader: &'a dyn Loader) -> Engine<'a> {
        Engine {
            loader,
            delims: Delims::jet(),
            functions: HashMap::new(),
            render_function: None,
            max_output: MAX_OUTPUT,
        }
    }

    /// The largest output, and string built with `+`, one render may make
    /// (default [`MAX_OUTPUT`]); past it the render fails at that place.
    pub fn with_max_output(mut self, bytes: usize) -> Engine<'a> {
        self.max_output = bytes;
        self
    }

    pub fn with_delims(mut self, delims: Delims) -> Engine<'a> {
        self.delims = delims;
        self
    }

    /// Adds a function; built-ins of the same name win. Numbers written in
    /// templates arrive as floats, as in Jet.
    pub fn add_function(
        &mut self,
        name: &str,
        f: impl Fn(&[Value]) -> Result<Value, String> + 'static,
    ) {
        self.functions.insert(name.to_string(), Box::new(f));
    }

    /// Adds `name(template, data)`, which renders another template (named
    /// from the root of the tree) with `data` as dot and returns its
    /// output, as CCM's scaffold offers under the name `render`. The
    /// template shares no local variables or blocks, and sees the global
    /// variables only when `data` is the map of them (CCM passes Jet's
    /// variables as dot).
    pub fn with_render_function(mut self, name: &str) -> Engine<'a> {
        self.render_function = Some(name.to_string());
        self
    }

    /// Renders template `name` with `vars` as global variables and
    /// `context` as `.`.
    pub fn render(
        &self,
        name: &str,
        vars: &Map<String, Value>,
        context: &Value,
    ) -> Result<String, Error> {
        eval::render(self, name, vars, context)
    }

    /// Parses template `name` and what it imports or extends, without
    /// running it.
    pub fn check(&self, name: &str) -> Result<(), Error> {
        eval::check(self, name)
    }
}

/// Resolves `name` as written in template `from`: `/x` from the root,
/// anything else next to `from`.
pub(crate) fn resolve_name(from: &str, name: &str) -> Result<String, String> {
    let mut parts: Vec<&str> = Vec::new();
    if !name.starts_with('/')
        && let Some((dir, _)) = from.rsplit_once('/')
    {
        parts.extend(dir.split('/'));
    }
    for part in name.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(format!(
                        "template name {name:?} leaves the template tree; includes are read only from the template tree"
                    ));
                }
            }
            p => parts.push(p),
        }
    }
    if parts.is_empty() {
        return Err(format!("template name {name:?} names no template"));
    }
    Ok(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_next_to_the_including_template() {
        assert_eq!(
            resolve_name("views/index.jet", "./user.jet").unwrap(),
            "views/user.jet"
        );
        assert_eq!(
            resolve_name("views/index.jet", "user.jet").unwrap(),
            "views/user.jet"
        );
        assert_eq!(
            resolve_name("views/index.jet", "/user.jet").unwrap(),
            "user.jet"
        );
        assert_eq!(
            resolve_name("views/a/index.jet", "../user.jet").unwrap(),
            "views/user.jet"
        );
        assert!(resolve_name("index.jet", "../etc/passwd").is_err());
    }

    fn render(src: &str) -> Result<String, Error> {
        let loader = MapLoader::from([("t", src)]);
        Engine::new(&loader).render("t", &Map::new(), &Value::Null)
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        for src in [
            format!("{{{{ {}1{} }}}}", "(".repeat(100_000), ")".repeat(100_000)),
            format!("{{{{ {}true }}}}", "!".repeat(100_000)),
            format!("{{{{ {}1 }}}}", "-".repeat(100_000)),
            "{{ if true }}".repeat(100_000),
        ] {
            let err = render(&src).expect_err("too deep");
            assert!(
                err.message.contains("nested deeper than 64 levels"),
                "{err}"
            );
        }
    }

    #[test]
    fn deep_runtime_nesting_is_an_error_not_a_crash() {
        // Statements nested as deep as the parser allows, in a block that
        // yields itself as deep as it may.
        let ifs = "{{ if true }}{{ range slice(1) }}".repeat(28);
        let ends = "{{ end }}{{ end }}".repeat(28);
        let src = format!("{{{{ block r() }}}}{ifs}{{{{ yield r() }}}}{ends}{{{{ end }}}}");
        let err = render(&src).expect_err("too deep");
        assert!(
            err.message
                .starts_with("statements and blocks nested deeper than 128"),
            "{err}"
        );
    }

    #[test]
    fn check_parses_without_running() {
        let loader = MapLoader::from([("t", "{{ undefined_at_run_time }}"), ("bad", "{{ if }}")]);
        let engine = Engine::new(&loader);
        assert!(engine.check("t").is_ok());
        assert_eq!(
            engine.check("bad").expect_err("bad").to_string(),
            "bad:1:7: unexpected end of action in expression"
        );
    }

    #[test]
    fn caller_functions_are_called() {
        let loader = MapLoader::from([("t", "{{ double(21) }} {{ 2 | double }} {{ fail() }}")]);
        let mut engine = Engine::new(&loader);
        engine.add_function("double", |args| {
            Ok(Value::from(args[0].as_f64().unwrap_or(0.0) * 2.0))
        });
        engine.add_function("fail", |_| Err("no luck".into()));
        let err = engine
            .render("t", &Map::new(), &Value::Null)
            .expect_err("fails");
        assert_eq!(err.to_string(), "t:1:38: fail: no luck");
        let loader = MapLoader::from([("t", "{{ double(21) }} {{ 2 | double }}")]);
        let mut engine = Engine::new(&loader);
        engine.add_function("double", |args| {
            Ok(Value::from(args[0].as_f64().unwrap_or(0.0) * 2.0))
        });
        assert_eq!(
            engine.render("t", &Map::new(), &Value::Null).unwrap(),
            "42 4"
        );
    }

    #[test]
    fn the_render_function_returns_another_templates_output() {
        let loader = MapLoader::from([
            (
                "dir/a.conf",
                "[[ render(\"_partials/h\", .) ]]|[[ render(\"_partials/h\", \"ctx\") ]]|[[ x ]]",
            ),
            (
                "_partials/h",
                "[[ x := \"local\" ]]<[[ isset(data) ? data.v : . ]]>",
            ),
            ("loop", "[[ render(\"loop\", .) ]]"),
        ]);
        let mut vars = Map::new();
        vars.insert("data".into(), serde_json::json!({"v": 1}));
        vars.insert("x".into(), Value::from("global"));
        let engine = Engine::new(&loader)
            .with_delims(Delims::brackets())
            .with_render_function("render");
        // Dot is the variables, so the partial sees them; with other data
        // it does not, as in CCM's scaffold.
        let dot = Value::Object(vars.clone());
        let got = engine.render("dir/a.conf", &vars, &dot).unwrap();
        assert_eq!(got, "<1>|<ctx>|global");
        let err = engine.render("loop", &vars, &dot).expect_err("recursion");
        assert!(err.message.contains("nested deeper than 64"), "{err}");
        let plain = Engine::new(&loader).with_delims(Delims::brackets());
        let err = plain
            .render("dir/a.conf", &vars, &Value::Null)
            .expect_err("not enabled");
        assert_eq!(err.message, "function \"render\" is not defined");
    }

    #[test]
    fn output_is_bounded() {
        let err = render(r#"{{ range ints(0, 100) }}{{ repeat("x", 1000000) }}{{ end }}"#)
            .expect_err("too big");
        assert!(err.message.starts_with("output exceeds"), "{err}");
    }

    #[test]
    fn line_and_column_count_characters() {
        assert_eq!(line_column("ab\ncé d", 7), (2, 4));
        assert_eq!(line_column("x", 0), (1, 1));
    }
}
