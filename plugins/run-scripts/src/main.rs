//! The `holo-run-scripts` binary: everything is in the SDK and the library.

fn main() -> std::process::ExitCode {
    holo_plugin::run(holo_run_scripts::RunScriptsPlugin)
}
