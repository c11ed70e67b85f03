//! What runs in the guest: `cloud_init`, `command`/`entrypoint`,
//! `post_start`/`pre_stop` hooks and the `healthcheck`.

use super::reader::{Reader, child, item, parse_duration_ms};
use crate::dockerfile::shell_quote;
use crate::keys;
use crate::manifest::{CloudInit, GuestCommand, Healthcheck, Hook, WriteFile};
use crate::yaml::{Kind, Node};

pub fn duration(r: &mut Reader, node: &Node, path: &str) -> Option<u64> {
    let text = r.string(node, path)?;
    let ms = parse_duration_ms(&text);
    if ms.is_none() {
        r.error(
            node,
            path,
            format!("{text:?} is not a duration; write e.g. 30s, 1m30s or 500ms"),
        );
    }
    ms
}

pub fn decode_commands(r: &mut Reader, node: &Node, path: &str) -> Vec<GuestCommand> {
    let mut out = Vec::new();
    for (i, entry) in r.list(node, path).iter().enumerate() {
        match &entry.kind {
            Kind::Scalar { text, .. } => out.push(GuestCommand::Shell(text.clone())),
            Kind::Seq(_) => out.push(GuestCommand::Exec(r.strings(entry, &item(path, i)))),
            _ => r.error(
                entry,
                &item(path, i),
                "must be a command string or an argv list",
            ),
        }
    }
    out
}

pub fn decode_cloud_init(r: &mut Reader, node: Option<&Node>, path: &str) -> CloudInit {
    let mut out = CloudInit::default();
    let Some(node) = node else { return out };
    if r.mapping(node, path, keys::CLOUD_INIT).is_none() {
        return out;
    }
    let get = |k: &str| node.get(k).filter(|n| !n.is_null());
    out.user = get("user")
        .and_then(|n| r.string(n, &child(path, "user")))
        .unwrap_or_default();
    out.hostname = get("hostname").and_then(|n| r.string(n, &child(path, "hostname")));
    if let Some(keys) = get("ssh_authorized_keys") {
        let kpath = child(path, "ssh_authorized_keys");
        for (i, key) in r.list(keys, &kpath).iter().enumerate() {
            let ipath = item(&kpath, i);
            let Some(text) = r.string(key, &ipath) else {
                continue;
            };
            let text = text.trim();
            if text.contains('\n') || text.split_whitespace().count() < 2 {
                r.error(
                    key,
                    &ipath,
                    "must be one SSH public key line, such as \"ssh-ed25519 AAAAC3Nza... me@laptop\" (the content of ~/.ssh/id_ed25519.pub)",
                );
                continue;
            }
            out.ssh_authorized_keys.push(text.to_string());
        }
    }
    out.packages = get("packages")
        .map(|n| r.strings(n, &child(path, "packages")))
        .unwrap_or_default();
    out.bootcmd = get("bootcmd")
        .map(|n| decode_commands(r, n, &child(path, "bootcmd")))
        .unwrap_or_default();
    out.runcmd = get("runcmd")
        .map(|n| decode_commands(r, n, &child(path, "runcmd")))
        .unwrap_or_default();
    if let Some(files) = get("write_files") {
        let fpath = child(path, "write_files");
        for (i, f) in r.list(files, &fpath).iter().enumerate() {
            let ipath = item(&fpath, i);
            if r.mapping(f, &ipath, keys::WRITE_FILE).is_none() {
                continue;
            }
            let Some(file_path) = r.opt_string(f.get("path"), &child(&ipath, "path")) else {
                r.error(f, &ipath, "needs path:");
                continue;
            };
            out.write_files.push(WriteFile {
                path: file_path,
                content: r
                    .opt_string(f.get("content"), &child(&ipath, "content"))
                    .unwrap_or_default(),
                encoding: r.opt_string(f.get("encoding"), &child(&ipath, "encoding")),
                owner: r.opt_string(f.get("owner"), &child(&ipath, "owner")),
                permissions: r.opt_string(f.get("permissions"), &child(&ipath, "permissions")),
                append: f
                    .get("append")
                    .and_then(|n| r.boolean(n, &child(&ipath, "append")))
                    .unwrap_or(false),
                defer: f
                    .get("defer")
                    .and_then(|n| r.boolean(n, &child(&ipath, "defer")))
                    .unwrap_or(false),
            });
        }
    }
    out
}

