//! The `holos` program: parses the command line (`cli`), runs `config`,
//! `validate`, `version` and `completions` here, and the runtime commands,
//! and `images`, `pull` and `lock`, in `commands`.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use holos_compose::diag::Diag;
use holos_compose::load::Options;
use holos_compose::yaml::{Kind, Node, Pos};

use crate::cli::{Cli, Format, HolosCommand};

/// Runs `holos` with `args` (without the program name).
pub fn run_holos(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let mut args: Vec<OsString> = args.into_iter().collect();
    // What follows `run` is for its own parser alone: there `-p` is docker
    // run's --publish, which clap would take for the global project name.
    let after_run = crate::cli::run_position(&args).map(|at| args.split_off(at + 1));
    let argv = std::iter::once(OsString::from("holos")).chain(args);
    let mut cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(err) => {
            // Help and version go to stdout with 0, usage errors to stderr with 2.
            let _ = err.print();
            return ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(2));
        }
    };
    if let Some(dir) = &cli.state_dir {
        if !dir.is_dir() && reads_state(&cli.command) {
            eprintln!(
                "holos: the state directory {} (--state-dir) does not exist; name one that does (holos up creates it)",
                dir.display()
            );
            return ExitCode::FAILURE;
        }
        holos_runtime::state_dir::use_state_dir(dir);
    }
    if let Some(limit) = cli.lock_timeout {
        holos_runtime::state::use_lock_timeout(limit);
    }
    if let (Some(rest), HolosCommand::Run { args }) = (after_run, &mut cli.command) {
        *args = rest;
    }
    if let Some(code) = run_without_project(&cli) {
        return code;
    }
    let environment = crate::compose_project::process_environment();
    let working_dir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let options = Options {
        files: cli.files(),
        project_name: cli.project_name.clone(),
        default_name: None,
        profiles: cli.profiles.clone(),
        working_dir,
        environment,
    };
    if let Some(code) = crate::commands::run(&cli.command, &options) {
        return code;
    }
    if let HolosCommand::Validate { json: true, .. } = &cli.command {
        return validate_json(&cli.command, &options);
    }
    let mut stdout = std::io::stdout().lock();
    match run_with_messages(&cli.command, &options) {
        Ok((text, messages)) => {
            let mut stderr = std::io::stderr().lock();
            for message in &messages {
                let _ = writeln!(stderr, "{message}");
            }
            // A closed stdout (holos config | head) is not an error worth reporting.
            let _ = stdout.write_all(text.as_bytes());
            ExitCode::SUCCESS
        }
        Err(diags) => {
            let mut stderr = std::io::stderr().lock();
            for d in &diags {
                let _ = writeln!(stderr, "{d}");
            }
            let _ = writeln!(
                stderr,
                "holos: {} error{} found",
                diags.len(),
                if diags.len() == 1 { "" } else { "s" }
            );
            ExitCode::FAILURE
        }
    }
}

/// `validate --json`: `{"valid", "errors": [{file, line, column, path,
/// message}], "messages"}` on stdout; exit 1 when there are errors.
fn validate_json(command: &HolosCommand, options: &Options) -> ExitCode {
    let (verdict, code) = match run_with_messages(command, options) {
        Ok((_, messages)) => (
            serde_json::json!({"valid": true, "errors": [], "messages": messages}),
            ExitCode::SUCCESS,
        ),
        Err(diags) => {
            let errors: Vec<serde_json::Value> = diags
                .iter()
                .map(|d| {
                    serde_json::json!({
                        "file": d.pos.file.display().to_string(),
                        "line": d.pos.line,
                        "column": d.pos.col,
                        "path": d.path,
                        "message": d.message,
                    })
                })
                .collect();
            (
                serde_json::json!({"valid": false, "errors": errors, "messages": []}),
                ExitCode::FAILURE,
            )
        }
    };
    let _ = std::io::stdout().write_all(pretty_json(&verdict).as_bytes());
    code
}

/// The commands that only read the state directory: for them a missing
/// `--state-dir` is a mistake, not an empty state.
fn reads_state(command: &HolosCommand) -> bool {
    command.is_control_verb()
        || matches!(
            command,
            HolosCommand::Ps(_)
                | HolosCommand::Logs(_)
                | HolosCommand::Exec(_)
                | HolosCommand::Console(_)
                | HolosCommand::Inspect(_)
                | HolosCommand::Stop(_)
                | HolosCommand::Start(_)
                | HolosCommand::Down(_)
                | HolosCommand::Volumes(_)
                | HolosCommand::Snapshots(_)
                | HolosCommand::Verify(_)
                | HolosCommand::Images(_)
        )
}

