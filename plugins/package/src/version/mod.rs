//! Version ordering for packages: Debian (`deb`), RPM (`rpm`) and CCM's
//! generic comparison (`generic`), each a plain function, plus the
//! `holo-package version-compare` subcommand built on them.

pub mod deb;
pub mod generic;
pub mod rpm;

use std::cmp::Ordering;

/// Which ordering a comparison uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Deb,
    Rpm,
    Generic { ignore_trailing_zeroes: bool },
}

/// Orders two versions under a scheme; never fails.
pub fn compare(scheme: Scheme, a: &str, b: &str) -> Ordering {
    match scheme {
        Scheme::Deb => deb::compare(a, b),
        Scheme::Rpm => rpm::compare(a, b),
        Scheme::Generic {
            ignore_trailing_zeroes,
        } => generic::compare(a, b, ignore_trailing_zeroes),
    }
}

/// The result of the `version-compare` subcommand: what to print on stdout
/// or stderr, and the exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutcome {
    pub stdout: String,
    pub stderr: String,
    pub exit_code: i32,
}

pub const VERSION_COMPARE_USAGE: &str =
    "usage: holo-package version-compare deb|rpm|generic [--ignore-trailing-zeroes] A B";

fn usage_error(message: &str) -> CommandOutcome {
    CommandOutcome {
        stdout: String::new(),
        stderr: format!("!! {message}\n{VERSION_COMPARE_USAGE}\n"),
        exit_code: 2,
    }
}

/// `version-compare deb|rpm|generic [--ignore-trailing-zeroes] A B` (the
/// arguments after the subcommand name). Prints -1, 0 or 1 and exits 0; a
/// usage error or an invalid version exits 2. A Debian version that dpkg
/// only warns about (no leading digit, characters Policy does not allow) is
/// compared with a `>>` warning, as `dpkg --compare-versions` does.
///
/// Debian versions are checked as `dpkg --compare-versions` checks them,
/// RPM versions as rpm's EVR grammar allows. `--` ends the options, so that
/// a version may start with `-`.
pub fn version_compare_command(args: &[String]) -> CommandOutcome {
    let mut ignore_trailing_zeroes = false;
    let mut positional = Vec::new();
    let mut options_done = false;
    for arg in args {
        match arg.as_str() {
            "--" if !options_done => options_done = true,
            "--ignore-trailing-zeroes" if !options_done => ignore_trailing_zeroes = true,
            option if !options_done && option.starts_with("--") => {
                return usage_error(&format!("unknown option: {option}"));
            }
            _ => positional.push(arg.as_str()),
        }
    }
    let [scheme_name, a, b] = positional[..] else {
        return usage_error(&format!(
            "expected a scheme and two versions, got {} arguments",
            positional.len()
        ));
    };
    let scheme = match scheme_name {
        "deb" => Scheme::Deb,
        "rpm" => Scheme::Rpm,
        "generic" => Scheme::Generic {
            ignore_trailing_zeroes,
        },
        other => {
            return usage_error(&format!(
                "unknown version scheme {other:?}: use deb, rpm or generic"
            ));
        }
    };
    if ignore_trailing_zeroes && !matches!(scheme, Scheme::Generic { .. }) {
        return usage_error("--ignore-trailing-zeroes applies only to the generic scheme");
    }
    let mut warnings = String::new();
    for version in [a, b] {
        // dpkg --compare-versions warns about these and still compares
        if scheme == Scheme::Deb
            && deb::check_syntax(version).is_ok()
            && let Err(problem) = deb::validate_strict(version)
        {
            warnings.push_str(&format!(
                ">> {problem}; compared anyway, as dpkg --compare-versions does\n"
            ));
        }
        let checked = match scheme {
            Scheme::Deb => deb::check_syntax(version).map_err(|e| e.to_string()),
            Scheme::Rpm => rpm::validate(version).map_err(|e| e.to_string()),
            Scheme::Generic { .. } => generic::validate(version),
        };
        if let Err(message) = checked {
            return CommandOutcome {
                stdout: String::new(),
                stderr: format!("!! {message}\n"),
                exit_code: 2,
            };
        }
    }
    let answer = match compare(scheme, a, b) {
        Ordering::Less => "-1",
        Ordering::Equal => "0",
        Ordering::Greater => "1",
    };
    CommandOutcome {
        stdout: format!("{answer}\n"),
        stderr: warnings,
        exit_code: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> CommandOutcome {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        version_compare_command(&args)
    }

    #[test]
    fn prints_the_ordering() {
        assert_eq!(run(&["deb", "1.0~rc1", "1.0"]).stdout, "-1\n");
        assert_eq!(run(&["rpm", "1.0^git1", "1.0"]).stdout, "1\n");
        assert_eq!(
            run(&["generic", "--ignore-trailing-zeroes", "1.0.0", "1"]).stdout,
            "0\n"
        );
        assert_eq!(run(&["generic", "1.0.0", "1"]).stdout, "1\n");
    }

    #[test]
    fn double_dash_allows_leading_hyphen() {
        let outcome = run(&["generic", "--", "-1", "1"]);
        assert_eq!(outcome.exit_code, 0, "{outcome:?}");
        assert_eq!(outcome.stdout, "-1\n");
    }

    #[test]
    fn invalid_version_exits_2_with_reason() {
        let outcome = run(&["deb", "1.0-", "1.0"]);
        assert_eq!(outcome.exit_code, 2);
        assert!(
            outcome.stderr.contains("revision number is empty"),
            "{outcome:?}"
        );
        assert!(outcome.stdout.is_empty());
        assert_eq!(run(&["rpm", "1.0--1", "1"]).exit_code, 2);
        assert_eq!(run(&["generic", "", "1"]).exit_code, 2);
    }

    #[test]
    fn a_deb_version_dpkg_only_warns_about_is_compared_with_a_warning() {
        let outcome = run(&["deb", "1.0", "abc"]);
        assert_eq!(outcome.exit_code, 0, "{outcome:?}");
        assert_eq!(outcome.stdout, "-1\n");
        assert!(
            outcome.stderr.starts_with(
                ">> invalid Debian version \"abc\": version number does not start with digit"
            ),
            "{outcome:?}"
        );
        assert_eq!(run(&["deb", "1.0", "2.0"]).stderr, "");
    }

    #[test]
    fn usage_errors_exit_2() {
        assert_eq!(run(&["deb", "1"]).exit_code, 2);
        assert_eq!(run(&["arch", "1", "2"]).exit_code, 2);
        assert_eq!(
            run(&["deb", "--ignore-trailing-zeroes", "1", "2"]).exit_code,
            2
        );
        assert!(
            run(&["deb", "--bogus", "1", "2"])
                .stderr
                .contains("--bogus")
        );
    }
}
