//! The `holo-package` binary.

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.split_first() {
        Some((operation, rest)) if operation == "version-compare" => {
            let outcome = holo_package::version::version_compare_command(rest);
            // A closed stdout or stderr leaves nothing to report to.
            let _ = std::io::stdout().write_all(outcome.stdout.as_bytes());
            let _ = std::io::stderr().write_all(outcome.stderr.as_bytes());
            ExitCode::from(u8::try_from(outcome.exit_code).unwrap_or(1))
        }
        Some((operation, _)) => {
            eprintln!("!! unknown operation: {operation}");
            ExitCode::FAILURE
        }
        None => {
            eprintln!("!! unknown operation: (none)");
            ExitCode::FAILURE
        }
    }
}
