//! `volumes` (bind mounts and named volumes) and `devices` (PCI
//! passthrough; Compose device strings are kept as metadata).

use std::collections::BTreeMap;

use super::reader::{Reader, child, item};
use crate::keys;
use crate::manifest::{Mount, MountKind, PciDevice};
use crate::yaml::{Kind, Node};

pub fn decode_volumes(
    r: &mut Reader,
    node: &Node,
    path: &str,
    volume_names: &[String],
    metadata: &mut BTreeMap<String, serde_json::Value>,
) -> Vec<Mount> {
    let mut out = Vec::new();
    let mut ignored = Vec::new();
    for (i, entry) in r.list(node, path).iter().enumerate() {
        let epath = item(path, i);
        let mount = match &entry.kind {
            Kind::Scalar { text, .. } => short_volume(r, entry, &epath, text),
            Kind::Map(_) => long_volume(r, entry, &epath, &mut ignored),
            _ => {
                r.error(entry, &epath, "must be SOURCE:TARGET[:ro|rw] or a mapping");
                None
            }
        };
        if let Some(mount) = mount
            && mount_is_valid(r, entry, &epath, &mount, volume_names)
        {
            out.push(mount);
        }
    }
    if !ignored.is_empty() {
        metadata.insert("volumes_ignored".into(), serde_json::Value::Array(ignored));
    }
    out
}

/// `SOURCE:TARGET[:ro|rw]`, or only `TARGET` for an anonymous volume.
fn short_volume(r: &mut Reader, entry: &Node, epath: &str, text: &str) -> Option<Mount> {
    let parts: Vec<&str> = text.split(':').collect();
    let (source, target, mode) = match parts.as_slice() {
        [source, target] => (*source, *target, None),
        [source, target, mode] => (*source, *target, Some(*mode)),
        // An anonymous volume: only the path in the guest.
        [target] => ("", *target, None),
        _ => {
            r.error(entry, epath, "must be SOURCE:TARGET[:ro|rw]");
            return None;
        }
    };
    let read_only = match mode {
        None | Some("rw") => false,
        Some("ro") => true,
        Some(other) => {
            r.error(
                entry,
                epath,
                format!("mode {other:?} is not supported; use ro or rw"),
            );
            return None;
        }
    };
    let kind = if source.is_empty() {
        MountKind::Anonymous
    } else if source.starts_with('/') {
        MountKind::Bind
    } else {
        MountKind::Volume
    };
    Some(Mount {
        kind,
        source: source.to_string(),
        target: target.to_string(),
        read_only,
    })
}

/// The long syntax; types other than bind and volume are kept in `ignored`.
fn long_volume(
    r: &mut Reader,
    entry: &Node,
    epath: &str,
    ignored: &mut Vec<serde_json::Value>,
) -> Option<Mount> {
    r.mapping(entry, epath, keys::VOLUME_LONG)?;
    let kind = r
        .opt_string(entry.get("type"), &child(epath, "type"))
        .unwrap_or_else(|| "volume".into());
    if !keys::VOLUME_TYPES.contains(&kind.as_str()) {
        r.error(
            entry,
            &child(epath, "type"),
            format!(
                "unknown volume type {kind:?}; use one of {}",
                keys::VOLUME_TYPES.join(", ")
            ),
        );
        return None;
    }
    if !matches!(kind.as_str(), "bind" | "volume") {
        ignored.push(entry.to_json());
        return None;
    }
    let source = r.opt_string(entry.get("source"), &child(epath, "source"));
    let target = r.opt_string(entry.get("target"), &child(epath, "target"));
    let read_only = entry
        .get("read_only")
        .and_then(|n| r.boolean(n, &child(epath, "read_only")))
        .unwrap_or(false);
    // A volume without a source is anonymous, as in Compose.
    let (source, kind) = match (source, kind.as_str()) {
        (Some(source), "bind") => (source, MountKind::Bind),
        (Some(source), _) => (source, MountKind::Volume),
        (None, "volume") => (String::new(), MountKind::Anonymous),
        (None, _) => {
            r.error(entry, epath, "a bind mount needs source: and target:");
            return None;
        }
    };
    let Some(target) = target else {
        r.error(entry, epath, "a mount needs target:, the path in the guest");
        return None;
    };
    Some(Mount {
        kind,
        source,
        target,
        read_only,
    })
}

