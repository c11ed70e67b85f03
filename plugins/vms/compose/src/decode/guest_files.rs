//! `configs` and `secrets`: the top-level definitions (`file:`, `content:`
//! or `environment:`) and a service's references to them (short syntax, or
//! `source`, `target`, `uid`, `gid`, `mode`), resolved into the files the
//! guest gets. Only definitions that an active service uses are read.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use super::reader::{Reader, child, item};
use crate::keys;
use crate::load::Environment;
use crate::load::interpolate::Lookup;
use crate::manifest::{FileContent, GuestFile, GuestFileKind};
use crate::yaml::{Kind, Node};

/// The contents of the definitions that the active services use, by kind
/// and name; a definition that failed is absent (its error is reported).
pub type Definitions = BTreeMap<(GuestFileKind, String), Vec<u8>>;

fn section(kind: GuestFileKind) -> &'static str {
    match kind {
        GuestFileKind::Config => "configs",
        GuestFileKind::Secret => "secrets",
    }
}

fn noun(kind: GuestFileKind) -> &'static str {
    match kind {
        GuestFileKind::Config => "config",
        GuestFileKind::Secret => "secret",
    }
}

/// The source name of one service reference (short or long syntax).
fn source_of(entry: &Node) -> Option<String> {
    match &entry.kind {
        Kind::Scalar { text, .. } => Some(text.clone()),
        Kind::Map(_) => entry
            .get("source")
            .and_then(Node::as_str)
            .map(str::to_string),
        _ => None,
    }
}

/// Whether a config or secret `file:` must lie in the project directory
/// unless `x-holo: {allow_host_files: true}` says otherwise: set by
/// holo-vms, which holo runs as root, so that a compose file cannot hand a
/// guest any file of the host (`/etc/shadow`).
static HOST_FILES_CONFINED: AtomicBool = AtomicBool::new(false);

/// Confines config and secret files to the project directory in this
/// process (holo-vms).
pub fn confine_host_files() {
    HOST_FILES_CONFINED.store(true, Ordering::Relaxed);
}

/// The `x-holo.allow_host_files` of `node`: the top level (whose other
/// keys `decode_top_level` checks) or a definition.
pub fn allows_host_files(r: &mut Reader, node: &Node, path: &str) -> bool {
    let Some(x_holo) = node.get("x-holo").filter(|n| !n.is_null()) else {
        return false;
    };
    let path = child(path, "x-holo");
    // The top level's keys are checked with the rest of its x-holo.
    let entries = if path == "x-holo" {
        x_holo.as_map()
    } else {
        r.mapping(x_holo, &path, keys::X_HOLO_FILE)
    };
    let Some(entries) = entries else {
        return false;
    };
    entries
        .iter()
        .find(|(k, v)| k.as_str() == Some("allow_host_files") && !v.is_null())
        .is_some_and(|(_, value)| r.boolean(value, &child(&path, "allow_host_files")) == Some(true))
}

/// Refuses `file` outside `directory` (symlinks resolved) while host files
/// are confined and nothing allows them.
fn check_host_file(file: &str, directory: &Path, allowed: bool) -> Result<(), String> {
    if allowed || !HOST_FILES_CONFINED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let resolved = Path::new(file).canonicalize();
    let top = directory
        .canonicalize()
        .unwrap_or_else(|_| directory.to_path_buf());
    match resolved {
        Ok(resolved) if resolved.starts_with(&top) => Ok(()),
        _ => Err(format!(
            "{file} is outside the project directory {}, and holo-vms runs as root; move the file into the project directory, or allow host files with x-holo: {{allow_host_files: true}} on this definition or at the top level",
            directory.display()
        )),
    }
}

