//! holo-archive end to end: the real binary in test mode against an HTTP
//! server on 127.0.0.1 started by each test, with archives built in the
//! test. Covers the decision matrix rows, checksums, HTTP errors, basic auth
//! and headers, creates and cleanup, ensure = absent, diff, redaction, and
//! hostile archive entries in every format.

use crate::support;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

use support::{Format, Item, Root, Route, Server, build, sha256};

const ENTITY: &str = "archive:/opt/app.tar.gz";

fn app_archive() -> Vec<u8> {
    build(
        Format::TarGz,
        &[
            Item::Dir("app/"),
            Item::Dir("app/bin/"),
            Item::File("app/bin/app", b"#!/bin/sh\necho app\n", 0o755),
            Item::File("app/README", b"read me\n", 0o644),
            Item::Symlink("app/current", "bin/app"),
        ],
    )
}

fn resource(url: &str, extra: &str) -> String {
    format!(
        "[[archive]]\nname = \"/opt/app.tar.gz\"\nurl = \"{url}\"\nowner = \"app\"\ngroup = \"app\"\n{extra}"
    )
}

/// Serves the app archive; returns server, root and the archive bytes.
fn setup(extra: &str) -> (Server, Root, Vec<u8>) {
    let server = Server::start();
    let bytes = app_archive();
    let url = server.serve(
        "/releases/app.tar.gz",
        Route {
            body: bytes.clone(),
            ..Route::default()
        },
    );
    let extra = extra.replace("SUM", &sha256(&bytes));
    let root = Root::new(&resource(&url, &extra));
    (server, root, bytes)
}

const EXTRACTED: &str =
    "checksum = \"SUM\"\nextract_parent = \"/opt\"\ncreates = \"/opt/app/bin/app\"\n";

fn assert_changed(run: &support::Run) {
    assert!(run.success, "failed: {}{}", run.stdout, run.stderr);
    assert!(!run.fd3.contains("not changed"), "{}", run.fd3);
}

fn assert_not_changed(run: &support::Run) {
    assert!(run.success, "failed: {}{}", run.stdout, run.stderr);
    assert_eq!(run.fd3, "not changed\n", "{}", run.stdout);
    assert_eq!(run.stdout, "");
}

#[test]
fn row_nothing_there_downloads_and_extracts_then_is_stable() {
    let (server, root, bytes) = setup(EXTRACTED);
    // What a killed run left: a staging directory and a partial download.
    root.write("opt/.holo-archive-AbC123/half", "half");
    root.write("opt/.app.tar.gz-Xy9876", "partial");
    let noop = root.op("noop", ENTITY);
    assert_eq!(noop.stdout, "Would have downloaded. Would have extracted\n");
    assert!(
        !root.path("opt/app.tar.gz").exists(),
        "noop changes nothing"
    );
    assert_eq!(server.requests().len(), 0, "noop downloads nothing");

    let apply = root.op("apply", ENTITY);
    assert_changed(&apply);
    assert!(apply.stdout.contains("Downloaded"), "{}", apply.stdout);
    assert!(apply.stdout.contains("into /opt"), "{}", apply.stdout);
    assert_eq!(
        fs::read(root.path("opt/app.tar.gz")).expect("archive"),
        bytes
    );
    let meta = fs::metadata(root.path("opt/app.tar.gz")).expect("meta");
    assert_eq!(meta.uid(), nix::unistd::geteuid().as_raw());
    assert_eq!(
        fs::read_to_string(root.path("opt/app/bin/app")).expect("app"),
        "#!/bin/sh\necho app\n"
    );
    let mode = fs::metadata(root.path("opt/app/bin/app"))
        .expect("meta")
        .mode();
    assert_eq!(mode & 0o7777, 0o755);
    assert_eq!(
        fs::read_link(root.path("opt/app/current")).expect("link"),
        std::path::Path::new("bin/app")
    );
    let names: Vec<String> = fs::read_dir(root.path("opt"))
        .expect("list")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert!(
        names.iter().all(|name| !name.starts_with('.')),
        "no temp or staging left: {names:?}"
    );
    let records: Vec<_> = fs::read_dir(root.path("var/lib/holo/archive"))
        .expect("state directory")
        .map(|entry| entry.expect("entry").path())
        .collect();
    assert_eq!(records.len(), 1, "{records:?}");
    let record = fs::read_to_string(&records[0]).expect("record");
    assert!(record.contains(&sha256(&bytes)), "{record}");

    // Row: archive and creates exist, checksum matches → stable.
    assert_not_changed(&root.op("apply", ENTITY));
    assert_not_changed(&root.op("noop", ENTITY));
    assert_eq!(
        server.requests().len(),
        1,
        "a stable archive is not fetched again"
    );
}

