//! Replicas and virtual hardware: `replicas`, `scale`, `deploy`, `vm`,
//! `cpus` and `mem_limit`.

use super::reader::{Reader, child, parse_bytes};
use crate::keys;
use crate::manifest::Vm;
use crate::yaml::{Kind, Node};

const DEFAULT_MEMORY_MB: u64 = 512;
/// Below this no Linux guest boots, whatever the image (local images declare
/// no minimum of their own).
pub const MIN_GUEST_MEMORY_MB: u64 = 64;
/// The most virtual CPUs a service may ask for, by any field.
pub const MAX_VCPU: u64 = 1024;
/// The smallest `vm.disk_size`; `up` also refuses one below the image's.
const MIN_DISK_SIZE: u64 = 64 << 20;

pub fn decode_replicas(r: &mut Reader, node: &Node, path: &str) -> u32 {
    let mut found: Vec<(String, u32, &Node)> = Vec::new();
    for key in ["replicas", "scale"] {
        if let Some(n) = node.get(key).filter(|n| !n.is_null())
            && let Some(v) = r.unsigned(n, &child(path, key), 253)
        {
            found.push((child(path, key), v as u32, n));
        }
    }
    if let Some(deploy) = node.get("deploy").filter(|n| !n.is_null()) {
        let dpath = child(path, "deploy");
        if r.mapping(deploy, &dpath, keys::DEPLOY).is_some() {
            if let Some(n) = deploy.get("replicas").filter(|n| !n.is_null())
                && let Some(v) = r.unsigned(n, &child(&dpath, "replicas"), 253)
            {
                found.push((child(&dpath, "replicas"), v as u32, n));
            }
            if let Some(res) = deploy.get("resources").filter(|n| !n.is_null()) {
                let rpath = child(&dpath, "resources");
                if r.mapping(res, &rpath, keys::RESOURCES).is_some() {
                    for key in keys::RESOURCES {
                        if let Some(l) = res.get(key).filter(|n| !n.is_null()) {
                            r.mapping(l, &child(&rpath, key), keys::LIMITS);
                        }
                    }
                }
            }
        }
    }
    if let Some((first_path, first, _)) = found.first() {
        for (other_path, other, n) in &found[1..] {
            if other != first {
                r.error(
                    n,
                    other_path,
                    format!("{other} conflicts with {first_path}: {first}; keep one of them"),
                );
            }
        }
        return *first;
    }
    1
}

pub fn decode_vm(r: &mut Reader, node: &Node, path: &str, min_memory: u64) -> Option<Vm> {
    let vpath = child(path, "vm");
    let vm_node = node.get("vm").filter(|n| !n.is_null());
    if let Some(v) = vm_node {
        r.mapping(v, &vpath, keys::VM)?;
    }
    let get = |k: &str| vm_node.and_then(|v| v.get(k)).filter(|n| !n.is_null());
    let limits = node
        .get("deploy")
        .and_then(|d| d.get("resources"))
        .and_then(|d| d.get("limits"));
    let vcpu = match get("vcpu") {
        Some(n) => decode_vcpu(r, n, &child(&vpath, "vcpu")),
        None => decode_cpus(r, node, path, limits),
    };
    let memory_mb = decode_memory(r, node, path, get("memory_mb"), limits, min_memory)?;
    let machine = get("machine")
        .and_then(|n| r.string(n, &child(&vpath, "machine")))
        .unwrap_or_else(|| "q35".into());
    let cpu_model = get("cpu_model").and_then(|n| r.string(n, &child(&vpath, "cpu_model")));
    let uefi = get("uefi")
        .and_then(|n| r.boolean(n, &child(&vpath, "uefi")))
        .unwrap_or(false);
    let extra_args = get("extra_args")
        .map(|n| r.strings(n, &child(&vpath, "extra_args")))
        .unwrap_or_default();
    let disk_size_bytes = match get("disk_size") {
        Some(n) => Some(decode_disk_size(r, n, &child(&vpath, "disk_size"))?),
        None => None,
    };
    Some(Vm {
        vcpu: vcpu?,
        memory_mb: memory_mb?,
        machine,
        cpu_model,
        uefi,
        extra_args,
        disk_size_bytes,
    })
}

