//! `holo-test`: runs fixture cases in Holo's layout against the `holo` driver,
//! so that any plugin author can test a plugin (see holo-test(7)).
//!
//! A case directory holds `source-tree` (a tree dump, or a directory),
//! `expected-tree`, `expected-{scan,diff,apply}-output`, optionally
//! `expected-apply-force-output`, `env.sh`, `commands` with
//! `expected-commands-output`, and `http-root`. This binary owns the command
//! line; `case` runs one case, `dump` reads and writes tree dumps, `http`
//! serves `http-root` and `placeholders` keeps what changes from run to run
//! out of the expected files.

#[path = "holo-test/case.rs"]
mod case;
#[path = "holo-test/dump.rs"]
mod dump;
#[path = "holo-test/http.rs"]
mod http;
#[path = "holo-test/placeholders.rs"]
mod placeholders;

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "\
Usage: holo-test [--plugin-dir DIR]... [--update] CASE_DIR...

Runs each fixture case: prepares CASE_DIR/target from source-tree, runs
`holo scan`, `holo diff`, `holo apply` (and `holo apply --force` when apply
asks for it) with HOLO_ROOT_DIR=./target/, then the lines of an optional
`commands` file (plugin directories first on PATH), and compares the outputs
and the resulting tree with the expected-* files. An optional http-root/ is
served on 127.0.0.1 meanwhile (@HOLO_TEST_HTTP@ in the tree is its URL).

  --plugin-dir DIR  where to find plugin binaries holo-ID (repeatable, first
                    match wins; default: the directory of holo-test)
  --update          write the expected-* files from this run instead of
                    comparing (also HOLO_TEST_UPDATE=1)

Environment: HOLO_BINARY (the driver; default: holo beside holo-test, else
holo from PATH),
HOLO_TEST_TIMEOUT (seconds per driver run, default 120).
See holo-test(7) for details.
";

fn main() -> ExitCode {
    match run(std::env::args_os().skip(1).collect()) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("!! {message}");
            ExitCode::from(2)
        }
    }
}

fn run(args: Vec<std::ffi::OsString>) -> Result<ExitCode, String> {
    let mut plugin_dirs = Vec::new();
    let mut update = std::env::var_os("HOLO_TEST_UPDATE").is_some_and(|value| value == "1");
    let mut cases = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some("--help" | "-h") => {
                print!("{USAGE}");
                return Ok(ExitCode::SUCCESS);
            }
            Some("--update") => update = true,
            Some("--plugin-dir") => {
                let dir = args
                    .next()
                    .ok_or("--plugin-dir needs a directory argument (see holo-test --help)")?;
                plugin_dirs.push(PathBuf::from(dir));
            }
            Some(option) if option.starts_with("--plugin-dir=") => {
                plugin_dirs.push(PathBuf::from(&option["--plugin-dir=".len()..]));
            }
            Some(option) if option.starts_with('-') && option.len() > 1 => {
                return Err(format!("unknown option {option} (see holo-test --help)"));
            }
            _ => cases.push(PathBuf::from(arg)),
        }
    }
    if cases.is_empty() {
        eprint!("{USAGE}");
        return Ok(ExitCode::from(2));
    }

    let cwd = std::env::current_dir()
        .map_err(|err| format!("cannot determine the working directory: {err}"))?;
    let own_dir = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(PathBuf::from));
    if plugin_dirs.is_empty() {
        // beside holo-test for a build tree, else where packages install them
        plugin_dirs.extend(own_dir.clone());
        plugin_dirs.push(PathBuf::from("/usr/lib/holo"));
    }
    let plugin_dirs = plugin_dirs.into_iter().map(|dir| cwd.join(dir)).collect();

    let driver = match std::env::var("HOLO_BINARY") {
        Ok(driver) if !driver.trim().is_empty() => case::resolve_driver(&driver, &cwd),
        // holo beside holo-test (a build tree), else holo from PATH
        _ => own_dir
            .map(|dir| dir.join("holo"))
            .filter(|path| path.is_file())
            .map_or_else(|| "holo".to_string(), |path| path.display().to_string()),
    };
    let runner = case::Runner {
        driver,
        plugin_dirs,
        update,
        timeout: case::timeout_from(std::env::var_os("HOLO_TEST_TIMEOUT"))?,
    };

    // the modes in expected trees assume the usual umask (as Holo's script)
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o022));

    let stdout = io::stdout();
    let mut report = stdout.lock();
    let mut failed = Vec::new();
    for case_dir in &cases {
        let name = case_dir.display().to_string();
        let outcome = writeln!(report, ">> Running test case {name}...")
            .and_then(|()| runner.run(case_dir, &mut report))
            .map_err(|err| format!("{name}: {err}"))?;
        if outcome == case::Outcome::Failed {
            failed.push(name);
        }
    }

    let summary = if failed.is_empty() {
        if update {
            format!(
                ">> Updated the expectations of {} test case(s).",
                cases.len()
            )
        } else {
            format!(">> All {} test case(s) passed.", cases.len())
        }
    } else {
        format!(
            "!! {} of {} test case(s) failed: {}",
            failed.len(),
            cases.len(),
            failed.join(", ")
        )
    };
    writeln!(report, "{summary}").map_err(|err| format!("cannot write the report: {err}"))?;
    Ok(if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
