//! A holos project in a short temporary directory for the runtime tests:
//! its own state root, a blank base image, and `holos` run with a clean
//! environment against real QEMU or the crate's fake one. Dropping it takes
//! down every project it recorded, so no QEMU outlives a test.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// What the real qemu-img reads from and writes to disk images.
pub mod qemu_img;

/// The HTTP server of the tests, for image pulls.
pub use test_support::http;

/// Which `qemu-system-x86_64` the project's commands find on PATH.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Qemu {
    Real,
    Fake,
}

pub struct Project {
    pub dir: tempfile::TempDir,
    /// `-p NAME` for every command, for compose files without `name:`.
    pub name: Option<String>,
}

/// Fails the test unless QEMU's system emulator and qemu-img are installed.
pub fn require_qemu() {
    test_support::require_tools(
        &["qemu-system-x86_64", "qemu-img"],
        "apt-get install qemu-system-x86 qemu-utils",
    );
}

/// Fails the test unless qemu-img is installed (the fake QEMU still needs
/// real disk images).
pub fn require_qemu_img() {
    test_support::require_tools(&["qemu-img"], "apt-get install qemu-utils");
}

/// `holos ARGS`, which must fail with exit status 1; returns its stderr.
pub fn fails(p: &Project, args: &[&str]) -> String {
    let out = p.run(args);
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "holos {args:?}: {said}");
    said
}