#[test]
fn row_archive_present_creates_missing_extracts_without_downloading() {
    let (server, root, _) = setup(EXTRACTED);
    assert_changed(&root.op("apply", ENTITY));
    fs::remove_dir_all(root.path("opt/app")).expect("remove extracted");
    let noop = root.op("noop", ENTITY);
    assert_eq!(noop.stdout, "Would have extracted\n");
    let apply = root.op("apply", ENTITY);
    assert_changed(&apply);
    assert!(!apply.stdout.contains("Downloaded"), "{}", apply.stdout);
    assert!(root.path("opt/app/bin/app").is_file());
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn row_cleanup_removes_the_archive_and_creates_keeps_it_stable() {
    let (server, root, _) = setup(&format!("{EXTRACTED}cleanup = true\n"));
    let apply = root.op("apply", ENTITY);
    assert_changed(&apply);
    assert!(
        apply.stdout.contains("Cleaned up /opt/app.tar.gz"),
        "{}",
        apply.stdout
    );
    assert!(!root.path("opt/app.tar.gz").exists());
    assert!(root.path("opt/app/bin/app").is_file());
    // Row: no archive, creates exists, cleanup → stable.
    assert_not_changed(&root.op("apply", ENTITY));
    // Row: archive and creates exist, cleanup → clean up only.
    fs::write(root.path("opt/app.tar.gz"), b"left over").expect("left over");
    assert_eq!(root.op("noop", ENTITY).stdout, "Would have cleaned up\n");
    assert_changed(&root.op("apply", ENTITY));
    assert!(!root.path("opt/app.tar.gz").exists());
    assert_eq!(server.requests().len(), 1);
}

/// Applies, disturbs the result with `change`, and checks that noop and
/// apply download and extract again.
fn assert_fetched_again(change: impl FnOnce(&Root)) -> Root {
    let (server, root, bytes) = setup(EXTRACTED);
    assert_changed(&root.op("apply", ENTITY));
    change(&root);
    assert_eq!(
        root.op("noop", ENTITY).stdout,
        "Would have downloaded. Would have extracted\n"
    );
    assert_changed(&root.op("apply", ENTITY));
    assert_eq!(
        fs::read(root.path("opt/app.tar.gz")).expect("archive"),
        bytes
    );
    assert_eq!(server.requests().len(), 2);
    root
}

#[test]
fn row_archive_missing_without_cleanup_downloads_again() {
    assert_fetched_again(|root| {
        fs::remove_file(root.path("opt/app.tar.gz")).expect("remove archive")
    });
}

#[test]
fn row_checksum_mismatch_on_disk_downloads_again() {
    assert_fetched_again(|root| {
        fs::write(root.path("opt/app.tar.gz"), b"tampered").expect("tamper")
    });
}

#[test]
#[ignore = "needs root"]
fn row_owner_mismatch_downloads_again_with_the_owner() {
    test_support::require_root("changing an owner");
    let root = assert_fetched_again(|root| {
        std::os::unix::fs::chown(root.path("opt/app.tar.gz"), Some(4321), Some(4321))
            .expect("chown")
    });
    let meta = fs::metadata(root.path("opt/app.tar.gz")).expect("meta");
    assert_eq!(meta.uid(), nix::unistd::geteuid().as_raw());
}

#[test]
fn download_only_without_extract_parent() {
    let (_server, root, bytes) = setup("checksum = \"SUM\"\n");
    assert_eq!(root.op("noop", ENTITY).stdout, "Would have downloaded\n");
    assert_changed(&root.op("apply", ENTITY));
    assert_eq!(
        fs::read(root.path("opt/app.tar.gz")).expect("archive"),
        bytes
    );
    assert!(!root.path("opt/app").exists());
    assert_not_changed(&root.op("apply", ENTITY));
}

#[test]
fn server_checksum_mismatch_keeps_the_old_file_and_names_both_sums() {
    let server = Server::start();
    let served = app_archive();
    let url = server.serve(
        "/app.tar.gz",
        Route {
            body: served.clone(),
            ..Route::default()
        },
    );
    let wanted = sha256(b"the release we expect");
    let root = Root::new(&resource(&url, &format!("checksum = \"{wanted}\"\n")));
    root.write("opt/app.tar.gz", "old archive");
    let apply = root.op("apply", ENTITY);
    assert!(!apply.success);
    assert!(
        apply.stderr.contains("checksum mismatch"),
        "{}",
        apply.stderr
    );
    assert!(apply.stderr.contains(&wanted), "{}", apply.stderr);
    assert!(apply.stderr.contains(&sha256(&served)), "{}", apply.stderr);
    assert_eq!(
        fs::read_to_string(root.path("opt/app.tar.gz")).expect("old"),
        "old archive"
    );
    let names: Vec<_> = fs::read_dir(root.path("opt")).expect("list").collect();
    assert_eq!(names.len(), 1, "the temp file is removed");
}

#[test]
fn not_found_is_an_error_quoting_the_status() {
    let server = Server::start();
    let root = Root::new(&resource(&format!("{}/missing.tar.gz", server.base), ""));
    let apply = root.op("apply", ENTITY);
    assert!(!apply.success);
    assert!(apply.stderr.contains("404 Not Found"), "{}", apply.stderr);
    assert!(apply.stderr.contains(ENTITY), "{}", apply.stderr);
    assert!(!root.path("opt/app.tar.gz").exists());
}

const PASSWORD: &str = "hunter2-Pa55";
const TOKEN: &str = "tok-9f8e7d6c";

fn secret_route(body: Vec<u8>) -> Route {
    Route {
        body,
        basic: Some(("deploy".into(), PASSWORD.into())),
        header: Some(("X-Release-Token".into(), TOKEN.into())),
        ..Route::default()
    }
}

/// No secret in any output, nor in any file below the root other than the
/// resource that declares it (the scan cache and diff files are below it too).
fn assert_no_secrets(root: &Root, outputs: &[&support::Run]) {
    let encoded = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        format!("deploy:{PASSWORD}"),
    );
    for run in outputs {
        for secret in [PASSWORD, TOKEN, encoded.as_str()] {
            assert!(
                !run.all().contains(secret),
                "secret in output: {}",
                run.all()
            );
        }
    }
    for relative in root.tree() {
        if relative == "usr/share/holo/archive/archives.toml" {
            continue;
        }
        let path = root.path(&relative);
        if !path.is_file() {
            continue;
        }
        let bytes = fs::read(&path).expect("read");
        let text = String::from_utf8_lossy(&bytes);
        for secret in [PASSWORD, TOKEN, encoded.as_str()] {
            assert!(!text.contains(secret), "secret in {relative}");
        }
    }
}

