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
//!
//! With [`TemplateContext::with_files`], templates may also read files of
//! the plugin's resource directory: `template('nginx/site.conf.j2')` renders
//! a template file with the same globals, `readFile('motd.txt')` inserts a
//! file verbatim, and `{% include %}`/`{% import %}` load through the same
//! loader. Every such path is relative to the resource directory and stays
//! inside it: absolute paths, `..` and symlinks that lead out are refused
//! with a message saying so. Errors inside a template file carry its name
//! ([`TemplateError::file`]) and its own line.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use minijinja::value::Value as JinjaValue;
use minijinja::{AutoEscape, Environment, ErrorKind, State, TemplateSource, UndefinedBehavior};
use toml::{Table, Value};

use crate::facts::{self, Facts};

/// How many bytes one render may produce unless `max_render_size` says
/// otherwise: 64 MiB.
pub const DEFAULT_MAX_RENDER_SIZE: usize = 64 << 20;

/// How many steps (minijinja's fuel: about one per operation) one render
/// may take: far above any configuration file, and a second or so of work,
/// so that a loop nested too deep fails at its line instead of running on.
pub const MAX_TEMPLATE_STEPS: u64 = 20_000_000;

/// A writer that keeps what a template renders up to a limit and fails
/// the write that would cross it, so that every engine that renders into
/// a writer stops there.
#[derive(Debug)]
pub struct LimitedOutput {
    pub bytes: Vec<u8>,
    limit: usize,
    /// A write failed because it would have crossed the limit.
    pub exceeded: bool,
}

impl LimitedOutput {
    pub fn new(limit: usize) -> LimitedOutput {
        LimitedOutput {
            bytes: Vec::new(),
            limit,
            exceeded: false,
        }
    }

    /// What to say when the limit was crossed.
    pub fn exceeded_message(&self) -> String {
        format!(
            "the template renders more than {} bytes (max_render_size); make it render less, or raise max_render_size on this resource",
            self.limit
        )
    }
}

