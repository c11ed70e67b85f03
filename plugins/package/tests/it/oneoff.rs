//! `holo-package ensure NAME` and `status NAME` against the test-mode mock.

use std::fs;
use std::path::PathBuf;
use std::process::Output;

fn root() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    fs::create_dir_all(root.join("var/lib/apt/lists")).expect("mkdir");
    fs::create_dir_all(root.join("var/lib/holo-mock")).expect("mkdir");
    fs::create_dir_all(dir.path().join("tmp")).expect("mkdir");
    fs::create_dir_all(root.join("etc")).expect("mkdir");
    fs::write(root.join("etc/os-release"), "ID=debian\n").expect("os-release");
    fs::write(
        root.join("var/lib/holo-mock/packages.toml"),
        "[[installed]]\nname = \"vim\"\nversion = \"2:9.0-1\"\narch = \"amd64\"\n\n[[available]]\nname = \"nginx\"\nversions = [\"1.22-1\", \"1.24-1\"]\n",
    )
    .expect("mock database");
    (dir, root)
}

fn run(root: &PathBuf, args: &[&str]) -> Output {
    std::process::Command::new(test_support::binary("holo-package"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOLO_ROOT_DIR", root)
        .env("TMPDIR", root.parent().expect("parent").join("tmp"))
        .output()
        .expect("run holo-package")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn ensure_installs_a_version_as_holo_apply_would() {
    let (_dir, root) = root();
    let output = run(&root, &["ensure", "nginx", "--version", "1.24-1"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(
        text(&output.stdout),
        "\nWorking on package:nginx\n  found in holo-package ensure\n      with ensure: 1.24-1, provider: apt\n   current not installed\n\nMOCK: apt-get install -y -q -o DPkg::Options::=--force-confold --allow-downgrades nginx=1.24-1\n\n"
    );
    let again = run(&root, &["ensure", "nginx", "--ensure", "1.24-1"]);
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(text(&again.stdout), "");
    let status = run(&root, &["status", "nginx"]);
    assert_eq!(
        text(&status.stdout),
        "[[package]]\nname = \"nginx\"\nensure = \"1.24-1\"\n"
    );
}

#[test]
fn status_gives_the_installed_version_or_absent() {
    let (_dir, root) = root();
    let vim = run(&root, &["status", "vim"]);
    assert_eq!(vim.status.code(), Some(0), "{}", text(&vim.stderr));
    assert_eq!(
        text(&vim.stdout),
        "[[package]]\nname = \"vim\"\nensure = \"2:9.0-1\"\n"
    );
    let none = run(&root, &["status", "nginx"]);
    assert_eq!(
        text(&none.stdout),
        "[[package]]\nname = \"nginx\"\nensure = \"absent\"\n"
    );
}

#[test]
fn a_bad_value_gets_the_message_of_the_table() {
    let (_dir, root) = root();
    let output = run(&root, &["ensure", "vim", "--ensure", "lastest"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stderr),
        "!! holo-package ensure: package \"vim\": ensure = \"lastest\" is not known (did you mean \"latest\"?); use \"present\", \"absent\", \"latest\" or a version\n"
    );
    let removed = run(&root, &["ensure", "vim", "--ensure", "absent", "--noop"]);
    assert_eq!(removed.status.code(), Some(2), "{}", text(&removed.stderr));
    let database = fs::read_to_string(root.join("var/lib/holo-mock/packages.toml")).expect("db");
    assert!(database.contains("name = \"vim\""));
}
