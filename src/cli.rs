//! The `holo` command line: Holo 3's hand-rolled argument rules (options
//! anywhere after the subcommand, anything unknown is a selector), then the
//! run: holorc, generators, scan, order, selection, command.

use crate::apply::{self, Mode};
use crate::loading::{self, EXIT_FATAL};
use crate::output::{Output, Stream};
use crate::plugin::{Chunk, Plugin, StderrLines};
use crate::run_dir::RunDir;
use crate::run_report::{self, EntityResult, RunReport};
use crate::scan::{self, Entity};
use crate::{entity_report, order};
use std::collections::BTreeSet;

use holo_protocol::fast_hash::{FastMap, FastSet};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Command {
    Apply,
    Diff,
    Scan,
    Selectors,
    Version,
}

#[derive(Default, Debug)]
struct Options {
    force: bool,
    noop: bool,
    /// `--monitor-only`: only the health checks run.
    monitor_only: bool,
    short: bool,
    porcelain: bool,
    /// `--report FILE`: the run report goes there instead of the default.
    report: Option<String>,
    /// `--metrics FILE`: the counts in the Prometheus text format.
    metrics: Option<String>,
}

impl Options {
    fn mode(&self) -> Mode {
        match (self.force, self.noop) {
            _ if self.monitor_only => Mode::Monitor,
            (_, true) => Mode::Noop,
            (true, _) => Mode::Force,
            _ => Mode::Apply,
        }
    }
}

/// Entry point; returns the exit code.
pub fn main(args: Vec<String>) -> i32 {
    let program = args.first().cloned().unwrap_or_else(|| "holo".to_string());
    let Some(word) = args.get(1) else {
        eprint!("{}", help_text(&program));
        return 2;
    };
    if word == "session" {
        return crate::session::main(&args[2..]);
    }
    let command = match word.as_str() {
        "apply" => Command::Apply,
        "diff" => Command::Diff,
        "scan" => Command::Scan,
        "selectors" => Command::Selectors,
        "version" | "--version" => Command::Version,
        "import-ccm" => return crate::import_ccm::main(&args[2..]),
        "help" | "--help" | "-h" => {
            print!("{}", help_text(&program));
            return 0;
        }
        _ => {
            eprint!("{}", help_text(&program));
            return 2;
        }
    };
    if command == Command::Version {
        if let Some(extra) = args.get(2) {
            eprintln!(
                "holo version: unexpected argument: {extra} (`holo version` takes no arguments)"
            );
            return 2;
        }
        println!("{}", env!("CARGO_PKG_VERSION"));
        return 0;
    }
    let (options, selectors) = match parse_options(command, &args[2..]) {
        Ok(parsed) => parsed,
        Err(code) => return code,
    };
    crate::interrupt::install();
    let mut out = Output::new();
    if let Err(message) = crate::plugin::check_timeout_variables() {
        out.error(Stream::Err, &message);
        out.flush();
        return EXIT_FATAL;
    }
    let mut reporting = Reporting::new(&options);
    let code = run(command, &options, &selectors, &mut out, &mut reporting);
    // A run that failed before it applied anything is reported too, so that
    // a monitor sees the failure instead of an old success. A run
    // interrupted before it took the lock leaves the report alone: another
    // run may hold the lock.
    let code = if let Some(signal) = crate::interrupt::signal() {
        out.error(Stream::Err, &format!("interrupted by {}", signal.as_str()));
        128 + signal as i32
    } else if command == Command::Apply && !reporting.written {
        reporting.write(&mut out, code, Vec::new())
    } else {
        code
    };
    out.flush();
    code
}

