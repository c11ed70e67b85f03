//! The `holo-users-groups` binary: everything is in the SDK and the library.

fn main() -> std::process::ExitCode {
    holo_plugin::run(holo_users_groups::UsersGroupsPlugin)
}
