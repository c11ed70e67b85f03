//! The `holo-scaffold` binary: everything is in the SDK and the library.

fn main() -> std::process::ExitCode {
    holo_plugin::run(holo_scaffold::ScaffoldPlugin)
}
