//! A failed download leaves no record: `holo-archive status` then says
//! what is on disk (nothing) and invents no history of an archive that
//! was present or an extraction that did not finish.

use crate::support;

use support::{Format, Item, Root, Route, Server, build, sha256};

const ENTITY: &str = "archive:/opt/app.tar.gz";

fn resource(url: &str, extra: &str) -> String {
    format!(
        "[[archive]]\nname = \"/opt/app.tar.gz\"\nurl = \"{url}\"\nowner = \"app\"\ngroup = \"app\"\nextract_parent = \"/opt\"\ncreates = \"/opt/app/run\"\n{extra}"
    )
}

/// Applies, expects `failure` in stderr, then checks that no state
/// record was written and that status reads as for an archive never seen.
fn assert_failed_without_a_record(root: &Root, failure: &str) {
    let apply = root.op("apply", ENTITY);
    assert!(!apply.success, "{}", apply.all());
    assert!(apply.stderr.contains(failure), "{}", apply.stderr);
    let state = root.path("var/lib/holo");
    let records: Vec<String> = walk_names(&state);
    assert!(
        !records.iter().any(|name| name.contains("app.tar.gz")),
        "a failed download wrote a record: {records:?}"
    );
    let status = root.run(&["status", "/opt/app.tar.gz"]);
    assert_eq!(
        status.stdout,
        "[[archive]]\nname = \"/opt/app.tar.gz\"\n# url: holo-archive has no record of where /opt/app.tar.gz comes from; fill in the URL it is downloaded from\n# owner: required, and nothing on disk or in a record gives it; fill in a name or a numeric id\n# group: required, and nothing on disk or in a record gives it; fill in a name or a numeric id\nensure = \"absent\"\n",
        "{}",
        status.stderr
    );
}

fn walk_names(dir: &std::path::Path) -> Vec<String> {
    let mut names = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            names.push(entry.path().display().to_string());
            names.extend(walk_names(&entry.path()));
        }
    }
    names
}

#[test]
fn a_404_leaves_no_record_and_status_invents_no_history() {
    let server = Server::start();
    let root = Root::new(&resource(&format!("{}/missing.tar.gz", server.base), ""));
    assert_failed_without_a_record(&root, "404 Not Found");
}

#[test]
fn a_checksum_mismatch_leaves_no_record_and_status_invents_no_history() {
    let server = Server::start();
    let url = server.serve(
        "/app.tar.gz",
        Route {
            body: build(Format::TarGz, &[Item::File("app/run", b"run\n", 0o755)]),
            ..Route::default()
        },
    );
    let wanted = sha256(b"the release we expect");
    let root = Root::new(&resource(&url, &format!("checksum = \"{wanted}\"\n")));
    assert_failed_without_a_record(&root, "checksum mismatch");
}

#[test]
fn a_short_body_says_how_many_bytes_came_and_leaves_no_record() {
    let server = Server::start();
    let url = server.serve(
        "/app.tar.gz",
        Route {
            body: vec![b'x'; 100],
            declared_length: Some(1000),
            ..Route::default()
        },
    );
    let root = Root::new(&resource(&url, ""));
    assert_failed_without_a_record(
        &root,
        "the server closed the connection after 100 of 1000 bytes",
    );
}
