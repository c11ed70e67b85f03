//! Whether a command runs, as plain functions (CCM's decision table,
//! then the `onlyif`/`unless_command` checks), and running it: exit codes
//! against `returns`, the timeout, and `logoutput`.

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};

use holo_plugin::common::format_duration;
use holo_plugin::oneoff::EnsureResult;
use holo_plugin::process::{Command, Status, Stream};
use holo_plugin::{Env, Error, Result};

use crate::model::ExecSpec;
use crate::provider;

/// Why a command runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Run {
    /// A subscribed entity changed in this run.
    Refresh,
    /// Neither `creates` nor `refresh_only` holds it back.
    Apply,
}

/// Why a command is skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// The `creates` file exists.
    CreatesExists,
    /// `refresh_only`, and no subscribed entity changed.
    RefreshOnly,
    /// The `onlyif` command failed.
    OnlyIfFailed,
    /// The `unless_command` command succeeded.
    UnlessSucceeded,
}

/// What to do with the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Run(Run),
    Skip(Skip),
}

/// CCM's decision table, row by row: a subscribe refresh runs the
/// command even if `creates` exists; an existing `creates` file skips it;
/// `refresh_only` without a refresh skips it; otherwise it runs.
pub fn decide(refresh: bool, creates_exists: bool, refresh_only: bool) -> Decision {
    if refresh {
        Decision::Run(Run::Refresh)
    } else if creates_exists {
        Decision::Skip(Skip::CreatesExists)
    } else if refresh_only {
        Decision::Skip(Skip::RefreshOnly)
    } else {
        Decision::Run(Run::Apply)
    }
}

/// The checks after the table, for a command that would run: a failing
/// `onlyif` or a succeeding `unless_command` skips it. `None` (no such check)
/// lets it run. Both are asked lazily, `onlyif` first.
pub fn check_commands(
    onlyif_succeeds: impl FnOnce() -> Result<Option<bool>>,
    unless_succeeds: impl FnOnce() -> Result<Option<bool>>,
) -> Result<Option<Skip>> {
    Ok(if onlyif_succeeds()? == Some(false) {
        Some(Skip::OnlyIfFailed)
    } else if unless_succeeds()? == Some(true) {
        Some(Skip::UnlessSucceeded)
    } else {
        None
    })
}

/// CCM's desired-state check after a run: an existing `creates` file is
/// the desired state whatever the command's exit, so a command that fails
/// but creates it counts as successful; without one, the run's own result.
pub fn run_succeeded(ran_ok: bool, has_creates: bool, creates_exists_after: bool) -> bool {
    (has_creates && creates_exists_after) || ran_ok
}

/// Where `creates` is looked for: below the root in test mode.
pub fn creates_path(env: &Env, spec: &ExecSpec) -> Option<PathBuf> {
    spec.creates.as_ref().map(|path| env.root_join(path))
}

/// True when the `creates` file exists; in test mode symlinks on the way
/// resolve inside the root, as if it were `/`.
pub fn creates_exists(env: &Env, spec: &ExecSpec) -> bool {
    creates_path(env, spec)
        .is_some_and(|path| env.root_fs().is_ok_and(|fs| fs.metadata(&path).is_ok()))
}

