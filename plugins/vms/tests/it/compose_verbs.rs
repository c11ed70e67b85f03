//! The verbs Compose and Vagrant users type, against the fake QEMU:
//! `port`, `ssh-config`, `pause`/`unpause`, `restart`, `kill`, `wait`,
//! `rm` and `down -v`.

use crate::runtime_support;
use runtime_support::{Project, Qemu, stdout};

const COMPOSE: &str = "name: verbs\nservices:\n  web:\n    image: ./base.qcow2\n    stop_grace_period: 1s\n    ports: [\"80\"]\n    volumes: [data:/data]\nvolumes:\n  data: {size: 16M}\n";

#[test]
#[ignore = "needs qemu-img"]
fn compose_verbs_act_on_the_running_instances() {
    runtime_support::require_qemu_img();
    let p = Project::new(COMPOSE, Qemu::Fake);
    p.ok(&["up", "--no-wait"]);
    let row = p.ps()[0].clone();
    let published = &row["ports"][0];
    assert_eq!(
        stdout(&p, &["port", "web", "80"]),
        format!(
            "{}:{}\n",
            published["host_ip"].as_str().unwrap(),
            published["host_port"]
        )
    );
    let config = stdout(&p, &["ssh-config"]);
    assert!(
        config.starts_with("Host web-0\n  HostName 127.0.0.1\n"),
        "{config}"
    );
    assert!(
        config.contains(&format!("  Port {}\n", row["ssh_port"])),
        "{config}"
    );
    assert!(config.contains("ssh/verbs/id_ed25519"), "{config}");

    let status = |p: &Project| -> serde_json::Value {
        serde_json::from_str(&stdout(p, &["stats", "--json"])).unwrap()
    };
    let running = status(&p);
    assert_eq!(running[0]["status"], "running", "{running}");
    assert_eq!(running[0]["instance"], "web-0");
    assert!(
        running[0]["memory_rss_bytes"].as_u64().unwrap() > 0,
        "{running}"
    );
    assert_eq!(p.ok(&["pause"]), "holos: verbs/web-0 paused\n");
    assert_eq!(status(&p)[0]["status"], "paused");
    assert_eq!(p.ok(&["unpause"]), "holos: verbs/web-0 unpaused\n");
    assert_eq!(status(&p)[0]["status"], "running");
    assert!(stdout(&p, &["stats"]).starts_with("INSTANCE "));

    let before = p.pid_of("web-0").unwrap();
    let said = p.ok(&["restart", "web"]);
    assert!(
        said.starts_with("holos: verbs/web-0 powered off\nholos: verbs/web-0 started (pid "),
        "{said}"
    );
    let after = p.pid_of("web-0").unwrap();
    assert_ne!(before, after);

    let said = p.ok(&["kill", "-s", "TERM"]);
    assert_eq!(
        said,
        format!("holos: verbs/web-0 (QEMU pid {after}) sent SIGTERM\n")
    );
    p.ok(&["wait"]);
    assert_eq!(p.ps()[0]["state"], "stopped");
    assert_eq!(p.ok(&["rm"]), "holos: removed verbs/web-0\n");
    assert!(p.ps().is_empty());

    p.ok(&["up", "--no-wait"]);
    assert!(p.state().join("volumes/verbs/data.qcow2").is_file());
    let said = p.ok(&["down", "-v"]);
    assert!(
        said.contains("holos: removed the named volumes of project verbs"),
        "{said}"
    );
    assert!(!p.state().join("volumes/verbs").exists());
}

/// A stand-in `NAME` (ssh or scp) on the project's PATH that writes its
/// argv, one argument a line, to `NAME-argv` and exits 0.
fn standin(p: &Project, name: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let log = p.path().join(format!("{name}-argv"));
    let script = p.path().join("bin").join(name);
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > {}\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    log
}

#[test]
#[ignore = "needs qemu-img"]
fn cp_goes_both_ways_and_exec_takes_env_and_workdir() {
    runtime_support::require_qemu_img();
    let p = Project::new(COMPOSE, Qemu::Fake);
    p.ok(&["up", "--no-wait"]);
    let ssh_port = p.ps()[0]["ssh_port"].to_string();
    let scp = standin(&p, "scp");
    let lines = |log: &std::path::Path| -> Vec<String> {
        std::fs::read_to_string(log)
            .unwrap()
            .lines()
            .map(String::from)
            .collect()
    };
    p.ok(&["cp", "web-0:/etc/hosts", "./h"]);
    let argv = lines(&scp);
    assert_eq!(
        argv[argv.len() - 2..],
        ["ubuntu@127.0.0.1:/etc/hosts", "./h"],
        "{argv:?}"
    );
    assert!(
        argv.windows(2).any(|w| w[0] == "-P" && w[1] == ssh_port),
        "{argv:?}"
    );
    assert!(
        argv.iter().any(|a| a.ends_with("ssh/verbs/id_ed25519")),
        "{argv:?}"
    );
    p.ok(&["cp", "./h", "web:/tmp/h"]);
    let argv = lines(&scp);
    assert_eq!(
        argv[argv.len() - 2..],
        ["./h", "ubuntu@127.0.0.1:/tmp/h"],
        "{argv:?}"
    );
    let said = runtime_support::fails(&p, &["cp", "./a", "./b"]);
    assert!(
        said.contains("write INSTANCE:PATH for the guest side"),
        "{said}"
    );

    let ssh = standin(&p, "ssh");
    assert_eq!(stdout(&p, &["top"]), "web-0\n");
    assert_eq!(
        lines(&ssh).last().unwrap(),
        "ps -eo user,pid,ppid,pcpu,pmem,etime,args"
    );
    p.ok(&[
        "exec",
        "-e",
        "A=1 2",
        "--workdir",
        "/srv",
        "web-0",
        "--",
        "ls",
        "-l",
    ]);
    let argv = lines(&ssh);
    assert_eq!(
        argv.last().unwrap(),
        "cd /srv && export 'A=1 2' && ls -l",
        "{argv:?}"
    );
    let out = p.run(&["exec", "-e", "novalue", "web-0", "--", "true"]);
    assert_eq!(out.status.code(), Some(255));
    assert!(String::from_utf8_lossy(&out.stderr).contains("-e \"novalue\" is not KEY=VAL"));
}
