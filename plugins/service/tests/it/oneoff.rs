//! `holo-service ensure NAME --running --enable` and `status NAME` against
//! the test-mode systemctl stand-in.

use std::fs;
use std::path::PathBuf;
use std::process::Output;

fn root() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    fs::create_dir_all(root.join("etc/systemd/system")).expect("mkdir");
    fs::create_dir_all(dir.path().join("tmp")).expect("mkdir");
    fs::write(root.join("etc/systemd/system/nginx.service"), "[Service]\n").expect("unit");
    (dir, root)
}

fn run(root: &PathBuf, args: &[&str]) -> Output {
    std::process::Command::new(test_support::binary("holo-service"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOLO_ROOT_DIR", root)
        .env("TMPDIR", root.parent().expect("parent").join("tmp"))
        .output()
        .expect("run holo-service")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn ensure_starts_and_enables_then_status_shows_it() {
    let (dir, root) = root();
    let before = run(&root, &["status", "nginx"]);
    assert_eq!(
        text(&before.stdout),
        "[[service]]\nname = \"nginx\"\nenable = false\nensure = \"stopped\"\n"
    );
    let output = run(&root, &["ensure", "nginx", "--running", "--enable"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(
        text(&output.stdout),
        "\nWorking on service:nginx\n  found in holo-service ensure\n      with ensure: running, enable: true\n\nMOCK: systemctl start --system nginx\nMOCK: systemctl enable --system nginx\n\n"
    );
    let again = run(
        &root,
        &["ensure", "nginx", "--ensure", "running", "--enable=true"],
    );
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(text(&again.stdout), "");
    let after = run(&root, &["status", "nginx"]);
    assert_eq!(
        text(&after.stdout),
        "[[service]]\nname = \"nginx\"\nenable = true\nensure = \"running\"\n"
    );
    let stop = run(&root, &["ensure", "nginx", "--stopped", "--no-enable"]);
    assert_eq!(stop.status.code(), Some(0), "{}", text(&stop.stderr));
    assert!(text(&stop.stdout).contains("MOCK: systemctl stop --system nginx\n"));
    // The run directory below TMPDIR is gone.
    assert_eq!(
        fs::read_dir(dir.path().join("tmp")).expect("tmp").count(),
        0
    );
}

#[test]
fn an_unknown_service_fails_as_in_a_holo_run() {
    let (_dir, root) = root();
    let output = run(&root, &["ensure", "nope", "--running"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("service not found: nope"),
        "{}",
        text(&output.stderr)
    );
}
