//! Running one fixture case: preparing `target/`, running the driver the way
//! Holo's holo-test script does, and comparing what came out with the
//! `expected-*` files.

use std::ffi::OsString;
use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::symlink;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::dump;
use crate::http;
use crate::placeholders::{self, Placeholders};

/// The operations of one case, in the order they run. The name doubles as
/// the suffix of the `expected-*` file.
const OPERATIONS: [(&str, &[&str]); 4] = [
    ("scan-output", &["scan"]),
    ("diff-output", &["diff"]),
    ("apply-output", &["apply"]),
    ("apply-force-output", &["apply", "--force"]),
];

/// Plugin-level variables that the driver sets; inherited values would only
/// make a run depend on the caller's shell.
const SCRUBBED_VARIABLES: [&str; 8] = [
    "HOLO_API_VERSION",
    "HOLO_CACHE_DIR",
    "HOLO_RESOURCE_DIR",
    "HOLO_STATE_DIR",
    "HOLO_RESOURCE_ORIGIN",
    "HOLO_EXTENSIONS",
    "HOLO_REFRESH",
    "HOLO_RESOURCE_ROOT",
];

/// The optional file of command lines that run after the driver.
const COMMANDS: &str = "commands";
/// What they print, as the suffix of the `expected-*` file.
const COMMANDS_OUTPUT: &str = "commands-output";
/// The optional directory that holo-test serves over HTTP.
const HTTP_ROOT: &str = "http-root";
/// What is kept of one run's output; the rest is counted, not stored.
const MAX_OUTPUT: u64 = 8 << 20;

/// Why a run gave no output to compare.
#[derive(Debug)]
enum Failure {
    /// The program could not be started.
    Spawn(io::Error),
    /// It ran, but timed out or could not be read.
    Run(String),
}

impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure::Run(message)
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Spawn(err) => write!(f, "{err}"),
            Failure::Run(message) => f.write_str(message),
        }
    }
}

/// How cases are run; shared by all cases of one invocation.
pub struct Runner {
    /// The driver command line, as in `$HOLO_BINARY` (split at whitespace).
    pub driver: String,
    /// Where plugin binaries are looked up, first match wins.
    pub plugin_dirs: Vec<PathBuf>,
    /// Rewrite the `expected-*` files instead of comparing.
    pub update: bool,
    /// Upper bound for one driver run.
    pub timeout: Duration,
}

/// What became of one case.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    Updated,
    Failed,
}

impl Runner {
    /// The driver's output of each operation, in order (`--force` only
    /// when apply asked for it); the error says which failed to run.
    fn run_operations(
        &self,
        case_dir: &Path,
        restore: &dyn Fn(Vec<u8>) -> Vec<u8>,
    ) -> Result<Vec<(&'static str, Vec<u8>)>, String> {
        let mut actual: Vec<(&str, Vec<u8>)> = Vec::new();
        for (name, args) in OPERATIONS {
            if name == "apply-force-output" {
                // only when apply said that something needs --force (as Holo)
                let apply_output = actual
                    .iter()
                    .find(|(name, _)| *name == "apply-output")
                    .map(|(_, output)| output.as_slice())
                    .unwrap_or_default();
                if !contains(apply_output, b"--force") {
                    continue;
                }
            }
            match self.run_driver(case_dir, args) {
                Ok(output) => actual.push((name, restore(normalize_output(&output)))),
                Err(message) => {
                    return Err(format!(
                        "{}: cannot run `{} {}`: {}",
                        case_dir.display(),
                        self.driver,
                        args.join(" "),
                        message
                    ));
                }
            }
        }
        Ok(actual)
    }

    /// Runs the case in `case_dir`, reporting on `report`.
    pub fn run(&self, case_dir: &Path, report: &mut dyn Write) -> io::Result<Outcome> {
        let Some(_lock) = lock_case(case_dir, report)? else {
            return Ok(Outcome::Failed);
        };
        if self.update && is_known_failure(case_dir) {
            writeln!(
                report,
                ">> not updating {}: KNOWN_FAILURES lists it, so its expectations are written by hand",
                case_dir.display()
            )?;
            return Ok(Outcome::Updated);
        }
        // the server lives until the case's commands have run
        let (server, served) = match start_http(case_dir) {
            Ok(Some((server, served))) => (Some(server), Some(served)),
            Ok(None) => (None, None),
            Err(message) => {
                writeln!(report, "!! {message}")?;
                return Ok(Outcome::Failed);
            }
        };
        let placeholders = Placeholders::new(
            root_paths(case_dir),
            server
                .as_ref()
                .zip(served.as_ref())
                .map(|(server, served)| (server.url(), served)),
        );
        let placeholders = &placeholders;
        let restore = |output: Vec<u8>| placeholders.restore(&output);
        let started = unix_seconds();
        let target = case_dir.join("target");
        if let Err(message) = self.prepare(case_dir, &target, placeholders) {
            writeln!(report, "!! {message}")?;
            return Ok(Outcome::Failed);
        }

        let mut actual = match self.run_operations(case_dir, &restore) {
            Ok(actual) => actual,
            Err(message) => {
                writeln!(report, "!! {message}")?;
                return Ok(Outcome::Failed);
            }
        };
        if case_dir.join(COMMANDS).exists() {
            match self.run_commands(case_dir, placeholders) {
                Ok(output) => actual.push((COMMANDS_OUTPUT, restore(output))),
                Err(message) => {
                    writeln!(report, "!! {message}")?;
                    return Ok(Outcome::Failed);
                }
            }
        }
        drop(server);
        // The whole tree but the plugins: in test mode holo writes no run
        // report into the root unless asked, so a leaked report shows here.
        match dump::dump(&target, &[Path::new("usr/lib/holo")]) {
            Ok(tree) => actual.insert(0, ("tree", restore(tree))),
            Err(err) => {
                writeln!(
                    report,
                    "!! {}: cannot dump the resulting tree: {}",
                    target.display(),
                    err
                )?;
                return Ok(Outcome::Failed);
            }
        }

        // a second of slack on either side: the clock ticks between reads
        let run_window = started - 1..=unix_seconds() + 1;
        for (_, output) in &mut actual {
            *output = placeholders::restore_times(output, &run_window);
        }

        let outcome = if self.update {
            self.update_expectations(case_dir, &actual, report)?
        } else {
            compare_with_expectations(case_dir, &actual, report)?
        };
        if outcome != Outcome::Failed {
            remove_tree(&target).map_err(|err| {
                io::Error::new(
                    err.kind(),
                    format!("cannot remove {}: {}", target.display(), err),
                )
            })?;
        } else {
            writeln!(
                report,
                ">> The run is kept in {} for inspection.",
                target.display()
            )?;
        }
        Ok(outcome)
    }

