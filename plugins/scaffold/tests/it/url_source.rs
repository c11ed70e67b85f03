//! `source` as an http(s) URL of a `.tar.gz` or `.zip` of the template
//! tree: served on 127.0.0.1 by a server the test starts, with archives
//! built in the test. The archive is verified against `checksum`,
//! extracted safely into `/var/cache/holo/scaffold/SHA256/` below the root,
//! and fetched once per checksum; without `checksum` (as CCM takes a URL)
//! it is fetched once per run, into the run's cache directory.

use std::fs;
use std::io::Write;
use std::path::PathBuf;
use std::process::Output;
use test_support::plugin_run::PluginRun;

use test_support::http::{Route, Server, sha256};

struct Root {
    dir: tempfile::TempDir,
}

impl Root {
    fn new(resource: &str) -> Root {
        let root = Root {
            dir: tempfile::tempdir().expect("tempdir"),
        };
        root.write("etc/hostname", "web01\n");
        root.write("usr/share/holo/scaffold/app.toml", resource);
        fs::create_dir_all(root.path("tmp/cache")).expect("cache");
        root
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join("root").join(relative)
    }

    fn write(&self, relative: &str, text: &str) {
        let path = self.path(relative);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, text).expect("write");
    }

    fn run(&self, args: &[&str]) -> Output {
        PluginRun::new(
            env!("CARGO_BIN_EXE_holo-scaffold"),
            "scaffold",
            &self.path(""),
        )
        .args(args)
        .fd3_to("/dev/null")
        .output()
    }

    /// Scan, then apply `scaffold:/srv/app`; both must succeed.
    fn apply(&self) -> String {
        let mut stdout = String::new();
        for args in [&["scan"][..], &["apply", "scaffold:/srv/app"]] {
            let output = self.run(args);
            assert!(
                output.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        }
        stdout
    }

    /// The message of a scan that fails.
    fn scan_error(&self) -> String {
        let output = self.run(&["scan"]);
        assert!(!output.status.success(), "scan succeeded");
        String::from_utf8_lossy(&output.stderr).into_owned()
    }

    /// A source that cannot be fetched: the scan reports the entity with
    /// its files unknown, and its apply fails. Gives the scan's report and
    /// the apply's error.
    fn fetch_error(&self) -> String {
        let scan = self.run(&["scan"]);
        let report = String::from_utf8_lossy(&scan.stdout).into_owned();
        assert!(
            scan.status.success(),
            "an unreachable source failed the scan: {}",
            String::from_utf8_lossy(&scan.stderr)
        );
        assert!(report.contains("files: unknown: "), "{report}");
        let apply = self.run(&["apply", "scaffold:/srv/app"]);
        assert!(!apply.status.success(), "apply succeeded");
        format!("{report}{}", String::from_utf8_lossy(&apply.stderr))
    }

    fn cache_entries(&self) -> Vec<String> {
        fs::read_dir(self.path("var/cache/holo/scaffold"))
            .map(|entries| {
                entries
                    .flatten()
                    .map(|entry| entry.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// (name, content, mode) entries; names are written as given.
type Entries<'a> = &'a [(&'a str, &'a str, u32)];

fn tar_gz(entries: Entries) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, content, mode) in entries {
        let mut header = tar::Header::new_gnu();
        // Raw names: set_path refuses `..`.
        header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        header.set_entry_type(tar::EntryType::Regular);
        header.set_mode(*mode);
        header.set_size(content.len() as u64);
        header.set_cksum();
        builder.append(&header, content.as_bytes()).expect("tar");
    }
    let tar = builder.into_inner().expect("tar");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&tar).expect("gzip");
    gz.finish().expect("gzip")
}

fn zip(entries: Entries) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, content, mode) in entries {
        let options = zip::write::SimpleFileOptions::default().unix_permissions(*mode);
        writer.start_file(*name, options).expect("zip");
        writer.write_all(content.as_bytes()).expect("zip");
    }
    writer.finish().expect("zip").into_inner()
}

const TREE: Entries = &[
    (
        "{{ data.name }}.conf",
        "name={{ data.name }}\nhost={{ facts.hostname }}\n",
        0o644,
    ),
    ("bin/run.sh", "#!/bin/sh\necho {{ data.name }}\n", 0o755),
];

fn resource(url: &str, checksum: &str) -> String {
    format!(
        "[[scaffold]]\nname = \"/srv/app\"\nsource = \"{url}\"\nchecksum = \"{checksum}\"\nengine = \"minijinja\"\ndata = {{ name = \"shop\" }}\n"
    )
}

