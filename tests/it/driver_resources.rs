//! The driver's set-up before scan, against real files: holorc read in
//! order with earlier plugins loaded first, directories created only once
//! everything loaded, generators (output order, generated symlinks), odd
//! files in resource directories, and the root passed to plugins.

use std::path::Path;
use std::process::Command;

/// A plugin that reports one entity per resource file (following symlinks
/// as names only) and shows the HOLO_ROOT_DIR it got.
const LISTING_PLUGIN: &str = r#"#!/bin/sh
case "$1" in
  info) echo MIN_API_VERSION=3; echo MAX_API_VERSION=3 ;;
  scan)
    for f in "$HOLO_RESOURCE_DIR"/*; do
      [ -e "$f" ] || [ -L "$f" ] || continue
      echo "ENTITY: res:$(basename "$f")"
      echo "SOURCE: $f"
      echo "root: [$HOLO_ROOT_DIR]"
    done ;;
  *) exit 0 ;;
esac
"#;

fn write_exec(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    test_support::make_executable(path);
}

/// A root with the listing plugin as `res` and the given holorc.
fn root(holorc: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for sub in ["etc", "tmp", "run", "usr/share/holo/res"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    std::fs::write(root.join("etc/holorc"), holorc).unwrap();
    write_exec(&root.join("usr/lib/holo/holo-res"), LISTING_PLUGIN);
    dir
}

fn holo(cwd: &Path, root: &str, args: &[&str]) -> (String, i32) {
    let output = Command::new(assert_cmd::cargo::cargo_bin("holo"))
        .args(args)
        .current_dir(cwd)
        .env("HOLO_ROOT_DIR", root)
        .env("TMPDIR", format!("{root}/tmp"))
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (text, output.status.code().unwrap_or(-1))
}

#[test]
fn plugins_before_a_bad_holorc_line_are_loaded_first() {
    let dir = root("plugin missing\nplugin res\nbogus line\n");
    let (out, code) = holo(dir.path(), "./", &["scan"]);
    assert_eq!(code, 255, "{out}");
    assert_eq!(
        out,
        "\n!! usr/lib/holo/holo-missing: file not found\n>> Skipping plugin: missing\n!! cannot parse configuration: unknown command: bogus line\netc/holorc:3: a holorc line is `plugin ID`, `plugin ID=BINARY`, a comment (#) or empty; fix or remove this line (see holorc(5))\n"
    );
    // Holo 3 creates state directories only once everything has loaded.
    assert!(!dir.path().join("var/lib/holo/res").exists());
}

#[test]
fn a_dot_slash_root_reaches_plugins_as_dot() {
    let dir = root("plugin res\n");
    std::fs::write(dir.path().join("usr/share/holo/res/one"), "").unwrap();
    let (out, code) = holo(dir.path(), "./", &["scan"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("        root [.]\n"), "{out}");
    assert!(dir.path().join("var/lib/holo/res").is_dir());
}

#[test]
fn generator_output_keeps_its_order_and_generated_symlinks_belong_to_it() {
    let dir = root("plugin res\n");
    let generator = dir.path().join("usr/share/holo/generators/sub/gen");
    write_exec(
        &generator,
        "#!/bin/sh\necho first >&2\necho second\nmkdir -p \"$OUT/res\"\nln -s target \"$OUT/res/link\"\n",
    );
    let (out, code) = holo(dir.path(), "./", &["scan"]);
    assert_eq!(code, 0, "{out}");
    let generator_path = "usr/share/holo/generators/sub/gen";
    assert!(
        out.contains(&format!(
            ">> output from {generator_path}: first\n>> output from {generator_path}: second\n"
        )),
        "{out}"
    );
    let (selected, code) = holo(dir.path(), "./", &["scan", "--porcelain", generator_path]);
    assert_eq!(code, 0, "{selected}");
    assert!(
        selected.contains(&format!("SOURCE: {generator_path}::res/link\n")),
        "{selected}"
    );
}

#[test]
fn a_fifo_among_the_resources_is_an_error_not_a_hang() {
    let dir = root("plugin res\n");
    let fifo = dir.path().join("usr/share/holo/res/fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    let (out, code) = holo(dir.path(), "./", &["scan"]);
    assert_eq!(code, 1, "as Holo 3 for a resource it cannot copy: {out}");
    assert!(
        out.contains("is not a regular file, directory or symlink"),
        "{out}"
    );
}

#[test]
fn a_root_that_is_not_utf8_is_an_error() {
    use std::os::unix::ffi::OsStrExt;
    let dir = root("plugin res\n");
    let output = Command::new(assert_cmd::cargo::cargo_bin("holo"))
        .arg("scan")
        .env("HOLO_ROOT_DIR", std::ffi::OsStr::from_bytes(b"/tmp/r\xff"))
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(255));
    assert!(String::from_utf8_lossy(&output.stderr).contains("is not valid UTF-8"));
}

#[test]
fn generators_run_in_walk_order() {
    // Go's filepath.Walk runs a/x before a-b ('a' sorts before 'a-b').
    let dir = root("plugin res\n");
    let generators = dir.path().join("usr/share/holo/generators");
    write_exec(&generators.join("a-b"), "#!/bin/sh\necho a-b\n");
    write_exec(&generators.join("a/x"), "#!/bin/sh\necho a/x\n");
    let (out, code) = holo(dir.path(), "./", &["scan"]);
    assert_eq!(code, 0, "{out}");
    let first = out
        .find("from usr/share/holo/generators/a/x")
        .expect("a/x ran");
    let second = out
        .find("from usr/share/holo/generators/a-b")
        .expect("a-b ran");
    assert!(first < second, "{out}");
}

#[test]
fn a_generator_cache_dir_is_named_as_holo3_names_it() {
    use sha2::Digest;
    let dir = root("plugin res\n");
    write_exec(
        &dir.path().join("usr/share/holo/generators/gen"),
        "#!/bin/sh\nbasename \"$HOLO_CACHE_DIR\"\n[ -d \"$HOLO_CACHE_DIR\" ] && echo exists\n",
    );
    let (out, code) = holo(dir.path(), "./", &["scan"]);
    assert_eq!(code, 0, "{out}");
    let path = "usr/share/holo/generators/gen";
    let digest = sha2::Sha256::digest(path.as_bytes());
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    assert!(
        out.contains(&format!(
            ">> output from {path}: {hex}\n>> output from {path}: exists\n"
        )),
        "{out}"
    );
}
