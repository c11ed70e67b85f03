//! CCM's command line through our one-offs: every example of CCM's CLI
//! documentation (`tests/ccm-cli/examples.txt`), `ccm ensure KIND` run as
//! `holo-KIND ensure` (with `--noop`: the examples name real commands),
//! `ccm status` as `holo-KIND status`, `ccm session` as `holo session`, in
//! a test root with the units, packages and data the examples name. An
//! example is accepted when the one-off took its command line: it ran, or
//! only the machine failed it (a program that is not installed). Those
//! that are not are listed with the reason holo gives, which holo(8)
//! documents.

use std::path::{Path, PathBuf};
use std::process::Output;

/// The examples holo does not accept, by a part of the example, with the
/// part of the message that gives the reason.
const NOT_ACCEPTED: &[(&str, &str)] = &[
    // CCM's own page writes a property as `content="..."`, which CCM does
    // not accept either: it is the ENSURE word.
    (
        "content=\"Listen 8080\"",
        "ENSURE: ensure = \"content=Listen 8080\" is not known",
    ),
    // CCM's template syntax: Go-style `{{ Data.x }}`, `${ ... }` and Expr's
    // ternary are not holo's templates (holo-data(5)).
    ("{{ Data.package_name }}", "`Data` is undefined"),
    ("\"rhel\" ? \"httpd\"", "template syntax error"),
    ("${ lookup(", "invalid package name"),
    // CCM's facts are named otherwise (facts.host.info.os).
    ("lookup('facts.host.info.os')", "found nothing"),
    // No NATS registration store.
    ("--registration", "holo has no NATS registration store"),
    // holo wants the owner of what it creates named, where CCM takes the
    // user that runs it.
    ("private-app.tar.gz", "owner is required"),
    ("api_token", "owner is required"),
    // Outside a session a one-off knows no earlier result to refresh from.
    ("--enable --subscribe package#httpd", "needs a session"),
    // A one-off takes no relative path from the directory it runs in.
    ("/etc/app templates/app", "is relative"),
    ("/etc/myservice templates/myservice", "is relative"),
    ("/opt/app templates/app", "is relative"),
];

/// A test root with what the examples name.
struct ExampleRoot {
    dir: tempfile::TempDir,
    session: Option<String>,
}

impl ExampleRoot {
    fn new() -> ExampleRoot {
        let dir = tempfile::tempdir().expect("tempdir");
        let example = ExampleRoot { dir, session: None };
        for (path, text) in [
            ("root/etc/passwd", "root:x:0:0::/root:/bin/sh\n"),
            ("root/etc/group", "root:x:0:\n"),
            ("root/etc/os-release", "ID=debian\n"),
            ("root/etc/systemd/system/httpd.service", ""),
            ("root/etc/systemd/system/ccm-agent.service", ""),
            ("root/etc/httpd/conf.d/.keep", ""),
            ("root/etc/httpd/conf/.keep", ""),
            ("root/etc/haproxy/.keep", ""),
            ("root/tmp/ccm/motd", "motd\n"),
            (
                "root/var/lib/holo-mock/packages.toml",
                "[[available]]\nname = \"zsh\"\nversions = [\"5.8\", \"5.9\"]\n\n[[available]]\nname = \"httpd\"\nversions = [\"2.4\"]\n",
            ),
            (
                "root/etc/holo/data.toml",
                "[data]\npackage = \"zsh\"\nversion = \"5.9\"\npackage_name = \"httpd\"\ndeploy_password = \"secret\"\napi_token = \"token\"\n",
            ),
            ("work/templates/app/a.txt", "a\n"),
            ("work/templates/myservice/b.txt", "b\n"),
            ("work/backends.cfg.templ", "server a\n"),
            ("tmp/.keep", ""),
        ] {
            let path = example.dir.path().join(path);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        }
        example
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    /// Runs `program args`, in the session when there is one.
    fn run(&self, program: &str, args: &[String]) -> Output {
        let mut command = std::process::Command::new(test_support::binary(program));
        command
            .args(args)
            .current_dir(self.dir.path().join("work"))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOLO_ROOT_DIR", self.root())
            .env("TMPDIR", self.dir.path().join("tmp"));
        if let Some(session) = &self.session {
            command.env("CCM_SESSION_STORE", session);
        }
        command.output().expect("run")
    }

    /// One example as holo runs it; the session of `session new` is kept
    /// for the examples after it.
    fn run_example(&mut self, example: &str) -> Output {
        let line = example.replace(
            "....",
            "--content \"Listen 80\" --owner root:root --mode 0644",
        );
        let words = shell_words::split(&line).expect("example splits into words");
        let (program, mut args) = match words.get(1).map(String::as_str) {
            Some("ensure") => (format!("holo-{}", words[2]), words[3..].to_vec()),
            Some("status") => (format!("holo-{}", words[2]), words[3..].to_vec()),
            _ => ("holo".to_string(), words[1..].to_vec()),
        };
        if words[1] == "ensure" {
            args.insert(0, "ensure".into());
            args.push("--noop".into());
        } else if words[1] == "status" {
            args.insert(0, "status".into());
        }
        let output = self.run(&program, &args);
        if words[1] == "session" && words[2] == "new" {
            let printed = String::from_utf8_lossy(&output.stdout).into_owned();
            self.session = printed
                .trim()
                .strip_prefix("export HOLO_SESSION=")
                .map(str::to_string);
        }
        if words[1] == "session" && words.iter().any(|word| word == "--remove") {
            // The script ends with its session.
            self.session = None;
        }
        output
    }
}

/// The one-off took the command line: it ran (noop: 0 or 2; status: 3
/// when properties are left to fill in), or failed only on the machine,
/// with no message of the one-off itself.
fn accepted(output: &Output) -> bool {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let own_message = stderr
        .lines()
        .any(|line| line.starts_with("!! holo-") || line.starts_with("!! holo session"));
    match output.status.code() {
        Some(0 | 2 | 3) => !own_message,
        Some(1) => !own_message,
        _ => false,
    }
}

fn examples() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ccm-cli/examples.txt");
    std::fs::read_to_string(path)
        .expect("examples")
        .lines()
        .filter(|line| line.starts_with("ccm "))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_example_of_ccm_cli_documentation_runs_or_is_refused_with_its_reason() {
    let mut root = ExampleRoot::new();
    let examples = examples();
    let mut accepted_count = 0;
    let mut wrong = Vec::new();
    for example in &examples {
        let output = root.run_example(example);
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        let expected = NOT_ACCEPTED.iter().find(|(part, _)| example.contains(part));
        match (accepted(&output), expected) {
            (true, None) => accepted_count += 1,
            (false, Some((_, reason))) if stderr.contains(reason) => {}
            (took, _) => wrong.push(format!(
                "{example}\n  accepted: {took}, expected the reason {expected:?}\n  exit {:?}\n  stderr: {stderr}",
                output.status.code()
            )),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    println!("{accepted_count} of {} examples accepted", examples.len());
    assert_eq!(accepted_count, examples.len() - NOT_ACCEPTED.len());
}