/// The commands that load no compose file: `version`, `run` (which writes
/// its own) and `completions`.
fn run_without_project(cli: &Cli) -> Option<ExitCode> {
    match &cli.command {
        HolosCommand::Version(args) => {
            if args.short {
                println!("{}", env!("CARGO_PKG_VERSION"));
            } else {
                println!("holos {}", env!("CARGO_PKG_VERSION"));
            }
            Some(ExitCode::SUCCESS)
        }
        // Global options came before `run`; its own parser takes the rest.
        HolosCommand::Run { args } => Some(crate::run::main(
            args.clone(),
            crate::run::Globals {
                files: cli.files(),
                project_name: cli.project_name.clone(),
                profiles: cli.profiles.clone(),
            },
        )),
        HolosCommand::Completions { shell } => {
            let mut script = Vec::new();
            let mut cli = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(*shell, &mut cli, "holos", &mut script);
            // A closed stdout is not worth a panic.
            let _ = std::io::Write::write_all(&mut std::io::stdout(), &script);
            Some(ExitCode::SUCCESS)
        }
        _ => None,
    }
}

/// Runs one command and returns what it prints on success.
pub fn run(command: &HolosCommand, options: &Options) -> Result<String, Vec<Diag>> {
    run_with_messages(command, options).map(|(text, _)| text)
}

/// Runs one command; on success also returns the lines for standard error:
/// `warning: ...` for problems that do not stop the load, then (for
/// `validate` without `--quiet`) the `>>` notes of
/// [`holos_compose::load::notes::quiet_semantics`].
pub fn run_with_messages(
    command: &HolosCommand,
    options: &Options,
) -> Result<(String, Vec<String>), Vec<Diag>> {
    let (project, manifest) = holos_compose::resolve(options)?;
    if let Some(message) = crate::compose_project::unknown_profile(options, &project) {
        let file = project.files.first().cloned().unwrap_or_default();
        return Err(vec![Diag::file(&file, message)]);
    }
    if let HolosCommand::Validate { .. } = command {
        let missing = holos_compose::decode::missing_files(&project, &manifest);
        if !missing.is_empty() {
            return Err(missing);
        }
        let refused = up_refusals(&project, &manifest);
        if !refused.is_empty() {
            return Err(refused);
        }
    }
    let text = render(command, &project, &manifest)?;
    let mut messages: Vec<String> = project
        .warnings
        .iter()
        .map(|w| format!("warning: {w}"))
        .collect();
    if let HolosCommand::Validate {
        capacity, network, ..
    } = command
        && (*capacity || *network)
    {
        messages.extend(host_checks(&project, &manifest, *capacity, *network)?);
    }
    if let HolosCommand::Validate { quiet: false, .. } = command {
        let notes = holos_compose::load::notes::quiet_semantics(&project);
        messages.extend(notes.iter().map(ToString::to_string));
        let disabled = holos_compose::load::notes::disabled_by_profiles(&project);
        messages.extend(disabled.iter().map(ToString::to_string));
    }
    Ok((text, messages))
}

/// What `holos up` would refuse before starting anything: the runtime's
/// own check, so that validate passes exactly what up does not refuse.
fn up_refusals(
    project: &holos_compose::load::Project,
    manifest: &holos_compose::Manifest,
) -> Vec<Diag> {
    let file = project.files.first().cloned().unwrap_or_default();
    let problems = match holos_runtime::settings::HostSettings::from_env() {
        Ok(settings) => holos_runtime::preflight::check(&settings, manifest, &[]),
        Err(e) => vec![e.to_string()],
    };
    problems.into_iter().map(|p| Diag::file(&file, p)).collect()
}

