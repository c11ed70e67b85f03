//! The `holo-archive` binary: everything is in the SDK and the library.

fn main() -> std::process::ExitCode {
    holo_plugin::run(holo_archive::ArchivePlugin)
}