    /// Builds `target/` from `source-tree` and the plugins that holorc names.
    fn prepare(
        &self,
        case_dir: &Path,
        target: &Path,
        placeholders: &Placeholders,
    ) -> Result<(), String> {
        let source = case_dir.join("source-tree");
        remove_tree(target)
            .map_err(|err| format!("cannot remove the old {}: {}", target.display(), err))?;
        fs::create_dir_all(target)
            .map_err(|err| format!("cannot create {}: {}", target.display(), err))?;
        match fs::metadata(&source) {
            Ok(metadata) if metadata.is_dir() => copy_tree(&source, target).map_err(|err| {
                format!(
                    "cannot copy {} to {}: {}",
                    source.display(),
                    target.display(),
                    err
                )
            })?,
            Ok(_) => {
                let text = fs::read(&source)
                    .map_err(|err| format!("cannot read {}: {}", source.display(), err))?;
                dump::materialize(&text, target, &source)?;
            }
            Err(err) => {
                return Err(format!(
                    "cannot read {}: {} (every case needs a source-tree dump or directory; see holo-test(7))",
                    source.display(),
                    err
                ));
            }
        }

        fill_placeholders(target, placeholders)?;
        for directory in ["run", "tmp"] {
            let path = target.join(directory);
            fs::create_dir_all(&path)
                .map_err(|err| format!("cannot create {}: {}", path.display(), err))?;
        }
        for plugin in holorc_plugins(target) {
            if !is_plain_name(&plugin.id) {
                continue; // the driver reports the bad ID; nothing to prepare
            }
            let resources = target.join("usr/share/holo").join(&plugin.id);
            fs::create_dir_all(&resources)
                .map_err(|err| format!("cannot create {}: {}", resources.display(), err))?;
            if !plugin.has_explicit_binary {
                self.link_plugin(target, &plugin.id)?;
            }
        }
        Ok(())
    }

    /// Links `holo-ID` from the first plugin directory that has it. A plugin
    /// that is nowhere stays missing, which the driver reports.
    fn link_plugin(&self, target: &Path, id: &str) -> Result<(), String> {
        let binary_name = format!("holo-{id}");
        let link = target.join("usr/lib/holo").join(&binary_name);
        if fs::symlink_metadata(&link).is_ok() {
            return Ok(()); // the source tree brings its own
        }
        let Some(binary) = self
            .plugin_dirs
            .iter()
            .map(|dir| dir.join(&binary_name))
            .find(|path| path.is_file())
        else {
            return Ok(());
        };
        let binary = fs::canonicalize(&binary)
            .map_err(|err| format!("cannot resolve {}: {}", binary.display(), err))?;
        if let Some(parent) = link.parent() {
            fs::create_dir_all(parent)
                .map_err(|err| format!("cannot create {}: {}", parent.display(), err))?;
        }
        symlink(&binary, &link).map_err(|err| {
            format!(
                "cannot link {} to {}: {}",
                link.display(),
                binary.display(),
                err
            )
        })
    }

    /// Runs `{ $HOLO_BINARY ARGS 2>&1; echo exit status $?; }` in the case
    /// directory. With an `env.sh`, sh sources it first, so that it can set
    /// variables or wrap `$HOLO_BINARY` in a function (as in Holo's suites).
    fn run_driver(&self, case_dir: &Path, args: &[&str]) -> Result<Vec<u8>, String> {
        let with_env_sh = case_dir.join("env.sh").is_file();
        let command = if with_env_sh {
            let mut command = Command::new("sh");
            command
                .arg("-c")
                // sh's stderr is ours: env.sh's own output stays out of the
                // outputs, while the driver's stderr joins its stdout
                .arg(". ./env.sh >&2\n$HOLO_BINARY \"$@\" 2>&1")
                .arg("holo-test")
                .args(args);
            command
        } else {
            let mut words = self.driver.split_whitespace();
            let program = words
                .next()
                .ok_or("HOLO_BINARY is empty: set it to the holo driver's path")?;
            let mut command = Command::new(program);
            command.args(words).args(args);
            command
        };
        self.capture(command, case_dir, with_env_sh, "driver")
            .map_err(|failure| failure.to_string())
    }