/// The options and selectors after the subcommand; a usage error is
/// printed and its exit code returned.
fn parse_options(command: Command, args: &[String]) -> Result<(Options, Vec<String>), i32> {
    let mut options = Options::default();
    let mut selectors = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match (command, arg.as_str()) {
            (Command::Apply, "-f" | "--force") => options.force = true,
            (Command::Apply, "--noop") => options.noop = true,
            (Command::Apply, "--monitor-only") => options.monitor_only = true,
            (Command::Apply, "--report" | "--metrics") => {
                let Some(file) = rest.next().filter(|file| !file.is_empty()) else {
                    eprintln!("holo apply: {arg} needs a file name, as in `{arg} FILE`");
                    return Err(2);
                };
                *report_option(&mut options, arg) = Some(file.clone());
            }
            (Command::Apply, _)
                if arg.starts_with("--report=") || arg.starts_with("--metrics=") =>
            {
                let (name, file) = arg.split_once('=').unwrap_or_default();
                if file.is_empty() {
                    eprintln!("holo apply: {name} needs a file name, as in `{name}=FILE`");
                    return Err(2);
                }
                *report_option(&mut options, name) = Some(file.to_string());
            }
            (Command::Scan, "-s" | "--short") => options.short = true,
            (Command::Scan, "-p" | "--porcelain") => options.porcelain = true,
            _ => selectors.push(arg.clone()),
        }
    }
    if options.force && options.noop {
        eprintln!("holo apply: --force and --noop cannot be combined");
        return Err(2);
    }
    if options.monitor_only && (options.force || options.noop) {
        eprintln!(
            "holo apply: --monitor-only cannot be combined with --force or --noop; it changes nothing"
        );
        return Err(2);
    }
    if options.short && options.porcelain {
        eprintln!("holo scan: -s/--short and -p/--porcelain cannot be combined; choose one");
        return Err(2);
    }
    Ok((options, selectors))
}

/// The options of a subcommand, for the advice after an unknown one.
fn options_of(command: Command) -> &'static [&'static str] {
    match command {
        Command::Apply => &[
            "--force",
            "--noop",
            "--monitor-only",
            "--report",
            "--metrics",
        ],
        Command::Scan => &["--short", "--porcelain"],
        _ => &[],
    }
}

/// The line after `Unrecognized argument: ARG` when ARG looks like an
/// option: the nearest option of the subcommand, else the list of them.
fn option_advice(command: Command, arg: &str) -> String {
    let name = command_name(command);
    let options = options_of(command);
    let known: Vec<String> = options.iter().map(|o| o.to_string()).collect();
    let near = nearest_ids(arg, &known);
    if !near.is_empty() {
        return format!("Did you mean {}? (see `holo help`)\n", near.join(" or "));
    }
    if options.is_empty() {
        return format!("`holo {name}` takes no options, only selectors (see `holo help`)\n");
    }
    format!(
        "`holo {name}` takes the options {} (see `holo help`)\n",
        options.join(", ")
    )
}

fn command_name(command: Command) -> &'static str {
    match command {
        Command::Apply => "apply",
        Command::Diff => "diff",
        Command::Scan => "scan",
        Command::Selectors => "selectors",
        Command::Version => "version",
    }
}

fn report_option<'o>(options: &'o mut Options, name: &str) -> &'o mut Option<String> {
    if name == "--report" {
        &mut options.report
    } else {
        &mut options.metrics
    }
}

/// Where the run report and the metrics of `holo apply` go, and when the
/// run started.
struct Reporting {
    mode: Mode,
    start: std::time::SystemTime,
    /// `--report FILE`, else the default below the root (not for
    /// `--noop`, which leaves the report of the last real run alone); set
    /// once the root is known.
    report: Option<std::path::PathBuf>,
    /// The default path is the only one whose directory may be created.
    report_is_default: bool,
    metrics: Option<std::path::PathBuf>,
    written: bool,
    /// The root, below which the files resolve as if it were `/`.
    root: String,
}

impl Reporting {
    fn new(options: &Options) -> Self {
        Reporting {
            mode: options.mode(),
            start: std::time::SystemTime::now(),
            report: options.report.as_ref().map(Into::into),
            report_is_default: false,
            metrics: options.metrics.as_ref().map(Into::into),
            written: false,
            root: "/".to_string(),
        }
    }

