//! Facts: what templates know about the machine, gathered natively (no
//! external commands).
//!
//! The facts are a TOML tree: `hostname`, `os.{id, id_like, version_id,
//! pretty_name}`, `arch`, `kernel`, and the machine facts ([`MACHINE_FACTS`]:
//! `cpus`, `memory_mb`, `interfaces`, and those of [`machine`]). In test mode
//! (a root other than `/`) the hostname and os come from files below the
//! root, `arch` and `kernel` from the running kernel, and the machine facts
//! only from `$ROOT/etc/holo/facts.toml`, so that fixtures never depend on
//! the machine. Custom facts ([`custom`], `etc/holo/facts.d`) come next, and
//! facts.toml last: it overrides any fact in both modes (tables are merged
//! key by key, everything else is replaced) and may add facts of its own.

pub mod custom;
mod machine;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;
use toml::{Table, Value};

use crate::root_fs::RootFs;

/// Where facts overrides live, relative to the root.
pub const FACTS_FILE: &str = "etc/holo/facts.toml";

pub use holo_protocol::fact_names::MACHINE_FACTS;

/// A line of facts.toml that sets a machine fact, for messages.
pub(crate) fn machine_fact_example(name: &str) -> &'static str {
    match name {
        "cpus" => "cpus = 4",
        "memory_mb" => "memory_mb = 4096",
        "interfaces" => "interfaces = [{ name = \"eth0\", addresses = [\"10.0.0.5\"] }]",
        "virtual" => "virtual = \"kvm\"",
        "is_virtual" => "is_virtual = true",
        "disks" => "disks = { vda = { size_bytes = 21474836480 } }",
        "mountpoints" => {
            "mountpoints = { \"/\" = { device = \"/dev/vda1\", filesystem = \"ext4\", size_bytes = 21474836480, available_bytes = 10737418240, used_bytes = 10737418240 } }"
        }
        "default_route" => "default_route = { interface = \"eth0\", gateway = \"10.0.0.1\" }",
        "primary_ip" => "primary_ip = \"10.0.0.5\"",
        "uptime_seconds" => "uptime_seconds = 3600",
        "processor_model" => "processor_model = \"Intel(R) Xeon(R) CPU\"",
        _ => "NAME = VALUE",
    }
}

/// A facts or data file could not be read; the message names the file (and
/// the line where there is one) and says what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    message: String,
}

impl Error {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Error {
            message: message.into(),
        }
    }

    /// The full message, e.g. `/etc/holo/facts.toml:3: expected ...`.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// The facts of one machine, as a TOML tree.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(transparent)]
pub struct Facts(Table);

impl Facts {
    /// Gathers the facts for the system below `root`, then applies
    /// `$ROOT/etc/holo/facts.toml`.
    pub fn gather(root: &Path, test_mode: bool) -> Result<Facts, Error> {
        let mut facts = Table::new();
        let etc = |rel: &str| root.join(rel);

        let hostname = if test_mode {
            read_hostname_file(&etc("etc/hostname"))?
        } else {
            nix::unistd::gethostname()
                .ok()
                .and_then(|name| name.into_string().ok())
        };
        if let Some(hostname) = hostname {
            facts.insert("hostname".into(), Value::String(hostname));
        }

        facts.insert("os".into(), Value::Table(read_os(root)?));

        if let Ok(uts) = nix::sys::utsname::uname() {
            let text = |s: &std::ffi::OsStr| Value::String(s.to_string_lossy().into_owned());
            facts.insert("arch".into(), text(uts.machine()));
            facts.insert("kernel".into(), text(uts.release()));
        }

        if !test_mode {
            if let Some(cpus) = online_cpus() {
                facts.insert("cpus".into(), Value::Integer(cpus));
            }
            if let Some(memory_mb) = memory_mb() {
                facts.insert("memory_mb".into(), Value::Integer(memory_mb));
            }
            let interfaces = interfaces();
            machine::gather(&mut facts, &interfaces);
            facts.insert("interfaces".into(), Value::Array(interfaces));
        }

        let files = if test_mode {
            RootFs::contained_in(root).map_err(|err| {
                Error::new(format!("{}: cannot open the root: {err}", root.display()))
            })?
        } else {
            RootFs::unconfined()
        };
        let custom = custom::gather(root, &files, test_mode, merge_over)?;
        merge_over(&mut facts, custom);

        let overrides_path = root.join(FACTS_FILE);
        if let Some(overrides) = read_toml_file(&overrides_path)? {
            merge_over(&mut facts, overrides);
        }
        Ok(Facts(facts))
    }

