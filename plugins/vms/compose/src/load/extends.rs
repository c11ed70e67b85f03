//! `extends`: a service built on another one, from the same file or from
//! another file, merged with Compose's rules (the extending service wins).
//!
//! Chains are followed; a cycle is an error that names the whole chain.

use std::path::{Path, PathBuf};

use super::{Environment, interpolate, merge, paths};
use crate::diag::Diags;
use crate::yaml::{self, Node};

/// Longer chains are refused: resolution recurses once per link.
const MAX_CHAIN: usize = 64;

/// Resolves every service's `extends` in `root`, in place.
pub fn apply_extends(root: &mut Node, env: &Environment, diags: &mut Diags) {
    let Some(services) = root.get("services").and_then(Node::as_map) else {
        return;
    };
    let names: Vec<String> = services
        .iter()
        .filter(|(_, s)| s.get("extends").is_some())
        .filter_map(|(k, _)| k.as_str().map(str::to_string))
        .collect();
    if names.is_empty() {
        return;
    }
    let snapshot = root.clone();
    for name in names {
        let mut chain = Vec::new();
        if let Some(resolved) = resolve(&snapshot, None, &name, env, &mut chain, diags)
            && let Some(slot) = root.get_mut("services").and_then(|s| s.get_mut(&name))
        {
            *slot = resolved;
        }
    }
}

/// The service `name` of `root` with its extends chain merged in.
fn resolve(
    root: &Node,
    file: Option<&Path>,
    name: &str,
    env: &Environment,
    chain: &mut Vec<(Option<PathBuf>, String)>,
    diags: &mut Diags,
) -> Option<Node> {
    let path = format!("services.{name}");
    let service = root.get("services").and_then(|s| s.get(name))?;
    let key = (file.map(Path::to_path_buf), name.to_string());
    if chain.contains(&key) {
        let names: Vec<String> = chain
            .iter()
            .chain(std::iter::once(&key))
            .map(|(f, n)| match f {
                Some(f) => format!("{}:{n}", f.display()),
                None => n.clone(),
            })
            .collect();
        diags.push(
            &service.pos,
            format!("{path}.extends"),
            format!("extends cycle: {}; break the chain", names.join(" -> ")),
        );
        return None;
    }
    let Some(extends) = service.get("extends") else {
        return Some(service.clone());
    };
    if chain.len() >= MAX_CHAIN {
        diags.push(
            &extends.pos,
            format!("{path}.extends"),
            format!("extends chain longer than {MAX_CHAIN} services; flatten it"),
        );
        return None;
    }
    let (base_name, base_file) = extends_target(extends, &path, diags)?;
    chain.push(key);
    let base = match &base_file {
        None => {
            if root
                .get("services")
                .and_then(|s| s.get(&base_name))
                .is_none()
            {
                diags.push(
                    &extends.pos,
                    format!("{path}.extends"),
                    format!("extends unknown service {base_name:?}; define it or fix the name"),
                );
                None
            } else {
                resolve(root, file, &base_name, env, chain, diags)
            }
        }
        Some(other) => {
            let base = Base {
                file: other,
                name: &base_name,
                extends,
                path: &path,
            };
            resolve_in_file(&base, env, chain, diags)
        }
    };
    chain.pop();
    let base = base?;
    let mut own = service.clone();
    own.remove("extends");
    let mut merged = merge::merge(base, own, &["services", name]);
    merged.pos = service.pos.clone();
    Some(merged)
}

/// The service `extends` names, and the file it is in when not this one.
fn extends_target(
    extends: &Node,
    path: &str,
    diags: &mut Diags,
) -> Option<(String, Option<PathBuf>)> {
    match (extends.as_str(), extends.get("service")) {
        (Some(n), _) => Some((n.to_string(), None)),
        (None, Some(n)) => match n.as_str() {
            Some(n) => Some((
                n.to_string(),
                extends
                    .get("file")
                    .and_then(Node::as_str)
                    .map(PathBuf::from),
            )),
            None => {
                diags.push(
                    &n.pos,
                    format!("{path}.extends.service"),
                    "must be a service name",
                );
                None
            }
        },
        (None, None) => {
            diags.push(
                &extends.pos,
                format!("{path}.extends"),
                "needs service: (and optionally file:); write extends: {service: NAME}",
            );
            None
        }
    }
}

/// A base service in another file, and where the extending service names it.
struct Base<'a> {
    file: &'a Path,
    name: &'a str,
    extends: &'a Node,
    /// The extending service's key path.
    path: &'a str,
}

/// The base service resolved in its own file (interpolated, its paths
/// relative to that file's directory).
fn resolve_in_file(
    base: &Base,
    env: &Environment,
    chain: &mut Vec<(Option<PathBuf>, String)>,
    diags: &mut Diags,
) -> Option<Node> {
    let mut other_root = match yaml::load_file(base.file) {
        Err(errors) => {
            diags.extend(errors);
            return None;
        }
        Ok(root) => root,
    };
    interpolate::interpolate_tree(&mut other_root, env, "", diags);
    let dir = base.file.parent().unwrap_or(Path::new("/"));
    paths::resolve_service_paths(&mut other_root, dir);
    if other_root
        .get("services")
        .and_then(|s| s.get(base.name))
        .is_none()
    {
        diags.push(
            &base.extends.pos,
            format!("{}.extends", base.path),
            format!(
                "{} has no service {:?}; fix service: or file:",
                base.file.display(),
                base.name
            ),
        );
        return None;
    }
    resolve(&other_root, Some(base.file), base.name, env, chain, diags)
}
