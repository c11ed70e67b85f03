//! The common properties that act around a plugin's own work, for every kind:
//! `if`/`unless` conditions, `health_checks` in CCM's Nagios style, and
//! `alias`. The resource loader parses them and resolves aliases (see
//! [`crate::resources`]); this module evaluates them at scan and apply.
//!
//! - A resource whose condition leaves it unmanaged is still reported by
//!   scan, with `skipped: condition …`, and apply (or noop) writes
//!   `not changed` without calling the plugin.
//! - Health checks run after every apply and force-apply (never in noop): a
//!   result that is not OK fails the entity with the check's output.
//! - An alias is a second name that `require` and `subscribe` may use. The
//!   SDK resolves it among the resources of the same plugin, so that the
//!   scan report's `REQUIRES:`/`SUBSCRIBES:` lines always carry entity ids.
//!   The driver knows no aliases: another plugin's resources must name the
//!   entity id.
//!
//! Scan hands these to apply through a small file beside the scan cache
//! (`$HOLO_CACHE_DIR/holo-plugin-guards.json`), which lists only the entities
//! that have a condition or a health check.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::env::Env;
use crate::error::{Error, Result};
use crate::plugin::{Mode, Outcome, Scanned};
use crate::process::{Command, Status};

const GUARDS_FILE: &str = "holo-plugin-guards.json";

/// What the SDK does around one entity's apply.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Guard {
    /// Why the conditions leave the entity unmanaged, e.g. `condition if =
    /// "facts.os.id == 'fedora'" is false`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Checks to run after apply.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub health_checks: Vec<HealthCheck>,
    /// The alias as an entity id (`type:alias`), shown in the scan report.
    #[serde(default, skip)]
    pub alias: Option<String>,
}

impl Guard {
    fn is_empty(&self) -> bool {
        self.skipped.is_none() && self.health_checks.is_empty() && self.alias.is_none()
    }
}

/// One `health_checks` entry: a Nagios-style plugin command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthCheck {
    /// The name in messages and the run report: `name`, else the base name
    /// of the command's program.
    #[serde(default)]
    pub name: String,
    /// The command as written, for messages.
    pub command: String,
    /// The command split with shell-words; it runs without a shell.
    pub argv: Vec<String>,
    /// How many times to run it before giving up (at least 1).
    pub tries: u32,
    /// How long to sleep between tries.
    pub try_sleep: Duration,
    /// Kill the check (and its process group) after this long; `None`
    /// means [`DEFAULT_HEALTH_CHECK_TIMEOUT`].
    pub timeout: Option<Duration>,
}

/// The timeout of a health check that sets none: a check that hangs must
/// not hang the run. `HOLO_HEALTH_CHECK_TIMEOUT` (a duration) changes it.
pub const DEFAULT_HEALTH_CHECK_TIMEOUT: Duration = Duration::from_secs(60);

/// [`DEFAULT_HEALTH_CHECK_TIMEOUT`], or what `HOLO_HEALTH_CHECK_TIMEOUT` says.
pub fn default_health_check_timeout() -> Duration {
    std::env::var("HOLO_HEALTH_CHECK_TIMEOUT")
        .ok()
        .and_then(|text| parse_duration(&text))
        .filter(|limit| !limit.is_zero())
        .unwrap_or(DEFAULT_HEALTH_CHECK_TIMEOUT)
}

/// A Nagios plugin's verdict, from its exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckState {
    Ok,
    Warning,
    Critical,
    Unknown,
}

impl CheckState {
    /// 0 OK, 1 WARNING, 2 CRITICAL, anything else (a signal, a timeout)
    /// UNKNOWN.
    pub fn from_status(status: Status) -> CheckState {
        match status {
            Status::Exited(0) => CheckState::Ok,
            Status::Exited(1) => CheckState::Warning,
            Status::Exited(2) => CheckState::Critical,
            _ => CheckState::Unknown,
        }
    }
}

impl fmt::Display for CheckState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CheckState::Ok => "OK",
            CheckState::Warning => "WARNING",
            CheckState::Critical => "CRITICAL",
            CheckState::Unknown => "UNKNOWN",
        })
    }
}

