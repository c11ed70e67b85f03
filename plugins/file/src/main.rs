//! holo-file: hands over to the SDK; the plugin lives in the library.

fn main() -> std::process::ExitCode {
    holo_plugin::run(holo_file::FilePlugin)
}
