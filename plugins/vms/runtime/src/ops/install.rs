//! `holos install`: a systemd unit per project that runs `holos up` at boot
//! and `holos stop` (ACPI power-down, each service's grace period) at
//! shutdown.
//!
//! Every name and path that goes into the unit is escaped for the place it
//! lands: the unit name with systemd-escape's rules, command arguments as
//! quoted words (`%`, `$`, `\`, `"` and control characters escaped), other
//! values with `%` doubled. A value that the place cannot carry (a newline
//! in a path line) is refused, so a hostile project path cannot add lines
//! to the unit.

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::instance::{PRE_STOP_TIMEOUT, TERM_GRACE};
use holos_compose::Manifest;

/// Whether the unit is the system's or the user's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    System,
    User,
}

impl Scope {
    /// `systemctl`'s option for the scope, if any.
    pub fn systemctl_flag(self) -> Option<&'static str> {
        match self {
            Scope::System => None,
            Scope::User => Some("--user"),
        }
    }

    fn wanted_by(self) -> &'static str {
        match self {
            Scope::System => "multi-user.target",
            Scope::User => "default.target",
        }
    }
}

/// What a unit is made of.
#[derive(Clone, Debug)]
pub struct UnitRequest {
    pub project: String,
    /// The `holos` program the unit runs.
    pub holos: PathBuf,
    /// Words between the program and its options: `holos` when the program
    /// is the same binary under another name (`holo-vms holos …`).
    pub holos_subcommand: Option<String>,
    /// The compose files, absolute.
    pub files: Vec<PathBuf>,
    pub profiles: Vec<String>,
    /// The project directory: the unit's working directory.
    pub directory: PathBuf,
    /// The state root `holos` used when the unit was installed.
    pub state_dir: PathBuf,
    pub scope: Scope,
    /// How long `holos stop` may take for the whole project.
    pub stop_timeout_secs: u64,
}

/// `holos-<project>.service`, the project escaped as `systemd-escape` does.
pub fn unit_name(project: &str) -> String {
    format!("holos-{}.service", systemd_escape(project))
}

