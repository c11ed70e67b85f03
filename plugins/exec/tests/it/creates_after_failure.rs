//! CCM's desired-state check for exec: an existing `creates` file is the
//! desired state, so a command that fails but creates it counts as
//! successful (with a line saying so); one that fails without creating it
//! fails, and one without `creates` fails on its exit code.

use test_support::escapes;

use std::fs;

use crate::support::run;

use escapes::{Escapes, write};

#[test]
fn a_failed_command_that_creates_its_file_counts_as_successful() {
    let escapes = Escapes::new();
    fs::create_dir_all(escapes.path("tmp/holo.1")).expect("cache");
    write(
        &escapes.path("usr/share/holo/exec/setup.toml"),
        r#"
[[exec]]
name = "creates-then-fails"
command = "sh -c 'touch installed.marker; exit 3'"
creates = "/installed.marker"

[[exec]]
name = "fails-without-creating"
command = "sh -c 'exit 3'"
creates = "/never.marker"

[[exec]]
name = "fails-without-creates"
command = "sh -c 'touch other.marker; exit 3'"
"#,
    );
    let scan = run(&escapes, &["scan"]);
    assert!(
        scan.status.success(),
        "{}",
        String::from_utf8_lossy(&scan.stderr)
    );

    let apply = run(&escapes, &["apply", "exec:creates-then-fails"]);
    let stdout = String::from_utf8_lossy(&apply.stdout);
    assert!(
        apply.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&apply.stderr)
    );
    assert!(
        stdout.contains("exited with code 3")
            && stdout.contains("creates /installed.marker exists, so the run counts as successful"),
        "{stdout}"
    );
    // The next run skips it: it converged.
    let again = run(&escapes, &["apply", "exec:creates-then-fails"]);
    assert!(again.status.success());
    assert_eq!(String::from_utf8_lossy(&again.stdout), "");

    for name in ["fails-without-creating", "fails-without-creates"] {
        let apply = run(&escapes, &["apply", &format!("exec:{name}")]);
        let stderr = String::from_utf8_lossy(&apply.stderr);
        assert!(!apply.status.success(), "{name}");
        assert!(stderr.contains("exited with code 3"), "{name}: {stderr}");
    }
}