/// A command/entrypoint as one shell string: lists are quoted word by word,
/// strings are taken as shell text (Docker's shell form).
pub fn shell_words(r: &mut Reader, node: &Node, path: &str) -> Option<String> {
    match &node.kind {
        Kind::Scalar { text, .. } => Some(text.clone()),
        Kind::Seq(_) => {
            let words = r.strings(node, path);
            (!words.is_empty()).then(|| {
                words
                    .iter()
                    .map(|w| shell_quote(w))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
        }
        _ => {
            r.error(node, path, "must be a string or a list of strings");
            None
        }
    }
}

pub fn decode_hooks(r: &mut Reader, node: &Node, path: &str) -> Vec<Hook> {
    let mut out = Vec::new();
    for (i, entry) in r.list(node, path).iter().enumerate() {
        let hpath = item(path, i);
        if r.mapping(entry, &hpath, keys::HOOK).is_none() {
            continue;
        }
        let command = match entry.get("command") {
            Some(n) => match &n.kind {
                Kind::Scalar { text, .. } => GuestCommand::Shell(text.clone()),
                Kind::Seq(_) => GuestCommand::Exec(r.strings(n, &child(&hpath, "command"))),
                _ => {
                    r.error(n, &child(&hpath, "command"), "must be a string or a list");
                    continue;
                }
            },
            None => {
                r.error(entry, &hpath, "needs command:");
                continue;
            }
        };
        let environment = entry
            .get("environment")
            .map(|n| r.key_values(n, &child(&hpath, "environment"), &['=']))
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect();
        if let Some(n) = entry.get("privileged") {
            r.boolean(n, &child(&hpath, "privileged"));
        }
        out.push(Hook {
            command,
            user: r.opt_string(entry.get("user"), &child(&hpath, "user")),
            working_dir: r.opt_string(entry.get("working_dir"), &child(&hpath, "working_dir")),
            environment,
        });
    }
    out
}

/// A hook as one shell line: `cd`, exported variables, then the command,
/// run as the hook's user when one is set.
pub fn hook_to_shell(hook: &Hook) -> String {
    let mut line = String::new();
    if let Some(dir) = &hook.working_dir {
        line.push_str(&format!("cd {} && ", shell_quote(dir)));
    }
    for (k, v) in &hook.environment {
        line.push_str(&format!("{k}={} ", shell_quote(v)));
    }
    let command = match &hook.command {
        GuestCommand::Shell(s) => s.clone(),
        GuestCommand::Exec(argv) => argv
            .iter()
            .map(|a| shell_quote(a))
            .collect::<Vec<_>>()
            .join(" "),
    };
    match &hook.user {
        Some(user) => format!(
            "{line}runuser -u {} -- sh -c {}",
            shell_quote(user),
            shell_quote(&command)
        ),
        None => format!("{line}{command}"),
    }
}

pub fn decode_healthcheck(r: &mut Reader, node: &Node, path: &str) -> Option<Healthcheck> {
    r.mapping(node, path, keys::HEALTHCHECK)?;
    let get = |k: &str| node.get(k).filter(|n| !n.is_null());
    if get("disable").and_then(|n| r.boolean(n, &child(path, "disable"))) == Some(true) {
        return None;
    }
    let tpath = child(path, "test");
    let test = match get("test") {
        None => {
            r.error(
                node,
                path,
                "needs test: (a command list or string), or disable: true",
            );
            return None;
        }
        Some(n) => match &n.kind {
            Kind::Scalar { text, .. } => vec!["sh".into(), "-c".into(), text.clone()],
            _ => {
                let words = r.strings(n, &tpath);
                match words.first().map(String::as_str) {
                    Some("NONE") => return None,
                    Some("CMD") => words[1..].to_vec(),
                    Some("CMD-SHELL") => vec!["sh".into(), "-c".into(), words[1..].join(" ")],
                    Some(_) => words,
                    None => {
                        r.error(n, &tpath, "must not be empty");
                        return None;
                    }
                }
            }
        },
    };
    if test.is_empty() {
        r.error(node, &tpath, "names no command after CMD");
        return None;
    }
    let ms = |r: &mut Reader, k: &str, default: u64| {
        get(k)
            .and_then(|n| duration(r, n, &child(path, k)))
            .unwrap_or(default)
    };
    Some(Healthcheck {
        test,
        interval_ms: ms(r, "interval", 30_000),
        timeout_ms: ms(r, "timeout", 30_000),
        retries: get("retries")
            .and_then(|n| r.unsigned(n, &child(path, "retries"), u32::MAX as u64))
            .unwrap_or(3) as u32,
        start_period_ms: ms(r, "start_period", 0),
        start_interval_ms: ms(r, "start_interval", 5_000),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn hooks_render_as_shell() {
        let hook = Hook {
            command: GuestCommand::Exec(vec!["echo".into(), "a b".into()]),
            user: Some("app".into()),
            working_dir: Some("/srv".into()),
            environment: BTreeMap::from([("X".into(), "1".into())]),
        };
        assert_eq!(
            hook_to_shell(&hook),
            "cd /srv && X=1 runuser -u app -- sh -c 'echo '\\''a b'\\'''"
        );
    }
}
