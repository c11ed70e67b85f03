//! The `holo-package version-compare` subcommand as a user runs it.

use assert_cmd::Command;

fn version_compare(args: &[&str]) -> assert_cmd::assert::Assert {
    let mut command = Command::cargo_bin("holo-package").expect("holo-package binary is built");
    command.arg("version-compare").args(args).assert()
}

#[test]
fn prints_ordering_and_exits_0() {
    version_compare(&["deb", "1:1.0", "2.0"])
        .success()
        .stdout("1\n");
    version_compare(&["rpm", "1.0~rc1", "1.0"])
        .success()
        .stdout("-1\n");
    version_compare(&["generic", "--ignore-trailing-zeroes", "10.1.0", "10.1"])
        .success()
        .stdout("0\n");
}

#[test]
fn invalid_version_exits_2_with_message() {
    let assert = version_compare(&["deb", "1:", "1"]).code(2).stdout("");
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(
        stderr.contains("nothing after colon in version number"),
        "{stderr}"
    );
}

#[test]
fn unknown_operation_exits_1() {
    Command::cargo_bin("holo-package")
        .expect("holo-package binary is built")
        .arg("frobnicate")
        .assert()
        .code(1)
        .stderr("!! unknown operation: frobnicate\n");
}