    /// In test mode (a root other than `/`) holo adds nothing to the root
    /// that Holo 3 would not add, so that fixture suites compare whole
    /// trees: the default report is written there only when
    /// `HOLO_TEST_RUN_REPORT` asks for it.
    fn set_root(&mut self, root: &str) {
        self.root = root.to_string();
        let test_mode = root != "/";
        let asked =
            std::env::var_os("HOLO_TEST_RUN_REPORT").is_some_and(|v| !v.is_empty() && v != "0");
        if self.report.is_none() && self.mode != Mode::Noop && (!test_mode || asked) {
            let default = match self.mode {
                Mode::Monitor => run_report::DEFAULT_MONITOR_PATH,
                _ => run_report::DEFAULT_PATH,
            };
            self.report = Some(crate::paths::join(root, default).into());
            self.report_is_default = true;
        }
    }

    /// Writes the report and the metrics; returns the exit code, which
    /// becomes 1 when the run went well but a file could not be written.
    fn write(&mut self, out: &mut Output, code: i32, entities: Vec<EntityResult>) -> i32 {
        self.written = true;
        let report = RunReport {
            mode: self.mode.name(),
            start: self.start,
            end: std::time::SystemTime::now(),
            exit_code: code,
            entities,
        };
        let mut failed = false;
        let files = [
            (
                self.report.as_deref(),
                self.report_is_default,
                report.to_json(),
            ),
            (self.metrics.as_deref(), false, report.to_prometheus()),
        ];
        for (path, create_parent, content) in files {
            let Some(path) = path else { continue };
            if let Err(message) =
                run_report::write_in_root(&self.root, path, &content, create_parent)
            {
                out.error(
                    Stream::Err,
                    &format!(
                        "{message}; make the directory exist and be writable, or name another file"
                    ),
                );
                failed = true;
            }
        }
        if failed && matches!(code, 0 | 2) {
            1
        } else {
            code
        }
    }
}

/// `HOLO_ROOT_DIR` (else `/`), once it and `TMPDIR` are known to be UTF-8.
fn root_from_env() -> Result<String, String> {
    let root = utf8_env("HOLO_ROOT_DIR")?.unwrap_or_else(|| "/".to_string());
    utf8_env("TMPDIR")?;
    Ok(root)
}

fn print_scan(options: &Options, entities: &[Entity], out: &mut Output) -> i32 {
    for entity in entities {
        if options.porcelain {
            entity_report::print_porcelain(out, entity);
        } else if options.short {
            out.raw(Stream::Out, format!("{}\n", entity.id).as_bytes());
        } else {
            entity_report::print_report(out, entity, false);
        }
    }
    0
}

fn help_text(program: &str) -> String {
    format!(
        "Usage: {program} <operation> [...]\nOperations:\n    \
         {program} apply [-f|--force] [--noop] [--monitor-only] [--report FILE] [--metrics FILE] [selector ...]\n    \
         {program} diff [selector ...]\n    \
         {program} import-ccm MANIFEST.yaml [--to DIR] [--render]\n    \
         {program} scan [-s|--short|-p|--porcelain] [selector ...]\n    \
         {program} selectors\n    \
         {program} version\n    \
         {program} help\n\nSee `man 8 holo` for details.\n"
    )
}

