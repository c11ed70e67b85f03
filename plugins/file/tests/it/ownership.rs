//! holo-file with real owners and groups: the fixture dumps cannot show
//! them, so these tests run the plugin binary in test mode and check the uid
//! and gid on disk. Changing owners needs root, as in CI: the tests that chown
//! are ignored by default and fail when run without root.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use test_support::plugin_run::PluginRun;

use holo_file::provider::posix;
use holo_plugin::root_fs::RootFs;

/// A test root with users `app` (uid 1234) and group `web` (gid 2345).
struct Root {
    dir: tempfile::TempDir,
}

impl Root {
    fn new(resources: &str) -> Root {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = Root { dir };
        for (path, text) in [
            (
                "etc/passwd",
                "root:x:0:0:root:/root:/bin/sh\napp:x:1234:1234::/srv/app:/bin/sh\n",
            ),
            ("etc/group", "root:x:0:\nweb:x:2345:app\n"),
            ("etc/hostname", "box1\n"),
            ("etc/os-release", "ID=debian\nVERSION_ID=12\n"),
            ("usr/share/holo/file/files.toml", resources),
        ] {
            let target = root.path(path);
            fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
            fs::write(target, text).expect("write");
        }
        fs::create_dir_all(root.cache()).expect("mkdir cache");
        root
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join("root").join(relative)
    }

    fn cache(&self) -> PathBuf {
        self.dir.path().join("cache")
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        PluginRun::new(
            assert_cmd::cargo::cargo_bin!("holo-file"),
            "file",
            &self.path(""),
        )
        .args(args)
        .cache_dir(self.cache())
        .output()
    }

    /// Scans, then applies `entity`; returns stdout and stderr of the apply.
    fn apply(&self, entity: &str) -> (String, String, bool) {
        let scan = self.run(&["scan"]);
        assert!(
            scan.status.success(),
            "scan: {}",
            String::from_utf8_lossy(&scan.stderr)
        );
        let apply = self.run(&["apply", entity]);
        (
            String::from_utf8_lossy(&apply.stdout).into_owned(),
            String::from_utf8_lossy(&apply.stderr).into_owned(),
            apply.status.success(),
        )
    }

    fn owner(&self, relative: &str) -> (u32, u32, u32) {
        let meta = fs::symlink_metadata(self.path(relative)).expect("stat");
        (meta.uid(), meta.gid(), meta.mode() & 0o7777)
    }
}

#[test]
#[ignore = "needs root"]
fn names_are_looked_up_below_the_root_and_set_on_files_and_directories() {
    test_support::require_root("changing owners");
    let root = Root::new(
        r#"
[[file]]
name = "/srv/app"
ensure = "directory"
owner = "app"
group = "web"
mode = "0750"

[[file]]
name = "/srv/app/config.ini"
content = "listen = {{ facts.hostname }}:8080\n"
owner = "app"
group = "web"
mode = "0640"
"#,
    );
    let (_, stderr, ok) = root.apply("file:/srv/app");
    assert!(ok, "{stderr}");
    let (_, stderr, ok) = root.apply("file:/srv/app/config.ini");
    assert!(ok, "{stderr}");
    assert_eq!(root.owner("srv/app"), (1234, 2345, 0o750));
    assert_eq!(root.owner("srv/app/config.ini"), (1234, 2345, 0o640));
    assert_eq!(
        fs::read_to_string(root.path("srv/app/config.ini")).expect("read"),
        "listen = box1:8080\n"
    );
}

#[test]
#[ignore = "needs root"]
fn numeric_ids_need_no_user_database_entry() {
    test_support::require_root("changing owners");
    let root = Root::new(
        "[[file]]\nname = \"/etc/numeric.conf\"\ncontent = \"x\\n\"\nowner = 4321\ngroup = \"5432\"\nmode = \"0600\"\n",
    );
    let (_, stderr, ok) = root.apply("file:/etc/numeric.conf");
    assert!(ok, "{stderr}");
    assert_eq!(root.owner("etc/numeric.conf"), (4321, 5432, 0o600));
}

#[test]
#[ignore = "needs root"]
fn owner_drift_is_converged_without_force() {
    test_support::require_root("changing owners");
    let root = Root::new(
        "[[file]]\nname = \"/etc/app.conf\"\ncontent = \"x\\n\"\nowner = \"app\"\ngroup = \"web\"\nmode = \"0644\"\n",
    );
    let (_, stderr, ok) = root.apply("file:/etc/app.conf");
    assert!(ok, "{stderr}");
    std::os::unix::fs::chown(root.path("etc/app.conf"), Some(0), Some(0)).expect("chown");
    let noop = root.run(&["noop", "file:/etc/app.conf"]);
    assert_eq!(
        String::from_utf8_lossy(&noop.stdout),
        "Would have changed owner root to app\nWould have changed group root to web\n"
    );
    assert_eq!(
        root.owner("etc/app.conf"),
        (0, 0, 0o644),
        "noop changes nothing"
    );
    let (stdout, stderr, ok) = root.apply("file:/etc/app.conf");
    assert!(ok, "{stderr}");
    assert_eq!(
        stdout, "owner changed root to app\ngroup changed root to web\n",
        "one line per property, and not `not changed`"
    );
    assert_eq!(root.owner("etc/app.conf"), (1234, 2345, 0o644));
    // An id without a name shows as the number.
    std::os::unix::fs::chown(root.path("etc/app.conf"), Some(777), None).expect("chown");
    let (stdout, stderr, ok) = root.apply("file:/etc/app.conf");
    assert!(ok, "{stderr}");
    assert_eq!(stdout, "owner changed 777 to app\n");
}

