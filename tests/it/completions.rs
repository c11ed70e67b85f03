//! Shell completion in share/completions/ (holo) and from `holos completions`
//! (clap's generator), run in the real shells against a test-mode root:
//! `holo` completes commands, options and the selectors `holo selectors`
//! prints.

use crate::root;

use std::path::Path;
use std::process::Command;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A root declaring file:/etc/motd, and a PATH that finds this build's holo.
fn root_and_path() -> (tempfile::TempDir, String) {
    let root = root::make(&["file"]);
    std::fs::write(
        root.path().join("usr/share/holo/file/motd.toml"),
        "[[file]]\nname = \"/etc/motd\"\ncontent = \"hi\\n\"\nowner = \"root\"\ngroup = \"root\"\nmode = \"0644\"\n",
    )
    .unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_holo")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (root, path)
}

/// COMPREPLY of the bash completion for `words` (split as bash does at ':').
fn bash_complete(root: &Path, path: &str, words: &[&str]) -> Vec<String> {
    let line = words.join(" ").replace(" : ", ":");
    let script = format!(
        "source {}; COMP_WORDS=({}); COMP_CWORD={}; COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}; _holo; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        repo().join("share/completions/bash/holo").display(),
        words
            .iter()
            .map(|w| format!("'{w}'"))
            .collect::<Vec<_>>()
            .join(" "),
        words.len() - 1,
    );
    let env = [("HOLO_ROOT_DIR", root.to_str().unwrap()), ("PATH", path)];
    stdout_of(Command::new("bash").args(["--norc", "-c", &script]), &env)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_commands_options_and_selectors() {
    let (root, path) = root_and_path();
    let root = root.path();
    let commands = bash_complete(root, &path, &["holo", ""]);
    for command in [
        "apply",
        "diff",
        "scan",
        "selectors",
        "session",
        "import-ccm",
    ] {
        assert!(commands.iter().any(|c| c == command), "{commands:?}");
    }
    assert_eq!(bash_complete(root, &path, &["holo", "ap"]), ["apply"]);
    assert_eq!(
        bash_complete(root, &path, &["holo", "session", ""]),
        ["new", "report"]
    );
    assert_eq!(
        bash_complete(root, &path, &["holo", "session", "report", "--r"]),
        ["--remove"]
    );
    assert_eq!(
        bash_complete(root, &path, &["holo", "import-ccm", "--r"]),
        ["--render"]
    );

    let all = bash_complete(root, &path, &["holo", "apply", ""]);
    for wanted in ["file:/etc/motd", "file", "--force", "--noop"] {
        assert!(all.iter().any(|c| c == wanted), "{wanted} not in {all:?}");
    }
    assert!(
        all.iter()
            .any(|c| c.ends_with("/usr/share/holo/file/motd.toml")),
        "{all:?}"
    );
    // bash splits at ':', so only what follows the colon is offered.
    assert_eq!(
        bash_complete(root, &path, &["holo", "apply", "file", ":", "/etc/mo"]),
        ["/etc/motd"]
    );
    assert_eq!(
        bash_complete(root, &path, &["holo", "scan", "--p"]),
        ["--porcelain"]
    );
    assert!(bash_complete(root, &path, &["holo", "diff", "-"]).is_empty());
}

/// What fish offers for `line` with the completion `script` loaded.
fn fish_complete(script: &Path, line: &str, env: &[(&str, &str)]) -> String {
    let source = format!("source {}; complete -C '{line}'", script.display());
    stdout_of(
        Command::new("fish").args(["--no-config", "-c", &source]),
        env,
    )
}

/// The stdout of a shell that must succeed.
fn stdout_of(shell: &mut Command, env: &[(&str, &str)]) -> String {
    let output = shell.envs(env.iter().copied()).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{shell:?} failed:\n{stderr}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
#[ignore = "needs fish"]
fn fish_completes_selectors_where_fish_is_installed() {
    test_support::require_tools(&["fish"], "fish");
    let (root, path) = root_and_path();
    let script = repo().join("share/completions/fish/holo.fish");
    let complete = |line: &str| {
        fish_complete(
            &script,
            line,
            &[
                ("HOLO_ROOT_DIR", root.path().to_str().unwrap()),
                ("PATH", &path),
            ],
        )
    };
    let commands = complete("holo ");
    assert!(
        commands.lines().any(|l| l.starts_with("apply\t")),
        "{commands}"
    );
    let selectors = complete("holo apply file:/etc/mo");
    assert_eq!(selectors.trim(), "file:/etc/motd", "{selectors}");
    let options = complete("holo apply --");
    assert!(
        options.contains("--force") && options.contains("--noop"),
        "{options}"
    );
}

#[test]
#[ignore = "needs zsh"]
fn zsh_completion_parses_where_zsh_is_installed() {
    test_support::require_tools(&["zsh"], "zsh");
    let status = Command::new("zsh")
        .arg("-n")
        .arg(repo().join("share/completions/zsh/_holo"))
        .status()
        .unwrap();
    assert!(
        status.success(),
        "share/completions/zsh/_holo does not parse"
    );
}

#[test]
fn holos_prints_completions_from_clap_for_every_shell() {
    let holos = root::binaries(&["vms"]).join("holos");
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef holos"),
        ("fish", "complete -c holos"),
    ] {
        let output = Command::new(&holos)
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(output.status.success(), "holos completions {shell}");
        let script = String::from_utf8_lossy(&output.stdout);
        assert!(script.contains(marker), "{shell}: {script}");
        for command in [
            "config",
            "validate",
            "images",
            "restart",
            "pause",
            "unpause",
            "kill",
            "port",
            "ssh-config",
            "wait",
            "stats",
            "top",
            "cp",
        ] {
            assert!(script.contains(command), "{shell} script lacks {command}");
        }
    }
    let help = Command::new(&holos).arg("--help").output().unwrap();
    assert!(
        !String::from_utf8_lossy(&help.stdout).contains("completions"),
        "the subcommand is hidden"
    );
}

#[test]
#[ignore = "needs fish"]
fn fish_completes_holos_subcommands() {
    test_support::require_tools(&["fish"], "fish");
    let holos = root::binaries(&["vms"]).join("holos");
    let script = Command::new(&holos)
        .args(["completions", "fish"])
        .output()
        .unwrap();
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &script.stdout).unwrap();
    let offered = fish_complete(file.path(), "holos ", &[]);
    assert!(
        offered.lines().any(|l| l.starts_with("validate")),
        "{offered}"
    );
}
