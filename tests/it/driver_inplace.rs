//! The `inplace` extension against real files: a plugin that declares it
//! reads its static resource directory in place (nothing is copied), unless
//! a generator wrote resources for it; other plugins keep Holo 3's copy.

use std::path::Path;
use std::process::Command;

/// Reports where its resources are and whether the driver copied them;
/// `$DECLARE` is the EXTENSIONS line of `info`, which also records the
/// resource directory it was run with.
const PROBE_PLUGIN: &str = r#"#!/bin/sh
case "$1" in
  info)
    echo MIN_API_VERSION=3; echo MAX_API_VERSION=3; echo "$DECLARE"
    echo "$HOLO_RESOURCE_DIR" > "$HOLO_ROOT_DIR/info-resource-dir" ;;
  scan)
    echo "ENTITY: probe:dir"
    # brackets keep the driver from translating the paths back
    echo "resources: [$HOLO_RESOURCE_DIR]"
    echo "origin: [$HOLO_RESOURCE_ORIGIN]"
    if [ -e "${HOLO_CACHE_DIR%/*}/generated-resources/probe" ]; then
      echo "copy: yes"
    else
      echo "copy: no"
    fi
    for f in "$HOLO_RESOURCE_DIR"/*.txt; do
      [ -e "$f" ] || continue
      echo "ENTITY: probe:$(basename "$f")"
      echo "SOURCE: $f"
      echo "text: $(cat "$f")"
    done ;;
  *) exit 0 ;;
esac
"#;

fn root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for sub in ["etc", "tmp", "run", "usr/share/holo/probe", "usr/lib/holo"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    std::fs::write(root.join("etc/holorc"), "plugin probe\n").unwrap();
    std::fs::write(root.join("usr/share/holo/probe/static.txt"), "static\n").unwrap();
    write_exec(&root.join("usr/lib/holo/holo-probe"), PROBE_PLUGIN);
    dir
}

fn write_exec(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    test_support::make_executable(path);
}

/// `holo scan` run from inside the root with `HOLO_ROOT_DIR=./`, so the
/// paths in the output do not depend on the temporary directory.
fn scan(root: &Path, declare: &str) -> String {
    let output = Command::new(assert_cmd::cargo::cargo_bin("holo"))
        .arg("scan")
        .current_dir(root)
        .env("HOLO_ROOT_DIR", "./")
        .env("TMPDIR", "./tmp")
        .env("DECLARE", declare)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(stderr, "");
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn an_inplace_plugin_reads_the_static_directory_without_a_copy() {
    let dir = root();
    let out = scan(dir.path(), "EXTENSIONS=noop,inplace");
    assert_eq!(
        out,
        "\nprobe:dir\n   resources [usr/share/holo/probe]\n      origin [usr/share/holo/probe]\n        copy no\n\n\
         probe:static.txt\n        text static\n\n"
    );
}

#[test]
fn a_plugin_without_the_extension_keeps_holo3_copy() {
    let dir = root();
    let out = scan(dir.path(), "EXTENSIONS=noop");
    assert!(out.contains("copy yes\n"), "{out}");
    assert!(
        out.contains("   resources [tmp/holo."),
        "the virtual resource directory: {out}"
    );
    assert!(out.contains("/generated-resources/probe]\n"), "{out}");
    assert!(out.contains("origin [usr/share/holo/probe]\n"), "{out}");
    // SOURCE paths show the static file, as Holo 3 translates them.
    assert!(
        out.contains("probe:static.txt\n        text static\n"),
        "{out}"
    );
}

#[test]
fn an_inplace_plugin_with_generated_resources_gets_the_merged_copy() {
    let dir = root();
    write_exec(
        &dir.path().join("usr/share/holo/generators/make-probe"),
        "#!/bin/sh\nmkdir -p \"$OUT/probe\" && echo generated > \"$OUT/probe/generated.txt\"\n",
    );
    let out = scan(dir.path(), "EXTENSIONS=inplace");
    assert!(out.contains("copy yes\n"), "{out}");
    assert!(out.contains("/generated-resources/probe]\n"), "{out}");
    assert!(
        out.contains("probe:generated.txt\n        text generated\n"),
        "{out}"
    );
    assert!(
        out.contains("probe:static.txt\n        text static\n"),
        "{out}"
    );
}

#[test]
fn info_runs_with_the_static_directory_as_in_holo3() {
    for declare in ["EXTENSIONS=inplace", ""] {
        let dir = root();
        scan(dir.path(), declare);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("info-resource-dir")).unwrap(),
            "usr/share/holo/probe\n",
            "{declare:?}"
        );
    }
}
