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
    assert_eq!(
        status.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&status.stdout),
        format!(
            "[[archive]]\nname = \"/opt/app.tar.gz\"\n# creates /opt/app/run exists\nchecksum = \"{sum}\"\ncreates = \"/opt/app/run\"\nensure = \"present\"\nextract_parent = \"/opt\"\ngroup = \"app\"\nowner = \"app\"\nurl = \"{url}\"\n"
        )
    );
}

fn served(server: &Server) -> (String, String) {
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
    (url, sha256(&bytes))
}

fn output(root: &Root, args: &[&str]) -> (Option<i32>, String, String) {
    let output = root
        .command(args)
        .env("TMPDIR", root.path("tmp"))
        .output()
        .expect("run holo-archive");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn status_of_a_cleaned_up_archive_says_cleanup() {
    let server = Server::start();
    let (url, _) = served(&server);
    let root = Root::new("");
    let (code, _, stderr) = output(
        &root,
        &[
            "ensure",
            "/opt/app.tar.gz",
            "--url",
            &url,
            "--extract-parent",
            "/opt",
            "--creates",
            "/opt/app/run",
            "--cleanup",
            "--owner",
            "app",
            "--group",
            "app",
            "--timeout",
            "30s",
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!root.path("opt/app.tar.gz").exists());
    let (code, stdout, stderr) = output(&root, &["status", "/opt/app.tar.gz"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        stdout,
        format!(
            "[[archive]]\nname = \"/opt/app.tar.gz\"\n# the archive is gone and what it created is there, which only cleanup = true leaves\n# creates /opt/app/run exists\ncleanup = true\ncreates = \"/opt/app/run\"\nensure = \"present\"\nextract_parent = \"/opt\"\ngroup = \"app\"\nowner = \"app\"\ntimeout = \"30s\"\nurl = \"{url}\"\n"
        )
    );
}

#[test]
fn status_never_shows_credentials_and_asks_for_them() {
    let server = Server::start();
    let (url, sum) = served(&server);
    let secret_url = server.serve(
        "/app.tar.gz?signature=s3cr3t-query",
        Route {
            body: build(
                Format::TarGz,
                &[
                    Item::Dir("app/"),
                    Item::File("app/run", b"#!/bin/sh\n", 0o755),
                ],
            ),
            ..Route::default()
        },
    );
    let root = Root::new("");
    let (code, _, stderr) = output(
        &root,
        &[
            "ensure",
            "/opt/app.tar.gz",
            "--url",
            &secret_url,
            "--username",
            "deploy",
            "--password",
            "s3cr3t-pw",
            "--headers",
            "{ X-Token = \"s3cr3t-token\" }",
            "--owner",
            "app",
            "--group",
            "app",
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let (code, stdout, _) = output(&root, &["status", "/opt/app.tar.gz"]);
    assert_eq!(code, Some(3), "{stdout}");
    assert!(!stdout.contains("s3cr3t"), "{stdout}");
    assert_eq!(
        stdout,
        format!(
            "[[archive]]\nname = \"/opt/app.tar.gz\"\n# whether the archive was extracted, and where, is not recorded: add extract_parent and creates if it is to be\n# url: recorded as {url}?***, without its credentials and query string, which are never written down; fill in the whole URL\n# password: a credential, never written down; fill it in\n# headers: the values of X-Token may be credentials and are never written down; fill them in\nchecksum = \"{sum}\"\nensure = \"present\"\ngroup = \"app\"\nowner = \"app\"\nusername = \"deploy\"\n"
        )
    );
    for file in root.tree() {
        let text = std::fs::read(root.path(&file)).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&text).contains("s3cr3t"),
            "{file} holds a credential"
        );
    }
}

#[test]
fn status_without_a_record_reads_the_disk_and_asks_for_the_rest() {
    let root = Root::new("");
    root.write("opt/found.tar", "not really a tar\n");
    let (code, stdout, stderr) = output(&root, &["status", "/opt/found.tar"]);
    assert_eq!(code, Some(3), "{stderr}");
    assert_eq!(
        stdout,
        format!(
            "[[archive]]\nname = \"/opt/found.tar\"\n# whether the archive was extracted, and where, is not recorded: add extract_parent and creates if it is to be\n# url: holo-archive has no record of where /opt/found.tar comes from; fill in the URL it is downloaded from\nchecksum = \"{}\"\nensure = \"present\"\ngroup = \"app\"\nowner = \"app\"\n",
            sha256(b"not really a tar\n")
        )
    );
    let (code, stdout, _) = output(&root, &["status", "/opt/none.zip"]);
    assert_eq!(code, Some(3));
    assert_eq!(
        stdout,
        "[[archive]]\nname = \"/opt/none.zip\"\n# url: holo-archive has no record of where /opt/none.zip comes from; fill in the URL it is downloaded from\n# owner: required, and nothing on disk or in a record gives it; fill in a name or a numeric id\n# group: required, and nothing on disk or in a record gives it; fill in a name or a numeric id\nensure = \"absent\"\n"
    );
    let (code, _, stderr) = output(&root, &["status", "opt/relative.tar"]);
    assert_eq!(code, Some(1));
    assert!(
        stderr.starts_with("!! holo-archive status: name \"opt/relative.tar\" must be an absolute"),
        "{stderr}"
    );
}