/// Reads the definitions that the services of `root` refer to; `allow_all`
/// is the top level's `x-holo.allow_host_files`.
pub fn decode_definitions(
    r: &mut Reader,
    root: &Node,
    environment: &Environment,
    (directory, allow_all): (&Path, bool),
) -> Definitions {
    let mut out = Definitions::new();
    for kind in [GuestFileKind::Config, GuestFileKind::Secret] {
        let top = section(kind);
        let mut used: Vec<String> = Vec::new();
        for (_, service) in root
            .get("services")
            .and_then(Node::as_map)
            .unwrap_or_default()
        {
            if let Some(refs) = service.get(top).and_then(Node::as_seq) {
                used.extend(refs.iter().filter_map(source_of));
            }
        }
        let Some(defs) = root.get(top).and_then(Node::as_map) else {
            continue;
        };
        for (name, def) in defs {
            let Some(name) = name.as_str() else { continue };
            let path = child(top, name);
            if r.mapping(def, &path, keys::TOP_CONFIG).is_none() {
                continue;
            }
            if !used.iter().any(|u| u == name) {
                continue;
            }
            let allowed = allow_all || allows_host_files(r, def, &path);
            let place = (directory, allowed);
            if let Some(bytes) = read_definition(r, kind, def, &path, environment, place) {
                out.insert((kind, name.to_string()), bytes);
            }
        }
    }
    out
}

fn read_definition(
    r: &mut Reader,
    kind: GuestFileKind,
    def: &Node,
    path: &str,
    environment: &Environment,
    (directory, allowed): (&Path, bool),
) -> Option<Vec<u8>> {
    if let Some(external) = def.get("external")
        && r.boolean(external, &child(path, "external")) == Some(true)
    {
        r.error(
            external,
            &child(path, "external"),
            format!(
                "an external {} lives in a Swarm, which holos cannot read; give it file:, content: or environment:",
                noun(kind)
            ),
        );
        return None;
    }
    let given: Vec<&str> = ["file", "content", "environment"]
        .into_iter()
        .filter(|k| def.get(k).is_some_and(|n| !n.is_null()))
        .collect();
    match given.as_slice() {
        ["file"] => {
            let node = def.get("file")?;
            let file = r.string(node, &child(path, "file"))?;
            if let Err(message) = check_host_file(&file, directory, allowed) {
                r.error(node, &child(path, "file"), message);
                return None;
            }
            match std::fs::read(&file) {
                Ok(bytes) => Some(bytes),
                Err(e) => {
                    r.error(
                        node,
                        &child(path, "file"),
                        format!("cannot read {file}: {e}; create the file or fix the path"),
                    );
                    None
                }
            }
        }
        ["content"] => {
            let node = def.get("content")?;
            r.string(node, &child(path, "content"))
                .map(String::into_bytes)
        }
        ["environment"] => {
            let node = def.get("environment")?;
            let variable = r.string(node, &child(path, "environment"))?;
            match environment.lookup(&variable) {
                Some(value) => Some(value.into_bytes()),
                None => {
                    r.error(
                        node,
                        &child(path, "environment"),
                        format!("the variable {variable} is not set; set it in the environment or in .env"),
                    );
                    None
                }
            }
        }
        [] => {
            r.error(
                def,
                path,
                "needs one of file:, content: or environment: (the data the guest gets)",
            );
            None
        }
        _ => {
            r.error(
                def,
                path,
                format!(
                    "gives {}: keep exactly one of file:, content: or environment:",
                    given.join(", ")
                ),
            );
            None
        }
    }
}

