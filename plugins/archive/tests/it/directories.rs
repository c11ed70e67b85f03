//! The archive's own directory follows the same rule as `extract_parent`:
//! when it is missing, apply creates it with its parents (0755) and prints
//! `Created directory PATH`, then downloads into it from an HTTP server on
//! 127.0.0.1.

use crate::support;

use std::fs;
use std::os::unix::fs::PermissionsExt;

use support::{Format, Item, Root, Route, Server, build};

#[test]
fn a_missing_archive_directory_is_created_like_extract_parent() {
    let server = Server::start();
    let bytes = build(Format::Tar, &[Item::File("hello", b"hello\n", 0o644)]);
    let url = server.serve(
        "/app.tar",
        Route {
            body: bytes.clone(),
            ..Route::default()
        },
    );
    let root = Root::new(&format!(
        "[[archive]]\nname = \"/var/cache/app/app.tar\"\nurl = \"{url}\"\nowner = \"app\"\ngroup = \"app\"\nextract_parent = \"/srv/deep/app\"\n"
    ));
    assert!(!root.path("var").exists());
    let apply = root.op("apply", "archive:/var/cache/app/app.tar");
    assert!(apply.success, "{}", apply.all());
    assert!(
        apply
            .stdout
            .starts_with("Created directory /var/cache/app\nDownloaded http://127.0.0.1:"),
        "{}",
        apply.stdout
    );
    assert!(
        apply
            .stdout
            .contains("Created directory /srv/deep/app\nExtracted 1 entries"),
        "{}",
        apply.stdout
    );
    assert_eq!(
        fs::read(root.path("var/cache/app/app.tar")).expect("archive"),
        bytes
    );
    for dir in ["var/cache", "var/cache/app", "srv/deep/app"] {
        let mode = fs::metadata(root.path(dir))
            .expect("dir")
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o755, "{dir}");
    }
    assert_eq!(
        fs::read_to_string(root.path("srv/deep/app/hello")).expect("extracted"),
        "hello\n"
    );
}
