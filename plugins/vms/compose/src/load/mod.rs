//! Loading a compose project: files, `.env`, interpolation, `include`,
//! `extends`, merging across `-f` files, the project name and profiles.
//!
//! The result is one normalised YAML tree (what `holos config` prints) that
//! `decode` then turns into typed services.

pub mod dotenv;
pub mod extends;
pub mod include;
pub mod interpolate;
pub mod merge;
pub mod notes;
pub mod paths;
pub mod profiles;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::diag::{Diag, Diags};
use crate::yaml::{self, Kind, Node, Pos};
use interpolate::Lookup;

/// What the command line says about the project.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// `-f` files, in order; empty means discover `holos.yaml` and friends.
    pub files: Vec<PathBuf>,
    /// `-p NAME`: wins over the file's `name:`, as in Docker Compose.
    pub project_name: Option<String>,
    /// The name when neither `-p` nor `name:` gives one (before the
    /// directory's): how holo-vms names a project by its resource directory.
    pub default_name: Option<String>,
    pub profiles: Vec<String>,
    /// Directory to discover files in when `files` is empty.
    pub working_dir: PathBuf,
    /// The process environment (taken as a map so tests stay hermetic).
    pub environment: BTreeMap<String, String>,
}

/// Variables for interpolation: the process environment wins over `.env`.
#[derive(Clone, Debug, Default)]
pub struct Environment {
    pub vars: BTreeMap<String, String>,
}

impl Lookup for Environment {
    fn lookup(&self, name: &str) -> Option<String> {
        self.vars.get(name).cloned()
    }
}

impl Environment {
    /// The process environment overlaid on the `.env` file in `dir`.
    pub fn with_dotenv(process: &BTreeMap<String, String>, dotenv: &Path) -> Result<Self, Diag> {
        let mut vars = BTreeMap::new();
        if dotenv.is_file() {
            let lookup = |name: &str| process.get(name).cloned();
            let text = std::fs::read_to_string(dotenv).map_err(|e| {
                Diag::file(
                    dotenv,
                    format!("cannot read: {e}; fix its permissions or remove it"),
                )
            })?;
            let entries = dotenv::parse(&text, &lookup).map_err(|(line, message)| {
                let file = std::sync::Arc::new(dotenv.to_path_buf());
                Diag::at(&Pos::new(&file, line, 1), "", message)
            })?;
            for entry in entries {
                if let Some(value) = entry.value {
                    vars.insert(entry.key, value);
                }
            }
        }
        vars.extend(process.iter().map(|(k, v)| (k.clone(), v.clone())));
        Ok(Environment { vars })
    }
}

/// A loaded, merged, interpolated project before typing.
#[derive(Clone, Debug)]
pub struct Project {
    pub name: String,
    pub directory: PathBuf,
    pub files: Vec<PathBuf>,
    pub environment: Environment,
    /// The merged tree, with services disabled by profiles removed.
    pub model: Node,
    /// Non-fatal problems found while loading, such as unset variables.
    pub warnings: Vec<Diag>,
    /// Services that profiles switched off: still validated, never resolved.
    pub inactive: Vec<(Node, Node)>,
}

/// File names tried, in order, when no `-f` is given.
pub const DEFAULT_FILES: [&str; 4] = ["holos.yaml", "holos.yml", "compose.yaml", "compose.yml"];

/// Finds the main file and its override in `dir`.
pub fn discover(dir: &Path) -> Result<Vec<PathBuf>, Diag> {
    for name in DEFAULT_FILES {
        let main = dir.join(name);
        if main.is_file() {
            let (stem, ext) = name.split_once('.').unwrap_or((name, "yaml"));
            let override_file = dir.join(format!("{stem}.override.{ext}"));
            let mut files = vec![main];
            if override_file.is_file() {
                files.push(override_file);
            }
            return Ok(files);
        }
    }
    Err(Diag::file(
        dir,
        format!(
            "no compose file found (looked for {}); create holos.yaml or pass -f FILE",
            DEFAULT_FILES.join(", ")
        ),
    ))
}

/// Compose's project name normalisation: lower case, only `[a-z0-9_-]`,
/// starting with a letter or digit.
pub fn normalize_project_name(name: &str) -> String {
    let lowered: String = name
        .to_lowercase()
        .chars()
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_' || *c == '-')
        .collect();
    lowered.trim_start_matches(['_', '-']).to_string()
}

/// Parses and interpolates one file, resolves its includes, relative paths
/// and extends. `stack` holds the files being included, to detect cycles.
pub fn load_file(
    path: &Path,
    base_dir: &Path,
    env: &Environment,
    stack: &mut Vec<PathBuf>,
    diags: &mut Diags,
) -> Option<Node> {
    let mut root = match yaml::load_file(path) {
        Ok(root) => root,
        Err(errors) => {
            diags.extend(errors);
            return None;
        }
    };
    if root.is_null() {
        root = Node::map(Vec::new(), root.pos.clone());
    }
    if root.as_map().is_none() {
        diags.push(
            &root.pos,
            "",
            format!(
                "the top level must be a mapping, found {}",
                root.type_name()
            ),
        );
        return None;
    }
    interpolate::interpolate_tree(&mut root, env, "", diags);
    paths::resolve_service_paths(&mut root, base_dir);
    paths::resolve_top_level_paths(&mut root, base_dir);
    let root = include::apply_includes(root, path, env, stack, diags);
    let mut root = root;
    extends::apply_extends(&mut root, env, diags);
    Some(root)
}

