//! Custom facts, as facter's external facts: the files of
//! `$ROOT/etc/holo/facts.d`, in name order. `*.toml` and `*.json` files are
//! read; an executable file is run and its output (a JSON object, or
//! `key=value` lines) read. Hidden files, backups (`~`) and READMEs are
//! passed over; anything else is an error, so that a fact file never goes
//! unread without a word.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::{Table, Value};

use super::{Error, parse_toml};
use crate::process::{Command, Stream};
use crate::root_fs::RootFs;

/// Where custom facts live, relative to the root.
pub const FACTS_DIR: &str = "etc/holo/facts.d";

/// How long one executable may take.
pub const EXECUTABLE_TIMEOUT: Duration = Duration::from_secs(30);

/// How much an executable may print.
const MAX_OUTPUT: usize = 1024 * 1024;

/// The custom facts below `root`, each file's merged over the ones before
/// it by `merge`.
pub(super) fn gather(
    root: &Path,
    files: &RootFs,
    test_mode: bool,
    merge: fn(&mut Table, Table),
) -> Result<Table, Error> {
    let dir = root.join(FACTS_DIR);
    let names = match files.read_dir_names(&dir) {
        Ok(names) => names,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Table::new()),
        Err(err) => {
            return Err(Error::new(format!(
                "{}: cannot read the directory: {err}; make it readable or remove it",
                dir.display()
            )));
        }
    };
    let mut facts = Table::new();
    for name in names {
        let Some(text_name) = name.to_str() else {
            return Err(Error::new(format!(
                "{}: the name is not UTF-8; rename the file",
                dir.join(&name).display()
            )));
        };
        if text_name.starts_with('.')
            || text_name.ends_with('~')
            || text_name.to_ascii_lowercase().starts_with("readme")
        {
            continue;
        }
        let path = dir.join(&name);
        let meta = files
            .symlink_metadata(&path)
            .map_err(|err| Error::new(format!("{}: cannot read: {err}", path.display())))?;
        if meta.is_dir() {
            continue;
        }
        let table = if text_name.ends_with(".toml") {
            let text = read_text(files, &path)?;
            parse_toml(&path, &text)?
        } else if text_name.ends_with(".json") {
            let text = read_text(files, &path)?;
            json_object(&path, &text, "the file")?
        } else if meta.is_file() && meta.permissions().mode() & 0o111 != 0 {
            check_trusted(files, &dir, &path, &meta)?;
            run_executable(root, &path, test_mode)?
        } else {
            return Err(Error::new(format!(
                "{}: a custom fact file must end in .toml or .json, or be an executable; rename it, make it executable, or move it out of {FACTS_DIR}",
                path.display()
            )));
        };
        merge(&mut facts, table);
    }
    Ok(facts)
}

/// A program runs (as root, in a real run) only when nobody else could
/// have put it there or changed it: owned by root or by the user that
/// runs holo, and neither it nor its directory writable by group or
/// others, as sudo and sshd check their files.
fn check_trusted(
    files: &RootFs,
    dir: &Path,
    path: &Path,
    meta: &std::fs::Metadata,
) -> Result<(), Error> {
    let dir_meta = files
        .metadata(dir)
        .map_err(|err| Error::new(format!("{}: cannot read: {err}", dir.display())))?;
    for (place, what, meta) in [
        (dir, "the directory of custom fact programs", &dir_meta),
        (path, "the custom fact program", meta),
    ] {
        if let Some(problem) = untrusted(meta) {
            return Err(Error::new(format!(
                "{}: {what} is {problem}, so another user could run code through it; holo does not run it: chown root {} and chmod go-w {}",
                place.display(),
                place.display(),
                place.display()
            )));
        }
    }
    Ok(())
}

/// Why a file or directory cannot be trusted, if it cannot.
fn untrusted(meta: &std::fs::Metadata) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let me = nix::unistd::geteuid().as_raw();
    let mode = meta.mode();
    if meta.uid() != 0 && meta.uid() != me {
        return Some(format!(
            "owned by uid {}, neither root nor the user that runs holo",
            meta.uid()
        ));
    }
    let writers: Vec<&str> = [(0o020, "group"), (0o002, "others")]
        .into_iter()
        .filter(|(bit, _)| mode & bit != 0)
        .map(|(_, who)| who)
        .collect();
    (!writers.is_empty()).then(|| {
        format!(
            "writable by {} (mode {:o})",
            writers.join(" and "),
            mode & 0o7777
        )
    })
}

