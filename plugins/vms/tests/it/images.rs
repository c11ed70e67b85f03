//! `holos pull`, `holos images`, `holos lock` and the base images of `up`,
//! against a mirror of the distributions' hosts served on 127.0.0.1
//! (`HOLOS_IMAGE_MIRROR`), with the fake QEMU where `up` gets that far.

use crate::runtime_support;

use std::path::{Path, PathBuf};
use std::process::Output;

use runtime_support::http::Route;
use runtime_support::{ImageMirror, Project, Qemu, qcow2_bytes};
use sha2::{Digest, Sha256, Sha512};

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn sha256(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn sha512(bytes: &[u8]) -> String {
    hex(&Sha512::digest(bytes))
}

fn run(p: &Project, mirror: &ImageMirror, args: &[&str]) -> Output {
    p.holos(args)
        .env("HOLOS_IMAGE_MIRROR", mirror.url())
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The file names in the image cache, sorted.
fn cache(p: &Project) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(p.state().join("images"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn alpine_file(p: &Project, bytes: &[u8]) -> PathBuf {
    p.state()
        .join("images")
        .join(format!("alpine-3.23-{}.qcow2", &sha512(bytes)[..12]))
}

#[test]
#[ignore = "needs qemu-img"]
fn pull_verifies_while_streaming_and_checks_every_cache_hit() {
    runtime_support::require_qemu_img();
    let p = Project::new("services:\n  web:\n    image: alpine\n", Qemu::Fake);
    let mirror = ImageMirror::start();
    let bytes = b"an alpine cloud image".repeat(1000);
    let served = mirror.serve("alpine", "3.23", &bytes);
    // What a pull killed during an older build's download left.
    std::fs::create_dir_all(p.state().join("images")).unwrap();
    let stale = p.state().join("images/alpine-3.23-0123456789ab.qcow2.part");
    std::fs::write(&stale, b"half").unwrap();
    let other_tag = p
        .state()
        .join("images/alpine-3.23-x-0123456789ab.qcow2.part");
    std::fs::write(&other_tag, b"not ours").unwrap();

    let out = run(&p, &mirror, &["pull", "alpine"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stale.exists(), "a stale .part of the tag is removed");
    std::fs::remove_file(&other_tag).unwrap();
    let file = alpine_file(&p, &bytes);
    assert_eq!(stdout(&out).trim(), file.display().to_string());
    assert_eq!(std::fs::read(&file).unwrap(), bytes);
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(
        cache(&p),
        [name.clone(), format!("{name}.json")],
        "no .part is left"
    );
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(format!("{}.json", file.display())).unwrap())
            .unwrap();
    assert_eq!(record["sha256"], sha256(&bytes));
    assert_eq!(record["checksum"], sha512(&bytes));
    assert_eq!(record["checksum_type"], "sha512");
    assert!(
        record["url"]
            .as_str()
            .unwrap()
            .starts_with("https://dl-cdn.alpinelinux.org/"),
        "the record keeps the table's URL, not the mirror's: {record}"
    );
    assert_eq!(mirror.server.count(&served.image_path), 1);

    // A second pull checks the published checksum and the cached file, and
    // downloads nothing.
    let out = run(&p, &mirror, &["pull", "alpine:3.23"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("alpine:3.23 is up to date"),
        "{}",
        stderr(&out)
    );
    assert_eq!(mirror.server.count(&served.image_path), 1);
    assert_eq!(mirror.server.count(&served.checksum_path), 2);

    // `holos images` marks what is cached.
    let out = run(&p, &mirror, &["images"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let table = stdout(&out);
    let line = |alias: &str, tag: &str| {
        table
            .lines()
            .find(|l| l.split_whitespace().take(2).eq([alias, tag]))
            .unwrap_or_else(|| panic!("no {alias} {tag} in\n{table}"))
            .to_string()
    };
    assert!(line("alpine", "3.23").ends_with("yes"), "{table}");
    assert!(line("alpine", "3.22").ends_with("no"), "{table}");
    assert!(
        line("ubuntu", "noble").contains(" * "),
        "the default is marked: {table}"
    );

    // A cached file damaged in place (same size) is found on the next use,
    // removed, and pulled again.
    let mut damaged = bytes.clone();
    damaged[10] ^= 0xff;
    std::fs::write(&file, &damaged).unwrap();
    let out = run(&p, &mirror, &["pull", "alpine"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("the cached image {} is damaged", file.display())),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(&file).unwrap(), bytes);
    assert_eq!(mirror.server.count(&served.image_path), 2);

    // `up`'s path (here through `holos lock`) checks the cached file too;
    // when it cannot be pulled again, the error says both.
    std::fs::write(&file, &damaged).unwrap();
    mirror.server.remove(&served.image_path);
    let out = run(&p, &mirror, &["lock"]);
    assert_eq!(out.status.code(), Some(1));
    let said = stderr(&out);
    assert!(
        said.contains("is damaged") && said.contains("it was removed"),
        "{said}"
    );
    assert!(
        said.contains("service web: image alpine:3.23:") && said.contains("404"),
        "{said}"
    );
    assert!(!file.exists(), "the damaged file is not kept");
    assert!(!p.path().join("holos.images.lock").exists());
}

#[test]
#[ignore = "needs qemu-img"]
fn a_checksum_mismatch_leaves_no_image_and_no_part_file() {
    runtime_support::require_qemu_img();
    let p = Project::new("services:\n  web:\n    image: alpine\n", Qemu::Fake);
    let mirror = ImageMirror::start();
    let bytes = b"what the server sends".to_vec();
    mirror.serve_claiming("alpine", "3.23", &bytes, b"what the distribution published");
    let out = run(&p, &mirror, &["pull", "alpine"]);
    assert_eq!(out.status.code(), Some(1));
    let said = stderr(&out);
    assert!(said.contains("sha512 checksum mismatch"), "{said}");
    assert!(
        said.contains(&sha512(b"what the distribution published")),
        "{said}"
    );
    assert!(said.contains(&sha512(&bytes)), "{said}");
    assert_eq!(cache(&p), Vec::<String>::new());

    // The same for a SHA-256 from a directory's SUMS file (Ubuntu).
    mirror.serve_claiming("ubuntu", "noble", &bytes, b"other");
    let out = run(&p, &mirror, &["pull", "ubuntu"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("checksum mismatch"),
        "{}",
        stderr(&out)
    );
    assert_eq!(cache(&p), Vec::<String>::new());
}

#[test]
#[ignore = "needs qemu-img"]
fn a_stalled_server_hits_the_idle_timeout() {
    runtime_support::require_qemu_img();
    let p = Project::new("services:\n  web:\n    image: alpine\n", Qemu::Fake);
    let mirror = ImageMirror::start();
    let bytes = vec![7u8; 64 * 1024];
    let served = mirror.serve("alpine", "3.23", &bytes);
    mirror.server.serve(
        &served.image_path,
        Route {
            stall: true,
            ..Route::body(bytes)
        },
    );
    let out = p
        .holos(&["pull", "alpine"])
        .env("HOLOS_IMAGE_MIRROR", mirror.url())
        .env("HOLOS_PULL_IDLE_TIMEOUT", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("timed out (no data for 1 s)"),
        "{}",
        stderr(&out)
    );
    assert_eq!(cache(&p), Vec::<String>::new(), "no image and no .part");
    let out = p
        .holos(&["pull", "alpine"])
        .env("HOLOS_PULL_IDLE_TIMEOUT", "soon")
        .output()
        .unwrap();
    assert!(
        stderr(&out).contains("HOLOS_PULL_IDLE_TIMEOUT=soon"),
        "{}",
        stderr(&out)
    );
}

#[test]
#[ignore = "needs qemu-img"]
fn pull_without_arguments_pulls_the_projects_aliases() {
    runtime_support::require_qemu_img();
    let p = Project::new(
        "services:\n  web:\n    image: ubuntu\n  db:\n    image: debian:trixie\n  app:\n    image: ./base.qcow2\n  again:\n    image: ubuntu:noble\n",
        Qemu::Fake,
    );
    let mirror = ImageMirror::start();
    let ubuntu = b"ubuntu".repeat(100);
    let debian = b"debian".repeat(100);
    mirror.serve("ubuntu", "noble", &ubuntu);
    mirror.serve("debian", "trixie", &debian);
    let out = run(&p, &mirror, &["pull"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let images = p.state().join("images");
    assert_eq!(
        stdout(&out),
        format!(
            "{}\n{}\n",
            images
                .join(format!("debian-trixie-{}.qcow2", &sha512(&debian)[..12]))
                .display(),
            images
                .join(format!("ubuntu-noble-{}.qcow2", &sha256(&ubuntu)[..12]))
                .display()
        )
    );
    let out = run(&p, &mirror, &["pull", "./base.qcow2"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("./base.qcow2 is a local image file"),
        "{}",
        stderr(&out)
    );
    let out = run(&p, &mirror, &["pull", "ubuntoo"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("unknown image alias \"ubuntoo\""),
        "{}",
        stderr(&out)
    );
}

fn lock_text(p: &Project) -> toml::Table {
    toml::from_str(&std::fs::read_to_string(p.path().join("holos.images.lock")).unwrap()).unwrap()
}

fn sha256_file(path: &Path) -> String {
    sha256(&std::fs::read(path).unwrap())
}

#[test]
#[ignore = "needs qemu-img"]
fn the_lock_file_pins_images_and_up_refuses_what_does_not_match() {
    runtime_support::require_qemu_img();
    let p = Project::new(
        "name: locked\nservices:\n  web:\n    image: alpine\n  db:\n    image: ./db.qcow2\n    image_format: qcow2\n",
        Qemu::Fake,
    );
    let db = p.path().join("db.qcow2");
    p.base_image(&db);
    let mirror = ImageMirror::start();
    // Not the size of db.qcow2: the two must differ.
    let alpine = qcow2_bytes("32M");
    mirror.serve("alpine", "3.23", &alpine);

    let out = run(&p, &mirror, &["lock"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lock = lock_text(&p);
    assert_eq!(lock["version"].as_integer(), Some(1));
    let images = lock["images"].as_table().unwrap();
    assert_eq!(
        images["alpine:3.23"]["sha256"].as_str(),
        Some(sha256(&alpine).as_str())
    );
    assert!(
        images["alpine:3.23"]["url"]
            .as_str()
            .unwrap()
            .starts_with("https://")
    );
    let db_sha = sha256_file(&db);
    assert_eq!(
        images["./db.qcow2"]["sha256"].as_str(),
        Some(db_sha.as_str())
    );

    // A local image rebuilt since the lock was written.
    let mut changed = std::fs::read(&db).unwrap();
    changed.push(0);
    std::fs::write(&db, &changed).unwrap();
    let out = run(&p, &mirror, &["up", "--no-wait"]);
    assert_eq!(out.status.code(), Some(1));
    let said = stderr(&out);
    assert!(
        said.contains(&format!(
            "service db: image ./db.qcow2 does not match {}: expected sha256 {db_sha}, got {}",
            p.path().join("holos.images.lock").display(),
            sha256(&changed)
        )),
        "{said}"
    );
    assert!(p.recorded_argvs().is_empty(), "nothing was started");

    // An alias whose pinned build is not the one upstream serves.
    let text = std::fs::read_to_string(p.path().join("holos.images.lock")).unwrap();
    let pinned = "f".repeat(64);
    std::fs::write(
        p.path().join("holos.images.lock"),
        text.replace(&sha256(&alpine), &pinned)
            .replace(&db_sha, &sha256(&changed)),
    )
    .unwrap();
    let out = run(&p, &mirror, &["up", "--no-wait"]);
    assert_eq!(out.status.code(), Some(1));
    let said = stderr(&out);
    assert!(
        said.contains(&format!(
            "service web: image alpine:3.23 does not match {}: expected sha256 {pinned}, got {}",
            p.path().join("holos.images.lock").display(),
            sha256(&alpine)
        )),
        "{said}"
    );

    unlisted_and_damaged_locks_are_refused(&p, &mirror, &changed);

    // Locked again, `up` starts both, on the cached alias build.
    let out = run(&p, &mirror, &["lock"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(&p, &mirror, &["up", "--no-wait"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(p.state().join("projects/locked.json")).unwrap())
            .unwrap();
    assert_eq!(
        record["instances"]["web-0"]["spec"]["image"],
        p.state()
            .join(format!(
                "images/alpine-3.23-{}.qcow2",
                &sha512(&alpine)[..12]
            ))
            .display()
            .to_string()
    );
    assert_eq!(
        record["instances"]["db-0"]["spec"]["image"],
        db.display().to_string()
    );
}

/// An image the lock does not list, and a damaged lock file (named by its
/// line), are refused; nothing is started.
fn unlisted_and_damaged_locks_are_refused(p: &Project, mirror: &ImageMirror, changed: &[u8]) {
    // An image the lock does not list.
    std::fs::write(
        p.path().join("holos.images.lock"),
        format!(
            "version = 1\n[images.\"./db.qcow2\"]\nsha256 = \"{}\"\n",
            sha256(changed)
        ),
    )
    .unwrap();
    let out = run(p, mirror, &["up", "--no-wait"]);
    assert!(
        stderr(&out).contains("service web: image alpine:3.23 is not pinned in")
            && stderr(&out).contains("run `holos lock`"),
        "{}",
        stderr(&out)
    );
    // A damaged lock file names its line.
    std::fs::write(
        p.path().join("holos.images.lock"),
        "version = 1\n[images.\"x\"]\nsha = 1\n",
    )
    .unwrap();
    let out = run(p, mirror, &["up", "--no-wait"]);
    assert!(
        stderr(&out).contains("holos.images.lock:3: "),
        "{}",
        stderr(&out)
    );
    assert!(p.recorded_argvs().is_empty(), "nothing was started");
}

#[test]
#[ignore = "needs qemu-img"]
fn up_pulls_a_missing_alias_and_names_a_missing_local_file() {
    runtime_support::require_qemu_img();
    let p = Project::new(
        "name: fresh\nservices:\n  web:\n    image: alpine\n",
        Qemu::Fake,
    );
    let mirror = ImageMirror::start();
    let alpine = qcow2_bytes("64M");
    let served = mirror.serve("alpine", "3.23", &alpine);
    let out = run(&p, &mirror, &["up", "--no-wait"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("holos: pulling alpine:3.23 from"),
        "{}",
        stderr(&out)
    );
    assert_eq!(mirror.server.count(&served.image_path), 1);
    assert_eq!(p.recorded_argvs().len(), 1);

    p.write(
        "name: fresh\nservices:\n  web:\n    image: alpine\n  db:\n    image: ./images/db.qcow2\n",
    );
    let out = run(&p, &mirror, &["up", "--no-wait"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!(
            "service db: the image file {} does not exist (image: ./images/db.qcow2)",
            p.path().join("images/db.qcow2").display()
        )),
        "{}",
        stderr(&out)
    );
}

#[test]
#[ignore = "needs qemu-img"]
fn a_newer_upstream_build_is_a_new_file_and_the_lock_keeps_the_pinned_one() {
    runtime_support::require_qemu_img();
    let p = Project::new(
        "name: pinned\nservices:\n  web:\n    image: alpine\n",
        Qemu::Fake,
    );
    let mirror = ImageMirror::start();
    let first = qcow2_bytes("32M");
    let served = mirror.serve("alpine", "3.23", &first);
    let out = run(&p, &mirror, &["lock"]);
    assert!(out.status.success(), "{}", stderr(&out));

    // Upstream publishes a new build of the tag; a pull adds it beside the
    // first one, which stays (instances may use it as their backing file).
    let second = qcow2_bytes("48M");
    mirror.serve("alpine", "3.23", &second);
    let out = run(&p, &mirror, &["pull", "alpine"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (old, new) = (alpine_file(&p, &first), alpine_file(&p, &second));
    assert_ne!(old, new);
    assert_eq!(std::fs::read(&old).unwrap(), first);
    assert_eq!(std::fs::read(&new).unwrap(), second);

    // `up` uses the pinned build, without downloading anything.
    let out = run(&p, &mirror, &["up", "--no-wait"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(mirror.server.count(&served.image_path), 2);
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(p.state().join("projects/pinned.json")).unwrap())
            .unwrap();
    assert_eq!(
        record["instances"]["web-0"]["spec"]["image"],
        old.display().to_string()
    );

    // Without the lock, the newest pull is the one used.
    std::fs::remove_file(p.path().join("holos.images.lock")).unwrap();
    p.ok(&["down"]);
    let out = run(&p, &mirror, &["up", "--no-wait"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(p.state().join("projects/pinned.json")).unwrap())
            .unwrap();
    assert_eq!(
        record["instances"]["web-0"]["spec"]["image"],
        new.display().to_string()
    );
}