fn run(
    command: Command,
    options: &Options,
    selectors: &[String],
    out: &mut Output,
    reporting: &mut Reporting,
) -> i32 {
    let root = match root_from_env() {
        Ok(root) => root,
        Err(message) => {
            out.error(Stream::Err, &message);
            return EXIT_FATAL;
        }
    };
    if command == Command::Apply {
        reporting.set_root(&root);
    }
    let mut run_dir = match RunDir::create(&root) {
        Ok(run_dir) => run_dir,
        Err(message) => {
            out.error(Stream::Err, &message);
            return EXIT_FATAL;
        }
    };
    let mut loaded = match loading::load_plugins(&run_dir, out) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    if let Some(code) = crate::interrupt::exit_code() {
        return code;
    }
    if let Err(code) = loading::prepare_resources(&mut run_dir, &mut loaded, options.noop, out) {
        return code;
    }
    if let Some(code) = crate::interrupt::exit_code() {
        return code;
    }
    let missing_plugins = loaded.missing_plugins;
    let mut plugins = loaded.plugins;
    let entities = match scan_all(&run_dir, &plugins, out) {
        Ok(entities) => entities,
        Err(code) => return code,
    };
    let entities = match order_entities(entities, &plugins, out) {
        Ok(entities) => entities,
        Err(code) => return code,
    };
    if matches!(command, Command::Diff | Command::Apply)
        && let Err(message) = pass_run_entities(&run_dir, &mut plugins, &entities)
    {
        out.error(Stream::Err, &message);
        return EXIT_FATAL;
    }
    let entities = match select(command, entities, &plugins, selectors, out) {
        Ok(entities) => entities,
        Err(code) => return code,
    };
    match command {
        Command::Scan => print_scan(options, &entities, out),
        Command::Selectors => {
            let all: BTreeSet<String> = entities
                .iter()
                .flat_map(|e| matching_selectors(e, &plugins))
                .collect();
            for selector in all {
                out.raw(Stream::Out, format!("{selector}\n").as_bytes());
            }
            0
        }
        Command::Diff => diff_all(&run_dir, &plugins, &entities, out),
        Command::Version => 0,
        Command::Apply => {
            let plan = ApplyPlan {
                run_dir: &run_dir,
                plugins: &plugins,
                entities: &entities,
                missing_plugins,
            };
            apply_all(&plan, options, out, reporting)
        }
    }
}

/// Writes every scanned entity (selected or not) to the run's cache
/// directory and names the file to the plugins' diff and apply, so that a
/// plugin never removes what another entity of the run manages.
fn pass_run_entities(
    run_dir: &RunDir,
    plugins: &mut [Plugin],
    entities: &[Entity],
) -> Result<(), String> {
    use holo_protocol::run_entities;
    let listed: Vec<(&str, std::borrow::Cow<'_, str>)> = entities
        .iter()
        .map(|entity| {
            let declared_at = match entity.info.get("found in") {
                Some(found) => found.into(),
                None => entity.sources.join(", ").into(),
            };
            (entity.id.as_str(), declared_at)
        })
        .collect();
    let text = run_entities::encode(listed.iter().map(|(id, at)| (*id, at.as_ref())));
    let path = crate::paths::join(&run_dir.cache, "run-entities");
    std::fs::write(&path, text)
        .map_err(|err| format!("write {path}: {}", crate::paths::errno_text(&err)))?;
    for plugin in plugins {
        plugin.set_env(run_entities::VARIABLE, &path);
    }
    Ok(())
}

/// What `holo apply` applies.
struct ApplyPlan<'a> {
    run_dir: &'a RunDir,
    plugins: &'a [Plugin],
    entities: &'a [Entity],
    /// A declared plugin's binary is missing.
    missing_plugins: bool,
}

/// `holo apply`: under the run's lock (unless a noop), applies the
/// entities and writes the run report; the exit code.
fn apply_all(
    plan: &ApplyPlan,
    options: &Options,
    out: &mut Output,
    reporting: &mut Reporting,
) -> i32 {
    let ApplyPlan {
        run_dir,
        plugins,
        entities,
        missing_plugins,
    } = *plan;
    let mode = options.mode();
    let lock = if mode == Mode::Noop {
        None
    } else {
        match crate::lock::acquire(&run_dir.root, out) {
            Ok(lock) => Some(lock),
            Err(code) => return code,
        }
    };
    let ctx = apply::Context {
        plugins,
        run_dir,
        entities,
    };
    let applied = apply::run(&ctx, out, mode);
    let mut code = apply::exit_code(mode, &applied.outcomes);
    if let Some(interrupted) = crate::interrupt::exit_code() {
        code = interrupted;
    }
    // Unlike Holo 3: a skipped plugin is a failure, so that a cron
    // job learns that its entities are no longer managed.
    if missing_plugins && matches!(code, 0 | 2) {
        code = 1;
    }
    let results = entities
        .iter()
        .zip(applied.outcomes.iter().zip(&applied.durations))
        .zip(&applied.checks)
        // An interrupted run lists the entities it started.
        .filter(|((_, (outcome, _)), _)| **outcome != apply::Outcome::NotStarted)
        .map(|((entity, (outcome, duration)), checks)| EntityResult {
            id: entity.id.clone(),
            plugin: plugins[entity.plugin].id.clone(),
            outcome: *outcome,
            duration: *duration,
            checks: checks.clone(),
        })
        .collect();
    // Written under the lock, so the report is the last run's; the
    // lock goes last, when nothing this run started is alive.
    let code = reporting.write(out, code, results);
    if let Some(lock) = lock {
        crate::lock::release(lock, out);
    }
    code
}

