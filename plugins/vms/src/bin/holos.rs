//! `holos`: the VM compose runner's command line.
fn main() -> std::process::ExitCode {
    holo_vms::cli::main()
}