    /// Facts from a ready-made table (tests, and plugins that cache facts).
    pub fn from_table(table: Table) -> Facts {
        Facts(table)
    }

    /// The whole tree.
    pub fn as_table(&self) -> &Table {
        &self.0
    }

    /// Looks up a dotted path such as `os.id` or `interfaces.0.name`.
    pub fn get(&self, dotted: &str) -> Option<&Value> {
        lookup_path(&self.0, dotted)
    }

    /// The facts as a TOML document (what `holo-file facts` prints).
    pub fn to_toml(&self) -> String {
        table_to_toml(&self.0)
    }
}

/// Renders a table as a TOML document. Tables built from TOML always
/// serialise; should one ever not, the error text is returned as a comment so
/// the debug commands still print something useful.
pub(crate) fn table_to_toml(table: &Table) -> String {
    toml::to_string(table)
        .unwrap_or_else(|err| format!("# cannot render as TOML: {err}\n{table:?}\n"))
}

/// Walks `a.b.0.c` through tables and arrays.
pub(crate) fn lookup_path<'a>(table: &'a Table, dotted: &str) -> Option<&'a Value> {
    let mut segments = dotted.split('.');
    let mut current = table.get(segments.next()?)?;
    for segment in segments {
        current = match current {
            Value::Table(inner) => inner.get(segment)?,
            Value::Array(items) => items.get(segment.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(current)
}

/// Merges `overrides` into `base`: tables key by key, everything else
/// replaced. Used for facts overrides; data has its own merge strategies.
fn merge_over(base: &mut Table, overrides: Table) {
    for (key, value) in overrides {
        match (base.get_mut(&key), value) {
            (Some(Value::Table(existing)), Value::Table(incoming)) => {
                merge_over(existing, incoming)
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// Reads and parses a TOML file; `Ok(None)` when it does not exist.
pub(crate) fn read_toml_file(path: &Path) -> Result<Option<Table>, Error> {
    let Some(text) = read_optional(path)? else {
        return Ok(None);
    };
    parse_toml(path, &text).map(Some)
}

/// Parses TOML text, turning a syntax error into `PATH:LINE: message`.
pub(crate) fn parse_toml(path: &Path, text: &str) -> Result<Table, Error> {
    text.parse::<Table>().map_err(|err| {
        let line = err
            .span()
            .map(|span| line_at(text, span.start))
            .unwrap_or(1);
        Error::new(format!(
            "{}:{}: {}; fix the TOML syntax",
            path.display(),
            line,
            err.message().trim_end()
        ))
    })
}

/// The 1-based line of a byte offset.
pub(crate) fn line_at(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Reads a file that may be missing; other read errors are reported.
pub(crate) fn read_optional(path: &Path) -> Result<Option<String>, Error> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(Error::new(format!(
            "{}: cannot read: {err}; check that the file is readable UTF-8",
            path.display()
        ))),
    }
}

fn read_hostname_file(path: &Path) -> Result<Option<String>, Error> {
    Ok(read_optional(path)?.and_then(|text| {
        let name = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'))?;
        Some(name.to_string())
    }))
}

/// `os` from `etc/os-release`, else `usr/lib/os-release` (the order that
/// os-release(5) prescribes), with the spec's defaults for missing keys.
fn read_os(root: &Path) -> Result<Table, Error> {
    let candidates: [PathBuf; 2] = [root.join("etc/os-release"), root.join("usr/lib/os-release")];
    let mut fields = BTreeMap::new();
    for candidate in &candidates {
        if let Some(text) = read_optional(candidate)? {
            fields = parse_os_release(&text);
            break;
        }
    }
    let mut os = Table::new();
    for (key, field, default) in [
        ("id", "ID", "linux"),
        ("id_like", "ID_LIKE", ""),
        ("version_id", "VERSION_ID", ""),
        ("pretty_name", "PRETTY_NAME", "Linux"),
    ] {
        let value = fields.remove(field).unwrap_or_else(|| default.to_string());
        os.insert(key.into(), Value::String(value));
    }
    Ok(os)
}

/// Parses os-release(5): `KEY=value`, where the value may be quoted with `"`
/// or `'` and may contain backslash escapes.
fn parse_os_release(text: &str) -> BTreeMap<String, String> {
    let mut fields = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, raw)) = line.split_once('=') else {
            continue;
        };
        fields.insert(key.trim().to_string(), unquote(raw.trim()));
    }
    fields
}

fn unquote(raw: &str) -> String {
    let quote = match raw.chars().next() {
        Some(q @ ('"' | '\'')) if raw.len() >= 2 && raw.ends_with(q) => q,
        _ => return raw.to_string(),
    };
    let inner = &raw[1..raw.len() - 1];
    if quote == '\'' {
        return inner.to_string();
    }
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn online_cpus() -> Option<i64> {
    nix::unistd::sysconf(nix::unistd::SysconfVar::_NPROCESSORS_ONLN)
        .ok()
        .flatten()
        .or_else(|| {
            std::thread::available_parallelism()
                .ok()
                .and_then(|n| i64::try_from(n.get()).ok())
        })
}

fn memory_mb() -> Option<i64> {
    let info = nix::sys::sysinfo::sysinfo().ok()?;
    i64::try_from(info.ram_total() / (1024 * 1024)).ok()
}

/// One `[[interfaces]]` entry per interface, sorted by name, with its IPv4
/// and IPv6 addresses in the kernel's order.
fn interfaces() -> Vec<Value> {
    let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let Ok(addrs) = nix::ifaddrs::getifaddrs() else {
        return Vec::new();
    };
    for ifaddr in addrs {
        let addresses = by_name.entry(ifaddr.interface_name.clone()).or_default();
        let Some(address) = ifaddr.address else {
            continue;
        };
        if let Some(v4) = address.as_sockaddr_in() {
            addresses.push(v4.ip().to_string());
        } else if let Some(v6) = address.as_sockaddr_in6() {
            addresses.push(v6.ip().to_string());
        }
    }
    by_name
        .into_iter()
        .map(|(name, addresses)| {
            let mut entry = Table::new();
            entry.insert("name".into(), Value::String(name));
            entry.insert(
                "addresses".into(),
                Value::Array(addresses.into_iter().map(Value::String).collect()),
            );
            Value::Table(entry)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().expect("test paths have parents")).expect("mkdir");
        fs::write(path, text).expect("write");
    }

    #[test]
    fn test_mode_reads_hostname_and_os_below_the_root() {
        let root = tempfile::tempdir().expect("tempdir");
        write(root.path(), "etc/hostname", "# comment\n web01 \n");
        write(
            root.path(),
            "etc/os-release",
            "ID=debian\nID_LIKE=\"\"\nVERSION_ID=\"12\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n",
        );
        let facts = Facts::gather(root.path(), true).expect("gather");
        assert_eq!(facts.get("hostname").and_then(Value::as_str), Some("web01"));
        assert_eq!(facts.get("os.id").and_then(Value::as_str), Some("debian"));
        assert_eq!(
            facts.get("os.version_id").and_then(Value::as_str),
            Some("12")
        );
        assert_eq!(
            facts.get("os.pretty_name").and_then(Value::as_str),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
        // Machine-dependent facts stay out of test mode unless facts.toml has them.
        assert!(facts.get("cpus").is_none());
        assert!(facts.get("memory_mb").is_none());
        assert!(facts.get("interfaces").is_none());
        assert!(facts.get("kernel").is_some());
        assert!(facts.get("arch").is_some());
    }

    #[test]
    fn usr_lib_os_release_is_the_fallback_and_defaults_fill_gaps() {
        let root = tempfile::tempdir().expect("tempdir");
        write(root.path(), "usr/lib/os-release", "ID='arch'\n");
        let facts = Facts::gather(root.path(), true).expect("gather");
        assert_eq!(facts.get("os.id").and_then(Value::as_str), Some("arch"));
        assert_eq!(facts.get("os.version_id").and_then(Value::as_str), Some(""));
        assert_eq!(
            facts.get("os.pretty_name").and_then(Value::as_str),
            Some("Linux")
        );
        assert!(facts.get("hostname").is_none());
    }

    #[test]
    fn facts_toml_overrides_and_extends() {
        let root = tempfile::tempdir().expect("tempdir");
        write(root.path(), "etc/os-release", "ID=debian\nVERSION_ID=12\n");
        write(
            root.path(),
            FACTS_FILE,
            "cpus = 4\nmemory_mb = 2048\nkernel = \"6.1.0-test\"\nrole = \"web\"\n[os]\nid = \"ubuntu\"\n\n[[interfaces]]\nname = \"eth0\"\naddresses = [\"10.0.0.5\"]\n",
        );
        let facts = Facts::gather(root.path(), true).expect("gather");
        assert_eq!(facts.get("cpus").and_then(Value::as_integer), Some(4));
        assert_eq!(
            facts.get("memory_mb").and_then(Value::as_integer),
            Some(2048)
        );
        assert_eq!(
            facts.get("kernel").and_then(Value::as_str),
            Some("6.1.0-test")
        );
        assert_eq!(facts.get("role").and_then(Value::as_str), Some("web"));
        // The os table is merged key by key: id replaced, version_id kept.
        assert_eq!(facts.get("os.id").and_then(Value::as_str), Some("ubuntu"));
        assert_eq!(
            facts.get("os.version_id").and_then(Value::as_str),
            Some("12")
        );
        assert_eq!(
            facts
                .get("interfaces.0.addresses.0")
                .and_then(Value::as_str),
            Some("10.0.0.5")
        );
        let rendered = facts.to_toml();
        assert!(rendered.contains("cpus = 4"), "{rendered}");
        assert!(rendered.contains("[[interfaces]]"), "{rendered}");
    }

    #[test]
    fn a_fact_program_that_others_may_change_is_refused_naming_it() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().expect("tempdir");
        let program = root.path().join(custom::FACTS_DIR).join("role");
        write(
            root.path(),
            &format!("{}/role", custom::FACTS_DIR),
            "#!/bin/sh\necho role=web\n",
        );
        for (mode, refused) in [(0o777, true), (0o775, true), (0o757, true), (0o755, false)] {
            fs::set_permissions(&program, fs::Permissions::from_mode(mode)).expect("chmod");
            let gathered = Facts::gather(root.path(), true);
            if refused {
                let err = gathered.expect_err("refused");
                assert!(
                    err.message().starts_with(&format!(
                        "{}: the custom fact program is writable by",
                        program.display()
                    )),
                    "{mode:o}: {err}"
                );
            } else {
                let facts = gathered.expect("runs");
                assert_eq!(facts.get("role").and_then(Value::as_str), Some("web"));
            }
        }
        // The directory, too: whoever may write there may replace the program.
        let dir = root.path().join(custom::FACTS_DIR);
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).expect("chmod");
        let err = Facts::gather(root.path(), true).expect_err("refused");
        assert!(
            err.message().starts_with(&format!(
                "{}: the directory of custom fact programs is writable by",
                dir.display()
            )),
            "{err}"
        );
    }

    #[test]
    fn a_broken_facts_toml_names_file_and_line() {
        let root = tempfile::tempdir().expect("tempdir");
        write(root.path(), FACTS_FILE, "cpus = 4\nrole = \n");
        let err = Facts::gather(root.path(), true).expect_err("must fail");
        let expected_prefix = format!("{}:2: ", root.path().join(FACTS_FILE).display());
        assert!(err.message().starts_with(&expected_prefix), "{err}");
    }

    #[test]
    fn live_mode_gathers_machine_facts() {
        let facts = Facts::gather(Path::new("/nonexistent-root-for-test"), false).expect("gather");
        assert!(facts.get("cpus").and_then(Value::as_integer).unwrap_or(0) >= 1);
        assert!(
            facts
                .get("memory_mb")
                .and_then(Value::as_integer)
                .unwrap_or(0)
                >= 1
        );
        assert!(facts.get("hostname").and_then(Value::as_str).is_some());
        let interfaces = facts.get("interfaces").and_then(Value::as_array);
        assert!(interfaces.is_some_and(|list| !list.is_empty()));
        let virt = facts.get("virtual").and_then(Value::as_str).unwrap_or("");
        assert!(!virt.is_empty());
        assert_eq!(
            facts.get("is_virtual").and_then(Value::as_bool),
            Some(virt != "physical")
        );
        assert!(
            facts
                .get("mountpoints")
                .and_then(Value::as_table)
                .and_then(|mounts| mounts.get("/"))
                .and_then(|root| root.get("size_bytes"))
                .and_then(Value::as_integer)
                .unwrap_or(0)
                > 0,
            "the root file system and its size: {facts:?}"
        );
        assert!(
            facts
                .get("uptime_seconds")
                .and_then(Value::as_integer)
                .is_some()
        );
        assert!(facts.get("disks").and_then(Value::as_table).is_some());
        if cfg!(target_arch = "x86_64") {
            assert!(
                facts
                    .get("processor_model")
                    .and_then(Value::as_str)
                    .is_some()
            );
        }
    }

    #[test]
    fn os_release_quoting() {
        let fields = parse_os_release("A=\"a \\\"q\\\" b\"\nB='x y'\nC=plain\n# D=no\nbroken\n");
        assert_eq!(fields.get("A").map(String::as_str), Some("a \"q\" b"));
        assert_eq!(fields.get("B").map(String::as_str), Some("x y"));
        assert_eq!(fields.get("C").map(String::as_str), Some("plain"));
        assert!(!fields.contains_key("D"));
    }
}
