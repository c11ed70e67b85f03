//! `-p NAME` against a compose file whose `name:` differs: `-p` wins for
//! every command (as in Docker Compose), and each instance line names its
//! project, so that no command acts on another project than the one named.

use crate::runtime_support;
use runtime_support::{Project, Qemu};

const ALPHA: &str =
    "name: alpha\nservices:\n  web:\n    image: ./base.qcow2\n    stop_grace_period: 1s\n";

fn running(p: &Project, project: &str) -> Vec<String> {
    let out = p.run(&["-p", project, "ps", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    list.as_array()
        .unwrap()
        .iter()
        .filter(|i| i["state"] == "running")
        .map(|i| {
            format!(
                "{}/{}",
                i["project"].as_str().unwrap(),
                i["instance"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
#[ignore = "needs qemu-img"]
fn the_p_flag_wins_over_the_files_name_for_every_command() {
    runtime_support::require_qemu_img();
    let p = Project::new(ALPHA, Qemu::Fake);
    let said = p.ok(&["up", "--no-wait"]);
    assert!(said.contains("holos: alpha/web-0 started (pid "), "{said}");
    let said = p.ok(&["-p", "beta", "up", "--no-wait"]);
    assert!(said.contains("holos: beta/web-0 started (pid "), "{said}");
    assert_eq!(running(&p, "alpha"), ["alpha/web-0"]);
    assert_eq!(running(&p, "beta"), ["beta/web-0"]);
    // A project that has no instances lists none, not alpha's.
    assert_eq!(running(&p, "three"), Vec::<String>::new());

    let said = p.ok(&["-p", "beta", "stop"]);
    assert_eq!(said, "holos: beta/web-0 powered off\n");
    assert_eq!(running(&p, "alpha"), ["alpha/web-0"]);
    assert_eq!(running(&p, "beta"), Vec::<String>::new());

    let said = p.ok(&["-p", "beta", "down"]);
    assert_eq!(said, "holos: removed beta/web-0\n");
    assert_eq!(running(&p, "alpha"), ["alpha/web-0"]);
    let config = runtime_support::stdout(&p, &["-p", "gamma", "config"]);
    assert!(config.starts_with("name: gamma\n"), "{config}");
}
