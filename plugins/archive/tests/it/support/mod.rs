//! What the archive tests share: test-support's HTTP server on 127.0.0.1,
//! archives built in memory (including hostile
//! entries the tar and zip writers would refuse), and a test root in which
//! the real `holo-archive` binary runs.

pub use test_support::http::*;

use std::fs;
use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};
use test_support::plugin_run::PluginRun;

/// The archive formats under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Tar,
    TarGz,
    Zip,
}

impl Format {
    pub const ALL: [Format; 3] = [Format::Tar, Format::TarGz, Format::Zip];

    pub fn extension(self) -> &'static str {
        match self {
            Format::Tar => "tar",
            Format::TarGz => "tar.gz",
            Format::Zip => "zip",
        }
    }
}

/// One archive entry; names are written as given, `..` and `/` included.
pub enum Item<'a> {
    File(&'a str, &'a [u8], u32),
    Dir(&'a str),
    Symlink(&'a str, &'a str),
    Hardlink(&'a str, &'a str),
    Fifo(&'a str),
    CharDevice(&'a str),
}

/// Builds an archive in memory.
pub fn build(format: Format, items: &[Item]) -> Vec<u8> {
    match format {
        Format::Tar => build_tar(items),
        Format::TarGz => {
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            encoder.write_all(&build_tar(items)).expect("gzip");
            encoder.finish().expect("gzip")
        }
        Format::Zip => build_zip(items),
    }
}

fn build_tar(items: &[Item]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for item in items {
        let mut header = tar::Header::new_gnu();
        let (name, link, data, mode, kind): (&str, &str, &[u8], u32, tar::EntryType) = match item {
            Item::File(name, data, mode) => (name, "", data, *mode, tar::EntryType::Regular),
            Item::Dir(name) => (name, "", b"", 0o755, tar::EntryType::Directory),
            Item::Symlink(name, target) => (name, target, b"", 0o777, tar::EntryType::Symlink),
            Item::Hardlink(name, target) => (name, target, b"", 0o644, tar::EntryType::Link),
            Item::Fifo(name) => (name, "", b"", 0o644, tar::EntryType::Fifo),
            Item::CharDevice(name) => (name, "", b"", 0o644, tar::EntryType::Char),
        };
        // Raw name fields: Header::set_path refuses `..` and absolute paths.
        let old = header.as_old_mut();
        old.name[..name.len()].copy_from_slice(name.as_bytes());
        old.linkname[..link.len()].copy_from_slice(link.as_bytes());
        header.set_entry_type(kind);
        header.set_mode(mode);
        header.set_size(data.len() as u64);
        header.set_cksum();
        builder.append(&header, data).expect("tar entry");
    }
    builder.into_inner().expect("tar")
}

fn build_zip(items: &[Item]) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for item in items {
        match item {
            Item::File(name, data, mode) => {
                let options = zip::write::SimpleFileOptions::default().unix_permissions(*mode);
                writer.start_file(*name, options).expect("zip entry");
                writer.write_all(data).expect("zip data");
            }
            Item::Dir(name) => writer
                .add_directory(*name, zip::write::SimpleFileOptions::default())
                .expect("zip dir"),
            Item::Symlink(name, target) => writer
                .add_symlink(*name, *target, zip::write::SimpleFileOptions::default())
                .expect("zip symlink"),
            Item::Hardlink(..) | Item::Fifo(_) | Item::CharDevice(_) => {
                panic!("zip has no hard link, fifo or device entries")
            }
        }
    }
    writer.finish().expect("zip").into_inner()
}

/// A test root with users `app` (this process's uid) and `other` (4321).
pub struct Root {
    dir: tempfile::TempDir,
}

pub struct Run {
    pub stdout: String,
    pub stderr: String,
    pub fd3: String,
    pub success: bool,
}

impl Run {
    pub fn all(&self) -> String {
        format!("{}{}{}", self.stdout, self.stderr, self.fd3)
    }
}

impl Root {
    pub fn new(resources: &str) -> Root {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = Root { dir };
        let uid = nix::unistd::geteuid().as_raw();
        let gid = nix::unistd::getegid().as_raw();
        root.write(
            "etc/passwd",
            &format!("app:x:{uid}:{gid}::/srv:/bin/sh\nother:x:4321:4321::/:/bin/sh\n"),
        );
        root.write("etc/group", &format!("app:x:{gid}:\nother:x:4321:\n"));
        root.set_resources(resources);
        for dir in ["tmp/cache", "opt", "srv"] {
            fs::create_dir_all(root.path(dir)).expect("mkdir");
        }
        root
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.dir
            .path()
            .join("root")
            .join(relative.trim_start_matches('/'))
    }

    pub fn write(&self, relative: &str, text: &str) {
        let path = self.path(relative);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, text).expect("write");
    }

    pub fn set_resources(&self, text: &str) {
        self.write("usr/share/holo/archive/archives.toml", text);
    }

    /// `holo-archive ARGS` in test mode with FD 3 going to a file.
    pub fn command(&self, args: &[&str]) -> std::process::Command {
        PluginRun::new(
            assert_cmd::cargo::cargo_bin!("holo-archive"),
            "archive",
            &self.path(""),
        )
        .args(args)
        .extensions("noop,order,batch")
        .fd3_to(self.dir.path().join("fd3"))
        .command()
    }

    /// Runs `holo-archive ARGS` in test mode with FD 3 captured.
    pub fn run(&self, args: &[&str]) -> Run {
        let _ = fs::remove_file(self.dir.path().join("fd3"));
        let output = self.command(args).output().expect("run holo-archive");
        Run {
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            fd3: fs::read_to_string(self.dir.path().join("fd3")).unwrap_or_default(),
            success: output.status.success(),
        }
    }

    /// Scan, then `OPERATION ENTITY`.
    pub fn op(&self, operation: &str, entity: &str) -> Run {
        let scan = self.run(&["scan"]);
        assert!(scan.success, "scan failed: {}", scan.stderr);
        self.run(&[operation, entity])
    }

    /// Every file below the root (relative), symlinks not followed.
    pub fn tree(&self) -> Vec<String> {
        let mut found = Vec::new();
        walk(&self.path(""), &self.path(""), &mut found);
        found.sort();
        found
    }
}

fn walk(base: &Path, dir: &Path, found: &mut Vec<String>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        found.push(
            path.strip_prefix(base)
                .expect("below base")
                .display()
                .to_string(),
        );
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            walk(base, &path, found);
        }
    }
}
