//! The undefined-value messages that holo-file(8) and holo-data(5) quote are
//! the ones holo-file prints: each example is rebuilt as a root (the file
//! and line the page names), `holo-file scan` runs on it in test mode, and
//! the page's text, unwrapped, must equal what the program prints.

use std::fs;
use std::path::Path;
use test_support::plugin_run::PluginRun;

/// The `.EX` blocks of `man/PAGE` that contain `needle`, each unwrapped to
/// one line (roff escapes `\-` and `\(aq` undone).
fn quoted_examples(page: &str, needle: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../man")
        .join(page);
    let text = fs::read_to_string(&path).expect("the page is readable");
    text.split(".EX\n")
        .skip(1)
        .filter_map(|block| block.split(".EE").next())
        .map(|block| {
            block
                .replace("\\-", "-")
                .replace("\\(aq", "'")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|block| block.contains(needle))
        .collect()
}

/// `holo-file scan` in test mode on a root at `./root` below `dir`: the
/// `!!` lines it printed, as one line each.
fn scan_errors(dir: &Path) -> Vec<String> {
    // Relative directories: the messages name files as the user gave them.
    let output = PluginRun::new(
        assert_cmd::cargo::cargo_bin!("holo-file"),
        "file",
        Path::new("./root"),
    )
    .args(["scan"])
    .inherit_env()
    .cache_dir("./cache")
    .state_dir("./state")
    .command()
    .current_dir(dir)
    .output()
    .expect("holo-file runs");
    assert!(!output.status.success());
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter(|line| line.starts_with("!!"))
        // the page shows the paths a real machine has
        .map(|line| line.replace("./root/usr/", "/usr/"))
        .collect()
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    fs::write(path, text).expect("write");
}

#[test]
fn holo_file_8_quotes_the_undefined_value_error_holo_file_prints() {
    let examples = quoted_examples("holo-file.8", "is undefined");
    assert_eq!(examples.len(), 1, "{examples:?}");
    let dir = tempfile::tempdir().expect("tempdir");
    let resources = dir.path().join("root/usr/share/holo/file");
    write(&dir.path().join("root/etc/holo/data.toml"), "[data]\n");
    write(
        &resources.join("app.toml"),
        "# app.toml:5 renders part.j2\n\n[[file]]\nname = \"/etc/app.conf\"\ncontent = \"{{ template('app/part.j2') }}\"\n",
    );
    write(
        &resources.join("app/part.j2"),
        "a\nb\nport={{ data.port }}\n",
    );
    assert_eq!(scan_errors(dir.path()), examples);
}

#[test]
fn holo_data_5_quotes_the_undefined_fact_error_holo_file_prints() {
    // The page's other example is holo-scaffold's (its tests check it).
    let examples: Vec<String> = quoted_examples("holo-data.5", "is undefined")
        .into_iter()
        .filter(|example| example.contains("holo/file/"))
        .collect();
    assert_eq!(examples.len(), 1, "{examples:?}");
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        &dir.path().join("root/usr/share/holo/file/app.toml"),
        "#\n#\n#\n#\n#\n#\n#\n[[file]]\nname = \"/etc/app.conf\"\ncontent = \"cpus={{ facts.cpus }}\"\n",
    );
    assert_eq!(scan_errors(dir.path()), examples);
}