/// `validate --capacity` and `--network`: the project against this host.
/// Errors name the main compose file; the rest are lines for stderr.
fn host_checks(
    project: &holos_compose::load::Project,
    manifest: &holos_compose::Manifest,
    capacity: bool,
    network: bool,
) -> Result<Vec<String>, Vec<Diag>> {
    use holos_runtime::ops::capacity as cap;
    let file = project.files.first().cloned().unwrap_or_default();
    let settings = holos_runtime::settings::HostSettings::from_env()
        .map_err(|e| vec![Diag::file(&file, e.to_string())])?;
    let mut errors = Vec::new();
    let mut lines = Vec::new();
    if capacity {
        let needs = cap::project_needs(manifest, &settings.layout);
        let findings = cap::check_capacity(manifest, needs, cap::host_capacity(&settings.layout));
        lines.push(findings.summary);
        lines.extend(findings.warnings.iter().map(|w| format!("warning: {w}")));
        errors.extend(findings.errors);
    }
    if network {
        let taken = cap::check_network(manifest, &settings.layout);
        if taken.is_empty() {
            lines.push(format!(
                "network: every published port of project {} is free",
                manifest.project
            ));
        }
        errors.extend(taken);
    }
    if errors.is_empty() {
        Ok(lines)
    } else {
        Err(errors.into_iter().map(|e| Diag::file(&file, e)).collect())
    }
}

fn render(
    command: &HolosCommand,
    project: &holos_compose::load::Project,
    manifest: &holos_compose::Manifest,
) -> Result<String, Vec<Diag>> {
    match command {
        HolosCommand::Config {
            resolved, format, ..
        } => {
            if *resolved {
                let json = serde_json::to_value(manifest).map_err(|e| {
                    vec![Diag::at(
                        &project.model.pos,
                        "",
                        format!("cannot serialise the manifest: {e}"),
                    )]
                })?;
                return Ok(match format {
                    Format::Json => pretty_json(&json),
                    Format::Yaml => json_to_node(&json).to_yaml_string(),
                });
            }
            // Interpolation is done: escape `$` again so that the output
            // reads back to the same values.
            let mut model = project.model.clone();
            escape_dollars(&mut model);
            holos_compose::manifest::redact_inline_secrets(&mut model);
            Ok(match format {
                Format::Json => pretty_json(&model.to_json()),
                Format::Yaml => model.to_yaml_string(),
            })
        }
        // Validation printed nothing; the other commands print their own.
        _ => Ok(String::new()),
    }
}

fn pretty_json(json: &serde_json::Value) -> String {
    let mut text = serde_json::to_string_pretty(json).unwrap_or_default();
    text.push('\n');
    text
}

/// Escapes `$` everywhere except in a service's `cloud_init`, which was
/// never interpolated and so reads back as it is.
fn escape_dollars(model: &mut Node) {
    if let Some(Kind::Map(entries)) = model.get_mut("services").map(|s| &mut s.kind) {
        for (_, service) in entries.iter_mut() {
            if let Kind::Map(fields) = &mut service.kind {
                fields
                    .iter_mut()
                    .filter(|(k, _)| k.as_str() != Some("cloud_init"))
                    .for_each(|(_, v)| escape_all_dollars(v));
            } else {
                escape_all_dollars(service);
            }
        }
    }
    if let Kind::Map(entries) = &mut model.kind {
        entries
            .iter_mut()
            .filter(|(k, _)| k.as_str() != Some("services"))
            .for_each(|(_, v)| escape_all_dollars(v));
    }
}

fn escape_all_dollars(node: &mut Node) {
    match &mut node.kind {
        Kind::Scalar { text, .. } if text.contains('$') => *text = text.replace('$', "$$"),
        Kind::Seq(items) => items.iter_mut().for_each(escape_all_dollars),
        Kind::Map(entries) => entries.iter_mut().for_each(|(_, v)| escape_all_dollars(v)),
        _ => {}
    }
}

/// JSON to a YAML tree, for printing the manifest as YAML.
pub fn json_to_node(value: &serde_json::Value) -> Node {
    use serde_json::Value;
    let pos = Pos::synthetic("manifest");
    match value {
        Value::Null => Node::new(Kind::Null, pos),
        Value::Bool(b) => Node::plain(b.to_string(), pos),
        Value::Number(n) => Node::plain(n.to_string(), pos),
        Value::String(s) => Node::string(s.clone(), pos),
        Value::Array(items) => Node::seq(items.iter().map(json_to_node).collect(), pos),
        Value::Object(map) => Node::map(
            map.iter()
                .map(|(k, v)| (Node::string(k.clone(), pos.clone()), json_to_node(v)))
                .collect(),
            pos.clone(),
        ),
    }
}