/// `vm.vcpu`: 1 to [`MAX_VCPU`]; 0 gets a message of its own.
fn decode_vcpu(r: &mut Reader, n: &Node, vcpu_path: &str) -> Option<u32> {
    if matches!(&n.kind, Kind::Scalar { text, .. } if text.trim() == "0") {
        r.error(
            n,
            vcpu_path,
            "must be at least 1, found 0; a VM needs a virtual CPU".to_string(),
        );
        return None;
    }
    r.unsigned_in(n, vcpu_path, 1, MAX_VCPU).map(|v| v as u32)
}

/// The vCPUs from Compose's `cpus` or `deploy.resources.limits.cpus`,
/// rounded up; 1 without either.
fn decode_cpus(r: &mut Reader, node: &Node, path: &str, limits: Option<&Node>) -> Option<u32> {
    let cpus = node
        .get("cpus")
        .filter(|n| !n.is_null())
        .map(|n| (n, child(path, "cpus")))
        .or_else(|| {
            limits
                .and_then(|l| l.get("cpus"))
                .map(|n| (n, format!("{path}.deploy.resources.limits.cpus")))
        });
    match cpus {
        // The same bounds as vm.vcpu: cpus: 1e9 is no more a VM
        // than vcpu: 2000.
        Some((n, p)) => match r.number(n, &p) {
            Some(c) if (0.0..=MAX_VCPU as f64).contains(&c) => Some(c.ceil().max(1.0) as u32),
            Some(c) => {
                r.error(
                    n,
                    &p,
                    format!("must be between 0 and {MAX_VCPU}, found {c}"),
                );
                None
            }
            None => None,
        },
        None => Some(1),
    }
}

/// The memory in MiB from `vm.memory_mb`, `mem_limit` or
/// `deploy.resources.limits.memory`, at least the guest's minimum. `None`
/// when the field is not even a string (the VM is not decoded further).
fn decode_memory(
    r: &mut Reader,
    node: &Node,
    path: &str,
    memory_mb_node: Option<&Node>,
    limits: Option<&Node>,
    min_memory: u64,
) -> Option<Option<u64>> {
    // Whichever field sets the memory, the same minimum applies to it.
    let memory_field = memory_mb_node
        .map(|n| (n, child(&child(path, "vm"), "memory_mb"), false))
        .or_else(|| {
            node.get("mem_limit")
                .filter(|n| !n.is_null())
                .map(|n| (n, child(path, "mem_limit"), true))
        })
        .or_else(|| {
            limits
                .and_then(|l| l.get("memory"))
                .filter(|n| !n.is_null())
                .map(|n| (n, format!("{path}.deploy.resources.limits.memory"), true))
        });
    let minimum = min_memory.max(MIN_GUEST_MEMORY_MB);
    let memory_mb = match &memory_field {
        None => Some(DEFAULT_MEMORY_MB.max(minimum)),
        Some((n, p, false)) => r.unsigned(n, p, 1 << 24),
        Some((n, p, true)) => {
            let text = r.string(n, p)?;
            match parse_bytes(&text) {
                Some(bytes) => Some(bytes.div_ceil(1 << 20).max(1)),
                None => {
                    r.error(
                        n,
                        p,
                        format!("{text:?} is not a size; write e.g. 512m, 2g or 1.5G"),
                    );
                    None
                }
            }
        }
    };
    if let (Some(mem), Some((n, p, _))) = (memory_mb, &memory_field)
        && mem < minimum
    {
        let needs = if min_memory >= MIN_GUEST_MEMORY_MB {
            "this image needs"
        } else {
            "a Linux guest needs to boot"
        };
        r.error(
            n,
            p,
            format!("{mem} MB is below the {minimum} MB {needs}; raise it"),
        );
    }
    Some(memory_mb)
}

/// `vm.disk_size`: a size of at least 64 MiB; `None` (the VM is not
/// decoded further) otherwise.
fn decode_disk_size(r: &mut Reader, n: &Node, dpath: &str) -> Option<u64> {
    let text = r.string(n, dpath)?;
    match parse_bytes(&text) {
        Some(bytes) if bytes >= MIN_DISK_SIZE => Some(bytes),
        Some(_) => {
            r.error(
                n,
                dpath,
                format!("{text:?} is too small for a root disk; write at least 64m, e.g. 20g"),
            );
            None
        }
        None => {
            r.error(
                n,
                dpath,
                format!("{text:?} is not a size; write e.g. 20g or 512m"),
            );
            None
        }
    }
}