#[test]
fn basic_auth_and_header_are_sent_and_never_shown() {
    let server = Server::start();
    let bytes = app_archive();
    let url = server.serve("/private/app.tar.gz", secret_route(bytes.clone()));
    let extra = format!(
        "username = \"deploy\"\npassword = \"{PASSWORD}\"\nheaders = {{ X-Release-Token = \"{TOKEN}\" }}\n{}",
        EXTRACTED.replace("SUM", &sha256(&bytes))
    );
    let root = Root::new(&resource(&url, &extra));
    let scan = root.run(&["scan"]);
    assert!(scan.stdout.contains("auth: basic"), "{}", scan.stdout);
    assert!(
        scan.stdout.contains("headers: X-Release-Token"),
        "{}",
        scan.stdout
    );
    let noop = root.run(&["noop", ENTITY]);
    let diff = root.run(&["diff", ENTITY]);
    let apply = root.run(&["apply", ENTITY]);
    assert_changed(&apply);
    assert!(root.path("opt/app/bin/app").is_file());
    let seen = server.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].headers.get("x-release-token").map(String::as_str),
        Some(TOKEN)
    );

    // A wrong password: the 401 is quoted, the password is not.
    root.set_resources(&resource(&url, &extra.replace(PASSWORD, "wrong-Pa55")));
    fs::remove_file(root.path("opt/app.tar.gz")).expect("remove");
    let denied = root.op("apply", ENTITY);
    assert!(!denied.success);
    assert!(
        denied.stderr.contains("401 Unauthorized"),
        "{}",
        denied.stderr
    );
    assert!(!denied.all().contains("wrong-Pa55"), "{}", denied.all());
    root.set_resources(&resource(&url, &extra));
    assert_no_secrets(&root, &[&scan, &noop, &diff, &apply, &denied]);
}

