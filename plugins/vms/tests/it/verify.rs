//! `holos verify`: cached images pulled from a mirror on 127.0.0.1 and a
//! local image pinned by `holos lock`, then changed behind holos's back.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::runtime_support::ImageMirror;
use serde_json::Value;

struct Dir {
    dir: tempfile::TempDir,
    mirror: ImageMirror,
}

impl Dir {
    fn new(compose: &str) -> Dir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("holos.yaml"), compose).unwrap();
        Dir {
            dir,
            mirror: ImageMirror::start(),
        }
    }

    fn holos(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_holos"))
            .args(["-p", "shop"])
            .args(args)
            .current_dir(self.dir.path())
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOLOS_STATE_DIR", self.dir.path().join("s"))
            .env("HOLOS_IMAGE_MIRROR", self.mirror.url())
            .output()
            .unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.holos(args);
        assert!(
            out.status.success(),
            "holos {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn cached(&self) -> PathBuf {
        std::fs::read_dir(self.dir.path().join("s/images"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|e| e == "qcow2"))
            .unwrap()
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn statuses(out: &Output) -> Vec<(String, String)> {
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    list.as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["image"].as_str().unwrap().to_string(),
                v["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn append(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
}

const COMPOSE: &str = "services:\n  web:\n    image: alpine\n  db:\n    image: ./db.qcow2\n";

#[test]
fn verify_rechecks_cached_images_against_records_and_the_lock() {
    let d = Dir::new(COMPOSE);
    let alpine = b"an alpine cloud image".repeat(500);
    d.mirror.serve("alpine", "3.23", &alpine);
    std::fs::write(d.dir.path().join("db.qcow2"), b"a local db image").unwrap();
    d.ok(&["pull", "alpine"]);
    d.ok(&["lock"]);

    let report = d.ok(&["verify"]);
    assert_eq!(report.lines().count(), 2, "{report}");
    assert!(report.lines().all(|l| l.starts_with("ok ")), "{report}");
    assert!(report.contains("./db.qcow2"), "{report}");
    let out = d.holos(&["verify", "--json"]);
    assert_eq!(
        statuses(&out),
        [
            ("./db.qcow2".into(), "ok".into()),
            ("alpine:3.23".into(), "ok".into())
        ]
    );

    // The cached file changes: its record no longer matches, whichever way
    // it is named, and verify leaves the file for the user to look at.
    let cached = d.cached();
    append(&cached, b"x");
    for args in [&["verify"][..], &["verify", "alpine"], &["verify", "--all"]] {
        let out = d.holos(args);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?}: {}",
            text(&out.stdout)
        );
        let report = text(&out.stdout);
        let line = report
            .lines()
            .find(|l| l.starts_with("MISMATCH") && l.contains("alpine:3.23 "))
            .unwrap_or_else(|| panic!("{args:?}: {report}"));
        assert!(
            line.contains(&format!("{} has sha256", cached.display()))
                && line.contains("was recorded when it was pulled")
                && line.contains("holos pull alpine:3.23"),
            "{line}"
        );
        assert!(
            text(&out.stderr).contains("image check"),
            "{}",
            text(&out.stderr)
        );
    }
    assert!(cached.exists(), "verify removes nothing");
    // Another build is pinned: the lock's pin is not met by the cache.
    let lock_path = d.dir.path().join("holos.images.lock");
    let lock = std::fs::read_to_string(&lock_path).unwrap();
    let record = std::fs::read_to_string(format!("{}.json", cached.display())).unwrap();
    let alpine_pin = record
        .split("\"sha256\": \"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    std::fs::write(&lock_path, lock.replace(&alpine_pin, &"e".repeat(64))).unwrap();
    let project = text(&d.holos(&["verify"]).stdout);
    assert!(
        project.contains(&format!(
            "no cached build of alpine:3.23 has the sha256 {} pinned in",
            "e".repeat(64)
        )),
        "{project}"
    );
    std::fs::write(&lock_path, &lock).unwrap();

    // The cache is intact again; the local image changes against its pin.
    let pulled = std::fs::read(&cached).unwrap();
    std::fs::write(&cached, &pulled[..pulled.len() - 1]).unwrap();
    d.ok(&["verify", "--all"]);
    append(&d.dir.path().join("db.qcow2"), b"!");
    let out = d.holos(&["verify"]);
    assert_eq!(out.status.code(), Some(1));
    let report = text(&out.stdout);
    assert!(
        report.lines().any(|l| l.starts_with("MISMATCH")
            && l.contains("./db.qcow2")
            && l.contains("holos.images.lock")),
        "{report}"
    );
    assert_eq!(
        statuses(&d.holos(&["verify", "--json"])),
        [
            ("./db.qcow2".into(), "mismatch".into()),
            ("alpine:3.23".into(), "ok".into())
        ]
    );

    // A service whose image the lock does not pin is a mismatch too.
    std::fs::write(
        d.dir.path().join("holos.yaml"),
        format!("{COMPOSE}  cache:\n    image: ./cache.qcow2\n"),
    )
    .unwrap();
    std::fs::write(d.dir.path().join("cache.qcow2"), b"cache").unwrap();
    let report = text(&d.holos(&["verify"]).stdout);
    assert!(
        report.contains("./cache.qcow2 (service cache) is not pinned"),
        "{report}"
    );
}

#[test]
fn verify_of_an_image_not_cached_says_so_and_succeeds() {
    let d = Dir::new("services:\n  web:\n    image: debian\n");
    let out = d.holos(&["verify", "alpine:3.23"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("missing "),
        "{}",
        text(&out.stdout)
    );
    let out = d.holos(&["verify", "nosuchimage"]);
    assert_eq!(out.status.code(), Some(1));
    let out = d.holos(&["verify", "--all", "alpine"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "--all and names exclude each other"
    );
}
