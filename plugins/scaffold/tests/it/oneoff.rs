//! `holo-scaffold ensure DIR --source TEMPLATES --data '{...}'`: one
//! scaffold from flags, rendered as `holo apply` renders the same table.

use std::fs;
use std::path::PathBuf;
use std::process::Output;

fn root() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    fs::create_dir_all(root.join("srv/templates")).expect("mkdir");
    fs::create_dir_all(dir.path().join("tmp")).expect("mkdir");
    fs::write(
        root.join("srv/templates/app.conf"),
        "port {{ data.port }}\n",
    )
    .expect("template");
    (dir, root)
}

fn run(root: &PathBuf, args: &[&str]) -> Output {
    std::process::Command::new(test_support::binary("holo-scaffold"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOLO_ROOT_DIR", root)
        .env("TMPDIR", root.parent().expect("parent").join("tmp"))
        .output()
        .expect("run holo-scaffold")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn ensure_renders_with_table_data_once() {
    let (_dir, root) = root();
    let args = [
        "ensure",
        "/etc/app",
        "--source",
        "/srv/templates",
        "--data",
        "{ port = 8080 }",
    ];
    let first = run(&root, &args);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    assert!(
        text(&first.stdout)
            .starts_with("\nWorking on scaffold:/etc/app\n  found in holo-scaffold ensure\n"),
        "{}",
        text(&first.stdout)
    );
    assert_eq!(
        fs::read_to_string(root.join("etc/app/app.conf")).expect("rendered"),
        "port 8080\n"
    );
    let second = run(&root, &args);
    assert_eq!(second.status.code(), Some(0));
    assert_eq!(text(&second.stdout), "");
    let absent = run(
        &root,
        &[
            "ensure",
            "/etc/app",
            "--source",
            "/srv/templates",
            "--data",
            "{ port = 8080 }",
            "--absent",
        ],
    );
    assert_eq!(absent.status.code(), Some(0), "{}", text(&absent.stderr));
    assert!(!root.join("etc/app/app.conf").exists());
}

#[test]
fn a_relative_source_is_named_as_given() {
    let (_dir, root) = root();
    let output = run(&root, &["ensure", "/etc/app", "--source", "templates"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(
        stderr.starts_with(
            "!! holo-scaffold ensure: scaffold \"/etc/app\": source templates is not a directory"
        ),
        "{stderr}"
    );
}
