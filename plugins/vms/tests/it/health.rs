//! Health checks and `depends_on` in `holos up`, with the fake QEMU and a
//! fake `ssh` that runs the remote command line on the host: the exec and
//! string forms and their quoting, interval/retries/start_period/timeout,
//! HOLOS_HEALTH_BYPASS, the start order, the error that names the service
//! and the last probe output, and the health column of `holos ps`.

use crate::plugin_support;
use crate::runtime_support;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use runtime_support::{Project, Qemu};

/// A project with the fake QEMU and the fake ssh on its PATH.
fn project(compose: &str) -> Project {
    let p = Project::new(compose, Qemu::Fake);
    let ssh = p.path().join("bin/ssh");
    std::fs::write(&ssh, plugin_support::FAKE_SSH).unwrap();
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

fn ssh_log(p: &Project) -> PathBuf {
    p.path().join("ssh.log")
}

fn ssh_calls(p: &Project) -> Vec<String> {
    std::fs::read_to_string(ssh_log(p))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Runs `holos ARGS` with the fake ssh's log; returns (success, stderr).
fn holos(p: &Project, args: &[&str], bypass: bool) -> (bool, String) {
    let mut command = p.holos(args);
    command.env("FAKE_SSH_LOG", ssh_log(p));
    if bypass {
        command.env("HOLOS_HEALTH_BYPASS", "1");
    }
    let out = command.output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn db_and_web(check: &str) -> String {
    format!(
        "name: hc\nservices:\n  web:\n    image: ./base.qcow2\n    depends_on: [db]\n  db:\n    image: ./base.qcow2\n    healthcheck:\n{check}"
    )
}

#[test]
fn exec_form_is_quoted_per_argument_and_the_dependent_starts_after_healthy() {
    let p = project("");
    p.write(&db_and_web(&format!(
        "      test: [\"sh\", \"-c\", \"echo probed >> '{}'; echo ok\"]\n      interval: 100ms\n",
        p.path().join("probes").display()
    )));
    let (ok, said) = holos(&p, &["up"], false);
    assert!(ok, "{said}");
    // The argv survived the remote shell: the probe really ran.
    let probes = std::fs::read_to_string(p.path().join("probes")).unwrap();
    assert!(probes.starts_with("probed\n"), "{probes}");
    let calls = ssh_calls(&p);
    assert!(
        calls[0].ends_with(&format!(
            "-- sh -c 'echo probed >> '\\''{}'\\''; echo ok'",
            p.path().join("probes").display()
        )),
        "{calls:?}"
    );
    assert!(calls[0].contains("ssh/hc/id_ed25519"), "{calls:?}");
    let healthy = said.find("web waits for db-0 to be healthy").expect(&said);
    let web = said.find("web-0 started").expect(&said);
    let db = said.find("db-0 started").expect(&said);
    assert!(db < healthy && healthy < web, "{said}");
    // ps shows the state.
    let rows = p.ps();
    let db_row = rows.iter().find(|r| r["instance"] == "db-0").unwrap();
    let web_row = rows.iter().find(|r| r["instance"] == "web-0").unwrap();
    assert_eq!(db_row["health"], "healthy");
    assert_eq!(web_row["health"], serde_json::Value::Null);
    let table = p.run(&["ps"]);
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    assert!(
        table.lines().next().unwrap().contains(" HEALTH "),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("db-0") && l.contains(" healthy ")),
        "{table}"
    );
}

#[test]
fn a_string_test_runs_under_sh_c() {
    let p = project("");
    let out = p.path().join("out");
    p.write(&db_and_web(&format!(
        "      test: \"echo $$((1 + 2)) > '{}'\"\n      interval: 100ms\n",
        out.display()
    )));
    let (ok, said) = holos(&p, &["up"], false);
    assert!(ok, "{said}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "3\n");
    let calls = ssh_calls(&p);
    assert!(calls[0].contains("-- sh -c 'echo $((1 + 2))"), "{calls:?}");
}

#[test]
fn retries_run_out_with_the_service_and_the_last_output_and_the_dependent_is_not_started() {
    let p = project("");
    p.write(&db_and_web(
        "      test: [\"sh\", \"-c\", \"echo not ready yet; exit 1\"]\n      interval: 100ms\n      retries: 3\n",
    ));
    let (ok, said) = holos(&p, &["up"], false);
    assert!(!ok);
    assert!(
        said.contains("service db: db-0 did not become healthy: 3 consecutive failed probes")
            && said.contains("last probe output: not ready yet")
            && said.contains("web was not started"),
        "{said}"
    );
    assert_eq!(ssh_calls(&p).len(), 3);
    assert!(p.pid_of("web-0").is_none(), "{said}");
    // A failed up leaves none of its QEMU processes behind.
    assert!(p.pid_of("db-0").is_none(), "{said}");
}

#[test]
fn failures_in_the_start_period_use_up_no_retries() {
    // Fails four times, then passes; one retry would not be enough without
    // the start period.
    let counter_check = |p: &Project, start_period: &str| {
        let count = p.path().join("count");
        db_and_web(&format!(
            "      test: [\"sh\", \"-c\", \"n=$$(cat {c} 2>/dev/null || echo 0); n=$$((n + 1)); echo $$n > {c}; echo probe $$n; [ $$n -ge 5 ]\"]\n      interval: 100ms\n      retries: 1\n      start_period: {start_period}\n      start_interval: 100ms\n",
            c = count.display()
        ))
    };
    let p = project("");
    p.write(&counter_check(&p, "30s"));
    let (ok, said) = holos(&p, &["up"], false);
    assert!(ok, "{said}");
    assert_eq!(
        ssh_calls(&p).len(),
        5,
        "four failures inside the start period, then the passing probe"
    );

    let q = project("");
    q.write(&counter_check(&q, "0s"));
    let (ok, said) = holos(&q, &["up"], false);
    assert!(!ok);
    assert!(said.contains("last probe output: probe 1"), "{said}");
}

/// Inside the start period probes come every `start_interval`: five quick
/// probes pass before the slow `interval` would have left the start period
/// (probes at 0s and 6s, then a failure that counts at 12s).
#[test]
fn start_interval_paces_the_probes_inside_the_start_period() {
    let p = project("");
    let count = p.path().join("count");
    p.write(&db_and_web(&format!(
        "      test: [\"sh\", \"-c\", \"n=$$(cat {c} 2>/dev/null || echo 0); n=$$((n + 1)); echo $$n > {c}; echo probe $$n; [ $$n -ge 5 ]\"]\n      interval: 6s\n      retries: 1\n      start_period: 10s\n      start_interval: 100ms\n",
        c = count.display()
    )));
    let (ok, said) = holos(&p, &["up"], false);
    assert!(ok, "{said}");
    assert_eq!(ssh_calls(&p).len(), 5, "{said}");
}

#[test]
fn a_probe_that_outlives_its_timeout_fails() {
    let p = project("");
    p.write(&db_and_web(
        "      test: [\"sleep\", \"30\"]\n      timeout: 300ms\n      interval: 100ms\n      retries: 1\n",
    ));
    let started = std::time::Instant::now();
    let (ok, said) = holos(&p, &["up"], false);
    assert!(!ok);
    assert!(
        said.contains("last probe output: the probe timed out after 300ms"),
        "{said}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(25));
}

#[test]
fn an_unreachable_guest_fails_like_ssh_does() {
    let p = project("");
    p.write(&db_and_web(
        "      test: [\"true\"]\n      interval: 100ms\n      retries: 2\n",
    ));
    // The fake ssh reaches nothing on this port: exit 255 with ssh's message.
    let (ok, said) = holos(&p, &["up", "--no-wait", "db"], false);
    assert!(ok, "{said}");
    p.edit_record("hc", |record| {
        record["instances"]["db-0"]["spec"]["ssh_port"] = serde_json::json!(1);
    });
    let (ok, said) = holos(&p, &["up"], false);
    assert!(!ok);
    assert!(
        said.contains(
            "last probe output: ssh: connect to host 127.0.0.1 port 1: Connection refused"
        ),
        "{said}"
    );
}

#[test]
fn bypass_skips_the_probe_and_ps_says_so() {
    let p = project("");
    p.write(&db_and_web("      test: [\"false\"]\n"));
    let (ok, said) = holos(&p, &["up"], true);
    assert!(ok, "{said}");
    assert!(ssh_calls(&p).is_empty());
    let db = p
        .ps()
        .into_iter()
        .find(|r| r["instance"] == "db-0")
        .unwrap();
    assert_eq!(db["health"], "bypassed");
    assert!(p.pid_of("web-0").is_some());
}

#[test]
fn without_a_healthcheck_a_dependent_waits_only_until_started() {
    let p = project(
        "name: plain\nservices:\n  web:\n    image: ./base.qcow2\n    depends_on: {db: {condition: service_started}}\n  db:\n    image: ./base.qcow2\n",
    );
    let (ok, said) = holos(&p, &["up"], false);
    assert!(ok, "{said}");
    assert!(ssh_calls(&p).is_empty(), "no probe without a check");
    let db = said.find("db-0 started").expect(&said);
    let web = said.find("web-0 started").expect(&said);
    assert!(db < web, "{said}");
}

/// `up` on a project that `up --no-wait` left running waits for the health
/// it did not wait for, as `docker compose up --wait` does on a running
/// project: it fails while the check fails (stopping nothing) and passes
/// once the check does; an instance already found healthy is not probed
/// again, and `--no-wait` still returns at once.
#[test]
fn up_waits_for_the_health_that_up_no_wait_skipped() {
    let p = project("");
    let ready = p.path().join("ready");
    p.write(&format!(
        "name: hc\nservices:\n  db:\n    image: ./base.qcow2\n    healthcheck:\n      test: [\"test\", \"-e\", \"{}\"]\n      interval: 100ms\n      retries: 2\n",
        ready.display()
    ));
    let (ok, said) = holos(&p, &["up", "--no-wait"], false);
    assert!(ok, "{said}");
    assert!(ssh_calls(&p).is_empty());
    assert_eq!(p.ps()[0]["health"], "starting");

    let (ok, said) = holos(&p, &["up"], false);
    assert!(!ok, "{said}");
    assert!(
        said.contains("project hc is up to date")
            && said.contains("waiting for db-0 to be healthy")
            && said.contains("db-0 did not become healthy: 2 consecutive failed probes"),
        "{said}"
    );
    assert_eq!(p.ps()[0]["health"], "unhealthy");
    assert!(p.pid_of("db-0").is_some(), "a failed wait stops nothing");

    let (ok, said) = holos(&p, &["up", "--no-wait"], false);
    assert!(ok, "{said}");
    assert_eq!(ssh_calls(&p).len(), 2, "--no-wait probes nothing");

    std::fs::write(&ready, "").unwrap();
    let (ok, said) = holos(&p, &["up"], false);
    assert!(ok, "{said}");
    assert!(said.contains("waiting for db-0 to be healthy"), "{said}");
    assert_eq!(p.ps()[0]["health"], "healthy");
    assert_eq!(ssh_calls(&p).len(), 3);

    let (ok, said) = holos(&p, &["up"], false);
    assert!(ok, "{said}");
    assert!(!said.contains("waiting for"), "{said}");
    assert_eq!(
        ssh_calls(&p).len(),
        3,
        "a healthy instance is not probed again"
    );
}
