//! `holo-service ensure NAME --running --enable` and `status NAME` against
//! the test-mode systemctl stand-in.

use std::fs;

use test_support::oneoff::{OneOffRoot, text};

fn root() -> OneOffRoot {
    let root = OneOffRoot::new("holo-service");
    root.write("etc/systemd/system/nginx.service", "[Service]\n");
    root
}

#[test]
fn ensure_starts_and_enables_then_status_shows_it() {
    let root = root();
    let before = root.run(&["status", "nginx"]);
    assert_eq!(
        text(&before.stdout),
        "[[service]]\nname = \"nginx\"\nenable = false\nensure = \"stopped\"\n"
    );
    let output = root.run(&["ensure", "nginx", "--running", "--enable"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(
        text(&output.stdout),
        "\nWorking on service:nginx\n  found in holo-service ensure\n      with ensure: running, enable: true\n\nMOCK: systemctl start --system nginx\nMOCK: systemctl enable --system nginx\n\n"
    );
    let again = root.run(&["ensure", "nginx", "--ensure", "running", "--enable=true"]);
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(text(&again.stdout), "");
    let after = root.run(&["status", "nginx"]);
    assert_eq!(
        text(&after.stdout),
        "[[service]]\nname = \"nginx\"\nenable = true\nensure = \"running\"\n"
    );
    let stop = root.run(&["ensure", "nginx", "--stopped", "--no-enable"]);
    assert_eq!(stop.status.code(), Some(0), "{}", text(&stop.stderr));
    assert!(text(&stop.stdout).contains("MOCK: systemctl stop --system nginx\n"));
    // The run directory below TMPDIR is gone.
    assert_eq!(fs::read_dir(root.tmp()).expect("tmp").count(), 0);
}

#[test]
fn an_unknown_service_fails_as_in_a_holo_run() {
    let root = root();
    let output = root.run(&["ensure", "nope", "--running"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("service not found: nope"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn a_switch_with_a_separate_value_is_named() {
    let root = root();
    let output = root.run(&["ensure", "nginx", "--enable", "maybe"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stderr),
        "!! holo-service ensure: --enable is a switch and takes no separate value (\"maybe\" follows it); write --enable, --enable=true or --enable=false\n"
    );
}