/// Parses a duration as CCM writes them (Go's form): a sequence of numbers
/// with units `ms`, `s`, `m` or `h`, such as `30s`, `5m` or `1m30s`.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    let mut total = Duration::ZERO;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let number: u64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let part = match &rest[..unit] {
            "ms" => Duration::from_millis(number),
            "s" => Duration::from_secs(number),
            "m" => Duration::from_secs(number.checked_mul(60)?),
            "h" => Duration::from_secs(number.checked_mul(3600)?),
            _ => return None,
        };
        total = total.checked_add(part)?;
        rest = &rest[unit..];
    }
    Some(total)
}

/// A duration for messages: `1m30s`, `500ms`.
pub fn format_duration(duration: Duration) -> String {
    let millis = duration.as_millis();
    if duration.subsec_millis() != 0 || millis == 0 {
        return format!("{millis}ms");
    }
    let mut seconds = duration.as_secs();
    let mut text = String::new();
    for (unit, size) in [("h", 3600), ("m", 60)] {
        if seconds >= size {
            text.push_str(&format!("{}{unit}", seconds / size));
            seconds %= size;
        }
    }
    if seconds > 0 || text.is_empty() {
        text.push_str(&format!("{seconds}s"));
    }
    text
}

/// The why of a skipped entity, or `None` when it is managed: `if` must be
/// true and `unless` false. `evaluate` turns one expression into a bool.
pub fn condition_skip(
    only_if: Option<&str>,
    unless: Option<&str>,
    mut evaluate: impl FnMut(&'static str, &str) -> Result<bool>,
) -> Result<Option<String>> {
    if let Some(expression) = only_if
        && !evaluate("if", expression)?
    {
        return Ok(Some(format!("condition if = {expression:?} is false")));
    }
    if let Some(expression) = unless
        && evaluate("unless", expression)?
    {
        return Ok(Some(format!("condition unless = {expression:?} is true")));
    }
    Ok(None)
}

/// The name of a check that sets none, as CCM names it: the base name of
/// its program (`check_http` for `/usr/lib/nagios/plugins/check_http -H x`).
pub fn default_check_name(argv: &[String]) -> String {
    let program = argv.first().map(String::as_str).unwrap_or_default();
    program.rsplit('/').next().unwrap_or(program).to_string()
}

/// What one health check gave: its state and, unless OK, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckResult {
    pub name: String,
    pub state: CheckState,
    /// The error message of a check that is not OK.
    pub failure: Option<String>,
}

impl HealthCheck {
    /// Runs the check and gives its result; a command that cannot start
    /// is UNKNOWN.
    pub fn check(&self, env: &Env) -> CheckResult {
        let (state, failure) = match self.run(env) {
            Ok(()) => (CheckState::Ok, None),
            Err((state, err)) => (state, Some(err.message().to_string())),
        };
        CheckResult {
            name: self.name.clone(),
            state,
            failure,
        }
    }

    /// Runs the check up to `tries` times, sleeping `try_sleep` between
    /// tries, until it reports OK. In test mode it runs in the root.
    fn run(&self, env: &Env) -> std::result::Result<(), (CheckState, Error)> {
        let mut command =
            Command::from_argv(&self.argv).map_err(|err| (CheckState::Unknown, err))?;
        if env.test_mode {
            command = command.cwd(&env.root);
        }
        let limit = self.timeout.unwrap_or_else(default_health_check_timeout);
        command = command.timeout(limit).keep_output(HEALTH_CHECK_KEEP_OUTPUT);
        let tries = self.tries.max(1);
        for attempt in 1..=tries {
            let finished = command.run().map_err(|err| (CheckState::Unknown, err))?;
            let state = CheckState::from_status(finished.status);
            if state == CheckState::Ok {
                return Ok(());
            }
            let output = quoted_output(&finished);
            let how = match finished.status {
                Status::TimedOut => format!("timed out after {}", format_duration(limit)),
                status => status.to_string(),
            };
            let verdict = if output.is_empty() {
                format!("{state} ({how})")
            } else {
                format!("{state} ({how}): {output}")
            };
            if attempt == tries {
                let times = if tries == 1 { "try" } else { "tries" };
                return Err((
                    state,
                    Error::new(format!(
                        "health check {} ({:?}) failed after {tries} {times}: {verdict}",
                        self.name, self.command
                    )),
                ));
            }
            eprintln!(
                ">> health check {} ({:?}): {verdict} (try {attempt} of {tries}, next in {})",
                self.name,
                self.command,
                format_duration(self.try_sleep)
            );
            std::thread::sleep(self.try_sleep);
        }
        Ok(())
    }
}

