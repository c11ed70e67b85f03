//! The `holo-files` binary (being written).

fn main() -> std::process::ExitCode {
    eprintln!("!! holo-files is not built yet");
    std::process::ExitCode::FAILURE
}