    /// Runs `command` in the case directory with the environment of a case
    /// (see holo-test(7)) in a process group of its own, and gives its
    /// combined output (cut at `MAX_OUTPUT` bytes) and `exit status N`.
    /// With `stderr_is_ours`, the command's stderr is holo-test's (for
    /// `sh`, which joins what it runs to stdout itself).
    fn capture(
        &self,
        mut command: Command,
        case_dir: &Path,
        stderr_is_ours: bool,
        what: &str,
    ) -> Result<Vec<u8>, Failure> {
        for variable in SCRUBBED_VARIABLES {
            command.env_remove(variable);
        }
        let (reader, writer) = io::pipe().map_err(|err| format!("cannot create a pipe: {err}"))?;
        // every copy of the write end must be gone after the spawn, or the
        // reader never sees the end of the output
        let stderr = if stderr_is_ours {
            Stdio::inherit()
        } else {
            Stdio::from(
                writer
                    .try_clone()
                    .map_err(|err| format!("cannot duplicate a pipe: {err}"))?,
            )
        };
        command
            .current_dir(case_dir)
            .env("HOLO_BINARY", &self.driver)
            .env("HOLO_ROOT_DIR", "./target/")
            .env("TMPDIR", "./target/tmp")
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(stderr)
            // a group of its own, so that a timeout kills the plugins as well
            .process_group(0);
        let mut child = command.spawn().map_err(Failure::Spawn)?;
        drop(command); // closes our copies of the pipe's write end

        let (sender, receiver) = std::sync::mpsc::channel();
        thread::spawn(move || {
            // the receiver is gone only when we gave up on this run
            let _ = sender.send(read_bounded(reader));
        });
        let group = nix::unistd::Pid::from_raw(child.id() as i32);
        let kill_group = || {
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        };
        let timed_out = || {
            format!(
                "no result after {} s (set HOLO_TEST_TIMEOUT to allow more)",
                self.timeout.as_secs()
            )
        };
        let started = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if started.elapsed() > self.timeout => {
                    kill_group();
                    let _ = child.wait();
                    return Err(timed_out().into());
                }
                Ok(None) => thread::sleep(Duration::from_millis(5)),
                Err(err) => return Err(err.to_string().into()),
            }
        };
        // a process that the driver left behind may still hold the output open
        let remaining = self.timeout.saturating_sub(started.elapsed());
        let mut output = match receiver.recv_timeout(remaining) {
            Ok(result) => result.map_err(|err| format!("cannot read the output: {err}"))?,
            Err(_) => {
                kill_group();
                return Err(format!(
                    "{}: the {what} exited, but a process it started kept the output open",
                    timed_out()
                )
                .into());
            }
        };
        // the shell's `$?`: a signal shows as 128 + its number
        let code = status
            .code()
            .or_else(|| status.signal().map(|signal| 128 + signal))
            .unwrap_or(255);
        output.extend_from_slice(format!("exit status {code}\n").as_bytes());
        Ok(output)
    }

    /// Runs each line of the case's `commands` (split as a shell would,
    /// run without one) and records `$ LINE`, the combined output and the
    /// exit status of each. A program that is not found is recorded as
    /// the shell would, with exit status 127.
    fn run_commands(
        &self,
        case_dir: &Path,
        placeholders: &Placeholders,
    ) -> Result<Vec<u8>, String> {
        let file = case_dir.join(COMMANDS);
        let text =
            fs::read(&file).map_err(|err| format!("cannot read {}: {}", file.display(), err))?;
        let text = String::from_utf8(text)
            .map_err(|_| format!("{}: is not UTF-8 text", file.display()))?;
        let with_env_sh = case_dir.join("env.sh").is_file();
        let search_path = self.command_path();
        let mut recorded = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at_line =
                |message: String| format!("{}:{}: {}", file.display(), index + 1, message);
            let filled = placeholders.fill(line.as_bytes()).map_err(at_line)?;
            let filled = String::from_utf8_lossy(&filled).into_owned();
            let words = shell_words::split(&filled).map_err(|err| {
                at_line(format!(
                    "{err} (a line is split as sh(1) splits words, without expansions)"
                ))
            })?;
            let Some((program, args)) = words.split_first() else {
                continue;
            };
            let mut command = if with_env_sh {
                let mut command = Command::new("sh");
                command
                    .arg("-c")
                    .arg(". ./env.sh >&2\n\"$@\" 2>&1")
                    .arg("holo-test")
                    .args(&words);
                command
            } else {
                let mut command = Command::new(program);
                command.args(args);
                command
            };
            command.env("PATH", &search_path);
            recorded.extend_from_slice(format!("$ {line}\n").as_bytes());
            match self.capture(command, case_dir, with_env_sh, "command") {
                Ok(output) => recorded.extend_from_slice(&normalize_output(&output)),
                Err(Failure::Spawn(err)) if err.kind() == io::ErrorKind::NotFound => {
                    recorded.extend_from_slice(
                        format!("holo-test: {program}: not found\nexit status 127\n").as_bytes(),
                    );
                }
                Err(failure) => return Err(at_line(format!("cannot run `{line}`: {failure}"))),
            }
        }
        Ok(recorded)
    }

    /// `PATH` for the commands: the plugin directories first, so that
    /// `holo-ID` is the plugin under test, then the driver's directory,
    /// then the caller's `PATH`.
    fn command_path(&self) -> OsString {
        let mut dirs: Vec<PathBuf> = self.plugin_dirs.clone();
        if let Some(driver_dir) = self
            .driver
            .split_whitespace()
            .next()
            .filter(|program| program.starts_with('/'))
            .and_then(|program| Path::new(program).parent())
        {
            dirs.push(driver_dir.to_path_buf());
        }
        if let Some(path) = std::env::var_os("PATH") {
            dirs.extend(std::env::split_paths(&path));
        }
        std::env::join_paths(dirs).unwrap_or_default()
    }

    fn update_expectations(
        &self,
        case_dir: &Path,
        actual: &[(&str, Vec<u8>)],
        report: &mut dyn Write,
    ) -> io::Result<Outcome> {
        for (name, output) in actual {
            let path = case_dir.join(format!("expected-{name}"));
            if fs::read(&path).ok().as_deref() != Some(output.as_slice()) {
                fs::write(&path, output).map_err(|err| {
                    io::Error::new(
                        err.kind(),
                        format!("cannot write {}: {}", path.display(), err),
                    )
                })?;
                writeln!(report, ">> updated {}", path.display())?;
            }
        }
        for name in ["apply-force-output", COMMANDS_OUTPUT] {
            let leftover = case_dir.join(format!("expected-{name}"));
            if !actual.iter().any(|(actual, _)| *actual == name) && leftover.exists() {
                fs::remove_file(&leftover)?;
                writeln!(report, ">> removed {}", leftover.display())?;
            }
        }
        Ok(Outcome::Updated)
    }
}