#[test]
fn url_userinfo_is_used_and_redacted() {
    let server = Server::start();
    let bytes = app_archive();
    let url = server.serve(
        "/private/app.tar.gz",
        Route {
            body: bytes.clone(),
            basic: Some(("deploy".into(), PASSWORD.into())),
            header: None,
            ..Route::default()
        },
    );
    let url = url.replace("http://", &format!("http://deploy:{PASSWORD}@"));
    let root = Root::new(&resource(&url, ""));
    let scan = root.run(&["scan"]);
    assert!(
        scan.stdout.contains("url: http://***@127.0.0.1"),
        "{}",
        scan.stdout
    );
    let apply = root.run(&["apply", ENTITY]);
    assert_changed(&apply);
    assert_eq!(
        fs::read(root.path("opt/app.tar.gz")).expect("archive"),
        bytes
    );
    let diff = root.run(&["diff", ENTITY]);
    assert_no_secrets(&root, &[&scan, &apply, &diff]);
}

#[test]
fn ensure_absent_removes_the_archive() {
    let server = Server::start();
    let root = Root::new(&resource(
        &format!("{}/app.tar.gz", server.base),
        "ensure = \"absent\"\n",
    ));
    root.write("opt/app.tar.gz", "old");
    assert_eq!(root.op("noop", ENTITY).stdout, "Would have removed\n");
    assert!(root.path("opt/app.tar.gz").exists());
    let apply = root.op("apply", ENTITY);
    assert_changed(&apply);
    assert_eq!(apply.stdout, "Removed /opt/app.tar.gz\n");
    assert!(!root.path("opt/app.tar.gz").exists());
    assert_not_changed(&root.op("apply", ENTITY));
    assert_eq!(server.requests().len(), 0);
}

#[test]
fn diff_shows_desired_and_current_state_as_toml() {
    let (_server, root, bytes) = setup(EXTRACTED);
    let diff = root.op("diff", ENTITY);
    assert!(diff.success, "{}", diff.stderr);
    let paths: Vec<&str> = diff.fd3.split('\0').filter(|p| !p.is_empty()).collect();
    assert_eq!(paths.len(), 2, "{:?}", diff.fd3);
    let desired = fs::read_to_string(paths[0]).expect("desired");
    let current = fs::read_to_string(paths[1]).expect("current");
    assert!(desired.contains("[archive]"), "{desired}");
    assert!(
        desired.contains(&format!("checksum = \"{}\"", sha256(&bytes))),
        "{desired}"
    );
    assert!(
        desired.contains("exists = true") && desired.contains("owner = \"app\""),
        "{desired}"
    );
    assert!(desired.contains("creates_exists = true"), "{desired}");
    assert!(
        current.contains("exists = false") && current.contains("creates_exists = false"),
        "{current}"
    );
    assert_changed(&root.op("apply", ENTITY));
    let clean = root.op("diff", ENTITY);
    assert!(
        clean.success && clean.fd3.is_empty(),
        "no diff when applied: {:?}",
        clean.fd3
    );
}