/// A path from the environment; unset or empty is `None`. A path that is
/// not UTF-8 is an error rather than a silent fallback to `/`.
fn utf8_env(name: &str) -> Result<Option<String>, String> {
    match std::env::var_os(name) {
        None => Ok(None),
        Some(value) if value.is_empty() => Ok(None),
        Some(value) => value.into_string().map(Some).map_err(|value| {
            format!(
                "{name}={} is not valid UTF-8; holo needs a UTF-8 path there",
                value.to_string_lossy()
            )
        }),
    }
}

/// The largest scan report holo reads from one plugin.
const MAX_SCAN_REPORT: usize = 256 << 20;

/// Scans every plugin before anything is applied.
fn scan_all(run_dir: &RunDir, plugins: &[Plugin], out: &mut Output) -> Result<Vec<Entity>, i32> {
    let mut all = Vec::new();
    let mut owner: FastMap<String, usize> = FastMap::default();
    for (index, plugin) in plugins.iter().enumerate() {
        let mut stdout = Vec::new();
        let mut stderr = StderrLines::default();
        let result = plugin.run(&["scan"], &[], None, false, |chunk| match chunk {
            // Beyond the limit the report is refused below; keep no more.
            Chunk::Stdout(b) if stdout.len() <= MAX_SCAN_REPORT => stdout.extend_from_slice(b),
            Chunk::Stdout(_) => {}
            Chunk::Stderr(b) => stderr.push(b, &mut |line| apply::plugin_stderr_line(out, line)),
            Chunk::Fd3(_) => {}
        });
        stderr.finish(&mut |line| apply::plugin_stderr_line(out, line));
        // Nothing is applied after an interrupted scan.
        if let Some(code) = crate::interrupt::exit_code() {
            return Err(code);
        }
        if let Some(failure) = plugin.failure(&result) {
            out.error(
                Stream::Err,
                &format!("scan with plugin {} failed: {failure}", plugin.id),
            );
            return Err(EXIT_FATAL);
        }
        if stdout.len() > MAX_SCAN_REPORT {
            out.error(
                Stream::Err,
                &format!(
                    "scan with plugin {} failed: its report is larger than {} MiB; declare fewer entities per plugin",
                    plugin.id,
                    MAX_SCAN_REPORT >> 20
                ),
            );
            return Err(EXIT_FATAL);
        }
        // Checked once: a valid report (the rule) is borrowed as it is.
        let text = match std::str::from_utf8(&stdout) {
            Ok(text) => std::borrow::Cow::Borrowed(text),
            Err(_) => {
                warn_about_non_utf8_ids(out, &plugin.id, &stdout);
                String::from_utf8_lossy(&stdout)
            }
        };
        let mut entities = match scan::parse_report(
            index,
            &plugin.id,
            &text,
            plugin.has_extension("order"),
            &|path| run_dir.translate(path),
        ) {
            Ok(entities) => entities,
            Err(errors) => {
                for error in errors {
                    out.error(Stream::Err, &error);
                }
                return Err(EXIT_FATAL);
            }
        };
        entities.sort_by(|a, b| a.id.cmp(&b.id));
        for entity in &entities {
            if let Some(&other) = owner.get(&entity.id) {
                let message = if other == index {
                    format!(
                        "plugin {} reported entity {} twice; entity IDs must be unique",
                        plugin.id, entity.id
                    )
                } else {
                    format!(
                        "entity {} was reported by two plugins, {} and {}; entity IDs must be unique across plugins",
                        entity.id, plugins[other].id, plugin.id
                    )
                };
                out.error(Stream::Err, &message);
                return Err(EXIT_FATAL);
            }
            owner.insert(entity.id.clone(), index);
        }
        all.extend(entities);
        out.end_paragraph(Stream::Out);
    }
    Ok(all)
}