impl std::io::Write for LimitedOutput {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.bytes.len() + buf.len() > self.limit {
            self.exceeded = true;
            return Err(std::io::Error::other("max_render_size exceeded"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A template failed to render. The resource loader prefixes `FILE:LINE`;
/// `line` is the 1-based line inside the template text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    message: String,
    expression: Option<String>,
    line: usize,
    file: Option<String>,
    may_be_literal: bool,
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

    /// The 1-based line inside the template where it failed: inside the
    /// template file when [`file`](Self::file) names one.
    pub fn line(&self) -> usize {
        self.line
    }

    /// The template file (relative to the resource directory) where it
    /// failed, when the error is inside one rather than in the string itself.
    pub fn file(&self) -> Option<&str> {
        self.file.as_deref()
    }

    /// Whether the text may not have been meant as a template at all (a
    /// syntax error, an undefined name), so that taking it literally is
    /// worth suggesting.
    pub fn may_be_literal(&self) -> bool {
        self.may_be_literal
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

/// The name minijinja gives a string rendered with `render_str`.
const STRING_NAME: &str = "<string>";

/// How deep templates may include, import or `template()` each other; far
/// more than any configuration needs, and well within the stack.
const MAX_DEPTH: usize = 64;

/// Facts, data and environment, compiled into one template engine.
pub struct TemplateContext {
    engine: Environment<'static>,
    /// How many bytes one render may produce (`max_render_size`).
    max_render_size: usize,
    facts: Facts,
    data: Table,
    facts_value: JinjaValue,
    env_value: JinjaValue,
    /// In test mode: where machine-only facts must be set.
    facts_file: Option<PathBuf>,
    files: Option<Arc<TemplateFiles>>,
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
    // `TemplateContext::load` is in `data.rs`, beside the data it resolves,
    // so that templates do not depend on the data loader.

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
            max_render_size: DEFAULT_MAX_RENDER_SIZE,
            engine: bounded_environment(),
            facts,
            data: Table::new(),
            facts_value,
            env_value,
            facts_file: None,
            files: None,
        };
        context.set_data(data);
        context
    }

    /// Lets templates read files below `dir` (the plugin's resource
    /// directory) with `template()`, `readFile()`, `{% include %}` and
    /// `{% import %}`; `shown` is the same directory as messages name it
    /// (`HOLO_RESOURCE_ORIGIN`).
    pub fn with_files(mut self, dir: &Path, shown: &Path) -> TemplateContext {
        self.files = Some(Arc::new(TemplateFiles::new(dir, shown, false)));
        let data = std::mem::take(&mut self.data);
        self.set_data(data);
        self
    }

    /// The files below the resource directory that templates have read so
    /// far (through [`with_files`](Self::with_files)), or looked for and
    /// not found, as paths below it.
    pub fn files_read(&self) -> BTreeSet<PathBuf> {
        self.files
            .as_ref()
            .and_then(|files| files.read.lock().ok().map(|read| read.clone()))
            .unwrap_or_default()
    }

    /// Whether templates have read `path` (a file below the resource
    /// directory).
    pub fn has_read(&self, path: &Path) -> bool {
        self.files
            .as_ref()
            .is_some_and(|files| files.read.lock().is_ok_and(|read| read.contains(path)))
    }

    /// In test mode: where machine-only facts must be set.
    pub(crate) fn set_facts_file(&mut self, path: PathBuf) {
        self.facts_file = Some(path);
    }

    pub(crate) fn set_data(&mut self, data: Table) {
        // Cannot fail: the default delimiters are valid.
        if let Ok(engine) = self.engine_over(&data, None, self.files.as_ref()) {
            self.engine = engine;
        }
        self.data = data;
    }

    /// A separate engine for the template tree `tree` (scaffold): the
    /// same globals and rules, with the top-level keys of `extra` merged
    /// over `data`, and, when given, other delimiters: `LEFT expr RIGHT` for
    /// `{{ }}`, `LEFT% ... %RIGHT` for `{% %}`, `LEFT# ... #RIGHT` for `{# #}`.
    /// `{% include %}`, `{% import %}`, `template()` and `readFile()` read
    /// files of the tree only, by the rules of [`with_files`](Self::with_files).
    pub fn tree_templates(
        &self,
        extra: &Table,
        delimiters: Option<(&str, &str)>,
        tree: &Path,
    ) -> Result<TreeTemplates, String> {
        let mut data = self.data.clone();
        for (key, value) in extra {
            data.insert(key.clone(), value.clone());
        }
        let files = Arc::new(TemplateFiles::new(tree, tree, true));
        Ok(TreeTemplates {
            engine: self.engine_over(&data, delimiters, Some(&files))?,
            files,
            machine_facts: self.missing_machine_facts(),
        })
    }

    fn engine_over(
        &self,
        data: &Table,
        delimiters: Option<(&str, &str)>,
        files: Option<&Arc<TemplateFiles>>,
    ) -> Result<Environment<'static>, String> {
        let mut engine = bounded_environment();
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
            machine_facts: self.missing_machine_facts(),
        });
        engine.add_function("lookup", move |path: &str, default: Option<JinjaValue>| {
            scope.lookup(path, default)
        });
        if let Some(files) = files {
            engine.set_recursion_limit(MAX_DEPTH);
            let loader = Arc::clone(files);
            engine.set_loader(move |name| loader.load(name));
            let rendering = Arc::clone(files);
            engine.add_function("template", move |state: &State, name: &str| {
                rendering.render(state, name)
            });
            let reading = Arc::clone(files);
            engine.add_function("readFile", move |name: &str| reading.read_file(name));
        }
        Ok(engine)
    }

    /// In test mode, the machine-only facts that facts.toml does not set,
    /// with the file to set them in.
    fn missing_machine_facts(&self) -> Option<MachineFacts> {
        let file = self.facts_file.clone()?;
        let missing: Vec<&'static str> = facts::MACHINE_FACTS
            .iter()
            .copied()
            .filter(|name| self.facts.get(name).is_none())
            .collect();
        (!missing.is_empty()).then_some(MachineFacts { file, missing })
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
        self.render_within(text, self.max_render_size)
    }

    /// The budget of [`TemplateContext::render`].
    pub fn max_render_size(&self) -> usize {
        self.max_render_size
    }

    /// The budget of [`TemplateContext::render`] from now on.
    pub fn set_max_render_size(&mut self, bytes: usize) {
        self.max_render_size = bytes;
    }