fn read_text(files: &RootFs, path: &Path) -> Result<String, Error> {
    files.read_to_string(path).map_err(|err| {
        Error::new(format!(
            "{}: cannot read: {err}; check that the file is readable UTF-8",
            path.display()
        ))
    })
}

/// A JSON object as a TOML table; `what` says whose text it is.
fn json_object(path: &Path, text: &str, what: &str) -> Result<Table, Error> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|err| {
        Error::new(format!(
            "{}:{}: {what} is not valid JSON: {err}",
            path.display(),
            err.line()
        ))
    })?;
    let serde_json::Value::Object(object) = value else {
        return Err(Error::new(format!(
            "{}: {what} must be a JSON object of facts, such as {{\"role\": \"web\"}}",
            path.display()
        )));
    };
    object
        .into_iter()
        .map(|(key, value)| Ok((key.clone(), json_to_toml(path, &key, value)?)))
        .collect()
}

fn json_to_toml(path: &Path, key: &str, value: serde_json::Value) -> Result<Value, Error> {
    use serde_json::Value as Json;
    Ok(match value {
        Json::Null => {
            return Err(Error::new(format!(
                "{}: fact {key:?} is null, which facts cannot hold; leave it out or give it a value",
                path.display()
            )));
        }
        Json::Bool(b) => Value::Boolean(b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Value::Integer(i),
            None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => Value::String(s),
        Json::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|item| json_to_toml(path, key, item))
                .collect::<Result<_, _>>()?,
        ),
        Json::Object(object) => Value::Table(
            object
                .into_iter()
                .map(|(k, v)| Ok((k.clone(), json_to_toml(path, &format!("{key}.{k}"), v)?)))
                .collect::<Result<_, Error>>()?,
        ),
    })
}

/// Runs an executable fact and reads what it prints.
fn run_executable(root: &Path, path: &Path, test_mode: bool) -> Result<Table, Error> {
    if test_mode {
        ensure_inside(root, path)?;
    }
    let mut stdout = Vec::new();
    let mut too_much = false;
    let finished = Command::new(path)
        .timeout(EXECUTABLE_TIMEOUT)
        .run_streaming(|stream, line| {
            if stream == Stream::Stdout && !too_much {
                if stdout.len() + line.len() > MAX_OUTPUT {
                    too_much = true;
                } else {
                    stdout.extend_from_slice(line);
                }
            }
        })
        .map_err(|err| Error::new(format!("{}: {err}", path.display())))?;
    if !finished.success() {
        let tail = finished.stderr_tail(5);
        return Err(Error::new(format!(
            "{}: the custom fact program failed ({}){}{tail}; fix it or remove it from {FACTS_DIR}",
            path.display(),
            finished.status,
            if tail.is_empty() { "" } else { ": " },
        )));
    }
    if too_much {
        return Err(Error::new(format!(
            "{}: the custom fact program printed more than {} KiB; print only the facts",
            path.display(),
            MAX_OUTPUT / 1024
        )));
    }
    let text = String::from_utf8(stdout).map_err(|_| {
        Error::new(format!(
            "{}: the custom fact program printed bytes that are not UTF-8",
            path.display()
        ))
    })?;
    if text.trim_start().starts_with('{') {
        return json_object(path, &text, "its output");
    }
    let mut facts = Table::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match line.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() => {
                facts.insert(
                    key.trim().to_string(),
                    Value::String(value.trim().to_string()),
                );
            }
            _ => {
                return Err(Error::new(format!(
                    "{}: line {} of its output, {line:?}, is not KEY=VALUE; print KEY=VALUE lines or one JSON object",
                    path.display(),
                    index + 1
                )));
            }
        }
    }
    Ok(facts)
}

/// In test mode the program run must be below the root, links resolved.
fn ensure_inside(root: &Path, path: &Path) -> Result<(), Error> {
    let canonical = |p: &Path| -> Result<PathBuf, Error> {
        p.canonicalize()
            .map_err(|err| Error::new(format!("{}: {err}", p.display())))
    };
    if canonical(path)?.starts_with(canonical(root)?) {
        Ok(())
    } else {
        Err(Error::new(format!(
            "{}: leads out of the root ({}); in test mode custom fact programs must be inside it",
            path.display(),
            root.display()
        )))
    }
}
