//! The run report of `holo apply`: a JSON summary of the run
//! (`$ROOT/var/lib/holo/last-run.json`, or `--report FILE`) and the same
//! counts in the Prometheus text format (`--metrics FILE`) for
//! node_exporter's textfile collector. Modelled on Puppet's
//! `last_run_summary.yaml`; holo(8) documents both formats.
//!
//! Both files are written atomically: a temporary file in the target's
//! directory is written, synced and renamed over the target, so a reader
//! (Ansible, node_exporter) never sees half a report.

use crate::apply::{CheckResult, Outcome};
use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// Bumped when a field changes meaning or goes away (adding one does not).
pub const FORMAT_VERSION: u32 = 1;

/// The default report path below the root.
pub const DEFAULT_PATH: &str = "var/lib/holo/last-run.json";

/// The default report path of `--monitor-only`, so that the report of the
/// last apply stays.
pub const DEFAULT_MONITOR_PATH: &str = "var/lib/holo/last-monitor.json";

/// One entity of the run, in apply order.
#[derive(Debug, Clone)]
pub struct EntityResult {
    pub id: String,
    pub plugin: String,
    pub outcome: Outcome,
    pub duration: Duration,
    /// The health checks that ran, in their order.
    pub checks: Vec<CheckResult>,
}

/// A finished `holo apply` run.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// `apply`, `force`, `noop` or `monitor`.
    pub mode: &'static str,
    pub start: SystemTime,
    pub end: SystemTime,
    pub exit_code: i32,
    /// Empty when the run failed before it applied anything.
    pub entities: Vec<EntityResult>,
}

/// The result names, in the order the counts are written.
const RESULTS: [&str; 6] = [
    "changed",
    "unchanged",
    "failed",
    "skipped",
    "needs_force",
    "interrupted",
];

/// The name of an outcome in the report. An entity that `--noop` could not
/// ask its plugin about counts as skipped.
pub fn result_name(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Changed => "changed",
        Outcome::Unchanged => "unchanged",
        Outcome::Failed => "failed",
        Outcome::Skipped | Outcome::NotSupported => "skipped",
        Outcome::NeedsForce => "needs_force",
        Outcome::Interrupted | Outcome::NotStarted => "interrupted",
    }
}

#[derive(Serialize)]
struct Json<'a> {
    version: u32,
    mode: &'a str,
    start: String,
    end: String,
    duration_seconds: f64,
    exit_code: i32,
    counts: Counts,
    health_checks: CheckCounts,
    entities: Vec<JsonEntity<'a>>,
}

/// The health checks of the run, by state.
#[derive(Serialize, Default)]
struct CheckCounts {
    total: usize,
    ok: usize,
    warning: usize,
    critical: usize,
    unknown: usize,
}

#[derive(Serialize)]
struct JsonCheck<'a> {
    name: &'a str,
    state: &'a str,
}

#[derive(Serialize, Default)]
struct Counts {
    total: usize,
    changed: usize,
    unchanged: usize,
    failed: usize,
    skipped: usize,
    needs_force: usize,
    interrupted: usize,
}

#[derive(Serialize)]
struct JsonEntity<'a> {
    id: &'a str,
    plugin: &'a str,
    result: &'static str,
    duration_seconds: f64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    checks: Vec<JsonCheck<'a>>,
}

/// A Nagios state's exit code: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.
fn state_code(state: &str) -> usize {
    holo_protocol::fd3::CHECK_STATES
        .iter()
        .position(|known| *known == state)
        .unwrap_or(3)
}

/// Prometheus label values escape `\`, `"` and newlines.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn rfc3339(time: SystemTime) -> String {
    DateTime::<Utc>::from(time).to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn seconds_since_epoch(time: SystemTime) -> f64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

/// Seconds rounded to the microsecond, so the JSON stays readable.
fn seconds(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 1e6).round() / 1e6
}

impl RunReport {
    fn counts(&self) -> Counts {
        let mut counts = Counts {
            total: self.entities.len(),
            ..Counts::default()
        };
        for entity in &self.entities {
            *match result_name(entity.outcome) {
                "changed" => &mut counts.changed,
                "unchanged" => &mut counts.unchanged,
                "failed" => &mut counts.failed,
                "skipped" => &mut counts.skipped,
                "interrupted" => &mut counts.interrupted,
                _ => &mut counts.needs_force,
            } += 1;
        }
        counts
    }

    fn check_counts(&self) -> CheckCounts {
        let mut counts = CheckCounts::default();
        for check in self.entities.iter().flat_map(|entity| &entity.checks) {
            counts.total += 1;
            *match state_code(&check.state) {
                0 => &mut counts.ok,
                1 => &mut counts.warning,
                2 => &mut counts.critical,
                _ => &mut counts.unknown,
            } += 1;
        }
        counts
    }