/// Compares every output with its `expected-*` file and shows a unified diff
/// for each deviation.
fn compare_with_expectations(
    case_dir: &Path,
    actual: &[(&str, Vec<u8>)],
    report: &mut dyn Write,
) -> io::Result<Outcome> {
    let mut outcome = Outcome::Passed;
    for (name, output) in actual {
        let path = case_dir.join(format!("expected-{name}"));
        let expected = match fs::read(&path) {
            Ok(expected) => expected,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                writeln!(
                    report,
                    "!! The {name} has no expectation: {} is missing (run holo-test --update to create it). Output follows:",
                    path.display()
                )?;
                report.write_all(&indent(output))?;
                outcome = Outcome::Failed;
                continue;
            }
            Err(err) => {
                writeln!(report, "!! cannot read {}: {}", path.display(), err)?;
                outcome = Outcome::Failed;
                continue;
            }
        };
        if expected != *output {
            writeln!(
                report,
                "!! The {name} deviates from our expectation. Diff follows:"
            )?;
            let expected = String::from_utf8_lossy(&expected);
            let output = String::from_utf8_lossy(output);
            let diff = similar::TextDiff::from_lines(expected.as_ref(), output.as_ref());
            let rendered = diff
                .unified_diff()
                .context_radius(3)
                .header(&format!("expected-{name}"), name)
                .to_string();
            report.write_all(&indent(rendered.as_bytes()))?;
            outcome = Outcome::Failed;
        }
    }
    let force = case_dir.join("expected-apply-force-output");
    if !actual.iter().any(|(name, _)| *name == "apply-force-output") && force.exists() {
        writeln!(
            report,
            "!! {} exists, but the apply output does not mention --force, so apply --force did not run (delete the file or run holo-test --update)",
            force.display()
        )?;
        outcome = Outcome::Failed;
    }
    let commands_output = case_dir.join(format!("expected-{COMMANDS_OUTPUT}"));
    if !actual.iter().any(|(name, _)| *name == COMMANDS_OUTPUT) && commands_output.exists() {
        writeln!(
            report,
            "!! {} exists, but the case has no {COMMANDS} file (delete it or run holo-test --update)",
            commands_output.display()
        )?;
        outcome = Outcome::Failed;
    }
    Ok(outcome)
}

/// Now, in seconds since the Unix epoch.
fn unix_seconds() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs() as i64)
}

/// Starts the server of the case's `http-root/`, when it has one.
fn start_http(case_dir: &Path) -> Result<Option<(http::Server, http::Served)>, String> {
    let http_root = case_dir.join(HTTP_ROOT);
    if !http_root.is_dir() {
        return Ok(None);
    }
    let served = http::collect(&http_root)?;
    let server = http::Server::start(served.clone())
        .map_err(|err| format!("cannot serve {}: {}", http_root.display(), err))?;
    Ok(Some((server, served)))
}

/// The absolute paths of the case's `target/`: as the current directory
/// gives it (what `@HOLO_TEST_ROOT@` becomes) and with links resolved (what
/// a plugin that canonicalizes the root prints).
fn root_paths(case_dir: &Path) -> Vec<String> {
    let mut roots = Vec::new();
    if let Ok(cwd) = std::env::current_dir() {
        // components() drops the `.` of a case named like ./tests/cases/x
        let given: PathBuf = cwd.join(case_dir).join("target").components().collect();
        roots.push(given.display().to_string());
    }
    if let Ok(real) = fs::canonicalize(case_dir) {
        roots.push(real.join("target").display().to_string());
    }
    roots
}

/// Replaces the placeholders in every regular file below `target`.
fn fill_placeholders(target: &Path, placeholders: &Placeholders) -> Result<(), String> {
    let entries =
        fs::read_dir(target).map_err(|err| format!("cannot read {}: {}", target.display(), err))?;
    for entry in entries {
        let path = entry
            .map_err(|err| format!("cannot read {}: {}", target.display(), err))?
            .path();
        let metadata = fs::symlink_metadata(&path)
            .map_err(|err| format!("cannot read {}: {}", path.display(), err))?;
        if metadata.is_dir() {
            fill_placeholders(&path, placeholders)?;
        } else if metadata.is_file() {
            let text = fs::read(&path)
                .map_err(|err| format!("cannot read {}: {}", path.display(), err))?;
            if !contains(&text, b"@HOLO_TEST_") {
                continue;
            }
            let filled = placeholders
                .fill(&text)
                .map_err(|message| format!("{}: {}", path.display(), message))?;
            fs::write(&path, filled)
                .map_err(|err| format!("cannot write {}: {}", path.display(), err))?;
        }
    }
    Ok(())
}

/// Reads all of `reader`, keeping the first `MAX_OUTPUT` bytes and saying
/// how many more there were.
fn read_bounded(mut reader: impl Read) -> io::Result<Vec<u8>> {
    let mut output = Vec::new();
    (&mut reader).take(MAX_OUTPUT).read_to_end(&mut output)?;
    let left_out = io::copy(&mut reader, &mut io::sink())?;
    if left_out > 0 {
        output.extend_from_slice(
            format!("\n[holo-test: {left_out} more bytes of output left out]\n").as_bytes(),
        );
    }
    Ok(output)
}

/// Whether the suite's KNOWN_FAILURES file (beside the case directory, one
/// `CASE  reason` per line) lists this case.
fn is_known_failure(case_dir: &Path) -> bool {
    let Some(name) = case_dir.file_name().and_then(|name| name.to_str()) else {
        return false;
    };
    let Some(list) = fs::canonicalize(case_dir)
        .ok()
        .and_then(|dir| dir.parent().map(|suite| suite.join("KNOWN_FAILURES")))
    else {
        return false;
    };
    fs::read_to_string(list).is_ok_and(|text| {
        text.lines()
            .filter_map(|line| line.split('#').next()?.split_whitespace().next())
            .any(|listed| listed == name)
    })
}

/// A plugin line of holorc, as far as preparing the root needs it.
struct PluginLine {
    id: String,
    has_explicit_binary: bool,
}

