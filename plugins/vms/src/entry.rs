//! The entry point of both binaries: one program, chosen by `argv[0]`.

use std::ffi::OsString;
use std::process::ExitCode;

use holos_runtime::console_times;

/// The `holos` command line when `argv[0]` is `holos`, otherwise the holo
/// plugin (whose `holos` subcommand leads to the command line too). Either
/// runs as the console stamper that `up` starts beside each QEMU when
/// given its first argument.
pub fn main() -> ExitCode {
    let mut args = std::env::args_os();
    let program = args.next().unwrap_or_default();
    let args: Vec<OsString> = args.collect();
    if args
        .first()
        .is_some_and(|a| a == console_times::STAMPER_ARG)
    {
        return stamper(&args[1..]);
    }
    if let Ok(exe) = std::env::current_exe() {
        console_times::set_stamper_program(exe);
    }
    if crate::cli::invoked_as_holos(&program) {
        return crate::holos::run_holos(args);
    }
    // Run by holo (as root): a compose file gets no host file outside its
    // project directory unless it says so (x-holo.allow_host_files).
    holos_compose::decode::guest_files::confine_host_files();
    holo_plugin::run(crate::plugin::VmsPlugin)
}

fn stamper(args: &[OsString]) -> ExitCode {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    match console_times::run_stamper(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("holos: console times: {e}");
            ExitCode::FAILURE
        }
    }
}