#[test]
fn a_url_without_checksum_is_fetched_once_per_run_as_ccm_takes_it() {
    let server = Server::start();
    let archive = tar_gz(TREE);
    let url = server.serve("/app.tar.gz", Route::body(archive));
    let root = Root::new(&format!(
        "[[scaffold]]\nname = \"/srv/app\"\nsource = \"{url}\"\nengine = \"minijinja\"\ndata = {{ name = \"shop\" }}\n"
    ));
    let stdout = root.apply();
    assert!(stdout.contains("Rendered /srv/app/shop.conf"), "{stdout}");
    // The run's scan and apply share one download, and nothing goes to the
    // checksum cache, which would keep it across runs.
    assert_eq!(server.count("/app.tar.gz"), 1);
    assert!(
        root.cache_entries().is_empty(),
        "{:?}",
        root.cache_entries()
    );
    // The next run (a new cache directory) downloads it again.
    fs::remove_dir_all(root.path("tmp/cache")).expect("end of the run");
    fs::create_dir_all(root.path("tmp/cache")).expect("next run");
    root.apply();
    assert_eq!(server.count("/app.tar.gz"), 2);
}

#[test]
fn a_tar_gz_url_is_fetched_once_verified_and_rendered() {
    let server = Server::start();
    let archive = tar_gz(TREE);
    let url = server.serve("/tpl/app.tar.gz", Route::body(archive.clone()));
    let root = Root::new(&resource(&url, &sha256(&archive).to_uppercase()));
    let stdout = root.apply();
    assert!(stdout.contains("Rendered /srv/app/shop.conf"), "{stdout}");
    assert_eq!(
        fs::read_to_string(root.path("srv/app/shop.conf")).expect("rendered"),
        "name=shop\nhost=web01\n"
    );
    let script = fs::metadata(root.path("srv/app/bin/run.sh")).expect("script");
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&script.permissions()) & 0o777,
        0o755
    );
    assert_eq!(root.cache_entries(), [sha256(&archive)]);
    // Cached by checksum: later runs render from the cache.
    root.apply();
    let scan = root.run(&["scan"]);
    assert!(
        String::from_utf8_lossy(&scan.stdout).contains(&format!("source: {url}")),
        "{}",
        String::from_utf8_lossy(&scan.stdout)
    );
    assert_eq!(server.count("/tpl/app.tar.gz"), 1);
}

#[test]
fn a_zip_url_renders_too() {
    let server = Server::start();
    let archive = zip(TREE);
    let url = server.serve("/app.zip", Route::body(archive.clone()));
    let root = Root::new(&resource(&url, &sha256(&archive)));
    root.apply();
    assert_eq!(
        fs::read_to_string(root.path("srv/app/bin/run.sh")).expect("rendered"),
        "#!/bin/sh\necho shop\n"
    );
}

#[test]
fn a_wrong_checksum_leaves_nothing_behind() {
    let server = Server::start();
    let archive = tar_gz(TREE);
    let url = server.serve("/app.tar.gz", Route::body(archive));
    let wrong = "0".repeat(64);
    let root = Root::new(&resource(&url, &wrong));
    let message = root.fetch_error();
    assert!(
        message.contains("app.toml:1") && message.contains(&wrong),
        "{message}"
    );
    assert!(
        root.cache_entries().is_empty(),
        "{:?}",
        root.cache_entries()
    );
    assert!(!root.path("srv/app").exists());
}

#[test]
fn a_url_needs_an_archive_name_and_a_checksum_only_with_it() {
    let root = Root::new(&resource("https://example.invalid/app", &"a".repeat(64)));
    root.write(
        "usr/share/holo/scaffold/app.toml",
        &resource("https://example.invalid/app", &"a".repeat(64)),
    );
    let message = root.scan_error();
    assert!(message.contains("is not an archive"), "{message}");
    root.write(
        "usr/share/holo/scaffold/app.toml",
        "[[scaffold]]\nname = \"/srv/app\"\nsource = \"app\"\nchecksum = \"x\"\n",
    );
    let message = root.scan_error();
    assert!(
        message.contains("checksum is for a URL source only"),
        "{message}"
    );
}

#[test]
fn an_archive_climbing_out_is_refused_by_the_safe_extraction() {
    let server = Server::start();
    let archive = tar_gz(&[("ok.conf", "x\n", 0o644), ("../../escape", "x\n", 0o644)]);
    let url = server.serve("/evil.tar.gz", Route::body(archive.clone()));
    let root = Root::new(&resource(&url, &sha256(&archive)));
    let message = root.fetch_error();
    assert!(
        message.contains("cannot extract") && message.contains(".."),
        "{message}"
    );
    assert!(
        root.cache_entries().is_empty(),
        "{:?}",
        root.cache_entries()
    );
    assert!(!root.path("var/cache/holo/escape").exists());
}