/// The plugin lines of `etc/holorc.d/*` and `etc/holorc` below `target`.
fn holorc_plugins(target: &Path) -> Vec<PluginLine> {
    let mut files: Vec<PathBuf> = fs::read_dir(target.join("etc/holorc.d"))
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok().map(|entry| entry.path()))
                .filter(|path| !path.is_dir())
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files.push(target.join("etc/holorc"));

    let mut plugins = Vec::new();
    for file in files {
        let Ok(text) = fs::read(&file) else { continue };
        for line in String::from_utf8_lossy(&text).lines() {
            let Some(rest) = line.trim().strip_prefix("plugin ") else {
                continue;
            };
            let (id, has_explicit_binary) = match rest.split_once('=') {
                Some((id, _)) => (id, true),
                None => (rest, false),
            };
            plugins.push(PluginLine {
                id: id.trim().to_string(),
                has_explicit_binary,
            });
        }
    }
    plugins
}

/// Whether `id` can be used as one path component below target/.
fn is_plain_name(id: &str) -> bool {
    !id.is_empty() && id != "." && id != ".." && !id.contains('/') && !id.contains('\0')
}

/// Strips ANSI escape sequences and replaces the random part of the driver's
/// cache directory, `target/tmp/holo.XXXXXX`, with nothing.
pub fn normalize_output(output: &[u8]) -> Vec<u8> {
    let mut stripped = Vec::with_capacity(output.len());
    let mut index = 0;
    while index < output.len() {
        if output[index] == 0x1b && output.get(index + 1) == Some(&b'[') {
            let mut end = index + 2;
            while end < output.len() && (output[end].is_ascii_digit() || output[end] == b';') {
                end += 1;
            }
            if end < output.len() && output[end].is_ascii_alphabetic() {
                index = end + 1;
                continue;
            }
        }
        stripped.push(output[index]);
        index += 1;
    }

    const CACHE_PREFIX: &[u8] = b"target/tmp/holo.";
    let mut result = Vec::with_capacity(stripped.len());
    let mut index = 0;
    while index < stripped.len() {
        if stripped[index..].starts_with(CACHE_PREFIX) {
            let random_start = index + CACHE_PREFIX.len();
            let random_end = stripped[random_start..]
                .iter()
                .position(|byte| !byte.is_ascii_alphanumeric() && *byte != b'_')
                .map_or(stripped.len(), |offset| random_start + offset);
            if random_end > random_start {
                result.extend_from_slice(b"target/tmp/holo");
                index = random_end;
                continue;
            }
        }
        result.push(stripped[index]);
        index += 1;
    }
    result
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

fn indent(text: &[u8]) -> Vec<u8> {
    let mut result = Vec::with_capacity(text.len() + text.len() / 8);
    for line in text.split_inclusive(|byte| *byte == b'\n') {
        result.extend_from_slice(b"    ");
        result.extend_from_slice(line);
    }
    if !result.ends_with(b"\n") {
        result.push(b'\n');
    }
    result
}

/// Removes a tree even when the plugins left read-only directories in it.
fn remove_tree(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(err),
        Ok(metadata) if !metadata.is_dir() => fs::remove_file(path),
        Ok(_) => {
            make_writable(path);
            fs::remove_dir_all(path)
        }
    }
}

fn make_writable(directory: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = fs::set_permissions(directory, fs::Permissions::from_mode(0o755));
    if let Ok(entries) = fs::read_dir(directory) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                make_writable(&entry.path());
            }
        }
    }
}

/// Copies a `source-tree` directory (an alternative to the dump file),
/// keeping modes and symlinks.
fn copy_tree(source: &Path, dest: &Path) -> io::Result<()> {
    for entry in fs::read_dir(source)? {
        let entry = entry?;
        let from = entry.path();
        let to = dest.join(entry.file_name());
        let metadata = fs::symlink_metadata(&from)?;
        if metadata.file_type().is_symlink() {
            symlink(fs::read_link(&from)?, &to)?;
        } else if metadata.is_dir() {
            fs::create_dir_all(&to)?;
            copy_tree(&from, &to)?;
            fs::set_permissions(&to, metadata.permissions())?;
        } else {
            fs::copy(&from, &to)?;
        }
    }
    Ok(())
}

