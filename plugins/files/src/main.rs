//! The `holo-files` binary.

fn main() -> std::process::ExitCode {
    holo_plugin::run(holo_files::FilesPlugin)
}