    /// Renders one string into at most `limit` bytes: a template that
    /// writes more fails at the line that crossed the limit, before it
    /// holds more than that in memory.
    pub fn render_within(&self, text: &str, limit: usize) -> Result<String, TemplateError> {
        render_text(&self.engine, text, limit, |err| {
            self.to_template_error(err, text)
        })
    }

    /// Evaluates a bare expression such as `facts.os.id == "debian"` (the
    /// `if`/`unless` properties) with Jinja's truthiness. Undefined values
    /// are errors here too.
    pub fn is_true(&self, expression: &str) -> Result<bool, TemplateError> {
        let to_error = |err: minijinja::Error| {
            let mut error = self.to_template_error(&err, expression);
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

    /// A minijinja error as the user sees it: the tag that failed, the line,
    /// the template file when the error is inside one, and what to do.
    fn to_template_error(&self, err: &minijinja::Error, text: &str) -> TemplateError {
        template_error(
            &self.engine,
            self.files.as_deref(),
            self.missing_machine_facts(),
            err,
            text,
        )
    }
}

/// A minijinja environment whose every render stops after
/// [`MAX_TEMPLATE_STEPS`].
fn bounded_environment() -> Environment<'static> {
    let mut engine = Environment::new();
    engine.set_fuel(Some(MAX_TEMPLATE_STEPS));
    engine
}

/// The engine of a template tree; see [`TemplateContext::tree_templates`].
pub struct TreeTemplates {
    engine: Environment<'static>,
    files: Arc<TemplateFiles>,
    machine_facts: Option<MachineFacts>,
}

impl TreeTemplates {
    /// Renders `text` (a file of the tree, or its name), writing at most
    /// `limit` bytes; errors as [`TemplateContext::render`] gives them.
    pub fn render_within(&self, text: &str, limit: usize) -> Result<String, TemplateError> {
        render_text(&self.engine, text, limit, |err| {
            template_error(
                &self.engine,
                Some(&self.files),
                self.machine_facts.clone(),
                err,
                text,
            )
        })
    }
}

/// `text` rendered with `engine` up to `limit` bytes; `describe` words a
/// failure.
fn render_text(
    engine: &Environment<'static>,
    text: &str,
    limit: usize,
    describe: impl Fn(&minijinja::Error) -> TemplateError,
) -> Result<String, TemplateError> {
    if !TemplateContext::is_template(text) {
        return Ok(text.to_string());
    }
    let mut out = LimitedOutput::new(limit);
    let rendered = engine.template_from_str(text).and_then(|template| {
        template
            .render_captured_to(minijinja::context! {}, &mut out)
            .map(|_| ())
    });
    match rendered {
        Ok(()) => String::from_utf8(out.bytes).map_err(|_| TemplateError {
            message: "the template rendered bytes that are not UTF-8".into(),
            expression: None,
            line: 1,
            file: None,
            may_be_literal: false,
        }),
        Err(err) => {
            let mut error = describe(&err);
            if out.exceeded {
                error.message = out.exceeded_message();
                error.may_be_literal = false;
            }
            Err(error)
        }
    }
}

/// A minijinja error as the user sees it: the tag that failed, the line,
/// the template file when the error is inside one, and what to do.
fn template_error(
    engine: &Environment<'static>,
    files: Option<&TemplateFiles>,
    machine_facts: Option<MachineFacts>,
    err: &minijinja::Error,
    text: &str,
) -> TemplateError {
    // An include wraps the error of the included template: report that one.
    let mut err = err;
    while let Some(inner) = std::error::Error::source(err)
        .and_then(|source| source.downcast_ref::<minijinja::Error>())
        .filter(|inner| inner.line().is_some())
    {
        err = inner;
    }
    let file = err
        .name()
        .filter(|name| *name != STRING_NAME)
        .map(str::to_string);
    // The failing tag is in the template file's source, not in `text`.
    let source = match &file {
        Some(name) => engine
            .get_template(name)
            .map(|template| template.source().to_string())
            .ok(),
        None => Some(text.to_string()),
    };
    let expression = source
        .as_deref()
        .zip(err.range())
        .and_then(|(source, range)| enclosing_tag(source, range))
        .filter(|tag| !tag.is_empty());
    let line = err.line().unwrap_or(1);
    let detail = err.detail();
    // A machine-only fact that test mode lacks, used in the failing tag.
    let machine = (err.kind() == ErrorKind::UndefinedError
        || detail.is_some_and(|detail| detail.contains("is undefined")))
    .then_some(machine_facts)
    .flatten()
    .and_then(|machine| {
        let mentioned = format!(
            "{} {}",
            detail.unwrap_or_default(),
            expression.as_deref().unwrap_or_default()
        );
        machine.hint_for(&mentioned)
    });
    let machine_fact = machine.is_some();
    let message = match (err.kind(), machine) {
        (_, Some(hint)) => format!("{}; {hint}", detail.unwrap_or("undefined value")),
        (ErrorKind::UndefinedError, None) => format!(
            "{}; define it in etc/holo/data.toml or etc/holo/facts.toml, or give a default with `| default('...')`",
            detail.unwrap_or("undefined value")
        ),
        (ErrorKind::SyntaxError, None) => format!(
            "template syntax error: {}; fix the template",
            detail.unwrap_or("invalid syntax")
        ),
        (ErrorKind::TemplateNotFound, None) => match files {
            Some(files) => format!(
                "{}; template files are read relative to {}",
                detail.unwrap_or("template not found"),
                files.shown.display()
            ),
            None => format!(
                "{}; only resources read by a plugin may include template files",
                detail.unwrap_or("template not found")
            ),
        },
        (ErrorKind::InvalidOperation, None) => detail.unwrap_or("invalid operation").to_string(),
        (ErrorKind::OutOfFuel, None) => format!(
            "the template takes more than {MAX_TEMPLATE_STEPS} steps to render (a loop too long, or loops nested too deep); make it do less"
        ),
        _ => match detail {
            Some(detail) => format!("{}: {detail}", err.kind()),
            None => err.kind().to_string(),
        },
    };
    let may_be_literal = !machine_fact
        && matches!(
            err.kind(),
            ErrorKind::SyntaxError
                | ErrorKind::UndefinedError
                | ErrorKind::UnknownFunction
                | ErrorKind::UnknownFilter
                | ErrorKind::UnknownTest
        );
    TemplateError {
        message,
        expression,
        line,
        file,
        may_be_literal,
    }
}

/// The facts that exist only on a real machine and are missing in test
/// mode, and the facts file where a test sets them.
#[derive(Debug, Clone)]
struct MachineFacts {
    file: PathBuf,
    missing: Vec<&'static str>,
}

impl MachineFacts {
    /// The advice for a failure whose text mentions one of the missing facts.
    fn hint_for(&self, text: &str) -> Option<String> {
        let name = self.missing.iter().find(|name| {
            [
                format!("facts.{name}"),
                format!("facts['{name}']"),
                format!("facts[\"{name}\"]"),
            ]
            .iter()
            .any(|spelling| {
                text.match_indices(spelling.as_str()).any(|(at, _)| {
                    // `facts.cpus` but not `facts.cpus_max`
                    !text[at + spelling.len()..]
                        .starts_with(|c: char| c.is_alphanumeric() || c == '_')
                })
            })
        })?;
        let example = facts::machine_fact_example(name);
        Some(format!(
            "the fact `{name}` is gathered only on a real machine, not in test mode: set it in $HOLO_ROOT_DIR/{} ({}), for example `{example}`",
            facts::FACTS_FILE,
            self.file.display()
        ))
    }
}

type Loader = dyn Fn(&str) -> Result<Option<TemplateSource>, minijinja::Error> + Send + Sync;

/// The files of a resource directory that templates may read, and the
/// ones they have read.
struct TemplateFiles {
    dir: PathBuf,
    shown: PathBuf,
    /// minijinja's path loader over `dir`, asked once a name is known to
    /// stay inside it.
    loader: Box<Loader>,
    /// What templates read, and what they looked for and did not find (a
    /// file made there later changes what they render).
    read: Mutex<BTreeSet<PathBuf>>,
    /// Nested `template()` calls, which minijinja's own limit cannot see.
    depth: AtomicUsize,
    /// A scaffold's template tree rather than a resource directory.
    tree: bool,
}

impl TemplateFiles {
    fn new(dir: &Path, shown: &Path, tree: bool) -> TemplateFiles {
        TemplateFiles {
            dir: dir.to_path_buf(),
            shown: shown.to_path_buf(),
            loader: Box::new(minijinja::path_loader(dir.to_path_buf())),
            read: Mutex::new(BTreeSet::new()),
            depth: AtomicUsize::new(0),
            tree,
        }
    }

