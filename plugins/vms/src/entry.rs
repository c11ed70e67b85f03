//! The entry point of both binaries: one program, chosen by `argv[0]`.

use std::process::ExitCode;

/// The `holos` command line when `argv[0]` is `holos`, otherwise the holo
/// plugin (whose `holos` subcommand leads to the command line too).
pub fn main() -> ExitCode {
    let mut args = std::env::args_os();
    let program = args.next().unwrap_or_default();
    if crate::cli::invoked_as_holos(&program) {
        return crate::holos::run_holos(args);
    }
    // Run by holo (as root): a compose file gets no host file outside its
    // project directory unless it says so (x-holo.allow_host_files).
    holos_compose::decode::guest_files::confine_host_files();
    holo_plugin::run(crate::plugin::VmsPlugin)
}
