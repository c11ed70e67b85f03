//! The `holo-ssh-keys` binary: everything is in the SDK and the library.

fn main() -> std::process::ExitCode {
    holo_plugin::run(holo_ssh_keys::SshKeysPlugin)
}
