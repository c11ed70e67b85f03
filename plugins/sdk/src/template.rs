//! Templates: every string property of a resource is a minijinja template
//! with `facts`, `data` and `env` in scope.
//!
//! HTML escaping is off, and undefined values are strict: printing,
//! iterating or testing an undefined variable is an error that carries the
//! offending expression, never an empty string. `lookup('facts.os.id',
//! default)` walks a dotted path for CCM-style templates. Build one
//! [`TemplateContext`] per process; strings without template syntax are
//! returned without touching the engine, so rendering thousands of plain
//! properties costs next to nothing.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use minijinja::value::Value as JinjaValue;
use minijinja::{AutoEscape, Environment, ErrorKind, UndefinedBehavior};
use toml::{Table, Value};

use crate::data;
use crate::facts::{self, Facts};

/// A template failed to render. The resource loader prefixes `FILE:LINE`;
/// `line` is the 1-based line inside the template text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    message: String,
    expression: Option<String>,
    line: usize,
}

impl TemplateError {
    /// What went wrong and what to do, without the expression.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The tag that failed, such as `{{ data.port }}`, when known.
    pub fn expression(&self) -> Option<&str> {
        self.expression.as_deref()
    }

    /// The 1-based line inside the template where it failed.
    pub fn line(&self) -> usize {
        self.line
    }
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.expression {
            Some(expression) => write!(f, "in `{}`: {}", expression, self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for TemplateError {}

/// The facts or the data could not be loaded.
pub type LoadError = facts::Error;

/// Facts, data and environment, compiled into one template engine.
pub struct TemplateContext {
    engine: Environment<'static>,
    facts: Facts,
    data: Table,
    facts_value: JinjaValue,
    env_value: JinjaValue,
}

impl fmt::Debug for TemplateContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TemplateContext")
            .field("facts", &self.facts)
            .field("data", &self.data)
            .finish_non_exhaustive()
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
        // Hierarchy levels and data values are rendered with facts and env only.
        let resolved = data::resolve(root, &context)?;
        context.set_data(resolved);
        Ok(context)
    }

    /// A context from given parts (tests, and plugins with their own sources).
    pub fn new(facts: Facts, data: Table, env_vars: BTreeMap<String, String>) -> TemplateContext {
        let facts_value = to_jinja_table(facts.as_table());
        let env_value = JinjaValue::from(
            env_vars
                .into_iter()
                .map(|(k, v)| (k, JinjaValue::from(v)))
                .collect::<BTreeMap<String, JinjaValue>>(),
        );
        let mut context = TemplateContext {
            engine: Environment::new(),
            facts,
            data: Table::new(),
            facts_value,
            env_value,
        };
        context.set_data(data);
        context
    }

    fn set_data(&mut self, data: Table) {
        // Cannot fail: the default delimiters are valid.
        if let Ok(engine) = self.engine_over(&data, None) {
            self.engine = engine;
        }
        self.data = data;
    }

    /// A separate engine for a tree of templates (scaffold): the same
    /// globals and rules, with the top-level keys of `extra` merged over
    /// `data`, and, when given, other delimiters: `LEFT expr RIGHT` for
    /// `{{ }}`, `LEFT% ... %RIGHT` for `{% %}`, `LEFT# ... #RIGHT` for `{# #}`.
    pub fn tree_engine(
        &self,
        extra: &Table,
        delimiters: Option<(&str, &str)>,
    ) -> Result<Environment<'static>, String> {
        let mut data = self.data.clone();
        for (key, value) in extra {
            data.insert(key.clone(), value.clone());
        }
        self.engine_over(&data, delimiters)
    }