    /// What the files are read from, in messages.
    fn place(&self) -> &'static str {
        if self.tree {
            "template tree"
        } else {
            "resource directory"
        }
    }

    /// The file that `name` names below the directory; `Ok(None)` when it
    /// does not exist. Absolute names, `..` and symlinks out are errors.
    fn resolve(&self, name: &str, what: &str) -> Result<Option<PathBuf>, minijinja::Error> {
        let place = self.place();
        let refuse = |why: String| {
            let rule = if self.tree {
                format!(
                    "includes are read only from the template tree {}",
                    self.shown.display()
                )
            } else {
                format!(
                    "{what} paths are relative to {} and stay inside it",
                    self.shown.display()
                )
            };
            Err(minijinja::Error::new(
                ErrorKind::InvalidOperation,
                format!("{what} {name:?} {why}; {rule}"),
            ))
        };
        let relative = Path::new(name);
        if name.is_empty() {
            return refuse("is empty".to_string());
        }
        let mut normal = PathBuf::new();
        for component in relative.components() {
            match component {
                Component::Normal(part) => normal.push(part),
                Component::CurDir => {}
                Component::RootDir | Component::Prefix(_) => {
                    return refuse(format!("is absolute, which leaves the {place}"));
                }
                Component::ParentDir => {
                    return refuse(format!("leaves the {place} with .."));
                }
            }
        }
        let path = self.dir.join(&normal);
        match (path.canonicalize(), self.dir.canonicalize()) {
            (Ok(real), Ok(dir)) if !real.starts_with(&dir) => {
                // The link as written; the resolved path would name the
                // machine's layout rather than the resource.
                let link = std::fs::read_link(&path)
                    .map(|target| format!(" (-> {})", target.display()))
                    .unwrap_or_default();
                refuse(format!("is a symlink out of the {place}{link}"))
            }
            (Ok(_), Ok(_)) => {
                if let Ok(mut read) = self.read.lock() {
                    read.insert(path.clone());
                }
                Ok(Some(path))
            }
            (Err(err), _) if err.kind() == std::io::ErrorKind::NotFound => {
                if let Ok(mut read) = self.read.lock() {
                    read.insert(path);
                }
                Ok(None)
            }
            (Err(err), _) | (_, Err(err)) => Err(minijinja::Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "cannot read {what} {}: {err}",
                    self.shown.join(&normal).display()
                ),
            )),
        }
    }

    /// The loader behind `{% include %}`, `{% import %}` and `template()`.
    fn load(&self, name: &str) -> Result<Option<TemplateSource>, minijinja::Error> {
        let Some(path) = self.resolve(name, "template")? else {
            return Ok(None);
        };
        let relative = path.strip_prefix(&self.dir).unwrap_or(&path);
        (self.loader)(&relative.to_string_lossy())
    }

    fn read_text(&self, path: &Path) -> Result<String, minijinja::Error> {
        let shown = self
            .shown
            .join(path.strip_prefix(&self.dir).unwrap_or(path));
        std::fs::read_to_string(path).map_err(|err| {
            minijinja::Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "cannot read {}: {err}; it must be a readable UTF-8 file",
                    shown.display()
                ),
            )
        })
    }

    /// `template(NAME)`: the template file rendered with the globals.
    fn render(&self, state: &State, name: &str) -> Result<String, minijinja::Error> {
        let depth = self.depth.fetch_add(1, Ordering::SeqCst);
        let result = if depth >= MAX_DEPTH {
            Err(minijinja::Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "template({name:?}) is nested more than {MAX_DEPTH} deep; does a template call itself?"
                ),
            ))
        } else {
            state
                .env()
                .get_template(name)
                .and_then(|template| template.render(minijinja::context! {}))
        };
        self.depth.fetch_sub(1, Ordering::SeqCst);
        result
    }

    /// `readFile(NAME)`: the file's text, not rendered.
    fn read_file(&self, name: &str) -> Result<String, minijinja::Error> {
        match self.resolve(name, "readFile")? {
            Some(path) => self.read_text(&path),
            None => Err(minijinja::Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "readFile({name:?}): {} does not exist; paths are relative to {}",
                    self.shown.join(name).display(),
                    self.shown.display()
                ),
            )),
        }
    }
}