/// How much of a health check's stdout and stderr is kept (the end).
pub const HEALTH_CHECK_KEEP_OUTPUT: usize = 4096;
/// How many of its last lines a failed check's message quotes.
pub const HEALTH_CHECK_QUOTED_LINES: usize = 10;
/// How many bytes of them at most.
pub const HEALTH_CHECK_QUOTED_BYTES: usize = 1024;

/// The end of what a check printed, stdout else stderr, for one message
/// line: its last lines, at most [`HEALTH_CHECK_QUOTED_BYTES`], marked
/// when more came before.
fn quoted_output(finished: &crate::process::Finished) -> String {
    let mut text = String::from_utf8_lossy(&finished.stdout).trim().to_string();
    let mut cut = finished.stdout_cut;
    if text.is_empty() {
        text = String::from_utf8_lossy(&finished.stderr).trim().to_string();
        // The runner keeps only the end of stderr; a full buffer was cut.
        cut = finished.stderr.len() >= HEALTH_CHECK_KEEP_OUTPUT;
    }
    let lines: Vec<&str> = text.lines().collect();
    let kept = lines.len().min(HEALTH_CHECK_QUOTED_LINES);
    cut = cut || kept < lines.len();
    let mut tail = lines[lines.len() - kept..].join("\n");
    if tail.len() > HEALTH_CHECK_QUOTED_BYTES {
        let mut start = tail.len() - HEALTH_CHECK_QUOTED_BYTES;
        while !tail.is_char_boundary(start) {
            start += 1;
        }
        tail = tail.split_off(start);
        cut = true;
    }
    if cut && !tail.is_empty() {
        format!("(earlier output cut) {tail}")
    } else {
        tail
    }
}

/// The guards of the resources loaded in this process, by entity id.
static LOADED: Mutex<BTreeMap<String, Guard>> = Mutex::new(BTreeMap::new());

/// Guards read back from the file scan wrote, by file.
type GuardMap = Arc<BTreeMap<String, Guard>>;
static STORED: Mutex<Option<HashMap<std::ffi::OsString, GuardMap>>> = Mutex::new(None);

/// Remembers an entity's guard (called by the resource loader).
pub(crate) fn register(id: &str, guard: Guard) {
    let mut loaded = LOADED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if guard.is_empty() {
        loaded.remove(id);
    } else {
        loaded.insert(id.to_string(), guard);
    }
}

fn guards_path(env: &Env) -> PathBuf {
    env.cache_dir.join(GUARDS_FILE)
}

/// After a scan: adds `skipped:` and `alias:` lines to the report, and
/// stores the guards of the reported entities for apply.
pub(crate) fn store<S>(env: &Env, entities: &mut [Scanned<S>]) -> Result<()> {
    let loaded = LOADED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut kept = BTreeMap::new();
    for entity in entities.iter_mut() {
        let Some(guard) = loaded.get(&entity.id) else {
            continue;
        };
        if let Some(alias) = &guard.alias {
            entity.info.push(("alias".into(), alias.clone()));
        }
        if let Some(reason) = &guard.skipped {
            entity.info.push(("skipped".into(), reason.clone()));
        }
        if guard.skipped.is_some() || !guard.health_checks.is_empty() {
            kept.insert(entity.id.clone(), guard.clone());
        }
    }
    let path = guards_path(env);
    // The scan cache beside it may not be written yet: the scan writes the
    // guards first and the cache while it builds its report.
    env.root_fs()?
        .create_dir_all(&env.cache_dir)
        .map_err(|err| Error::io("create", &env.cache_dir, &err))?;
    let json = serde_json::to_string(&kept).map_err(|err| {
        Error::new(format!(
            "cannot store the conditions and health checks: {err}"
        ))
    })?;
    std::fs::write(&path, json).map_err(|err| Error::io("write", &path, &err))?;
    let mut stored = STORED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    stored
        .get_or_insert_with(HashMap::new)
        .remove(env.cache_dir.as_os_str());
    Ok(())
}

/// The guard scan stored for `id`, if any.
fn lookup(env: &Env, id: &str) -> Result<Option<Guard>> {
    let mut stored = STORED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let files = stored.get_or_insert_with(HashMap::new);
    // Keyed by the cache directory's bytes: a batch looks once per entity,
    // and hashing a `Path` walks its components.
    let key = env.cache_dir.as_os_str();
    if !files.contains_key(key) {
        let guards = read_guards(&guards_path(env))?;
        files.insert(key.to_owned(), Arc::new(guards));
    }
    Ok(files.get(key).and_then(|guards| guards.get(id).cloned()))
}

