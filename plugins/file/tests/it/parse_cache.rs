//! The parse cache (`var/cache/holo/parsed/file`): a scan takes the tables
//! of an unchanged resource file from it, and each input that changes what
//! the tables are makes the scan parse the file again: the resource file,
//! a template file it reads (or looks for), facts, custom facts, data and
//! an environment variable. A `source` file is read at apply, whatever the
//! cache holds. Each scan with the cache is held against a scan of the
//! same root without it.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use test_support::plugin_run::PluginRun;

const CACHE: &str = "var/cache/holo/parsed/file";

const PLAIN: &str = r#"[[file]]
name = "/etc/plain"
content = "hello\n"
template = false
OWNERSHIP

[[file]]
name = "/etc/banner"
source = "banner.txt"
OWNERSHIP
"#;

const TEMPLATED: &str = r#"[[file]]
name = "/etc/templated"
content = "{{ facts.role }} {{ facts.tier }} {{ data.port }} {{ env.GREETING }} {{ template('motd.j2') }}{% include 'extra.j2' ignore missing %}"
OWNERSHIP

[[file]]
name = "/etc/conditional"
if = "data.port > 80"
content = "on\n"
OWNERSHIP
"#;

/// A root with the resources above and their inputs.
fn root_with_inputs(dir: &Path) -> PathBuf {
    let root = dir.join("root");
    let resources = root.join("usr/share/holo/file");
    for sub in ["etc/holo/facts.d", "tmp", "usr/share/holo/file"] {
        fs::create_dir_all(root.join(sub)).expect("mkdir");
    }
    // Owned by whoever runs the test, so that apply needs no root.
    let me = fs::metadata(dir).expect("stat");
    let ownership = format!(
        "owner = \"{}\"\ngroup = \"{}\"\nmode = \"0644\"",
        me.uid(),
        me.gid()
    );
    fs::write(
        resources.join("plain.toml"),
        PLAIN.replace("OWNERSHIP", &ownership),
    )
    .expect("write");
    fs::write(
        resources.join("templated.toml"),
        TEMPLATED.replace("OWNERSHIP", &ownership),
    )
    .expect("write");
    fs::write(resources.join("banner.txt"), "first banner\n").expect("write");
    fs::write(resources.join("motd.j2"), "motd one").expect("write");
    fs::write(root.join("etc/holo/facts.toml"), "role = \"web\"\n").expect("write");
    fs::write(root.join("etc/holo/facts.d/tier.toml"), "tier = \"gold\"\n").expect("write");
    fs::write(root.join("etc/holo/data.toml"), "[data]\nport = 80\n").expect("write");
    root
}

/// `holo-file scan` of `root` with the cache used from one table on, or
/// (`cached` false) with the cache file moved away for the scan and none
/// written: the scan report.
fn scan(root: &Path, greeting: &str, cached: bool, run: usize) -> String {
    let cache = root.join(CACHE);
    let aside = root.join("tmp/parsed-aside");
    if !cached && cache.exists() {
        fs::rename(&cache, &aside).expect("move the cache aside");
    }
    let output = PluginRun::new(assert_cmd::cargo::cargo_bin!("holo-file"), "file", root)
        .args(["scan"])
        // Every run of the driver has a cache directory of its own.
        .cache_dir(root.join(format!("tmp/holo.{run}")))
        .env("GREETING", greeting)
        .env(
            "HOLO_TEST_PARSE_CACHE_FROM",
            if cached { "1" } else { "1000000" },
        )
        .output();
    if aside.exists() {
        fs::rename(&aside, &cache).expect("move the cache back");
    }
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8")
}

/// Changes one input and checks that the cached scan sees it.
struct Steps<'r> {
    root: &'r Path,
    greeting: &'static str,
    last: String,
    run: usize,
}

impl Steps<'_> {
    fn scan_after(&mut self, change: &str) {
        self.run += 1;
        let cached = scan(self.root, self.greeting, true, self.run);
        let parsed = scan(self.root, self.greeting, false, self.run);
        assert_eq!(
            cached, parsed,
            "after {change}: the cache gives another scan"
        );
        assert_ne!(cached, self.last, "after {change}: the scan did not change");
        self.last = cached;
    }
}

#[test]
fn every_input_of_a_cached_resource_file_invalidates_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = root_with_inputs(dir.path());
    let first = scan(&root, "hi", true, 0);
    assert!(first.contains("ENTITY: file:/etc/templated"), "{first}");
    assert!(root.join(CACHE).is_file(), "the scan keeps a cache");
    assert_eq!(first, scan(&root, "hi", false, 0));
    assert_eq!(first, scan(&root, "hi", true, 0), "an unchanged root");
    // The scan takes the tables from the cache: one changed there shows.
    let cache = root.join(CACHE);
    let kept = fs::read_to_string(&cache).expect("cache");
    fs::write(&cache, kept.replace("hello", "HELLO")).expect("change the cache");
    assert_ne!(first, scan(&root, "hi", true, 0), "the cache was not read");
    fs::write(&cache, kept).expect("restore the cache");

    let mut steps = Steps {
        root: &root,
        greeting: "hi",
        last: first,
        run: 0,
    };
    let resources = root.join("usr/share/holo/file");
    // The same size: the file's times and inode tell.
    let plain = fs::read_to_string(resources.join("plain.toml")).expect("read");
    fs::write(
        resources.join("plain.toml"),
        plain.replace("hello", "hallo"),
    )
    .expect("write");
    steps.scan_after("an edit of the resource file");
    fs::write(resources.join("motd.j2"), "motd two").expect("write");
    steps.scan_after("an edit of a template file");
    fs::write(resources.join("extra.j2"), " and more").expect("write");
    steps.scan_after("a template file that was looked for and is there now");
    fs::write(root.join("etc/holo/facts.toml"), "role = \"db\"\n").expect("write");
    steps.scan_after("a changed fact");
    fs::write(root.join("etc/holo/facts.d/tier.toml"), "tier = \"iron\"\n").expect("write");
    steps.scan_after("a changed custom fact");
    fs::write(root.join("etc/holo/data.toml"), "[data]\nport = 81\n").expect("write");
    steps.scan_after("changed data");
    steps.greeting = "hello";
    steps.scan_after("a changed environment variable");
}

#[test]
fn a_cached_scan_applies_the_source_file_as_it_is_now() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = root_with_inputs(dir.path());
    let apply = |run: usize| {
        scan(&root, "hi", true, run);
        let output = PluginRun::new(assert_cmd::cargo::cargo_bin!("holo-file"), "file", &root)
            .args(["apply", "file:/etc/banner"])
            .cache_dir(root.join(format!("tmp/holo.{run}")))
            .env("HOLO_TEST_PARSE_CACHE_FROM", "1")
            .output();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        fs::read_to_string(root.join("etc/banner")).expect("applied")
    };
    assert_eq!(apply(1), "first banner\n");
    fs::write(
        root.join("usr/share/holo/file/banner.txt"),
        "second banner\n",
    )
    .expect("write");
    assert_eq!(apply(2), "second banner\n");
}
