//! `holo apply --monitor-only`: only the health checks run, through the
//! real holo-exec (the SDK's `monitor` extension), and the run report and
//! the metrics name each check; a plugin without the extension is skipped.

use std::path::Path;
use std::process::Command;

const RESOURCES: &str = r#"
[[exec]]
name = "start-app"
command = "sh -c 'echo ran >> var/ran.log; touch var/app.pid'"
health_checks = [{ name = "app_running", command = "test -e var/app.pid" }, { command = "true" }]

[[exec]]
name = "plain"
command = "sh -c 'echo ran >> var/ran.log'"
"#;

/// A Holo 3 style plugin: no `monitor` extension.
const OLD_PLUGIN: &str = "#!/bin/sh\ncase \"$1\" in\n  info) echo MIN_API_VERSION=3; echo MAX_API_VERSION=3; echo EXTENSIONS=noop ;;\n  scan) echo 'ENTITY: old:thing' ;;\n  *) echo \"called $1\" >> \"$HOLO_ROOT_DIR/var/old.log\" ;;\nesac\n";

fn monitor_root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for sub in [
        "etc",
        "run",
        "tmp",
        "var",
        "usr/share/holo/exec",
        "usr/share/holo/old",
    ] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    let old = root.join("old-plugin");
    std::fs::write(&old, OLD_PLUGIN).unwrap();
    test_support::make_executable(&old);
    let holorc = format!(
        "plugin exec={}\nplugin old={}\n",
        test_support::binary("holo-exec").display(),
        old.display()
    );
    std::fs::write(root.join("etc/holorc"), holorc).unwrap();
    std::fs::write(root.join("usr/share/holo/exec/app.toml"), RESOURCES).unwrap();
    dir
}

fn holo(root: &Path, args: &[&str], no_batch: bool) -> (i32, String) {
    let mut command = Command::new(test_support::binary("holo"));
    command
        .args(args)
        .env("HOLO_ROOT_DIR", root)
        .env("HOLO_TEST_RUN_REPORT", "1")
        .env("TMPDIR", root.join("tmp"))
        .env("NO_COLOR", "1")
        .env_remove("HOLO_NO_BATCH");
    if no_batch {
        command.env("HOLO_NO_BATCH", "1");
    }
    let output = command.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code().unwrap_or(-1), text)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

fn checks_of(report: &serde_json::Value, id: &str) -> Vec<(String, String)> {
    let entity = report["entities"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entity| entity["id"] == id)
        .unwrap_or_else(|| panic!("{id} not in {report}"));
    entity["checks"]
        .as_array()
        .map(|checks| {
            checks
                .iter()
                .map(|check| {
                    let text = |key: &str| check[key].as_str().unwrap().to_string();
                    (text("name"), text("state"))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn monitor_only_runs_the_checks_and_reports_them_by_name() {
    for no_batch in [false, true] {
        let dir = monitor_root();
        let root = dir.path();
        let (code, out) = holo(root, &["apply"], no_batch);
        assert_eq!(code, 0, "{out}");
        let applied: serde_json::Value =
            serde_json::from_str(&read(&root.join("var/lib/holo/last-run.json"))).unwrap();
        let named = vec![
            ("app_running".to_string(), "OK".to_string()),
            ("true".to_string(), "OK".to_string()),
        ];
        assert_eq!(checks_of(&applied, "exec:start-app"), named);
        assert_eq!(applied["health_checks"]["total"], 2);

        std::fs::remove_file(root.join("var/app.pid")).unwrap();
        std::fs::remove_file(root.join("var/old.log")).unwrap();
        let metrics = root.join("monitor.prom");
        let metrics_arg = metrics.to_str().unwrap();
        let (code, out) = holo(
            root,
            &["apply", "--monitor-only", "--metrics", metrics_arg],
            no_batch,
        );
        assert_eq!(code, 1, "{out}");
        assert!(
            out.contains("!! health check app_running (\"test -e var/app.pid\") failed after 1 try: WARNING (exit code 1)"),
            "{out}"
        );
        assert!(
            out.contains("Skipping old:thing: plugin old does not support --monitor-only"),
            "{out}"
        );
        // Nothing ran: no command, no call of the old plugin's apply.
        assert_eq!(read(&root.join("var/ran.log")), "ran\nran\n");
        assert!(!root.join("var/app.pid").exists());
        assert!(!root.join("var/old.log").exists(), "{out}");

        let report: serde_json::Value =
            serde_json::from_str(&read(&root.join("var/lib/holo/last-monitor.json"))).unwrap();
        assert_eq!(report["mode"], "monitor");
        assert_eq!(
            checks_of(&report, "exec:start-app"),
            vec![
                ("app_running".to_string(), "WARNING".to_string()),
                ("true".to_string(), "OK".to_string()),
            ]
        );
        assert_eq!(report["health_checks"]["warning"], 1);
        assert_eq!(checks_of(&report, "exec:plain"), Vec::new());
        // The last apply's report stays.
        let last_run = read(&root.join("var/lib/holo/last-run.json"));
        assert!(last_run.contains("\"mode\": \"apply\""), "{last_run}");

        let metrics = read(&metrics);
        for line in [
            "holo_health_check_state{entity=\"exec:start-app\",check=\"app_running\"} 1\n",
            "holo_health_check_state{entity=\"exec:start-app\",check=\"true\"} 0\n",
            "holo_last_monitor_exit_code 1\n",
        ] {
            assert!(metrics.contains(line), "{line:?} in\n{metrics}");
        }
    }
}

#[test]
fn monitor_only_refuses_force_and_noop() {
    let dir = monitor_root();
    for other in ["--force", "--noop"] {
        let (code, out) = holo(dir.path(), &["apply", "--monitor-only", other], false);
        assert_eq!(code, 2, "{out}");
        assert_eq!(
            out,
            "holo apply: --monitor-only cannot be combined with --force or --noop; it changes nothing\n"
        );
    }
}