fn read_guards(path: &Path) -> Result<BTreeMap<String, Guard>> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).map_err(|err| {
            Error::new(format!(
                "{} is unreadable ({err}); run the scan again",
                path.display()
            ))
        }),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
        Err(err) => Err(Error::io("read", path, &err)),
    }
}

/// Whether the conditions leave `id` unmanaged (diff shows nothing then).
pub(crate) fn is_skipped(env: &Env, id: &str) -> Result<bool> {
    Ok(lookup(env, id)?.is_some_and(|guard| guard.skipped.is_some()))
}

/// Applies one entity with its guard: a skipped entity is `not changed`
/// without calling `apply`; after a real apply the health checks run, every
/// one of them, and the entity fails when one is not OK. With
/// `HOLO_MONITOR_ONLY`, only the checks run and `apply` is never called.
pub(crate) fn guarded_apply(
    env: &Env,
    id: &str,
    mode: Mode,
    apply: impl FnOnce() -> Result<Outcome>,
) -> (Result<Outcome>, Vec<CheckResult>) {
    let guard = match lookup(env, id) {
        Ok(guard) => guard.unwrap_or_default(),
        Err(err) => return (Err(err), Vec::new()),
    };
    if guard.skipped.is_some() {
        return (Ok(Outcome::NotChanged), Vec::new());
    }
    let outcome = if env.monitor_only {
        Outcome::NotChanged
    } else {
        match apply() {
            Ok(outcome) => outcome,
            Err(err) => return (Err(err), Vec::new()),
        }
    };
    let applied = matches!(outcome, Outcome::Changed | Outcome::NotChanged);
    let checking = env.monitor_only || (mode != Mode::Noop && applied);
    if !checking || guard.health_checks.is_empty() {
        return (Ok(outcome), Vec::new());
    }
    // The checks see what the apply wrote.
    crate::atomic::commit_staged();
    let results: Vec<CheckResult> = guard
        .health_checks
        .iter()
        .map(|check| check.check(env))
        .collect();
    let failures: Vec<&str> = results
        .iter()
        .filter_map(|result| result.failure.as_deref())
        .collect();
    if failures.is_empty() {
        (Ok(outcome), results)
    } else {
        (Err(Error::new(failures.join("\n"))), results)
    }
}

/// The FD 3 lines of check results, when the driver understands them.
pub(crate) fn check_lines(env: &Env, results: &[CheckResult]) -> Vec<String> {
    if !env.has_extension(holo_protocol::extension::MONITOR) {
        return Vec::new();
    }
    results
        .iter()
        .map(|result| {
            holo_protocol::fd3::health_check_line(&result.state.to_string(), &result.name)
        })
        .collect()
}