/// `holos ARGS`, which must succeed; returns its stdout.
pub fn stdout(p: &Project, args: &[&str]) -> String {
    let out = p.run(args);
    assert!(
        out.status.success(),
        "holos {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

impl Project {
    pub fn new(compose: &str, qemu: Qemu) -> Project {
        // Short paths: QEMU's unix sockets hold 107 bytes.
        let dir = tempfile::Builder::new()
            .prefix("hr")
            .tempdir_in("/tmp")
            .unwrap();
        std::fs::write(dir.path().join("holos.yaml"), compose).unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        if qemu == Qemu::Fake {
            std::os::unix::fs::symlink(
                test_support::binary("fake-qemu-system-x86_64"),
                bin.join("qemu-system-x86_64"),
            )
            .unwrap();
        }
        let project = Project { dir, name: None };
        project.base_image(&project.dir.path().join("base.qcow2"));
        project
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A blank 64M qcow2 at `path`.
    pub fn base_image(&self, path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let status = Command::new("qemu-img")
            .args(["create", "-q", "-f", "qcow2"])
            .arg(path)
            .arg("64M")
            .status()
            .unwrap();
        assert!(status.success());
    }

    pub fn write(&self, compose: &str) {
        std::fs::write(self.path().join("holos.yaml"), compose).unwrap();
    }

    pub fn state(&self) -> PathBuf {
        self.path().join("s")
    }

    pub fn holos(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_holos"));
        if let Some(name) = &self.name {
            command.args(["-p", name]);
        }
        command
            .args(args)
            .current_dir(self.path())
            .env_clear()
            .env(
                "PATH",
                format!(
                    "{}:/usr/local/bin:/usr/bin:/bin",
                    self.path().join("bin").display()
                ),
            )
            .env("HOLOS_STATE_DIR", self.state())
            .env("HOLOS_ACCEL", "tcg")
            .env("FAKE_QEMU_ARGV_FILE", self.path().join("argv.jsonl"));
        command
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.holos(args).output().unwrap()
    }

    /// Runs `command`, which must succeed; returns its stderr.
    pub fn ok_with(&self, command: &mut Command) -> String {
        let out = command.output().unwrap();
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "holos failed: {said}");
        said
    }

    pub fn ok(&self, args: &[&str]) -> String {
        self.ok_with(&mut self.holos(args))
    }

    pub fn ps(&self) -> Vec<Value> {
        let out = self.run(&["ps", "--json"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout)
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    }

    pub fn pid_of(&self, instance: &str) -> Option<u32> {
        self.ps()
            .iter()
            .find(|i| i["instance"] == instance)
            .and_then(|i| i["pid"].as_u64())
            .map(|p| p as u32)
    }

    /// Every argv the fake QEMU was started with, in order.
    pub fn recorded_argvs(&self) -> Vec<Vec<String>> {
        std::fs::read_to_string(self.path().join("argv.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Edits the project record (as a crash or a reused pid would leave it).
    pub fn edit_record(&self, project: &str, edit: impl FnOnce(&mut Value)) {
        let path = self.state().join(format!("projects/{project}.json"));
        let mut record: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        edit(&mut record);
        std::fs::write(&path, serde_json::to_vec(&record).unwrap()).unwrap();
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        let records = std::fs::read_dir(self.state().join("projects"));
        for record in records.into_iter().flatten().flatten() {
            let file = record.file_name().to_string_lossy().into_owned();
            let name = file.trim_end_matches(".json");
            let _ = self
                .holos(&["down", name])
                .env("FAKE_QEMU_POWERDOWN_DELAY_MS", "0")
                .output();
        }
    }
}

/// The argv of a live process (empty once it is gone or a zombie).
pub fn cmdline(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .unwrap_or_default()
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

pub fn alive(pid: u32) -> bool {
    !cmdline(pid).is_empty()
}

/// A mirror of the distributions' image hosts on 127.0.0.1, laid out as
/// `HOLOS_IMAGE_MIRROR` expects (`/HOST/PATH`), serving test images with
/// checksum files in the distributions' formats.
pub struct ImageMirror {
    pub server: http::Server,
}

/// Where one mirrored image and its checksum file are served.
pub struct Mirrored {
    pub image_path: String,
    pub checksum_path: String,
}

impl ImageMirror {
    pub fn start() -> ImageMirror {
        ImageMirror {
            server: http::Server::start(),
        }
    }

    /// The value for `HOLOS_IMAGE_MIRROR`.
    pub fn url(&self) -> String {
        self.server.base.clone()
    }

    /// Serves `bytes` as `alias:tag` (the table's URLs) with a correct checksum.
    pub fn serve(&self, alias: &str, tag: &str, bytes: &[u8]) -> Mirrored {
        self.serve_claiming(alias, tag, bytes, bytes)
    }

    /// Serves `bytes` with the checksum of `claimed`.
    pub fn serve_claiming(&self, alias: &str, tag: &str, bytes: &[u8], claimed: &[u8]) -> Mirrored {
        use sha2::{Digest, Sha256, Sha512};
        let entry = &holos_compose::images::table().find(alias).unwrap().tags[tag];
        let local = |url: &str| format!("/{}", url.split_once("://").unwrap().1);
        let name = entry.url.rsplit('/').next().unwrap();
        let hex = |digest: &[u8]| {
            digest
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        };
        let (kind, sum) = match entry.checksum_type.as_str() {
            "sha512" => ("SHA512", hex(&Sha512::digest(claimed))),
            _ => ("SHA256", hex(&Sha256::digest(claimed))),
        };
        let other = "0".repeat(sum.len());
        // As the distributions publish them: a bare hash or BSD lines beside
        // the image, GNU lines in a directory's SUMS file.
        let text = if entry.checksum_url.starts_with(&format!("{}.", entry.url)) {
            if kind == "SHA512" {
                format!("{sum}\n")
            } else {
                format!("# {name}: {} bytes\n{kind} ({name}) = {sum}\n", bytes.len())
            }
        } else {
            format!("{other}  other-{name}\n{sum} *{name}\n")
        };
        let image_path = local(&entry.url);
        let checksum_path = local(&entry.checksum_url);
        self.server
            .serve(&image_path, http::Route::body(bytes.to_vec()));
        self.server
            .serve(&checksum_path, http::Route::body(text.into_bytes()));
        Mirrored {
            image_path,
            checksum_path,
        }
    }
}

/// The bytes of a blank qcow2 of `size` (qemu-img), for images `up` boots.
pub fn qcow2_bytes(size: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("blank.qcow2");
    let status = Command::new("qemu-img")
        .args(["create", "-q", "-f", "qcow2"])
        .arg(&path)
        .arg(size)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::read(path).unwrap()
}
