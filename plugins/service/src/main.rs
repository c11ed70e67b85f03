//! The `holo-service` binary: everything is in the SDK and the library.

fn main() -> std::process::ExitCode {
    holo_plugin::run(holo_service::ServicePlugin)
}
