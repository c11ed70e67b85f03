//! The `holos` command line: `config` and `validate` (the runtime commands
//! come with the runtime issues).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use crate::compose::Options;
use crate::diag::Diag;
use crate::yaml::{Kind, Node, Pos};

#[derive(Parser, Debug)]
#[command(
    name = "holos",
    version,
    about = "Run Docker Compose style projects as QEMU VMs"
)]
pub struct Cli {
    /// Compose file; repeat to merge several (later files win).
    #[arg(short = 'f', long = "file", global = true)]
    pub files: Vec<PathBuf>,
    /// Project name, used when the file sets no `name`.
    #[arg(short = 'p', long = "project-name", global = true)]
    pub project_name: Option<String>,
    /// Enable a profile; repeat for several.
    #[arg(long = "profile", global = true)]
    pub profiles: Vec<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Print the normalised compose file (merged, interpolated, extended).
    Config {
        /// Print the resolved manifest instead: instances, IPs, MACs, ports.
        #[arg(long)]
        resolved: bool,
        #[arg(long, value_enum, default_value_t = Format::Yaml)]
        format: Format,
    },
    /// Check the project; list every error and exit 1 if there are any.
    Validate,
    /// List the built-in image aliases with their tags and defaults.
    Images,
    /// Print the shell completion script (the packages install it).
    #[command(hide = true)]
    Completions { shell: clap_complete::Shell },
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum Format {
    Yaml,
    Json,
}

/// Entry point of the `holos` binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let environment: BTreeMap<String, String> = std::env::vars().collect();
    let working_dir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let options = Options {
        files: cli.files.clone(),
        project_name: cli.project_name.clone(),
        profiles: cli.profiles.clone(),
        working_dir,
        environment,
    };
    let mut stdout = std::io::stdout().lock();
    match run_with_warnings(&cli.command, &options) {
        Ok((text, warnings)) => {
            let mut stderr = std::io::stderr().lock();
            for w in &warnings {
                let _ = writeln!(stderr, "warning: {w}");
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

/// Runs one command and returns what it prints on success.
pub fn run(command: &Command, options: &Options) -> Result<String, Vec<Diag>> {
    run_with_warnings(command, options).map(|(text, _)| text)
}

/// Runs one command; on success also returns the warnings to show.
pub fn run_with_warnings(
    command: &Command,
    options: &Options,
) -> Result<(String, Vec<Diag>), Vec<Diag>> {
    match command {
        Command::Images => return Ok((images_table(), Vec::new())),
        Command::Completions { shell } => return Ok((completions(*shell), Vec::new())),
        _ => {}
    }
    let (project, manifest) = crate::resolve(options)?;
    let text = render(command, &project, &manifest)?;
    Ok((text, project.warnings))
}

fn render(
    command: &Command,
    project: &crate::compose::Project,
    manifest: &crate::Manifest,
) -> Result<String, Vec<Diag>> {
    match command {
        Command::Validate | Command::Images | Command::Completions { .. } => Ok(String::new()),
        Command::Config { resolved, format } => {
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
            Ok(match format {
                Format::Json => pretty_json(&model.to_json()),
                Format::Yaml => model.to_yaml_string(),
            })
        }
    }
}

/// `holos completions SHELL`: clap's completion script for this command line.
fn completions(shell: clap_complete::Shell) -> String {
    let mut script = Vec::new();
    clap_complete::generate(
        shell,
        &mut <Cli as clap::CommandFactory>::command(),
        "holos",
        &mut script,
    );
    String::from_utf8_lossy(&script).into_owned()
}

/// `holos images`: one line per alias.
fn images_table() -> String {
    let mut out = format!(
        "{:<14} {:<10} {:<8} {:<10} {:>10}  {}\n",
        "ALIAS", "DEFAULT", "OS", "USER", "MIN_MB", "TAGS"
    );
    for image in &crate::images::table().image {
        let tags: Vec<&str> = image.tags.keys().map(String::as_str).collect();
        out.push_str(&format!(
            "{:<14} {:<10} {:<8} {:<10} {:>10}  {}\n",
            image.alias,
            image.default_tag,
            image.os,
            image.user,
            image.min_memory_mb,
            tags.join(", ")
        ));
    }
    out
}

fn pretty_json(json: &serde_json::Value) -> String {
    let mut text = serde_json::to_string_pretty(json).unwrap_or_default();
    text.push('\n');
    text
}

fn escape_dollars(node: &mut Node) {
    match &mut node.kind {
        Kind::Scalar { text, .. } if text.contains('$') => *text = text.replace('$', "$$"),
        Kind::Seq(items) => items.iter_mut().for_each(escape_dollars),
        Kind::Map(entries) => entries.iter_mut().for_each(|(_, v)| escape_dollars(v)),
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