/// Puts the top-level keys in Compose's order (extensions last) and the
/// services and volumes in name order, so that
/// `holos config` reads the same whichever file defined what.
fn order_top_level(model: &mut Node) {
    const ORDER: [&str; 8] = [
        "name", "version", "services", "volumes", "networks", "configs", "secrets", "models",
    ];
    if let Some(entries) = model.as_map_mut() {
        entries.sort_by_key(|(k, _)| {
            let key = k.as_str().unwrap_or_default();
            ORDER.iter().position(|o| *o == key).unwrap_or(ORDER.len())
        });
    }
    // Services and volumes by name, as `docker compose config` prints them.
    for section in ["services", "volumes"] {
        if let Some(entries) = model.get_mut(section).and_then(Node::as_map_mut) {
            entries.sort_by(|(a, _), (b, _)| a.as_str().cmp(&b.as_str()));
        }
    }
}

/// Loads the whole project as Compose would.
pub fn load(options: &Options) -> Result<Project, Vec<Diag>> {
    let files = project_files(options)?;
    let first = files
        .first()
        .cloned()
        .unwrap_or_else(|| PathBuf::from("holos.yaml"));
    let directory = first
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| options.working_dir.clone());
    let directory = PathBuf::from(paths::absolutize(
        &options.working_dir,
        &directory.to_string_lossy(),
    ));
    let environment = Environment::with_dotenv(&options.environment, &directory.join(".env"))
        .map_err(|d| vec![d])?;

    let mut diags = Diags::default();
    let mut merged: Option<Node> = None;
    for file in &files {
        // As in Compose, relative paths in every -f file are relative to the
        // project directory (the first file's), not to the file itself.
        let mut stack = vec![file.clone()];
        if let Some(node) = load_file(file, &directory, &environment, &mut stack, &mut diags) {
            merged = Some(match merged {
                None => node,
                Some(acc) => merge::merge(acc, node, &[]),
            });
        }
    }
    let mut model = merge::normalize_tags(
        merged.unwrap_or_else(|| Node::map(Vec::new(), Pos::synthetic(&first.to_string_lossy()))),
    );
    if !diags.is_empty() {
        return Err(diags.list);
    }

    let name = project_name(&model, options, &directory, &first)?;
    model.set("name", Node::string(&name, model.pos.clone()));
    order_top_level(&mut model);

    let enabled = profiles::enabled_profiles(
        &options.profiles,
        environment.vars.get("COMPOSE_PROFILES").map(String::as_str),
    );
    let mut inactive = Vec::new();
    if let Some(Kind::Map(services)) = model.get_mut("services").map(|s| &mut s.kind) {
        let (active, off): (Vec<_>, Vec<_>) = std::mem::take(services)
            .into_iter()
            .partition(|(_, service)| profiles::is_active(service, &enabled));
        *services = active;
        inactive = off;
    }

    Ok(Project {
        name,
        directory,
        files,
        environment,
        model,
        warnings: diags.warnings,
        inactive,
    })
}

/// The compose files: `-f`, else `COMPOSE_FILE` (as in Docker Compose),
/// else the ones found in the working directory.
fn project_files(options: &Options) -> Result<Vec<PathBuf>, Vec<Diag>> {
    let from_env: Vec<PathBuf> = options
        .environment
        .get("COMPOSE_FILE")
        .map(|v| {
            v.split(':')
                .filter(|p| !p.is_empty())
                .map(PathBuf::from)
                .collect()
        })
        .unwrap_or_default();
    let requested = if options.files.is_empty() {
        &from_env
    } else {
        &options.files
    };
    if requested.is_empty() {
        return discover(&options.working_dir).map_err(|d| vec![d]);
    }
    Ok(requested
        .iter()
        .map(|f| {
            if f.is_absolute() {
                f.clone()
            } else {
                options.working_dir.join(f)
            }
        })
        .collect())
}

/// The project name: `name:`, else `-p`, else the directory's name;
/// normalised, and never empty.
fn project_name(
    model: &Node,
    options: &Options,
    directory: &Path,
    first: &Path,
) -> Result<String, Vec<Diag>> {
    let name_node = model.get("name");
    if let Some(node) = name_node
        && node.as_str().is_none()
    {
        return Err(vec![Diag::at(
            &node.pos,
            "name",
            format!("must be a string, found {}", node.type_name()),
        )]);
    }
    // `-p` wins over `name:`, as in Docker Compose, so that every command
    // acts on the project the user named.
    let raw_name = match (&options.project_name, name_node.and_then(Node::as_str)) {
        (Some(flag), _) => flag.clone(),
        (None, Some(n)) => n.to_string(),
        (None, None) => options.default_name.clone().unwrap_or_else(|| {
            directory
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        }),
    };
    let name = normalize_project_name(&raw_name);
    if name.is_empty() {
        let pos = name_node
            .map(|n| n.pos.clone())
            .unwrap_or_else(|| Pos::synthetic(&first.to_string_lossy()));
        return Err(vec![Diag::at(
            &pos,
            "name",
            format!(
                "project name {raw_name:?} has no letters or digits; set name: or pass -p NAME"
            ),
        )]);
    }
    Ok(name)
}
