//! `holo-package ensure NAME` and `status NAME` against the test-mode mock.

use std::fs;

use test_support::oneoff::{OneOffRoot, text};

fn root() -> OneOffRoot {
    let root = OneOffRoot::new("holo-package");
    fs::create_dir_all(root.path("var/lib/apt/lists")).expect("mkdir");
    root.write("etc/os-release", "ID=debian\n").write(
        "var/lib/holo-mock/packages.toml",
        "[[installed]]\nname = \"vim\"\nversion = \"2:9.0-1\"\narch = \"amd64\"\n\n[[available]]\nname = \"nginx\"\nversions = [\"1.22-1\", \"1.24-1\"]\n",
    );
    root
}

#[test]
fn ensure_installs_a_version_as_holo_apply_would() {
    let root = root();
    let output = root.run(&["ensure", "nginx", "--version", "1.24-1"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(
        text(&output.stdout),
        "\nWorking on package:nginx\n  found in holo-package ensure\n      with ensure: 1.24-1, provider: apt\n   current not installed\n\nMOCK: apt-get install -y -q -o DPkg::Options::=--force-confold --allow-downgrades nginx=1.24-1\n\n"
    );
    let again = root.run(&["ensure", "nginx", "--ensure", "1.24-1"]);
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(text(&again.stdout), "");
    let status = root.run(&["status", "nginx"]);
    assert_eq!(
        text(&status.stdout),
        "[[package]]\nname = \"nginx\"\nensure = \"1.24-1\"\n"
    );
}

#[test]
fn status_gives_the_installed_version_or_absent() {
    let root = root();
    let vim = root.run(&["status", "vim"]);
    assert_eq!(vim.status.code(), Some(0), "{}", text(&vim.stderr));
    assert_eq!(
        text(&vim.stdout),
        "[[package]]\nname = \"vim\"\nensure = \"2:9.0-1\"\n"
    );
    let none = root.run(&["status", "nginx"]);
    assert_eq!(
        text(&none.stdout),
        "[[package]]\nname = \"nginx\"\nensure = \"absent\"\n"
    );
}

#[test]
fn a_bad_value_gets_the_message_of_the_table() {
    let root = root();
    let output = root.run(&["ensure", "vim", "--ensure", "lastest"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stderr),
        "!! holo-package ensure: --ensure: package \"vim\": ensure = \"lastest\" is not known (did you mean \"latest\"?); use \"present\", \"absent\", \"latest\" or a version\n"
    );
    // The message names the flag as typed: `--version` sets `ensure`.
    let aliased = root.run(&["ensure", "vim", "--version", "lastest"]);
    assert_eq!(aliased.status.code(), Some(1));
    assert_eq!(
        text(&aliased.stderr),
        "!! holo-package ensure: --version: package \"vim\": ensure = \"lastest\" is not known (did you mean \"latest\"?); use \"present\", \"absent\", \"latest\" or a version\n"
    );
    let twice = root.run(&["ensure", "vim", "--version", "1", "--ensure", "absent"]);
    assert_eq!(twice.status.code(), Some(1));
    assert_eq!(
        text(&twice.stderr),
        "!! holo-package ensure: --version and --ensure both set ensure; give one of them\n"
    );
    let removed = root.run(&["ensure", "vim", "--ensure", "absent", "--noop"]);
    assert_eq!(removed.status.code(), Some(2), "{}", text(&removed.stderr));
    let database = fs::read_to_string(root.path("var/lib/holo-mock/packages.toml")).expect("db");
    assert!(database.contains("name = \"vim\""));
}

#[test]
fn absent_and_present_are_flags_as_on_file() {
    let root = root();
    let output = root.run(&["ensure", "vim", "--absent"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("MOCK: apt-get -q -y remove vim"),
        "{}",
        text(&output.stdout)
    );
    let status = root.run(&["status", "vim"]);
    assert_eq!(
        text(&status.stdout),
        "[[package]]\nname = \"vim\"\nensure = \"absent\"\n"
    );
    let present = root.run(&["ensure", "nginx", "--present"]);
    assert_eq!(present.status.code(), Some(0), "{}", text(&present.stderr));
}

#[test]
fn status_refuses_a_bad_name_as_ensure_does() {
    let root = root();
    let output = root.run(&["status", "bad name"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stderr),
        "!! holo-package status: package \"bad name\": invalid package name: character ' ' is not allowed (use letters, digits and ._+:~-)\n"
    );
    assert_eq!(text(&output.stdout), "");
}

#[test]
fn status_shows_the_start_of_an_over_long_name_once() {
    let root = root();
    let output = root.run(&["status", &"p".repeat(300)]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stderr),
        format!(
            "!! holo-package status: package name is 300 bytes long, over the limit of 255 bytes: \"{}...\"\n",
            "p".repeat(32)
        )
    );
}
