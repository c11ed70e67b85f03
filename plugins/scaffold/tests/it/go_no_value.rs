//! `engine = "go"` and a missing key: Go and CCM write `<no value>` and go
//! on (so that `{{ if .data.x }}` works); holo-scaffold does the same and
//! warns, naming the template file, the line and the key.

use std::fs;
use test_support::plugin_run::PluginRun;

#[test]
fn a_missing_key_is_rendered_as_go_does_with_a_warning_naming_file_line_and_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    for (relative, text) in [
        ("etc/hostname", "web01\n"),
        ("tmp/cache/.keep", ""),
        (
            "usr/share/holo/scaffold/app.toml",
            "[[scaffold]]\nname = \"/srv/app\"\nsource = \"app\"\nengine = \"go\"\n",
        ),
        (
            "usr/share/holo/scaffold/app/app.conf",
            "host={{ .facts.hostname }}\n{{ if .data.debug }}debug{{ end }}\nport={{ .data.port }}\n",
        ),
        (
            "usr/share/holo/scaffold/app/quiet.conf",
            "{{ if .data.debug }}debug{{ end }}\n",
        ),
    ] {
        let path = root.join(relative);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, text).expect("write");
    }
    let output = PluginRun::new(env!("CARGO_BIN_EXE_holo-scaffold"), "scaffold", &root)
        .args(["scan"])
        .output();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|line| line.starts_with(">> "))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].ends_with("app/app.conf:3: {{ .data.port }} has no value (the map has no such key), so the rendered file holds \"<no value>\" (as Go and CCM write it); define the key in etc/holo/data.toml or the resource's data, or give a default with {{ lookup \"PATH.TO.KEY\" \"DEFAULT\" }}"),
        "{stderr}"
    );
}
