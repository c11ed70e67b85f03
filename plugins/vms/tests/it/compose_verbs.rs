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
        format!("{}:{}\n", published["host_ip"].as_str().unwrap(), published["host_port"])
    );
    let config = stdout(&p, &["ssh-config"]);
    assert!(config.starts_with("Host web-0\n  HostName 127.0.0.1\n"), "{config}");
    assert!(config.contains(&format!("  Port {}\n", row["ssh_port"])), "{config}");
    assert!(config.contains("ssh/verbs/id_ed25519"), "{config}");

    assert_eq!(p.ok(&["pause"]), "holos: verbs/web-0 paused\n");
    assert_eq!(p.ok(&["unpause"]), "holos: verbs/web-0 unpaused\n");

    let before = p.pid_of("web-0").unwrap();
    let said = p.ok(&["restart", "web"]);
    assert!(said.starts_with("holos: verbs/web-0 powered off\nholos: verbs/web-0 started (pid "), "{said}");
    let after = p.pid_of("web-0").unwrap();
    assert_ne!(before, after);

    let said = p.ok(&["kill", "-s", "TERM"]);
    assert_eq!(said, format!("holos: verbs/web-0 (QEMU pid {after}) sent SIGTERM\n"));
    p.ok(&["wait"]);
    assert_eq!(p.ps()[0]["state"], "stopped");
    assert_eq!(p.ok(&["rm"]), "holos: removed verbs/web-0\n");
    assert!(p.ps().is_empty());

    p.ok(&["up", "--no-wait"]);
    assert!(p.state().join("volumes/verbs/data.qcow2").is_file());
    let said = p.ok(&["down", "-v"]);
    assert!(said.contains("holos: removed the named volumes of project verbs"), "{said}");
    assert!(!p.state().join("volumes/verbs").exists());
}