#[test]
#[ignore = "needs root"]
fn setuid_files_keep_their_bits_after_the_chown() {
    test_support::require_root("changing owners");
    let root = Root::new(
        "[[file]]\nname = \"/usr/bin/tool\"\ncontent = \"#!/bin/sh\\n\"\nowner = \"app\"\ngroup = \"web\"\nmode = \"6755\"\nallow_setid = true\n",
    );
    fs::create_dir_all(root.path("usr/bin")).expect("mkdir");
    let (_, stderr, ok) = root.apply("file:/usr/bin/tool");
    assert!(ok, "{stderr}");
    assert_eq!(root.owner("usr/bin/tool"), (1234, 2345, 0o6755));
    // An owner drift is fixed with the bits kept.
    std::os::unix::fs::chown(root.path("usr/bin/tool"), Some(0), None).expect("chown");
    let (stdout, stderr, ok) = root.apply("file:/usr/bin/tool");
    assert!(ok, "{stderr}");
    assert_eq!(root.owner("usr/bin/tool"), (1234, 2345, 0o6755), "{stdout}");
}

#[test]
fn an_unknown_user_fails_the_apply_and_says_what_to_do() {
    let root = Root::new(
        "[[file]]\nname = \"/etc/x.conf\"\ncontent = \"x\\n\"\nowner = \"nobody-here\"\ngroup = \"web\"\nmode = \"0644\"\n",
    );
    let (_, stderr, ok) = root.apply("file:/etc/x.conf");
    assert!(!ok);
    assert!(stderr.contains("nobody-here"), "{stderr}");
    assert!(
        stderr.contains("must exist") && stderr.contains("earlier in the run"),
        "{stderr}"
    );
    assert!(!root.path("etc/x.conf").exists());
}

#[test]
#[ignore = "needs root"]
fn an_owner_that_did_not_stick_is_chowned_again_on_the_path() {
    test_support::require_root("changing owners");
    // What a FUSE or bind mount does: the file ends up with another owner
    // than the one the temp file had. ensure_owner must notice and fix it.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("f");
    fs::write(&path, "x").expect("write");
    std::os::unix::fs::chown(&path, Some(0), Some(0)).expect("chown");
    posix::ensure_owner(&RootFs::unconfined(), &path, 1234, 2345).expect("re-chown");
    let meta = fs::metadata(&path).expect("stat");
    assert_eq!((meta.uid(), meta.gid()), (1234, 2345));
}

#[test]
#[ignore = "needs root"]
fn store_sets_owner_and_mode_on_the_final_path() {
    test_support::require_root("changing owners");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("stored");
    posix::store(
        &RootFs::unconfined(),
        &path,
        b"content\n",
        1234,
        2345,
        0o640,
    )
    .expect("store");
    let meta = fs::metadata(&path).expect("stat");
    assert_eq!(
        (meta.uid(), meta.gid(), meta.mode() & 0o7777),
        (1234, 2345, 0o640)
    );
}

#[test]
fn facts_and_data_subcommands_print_toml() {
    let root = Root::new("");
    let data = root.path("etc/holo/data.toml");
    fs::create_dir_all(data.parent().expect("parent")).expect("mkdir");
    fs::write(
        &data,
        "[data]\nport = 80\n[hierarchy]\norder = [\"host:{{ facts.hostname }}\"]\n[overrides.\"host:box1\"]\nport = 8080\n",
    )
    .expect("write");
    let facts = root.run(&["facts"]);
    let facts_text = String::from_utf8_lossy(&facts.stdout);
    assert!(
        facts.status.success(),
        "{}",
        String::from_utf8_lossy(&facts.stderr)
    );
    assert!(facts_text.contains("hostname = \"box1\""), "{facts_text}");
    assert!(facts_text.contains("[os]\nid = \"debian\""), "{facts_text}");
    let data = root.run(&["data"]);
    assert!(
        data.status.success(),
        "{}",
        String::from_utf8_lossy(&data.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&data.stdout), "port = 8080\n");
    let extra = root.run(&["data", "extra"]);
    assert!(!extra.status.success());
}

#[test]
fn a_missing_parent_directory_is_a_clear_error() {
    let root = Root::new(
        "[[file]]\nname = \"/no/such/dir/file\"\ncontent = \"x\"\nowner = 0\ngroup = 0\nmode = \"0644\"\n",
    );
    let (_, stderr, ok) = root.apply("file:/no/such/dir/file");
    assert!(!ok);
    assert!(
        stderr.contains("does not exist; create it first"),
        "{stderr}"
    );
    assert!(!Path::new(&root.path("no")).exists());
}