#[test]
fn setuid_bits_are_dropped() {
    let server = Server::start();
    let bytes = build(
        Format::TarGz,
        &[
            Item::File("tool", b"x", 0o4755),
            Item::File("marker", b"", 0o644),
        ],
    );
    let url = server.serve(
        "/app.tar.gz",
        Route {
            body: bytes,
            ..Route::default()
        },
    );
    let root = Root::new(&resource(
        &url,
        "extract_parent = \"/opt/tool\"\ncreates = \"/opt/tool/marker\"\n",
    ));
    assert_changed(&root.op("apply", ENTITY));
    let mode = fs::metadata(root.path("opt/tool/tool"))
        .expect("meta")
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777, 0o755);
}

#[test]
fn invalid_resources_name_the_file_and_line() {
    let root = Root::new(
        "[[archive]]\nname = \"/opt/app.tar.gz\"\nurl = \"https://h/app.zip\"\nowner = \"app\"\ngroup = \"app\"\n",
    );
    let scan = root.run(&["scan"]);
    assert!(!scan.success);
    assert!(scan.stderr.contains("archives.toml:1:"), "{}", scan.stderr);
    assert!(scan.stderr.contains("same type"), "{}", scan.stderr);
}

#[test]
fn a_line_break_in_the_name_names_the_file_and_line() {
    let root = Root::new(
        "[[archive]]\nname = \"/opt/app\\n.tar.gz\"\nurl = \"https://h/app.tar.gz\"\nowner = \"app\"\ngroup = \"app\"\n",
    );
    let scan = root.run(&["scan"]);
    assert!(!scan.success);
    assert!(
        scan.stderr.contains("archives.toml:2: the entity id \"archive:/opt/app\\n.tar.gz\" would hold a line break or surrounding spaces; an entity id must be one line, so remove them from the name"),
        "{}",
        scan.stderr
    );
    assert!(
        !scan.stderr.contains("invalid entity id"),
        "{}",
        scan.stderr
    );
}

#[test]
fn file_and_ftp_urls_get_the_same_reason() {
    for url in ["file:///srv/app.tar.gz", "ftp://h/app.tar.gz"] {
        let root = Root::new(&resource(url, ""));
        let scan = root.run(&["scan"]);
        assert!(!scan.success);
        assert!(
            scan.stderr.contains(&format!(
                "archives.toml:1: archive \"/opt/app.tar.gz\": url \"{url}\" must use http or https"
            )),
            "{}",
            scan.stderr
        );
    }
}

/// A hostile archive: a harmless entry first (it must not stay behind),
/// then `bad`.
fn hostile(format: Format, bad: Item) -> Vec<u8> {
    build(format, &[Item::File("good.txt", b"fine\n", 0o644), bad])
}

/// Applies `bytes` as the archive and checks that it fails cleanly: one
/// message naming the entity, nothing in `extract_parent`, nothing new
/// anywhere in the root but the downloaded archive, nothing outside.
fn assert_refused(format: Format, bytes: Vec<u8>, expect: &str) {
    let server = Server::start();
    let ext = format.extension();
    let url = server.serve(
        &format!("/bad.{ext}"),
        Route {
            body: bytes,
            ..Route::default()
        },
    );
    let root = Root::new(&format!(
        "[[archive]]\nname = \"/srv/bad.{ext}\"\nurl = \"{url}\"\nowner = \"app\"\ngroup = \"app\"\nextract_parent = \"/srv/app\"\ncreates = \"/srv/app/good.txt\"\n"
    ));
    root.write("srv/secret", "outside\n");
    let before = root.tree();
    let run = root.op("apply", &format!("archive:/srv/bad.{ext}"));
    assert!(!run.success, "{format:?} must fail: {}", run.stdout);
    assert!(
        run.stderr.contains("nothing was extracted"),
        "{format:?}: {}",
        run.stderr
    );
    assert!(run.stderr.contains(expect), "{format:?}: {}", run.stderr);
    let after: Vec<String> = root
        .tree()
        .into_iter()
        .filter(|path| !before.contains(path))
        .filter(|path| !path.starts_with("tmp/cache"))
        // The state directory, where the extraction was marked as begun;
        // the mark is gone again.
        .filter(|path| {
            !["var", "var/lib", "var/lib/holo", "var/lib/holo/archive"].contains(&path.as_str())
        })
        .collect();
    assert_eq!(
        after,
        ["srv/app".to_string()],
        "{format:?}: only an empty extract_parent is new (the download is removed)"
    );
    assert_eq!(fs::read_dir(root.path("srv/app")).expect("list").count(), 0);
    assert_eq!(
        fs::read_to_string(root.path("srv/secret")).expect("secret"),
        "outside\n"
    );
    assert!(!std::path::Path::new("/holo-archive-test-abs").exists());
    assert!(!std::path::Path::new("/etc/holo-archive-test-pwned").exists());
}