/// Entity IDs are text from scan to apply, so an ID that is not UTF-8 is
/// passed on changed (a known difference from Holo 3): say so, instead of
/// letting the plugin fail later on an ID it never reported.
fn warn_about_non_utf8_ids(out: &mut Output, plugin_id: &str, report: &[u8]) {
    for line in report.split(|byte| *byte == b'\n') {
        let line = line.trim_ascii_start();
        if line.starts_with(b"ENTITY: ") && std::str::from_utf8(line).is_err() {
            let id = String::from_utf8_lossy(&line[b"ENTITY: ".len()..]);
            out.warn(
                Stream::Err,
                &format!(
                    "plugin {plugin_id} reported entity ID \"{}\", which is not valid UTF-8; holo passes it on with U+FFFD for each invalid byte, so the plugin will not recognise it (rename what the ID is made from)",
                    id.trim_end()
                ),
            );
        }
    }
}

/// The order extension; a no-op when no plugin sent `REQUIRES`/`SUBSCRIBES`.
fn order_entities(
    entities: Vec<Entity>,
    plugins: &[Plugin],
    out: &mut Output,
) -> Result<Vec<Entity>, i32> {
    if entities
        .iter()
        .all(|e| e.requires.is_empty() && e.subscribes.is_empty())
    {
        return Ok(entities);
    }
    let known: FastSet<&str> = entities.iter().map(|e| e.id.as_str()).collect();
    let mut unknown = false;
    for entity in &entities {
        for (word, list) in [
            ("requires", &entity.requires),
            ("subscribes to", &entity.subscribes),
        ] {
            for reference in list {
                if !known.contains(reference.as_str()) {
                    out.error(
                        Stream::Err,
                        &format!(
                            "entity {} (plugin {}) {word} {reference}, but no plugin reported an entity {reference}; fix the reference or install the plugin that provides it",
                            entity.id, plugins[entity.plugin].id
                        ),
                    );
                    unknown = true;
                }
            }
        }
    }
    if unknown {
        return Err(EXIT_FATAL);
    }
    let ids: Vec<&str> = entities.iter().map(|e| e.id.as_str()).collect();
    let deps: Vec<Vec<&str>> = entities
        .iter()
        .map(|e| {
            e.requires
                .iter()
                .chain(&e.subscribes)
                .map(String::as_str)
                .collect()
        })
        .collect();
    match order::sort(&ids, &deps) {
        // Most runs are in order already: nothing to move then.
        Ok(order) if order.iter().enumerate().all(|(at, index)| at == *index) => Ok(entities),
        Ok(order) => {
            let mut slots: Vec<Option<Entity>> = entities.into_iter().map(Some).collect();
            Ok(order.into_iter().filter_map(|i| slots[i].take()).collect())
        }
        Err(cycle) => {
            out.error(Stream::Err, &order::cycle_message(&cycle));
            Err(EXIT_FATAL)
        }
    }
}

/// Every selector an entity answers to: its ID, its plugin ID, its SOURCE
/// paths and, for generated resources, the generator path.
fn matching_selectors(entity: &Entity, plugins: &[Plugin]) -> Vec<String> {
    let mut result = vec![entity.id.clone(), plugins[entity.plugin].id.clone()];
    for source in &entity.sources {
        result.push(source.clone());
        if let Some((generator, _)) = source.split_once("::") {
            result.push(generator.to_string());
        }
    }
    result
}