    fn engine_over(
        &self,
        data: &Table,
        delimiters: Option<(&str, &str)>,
    ) -> Result<Environment<'static>, String> {
        let mut engine = Environment::new();
        engine.set_undefined_behavior(UndefinedBehavior::Strict);
        engine.set_auto_escape_callback(|_| AutoEscape::None);
        let mut syntax = minijinja::syntax::SyntaxConfig::builder();
        // Config files end in a newline; Jinja's default would eat it.
        syntax.keep_trailing_newline(true);
        if let Some((left, right)) = delimiters {
            syntax
                .variable_delimiters(left.to_string(), right.to_string())
                .block_delimiters(format!("{left}%"), format!("%{right}"))
                .comment_delimiters(format!("{left}#"), format!("#{right}"));
        }
        engine.set_syntax(
            syntax
                .build()
                .map_err(|err| format!("invalid template delimiters: {err}"))?,
        );
        let data_value = to_jinja_table(data);
        engine.add_global("facts", self.facts_value.clone());
        engine.add_global("env", self.env_value.clone());
        engine.add_global("data", data_value.clone());
        let scope = Arc::new(ScopeForLookup {
            facts: self.facts_value.clone(),
            data: data_value,
            env: self.env_value.clone(),
        });
        engine.add_function("lookup", move |path: &str, default: Option<JinjaValue>| {
            scope.lookup(path, default)
        });
        Ok(engine)
    }

    /// The facts in scope.
    pub fn facts(&self) -> &Facts {
        &self.facts
    }

    /// The resolved data in scope (what `holo-file data` prints).
    pub fn data(&self) -> &Table {
        &self.data
    }

    /// The resolved data as a TOML document.
    pub fn data_toml(&self) -> String {
        facts::table_to_toml(&self.data)
    }

    /// Whether `text` contains template syntax at all.
    pub fn is_template(text: &str) -> bool {
        text.contains("{{") || text.contains("{%") || text.contains("{#")
    }

    /// Renders one string. Plain strings come back unchanged without
    /// compiling anything.
    pub fn render(&self, text: &str) -> Result<String, TemplateError> {
        if !Self::is_template(text) {
            return Ok(text.to_string());
        }
        self.engine
            .render_str(text, minijinja::context! {})
            .map_err(|err| to_template_error(&err, text))
    }

    /// Evaluates a bare expression such as `facts.os.id == "debian"` (the
    /// `if`/`unless` properties) with Jinja's truthiness. Undefined values
    /// are errors here too.
    pub fn is_true(&self, expression: &str) -> Result<bool, TemplateError> {
        let to_error = |err: minijinja::Error| {
            let mut error = to_template_error(&err, expression);
            error.expression = Some(expression.to_string());
            error
        };
        let compiled = self
            .engine
            .compile_expression(expression)
            .map_err(to_error)?;
        let value = compiled.eval(minijinja::context! {}).map_err(to_error)?;
        if value.is_undefined() {
            // Strict mode catches undefined values inside an expression, not
            // an expression that is one as a whole.
            return Err(to_error(minijinja::Error::new(
                ErrorKind::UndefinedError,
                "the expression is undefined",
            )));
        }
        Ok(value.is_true())
    }
}

/// The three scopes, held for `lookup()`.
struct ScopeForLookup {
    facts: JinjaValue,
    data: JinjaValue,
    env: JinjaValue,
}

impl ScopeForLookup {
    fn lookup(
        &self,
        path: &str,
        default: Option<JinjaValue>,
    ) -> Result<JinjaValue, minijinja::Error> {
        let mut segments = path.split('.');
        let mut current = match segments.next() {
            Some("facts") => Some(self.facts.clone()),
            Some("data") => Some(self.data.clone()),
            Some("env") => Some(self.env.clone()),
            _ => None,
        };
        for segment in segments {
            current = current.and_then(|value| child(&value, segment));
        }
        match (current, default) {
            (Some(value), _) => Ok(value),
            (None, Some(default)) => Ok(default),
            (None, None) => Err(minijinja::Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "lookup('{path}') found nothing; the path starts with facts, data or env, or give a default: lookup('{path}', 'fallback')"
                ),
            )),
        }
    }
}

fn child(value: &JinjaValue, segment: &str) -> Option<JinjaValue> {
    let found = match segment.parse::<usize>() {
        Ok(index) if value.kind() == minijinja::value::ValueKind::Seq => {
            value.get_item_by_index(index)
        }
        _ => value.get_attr(segment),
    }
    .ok()?;
    (!found.is_undefined()).then_some(found)
}

