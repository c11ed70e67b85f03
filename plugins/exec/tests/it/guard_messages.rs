//! Messages about `timeout` and the `onlyif`/`unless_command` checks, from
//! `holo-exec scan` and `holo-exec apply ENTITY` in test mode.

use std::fs;

use crate::support::run;
use test_support::escapes::{Escapes, write};

#[test]
fn a_zero_timeout_points_at_its_line_and_says_it_must_be_positive() {
    let escapes = Escapes::new();
    let file = escapes.path("usr/share/holo/exec/10-zero.toml");
    write(
        &file,
        "\n[[exec]]\nname = \"zero\"\ncommand = \"true\"\ntimeout = \"0s\"\n",
    );
    let scan = run(&escapes, &["scan"]);
    assert_eq!(
        String::from_utf8_lossy(&scan.stderr),
        format!(
            "!! {}:5: exec \"zero\": timeout \"0s\" must be positive; write it like \"30s\" or \"5m\", or leave it out for no limit\n",
            file.display()
        )
    );
    assert!(!scan.status.success());
}

#[test]
fn an_unless_command_with_a_syntax_error_is_warned_about_with_its_stderr() {
    let escapes = Escapes::new();
    fs::create_dir_all(escapes.path("tmp/holo.1")).unwrap();
    write(
        &escapes.path("usr/share/holo/exec/10-guard.toml"),
        "[[exec]]\nname = \"guarded\"\nprovider = \"shell\"\ncommand = \"touch ran.marker\"\nunless_command = \"if then\"\n",
    );
    let scan = run(&escapes, &["scan"]);
    assert!(
        scan.status.success(),
        "{}",
        String::from_utf8_lossy(&scan.stderr)
    );
    let apply = run(&escapes, &["apply", "exec:guarded"]);
    let stderr = String::from_utf8_lossy(&apply.stderr);
    assert!(
        stderr.starts_with(
            ">> unless_command \"if then\" could not run (exit code 2: a syntax or usage error, or not executable or not found); it counts as failing, so the command runs; fix the check\n>>     "
        ),
        "{stderr}"
    );
    assert!(stderr.to_lowercase().contains("syntax error"), "{stderr}");
    assert!(escapes.path("ran.marker").exists());
}