    fn duration(&self) -> Duration {
        self.end.duration_since(self.start).unwrap_or_default()
    }

    /// The JSON report, pretty-printed, ending in a newline.
    pub fn to_json(&self) -> String {
        let json = Json {
            version: FORMAT_VERSION,
            mode: self.mode,
            start: rfc3339(self.start),
            end: rfc3339(self.end),
            duration_seconds: seconds(self.duration()),
            exit_code: self.exit_code,
            counts: self.counts(),
            health_checks: self.check_counts(),
            entities: self
                .entities
                .iter()
                .map(|entity| JsonEntity {
                    id: &entity.id,
                    plugin: &entity.plugin,
                    result: result_name(entity.outcome),
                    duration_seconds: seconds(entity.duration),
                    checks: entity
                        .checks
                        .iter()
                        .map(|check| JsonCheck {
                            name: &check.name,
                            state: &check.state,
                        })
                        .collect(),
                })
                .collect(),
        };
        let mut text = serde_json::to_string_pretty(&json).unwrap_or_default();
        text.push('\n');
        text
    }

    /// The counts in the Prometheus text exposition format (version 0.0.4).
    /// A `--monitor-only` run has metrics of its own, so that its file and
    /// the apply's can both be collected.
    pub fn to_prometheus(&self) -> String {
        if self.mode == "monitor" {
            return self.monitor_prometheus();
        }
        let counts = self.counts();
        let values = [
            counts.changed,
            counts.unchanged,
            counts.failed,
            counts.skipped,
            counts.needs_force,
            counts.interrupted,
        ];
        let mut text = String::new();
        let mut metric = |name: &str, help: &str| {
            text.push_str(&format!("# HELP {name} {help}\n# TYPE {name} gauge\n"));
        };
        metric(
            "holo_entities",
            "Entities of the last holo apply run, by result.",
        );
        for (result, value) in RESULTS.iter().zip(values) {
            text.push_str(&format!("holo_entities{{result=\"{result}\"}} {value}\n"));
        }
        let gauges = [
            (
                "holo_last_run_timestamp_seconds",
                "When the last holo apply run ended, in seconds since the epoch.",
                format!("{:.3}", seconds_since_epoch(self.end)),
            ),
            (
                "holo_run_duration_seconds",
                "How long the last holo apply run took, in seconds.",
                format!("{:.6}", self.duration().as_secs_f64()),
            ),
            (
                "holo_last_run_exit_code",
                "The exit status of the last holo apply run (0 ok, 1 failures, 2 noop changes, 255 errors).",
                self.exit_code.to_string(),
            ),
            (
                "holo_last_run_noop",
                "1 when the last run was holo apply --noop, which changed nothing.",
                u8::from(self.mode == "noop").to_string(),
            ),
        ];
        for (name, help, value) in gauges {
            text.push_str(&format!(
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}\n"
            ));
        }
        text
    }
}

impl RunReport {
    /// The metrics of `--monitor-only`: each check's Nagios state, and
    /// when and how the run ended.
    fn monitor_prometheus(&self) -> String {
        let name = "holo_health_check_state";
        let mut text = format!(
            "# HELP {name} The state of a health check in the last holo apply --monitor-only run (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN).\n# TYPE {name} gauge\n"
        );
        for entity in &self.entities {
            for check in &entity.checks {
                text.push_str(&format!(
                    "{name}{{entity=\"{}\",check=\"{}\"}} {}\n",
                    label(&entity.id),
                    label(&check.name),
                    state_code(&check.state)
                ));
            }
        }
        let gauges = [
            (
                "holo_last_monitor_timestamp_seconds",
                "When the last holo apply --monitor-only run ended, in seconds since the epoch.",
                format!("{:.3}", seconds_since_epoch(self.end)),
            ),
            (
                "holo_last_monitor_exit_code",
                "The exit status of the last holo apply --monitor-only run (0 all checks OK, 1 a check failed, 255 errors).",
                self.exit_code.to_string(),
            ),
        ];
        for (name, help, value) in gauges {
            text.push_str(&format!(
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}\n"
            ));
        }
        text
    }
}

/// [`write_atomically`], with `path` resolved inside `root` in test mode
/// (a symlink in the root never leads the report outside it).
pub fn write_in_root(
    root: &str,
    path: &Path,
    content: &str,
    create_parent: bool,
) -> Result<(), String> {
    let fail = |what: &str, err: &dyn std::fmt::Display| {
        format!("cannot write {}: {what}: {err}", path.display())
    };
    if create_parent && let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        crate::in_root::create_dir_all(root, &crate::paths::display(dir))
            .map_err(|err| fail("create its directory", &err))?;
    }
    let real =
        crate::in_root::real_entry(root, path).map_err(|err| fail("find its directory", &err))?;
    write_atomically(&real, content, create_parent)
}

