//! `holo-vms`: the holo plugin for VM compose projects. Only `info` exists
//! so far; the operations arrive with the runtime issues.
use std::process::ExitCode;

fn main() -> ExitCode {
    let operation = std::env::args().nth(1).unwrap_or_default();
    if operation == "info" {
        println!("MIN_API_VERSION=3");
        println!("MAX_API_VERSION=3");
        return ExitCode::SUCCESS;
    }
    eprintln!("!! unknown operation: {operation}");
    ExitCode::FAILURE
}