fn to_template_error(err: &minijinja::Error, text: &str) -> TemplateError {
    let expression = err
        .range()
        .and_then(|range| enclosing_tag(text, range))
        .filter(|tag| !tag.is_empty());
    let line = err.line().unwrap_or(1);
    let message = match err.kind() {
        ErrorKind::UndefinedError => format!(
            "{}; define it in etc/holo/data.toml or etc/holo/facts.toml, or give a default with `| default('...')`",
            err.detail().unwrap_or("undefined value")
        ),
        ErrorKind::SyntaxError => format!(
            "template syntax error: {}; fix the template, or set `template = false` to take the text literally",
            err.detail().unwrap_or("invalid syntax")
        ),
        ErrorKind::InvalidOperation => err.detail().unwrap_or("invalid operation").to_string(),
        _ => match err.detail() {
            Some(detail) => format!("{}: {detail}", err.kind()),
            None => err.kind().to_string(),
        },
    };
    TemplateError {
        message,
        expression,
        line,
    }
}

/// The whole `{{ … }}` or `{% … %}` tag around the span minijinja blames, so
/// that the message shows what the user wrote rather than a fragment of it.
fn enclosing_tag(text: &str, range: std::ops::Range<usize>) -> Option<String> {
    let before = text.get(..range.start)?;
    let start = before.rfind("{{").max(before.rfind("{%"))?;
    let after = text.get(range.end..)?;
    let end = ["}}", "%}"]
        .iter()
        .filter_map(|close| after.find(close).map(|at| range.end + at + close.len()))
        .min()
        .unwrap_or(text.len());
    Some(text.get(start..end)?.trim_end().to_string())
}

/// Converts a TOML tree into template values.
fn to_jinja_table(table: &Table) -> JinjaValue {
    JinjaValue::from(
        table
            .iter()
            .map(|(key, value)| (key.clone(), to_jinja(value)))
            .collect::<BTreeMap<String, JinjaValue>>(),
    )
}

