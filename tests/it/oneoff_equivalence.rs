//! `holo-ID ensure NAME --FLAGS` against `holo apply` of the same table, in
//! two fresh roots: the same output (but for the `found in` line, which names
//! the resource file or the command), the same exit status and the same
//! result on disk, for file, package (the test-mode mock), service (the
//! systemctl stand-in), exec and scaffold; and what `holo-ID status` then
//! prints, as the resource file of `holo apply`, changes nothing. The roots
//! are given as `./NAME/`, relative to the working directory, as holo-test
//! gives them: the paths the output shows below the root are the same.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Output;

struct Case {
    plugin: &'static str,
    /// The `[[KIND]]` table for holo apply.
    table: &'static str,
    /// The same as flags.
    flags: &'static [&'static str],
    /// Files written into both roots first.
    setup: &'static [(&'static str, &'static str)],
    /// Files compared after the runs.
    compared: &'static [&'static str],
}

fn make_root(dir: &Path, case: &Case) -> PathBuf {
    let root = dir.to_path_buf();
    for sub in ["etc", "tmp", "run", "usr/lib/holo", "var/lib/apt/lists"] {
        fs::create_dir_all(root.join(sub)).expect("mkdir");
    }
    fs::write(root.join("etc/passwd"), "root:x:0:0::/root:/bin/sh\n").expect("passwd");
    fs::write(root.join("etc/group"), "root:x:0:\n").expect("group");
    fs::write(root.join("etc/holorc"), format!("plugin {}\n", case.plugin)).expect("holorc");
    let name = format!("holo-{}", case.plugin);
    symlink(
        test_support::binary(&name),
        root.join("usr/lib/holo").join(&name),
    )
    .expect("link");
    for (path, text) in case.setup {
        let path = root.join(path);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, text).expect("setup");
    }
    root
}

/// Runs `program` in the parent of `root`, with `HOLO_ROOT_DIR=./NAME/`.
fn run(root: &Path, program: &Path, args: &[&str]) -> Output {
    let name = root.file_name().expect("root name").to_string_lossy();
    std::process::Command::new(program)
        .args(args)
        .current_dir(root.parent().expect("parent"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOLO_ROOT_DIR", format!("./{name}/"))
        .env("TMPDIR", root.join("tmp"))
        .output()
        .expect("run")
}

/// The output without the `found in` line, the root (its name, as shown
/// below the working directory) shown as `ROOT`.
fn comparable(output: &Output, root: &Path) -> (Option<i32>, String, String) {
    let root = root
        .file_name()
        .expect("root name")
        .to_string_lossy()
        .into_owned();
    let stdout: Vec<String> = std::str::from_utf8(&output.stdout)
        .expect("utf-8")
        .lines()
        .filter(|line| !line.trim_start().starts_with("found in "))
        .map(|line| line.replace(&root, "ROOT"))
        .collect();
    (
        output.status.code(),
        stdout.join("\n"),
        String::from_utf8_lossy(&output.stderr).replace(&root, "ROOT"),
    )
}

fn check(case: &Case) {
    let dir = tempfile::tempdir().expect("tempdir");
    let applied = make_root(&dir.path().join("root-by-apply"), case);
    let ensured = make_root(&dir.path().join("root-by-flags"), case);
    let resources = applied.join("usr/share/holo").join(case.plugin);
    fs::create_dir_all(&resources).expect("mkdir");
    fs::write(resources.join("one.toml"), case.table).expect("table");
    let holo = test_support::binary("holo");
    let plugin = test_support::binary(&format!("holo-{}", case.plugin));
    // Twice: the second run shows what an unchanged entity gives.
    for round in ["first", "second"] {
        let by_holo = run(&applied, &holo, &["apply"]);
        let mut args = vec!["ensure"];
        args.extend(case.flags);
        let by_flags = run(&ensured, &plugin, &args);
        assert_eq!(
            comparable(&by_flags, &ensured),
            comparable(&by_holo, &applied),
            "{} ({round} run): ensure (left) and holo apply (right) differ",
            case.plugin
        );
    }
    for path in case.compared {
        assert_eq!(
            fs::read_to_string(ensured.join(path)).ok(),
            fs::read_to_string(applied.join(path)).ok(),
            "{}: {path} differs",
            case.plugin
        );
    }
    // What status prints declares that state: as the resource file of the
    // holo root, it changes nothing.
    let name = case.flags[0];
    let status = run(&ensured, &plugin, &["status", name]);
    assert_eq!(
        status.status.code(),
        Some(0),
        "{}: status: {}",
        case.plugin,
        String::from_utf8_lossy(&status.stderr)
    );
    fs::write(resources.join("one.toml"), &status.stdout).expect("table");
    let again = run(&applied, &holo, &["apply"]);
    assert_eq!(
        comparable(&again, &applied),
        (Some(0), String::new(), String::new()),
        "{}: holo apply of what status printed changed something:\n{}",
        case.plugin,
        String::from_utf8_lossy(&status.stdout)
    );
}

#[test]
fn file_ensure_is_holo_apply_of_the_table() {
    check(&Case {
        plugin: "file",
        table: "[[file]]\nname = \"/etc/motd\"\ncontent = \"hello\\n\"\nowner = \"root\"\ngroup = \"root\"\nmode = \"0640\"\n",
        flags: &[
            "/etc/motd",
            "--content",
            "hello\n",
            "--owner",
            "root",
            "--group",
            "root",
            "--mode",
            "0640",
        ],
        setup: &[("etc/motd", "old\n")],
        compared: &["etc/motd"],
    });
}

#[test]
fn package_ensure_is_holo_apply_of_the_table() {
    check(&Case {
        plugin: "package",
        table: "[[package]]\nname = \"nginx\"\nensure = \"1.24-1\"\n",
        flags: &["nginx", "--version", "1.24-1"],
        setup: &[
            ("etc/os-release", "ID=debian\n"),
            (
                "var/lib/holo-mock/packages.toml",
                "[[available]]\nname = \"nginx\"\nversions = [\"1.22-1\", \"1.24-1\"]\n",
            ),
        ],
        compared: &["var/lib/holo-mock/packages.toml"],
    });
}

#[test]
fn service_ensure_is_holo_apply_of_the_table() {
    check(&Case {
        plugin: "service",
        table: "[[service]]\nname = \"nginx\"\nensure = \"running\"\nenable = true\n",
        flags: &["nginx", "--running", "--enable"],
        setup: &[("etc/systemd/system/nginx.service", "[Service]\n")],
        compared: &["var/lib/holo-mock/systemd/nginx.service.toml"],
    });
}

#[test]
fn exec_ensure_is_holo_apply_of_the_table() {
    check(&Case {
        plugin: "exec",
        table: "[[exec]]\nname = \"marker\"\ncommand = \"touch marker\"\ncreates = \"/marker\"\n",
        flags: &[
            "marker",
            "--command",
            "touch marker",
            "--creates",
            "/marker",
        ],
        setup: &[],
        compared: &["marker"],
    });
}

#[test]
fn scaffold_ensure_is_holo_apply_of_the_table() {
    check(&Case {
        plugin: "scaffold",
        table: "[[scaffold]]\nname = \"/etc/app\"\nsource = \"/srv/templates\"\nengine = \"minijinja\"\ndata = { port = 8080 }\n",
        flags: &[
            "/etc/app",
            "--source",
            "/srv/templates",
            "--engine",
            "minijinja",
            "--data",
            "{ port = 8080 }",
        ],
        setup: &[("srv/templates/app.conf", "port {{ data.port }}\n")],
        compared: &["etc/app/app.conf"],
    });
}