/// The three scopes, held for `lookup()`.
struct ScopeForLookup {
    facts: JinjaValue,
    data: JinjaValue,
    env: JinjaValue,
    machine_facts: Option<MachineFacts>,
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
                match self
                    .machine_facts
                    .as_ref()
                    .and_then(|machine| machine.hint_for(path))
                {
                    Some(hint) => format!("lookup('{path}') found nothing: {hint}"),
                    None => format!(
                        "lookup('{path}') found nothing; the path starts with facts, data or env, or give a default: lookup('{path}', 'fallback')"
                    ),
                },
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
    fn a_loop_without_output_runs_out_of_fuel_with_its_line() {
        let busy = "a\nb\n{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}";
        let err = context().render(busy).expect_err("10^10 iterations");
        assert_eq!(err.line(), 3, "{err}");
        assert!(
            err.message().contains("more than 20000000 steps")
                && err.message().contains("make it do less"),
            "{err}"
        );
        // A tree's engine (holo-scaffold's minijinja) is bounded too.
        let dir = tempfile::tempdir().expect("tempdir");
        let tree = context()
            .tree_templates(&Table::new(), None, dir.path())
            .expect("tree");
        let err = tree.render_within(busy, 1 << 20).expect_err("tree");
        assert_eq!(err.line(), 3, "{err}");
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
    fn a_syntax_error_says_to_fix_the_template() {
        let err = context().render("a\nb {{ data.port ").expect_err("syntax");
        assert_eq!(err.line(), 2);
        assert!(err.message().ends_with("; fix the template"), "{err}");
        // The resource loader adds `template = false`, which only it knows.
        assert!(!err.message().contains("template = false"), "{err}");
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
    /// A context whose templates read files from a fresh resource directory.
    fn with_files(files: &[(&str, &str)]) -> (tempfile::TempDir, TemplateContext) {
        let dir = tempfile::tempdir().expect("tempdir");
        let resources = dir.path().join("resources");
        for (name, text) in files {
            let path = resources.join(name);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        }
        let context = context().with_files(&resources, Path::new("/origin"));
        (dir, context)
    }

    #[test]
    fn template_files_render_with_the_same_globals_and_include_relative_to_the_directory() {
        let (dir, ctx) = with_files(&[
            (
                "nginx/site.conf.j2",
                "{% import 'nginx/macros.j2' as m %}server {{ facts.hostname }}:{{ data.port }}\n{% include 'nginx/extra.j2' %}{{ m.listen(443) }}\n",
            ),
            ("nginx/extra.j2", "# {{ env.LANG }}\n"),
            (
                "nginx/macros.j2",
                "{% macro listen(port) %}listen {{ port }};{% endmacro %}",
            ),
            ("motd.txt", "raw {{ not rendered }}\n"),
        ]);
        let out = ctx
            .render("{{ template('nginx/site.conf.j2') }}--{{ readFile('./motd.txt') }}")
            .expect("render");
        assert_eq!(
            out,
            "server web01:8080\n# C.UTF-8\nlisten 443;\n--raw {{ not rendered }}\n"
        );
        let read: Vec<PathBuf> = ctx.files_read().into_iter().collect();
        let resources = dir.path().join("resources");
        for name in [
            "motd.txt",
            "nginx/extra.j2",
            "nginx/macros.j2",
            "nginx/site.conf.j2",
        ] {
            assert!(read.contains(&resources.join(name)), "{name}: {read:?}");
            assert!(ctx.has_read(&resources.join(name)));
        }
    }

    #[test]
    fn errors_inside_a_template_file_name_the_file_and_its_line() {
        let (_dir, ctx) = with_files(&[
            ("a.j2", "one\n{% include 'b.j2' %}"),
            ("b.j2", "x\ny\nport = {{ data.nope }}\n"),
            ("broken.j2", "ok\n{{ data.port \n"),
        ]);
        let err = ctx.render("{{ template('a.j2') }}").expect_err("undefined");
        assert_eq!(err.file(), Some("b.j2"), "{err}");
        assert_eq!(err.line(), 3);
        assert_eq!(err.expression(), Some("{{ data.nope }}"));
        let err = ctx
            .render("{{ template('broken.j2') }}")
            .expect_err("syntax");
        assert_eq!((err.file(), err.line()), (Some("broken.j2"), 2), "{err}");
        assert!(err.message().contains("template syntax error"), "{err}");
        assert!(!err.message().contains("template = false"), "{err}");
        let err = ctx
            .render("x\n{{ template('none.j2') }}")
            .expect_err("missing");
        assert_eq!((err.file(), err.line()), (None, 2), "{err}");
        assert!(err.message().contains("none.j2"), "{err}");
        assert!(err.message().contains("relative to /origin"), "{err}");
    }

    #[test]
    fn paths_out_of_the_resource_directory_are_refused() {
        let (dir, ctx) = with_files(&[("ok.j2", "ok"), ("inc.j2", "{% include '../secret' %}")]);
        std::fs::write(dir.path().join("secret"), "s3cret").expect("write");
        std::os::unix::fs::symlink(dir.path().join("secret"), dir.path().join("resources/link"))
            .expect("symlink");
        std::os::unix::fs::symlink("ok.j2", dir.path().join("resources/inside")).expect("symlink");
        assert_eq!(
            ctx.render("{{ template('inside') }}").expect("inside"),
            "ok"
        );
        for (text, needle) in [
            (
                "{{ template('../secret') }}",
                "leaves the resource directory with ..",
            ),
            (
                "{{ readFile('../secret') }}",
                "leaves the resource directory with ..",
            ),
            ("{{ template('/etc/passwd') }}", "is absolute"),
            (
                "{{ readFile('link') }}",
                "is a symlink out of the resource directory",
            ),
            (
                "{{ template('link') }}",
                "is a symlink out of the resource directory",
            ),
            ("{{ template('inc.j2') }}", "leaves the resource directory"),
            ("{{ readFile('nope') }}", "does not exist"),
        ] {
            let err = ctx.render(text).expect_err(text);
            assert!(err.message().contains(needle), "{text}: {err}");
            assert!(!err.to_string().contains("s3cret"), "{text}: {err}");
        }
    }

    #[test]
    fn a_template_that_calls_itself_stops_with_an_error() {
        let (_dir, ctx) = with_files(&[("self.j2", "{{ template('self.j2') }}")]);
        let err = ctx.render("{{ template('self.j2') }}").expect_err("loop");
        assert!(err.message().contains("nested more than"), "{err}");
        let (_dir, ctx) = with_files(&[("loop.j2", "{% include 'loop.j2' %}")]);
        let err = ctx.render("{% include 'loop.j2' %}").expect_err("loop");
        assert!(err.to_string().contains("recursion"), "{err}");
    }

    #[test]
    fn without_files_the_functions_do_not_exist() {
        let err = context()
            .render("{{ readFile('x') }}")
            .expect_err("unknown");
        assert!(err.to_string().contains("readFile"), "{err}");
    }

    #[test]
    fn machine_facts_missing_in_test_mode_say_where_to_set_them() {
        let root = tempfile::tempdir().expect("tempdir");
        let ctx = TemplateContext::load(root.path(), true).expect("load");
        let facts_file = root.path().join("etc/holo/facts.toml");
        for (text, fact) in [
            ("{{ facts.cpus }}", "cpus"),
            ("{{ facts.memory_mb // 2 }}", "memory_mb"),
            ("{% for i in facts.interfaces %}{% endfor %}", "interfaces"),
            ("{{ lookup('facts.cpus') }}", "cpus"),
        ] {
            let err = ctx.render(text).expect_err(text);
            let wanted = format!(
                "the fact `{fact}` is gathered only on a real machine, not in test mode: set it in $HOLO_ROOT_DIR/etc/holo/facts.toml ({})",
                facts_file.display()
            );
            assert!(err.to_string().contains(&wanted), "{text}: {err}");
        }
        let err = ctx.render("{{ facts.cpus_max }}").expect_err("other");
        assert!(!err.to_string().contains("real machine"), "{err}");
        // Outside test mode the facts exist; a context without a root gives
        // the ordinary advice.
        let err = context()
            .render("{{ facts.memory_mb }}")
            .expect_err("plain");
        assert!(!err.to_string().contains("real machine"), "{err}");
        assert_eq!(
            ctx.render("{{ facts.cpus | default(1) }}")
                .expect("default"),
            "1"
        );
    }
}
