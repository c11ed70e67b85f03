//! The `>>` notes on fields that act differently in a VM: one per field in
//! use, naming the first place it occurs; `--quiet` silences them.

use crate::common;
use common::project;

#[test]
fn validate_prints_the_notes_and_quiet_silences_them() {
    let f = project("services:\n  web:\n    image: alpine\n    ports: [\"8080:80\"]\n");
    let holos = || {
        let mut cmd = assert_cmd::Command::cargo_bin("holos").expect("holos binary");
        cmd.current_dir(f.path()).env_clear();
        cmd
    };
    let out = holos().arg("validate").output().expect("run");
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    let stderr =
        String::from_utf8_lossy(&out.stderr).replace(&f.path().display().to_string(), "DIR");
    assert_eq!(
        stderr,
        ">> DIR/holos.yaml:4: ports: a port without a host IP binds to 127.0.0.1, not to every address as in Docker Compose; write 0.0.0.0:HOST:GUEST to publish it on all addresses\n"
    );
    for quiet in ["-q", "--quiet"] {
        holos()
            .args(["validate", quiet])
            .assert()
            .success()
            .stdout("")
            .stderr("");
    }
}
