//! The `holo-users-groups` binary (being written).

fn main() -> std::process::ExitCode {
    eprintln!("!! holo-users-groups is not built yet");
    std::process::ExitCode::FAILURE
}
