//! Includes read the template tree only: jinja's `{% include %}` of a
//! sibling renders it, and in jinja and Jet an include path that leaves
//! the tree (`..`, absolute) is refused with a message saying so. (A
//! symlink out of the tree is refused before any template renders; Go
//! templates include by template name, never by path.)

use std::fs;

use test_support::plugin_run::PluginRun;

/// `holo-scaffold scan` of a scaffold `/srv/app` of `engine` whose tree
/// `app` holds `files`: whether it succeeded, and its stderr with the
/// resource directory shown as `RES`.
fn scan(engine: &str, files: &[(&str, &str)]) -> (bool, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    let resources = root.join("usr/share/holo/scaffold");
    let table =
        format!("[[scaffold]]\nname = \"/srv/app\"\nsource = \"app\"\nengine = \"{engine}\"\n");
    let mut all = vec![
        ("etc/hostname", "web01\n"),
        ("tmp/cache/.keep", ""),
        ("secret", "from outside\n"),
        ("usr/share/holo/scaffold/app.toml", table.as_str()),
    ];
    let placed: Vec<(String, &str)> = files
        .iter()
        .map(|(name, text)| (format!("usr/share/holo/scaffold/app/{name}"), *text))
        .collect();
    all.extend(placed.iter().map(|(name, text)| (name.as_str(), *text)));
    for (relative, text) in all {
        let path = root.join(relative);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, text).expect("write");
    }
    let output = PluginRun::new(env!("CARGO_BIN_EXE_holo-scaffold"), "scaffold", &root)
        .args(["scan"])
        .output();
    let stderr =
        String::from_utf8_lossy(&output.stderr).replace(&resources.display().to_string(), "RES");
    (output.status.success(), stderr)
}

/// The one error line of a failed scan.
fn error_of(engine: &str, files: &[(&str, &str)]) -> String {
    let (ok, stderr) = scan(engine, files);
    assert!(!ok, "{stderr}");
    stderr
        .lines()
        .find(|line| line.starts_with("!! ") && line.contains("cannot render"))
        .unwrap_or_else(|| panic!("no render error: {stderr}"))
        .to_string()
}

#[test]
fn jinja_includes_a_sibling_template() {
    let (ok, stderr) = scan(
        "jinja",
        &[
            ("app.conf", "{% include \"partial.j2\" %}port=1\n"),
            ("partial.j2", "host={{ facts.hostname }}\n"),
        ],
    );
    assert!(ok, "{stderr}");
}

#[test]
fn jinja_includes_that_leave_the_tree_are_refused() {
    let cases = [
        (
            "{% include \"../app.toml\" %}",
            "template \"../app.toml\" leaves the template tree with ..",
        ),
        (
            "{% include \"/etc/hostname\" %}",
            "template \"/etc/hostname\" is absolute, which leaves the template tree",
        ),
    ];
    for (include, why) in cases {
        let error = error_of("jinja", &[("a.conf", include)]);
        assert_eq!(
            error,
            format!(
                "!! RES/app.toml:1: scaffold \"/srv/app\": RES/app/a.conf:1: cannot render the content: in `{include}`: {why}; includes are read only from the template tree RES/app"
            )
        );
    }
}

#[test]
fn jet_includes_that_leave_the_tree_are_refused() {
    for (include, name) in [
        ("[[ include \"../app.toml\" ]]", "../app.toml"),
        ("[[ include \"/../app.toml\" ]]", "/../app.toml"),
    ] {
        let error = error_of("jet", &[("a.conf", include)]);
        assert_eq!(
            error,
            format!(
                "!! RES/app.toml:1: scaffold \"/srv/app\": RES/app/a.conf:1:12: cannot render the content: template name {name:?} leaves the template tree; includes are read only from the template tree; fix the template"
            )
        );
    }
}

#[test]
fn jet_messages_advise_by_the_kind_of_mistake() {
    for (template, why, hint) in [
        (
            "[[ x := ]]",
            "1:9: cannot render the content: unexpected end of action in expression",
            "fix the template's syntax",
        ),
        (
            "[[ nope ]]",
            "1:4: cannot render the content: \"nope\" is not defined: no variable or global of that name",
            "fix the template or define the value in etc/holo/data.toml or the resource's data",
        ),
        (
            "[[ nofn(1) ]]",
            "1:4: cannot render the content: function \"nofn\" is not defined",
            "fix the template",
        ),
    ] {
        let error = error_of("jet", &[("a.conf", template)]);
        assert!(
            error.starts_with(&format!(
                "!! RES/app.toml:1: scaffold \"/srv/app\": RES/app/a.conf:{why}"
            )),
            "{template}: {error}"
        );
        assert!(error.ends_with(&format!("; {hint}")), "{template}: {error}");
    }
}

#[test]
fn an_undefined_value_is_named_with_file_and_line() {
    let error = error_of("jinja", &[("a.conf", "ok\nport={{ data.port }}\n")]);
    assert_eq!(
        error,
        "!! RES/app.toml:1: scaffold \"/srv/app\": RES/app/a.conf:2: cannot render the content: in `{{ data.port }}`: `data.port` is undefined; define it in etc/holo/data.toml or etc/holo/facts.toml, or give a default with `| default('...')`"
    );
    // holo-data(5) quotes it for a tree's app.conf.
    let page = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../man/holo-data.5"),
    )
    .expect("page");
    let quoted: Vec<String> = page
        .split(".EX\n")
        .filter_map(|block| block.split(".EE").next())
        .filter(|block| block.contains("scaffold \"/srv/app\""))
        .map(|block| block.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        quoted,
        [error
            .replace("RES", "/usr/share/holo/scaffold")
            .replace("a.conf", "app.conf")]
    );
}