/// The scan report's reason line: why the command would run or be skipped,
/// as far as scan can know (a refresh is only known during apply).
pub fn scan_reason(env: &Env, spec: &ExecSpec) -> String {
    let creates = creates_path(env, spec);
    let creates_exists = creates_exists(env, spec);
    let mut reason = match decide(false, creates_exists, spec.refresh_only) {
        Decision::Skip(skip) => {
            let why = match skip {
                Skip::CreatesExists => format!("creates {} exists", display(creates.as_deref())),
                _ => "refresh_only".to_string(),
            };
            if spec.subscribes {
                format!("{why}: runs only when a subscribed entity changes")
            } else {
                format!("skipped: {why}")
            }
        }
        Decision::Run(_) => match &creates {
            Some(path) => format!("runs: creates {} is missing", path.display()),
            None => "runs on every apply (no creates, not refresh_only)".to_string(),
        },
    };
    let checks: Vec<String> = [
        spec.onlyif
            .as_ref()
            .map(|c| format!("onlyif {c:?} succeeds")),
        spec.unless_command
            .as_ref()
            .map(|c| format!("unless_command {c:?} fails")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !checks.is_empty() {
        reason.push_str(&format!("; only if {}", checks.join(" and ")));
    }
    reason
}

fn display(path: Option<&Path>) -> String {
    path.map(|p| p.display().to_string()).unwrap_or_default()
}

/// The command for `text` with the resource's provider, directory,
/// environment, PATH and timeout. In test mode the directory defaults to
/// the root, and a declared one is taken below it, its symlinks resolved
/// inside the root.
pub fn command(env: &Env, spec: &ExecSpec, text: &str) -> Result<Command> {
    let mut command = provider::command(spec.provider, text).map_err(Error::new)?;
    match &spec.cwd {
        Some(dir) if env.test_mode => {
            let below_root = env.root_join(dir);
            let real = env.root_fs()?.real_path(&below_root).map_err(|err| {
                Error::new(format!(
                    "cannot run {text}: working directory {dir} cannot be used in the root: {err}"
                ))
            })?;
            command = command.cwd(real);
        }
        Some(dir) => command = command.cwd(dir),
        None if env.test_mode => command = command.cwd(&env.root),
        None => {}
    }
    for (key, value) in &spec.environment {
        command = command.env(key, value);
    }
    if let Some(dirs) = &spec.path {
        command = command.path(dirs);
    }
    if let Some(limit) = spec.timeout {
        command = command.timeout(limit);
    }
    Ok(command)
}

/// Runs an `onlyif`/`unless_command` check (`property`): true when it
/// exits 0. A check that could not run at all is warned about, with its
/// stderr, and counts as failing.
pub fn check_succeeds(env: &Env, spec: &ExecSpec, property: &str, text: &str) -> Result<bool> {
    let finished = command(env, spec, text)?.run()?;
    match finished.status {
        Status::TimedOut => Err(Error::new(format!(
            "check {text:?} timed out after {}; its process group was killed",
            format_duration(spec.timeout.unwrap_or_default())
        ))),
        status => {
            if let Status::Exited(code) = status
                && let Some(warning) = could_not_run(property, text, code, &finished.stderr_tail(5))
            {
                eprintln!("{warning}");
            }
            Ok(status.success())
        }
    }
}

/// The warning for a check whose exit code says it could not run: 2 (what
/// sh gives for a syntax error, and a usage error for most tools), 126 (not
/// executable) or 127 (not found). Other codes are answers.
pub fn could_not_run(property: &str, text: &str, code: i32, stderr_tail: &str) -> Option<String> {
    if !matches!(code, 2 | 126 | 127) {
        return None;
    }
    let effect = if property == "onlyif" {
        "so the command is skipped"
    } else {
        "so the command runs"
    };
    let mut warning = format!(
        ">> {property} {text:?} could not run (exit code {code}: a syntax or usage error, or not executable or not found); it counts as failing, {effect}; fix the check"
    );
    for line in stderr_tail.lines() {
        warning.push_str(&format!("\n>>     {line}"));
    }
    Some(warning)
}

/// What apply prints before a command that runs for a refresh: the scan's
/// reason line can only say when it would run, not that it does now.
pub fn refresh_reason(spec: &ExecSpec) -> String {
    match spec.subscribe.as_slice() {
        [] => "Running because a subscribed entity changed in this run".to_string(),
        subscribed => format!(
            "Running because a subscribed entity changed in this run (subscribe: {})",
            subscribed.join(", ")
        ),
    }
}

/// How many lines of stdout and of stderr an error shows.
const TAIL_LINES: usize = 10;
/// How many bytes of one output line an error shows.
const TAIL_LINE_BYTES: usize = 300;

/// The last lines of one output stream, bounded in lines and in bytes per
/// line, so that a command printing without end costs fixed memory.
#[derive(Debug, Default)]
pub struct Tail {
    lines: VecDeque<Vec<u8>>,
}

impl Tail {
    pub fn push(&mut self, line: &[u8]) {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let mut kept = line[..line.len().min(TAIL_LINE_BYTES)].to_vec();
        if line.len() > TAIL_LINE_BYTES {
            kept.extend_from_slice("…".as_bytes());
        }
        if self.lines.len() == TAIL_LINES {
            self.lines.pop_front();
        }
        self.lines.push_back(kept);
    }

    /// The kept lines, one per line, lossily decoded; empty when the
    /// stream printed nothing but blank lines.
    pub fn text(&self) -> String {
        let lines: Vec<String> = self
            .lines
            .iter()
            .map(|line| String::from_utf8_lossy(line).into_owned())
            .collect();
        let text = lines.join("\n");
        if text.trim().is_empty() {
            String::new()
        } else {
            text.trim_end().to_string()
        }
    }
}

/// Runs the command; stdout lines go to the user as they come when
/// `logoutput` is set. The command sees `HOLO_REFRESH=1` exactly when a
/// subscribed entity changed, whether the plugin runs per entity or in a
/// batch. An exit code outside `returns`, a signal or a timeout is an error
/// with the code and the last lines of stderr.
pub fn execute(env: &Env, spec: &ExecSpec, refresh: bool) -> Result<()> {
    let mut command = command(env, spec, &spec.command)?;
    command = match refresh {
        true => command.env("HOLO_REFRESH", "1"),
        false => command.env_remove("HOLO_REFRESH"),
    };
    let mut stdout = std::io::stdout();
    let (mut stdout_tail, mut stderr_tail) = (Tail::default(), Tail::default());
    let finished = command.run_streaming(|stream, line| {
        match stream {
            Stream::Stdout => stdout_tail.push(line),
            Stream::Stderr => stderr_tail.push(line),
        }
        if spec.logoutput && stream == Stream::Stdout {
            let _ = stdout.write_all(line);
            if !line.ends_with(b"\n") {
                let _ = stdout.write_all(b"\n");
            }
            let _ = stdout.flush();
        }
    })?;
    let problem = match finished.status {
        Status::Exited(code) if spec.returns.contains(&code) => return Ok(()),
        Status::Exited(code) => format!(
            "exited with code {code}, which returns ({}) does not accept",
            spec.returns
                .iter()
                .map(i32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Status::TimedOut => format!(
            "timed out after {}; its process group was killed",
            format_duration(spec.timeout.unwrap_or_default())
        ),
        status => format!("was ended by {status}"),
    };
    let mut message = format!("command {:?} {problem}", spec.command);
    let mut separator = "; ";
    for (name, tail) in [("stdout", &stdout_tail), ("stderr", &stderr_tail)] {
        // with logoutput the user has seen stdout already
        let text = match name == "stdout" && spec.logoutput {
            true => String::new(),
            false => tail.text(),
        };
        if !text.is_empty() {
            message.push_str(&format!("{separator}the last lines of its {name}:\n{text}"));
            separator = "\n";
        }
    }
    Err(Error::new(message))
}

/// The notes of `holo-exec status` on what the last `holo-exec ensure`
/// did (`at` is its time), and on the `creates` file now, one row each:
/// the command ran and succeeded, was not run, failed (with the first
/// line of the error), or was left alone; then whether `creates` exists.
pub fn status_notes(
    result: EnsureResult,
    at: &str,
    message: Option<&str>,
    creates: Option<(&str, bool)>,
) -> Vec<String> {
    let mut notes = vec![match result {
        EnsureResult::Changed => {
            format!("holo-exec ensure ran the command at {at}, and it succeeded")
        }
        EnsureResult::NotChanged => format!(
            "holo-exec ensure at {at} did not run the command (creates, refresh_only, onlyif or unless_command held it back)"
        ),
        EnsureResult::Failed => format!(
            "holo-exec ensure ran the command at {at}, and it failed: {}",
            // The first line announces the output's tail, which is not kept.
            message.map_or("no message", |message| message
                .split("; the last lines of its ")
                .next()
                .unwrap_or(message))
        ),
        EnsureResult::NeedsForce => {
            format!("holo-exec ensure at {at} left a manual change alone")
        }
    }];
    match creates {
        Some((path, true)) => notes.push(format!(
            "creates {path} exists now: ensure does not run the command again"
        )),
        Some((path, false)) => notes.push(format!(
            "creates {path} does not exist now: ensure runs the command again"
        )),
        None => {}
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    const AT: &str = "2026-01-02 03:04:05 UTC";

    #[test]
    fn status_note_ran_and_succeeded() {
        assert_eq!(
            status_notes(EnsureResult::Changed, AT, None, None),
            ["holo-exec ensure ran the command at 2026-01-02 03:04:05 UTC, and it succeeded"]
        );
    }

    #[test]
    fn status_note_not_run() {
        assert!(
            status_notes(EnsureResult::NotChanged, AT, None, None)[0]
                .contains("did not run the command")
        );
    }

    #[test]
    fn status_note_failed_gives_the_message() {
        assert!(
            status_notes(EnsureResult::Failed, AT, Some("exited with code 3"), None)[0]
                .ends_with("and it failed: exited with code 3")
        );
        assert!(
            status_notes(
                EnsureResult::Failed,
                AT,
                Some("exited with code 3; the last lines of its stdout:"),
                None
            )[0]
            .ends_with("and it failed: exited with code 3")
        );
    }

    #[test]
    fn status_note_left_alone() {
        assert!(
            status_notes(EnsureResult::NeedsForce, AT, None, None)[0]
                .ends_with("left a manual change alone")
        );
    }

    #[test]
    fn status_note_creates_exists_or_not() {
        let exists = status_notes(EnsureResult::Changed, AT, None, Some(("/m", true)));
        assert_eq!(
            exists[1],
            "creates /m exists now: ensure does not run the command again"
        );
        let missing = status_notes(EnsureResult::Changed, AT, None, Some(("/m", false)));
        assert_eq!(
            missing[1],
            "creates /m does not exist now: ensure runs the command again"
        );
    }

    #[test]
    fn a_tail_keeps_the_last_lines_each_cut_to_a_bounded_length() {
        let mut tail = Tail::default();
        for n in 0..25 {
            tail.push(format!("line {n}\n").as_bytes());
        }
        tail.push(&[b'x'; 1000]);
        let text = tail.text();
        assert_eq!(text.lines().count(), TAIL_LINES);
        assert!(text.starts_with("line 16\n"), "{text}");
        assert!(text.ends_with(&format!("{}…", "x".repeat(TAIL_LINE_BYTES))));
        assert_eq!(Tail::default().text(), "");
    }

    #[test]
    fn after_run_row_creates_exists_means_success_whatever_the_exit() {
        assert!(run_succeeded(false, true, true));
        assert!(run_succeeded(true, true, true));
    }

    #[test]
    fn after_run_row_creates_missing_means_the_exit_decides() {
        assert!(!run_succeeded(false, true, false));
        assert!(run_succeeded(true, true, false));
    }

    #[test]
    fn after_run_row_without_creates_the_exit_decides() {
        assert!(!run_succeeded(false, false, false));
        assert!(run_succeeded(true, false, false));
    }

    #[test]
    fn row_subscribe_refresh_executes_even_if_creates_exists() {
        assert_eq!(decide(true, true, false), Decision::Run(Run::Refresh));
        assert_eq!(decide(true, true, true), Decision::Run(Run::Refresh));
        assert_eq!(decide(true, false, true), Decision::Run(Run::Refresh));
    }

    #[test]
    fn row_creates_exists_skips() {
        assert_eq!(
            decide(false, true, false),
            Decision::Skip(Skip::CreatesExists)
        );
        assert_eq!(
            decide(false, true, true),
            Decision::Skip(Skip::CreatesExists)
        );
    }

    #[test]
    fn row_refresh_only_without_trigger_skips() {
        assert_eq!(
            decide(false, false, true),
            Decision::Skip(Skip::RefreshOnly)
        );
    }

    #[test]
    fn row_not_refresh_only_without_creates_executes() {
        assert_eq!(decide(false, false, false), Decision::Run(Run::Apply));
    }

    #[test]
    fn a_check_that_could_not_run_is_warned_about_with_its_stderr() {
        let warning = could_not_run("unless_command", "if then", 2, "sh: syntax error").unwrap();
        assert!(warning.starts_with(">> unless_command \"if then\" could not run (exit code 2"));
        assert!(warning.contains("so the command runs"));
        assert!(warning.ends_with("\n>>     sh: syntax error"));
        assert!(
            could_not_run("onlyif", "x", 127, "")
                .unwrap()
                .contains("so the command is skipped")
        );
        assert!(could_not_run("onlyif", "x", 126, "").is_some());
    }

    #[test]
    fn a_check_that_answered_is_not_warned_about() {
        for code in [0, 1, 3, 125, 128] {
            assert_eq!(could_not_run("onlyif", "test -f x", code, "oops"), None);
        }
    }

    #[test]
    fn check_row_failing_onlyif_skips_without_asking_unless() {
        let skip = check_commands(|| Ok(Some(false)), || panic!("unless_command is not run"));
        assert_eq!(skip, Ok(Some(Skip::OnlyIfFailed)));
    }

    #[test]
    fn check_row_succeeding_unless_command_skips() {
        let skip = Ok(Some(Skip::UnlessSucceeded));
        assert_eq!(check_commands(|| Ok(Some(true)), || Ok(Some(true))), skip);
        assert_eq!(check_commands(|| Ok(None), || Ok(Some(true))), skip);
    }

    #[test]
    fn check_row_passing_or_absent_checks_run() {
        assert_eq!(
            check_commands(|| Ok(Some(true)), || Ok(Some(false))),
            Ok(None)
        );
        assert_eq!(check_commands(|| Ok(None), || Ok(None)), Ok(None));
    }
}
