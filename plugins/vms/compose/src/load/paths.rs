//! Makes the relative paths inside one file absolute, against the directory
//! they are relative to (the file's own, or an include's project_directory).
//!
//! Done per file before merging, so that a service from an included or
//! extended file keeps pointing at its own files.

use std::path::{Component, Path, PathBuf};

use crate::yaml::{Kind, Node};

/// Joins `rel` under `base` and removes `.` and `..` lexically.
pub fn absolutize(base: &Path, rel: &str) -> String {
    let expanded = match rel.strip_prefix("~/") {
        Some(rest) => match std::env::var_os("HOME") {
            Some(home) => PathBuf::from(home).join(rest),
            None => PathBuf::from(rel),
        },
        None => PathBuf::from(rel),
    };
    let joined = if expanded.is_absolute() {
        expanded
    } else {
        base.join(expanded)
    };
    let mut out = PathBuf::new();
    for part in joined.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out.to_string_lossy().into_owned()
}

fn rewrite(node: &mut Node, base: &Path, only_if_path: bool) {
    if let Kind::Scalar { text, .. } = &mut node.kind
        && (!only_if_path || crate::images::is_local_path(text))
    {
        *text = absolutize(base, text);
    }
}

fn rewrite_each(node: &mut Node, base: &Path) {
    match &mut node.kind {
        Kind::Scalar { .. } => rewrite(node, base, false),
        Kind::Seq(items) => {
            for item in items {
                if item.as_map().is_some() {
                    if let Some(path) = item.get_mut("path") {
                        rewrite(path, base, false);
                    }
                } else {
                    rewrite(item, base, false);
                }
            }
        }
        Kind::Map(_) => {
            if let Some(path) = node.get_mut("path") {
                rewrite(path, base, false);
            }
        }
        Kind::Null => {}
    }
}

/// Rewrites the `file:` of every top-level config and secret in `root`.
pub fn resolve_top_level_paths(root: &mut Node, base: &Path) {
    for section in ["configs", "secrets"] {
        let Some(defs) = root.get_mut(section).and_then(Node::as_map_mut) else {
            continue;
        };
        for (_, def) in defs.iter_mut() {
            if def.as_map().is_some()
                && let Some(file) = def.get_mut("file")
            {
                rewrite(file, base, false);
            }
        }
    }
}

/// Rewrites the path-valued fields of every service in `root`.
pub fn resolve_service_paths(root: &mut Node, base: &Path) {
    let Some(services) = root.get_mut("services").and_then(Node::as_map_mut) else {
        return;
    };
    for (_, service) in services.iter_mut() {
        resolve_one_service(service, base);
    }
}

pub fn resolve_one_service(service: &mut Node, base: &Path) {
    if service.as_map().is_none() {
        return;
    }
    if let Some(build) = service.get_mut("build") {
        if build.as_str().is_some() {
            rewrite(build, base, false);
        } else if let Some(context) = build.get_mut("context") {
            rewrite(context, base, false);
        } else if build.as_map().is_some() {
            build.set(
                "context",
                Node::string(absolutize(base, "."), build.pos.clone()),
            );
        }
    }
    if let Some(dockerfile) = service.get_mut("dockerfile") {
        rewrite(dockerfile, base, false);
    }
    if let Some(image) = service.get_mut("image")
        && image.as_str().is_some_and(crate::images::is_image_path)
    {
        rewrite(image, base, false);
    }
    for key in ["env_file", "label_file"] {
        if let Some(node) = service.get_mut(key) {
            rewrite_each(node, base);
        }
    }
    if let Some(extends) = service.get_mut("extends")
        && let Some(file) = extends.get_mut("file")
    {
        rewrite(file, base, false);
    }
    if let Some(Kind::Seq(volumes)) = service.get_mut("volumes").map(|v| &mut v.kind) {
        for volume in volumes {
            if let Kind::Scalar { text, .. } = &mut volume.kind {
                if let Some((source, rest)) = text.split_once(':')
                    && crate::images::is_local_path(source)
                {
                    *text = format!("{}:{rest}", absolutize(base, source));
                }
            } else if volume.get("type").and_then(Node::as_str) == Some("bind")
                && let Some(source) = volume.get_mut("source")
            {
                rewrite(source, base, false);
            }
        }
    }
    if let Some(Kind::Seq(devices)) = service.get_mut("devices").map(|v| &mut v.kind) {
        for device in devices {
            if let Some(rom) = device.get_mut("rom_file") {
                rewrite(rom, base, false);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolutize_normalises_dots() {
        assert_eq!(absolutize(Path::new("/p/q"), "../r/./s"), "/p/r/s");
        assert_eq!(absolutize(Path::new("/p"), "/abs"), "/abs");
        assert_eq!(absolutize(Path::new("/p"), "."), "/p");
    }
}
