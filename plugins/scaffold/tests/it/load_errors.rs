//! A `[[scaffold]]` table that fails to load: `holo-scaffold scan` shows
//! its error and no `>> not read` warning, neither for the template tree
//! the table names nor for anything else in the resource directory (a
//! warning would be false for files the broken table names, and its
//! advice, to move them out, would break the config once mended).

use std::fs;
use std::path::Path;
use test_support::plugin_run::PluginRun;

/// A resource directory with one entry on every `>> not read` path: a
/// template tree the table names, an empty directory, a TOML file and
/// another file in a subdirectory, a top-level file that is no TOML, a
/// symlink loop and a symlink to a directory outside.
fn root_with(table: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let resources = dir.path().join("root/usr/share/holo/scaffold");
    for (relative, text) in [
        ("etc/hostname", "web01\n"),
        ("tmp/cache/.keep", ""),
        ("usr/share/holo/scaffold/templates/app/f", "x\n"),
        ("usr/share/holo/scaffold/other/nested.toml", ""),
        ("usr/share/holo/scaffold/other/notes.txt", ""),
        ("usr/share/holo/scaffold/README", ""),
    ] {
        let path = dir.path().join("root").join(relative);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, text).expect("write");
    }
    fs::create_dir_all(resources.join("empty")).expect("mkdir");
    std::os::unix::fs::symlink(".", resources.join("loop")).expect("symlink");
    std::os::unix::fs::symlink("/", resources.join("host")).expect("symlink");
    fs::write(
        resources.join("app.toml"),
        format!("[[scaffold]]\nname = \"/srv/app\"\nsource = \"templates/app\"\n{table}"),
    )
    .expect("write");
    dir
}

/// [`root_with`] and more unread files than the walker names.
fn crowded_root_with(table: &str) -> tempfile::TempDir {
    let dir = root_with(table);
    let crowd = dir.path().join("root/usr/share/holo/scaffold/crowd");
    fs::create_dir_all(&crowd).expect("mkdir");
    for index in 0..120 {
        fs::write(crowd.join(format!("f{index:03}")), "").expect("write");
    }
    dir
}

fn scan(root: &Path) -> (bool, String) {
    let output = PluginRun::new(
        env!("CARGO_BIN_EXE_holo-scaffold"),
        "scaffold",
        &root.join("root"),
    )
    .args(["scan"])
    .output();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_table_that_fails_to_load_gets_its_error_and_no_not_read_warning() {
    for (table, error) in [
        ("data = 3\n", "app.toml:4:"),
        ("purge = \"yes\"\n", "app.toml:4:"),
        ("[scaffold.post]\nx = \"y\"\n", "app.toml:4:"),
        ("colour = \"red\"\n", "app.toml:4:"),
    ] {
        let root = crowded_root_with(table);
        let (success, stderr) = scan(root.path());
        assert!(!success, "{table}: {stderr}");
        assert!(stderr.contains(error), "{table}: {stderr}");
        assert!(!stderr.contains("not read"), "{table}: {stderr}");
    }
}

#[test]
fn a_table_that_loads_leaves_the_warnings_for_what_it_does_not_name() {
    let root = root_with("");
    let (success, stderr) = scan(root.path());
    assert!(success, "{stderr}");
    assert!(!stderr.contains("templates/app"), "{stderr}");
    for unread in [
        "/empty:",
        "/other/nested.toml:",
        "/other/notes.txt:",
        "/README:",
        "/loop:",
        "/host:",
    ] {
        assert!(
            stderr.contains(&format!("{unread} not read")),
            "{unread}: {stderr}"
        );
    }
}

#[test]
fn a_table_that_loads_leaves_the_more_warning_for_a_crowd() {
    let root = crowded_root_with("");
    let (success, stderr) = scan(root.path());
    assert!(success, "{stderr}");
    assert!(stderr.contains("more entries are not read"), "{stderr}");
}

#[test]
fn a_line_break_in_the_name_names_the_file_and_line() {
    let root = root_with("");
    fs::write(
        root.path().join("root/usr/share/holo/scaffold/app.toml"),
        "[[scaffold]]\nname = \"/srv/a\\npp\"\nsource = \"templates/app\"\n",
    )
    .expect("write");
    let (success, stderr) = scan(root.path());
    assert!(!success, "{stderr}");
    assert!(
        stderr
            .contains("app.toml:2: the entity id \"scaffold:/srv/a\\npp\" would hold a line break"),
        "{stderr}"
    );
    assert!(!stderr.contains("invalid entity id"), "{stderr}");
}