/// `systemd-escape STRING`: `/` becomes `-`; ASCII letters, digits, `:`,
/// `_` and `.` (not leading) stay; every other byte becomes `\xNN`.
pub fn systemd_escape(text: &str) -> String {
    let mut out = String::new();
    for (index, byte) in text.bytes().enumerate() {
        match byte {
            b'/' => out.push('-'),
            b'.' if index == 0 => out.push_str("\\x2e"),
            b if b.is_ascii_alphanumeric() || b == b':' || b == b'_' || b == b'.' => {
                out.push(char::from(b))
            }
            b => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out
}

/// One argument of an `Exec*=` line: a double-quoted word in which
/// systemd undoes C escapes and expands nothing (`%%` and `$$` are literal
/// `%` and `$`).
pub fn exec_word(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '%' => out.push_str("%%"),
            '$' => out.push_str("$$"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let mut buffer = [0u8; 4];
                for byte in c.encode_utf8(&mut buffer).bytes() {
                    out.push_str(&format!("\\x{byte:02x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A value of `Environment=`: one quoted `NAME=VALUE` word (C escapes
/// undone, `%` specifiers expanded, `$` literal).
fn environment_word(name: &str, value: &str) -> String {
    exec_word(&format!("{name}={value}")).replace("$$", "$")
}

/// A path on a line of its own (`WorkingDirectory=`): `%` doubled; a
/// control character cannot be written there and is refused.
fn path_value(what: &str, path: &Path) -> Result<String, Error> {
    let text = path.to_str().ok_or_else(|| {
        Error::Request(format!(
            "{what} {} is not UTF-8, which a systemd unit cannot hold; move the project to a path that is",
            path.display()
        ))
    })?;
    if text.chars().any(char::is_control) {
        return Err(Error::Request(format!(
            "{what} {text:?} contains a control character (such as a newline), which a systemd unit line cannot hold; move the project to a path without one"
        )));
    }
    Ok(text.replace('%', "%%"))
}

/// Free text on a line of its own (`Description=`): `%` doubled, control
/// characters shown escaped.
fn text_value(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect::<String>()
        .replace('%', "%%")
}

fn utf8<'p>(what: &str, path: &'p Path) -> Result<&'p str, Error> {
    path.to_str().ok_or_else(|| {
        Error::Request(format!(
            "{what} {} is not UTF-8, which a systemd unit cannot hold; move it to a path that is",
            path.display()
        ))
    })
}

/// The program of an `Exec*=` line: quoted, `%` doubled; systemd expands
/// no `$` there and refuses quotes, backslashes and control characters.
pub fn exec_program(path: &Path) -> Result<String, Error> {
    let text = utf8("the holos program", path)?;
    if let Some(bad) = text
        .chars()
        .find(|c| matches!(c, '"' | '\'' | '\\') || c.is_control())
    {
        return Err(Error::Request(format!(
            "holos runs from {text:?}, and systemd refuses a program path with {bad:?} in it; install holos in a directory without quotes, backslashes or control characters (such as /usr/local/bin)"
        )));
    }
    Ok(format!("\"{}\"", text.replace('%', "%%")))
}

/// The `holos` command line of the unit, before the command itself.
fn holos_prefix(request: &UnitRequest) -> Result<String, Error> {
    let mut words = vec![exec_program(&request.holos)?];
    words.extend(request.holos_subcommand.as_deref().map(exec_word));
    words.push(exec_word("-p"));
    words.push(exec_word(&request.project));
    for file in &request.files {
        words.push(exec_word("-f"));
        words.push(exec_word(utf8("the compose file", file)?));
    }
    for profile in &request.profiles {
        words.push(exec_word("--profile"));
        words.push(exec_word(profile));
    }
    Ok(words.join(" "))
}

/// The unit file's text.
pub fn unit_text(request: &UnitRequest) -> Result<String, Error> {
    let holos = holos_prefix(request)?;
    let directory = path_value("the project directory", &request.directory)?;
    let state = environment_word(
        "HOLOS_STATE_DIR",
        utf8("the state directory", &request.state_dir)?,
    );
    let mut text = String::new();
    text.push_str("# Written by `holos install`; `holos uninstall` removes it.\n");
    text.push_str("[Unit]\n");
    text.push_str(&format!(
        "Description=holos project {}\n",
        text_value(&request.project)
    ));
    text.push_str("Documentation=man:holos(1)\n");
    if request.scope == Scope::System {
        text.push_str("Wants=network-online.target\nAfter=network-online.target\n");
    }
    text.push_str("\n[Service]\n");
    // `up` returns once the VMs run (and are healthy); they stay in the
    // unit's cgroup until `stop` powers them down.
    text.push_str("Type=oneshot\nRemainAfterExit=yes\n");
    text.push_str(&format!("WorkingDirectory={directory}\n"));
    text.push_str(&format!("Environment={state}\n"));
    text.push_str(&format!("ExecStart={holos} \"up\" \"--quiet\"\n"));
    text.push_str(&format!("ExecStop={holos} \"stop\"\n"));
    text.push_str("TimeoutStartSec=30min\n");
    text.push_str(&format!("TimeoutStopSec={}\n", request.stop_timeout_secs));
    text.push_str("\n[Install]\n");
    text.push_str(&format!("WantedBy={}\n", request.scope.wanted_by()));
    Ok(text)
}

/// How long `holos stop` may take: each instance in turn gets its pre-stop
/// hooks, its grace period and the TERM grace, plus a minute to spare.
pub fn stop_timeout_secs(manifest: &Manifest) -> u64 {
    let per_instance: u64 = manifest
        .services
        .iter()
        .map(|s| {
            let each = s.stop_grace_period_ms / 1000
                + PRE_STOP_TIMEOUT.as_secs()
                + TERM_GRACE.as_secs()
                + 5;
            each * s.instances.len().max(1) as u64
        })
        .sum();
    per_instance + 60
}

/// The directory of units for a scope: below the system root for the
/// system (`HOLO_ROOT_DIR` in test mode), below `$XDG_CONFIG_HOME` (or
/// `~/.config`) for the user.
pub fn unit_dir(
    scope: Scope,
    system_root: &Path,
    lookup: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<PathBuf, Error> {
    match scope {
        Scope::System => Ok(system_root.join("etc/systemd/system")),
        Scope::User => {
            let absolute = |key: &str| lookup(key).map(PathBuf::from).filter(|p| p.is_absolute());
            if let Some(config) = absolute("XDG_CONFIG_HOME") {
                return Ok(config.join("systemd/user"));
            }
            absolute("HOME")
                .map(|home| home.join(".config/systemd/user"))
                .ok_or_else(|| {
                    Error::Request(
                        "neither XDG_CONFIG_HOME nor HOME is an absolute path, so holos cannot find the user's systemd units; set HOME, or use --system".into(),
                    )
                })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_matches_systemd_escape() {
        assert_eq!(systemd_escape("web"), "web");
        assert_eq!(systemd_escape("my-app"), "my\\x2dapp");
        assert_eq!(systemd_escape(".hidden/a b"), "\\x2ehidden-a\\x20b");
        assert_eq!(systemd_escape("a\nb"), "a\\x0ab");
        assert_eq!(systemd_escape("é"), "\\xc3\\xa9");
    }

    #[test]
    fn exec_words_expand_nothing_and_keep_newlines_inside() {
        assert_eq!(exec_word("plain"), "\"plain\"");
        assert_eq!(exec_word("a\"b\\c%d$e\nf"), "\"a\\\"b\\\\c%%d$$e\\nf\"");
    }

    #[test]
    fn the_program_keeps_its_dollars_and_refuses_what_systemd_refuses() {
        assert_eq!(
            exec_program(Path::new("/opt/a $b %c/holos")).unwrap(),
            "\"/opt/a $b %%c/holos\""
        );
        for bad in [
            "/opt/a\"b/holos",
            "/opt/a'b/holos",
            "/opt/a\\b/holos",
            "/a\nb/holos",
        ] {
            assert!(exec_program(Path::new(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_control_character_in_a_path_line_is_refused() {
        assert!(path_value("dir", Path::new("/a\nExecStartPre=/bin/rm")).is_err());
        assert_eq!(path_value("dir", Path::new("/a %n")).unwrap(), "/a %%n");
    }
}