/// Resolves the driver command: a relative path with a slash is made
/// absolute, because the cases run in their own directories.
pub fn resolve_driver(driver: &str, cwd: &Path) -> String {
    let mut words = driver.split_whitespace();
    let Some(program) = words.next() else {
        return String::new();
    };
    let program = if program.contains('/') && !program.starts_with('/') {
        cwd.join(program).display().to_string()
    } else {
        program.to_string()
    };
    std::iter::once(program)
        .chain(words.map(str::to_string))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `$HOLO_TEST_TIMEOUT` in seconds, 120 by default.
pub fn timeout_from(value: Option<OsString>) -> Result<Duration, String> {
    match value {
        None => Ok(Duration::from_secs(120)),
        Some(value) => value
            .to_str()
            .and_then(|text| text.trim().parse::<u64>().ok())
            .filter(|seconds| *seconds > 0)
            .map(Duration::from_secs)
            .ok_or_else(|| {
                format!(
                    "HOLO_TEST_TIMEOUT={} is not a positive number of seconds",
                    value.to_string_lossy()
                )
            }),
    }
}

/// An exclusive lock on the case directory: concurrent runs of one case
/// (two test suites at once) would share target/. `None` (reported) when
/// it cannot be had.
fn lock_case(
    case_dir: &Path,
    report: &mut dyn Write,
) -> io::Result<Option<nix::fcntl::Flock<fs::File>>> {
    match fs::File::open(case_dir)
        .map(|dir| nix::fcntl::Flock::lock(dir, nix::fcntl::FlockArg::LockExclusive))
    {
        Ok(Ok(lock)) => Ok(Some(lock)),
        Ok(Err((_, errno))) => {
            writeln!(report, "!! cannot lock {}: {}", case_dir.display(), errno)?;
            Ok(None)
        }
        Err(err) => {
            writeln!(
                report,
                "!! cannot open the case directory {}: {}",
                case_dir.display(),
                err
            )?;
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_lose_colours_and_the_random_cache_name() {
        let raw = b"\x1b[1;31m!! failed\x1b[0m\ndiff --holo target/tmp/holo.aB3x9Z/shell/a target/tmp/holo.123/b\nholo.pid target/tmp/holo.\n";
        assert_eq!(
            String::from_utf8_lossy(&normalize_output(raw)),
            "!! failed\ndiff --holo target/tmp/holo/shell/a target/tmp/holo/b\nholo.pid target/tmp/holo.\n"
        );
    }

    proptest::proptest! {
        #[test]
        fn normalizing_never_panics_or_grows(
            output in proptest::collection::vec(proptest::prop_oneof![
                proptest::strategy::Just(b"\x1b[".to_vec()),
                proptest::strategy::Just(b"target/tmp/holo.".to_vec()),
                proptest::collection::vec(proptest::num::u8::ANY, 0..8),
            ], 0..20)
        ) {
            let output = output.concat();
            proptest::prop_assert!(normalize_output(&output).len() <= output.len());
        }
    }

    #[test]
    fn holorc_plugin_lines_are_found_in_snippets_and_holorc() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::create_dir_all(dir.path().join("etc/holorc.d")).expect("mkdir");
        fs::write(dir.path().join("etc/holorc.d/20-b"), "plugin b=/bin/b\n").expect("write");
        fs::write(dir.path().join("etc/holorc.d/10-a"), "# c\n  plugin a  \n").expect("write");
        fs::write(dir.path().join("etc/holorc"), "plugin c\nnonsense\n").expect("write");
        let found: Vec<_> = holorc_plugins(dir.path())
            .into_iter()
            .map(|plugin| (plugin.id, plugin.has_explicit_binary))
            .collect();
        assert_eq!(
            found,
            [
                ("a".to_string(), false),
                ("b".to_string(), true),
                ("c".to_string(), false)
            ]
        );
    }

    #[test]
    fn relative_driver_paths_become_absolute() {
        let cwd = Path::new("/work");
        assert_eq!(
            resolve_driver("target/debug/holo", cwd),
            "/work/target/debug/holo"
        );
        assert_eq!(resolve_driver("holo --x", cwd), "holo --x");
        assert_eq!(resolve_driver("/usr/bin/holo", cwd), "/usr/bin/holo");
    }

    /// A stand-in for holo: prints its arguments and the root, leaves a
    /// marker in the root on apply, and asks for --force until it gets it.
    const FAKE_DRIVER: &str = r#"#!/bin/sh
echo "ran: $* (root $HOLO_ROOT_DIR)"
echo "to stderr" >&2
if [ "$1" = apply ]; then
    echo "applied: $*" > target/etc/marker
    [ "${2:-}" = --force ] || { echo "needs --force"; exit 1; }
fi
"#;

    fn fake_case() -> (tempfile::TempDir, Runner) {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let driver = dir.path().join("fake-holo");
        fs::write(&driver, FAKE_DRIVER).expect("write driver");
        fs::set_permissions(&driver, fs::Permissions::from_mode(0o755)).expect("chmod");
        let case = dir.path().join("case");
        fs::create_dir(&case).expect("mkdir");
        fs::write(
            case.join("source-tree"),
            "file      0644 ./etc/holorc\nplugin none=/bin/false\n----------------------------------------\n",
        )
        .expect("write source-tree");
        let runner = Runner {
            driver: driver.display().to_string(),
            plugin_dirs: Vec::new(),
            update: true,
            timeout: Duration::from_secs(30),
        };
        (dir, runner)
    }

    #[test]
    fn update_then_compare_then_detect_a_deviation() {
        let (dir, mut runner) = fake_case();
        let case = dir.path().join("case");
        let mut report = Vec::new();
        assert_eq!(
            runner.run(&case, &mut report).expect("run"),
            Outcome::Updated
        );
        assert_eq!(
            fs::read_to_string(case.join("expected-apply-output")).expect("written"),
            "ran: apply (root ./target/)\nto stderr\nneeds --force\nexit status 1\n"
        );
        assert_eq!(
            fs::read_to_string(case.join("expected-apply-force-output")).expect("written"),
            "ran: apply --force (root ./target/)\nto stderr\nexit status 0\n"
        );
        assert!(
            fs::read_to_string(case.join("expected-tree"))
                .expect("written")
                .contains("file      0644 ./etc/marker\napplied: apply --force\n")
        );
        assert!(
            !case.join("target").exists(),
            "target/ is removed after success"
        );

        runner.update = false;
        let mut report = Vec::new();
        assert_eq!(
            runner.run(&case, &mut report).expect("run"),
            Outcome::Passed
        );

        fs::write(case.join("expected-scan-output"), "something else\n").expect("write");
        let mut report = Vec::new();
        assert_eq!(
            runner.run(&case, &mut report).expect("run"),
            Outcome::Failed
        );
        let report = String::from_utf8_lossy(&report);
        assert!(report.contains("!! The scan-output deviates from our expectation. Diff follows:"));
        assert!(report.contains("    -something else\n    +ran: scan (root ./target/)\n"));
        assert!(case.join("target").is_dir(), "a failed run is kept");
    }

    #[test]
    fn env_sh_can_wrap_the_driver() {
        let (dir, mut runner) = fake_case();
        let case = dir.path().join("case");
        fs::write(
            case.join("env.sh"),
            "echo 'env.sh output stays out'\nwrapped() { $REAL \"$@\" extra; }\nREAL=$HOLO_BINARY\nHOLO_BINARY=wrapped\n",
        )
        .expect("write env.sh");
        let mut report = Vec::new();
        runner.run(&case, &mut report).expect("run");
        assert_eq!(
            fs::read_to_string(case.join("expected-diff-output")).expect("written"),
            "ran: diff extra (root ./target/)\nto stderr\nexit status 0\n"
        );
        runner.update = false;
        assert_eq!(
            runner.run(&case, &mut Vec::new()).expect("run"),
            Outcome::Passed
        );
    }

    #[test]
    fn update_leaves_known_failures_alone() {
        let (dir, runner) = fake_case();
        let case = dir.path().join("case");
        fs::write(
            dir.path().join("KNOWN_FAILURES"),
            "# hand-written\ncase  reason\n",
        )
        .expect("write list");
        fs::write(case.join("expected-scan-output"), "by hand\n").expect("write");
        let mut report = Vec::new();
        assert_eq!(
            runner.run(&case, &mut report).expect("run"),
            Outcome::Updated
        );
        assert_eq!(
            fs::read_to_string(case.join("expected-scan-output")).expect("read"),
            "by hand\n"
        );
        assert!(String::from_utf8_lossy(&report).contains("not updating"));
    }

    #[test]
    fn a_missing_source_tree_fails_the_case_with_a_hint() {
        let (dir, runner) = fake_case();
        let case = dir.path().join("case");
        fs::remove_file(case.join("source-tree")).expect("rm");
        let mut report = Vec::new();
        assert_eq!(
            runner.run(&case, &mut report).expect("run"),
            Outcome::Failed
        );
        assert!(String::from_utf8_lossy(&report).contains("every case needs a source-tree"));
    }

    #[test]
    fn plugins_are_linked_and_left_out_of_the_tree() {
        use std::os::unix::fs::PermissionsExt;
        let (dir, mut runner) = fake_case();
        let case = dir.path().join("case");
        let plugins = dir.path().join("plugins");
        fs::create_dir(&plugins).expect("mkdir");
        fs::write(plugins.join("holo-x"), "#!/bin/sh\n").expect("write plugin");
        fs::set_permissions(plugins.join("holo-x"), fs::Permissions::from_mode(0o755))
            .expect("chmod");
        runner.plugin_dirs = vec![dir.path().join("nowhere"), plugins.clone()];
        fs::write(
            case.join("source-tree"),
            "file      0644 ./etc/holorc\nplugin x\nplugin missing\n----------------------------------------\n",
        )
        .expect("write source-tree");
        fs::write(
            dir.path().join("fake-holo"),
            "#!/bin/sh\nls target/usr/lib/holo\nreadlink target/usr/lib/holo/holo-x\n",
        )
        .expect("write driver");
        runner.run(&case, &mut Vec::new()).expect("run");
        let scan = fs::read_to_string(case.join("expected-scan-output")).expect("written");
        let linked = fs::canonicalize(plugins.join("holo-x")).expect("canonical");
        assert_eq!(
            scan,
            format!("holo-x\n{}\nexit status 0\n", linked.display())
        );
        assert_eq!(
            fs::read_to_string(case.join("expected-tree")).expect("written"),
            "file      0644 ./etc/holorc\nplugin x\nplugin missing\n----------------------------------------\n\
             directory 0755 ./run/\n----------------------------------------\n\
             directory 0755 ./tmp/\n----------------------------------------\n\
             directory 0755 ./usr/share/holo/missing/\n----------------------------------------\n\
             directory 0755 ./usr/share/holo/x/\n----------------------------------------\n"
        );
    }

    #[test]
    fn a_source_tree_directory_is_copied_with_modes_and_links() {
        use std::os::unix::fs::PermissionsExt;
        let (dir, runner) = fake_case();
        let case = dir.path().join("case");
        let source = case.join("source-tree");
        fs::remove_file(&source).expect("rm");
        fs::create_dir_all(source.join("etc/private")).expect("mkdir");
        fs::set_permissions(
            source.join("etc/private"),
            fs::Permissions::from_mode(0o700),
        )
        .expect("chmod");
        fs::write(source.join("etc/holorc"), "plugin none=/bin/false\n").expect("write");
        symlink("holorc", source.join("etc/link")).expect("symlink");
        runner.run(&case, &mut Vec::new()).expect("run");
        let tree = fs::read_to_string(case.join("expected-tree")).expect("written");
        assert!(
            tree.contains("symlink   0777 ./etc/link\nholorc\n"),
            "{tree}"
        );
        assert!(tree.contains("directory 0700 ./etc/private/\n"), "{tree}");
    }

    #[test]
    fn a_process_left_behind_cannot_hang_the_run() {
        let (dir, mut runner) = fake_case();
        let case = dir.path().join("case");
        fs::write(
            dir.path().join("fake-holo"),
            "#!/bin/sh\nsleep 30 &\necho started\n",
        )
        .expect("write driver");
        runner.timeout = Duration::from_secs(1);
        let started = Instant::now();
        let mut report = Vec::new();
        assert_eq!(
            runner.run(&case, &mut report).expect("run"),
            Outcome::Failed
        );
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(
            String::from_utf8_lossy(&report).contains("kept the output open"),
            "{}",
            String::from_utf8_lossy(&report)
        );
    }

    #[test]
    fn commands_run_after_the_driver_with_the_plugins_on_path() {
        use std::os::unix::fs::PermissionsExt;
        let (dir, mut runner) = fake_case();
        let case = dir.path().join("case");
        let plugins = dir.path().join("plugins");
        fs::create_dir(&plugins).expect("mkdir");
        fs::write(
            plugins.join("holo-x"),
            "#!/bin/sh\nprintf '%s|' \"$@\"; echo \" root=$HOLO_ROOT_DIR\"\necho oops >&2\necho ensured > target/etc/ensured\nexit 3\n",
        )
        .expect("write plugin");
        fs::set_permissions(plugins.join("holo-x"), fs::Permissions::from_mode(0o755))
            .expect("chmod");
        runner.plugin_dirs = vec![plugins];
        fs::write(
            case.join("commands"),
            "# a comment\n\nholo-x ensure /etc/motd --content 'hello world' \"a\\\"b\"\nno-such-program --flag\n",
        )
        .expect("write commands");
        runner.run(&case, &mut Vec::new()).expect("run");
        assert_eq!(
            fs::read_to_string(case.join("expected-commands-output")).expect("written"),
            "$ holo-x ensure /etc/motd --content 'hello world' \"a\\\"b\"\n\
             ensure|/etc/motd|--content|hello world|a\"b| root=./target/\noops\nexit status 3\n\
             $ no-such-program --flag\nholo-test: no-such-program: not found\nexit status 127\n"
        );
        // the tree is dumped after the commands
        assert!(
            fs::read_to_string(case.join("expected-tree"))
                .expect("written")
                .contains("./etc/ensured\nensured\n")
        );

        runner.update = false;
        assert_eq!(
            runner.run(&case, &mut Vec::new()).expect("run"),
            Outcome::Passed
        );
        fs::write(case.join("commands"), "holo-x 'unclosed\n").expect("write commands");
        let mut report = Vec::new();
        assert_eq!(
            runner.run(&case, &mut report).expect("run"),
            Outcome::Failed
        );
        assert!(
            String::from_utf8_lossy(&report).contains("commands:1: "),
            "{}",
            String::from_utf8_lossy(&report)
        );

        // an expectation for commands that are gone fails, and --update
        // removes it
        fs::remove_file(case.join("commands")).expect("rm");
        let mut report = Vec::new();
        assert_eq!(
            runner.run(&case, &mut report).expect("run"),
            Outcome::Failed
        );
        assert!(String::from_utf8_lossy(&report).contains("has no commands file"));
        runner.update = true;
        runner.run(&case, &mut Vec::new()).expect("run");
        assert!(!case.join("expected-commands-output").exists());
    }

    #[test]
    fn commands_see_env_sh_and_find_the_driver_on_path() {
        let (dir, runner) = fake_case();
        let case = dir.path().join("case");
        fs::write(case.join("env.sh"), "export GREETING=hello\n").expect("write env.sh");
        fs::write(
            case.join("commands"),
            "sh -c 'echo $GREETING'\nfake-holo status\n",
        )
        .expect("write commands");
        runner.run(&case, &mut Vec::new()).expect("run");
        assert_eq!(
            fs::read_to_string(case.join("expected-commands-output")).expect("written"),
            "$ sh -c 'echo $GREETING'\nhello\nexit status 0\n\
             $ fake-holo status\nran: status (root ./target/)\nto stderr\nexit status 0\n"
        );
    }

    #[test]
    fn http_root_is_served_and_its_address_kept_out_of_the_expectations() {
        test_support::require_tools(&["curl"], "curl");
        let (dir, runner) = fake_case();
        let case = dir.path().join("case");
        fs::create_dir_all(case.join("http-root/site.tar.gz.d")).expect("mkdir");
        fs::write(case.join("http-root/site.tar.gz.d/index.html"), "hi\n").expect("write");
        fs::write(case.join("http-root/hello.txt"), "hello over http\n").expect("write");
        fs::write(
            case.join("source-tree"),
            "file      0644 ./etc/holorc\nplugin none=/bin/false\n----------------------------------------\n\
             file      0644 ./etc/url\n@HOLO_TEST_HTTP@/hello.txt @HOLO_TEST_SHA256:site.tar.gz@\n----------------------------------------\n",
        )
        .expect("write source-tree");
        // the fake driver fetches the URL that the prepared tree holds
        fs::write(
            dir.path().join("fake-holo"),
            "#!/bin/sh\nset -- $(cat target/etc/url)\necho \"$1\"\ncase $1 in @*) exit 9;; esac\n\
             curl -sS \"$1\"\n\
             [ ${#2} = 64 ] && echo \"sha $2\"\n",
        )
        .expect("write driver");
        fs::write(case.join("commands"), "cat target/etc/url\n").expect("write commands");
        let mut report = Vec::new();
        runner.run(&case, &mut report).expect("run");
        let scan = fs::read_to_string(case.join("expected-scan-output")).expect("written");
        assert_eq!(
            scan,
            "@HOLO_TEST_HTTP@/hello.txt\nhello over http\nsha @HOLO_TEST_SHA256:site.tar.gz@\nexit status 0\n",
            "{}",
            String::from_utf8_lossy(&report)
        );
        assert_eq!(
            fs::read_to_string(case.join("expected-commands-output")).expect("written"),
            "$ cat target/etc/url\n@HOLO_TEST_HTTP@/hello.txt @HOLO_TEST_SHA256:site.tar.gz@\nexit status 0\n"
        );
        assert!(
            fs::read_to_string(case.join("expected-tree"))
                .expect("written")
                .contains("./etc/url\n@HOLO_TEST_HTTP@/hello.txt @HOLO_TEST_SHA256:site.tar.gz@\n")
        );

        fs::write(case.join("commands"), "echo @HOLO_TEST_SHA256:nothing@\n").expect("write");
        let mut report = Vec::new();
        assert_eq!(
            runner.run(&case, &mut report).expect("run"),
            Outcome::Failed
        );
        assert!(
            String::from_utf8_lossy(&report)
                .contains("commands:1: @HOLO_TEST_SHA256:nothing@ names no file"),
            "{}",
            String::from_utf8_lossy(&report)
        );
    }

    #[test]
    fn outputs_are_cut_at_a_bound() {
        let output = read_bounded(io::repeat(b'x').take(MAX_OUTPUT + 10)).expect("read");
        assert_eq!(
            output.len() as u64,
            MAX_OUTPUT + "\n[holo-test: 10 more bytes of output left out]\n".len() as u64
        );
        assert!(output.ends_with(b"\n[holo-test: 10 more bytes of output left out]\n"));
        assert_eq!(read_bounded(&b"short"[..]).expect("read"), b"short");
    }

    #[test]
    fn timeouts_must_be_positive_seconds() {
        assert_eq!(timeout_from(None), Ok(Duration::from_secs(120)));
        assert_eq!(timeout_from(Some("5".into())), Ok(Duration::from_secs(5)));
        assert!(timeout_from(Some("0".into())).is_err());
        assert!(timeout_from(Some("soon".into())).is_err());
    }
}