fn select(
    command: Command,
    entities: Vec<Entity>,
    plugins: &[Plugin],
    selectors: &[String],
    out: &mut Output,
) -> Result<Vec<Entity>, i32> {
    if selectors.is_empty() {
        return Ok(entities);
    }
    let mut used = vec![false; selectors.len()];
    let mut selected = Vec::with_capacity(entities.len());
    let ids: Vec<String> = entities.iter().map(|entity| entity.id.clone()).collect();
    for entity in entities {
        let matching = matching_selectors(&entity, plugins);
        let mut is_selected = false;
        for (index, selector) in selectors.iter().enumerate() {
            if matching.iter().any(|m| m == selector) {
                used[index] = true;
                is_selected = true;
            }
        }
        if is_selected {
            selected.push(entity);
        }
    }
    let mut unrecognized = false;
    for (selector, used) in selectors.iter().zip(used) {
        if !used {
            out.raw(
                Stream::Err,
                format!("Unrecognized argument: {selector}\n").as_bytes(),
            );
            if selector.starts_with('-') {
                out.raw(Stream::Err, option_advice(command, selector).as_bytes());
                unrecognized = true;
                continue;
            }
            let near = nearest_ids(selector, &ids);
            if !near.is_empty() {
                out.raw(
                    Stream::Err,
                    format!("Did you mean {}?\n", near.join(" or ")).as_bytes(),
                );
            }
            unrecognized = true;
        }
    }
    if unrecognized {
        return Err(EXIT_FATAL);
    }
    Ok(selected)
}

/// The entity IDs closest to a selector that matched nothing, when one is
/// close: at most 2 edits (a transposition is one) and at most a quarter of
/// the selector's length. Up to three, in name order.
fn nearest_ids(selector: &str, ids: &[String]) -> Vec<String> {
    let limit = 2.min(selector.chars().count() / 4);
    let distances: Vec<(usize, &String)> = ids
        .iter()
        .map(|id| (strsim::damerau_levenshtein(selector, id), id))
        .filter(|(distance, _)| *distance <= limit)
        .collect();
    let Some(best) = distances.iter().map(|(distance, _)| *distance).min() else {
        return Vec::new();
    };
    let mut near: Vec<String> = distances
        .into_iter()
        .filter(|(distance, _)| *distance == best)
        .map(|(_, id)| id.clone())
        .collect();
    near.sort();
    near.dedup();
    near.truncate(3);
    near
}

fn diff_all(run_dir: &RunDir, plugins: &[Plugin], entities: &[Entity], out: &mut Output) -> i32 {
    let mut code = 0;
    for entity in entities {
        let plugin = &plugins[entity.plugin];
        match apply::render_entity_diff(run_dir, plugin, entity, out) {
            Ok(diff) => out.raw(Stream::Out, &diff),
            Err(message) => {
                out.error(
                    Stream::Err,
                    &format!("cannot diff {}: {message}", entity.id),
                );
                code = 1;
            }
        }
        out.end_paragraph(Stream::Out);
    }
    out.flush();
    code
}

#[cfg(test)]
mod tests {
    use super::nearest_ids;

    fn ids(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| name.to_string()).collect()
    }

    #[test]
    fn a_close_entity_id_is_suggested() {
        let known = ids(&["file:/etc/motd", "file:/etc/hosts", "package:nginx"]);
        assert_eq!(nearest_ids("file:/etc/mtod", &known), ["file:/etc/motd"]);
        assert_eq!(nearest_ids("package:ngnix", &known), ["package:nginx"]);
    }

    #[test]
    fn nothing_is_suggested_when_nothing_is_close() {
        let known = ids(&["file:/etc/motd", "package:nginx"]);
        assert!(nearest_ids("bogus-selector", &known).is_empty());
        assert!(nearest_ids("file", &known).is_empty());
        // short selectors allow fewer edits
        assert!(nearest_ids("ab", &ids(&["ac"])).is_empty());
    }
}