/// An absolute target, and a named volume that is declared.
fn mount_is_valid(
    r: &mut Reader,
    entry: &Node,
    epath: &str,
    mount: &Mount,
    volume_names: &[String],
) -> bool {
    if !mount.target.starts_with('/') {
        let hint = if mount.kind == MountKind::Anonymous {
            "; an anonymous volume is a path such as /app/node_modules, a named one NAME:/path"
        } else {
            ""
        };
        r.error(
            entry,
            epath,
            format!(
                "target {:?} must be an absolute path in the guest{hint}",
                mount.target
            ),
        );
        return false;
    }
    if mount.kind == MountKind::Volume && !volume_names.contains(&mount.source) {
        let hint =
            crate::diag::did_you_mean(&mount.source, volume_names.iter().map(String::as_str))
                .map(|s| format!("did you mean {s:?}? "))
                .unwrap_or_default();
        r.error(
            entry,
            epath,
            format!(
                "volume {:?} is not declared; {hint}declare it under top-level volumes",
                mount.source
            ),
        );
        return false;
    }
    true
}

pub fn decode_devices(
    r: &mut Reader,
    node: &Node,
    path: &str,
    metadata: &mut BTreeMap<String, serde_json::Value>,
) -> Vec<PciDevice> {
    let mut out = Vec::new();
    let mut kept = Vec::new();
    for (i, entry) in r.list(node, path).iter().enumerate() {
        let epath = item(path, i);
        match &entry.kind {
            Kind::Map(_) if entry.get("pci").is_some() => {
                if r.mapping(entry, &epath, keys::DEVICE_PCI).is_none() {
                    continue;
                }
                let pci = entry
                    .get("pci")
                    .and_then(|n| r.string(n, &child(&epath, "pci")));
                let rom_file = r.opt_string(entry.get("rom_file"), &child(&epath, "rom_file"));
                if let Some(pci) = pci {
                    if !is_pci_address(&pci) {
                        r.error(
                            entry,
                            &child(&epath, "pci"),
                            format!("{pci:?} is not a PCI address such as 01:00.0"),
                        );
                        continue;
                    }
                    out.push(PciDevice { pci, rom_file });
                }
            }
            Kind::Map(_) => {
                r.mapping(entry, &epath, keys::DEVICE_LONG);
                kept.push(entry.to_json());
            }
            Kind::Scalar { .. } => kept.push(entry.to_json()),
            _ => r.error(
                entry,
                &epath,
                "must be {pci: ADDRESS} or a Compose device string",
            ),
        }
    }
    if !kept.is_empty() {
        metadata.insert("devices".into(), serde_json::Value::Array(kept));
    }
    out
}

/// `BB:DD.F`, optionally with a `DDDD:` domain.
fn is_pci_address(text: &str) -> bool {
    let hex = |s: &str, n: usize| s.len() == n && s.chars().all(|c| c.is_ascii_hexdigit());
    let parts: Vec<&str> = text.split(':').collect();
    let (bus, rest) = match parts.as_slice() {
        [bus, rest] => (*bus, *rest),
        [domain, bus, rest] if hex(domain, 4) => (*bus, *rest),
        _ => return false,
    };
    match rest.split_once('.') {
        Some((dev, func)) => {
            hex(bus, 2)
                && hex(dev, 2)
                && func.len() == 1
                && func.chars().all(|c| ('0'..='7').contains(&c))
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pci_addresses() {
        assert!(is_pci_address("01:00.0") && is_pci_address("0000:0a:1f.7"));
        assert!(
            !is_pci_address("1:00.0") && !is_pci_address("01:00.8") && !is_pci_address("01:00")
        );
    }
}
