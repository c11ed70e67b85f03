//! `holo apply --noop` (the noop extension): what would run, nothing done.

use std::process::Command;

use crate::common::{GROUP, PASSWD, Root};

#[test]
fn noop_says_what_would_run_and_writes_no_image() {
    let root = Root::new(&test_support::binary("holo-users-groups"));
    root.write("etc/passwd", PASSWD);
    root.write("etc/group", GROUP);
    root.write(
        "usr/share/holo/users-groups/01.toml",
        "[[user]]\nname = \"new\"\nuid = 1001\ncomment = \"New User\"\n\n[[user]]\nname = \"bob\"\n",
    );
    root.write(
        "var/lib/holo/users-groups/base/group:gone.toml",
        "[[group]]\nname = \"gone\"\n",
    );
    root.write("etc/group", &format!("{GROUP}gone:x:600:\n"));
    let output = Command::new(test_support::binary("holo"))
        .args(["apply", "--noop"])
        .current_dir(root.work())
        .env("HOLO_ROOT_DIR", "./target/")
        .env("TMPDIR", "./target/tmp")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(2), "{out}");
    assert!(
        out.contains("Would run: useradd --uid 1001 --comment 'New User' new"),
        "{out}"
    );
    assert!(out.contains("Would run: groupdel gone"), "{out}");
    assert!(!out.contains("MOCK") && !out.contains("user:bob"), "{out}");
    assert_eq!(
        root.images(),
        [(
            "base/group:gone.toml".to_string(),
            "[[group]]\nname = \"gone\"\n".to_string()
        )]
    );
}
