//! `holo session new` and `holo session report`: a session keeps the
//! results of one-off `ensure` runs (written by the SDK, in holo-protocol's
//! format), so that a later one-off's `--require` and `--subscribe` see
//! them; the report prints the session as `holo apply`'s run report.
//!
//! A new session is a directory of mode 0700 below `ROOT/run/holo/sessions/`
//! (inside the root in test mode; gone at the next boot), or the empty or
//! missing directory `--directory` names (in test mode, inside the root).

use crate::apply::{self, Mode, Outcome};
use crate::run_report::{EntityResult, RunReport};
use holo_protocol::session::{ENV_VARS, Session};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Where new sessions go below the root.
const SESSIONS_DIR: &str = "run/holo/sessions";

const USAGE: &str =
    "usage: holo session new [--directory DIR] | holo session report [--session DIR] [--remove]";

/// `holo session ARGS...`; the exit code.
pub fn main(args: &[String]) -> i32 {
    let result = match args.first().map(String::as_str) {
        Some("new" | "start" | "create") => new(&args[1..]),
        Some("report") => report(&args[1..]),
        _ => Err(USAGE.to_string()),
    };
    match result {
        Ok(()) => 0,
        Err(message) => {
            eprintln!("!! holo session: {message}");
            if message == USAGE { 2 } else { 1 }
        }
    }
}

/// The root, `/` when `HOLO_ROOT_DIR` is unset or empty.
fn root() -> PathBuf {
    std::env::var_os("HOLO_ROOT_DIR")
        .filter(|root| !root.is_empty())
        .map_or_else(|| PathBuf::from("/"), PathBuf::from)
}

fn test_mode(root: &Path) -> bool {
    root != Path::new("/")
}

/// The value of `--flag DIR` or `--flag=DIR` in `args`, the only option.
fn dir_option(args: &[String], flag: &str) -> Result<Option<PathBuf>, String> {
    let mut found = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let value = match arg.strip_prefix(flag) {
            Some("") => args.next().cloned(),
            Some(inline) if inline.starts_with('=') => Some(inline[1..].to_string()),
            _ => return Err(format!("unknown argument {arg:?}; {USAGE}")),
        };
        match value.filter(|value| !value.is_empty()) {
            Some(value) => found = Some(PathBuf::from(value)),
            None => return Err(format!("{flag} needs a directory")),
        }
    }
    Ok(found)
}

/// `holo session new`: creates the session and prints the line that puts
/// a shell in it.
fn new(args: &[String]) -> Result<(), String> {
    let root = root();
    let dir = match dir_option(args, "--directory")? {
        Some(dir) => {
            create_given(&root, &dir)?;
            dir
        }
        None => create_below(&root)?,
    };
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    println!(
        "export HOLO_SESSION={}",
        shell_quoted(&dir.to_string_lossy())
    );
    Ok(())
}

/// `--directory DIR`: created, or taken when it exists and is empty (as
/// `mktemp -d` leaves it).
fn create_given(root: &Path, dir: &Path) -> Result<(), String> {
    let fail = |why: String| format!("--directory {}: {why}", dir.display());
    match std::fs::read_dir(dir).map(|mut entries| entries.next().is_none()) {
        Ok(true) => {}
        Ok(false) => {
            return Err(fail(
                "is not empty; give a new or an empty directory".into(),
            ));
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => std::fs::DirBuilder::new()
            .mode(0o700)
            .create(dir)
            .map_err(|err| fail(format!("cannot create it: {err}")))?,
        Err(err) => return Err(fail(err.to_string())),
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .map_err(|err| fail(format!("cannot make it private: {err}")))?;
    if test_mode(root) && !inside(root, dir) {
        return Err(fail(format!(
            "is outside the root {}; in test mode a session is kept inside the root",
            root.display()
        )));
    }
    Ok(())
}

/// A new directory below `ROOT/run/holo/sessions/`.
fn create_below(root: &Path) -> Result<PathBuf, String> {
    let parent = root.join(SESSIONS_DIR);
    crate::in_root::create_dir_all(&root.to_string_lossy(), &crate::paths::display(&parent))
        .map_err(|err| format!("cannot create {}: {err}", parent.display()))?;
    let parent = crate::in_root::real_entry(&root.to_string_lossy(), &parent)
        .map_err(|err| format!("cannot find {}: {err}", parent.display()))?;
    let dir = tempfile::Builder::new()
        .prefix("session.")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir_in(&parent)
        .map_err(|err| format!("cannot create a session in {}: {err}", parent.display()))?;
    Ok(dir.keep())
}

fn inside(root: &Path, dir: &Path) -> bool {
    match (root.canonicalize(), dir.canonicalize()) {
        (Ok(root), Ok(dir)) => dir.starts_with(root),
        _ => false,
    }
}

/// `text` as one word of a POSIX shell.
fn shell_quoted(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:@%,".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// `holo session report`: the session as the run report of `holo apply`.
fn report(args: &[String]) -> Result<(), String> {
    let remove = args.iter().any(|arg| arg == "--remove");
    let rest: Vec<String> = args
        .iter()
        .filter(|arg| *arg != "--remove")
        .cloned()
        .collect();
    let dir = match dir_option(&rest, "--session")? {
        Some(dir) => dir,
        None => ENV_VARS
            .iter()
            .find_map(|name| std::env::var_os(name).filter(|value| !value.is_empty()))
            .map(PathBuf::from)
            .ok_or(
                "no session: give --session DIR or set HOLO_SESSION, as holo session new prints it",
            )?,
    };
    let fail = |why: String| format!("session {}: {why}", dir.display());
    let locked = holo_session::Locked::open(&dir).map_err(fail)?;
    let session = locked.session();
    print!("{}", run_report(session).map_err(fail)?.to_json());
    if remove {
        locked.remove().map_err(fail)?;
    }
    Ok(())
}

/// The session's records as a run: each record an entity, in the order
/// the one-offs ran; the exit code the one-offs' results give together.
fn run_report(session: &Session) -> Result<RunReport, String> {
    let at = |millis: u64| SystemTime::UNIX_EPOCH + Duration::from_millis(millis);
    let mut entities = Vec::new();
    for record in &session.records {
        let outcome = match record.result.as_str() {
            "changed" => Outcome::Changed,
            "unchanged" => Outcome::Unchanged,
            "failed" => Outcome::Failed,
            "skipped" => Outcome::Skipped,
            "needs_force" => Outcome::NeedsForce,
            "interrupted" => Outcome::Interrupted,
            other => return Err(format!("{}: unknown result {other:?}", record.id)),
        };
        entities.push(EntityResult {
            id: record.id.clone(),
            plugin: record.plugin.clone(),
            outcome,
            duration: Duration::from_millis(record.duration_ms),
            // A session's records keep results, not the checks behind them.
            checks: Vec::new(),
        });
    }
    let start = session
        .records
        .iter()
        .map(|r| r.start_ms)
        .min()
        .unwrap_or(0);
    let end = session
        .records
        .iter()
        .map(|r| r.start_ms.saturating_add(r.duration_ms))
        .max()
        .unwrap_or(0);
    let outcomes: Vec<Outcome> = entities.iter().map(|e| e.outcome).collect();
    Ok(RunReport {
        mode: "session",
        start: at(start),
        end: at(end),
        exit_code: apply::exit_code(Mode::Apply, &outcomes),
        entities,
    })
}
