//! The real shadow tools on a root of their own: holo-users-groups with
//! `HOLO_USERS_GROUPS_REAL_TOOLS=1` runs them with `--prefix ROOT`, so the
//! machine's own accounts are never touched.

use std::fs;

use crate::common::{GROUP, PASSWD, Root};

const SHADOW: &str = "root:*:19000:0:99999:7:::\nbob:*:19000:0:99999:7:::\n";
const GSHADOW: &str = "root:*::root\nusers:*::\naudio:*::bob\nvideo:*::\n";
const LOGIN_DEFS: &str = "UID_MIN 1000\nUID_MAX 60000\nSYS_UID_MIN 100\nSYS_UID_MAX 999\nGID_MIN 1000\nGID_MAX 60000\nSYS_GID_MIN 100\nSYS_GID_MAX 999\nUSERGROUPS_ENAB no\nCREATE_HOME no\n";

const BASE: &str = "[[group]]\nname = \"holo-team\"\ngid = 2345\n\n[[user]]\nname = \"alice\"\nuid = 2001\ngroup = \"users\"\ngroups = [\"holo-team\"]\nhome = \"/home/alice\"\nshell = \"/bin/sh\"\n\n[[user]]\nname = \"bob\"\ngroups = [\"video\"]\n";
const MORE: &str = "[[user]]\nname = \"alice\"\ncomment = \"Alice\"\ngroups = [\"audio\"]\n";

const REAL: [(&str, &str); 1] = [("HOLO_USERS_GROUPS_REAL_TOOLS", "1")];

fn line<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .find(|line| line.split(':').next() == Some(name))
}

fn accounts_root() -> Root {
    let root = Root::new(&test_support::binary("holo-users-groups"));
    root.write("etc/passwd", PASSWD);
    root.write("etc/group", GROUP);
    root.write("etc/shadow", SHADOW);
    root.write("etc/gshadow", GSHADOW);
    root.write("etc/login.defs", LOGIN_DEFS);
    root.write("etc/default/useradd", "GROUP=100\nSHELL=/bin/sh\n");
    root.write("usr/share/holo/users-groups/01-base.toml", BASE);
    root.write("usr/share/holo/users-groups/02-more.toml", MORE);
    root
}

#[test]
#[ignore = "needs root and the shadow tools"]
fn real_tools_create_stack_modify_and_remove_accounts_in_a_root_of_their_own() {
    test_support::require_root("the shadow tools change account files only as root");
    test_support::require_tools(
        &[
            "useradd", "usermod", "userdel", "groupadd", "groupmod", "groupdel",
        ],
        "passwd",
    );
    let machine = (fs::read("/etc/passwd").ok(), fs::read("/etc/group").ok());
    let holo = test_support::binary("holo");
    let root = accounts_root();

    let out = root.holo(&holo, &["apply"], &REAL);
    assert!(!out.contains("MOCK") && !out.contains("!!"), "{out}");
    let passwd = root.read("etc/passwd");
    let group = root.read("etc/group");
    assert_eq!(
        line(&passwd, "alice"),
        Some("alice:x:2001:100:Alice:/home/alice:/bin/sh")
    );
    assert_eq!(line(&group, "holo-team"), Some("holo-team:x:2345:alice"));
    assert_eq!(line(&group, "audio"), Some("audio:x:92:bob,alice"));
    assert_eq!(line(&group, "video"), Some("video:x:91:bob"));
    assert_eq!(
        root.read("var/lib/holo/users-groups/provisioned/user:alice.toml"),
        "[[user]]\nname = \"alice\"\ncomment = \"Alice\"\nuid = 2001\nhome = \"/home/alice\"\ngroup = \"users\"\ngroups = [\"audio\", \"holo-team\"]\nshell = \"/bin/sh\"\n"
    );
    assert_eq!(
        root.read("var/lib/holo/users-groups/base/user:alice.toml"),
        "[[user]]\nname = \"alice\"\n"
    );
    assert_eq!(
        root.read("var/lib/holo/users-groups/base/user:bob.toml"),
        "[[user]]\nname = \"bob\"\ncomment = \"Bob\"\nuid = 1002\nhome = \"/home/bob\"\ngroup = \"users\"\ngroups = [\"audio\"]\nshell = \"/bin/bash\"\n"
    );

    let again = root.holo(&holo, &["apply"], &REAL);
    assert_eq!(again, "", "a second apply changes nothing");

    // A definition that contradicts what was provisioned needs --force.
    root.write(
        "usr/share/holo/users-groups/01-base.toml",
        &BASE.replace("/bin/sh", "/bin/bash"),
    );
    let out = root.holo(&holo, &["apply"], &REAL);
    assert!(out.contains("Entity has been modified by user"), "{out}");
    assert!(
        line(&root.read("etc/passwd"), "alice")
            .unwrap()
            .ends_with(":/bin/sh")
    );
    let out = root.holo(&holo, &["apply", "--force"], &REAL);
    assert!(!out.contains("!!"), "{out}");
    assert!(
        line(&root.read("etc/passwd"), "alice")
            .unwrap()
            .ends_with(":/bin/bash")
    );

    // Without definitions, Holo deletes what it created and restores bob.
    fs::remove_file(root.path("usr/share/holo/users-groups/01-base.toml")).unwrap();
    fs::remove_file(root.path("usr/share/holo/users-groups/02-more.toml")).unwrap();
    let out = root.holo(&holo, &["apply"], &REAL);
    assert!(out.contains("Scrubbing user:alice"), "{out}");
    let passwd = root.read("etc/passwd");
    let group = root.read("etc/group");
    assert_eq!(line(&passwd, "alice"), None, "{passwd}");
    assert_eq!(line(&group, "holo-team"), None, "{group}");
    assert_eq!(line(&group, "video"), Some("video:x:91:"));
    assert_eq!(line(&group, "audio"), Some("audio:x:92:bob"));
    assert_eq!(line(&passwd, "bob"), line(PASSWD, "bob"));
    assert!(root.images().is_empty(), "{:?}", root.images());

    let after = (fs::read("/etc/passwd").ok(), fs::read("/etc/group").ok());
    assert!(
        machine == after,
        "the machine's /etc/passwd or /etc/group changed"
    );
}

#[test]
#[ignore = "needs root and the shadow tools"]
fn a_failing_tool_fails_its_entity_and_records_no_provisioned_image() {
    test_support::require_root("the shadow tools change account files only as root");
    test_support::require_tools(&["useradd"], "passwd");
    let root = accounts_root();
    fs::remove_file(root.path("usr/share/holo/users-groups/02-more.toml")).unwrap();
    root.write(
        "usr/share/holo/users-groups/01-base.toml",
        "[[user]]\nname = \"zoe\"\ngroups = [\"no-such-group\"]\n",
    );
    let out = root.holo(&test_support::binary("holo"), &["apply"], &REAL);
    // The tool's own message, then the command line and its status.
    assert!(
        out.contains("useradd: group 'no-such-group' does not exist"),
        "{out}"
    );
    assert!(
        out.contains(" --groups no-such-group zoe failed with exit code 6"),
        "{out}"
    );
    assert_eq!(line(&root.read("etc/passwd"), "zoe"), None);
    assert!(
        !root
            .path("var/lib/holo/users-groups/provisioned/user:zoe.toml")
            .exists(),
        "{:?}",
        root.images()
    );
}
