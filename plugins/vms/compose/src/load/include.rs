//! `include`: other compose files merged underneath the including one.
//!
//! Short syntax is a list of paths; long syntax entries take `path` (one or
//! a list), `project_directory` and `env_file`. Included files are loaded
//! first and the including file's own definitions win. Relative paths in an
//! included file resolve against its `project_directory`, else its own
//! directory. A file that includes itself, directly or not, is an error.

use std::path::{Path, PathBuf};

use super::{Environment, load_file, merge, paths};
use crate::diag::Diags;
use crate::yaml::{Kind, Node};

/// Deeper include chains are refused: loading recurses once per level.
const MAX_DEPTH: usize = 64;

struct IncludeEntry {
    node: Node,
    paths: Vec<PathBuf>,
    project_directory: Option<PathBuf>,
    env_files: Vec<PathBuf>,
}

fn string_or_list(node: &Node, base: &Path, what: &str, diags: &mut Diags) -> Vec<PathBuf> {
    match &node.kind {
        Kind::Scalar { text, .. } => vec![PathBuf::from(paths::absolutize(base, text))],
        Kind::Seq(items) => items
            .iter()
            .filter_map(|item| match item.as_str() {
                Some(text) => Some(PathBuf::from(paths::absolutize(base, text))),
                None => {
                    diags.push(&item.pos, what, "must be a path string");
                    None
                }
            })
            .collect(),
        _ => {
            diags.push(&node.pos, what, "must be a path or a list of paths");
            Vec::new()
        }
    }
}

fn entries(include: &Node, file_dir: &Path, diags: &mut Diags) -> Vec<IncludeEntry> {
    let Some(items) = include.as_seq() else {
        diags.push(
            &include.pos,
            "include",
            "must be a list of files or include mappings",
        );
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let path = format!("include[{i}]");
        if item.as_str().is_some() {
            out.push(IncludeEntry {
                node: item.clone(),
                paths: string_or_list(item, file_dir, &path, diags),
                project_directory: None,
                env_files: Vec::new(),
            });
            continue;
        }
        let Some(map) = item.as_map() else {
            diags.push(&item.pos, &path, "must be a path or a mapping with path:");
            continue;
        };
        for (key, _) in map {
            let name = key.as_str().unwrap_or_default();
            if !crate::keys::INCLUDE_LONG.contains(&name) && !name.starts_with("x-") {
                let hint =
                    crate::diag::did_you_mean(name, crate::keys::INCLUDE_LONG.iter().copied())
                        .map(|s| format!("; did you mean {s:?}?"))
                        .unwrap_or_default();
                diags.push(
                    &key.pos,
                    format!("{path}.{name}"),
                    format!("unknown key{hint}"),
                );
            }
        }
        let Some(paths_node) = item.get("path") else {
            diags.push(&item.pos, &path, "missing path:; name the file to include");
            continue;
        };
        let project_directory = item
            .get("project_directory")
            .and_then(Node::as_str)
            .map(|d| PathBuf::from(paths::absolutize(file_dir, d)));
        let env_files = item
            .get("env_file")
            .map(|e| string_or_list(e, file_dir, &format!("{path}.env_file"), diags))
            .unwrap_or_default();
        out.push(IncludeEntry {
            node: item.clone(),
            paths: string_or_list(paths_node, file_dir, &format!("{path}.path"), diags),
            project_directory,
            env_files,
        });
    }
    out
}

/// Loads `root`'s includes and returns the includes merged under `root`.
pub fn apply_includes(
    mut root: Node,
    file: &Path,
    env: &Environment,
    stack: &mut Vec<PathBuf>,
    diags: &mut Diags,
) -> Node {
    let Some(include) = root.remove("include") else {
        return root;
    };
    let file_dir = file.parent().unwrap_or(Path::new("/")).to_path_buf();
    let mut base: Option<Node> = None;
    for entry in entries(&include, &file_dir, diags) {
        let include_env = include_environment(&entry, env, &file_dir, diags);
        for path in &entry.paths {
            if !can_include(&entry, path, stack, diags) {
                continue;
            }
            let base_dir = entry
                .project_directory
                .clone()
                .or_else(|| path.parent().map(Path::to_path_buf))
                .unwrap_or_else(|| file_dir.clone());
            stack.push(path.clone());
            let loaded = load_file(path, &base_dir, &include_env, stack, diags);
            stack.pop();
            if let Some(mut loaded) = loaded {
                // An included file's name does not name the including project.
                loaded.remove("name");
                base = Some(match base {
                    None => loaded,
                    Some(acc) => merge::merge(acc, loaded, &[]),
                });
            }
        }
    }
    match base {
        None => root,
        Some(base) => {
            let pos = root.pos.clone();
            let mut merged = merge::merge(base, root, &[]);
            merged.pos = pos;
            merged
        }
    }
}

/// The environment an include's files are interpolated with: the
/// including one, then its `env_file`s (else the `.env` of its directory).
fn include_environment(
    entry: &IncludeEntry,
    env: &Environment,
    file_dir: &Path,
    diags: &mut Diags,
) -> Environment {
    let mut include_env = env.clone();
    let dir = entry
        .project_directory
        .clone()
        .or_else(|| {
            entry
                .paths
                .first()
                .and_then(|p| p.parent().map(Path::to_path_buf))
        })
        .unwrap_or_else(|| file_dir.to_path_buf());
    let env_files = if entry.env_files.is_empty() {
        vec![dir.join(".env")]
    } else {
        entry.env_files.clone()
    };
    for env_file in &env_files {
        if !entry.env_files.is_empty() && !env_file.is_file() {
            diags.push(
                &entry.node.pos,
                "include",
                format!(
                    "env_file {} does not exist; create it or fix the path",
                    env_file.display()
                ),
            );
            continue;
        }
        match Environment::with_dotenv(&env.vars, env_file) {
            Ok(extra) => {
                for (k, v) in extra.vars {
                    include_env.vars.entry(k).or_insert(v);
                }
            }
            Err(d) => diags.list.push(d),
        }
    }
    include_env
}

/// Whether `path` can be included from the files on `stack`: no cycle,
/// not too deep, and a file.
fn can_include(entry: &IncludeEntry, path: &Path, stack: &[PathBuf], diags: &mut Diags) -> bool {
    let canonical = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    if stack
        .iter()
        .any(|s| s.canonicalize().unwrap_or_else(|_| s.clone()) == canonical)
    {
        let chain: Vec<String> = stack
            .iter()
            .map(PathBuf::as_path)
            .chain(std::iter::once(path))
            .map(|p| p.display().to_string())
            .collect();
        diags.push(
            &entry.node.pos,
            "include",
            format!(
                "include cycle: {}; remove one of these includes",
                chain.join(" -> ")
            ),
        );
        return false;
    }
    if stack.len() >= MAX_DEPTH {
        diags.push(
            &entry.node.pos,
            "include",
            format!("includes nest deeper than {MAX_DEPTH} files; flatten them"),
        );
        return false;
    }
    if !path.is_file() {
        diags.push(
            &entry.node.pos,
            "include",
            format!(
                "included file {} does not exist; fix the path",
                path.display()
            ),
        );
        return false;
    }
    true
}