#[test]
fn parent_dir_entries_are_refused_in_every_format() {
    for format in Format::ALL {
        assert_refused(
            format,
            hostile(format, Item::File("../x", b"escape", 0o644)),
            "contains \"..\"",
        );
        assert_refused(
            format,
            hostile(format, Item::File("sub/../../secret", b"escape", 0o644)),
            "contains \"..\"",
        );
    }
}

#[test]
fn absolute_entries_are_refused_in_every_format() {
    for format in Format::ALL {
        assert_refused(
            format,
            hostile(
                format,
                Item::File("/holo-archive-test-abs", b"escape", 0o644),
            ),
            "absolute path",
        );
    }
}

#[test]
fn symlinks_to_etc_are_refused_in_every_format() {
    for format in Format::ALL {
        assert_refused(
            format,
            hostile(format, Item::Symlink("etc", "/etc")),
            "resolves outside",
        );
        assert_refused(
            format,
            hostile(format, Item::Symlink("up", "../..")),
            "resolves outside",
        );
        // Writing through the link is refused before the link is even checked.
        let through = build(
            format,
            &[
                Item::Symlink("etc", "/etc"),
                Item::File("etc/holo-archive-test-pwned", b"x", 0o644),
            ],
        );
        assert_refused(format, through, "through etc, which is a symlink");
    }
}

#[test]
fn chained_symlinks_cannot_climb_out() {
    for format in Format::ALL {
        let chain = build(
            format,
            &[Item::Symlink("here", "."), Item::Symlink("out", "here/..")],
        );
        assert_refused(format, chain, "resolves outside");
    }
}

#[test]
fn hard_links_outside_are_refused() {
    // Zip has no hard link entries; tar and tar.gz do.
    for format in [Format::Tar, Format::TarGz] {
        assert_refused(
            format,
            hostile(format, Item::Hardlink("h", "../secret")),
            "contains \"..\"",
        );
        assert_refused(
            format,
            hostile(format, Item::Hardlink("h", "/etc/passwd")),
            "absolute path",
        );
        assert_refused(
            format,
            hostile(format, Item::Hardlink("h", "missing")),
            "not a file earlier",
        );
    }
}

#[test]
fn device_and_fifo_entries_are_refused() {
    for format in [Format::Tar, Format::TarGz] {
        assert_refused(format, hostile(format, Item::Fifo("pipe")), "fifo");
        assert_refused(
            format,
            hostile(format, Item::CharDevice("null")),
            "character device",
        );
    }
}

