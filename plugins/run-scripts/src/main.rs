//! The `holo-run-scripts` binary (being written).

fn main() -> std::process::ExitCode {
    eprintln!("!! holo-run-scripts is not built yet");
    std::process::ExitCode::FAILURE
}
