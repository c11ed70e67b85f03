//! Test mode stays inside the root: holo-archive resolves the archive,
//! `extract_parent` and `creates` as if `HOLO_ROOT_DIR` were `/`, so
//! symlinks in the root (absolute, or relative and climbing with `..`)
//! never lead a download, an extraction or a cleanup outside it.

use crate::support;
use test_support::escapes;

use std::fs;
use std::path::Path;

use escapes::{Escapes, write};
use support::{Format, Item, Route, Server, build, sha256};

fn run(escapes: &Escapes, args: &[&str]) -> std::process::Output {
    escapes
        .plugin(assert_cmd::cargo::cargo_bin!("holo-archive"), "archive")
        .args(args)
        .output()
}

fn succeed(escapes: &Escapes, args: &[&str]) -> String {
    let output = run(escapes, args);
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

const ENTITIES: [&str; 2] = ["archive:/opt/app.tar.gz", "archive:/srv/up/two.tar.gz"];

#[test]
fn symlinks_in_the_root_never_lead_holo_archive_outside_it() {
    let server = Server::start();
    let bytes = build(
        Format::TarGz,
        &[
            Item::Dir("app/"),
            Item::Dir("app/bin/"),
            Item::File("app/bin/app", b"#!/bin/sh\necho app\n", 0o755),
            Item::File("app/README", b"read me\n", 0o644),
        ],
    );
    let url = server.serve(
        "/app.tar.gz",
        Route {
            body: bytes.clone(),
            ..Route::default()
        },
    );
    let sum = sha256(&bytes);

    let escapes = Escapes::new();
    let uid = nix::unistd::geteuid().as_raw();
    let gid = nix::unistd::getegid().as_raw();
    write(
        &escapes.path("etc/passwd"),
        &format!("app:x:{uid}:{gid}::/srv:/bin/sh\n"),
    );
    write(&escapes.path("etc/group"), &format!("app:x:{gid}:\n"));
    fs::create_dir_all(escapes.path("tmp/holo.1")).expect("cache");
    // opt -> /…/elsewhere: inside the root that is ROOT/…/elsewhere.
    escapes.link_elsewhere("opt");
    let counterpart = escapes.elsewhere_in_root();
    fs::create_dir_all(&counterpart).expect("mkdir");
    // srv/up -> ../../..: inside the root that climbs to ROOT itself.
    escapes.link("srv/up", Path::new("../../.."));
    // The host's elsewhere already has what `creates` names: followed on
    // the host, it would make the extraction look done.
    write(&escapes.elsewhere().join("app/bin/app"), "host app\n");
    write(
        &escapes.path("usr/share/holo/archive/archives.toml"),
        &format!(
            r#"
[[archive]]
name = "/opt/app.tar.gz"
url = "{url}"
owner = "app"
group = "app"
checksum = "{sum}"
extract_parent = "/opt"
creates = "/opt/app/bin/app"

[[archive]]
name = "/srv/up/two.tar.gz"
url = "{url}"
owner = "app"
group = "app"
checksum = "{sum}"
extract_parent = "/srv/up/x"
creates = "/srv/up/x/app/README"
cleanup = true
"#
        ),
    );
    let before = escapes.outside_the_root();

    succeed(&escapes, &["scan"]);
    for entity in ENTITIES {
        let stdout = succeed(&escapes, &["apply", entity]);
        assert!(stdout.contains("Extracted"), "{entity}: {stdout}");
    }
    assert_eq!(
        escapes.outside_the_root(),
        before,
        "nothing outside HOLO_ROOT_DIR changed"
    );
    assert_eq!(
        fs::read(counterpart.join("app.tar.gz")).expect("downloaded"),
        bytes
    );
    assert_eq!(
        fs::read_to_string(counterpart.join("app/README")).expect("extracted"),
        "read me\n"
    );
    assert_eq!(
        fs::read_to_string(escapes.path("x/app/README")).expect("extracted"),
        "read me\n"
    );
    assert!(
        !escapes.path("two.tar.gz").exists(),
        "cleaned up through srv/up"
    );

    // A second apply finds both stable through the same links.
    succeed(&escapes, &["scan"]);
    for entity in ENTITIES {
        let stdout = succeed(&escapes, &["apply", entity]);
        assert_eq!(stdout, "", "{entity} is stable");
    }
    assert_eq!(escapes.outside_the_root(), before);
}
