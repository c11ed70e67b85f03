//! `holos`: the VM compose runner. The same code as `holo-vms`, which
//! becomes the command line when started as `holos`.
fn main() -> std::process::ExitCode {
    holo_vms::entry::main()
}
