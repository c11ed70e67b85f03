//! Running system commands: the real thing with its output forwarded (so the
//! driver, or a batch, captures it), or in test mode a mock that prints
//! `MOCK: <exact command line>` instead.

use std::process::{Command, Stdio};

use crate::env::Env;
use crate::error::{Error, Result};

/// Quotes one argument for a POSIX shell, leaving plain words unquoted.
pub fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(&b));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// The shell-quoted command line for `argv`.
pub fn command_line<S: AsRef<str>>(argv: &[S]) -> String {
    argv.iter()
        .map(|arg| shell_quote(arg.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Prints `MOCK: <command line>` on stdout, as test-mode mocks do.
pub fn mock<S: AsRef<str>>(argv: &[S]) {
    println!("MOCK: {}", command_line(argv));
}

fn spawn_error<S: AsRef<str>>(argv: &[S], err: &std::io::Error) -> Error {
    Error::new(format!(
        "cannot run {}: {err}; check that the program is installed",
        command_line(argv)
    ))
}

fn status_error<S: AsRef<str>>(argv: &[S], status: std::process::ExitStatus) -> Error {
    Error::new(format!("{} failed with {status}", command_line(argv)))
}

/// Runs `argv` with stdout and stderr forwarded; a non-zero exit is an error
/// naming the command line.
pub fn run<S: AsRef<str>>(argv: &[S]) -> Result<()> {
    let Some((program, args)) = argv.split_first() else {
        return Err(Error::new("cannot run an empty command line"));
    };
    let status = Command::new(program.as_ref())
        .args(args.iter().map(AsRef::as_ref))
        .stdin(Stdio::null())
        .status()
        .map_err(|err| spawn_error(argv, &err))?;
    if status.success() {
        Ok(())
    } else {
        Err(status_error(argv, status))
    }
}

/// Runs `argv` and returns its stdout; stderr is forwarded.
pub fn capture<S: AsRef<str>>(argv: &[S]) -> Result<String> {
    let Some((program, args)) = argv.split_first() else {
        return Err(Error::new("cannot run an empty command line"));
    };
    let output = Command::new(program.as_ref())
        .args(args.iter().map(AsRef::as_ref))
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|err| spawn_error(argv, &err))?;
    if !output.status.success() {
        return Err(status_error(argv, output.status));
    }
    String::from_utf8(output.stdout).map_err(|_| {
        Error::new(format!(
            "{} printed output that is not UTF-8",
            command_line(argv)
        ))
    })
}

/// In test mode prints the mock line; otherwise runs the command.
pub fn run_or_mock<S: AsRef<str>>(env: &Env, argv: &[S]) -> Result<()> {
    if env.test_mode {
        mock(argv);
        Ok(())
    } else {
        run(argv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_keeps_words_and_quotes_the_rest() {
        assert_eq!(
            command_line(&[
                "apt-get",
                "install",
                "-y",
                "nginx=1.24.0-1",
                "a b",
                "it's",
                ""
            ]),
            r"apt-get install -y nginx=1.24.0-1 'a b' 'it'\''s' ''"
        );
    }

    #[test]
    fn run_reports_the_failing_command_line() {
        run(&["true"]).expect("true succeeds");
        let err = run(&["sh", "-c", "exit 3"]).expect_err("fails");
        assert!(err.message().starts_with("sh -c 'exit 3' failed"), "{err}");
        let err = run(&["/nonexistent/program"]).expect_err("missing");
        assert!(
            err.message().contains("cannot run /nonexistent/program"),
            "{err}"
        );
        assert_eq!(capture(&["echo", "hi"]).expect("echo"), "hi\n");
    }
}
