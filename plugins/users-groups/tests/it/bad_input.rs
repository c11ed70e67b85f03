//! Bad input: every problem is one message naming the file and line (in
//! Holo 3's words where Holo 3 has them), the rest still works, and
//! nothing panics.

use std::process::Command;

use crate::common::{GROUP, PASSWD, Root};

fn root() -> Root {
    let root = Root::new(&test_support::binary("holo-users-groups"));
    root.write("etc/passwd", PASSWD);
    root.write("etc/group", GROUP);
    root
}

#[test]
fn bad_definitions_are_reported_by_file_and_line_and_the_rest_is_applied() {
    let root = root();
    root.write(
        "usr/share/holo/users-groups/01-bad.toml",
        "[[group]]\nname = \"ok\"\n\n[[user]]\nname = \"typo\"\nshel = \"/bin/sh\"\n\n[[user]]\nname = \"wrong\"\nuid = \"12\"\n\n[[user]]\nname = \"-r\"\n\n[[user]]\nuid = 5\n\n[[users]]\nname = \"x\"\n",
    );
    root.write(
        "usr/share/holo/users-groups/02-broken.toml",
        "[[user]]\nname = \n",
    );
    let out = root.holo(&test_support::binary("holo"), &["apply"], &[]);
    let origin = "target/usr/share/holo/users-groups";
    let expected = format!(
        "!! File target/tmp/holo/generated-resources/users-groups/01-bad.toml is invalid:\n\
         >> {origin}/01-bad.toml:18: unknown table or key \"users\"; this file holds only [[group]] and [[user]] tables\n\
         >> {origin}/01-bad.toml:6: user:typo: unknown attribute \"shel\"; did you mean \"shell\"?\n\
         >> toml: cannot load TOML value of type string into a Go integer ({origin}/01-bad.toml:10: user:wrong: uid must be a number such as 1001)\n\
         >> {origin}/01-bad.toml:12: user:-r: the name \"-r\" cannot be used; a user or group name must not start with '-' or contain '/', ':', ',' or spaces\n\
         >> users[3] is missing required 'name' attribute\n\
         !! File target/tmp/holo/generated-resources/users-groups/02-broken.toml is invalid:\n\
         >> {origin}/02-broken.toml:2: "
    );
    assert!(out.contains(&expected), "{out}");
    assert!(out.contains("MOCK: groupadd ok"), "{out}");
    assert!(
        !out.contains("Working on user:") && !out.contains("panicked"),
        "{out}"
    );
}

#[test]
fn a_broken_image_fails_its_entity_naming_file_and_line() {
    let root = root();
    root.write(
        "usr/share/holo/users-groups/01.toml",
        "[[user]]\nname = \"bob\"\n\n[[group]]\nname = \"new\"\n",
    );
    root.write(
        "var/lib/holo/users-groups/base/user:bob.toml",
        "[[user]]\nname = \"bob\"\nuid = \"x\"\n",
    );
    let out = root.holo(&test_support::binary("holo"), &["apply"], &[]);
    assert!(
        out.contains("!! target/var/lib/holo/users-groups/base/user:bob.toml:3: uid must be a number; fix the image or remove it"),
        "{out}"
    );
    assert!(out.contains("MOCK: groupadd new"), "{out}");
}

#[test]
fn a_broken_state_toml_stops_the_scan_naming_it() {
    let root = root();
    root.write(
        "var/lib/holo/users-groups/state.toml",
        "ProvisionedUsers = 3\n",
    );
    let out = root.holo(&test_support::binary("holo"), &["scan"], &[]);
    assert!(
        out.contains("!! target/var/lib/holo/users-groups/state.toml: ")
            && out.contains("it should list ProvisionedGroups and ProvisionedUsers"),
        "{out}"
    );
}

#[test]
fn unknown_operations_and_entities_are_refused() {
    let plugin = test_support::binary("holo-users-groups");
    let output = Command::new(&plugin).arg("frobnicate").output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "!! unknown operation: frobnicate\n"
    );
    let root = root();
    let output = Command::new(&plugin)
        .args(["apply", "file:/etc/motd"])
        .current_dir(root.work())
        .env("HOLO_ROOT_DIR", "./target/")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("file:/etc/motd"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The plugin has no one-off `ensure` or `status`, so its usage names none.
#[test]
fn the_usage_offers_no_one_off() {
    let run = |args: &[&str]| {
        Command::new(test_support::binary("holo-users-groups"))
            .args(args)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .output()
            .expect("run holo-users-groups")
    };
    let output = run(&[]);
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "!! usage: holo-users-groups info|scan|apply ENTITY|force-apply ENTITY|diff ENTITY; this program is run by holo(8)\n"
    );
    assert_eq!(output.status.code(), Some(1));
    let output = run(&["scan"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("!! holo-users-groups is a holo plugin: run it through holo"),
        "{stderr}"
    );
    assert!(!stderr.contains("ensure"), "{stderr}");
}
