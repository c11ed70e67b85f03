//! The walk of the resource directory for files nothing reads does not
//! follow symlinks in circles or out of the tree: two links to `.` and one
//! to `/` give one warning each, a symlinked directory inside the tree is
//! read once, and a directory of many unread files gives a bounded number
//! of lines.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use test_support::plugin_run::PluginRun;

/// Runs `holo-file scan` on `root` with stderr in a file, killed after
/// `limit`; returns its stderr.
fn scan_within(root: &Path, limit: Duration) -> String {
    let stderr_path = root.join("scan.stderr");
    let stderr = std::fs::File::create(&stderr_path).unwrap();
    let mut child = PluginRun::new(assert_cmd::cargo::cargo_bin!("holo-file"), "file", root)
        .cache_dir(root.join("tmp/holo.1"))
        .args(["scan"])
        .command()
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        let written = std::fs::metadata(&stderr_path).map_or(0, |m| m.len());
        if started.elapsed() > limit || written > 1 << 20 {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!(
                "holo-file scan still walking after {:?} with {written} bytes of warnings",
                started.elapsed()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let said = std::fs::read_to_string(&stderr_path).unwrap();
    assert!(status.success(), "{said}");
    said
}

#[test]
fn links_to_the_tree_itself_and_to_the_host_root_get_one_warning_each() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let resources = root.join("usr/share/holo/file");
    std::fs::create_dir_all(resources.join("sub")).unwrap();
    std::fs::write(resources.join("sub/notes.txt"), "").unwrap();
    std::os::unix::fs::symlink(".", resources.join("again")).unwrap();
    std::os::unix::fs::symlink(".", resources.join("loop")).unwrap();
    std::os::unix::fs::symlink("/", resources.join("host")).unwrap();
    std::os::unix::fs::symlink("sub", resources.join("alias")).unwrap();

    let said = scan_within(root, Duration::from_secs(30));
    let lines: Vec<&str> = said.lines().collect();
    let naming = |name: &str| {
        lines
            .iter()
            .filter(|l| l.contains(&format!("/usr/share/holo/file/{name}:")))
            .count()
    };
    assert_eq!(naming("again"), 1, "{said}");
    assert_eq!(naming("loop"), 1, "{said}");
    assert_eq!(naming("host"), 1, "{said}");
    assert!(
        said.contains("/usr/share/holo/file/host: not read: a symlink to a directory outside"),
        "{said}"
    );
    // The directory behind `alias` is read once, under its own name.
    assert_eq!(
        lines.iter().filter(|l| l.contains("notes.txt")).count(),
        1,
        "{said}"
    );
    assert!(
        !said.contains("/usr/share/holo/file/host/"),
        "the host's directories are not listed: {said}"
    );
    assert_eq!(lines.len(), 4, "{said}");
}

#[test]
fn many_unread_files_give_a_bounded_number_of_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let many = root.join("usr/share/holo/file/many");
    std::fs::create_dir_all(&many).unwrap();
    for n in 0..500 {
        std::fs::write(many.join(format!("{n:03}.txt")), "").unwrap();
    }
    let said = scan_within(root, Duration::from_secs(30));
    let lines: Vec<&str> = said.lines().collect();
    assert_eq!(lines.len(), 101, "{said}");
    assert!(
        lines[100].ends_with(
            "/usr/share/holo/file: more entries are not read; only the first 100 are named, tidy those up first"
        ),
        "{said}"
    );
}