#[test]
fn inside_links_are_extracted() {
    for format in Format::ALL {
        let server = Server::start();
        let ext = format.extension();
        let mut items = vec![
            Item::Dir("lib/"),
            Item::File("lib/real.so", b"so", 0o644),
            Item::Symlink("lib/alias.so", "real.so"),
            Item::Symlink("abs", "/srv/app/lib"),
        ];
        if format != Format::Zip {
            items.push(Item::Hardlink("lib/hard.so", "lib/real.so"));
        }
        let url = server.serve(
            &format!("/ok.{ext}"),
            Route {
                body: build(format, &items),
                ..Route::default()
            },
        );
        let root = Root::new(&format!(
            "[[archive]]\nname = \"/srv/ok.{ext}\"\nurl = \"{url}\"\nowner = \"app\"\ngroup = \"app\"\nextract_parent = \"/srv/app\"\n"
        ));
        let run = root.op("apply", &format!("archive:/srv/ok.{ext}"));
        assert_changed(&run);
        assert_eq!(
            fs::read_to_string(root.path("srv/app/lib/alias.so")).expect("alias"),
            "so"
        );
        assert_eq!(
            fs::read_link(root.path("srv/app/abs")).expect("abs"),
            std::path::Path::new("/srv/app/lib")
        );
        if format != Format::Zip {
            assert_eq!(
                fs::metadata(root.path("srv/app/lib/hard.so"))
                    .expect("hard")
                    .nlink(),
                2
            );
        }
    }
}

#[test]
fn protect_leaves_a_replaced_archive_to_force_apply() {
    let (server, root, bytes) = setup(&format!("{EXTRACTED}protect = true\n"));
    assert_changed(&root.op("apply", ENTITY));
    fs::write(root.path("opt/app.tar.gz"), b"edited by hand").expect("edit");
    let apply = root.op("apply", ENTITY);
    assert!(apply.success, "{}", apply.stderr);
    assert_eq!(apply.fd3, "requires --force to overwrite\n");
    assert_eq!(
        fs::read(root.path("opt/app.tar.gz")).expect("kept"),
        b"edited by hand"
    );
    fs::remove_file(root.path("opt/app.tar.gz")).expect("delete");
    assert_eq!(
        root.op("apply", ENTITY).fd3,
        "requires --force to restore\n"
    );
    assert_changed(&root.op("force-apply", ENTITY));
    assert_eq!(
        fs::read(root.path("opt/app.tar.gz")).expect("restored"),
        bytes
    );
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn conflicts_are_found_before_anything_moves_and_merges_keep_other_files() {
    let server = Server::start();
    let bytes = build(
        Format::TarGz,
        &[
            Item::File("a.txt", b"new a\n", 0o644),
            Item::Dir("lib/"),
            Item::File("lib/x.so", b"x", 0o644),
        ],
    );
    let url = server.serve(
        "/app.tar.gz",
        Route {
            body: bytes,
            ..Route::default()
        },
    );
    let root = Root::new(&resource(&url, "extract_parent = \"/srv/app\"\n"));
    // An admin's symlink where the archive has a directory: refused, and
    // a.txt (sorted before lib) was not moved either.
    root.write("srv/app/a.txt", "old a\n");
    root.write("srv/elsewhere/keep", "keep\n");
    std::os::unix::fs::symlink(root.path("srv/elsewhere"), root.path("srv/app/lib"))
        .expect("symlink");
    let refused = root.op("apply", ENTITY);
    assert!(!refused.success);
    assert!(
        refused.stderr.contains("cannot extract directory lib"),
        "{}",
        refused.stderr
    );
    assert_eq!(
        fs::read_to_string(root.path("srv/app/a.txt")).expect("a"),
        "old a\n"
    );
    assert!(
        !root.path("srv/elsewhere/x.so").exists(),
        "nothing written through the symlink"
    );
    // Without the symlink, the archive merges into what is there.
    fs::remove_file(root.path("srv/app/lib")).expect("unlink");
    root.write("srv/app/lib/local.so", "mine");
    assert_changed(&root.op("apply", ENTITY));
    assert_eq!(
        fs::read_to_string(root.path("srv/app/a.txt")).expect("a"),
        "new a\n"
    );
    assert_eq!(
        fs::read_to_string(root.path("srv/app/lib/x.so")).expect("x"),
        "x"
    );
    assert_eq!(
        fs::read_to_string(root.path("srv/app/lib/local.so")).expect("local"),
        "mine"
    );
}