/// Writes `content` to `path` through a temporary file in the same
/// directory (mode 0644) and a rename. With `create_parent`, missing parent
/// directories are created first.
pub fn write_atomically(
    path: &Path,
    content: impl AsRef<[u8]>,
    create_parent: bool,
) -> Result<(), String> {
    let fail = |what: &str, err: &dyn std::fmt::Display| {
        format!("cannot write {}: {what}: {err}", path.display())
    };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    if create_parent {
        std::fs::create_dir_all(dir).map_err(|err| fail("create its directory", &err))?;
    }
    // A dotfile: node_exporter's textfile collector reads only `*.prom`.
    let mut temp = tempfile::Builder::new()
        .prefix(".holo-report-")
        .suffix(".tmp")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .tempfile_in(dir)
        .map_err(|err| fail("create a temporary file beside it", &err))?;
    temp.write_all(content.as_ref())
        .and_then(|()| temp.as_file().sync_all())
        .map_err(|err| fail("write the temporary file", &err))?;
    temp.persist(path)
        .map_err(|err| fail("rename the temporary file over it", &err.error))?;
    if let Ok(dir) = std::fs::File::open(dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> RunReport {
        let start = SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_250);
        RunReport {
            mode: "apply",
            start,
            end: start + Duration::from_millis(1500),
            exit_code: 1,
            entities: [
                ("file:/etc/motd", Outcome::Changed),
                ("file:/etc/issue", Outcome::Unchanged),
                ("service:nginx", Outcome::Failed),
                ("exec:reload", Outcome::Skipped),
                ("file:/etc/hosts", Outcome::NeedsForce),
                ("file:/etc/fstab", Outcome::NotSupported),
            ]
            .into_iter()
            .map(|(id, outcome)| EntityResult {
                id: id.to_string(),
                plugin: id.split(':').next().unwrap().to_string(),
                outcome,
                duration: Duration::from_micros(1234),
                checks: Vec::new(),
            })
            .collect(),
        }
    }

    #[test]
    fn json_has_times_counts_and_entities() {
        let value: serde_json::Value = serde_json::from_str(&report().to_json()).unwrap();
        assert_eq!(value["start"], "2023-11-14T22:13:20.250Z");
        assert_eq!(value["end"], "2023-11-14T22:13:21.750Z");
        assert_eq!(value["duration_seconds"], 1.5);
        let counts = &value["counts"];
        assert_eq!(counts["total"], 6);
        assert_eq!(counts["changed"], 1);
        assert_eq!(counts["skipped"], 2);
        assert_eq!(counts["needs_force"], 1);
        assert_eq!(value["entities"][2]["result"], "failed");
        assert_eq!(value["entities"][2]["duration_seconds"], 0.001234);
    }

    #[test]
    fn prometheus_counts_every_result() {
        let text = report().to_prometheus();
        for line in [
            "holo_entities{result=\"skipped\"} 2\n",
            "holo_entities{result=\"needs_force\"} 1\n",
            "holo_last_run_timestamp_seconds 1700000001.750\n",
            "holo_run_duration_seconds 1.500000\n",
            "holo_last_run_exit_code 1\n",
            "holo_last_run_noop 0\n",
        ] {
            assert!(text.contains(line), "{line:?} in\n{text}");
        }
    }

    #[test]
    fn checks_are_named_in_the_json_and_the_monitor_metrics() {
        let mut report = report();
        report.mode = "monitor";
        report.entities[2].checks = vec![
            CheckResult {
                name: "check_http".to_string(),
                state: "CRITICAL".to_string(),
            },
            CheckResult {
                name: "disk \"root\"".to_string(),
                state: "OK".to_string(),
            },
        ];
        let value: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(value["mode"], "monitor");
        assert_eq!(value["health_checks"]["total"], 2);
        assert_eq!(value["health_checks"]["critical"], 1);
        assert_eq!(value["entities"][2]["checks"][0]["name"], "check_http");
        assert_eq!(value["entities"][2]["checks"][0]["state"], "CRITICAL");
        assert!(value["entities"][0].get("checks").is_none());
        let text = report.to_prometheus();
        for line in [
            "holo_health_check_state{entity=\"service:nginx\",check=\"check_http\"} 2\n",
            "holo_health_check_state{entity=\"service:nginx\",check=\"disk \\\"root\\\"\"} 0\n",
            "holo_last_monitor_exit_code 1\n",
        ] {
            assert!(text.contains(line), "{line:?} in\n{text}");
        }
        assert!(!text.contains("holo_entities"), "{text}");
    }
}
