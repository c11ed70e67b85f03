//! The `holo-ssh-keys` binary (being written).

fn main() -> std::process::ExitCode {
    eprintln!("!! holo-ssh-keys is not built yet");
    std::process::ExitCode::FAILURE
}
