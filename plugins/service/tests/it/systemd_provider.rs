//! The systemd provider outside test mode, driven through the real
//! `holo-service` binary against a fake `systemctl` first on PATH
//! (tests/fake/systemctl) that answers like systemd's: the same output,
//! messages and exit codes. Its call log shows the exact argv.

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;

struct Machine {
    dir: tempfile::TempDir,
    runs: std::cell::Cell<u32>,
}

impl Machine {
    /// A machine with these unit files and no services declared yet.
    fn new(units: &[&str]) -> Machine {
        let dir = tempfile::tempdir().expect("tempdir");
        for unit in units {
            let path = dir.path().join("systemd/units").join(unit);
            fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            fs::write(path, "[Service]\nExecStart=/bin/true\n").expect("unit file");
        }
        fs::create_dir_all(dir.path().join("resources")).expect("mkdir");
        Machine {
            dir,
            runs: std::cell::Cell::new(0),
        }
    }

    fn declare(&self, toml: &str) -> &Self {
        fs::write(self.dir.path().join("resources/services.toml"), toml).expect("resources");
        self
    }

    /// Sets what `is-active`/`is-enabled` print for `unit`.
    fn set(&self, unit: &str, active: &str, enabled: &str) -> &Self {
        let state = self.dir.path().join("systemd/state");
        fs::create_dir_all(&state).expect("mkdir");
        fs::write(state.join(format!("{unit}.active")), format!("{active}\n")).expect("state");
        fs::write(
            state.join(format!("{unit}.enabled")),
            format!("{enabled}\n"),
        )
        .expect("state");
        self
    }

    fn state(&self, unit: &str, key: &str) -> String {
        let path = self.dir.path().join(format!("systemd/state/{unit}.{key}"));
        fs::read_to_string(path)
            .unwrap_or_default()
            .trim()
            .to_owned()
    }

    /// The systemctl calls so far, one argv per line; the log is then reset.
    fn calls(&self) -> Vec<String> {
        let path = self.dir.path().join("systemd/calls.log");
        let text = fs::read_to_string(&path).unwrap_or_default();
        let _ = fs::remove_file(path);
        text.lines().map(str::to_owned).collect()
    }

