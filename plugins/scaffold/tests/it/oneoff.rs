//! `holo-scaffold ensure DIR --source TEMPLATES --data '{...}'`: one
//! scaffold from flags, rendered as `holo apply` renders the same table.

use std::fs;

use test_support::oneoff::{OneOffRoot, text};

fn root() -> OneOffRoot {
    let root = OneOffRoot::new("holo-scaffold");
    root.write("srv/templates/app.conf", "port {{ data.port }}\n");
    root
}

#[test]
fn ensure_renders_with_table_data_once() {
    let root = root();
    let args = [
        "ensure",
        "/etc/app",
        "--source",
        "/srv/templates",
        "--engine",
        "minijinja",
        "--data",
        "{ port = 8080 }",
    ];
    let first = root.run(&args);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    assert!(
        text(&first.stdout)
            .starts_with("\nWorking on scaffold:/etc/app\n  found in holo-scaffold ensure\n"),
        "{}",
        text(&first.stdout)
    );
    assert_eq!(
        fs::read_to_string(root.path("etc/app/app.conf")).expect("rendered"),
        "port 8080\n"
    );
    let second = root.run(&args);
    assert_eq!(second.status.code(), Some(0));
    assert_eq!(text(&second.stdout), "");
    let absent = root.run(&[
        "ensure",
        "/etc/app",
        "--source",
        "/srv/templates",
        "--engine",
        "minijinja",
        "--data",
        "{ port = 8080 }",
        "--absent",
    ]);
    assert_eq!(absent.status.code(), Some(0), "{}", text(&absent.stderr));
    assert!(!root.path("etc/app/app.conf").exists());
}

#[test]
fn a_relative_source_is_named_as_given() {
    let root = root();
    let output = root.run(&["ensure", "/etc/app", "--source", "templates"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(
        stderr
            .starts_with("!! holo-scaffold ensure: --source: source templates is not a directory"),
        "{stderr}"
    );
    assert!(
        stderr.trim_end().ends_with(
            "templates is relative: a one-off does not take it from the current directory; give an absolute path (as $PWD/templates)"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains(".toml"), "{stderr}");
}

#[test]
fn a_source_above_the_current_directory_needs_an_absolute_path() {
    let root = root();
    let output = root.run(&["ensure", "/etc/app", "--source", "../x"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stderr).trim_end(),
        "!! holo-scaffold ensure: --source: source \"../x\" contains \"..\": ../x is relative: a one-off does not take it from the current directory; give an absolute path (as $PWD/../x)"
    );
}

#[test]
fn status_gives_the_ensured_table_and_the_managed_files() {
    let root = root();
    let args = [
        "ensure",
        "/etc/app",
        "--source",
        "/srv/templates",
        "--engine",
        "minijinja",
        "--data",
        "{ port = 8080 }",
    ];
    assert_eq!(root.run(&args).status.code(), Some(0));
    let status = root.run(&["status", "/etc/app"]);
    assert_eq!(status.status.code(), Some(0), "{}", text(&status.stderr));
    assert_eq!(
        text(&status.stdout),
        "[[scaffold]]\nname = \"/etc/app\"\n# holo-scaffold's record lists 1 managed file:\n#   /etc/app/app.conf (as written)\ndata = { port = 8080 }\nengine = \"minijinja\"\nensure = \"present\"\nsource = \"/srv/templates\"\n"
    );
    fs::write(root.path("etc/app/app.conf"), "port 9090\n").expect("edit");
    let edited = text(&root.run(&["status", "/etc/app"]).stdout);
    assert!(
        edited.contains("#   /etc/app/app.conf (changed since it was written)\n"),
        "{edited}"
    );
    // The table is one for a resource file: its properties as flags
    // converge nothing new but the edited file.
    let table: toml::Table = toml::from_str(&edited).expect("toml");
    assert_eq!(
        table["scaffold"][0]["data"]["port"].as_integer(),
        Some(8080)
    );
}

#[test]
fn status_without_a_record_lists_the_files_and_asks_for_the_source() {
    let root = root();
    root.write("etc/other/a.conf", "a\n");
    root.write("etc/other/sub/b.conf", "b\n");
    let status = root.run(&["status", "/etc/other"]);
    assert_eq!(status.status.code(), Some(3), "{}", text(&status.stderr));
    assert_eq!(
        text(&status.stdout),
        "[[scaffold]]\nname = \"/etc/other\"\n# holo-scaffold has no record of /etc/other; 2 files are there now:\n#   /etc/other/a.conf\n#   /etc/other/sub/b.conf\n# source: neither a holo-scaffold ensure nor a state record says what the files were rendered from; fill in the template directory or URL (and engine, unless jet)\nensure = \"present\"\n"
    );
    let missing = root.run(&["status", "/etc/none"]);
    assert_eq!(missing.status.code(), Some(3));
    assert!(
        text(&missing.stdout).ends_with("ensure = \"absent\"\n"),
        "{}",
        text(&missing.stdout)
    );
    let relative = root.run(&["status", "etc/none"]);
    assert_eq!(relative.status.code(), Some(1));
    assert!(
        text(&relative.stderr).contains("is not an absolute path"),
        "{}",
        text(&relative.stderr)
    );
}