/// A service's `configs:` or `secrets:`.
pub fn decode_references(
    r: &mut Reader,
    kind: GuestFileKind,
    node: &Node,
    path: &str,
    definitions: &Definitions,
    declared: &dyn Fn(&str) -> bool,
) -> Vec<GuestFile> {
    let mut out: Vec<GuestFile> = Vec::new();
    for (i, entry) in r.list(node, path).iter().enumerate() {
        let entry_path = item(path, i);
        let long = entry.as_map().is_some();
        if long
            && r.mapping(entry, &entry_path, keys::FILE_REFERENCE)
                .is_none()
        {
            continue;
        }
        let Some(source) = source_of(entry) else {
            r.error(
                entry,
                &entry_path,
                format!("must be a {} name or a mapping with source:", noun(kind)),
            );
            continue;
        };
        if !declared(&source) {
            r.error(
                entry,
                &entry_path,
                format!(
                    "unknown {} {source:?}; declare it under the top-level {}:",
                    noun(kind),
                    section(kind)
                ),
            );
            continue;
        }
        let field = |key: &str| entry.get(key).filter(|n| long && !n.is_null());
        let target = match field("target").and_then(|n| r.string(n, &child(&entry_path, "target")))
        {
            Some(t) => t,
            None => source.clone(),
        };
        let target = match (kind, target.starts_with('/')) {
            (_, true) => target,
            (GuestFileKind::Secret, false) => format!("/run/secrets/{target}"),
            (GuestFileKind::Config, false) => format!("/{target}"),
        };
        let uid = decode_id(r, field("uid"), &entry_path, "uid");
        let gid = decode_id(r, field("gid"), &entry_path, "gid");
        let mode = decode_mode(r, field("mode"), &child(&entry_path, "mode"), kind);
        let (Some(uid), Some(gid), Some(mode)) = (uid, gid, mode) else {
            continue;
        };
        if let Some(other) = out.iter().find(|f| f.target == target) {
            r.error(
                entry,
                &entry_path,
                format!(
                    "{target} is already the target of {} {}; give one a different target:",
                    noun(other.kind),
                    other.source
                ),
            );
            continue;
        }
        // A definition that failed to read was reported where it is.
        let Some(bytes) = definitions.get(&(kind, source.clone())) else {
            continue;
        };
        out.push(GuestFile {
            kind,
            source,
            target,
            uid,
            gid,
            mode: format!("{mode:04o}"),
            content: FileContent {
                bytes: bytes.clone(),
                secret: kind == GuestFileKind::Secret,
            },
        });
    }
    out
}

/// A reference's `uid` or `gid` (`key`): a number as a string; 0 when unset.
fn decode_id(r: &mut Reader, n: Option<&Node>, entry_path: &str, key: &str) -> Option<u32> {
    let Some(n) = n else { return Some(0) };
    let text = r.string(n, &child(entry_path, key))?;
    match text.trim().parse::<u32>() {
        Ok(v) => Some(v),
        Err(_) => {
            r.error(
                n,
                &child(entry_path, key),
                format!("{text:?} is not a numeric {key}; write a number such as \"1000\""),
            );
            None
        }
    }
}

/// A reference's `mode`, else the default of its kind.
fn decode_mode(
    r: &mut Reader,
    n: Option<&Node>,
    mode_path: &str,
    kind: GuestFileKind,
) -> Option<u32> {
    match n {
        Some(n) => match r.string(n, mode_path).map(|t| parse_mode(&t)) {
            Some(Ok(mode)) => Some(mode),
            Some(Err(e)) => {
                r.error(n, mode_path, e);
                None
            }
            None => None,
        },
        // Compose gives 0444; a secret readable by its owner only.
        None => Some(match kind {
            GuestFileKind::Config => 0o444,
            GuestFileKind::Secret => 0o400,
        }),
    }
}

/// A file mode as Compose writes it: octal with a leading `0` or `0o`
/// (YAML 1.1's octal integers), else a decimal number.
pub fn parse_mode(text: &str) -> Result<u32, String> {
    let text = text.trim();
    let parsed = if let Some(octal) = text.strip_prefix("0o").or_else(|| text.strip_prefix("0O")) {
        u32::from_str_radix(octal, 8)
    } else if text.len() > 1 && text.starts_with('0') {
        u32::from_str_radix(&text[1..], 8)
    } else {
        text.parse::<u32>()
    };
    match parsed {
        Ok(mode) if mode <= 0o7777 => Ok(mode),
        _ => Err(format!(
            "{text:?} is not a file mode; write it in octal, such as 0440"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_read_as_compose_writes_them() {
        assert_eq!(parse_mode("0440"), Ok(0o440));
        assert_eq!(parse_mode("0o600"), Ok(0o600));
        assert_eq!(parse_mode("288"), Ok(0o440));
        assert!(parse_mode("0999").is_err());
        assert!(parse_mode("rw").is_err());
        assert!(parse_mode("0177777").is_err());
    }
}