    fn state_dir(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    /// `holo-service ARGS` as the driver runs it outside test mode, with a
    /// fresh cache (a new run) each time and FD 3 on stdout.
    fn plugin(&self, args: &[&str]) -> Command {
        let fake = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake");
        let path = format!(
            "{}:{}",
            fake.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        self.runs.set(self.runs.get() + 1);
        // The driver creates a fresh cache directory for every run.
        let cache = self.dir.path().join(format!("cache-{}", self.runs.get()));
        fs::create_dir_all(&cache).expect("cache dir");
        let resources = self.dir.path().join("resources");
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(r#"exec "$0" "$@" 3>&1"#)
            .arg(assert_cmd::cargo::cargo_bin("holo-service"))
            .args(args)
            .env_remove("HOLO_ROOT_DIR")
            .env_remove("HOLO_REFRESH")
            .env("PATH", path)
            .env("HOLO_RESOURCE_DIR", &resources)
            .env("HOLO_RESOURCE_ORIGIN", &resources)
            .env("HOLO_STATE_DIR", self.state_dir())
            .env("HOLO_CACHE_DIR", cache)
            .env("FAKE_SYSTEMD_DIR", self.dir.path().join("systemd"));
        command
    }
}

/// What one run printed (FD 3 included, on stdout) and how it exited.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Ran {
    fn success(self) -> Ran {
        assert_eq!(
            self.code,
            Some(0),
            "stdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        self
    }

    fn failure(self) -> Ran {
        assert_eq!(
            self.code,
            Some(1),
            "stdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        self
    }
}

fn run(command: &mut Command) -> Ran {
    let output = command.output().expect("run holo-service");
    Ran {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[test]
fn apply_starts_then_enables_with_one_daemon_reload_first() {
    let machine = Machine::new(&["web.service"]);
    machine.declare("[[service]]\nname = \"web\"\nenable = true\n");
    let ran = run(&mut machine.plugin(&["apply", "service:web"])).success();
    // systemctl's own messages reach the driver.
    assert!(ran.stderr.contains("Created symlink"), "{}", ran.stderr);
    assert_eq!(
        machine.calls(),
        [
            "is-active --system web",
            "is-enabled --system web",
            "daemon-reload",
            "start --system web",
            "enable --system web",
            "is-active --system web",
            "is-enabled --system web",
        ]
    );
    assert_eq!(machine.state("web.service", "active"), "active");
    assert_eq!(machine.state("web.service", "enabled"), "enabled");
    let record = fs::read_to_string(machine.state_dir().join("service:web.toml")).expect("record");
    assert_eq!(
        record,
        "version = 1\nname = \"web\"\nrunning = true\nenabled = true\n"
    );

    // Converged: only the two queries, no reload, no change.
    run(&mut machine.plugin(&["apply", "service:web"])).success();
    assert_eq!(
        machine.calls(),
        ["is-active --system web", "is-enabled --system web"]
    );
}

#[test]
fn one_daemon_reload_per_process_in_a_batch() {
    let machine = Machine::new(&["a.service", "b.service", "c.service"]);
    machine.declare(
        "[[service]]\nname = \"a\"\n\n[[service]]\nname = \"b\"\nensure = \"stopped\"\n\n[[service]]\nname = \"c\"\n",
    );
    machine.set("b.service", "active", "enabled");
    // The batch records go to FD 3, which the SDK points at /dev/null here.
    run(machine
        .plugin(&["apply-batch"])
        .env("HOLO_EXTENSIONS", "noop,order,batch")
        .write_stdin("service:a\nservice:b\nservice:c\n"))
    .success();
    let calls = machine.calls();
    let reloads = calls.iter().filter(|call| *call == "daemon-reload").count();
    assert_eq!(reloads, 1, "{calls:#?}");
    let first_change = calls
        .iter()
        .position(|call| call.starts_with("start ") || call.starts_with("stop "))
        .expect("a change");
    assert_eq!(calls[first_change - 1], "daemon-reload", "{calls:#?}");
    for change in ["start --system a", "stop --system b", "start --system c"] {
        assert!(calls.iter().any(|call| call == change), "{calls:#?}");
    }
}

#[test]
fn refresh_restarts_a_running_service_starts_a_stopped_one_and_ignores_stopped() {
    let machine = Machine::new(&["up.service", "down.service", "off.service"]);
    machine.declare(
        "[[service]]\nname = \"up\"\n\n[[service]]\nname = \"down\"\n\n[[service]]\nname = \"off\"\nensure = \"stopped\"\n",
    );
    machine.set("up.service", "active", "enabled");
    let refresh = |id: &str| run(machine.plugin(&["apply", id]).env("HOLO_REFRESH", "1")).success();
    refresh("service:up");
    let calls = machine.calls();
    assert!(
        calls.iter().any(|c| c == "restart --system up"),
        "{calls:#?}"
    );
    refresh("service:down");
    let calls = machine.calls();
    assert!(
        calls.iter().any(|c| c == "start --system down"),
        "{calls:#?}"
    );
    assert!(
        !calls.iter().any(|c| c.starts_with("restart")),
        "{calls:#?}"
    );
    let ran = refresh("service:off");
    assert_eq!(ran.stdout, "not changed\n");
    assert_eq!(
        machine.calls(),
        ["is-active --system off", "is-enabled --system off"]
    );
}

#[test]
fn a_unit_that_does_not_exist_is_service_not_found_in_old_and_new_systemd() {
    let machine = Machine::new(&[]);
    machine.declare("[[service]]\nname = \"nginx\"\n");
    let ran = run(&mut machine.plugin(&["apply", "service:nginx"])).failure();
    assert!(
        ran.stderr.contains("!! service:nginx: service not found: nginx (systemctl is-enabled printed \"Failed to get unit file state for nginx.service: No such file or directory\")"),
        "{}",
        ran.stderr
    );
    let ran = run(machine
        .plugin(&["apply", "service:nginx"])
        .env("FAKE_SYSTEMD_NOT_FOUND", "word"))
    .failure();
    assert!(
        ran.stderr
            .contains("service not found: nginx (systemctl is-enabled printed \"not-found\")"),
        "{}",
        ran.stderr
    );
    assert!(!machine.calls().iter().any(|c| c.starts_with("start")));
}

#[test]
fn output_the_seed_does_not_know_is_an_error_that_quotes_it() {
    let machine = Machine::new(&["web.service"]);
    machine.declare("[[service]]\nname = \"web\"\n");
    machine.set("web.service", "reloading", "enabled");
    let ran = run(&mut machine.plugin(&["apply", "service:web"])).failure();
    assert!(
        ran.stderr
            .contains("invalid systemctl is-active output for web: \"reloading\""),
        "{}",
        ran.stderr
    );
    machine.set("web.service", "active", "bad-state");
    let ran = run(&mut machine.plugin(&["apply", "service:web"])).failure();
    assert!(
        ran.stderr
            .contains("invalid systemctl is-enabled output for web: \"bad-state\""),
        "{}",
        ran.stderr
    );
}

#[test]
fn a_failing_systemctl_fails_the_entity_with_its_message() {
    let machine = Machine::new(&["web.service"]);
    machine.declare("[[service]]\nname = \"web\"\n");
    machine.set("web.service", "inactive", "masked");
    let ran = run(&mut machine.plugin(&["apply", "service:web"])).failure();
    assert!(
        ran.stderr
            .contains("Failed to start web.service: Unit web.service is masked."),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr
            .contains("!! service:web: systemctl start --system web failed with exit code 1"),
        "{}",
        ran.stderr
    );
    assert!(!machine.state_dir().join("service:web.toml").exists());
}

#[test]
fn a_change_that_does_not_hold_fails_the_check_after_it() {
    let machine = Machine::new(&["web.service"]);
    machine.declare("[[service]]\nname = \"web\"\nenable = false\n");
    machine.set("web.service", "active", "static");
    let ran = run(&mut machine.plugin(&["apply", "service:web"])).failure();
    assert!(
        ran.stderr
            .contains("desired state not achieved: enable is false, but the service is enabled"),
        "{}",
        ran.stderr
    );
}

#[test]
fn noop_prints_ccms_messages_and_changes_nothing() {
    let machine = Machine::new(&["web.service"]);
    machine.declare("[[service]]\nname = \"web\"\nensure = \"stopped\"\nenable = false\n");
    machine.set("web.service", "active", "enabled");
    let ran = run(&mut machine.plugin(&["noop", "service:web"])).success();
    assert_eq!(ran.stdout, "Would have stopped\nWould have disabled\n");
    assert_eq!(
        machine.calls(),
        ["is-active --system web", "is-enabled --system web"]
    );
    assert_eq!(machine.state("web.service", "active"), "active");
}

#[test]
fn diff_renders_desired_and_current_state_as_toml() {
    let machine = Machine::new(&["web.service"]);
    machine.declare("[[service]]\nname = \"web\"\nenable = true\n");
    machine.set("web.service", "failed", "disabled");
    let ran = run(&mut machine.plugin(&["diff", "service:web"])).success();
    // FD 3 carries the two paths, each ended by a NUL byte.
    let paths: Vec<&str> = ran.stdout.split_terminator('\0').collect();
    assert_eq!(paths.len(), 2, "{}", ran.stdout);
    let read = |path: &str| fs::read_to_string(path).expect("diff side");
    assert_eq!(
        read(paths[0]),
        "[[service]]\nname = \"web\"\nensure = \"running\"\nenable = true\n"
    );
    assert_eq!(
        read(paths[1]),
        "[[service]]\nname = \"web\"\nensure = \"stopped\"\nenable = false\n"
    );
}

#[test]
fn protect_leaves_a_service_stopped_by_hand_until_force() {
    let machine = Machine::new(&["web.service"]);
    machine.declare("[[service]]\nname = \"web\"\nprotect = true\n");
    run(&mut machine.plugin(&["apply", "service:web"])).success();
    // Someone runs `systemctl stop web`.
    machine.set("web.service", "inactive", "disabled");
    machine.calls();
    let ran = run(&mut machine.plugin(&["apply", "service:web"])).success();
    assert_eq!(ran.stdout, "requires --force to restore\n");
    assert!(!machine.calls().iter().any(|c| c.starts_with("start")));
    // A crash is nobody's edit: it heals without --force.
    machine.set("web.service", "failed", "disabled");
    run(&mut machine.plugin(&["apply", "service:web"])).success();
    assert_eq!(machine.state("web.service", "active"), "active");
    machine.set("web.service", "inactive", "disabled");
    run(&mut machine.plugin(&["force-apply", "service:web"])).success();
    assert_eq!(machine.state("web.service", "active"), "active");
}
