//! `holo-archive ensure PATH --url URL ...`: one archive from flags, against
//! an HTTP server on 127.0.0.1, as `holo apply` converges the same table.

use crate::support::{Format, Item, Root, Route, Server, build, sha256};

#[test]
fn ensure_downloads_and_extracts_once() {
    let server = Server::start();
    let bytes = build(
        Format::TarGz,
        &[
            Item::Dir("app/"),
            Item::File("app/run", b"#!/bin/sh\n", 0o755),
        ],
    );
    let url = server.serve(
        "/app.tar.gz",
        Route {
            body: bytes.clone(),
            ..Route::default()
        },
    );
    let root = Root::new("");
    let sum = sha256(&bytes);
    let args = [
        "ensure",
        "/opt/app.tar.gz",
        "--url",
        &url,
        "--checksum",
        &sum,
        "--extract-parent",
        "/opt",
        "--creates",
        "/opt/app/run",
        "--owner",
        "app",
        "--group",
        "app",
    ];
    let run = |args: &[&str]| {
        root.command(args)
            .env("TMPDIR", root.path("tmp"))
            .output()
            .expect("run holo-archive")
    };
    let first = run(&args);
    let stdout = String::from_utf8_lossy(&first.stdout);
    assert_eq!(
        first.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(
        stdout
            .starts_with("\nWorking on archive:/opt/app.tar.gz\n  found in holo-archive ensure\n"),
        "{stdout}"
    );
    assert!(root.path("opt/app/run").is_file());
    assert_eq!(server.count("/app.tar.gz"), 1);
    let second = run(&args);
    assert_eq!(second.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&second.stdout), "");
    assert_eq!(server.count("/app.tar.gz"), 1);
    let status = run(&["status", "/opt/app.tar.gz"]);
    assert_eq!(status.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&status.stderr),
        "!! holo-archive has no status: what it leaves on the system cannot be read back into a [[archive]] table\n"
    );
}