/// Seconds since the epoch as `YYYY-MM-DD HH:MM:SS` in UTC (the proleptic
/// Gregorian calendar, as `date -u` prints it).
pub fn utc_date(seconds: u64) -> String {
    let days = i64::try_from(seconds / 86_400).unwrap_or(i64::MAX / 2);
    let rest = seconds % 86_400;
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn durations_read_go_style_units() {
        assert_eq!(parse_duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m"), Some(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
        for bad in ["", "30", "s", "5 m", "1d", "-1s", "1.5s"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
        assert_eq!(format_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(format_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(format_duration(Duration::from_secs(3600)), "1h");
    }

    #[test]
    fn if_must_be_true_and_unless_false() {
        let truth = |_: &'static str, expression: &str| Ok(expression == "yes");
        assert_eq!(condition_skip(None, None, truth), Ok(None));
        assert_eq!(condition_skip(Some("yes"), Some("no"), truth), Ok(None));
        assert_eq!(
            condition_skip(Some("no"), None, truth),
            Ok(Some("condition if = \"no\" is false".to_string()))
        );
        assert_eq!(
            condition_skip(None, Some("yes"), truth),
            Ok(Some("condition unless = \"yes\" is true".to_string()))
        );
        let failing = |property: &'static str, _: &str| Err(Error::new(property));
        assert_eq!(
            condition_skip(None, Some("x"), failing),
            Err(Error::new("unless"))
        );
    }

    #[test]
    fn exit_codes_map_to_nagios_states() {
        assert_eq!(CheckState::from_status(Status::Exited(0)), CheckState::Ok);
        assert_eq!(
            CheckState::from_status(Status::Exited(1)),
            CheckState::Warning
        );
        assert_eq!(
            CheckState::from_status(Status::Exited(2)),
            CheckState::Critical
        );
        for other in [
            Status::Exited(3),
            Status::Exited(127),
            Status::TimedOut,
            Status::Signaled(9),
        ] {
            assert_eq!(CheckState::from_status(other), CheckState::Unknown);
        }
    }

    fn env_in(root: &Path) -> Env {
        let root = root.to_path_buf();
        Env::from_lookup("demo", |key| match key {
            "HOLO_ROOT_DIR" => Some(root.clone().into()),
            "HOLO_CACHE_DIR" => Some(root.join("cache").into()),
            _ => None,
        })
        .expect("env")
    }

    fn check(command: &str, tries: u32, try_sleep: Duration) -> HealthCheck {
        let argv = shell_words::split(command).expect("balanced");
        HealthCheck {
            name: default_check_name(&argv),
            command: command.to_string(),
            argv,
            tries,
            try_sleep,
            timeout: Some(Duration::from_secs(10)),
        }
    }

    #[test]
    fn a_failing_check_names_its_state_and_output() {
        let dir = tempfile::tempdir().expect("tempdir");
        let env = env_in(dir.path());
        let err = check("sh -c 'echo disk full; exit 2'", 1, Duration::ZERO)
            .run(&env)
            .map_err(|(_, err)| err)
            .expect_err("critical");
        assert_eq!(
            err.message(),
            "health check sh (\"sh -c 'echo disk full; exit 2'\") failed after 1 try: CRITICAL (exit code 2): disk full"
        );
        check("true", 1, Duration::ZERO)
            .run(&env)
            .map_err(|(_, err)| err)
            .expect("ok");
    }

    #[test]
    fn a_check_is_named_by_its_program_unless_named() {
        let argv = [
            "/usr/lib/nagios/plugins/check_http".to_string(),
            "-H".to_string(),
        ];
        assert_eq!(default_check_name(&argv), "check_http");
        let dir = tempfile::tempdir().expect("tempdir");
        let env = env_in(dir.path());
        let mut named = check("sh -c 'exit 1'", 1, Duration::ZERO);
        named.name = "disk".to_string();
        let result = named.check(&env);
        assert_eq!(
            (result.name.as_str(), result.state),
            ("disk", CheckState::Warning)
        );
        assert!(
            result
                .failure
                .expect("failure")
                .starts_with("health check disk (")
        );
        let missing = check("/nonexistent/check_x", 1, Duration::ZERO).check(&env);
        assert_eq!(missing.state, CheckState::Unknown);
    }

    #[test]
    fn a_check_that_prints_megabytes_is_quoted_by_its_last_lines() {
        let dir = tempfile::tempdir().expect("tempdir");
        let env = env_in(dir.path());
        let script =
            "sh -c 'yes 0123456789abcdef | head -c 8000000; echo; echo the last line; exit 2'";
        let err = check(script, 1, Duration::ZERO)
            .run(&env)
            .map_err(|(_, err)| err)
            .expect_err("critical");
        let message = err.message();
        assert!(message.len() < 4096, "{} bytes", message.len());
        assert!(message.ends_with("the last line"), "{message}");
        assert!(message.contains("(earlier output cut)"), "{message}");
    }

    #[test]
    fn retries_sleep_and_run_in_the_root_in_test_mode() {
        let dir = tempfile::tempdir().expect("tempdir");
        let env = env_in(dir.path());
        // Fails on the first try (no marker yet, relative to the root), then passes.
        let script = "sh -c 'test -e marker && exit 0; touch marker; echo not yet; exit 1'";
        let started = Instant::now();
        check(script, 2, Duration::from_millis(300))
            .run(&env)
            .map_err(|(_, err)| err)
            .expect("passes on retry");
        assert!(started.elapsed() >= Duration::from_millis(300));
        assert!(dir.path().join("marker").exists());
        let err = check("sh -c 'exit 5'", 2, Duration::ZERO)
            .run(&env)
            .map_err(|(_, err)| err)
            .expect_err("unknown");
        assert!(
            err.message()
                .ends_with("failed after 2 tries: UNKNOWN (exit code 5)"),
            "{err}"
        );
        let mut slow = check("sleep 5", 1, Duration::ZERO);
        slow.timeout = Some(Duration::from_millis(200));
        let err = slow.run(&env).map_err(|(_, err)| err).expect_err("timeout");
        assert!(
            err.message().contains("UNKNOWN (timed out after 200ms)"),
            "{err}"
        );
    }
}
