//! `holo-vms`: the holo plugin for VM compose projects, on the SDK. The same
//! code as `holos`; `holo-vms holos ARGS` runs the command line too.
fn main() -> std::process::ExitCode {
    holo_vms::entry::main()
}