fn to_jinja(value: &Value) -> JinjaValue {
    match value {
        Value::String(text) => JinjaValue::from(text.as_str()),
        Value::Integer(number) => JinjaValue::from(*number),
        Value::Float(number) => JinjaValue::from(*number),
        Value::Boolean(flag) => JinjaValue::from(*flag),
        Value::Datetime(datetime) => JinjaValue::from(datetime.to_string()),
        Value::Array(items) => JinjaValue::from(items.iter().map(to_jinja).collect::<Vec<_>>()),
        Value::Table(inner) => to_jinja_table(inner),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context() -> TemplateContext {
        let facts: Table = toml::from_str(
            "hostname = \"web01\"\ncpus = 4\n[os]\nid = \"debian\"\n[[interfaces]]\nname = \"eth0\"\naddresses = [\"10.0.0.5\"]\n",
        )
        .expect("facts");
        let data: Table =
            toml::from_str("port = 8080\npackages = [\"a\", \"b\"]\n[web]\ntls = true\n")
                .expect("data");
        let env = BTreeMap::from([("LANG".to_string(), "C.UTF-8".to_string())]);
        TemplateContext::new(Facts::from_table(facts), data, env)
    }

    #[test]
    fn renders_facts_data_env_and_keeps_the_trailing_newline() {
        let out = context()
            .render("host={{ facts.hostname }} os={{ facts.os.id }} port={{ data.port }} lang={{ env.LANG }}\n")
            .expect("render");
        assert_eq!(out, "host=web01 os=debian port=8080 lang=C.UTF-8\n");
    }

    #[test]
    fn conditions_are_expressions_with_jinja_truthiness() {
        let context = context();
        assert_eq!(context.is_true("facts.os.id == 'debian'"), Ok(true));
        assert_eq!(context.is_true("data.port > 9000"), Ok(false));
        assert_eq!(
            context.is_true("'b' in data.packages and data.web.tls"),
            Ok(true)
        );
        assert_eq!(context.is_true("lookup('data.missing', '')"), Ok(false));
        let err = context.is_true("data.nope == 1").expect_err("undefined");
        assert!(err.message().contains("undefined"), "{err}");
        assert_eq!(err.expression(), Some("data.nope == 1"));
        assert!(context.is_true("facts.os.id ==").is_err());
        let err = context
            .is_true("data.nope")
            .expect_err("undefined as a whole");
        assert!(err.message().contains("undefined"), "{err}");
    }

    #[test]
    fn html_escaping_is_off() {
        let out = context()
            .render("{{ '<a href=\"x\">&</a>' }}")
            .expect("render");
        assert_eq!(out, "<a href=\"x\">&</a>");
    }

    #[test]
    fn loops_and_conditions_work() {
        let out = context()
            .render("{% for p in data.packages %}{{ p }};{% endfor %}{% if data.web.tls %}tls{% endif %}")
            .expect("render");
        assert_eq!(out, "a;b;tls");
    }

    #[test]
    fn lookup_walks_dotted_paths_and_falls_back_to_the_default() {
        let ctx = context();
        assert_eq!(
            ctx.render("{{ lookup('facts.os.id') }}").expect("render"),
            "debian"
        );
        assert_eq!(
            ctx.render("{{ lookup('facts.interfaces.0.addresses.0') }}")
                .expect("render"),
            "10.0.0.5"
        );
        assert_eq!(
            ctx.render("{{ lookup('data.nope', 'dflt') }}")
                .expect("render"),
            "dflt"
        );
        assert_eq!(
            ctx.render("{{ lookup('facts.cpus', 1) + 1 }}")
                .expect("render"),
            "5"
        );
        let err = ctx
            .render("{{ lookup('facts.nope') }}")
            .expect_err("no default");
        assert!(
            err.message().contains("lookup('facts.nope') found nothing"),
            "{err}"
        );
    }

    #[test]
    fn an_undefined_variable_is_an_error_with_expression_and_line() {
        let err = context()
            .render("line one\nport = {{ data.missing }}\n")
            .expect_err("strict undefined");
        assert_eq!(err.line(), 2);
        assert_eq!(err.expression(), Some("{{ data.missing }}"));
        assert!(err.to_string().contains("data.missing"), "{err}");
        let err = context()
            .render("{{ nothing }}")
            .expect_err("strict undefined");
        assert_eq!(err.expression(), Some("{{ nothing }}"));
        let err = context()
            .render("{% if data.nope %}x{% endif %}")
            .expect_err("strict if");
        assert_eq!(err.expression(), Some("{% if data.nope %}"));
    }

    #[test]
    fn defined_tests_and_default_filter_still_work_in_strict_mode() {
        let out = context()
            .render("{{ data.nope | default('d') }}{% if data.nope is defined %}x{% endif %}")
            .expect("render");
        assert_eq!(out, "d");
    }

    #[test]
    fn a_syntax_error_says_how_to_take_text_literally() {
        let err = context().render("a\nb {{ data.port ").expect_err("syntax");
        assert_eq!(err.line(), 2);
        assert!(err.message().contains("template = false"), "{err}");
    }

    #[test]
    fn plain_strings_pass_through_untouched() {
        let ctx = context();
        for text in ["", "plain", "{ not a template }", "100% {x}"] {
            assert_eq!(ctx.render(text).expect("plain"), text);
        }
    }

    #[test]
    fn load_gathers_facts_and_resolves_data_below_the_root() {
        let root = tempfile::tempdir().expect("tempdir");
        let etc = root.path().join("etc");
        std::fs::create_dir_all(etc.join("holo")).expect("mkdir");
        std::fs::write(etc.join("hostname"), "db1\n").expect("write");
        std::fs::write(etc.join("os-release"), "ID=debian\n").expect("write");
        std::fs::write(
            etc.join("holo/data.toml"),
            "[data]\nrole = \"base\"\n[hierarchy]\norder = [\"os:{{ facts.os.id }}\"]\n[overrides.\"os:debian\"]\nrole = \"debian on {{ facts.hostname }}\"\n",
        )
        .expect("write");
        let ctx = TemplateContext::load(root.path(), true).expect("load");
        assert_eq!(
            ctx.render("{{ data.role }}").expect("render"),
            "debian on db1"
        );
        assert!(ctx.data_toml().contains("role = \"debian on db1\""));
        assert!(ctx.facts().to_toml().contains("hostname = \"db1\""));
    }
}
