//! Holo 3's rules where its fixture suite says nothing, as its binary
//! shows them: each scenario (accounts, a definition, images) is run by
//! Holo 3 and by ours through scan, diff, apply, apply --force and apply,
//! and both must print the same and leave the same images. And our plugin
//! under Holo 3's own driver passes Holo 3's users-groups cases.

use std::process::Command;

use crate::common::Root;
use crate::switch_holo3::{Holo, holo3, ours};

const PASSWD: &str = "root:x:0:0:root:/root:/bin/bash\ncarol:x:1003:100::/home/carol:/bin/sh\n";
const PASSWD_COMMENT: &str =
    "root:x:0:0:root:/root:/bin/bash\ncarol:x:1003:100:Y:/home/carol:/bin/sh\n";
const GROUP: &str = "root:x:0:root\nusers:x:100:\ng:x:500:\naudio:x:501:\nvideo:x:91:\n";
const IN_USERS: &str = "root:x:0:root\nusers:x:100:carol\ng:x:500:\naudio:x:501:\nvideo:x:91:\n";
const IN_VIDEO: &str = "root:x:0:root\nusers:x:100:\ng:x:500:\naudio:x:501:\nvideo:x:91:carol\n";

/// One situation: the account files, the definition of `carol` (after
/// `[[user]] name = "carol"`), and her base and provisioned images (after
/// the name; `None`: no image).
struct Scenario {
    name: &'static str,
    passwd: &'static str,
    group: &'static str,
    definition: &'static str,
    base: Option<&'static str>,
    provisioned: Option<&'static str>,
}

const fn scenario(name: &'static str, definition: &'static str) -> Scenario {
    Scenario {
        name,
        passwd: PASSWD,
        group: GROUP,
        definition,
        base: Some(""),
        provisioned: Some(""),
    }
}

const SCENARIOS: &[Scenario] = &[
    Scenario {
        provisioned: Some("comment = \"Other\"\n"),
        ..scenario("a comment never conflicts", "comment = \"Carol\"\n")
    },
    Scenario {
        provisioned: Some("groups = [\"video\"]\n"),
        ..scenario("groups come back from the image", "comment = \"Carol\"\n")
    },
    Scenario {
        provisioned: Some("shell = \"/bin/zsh\"\n"),
        ..scenario(
            "a change since needs --force, which keeps it",
            "home = \"/h\"\n",
        )
    },
    Scenario {
        provisioned: Some("comment = \"X\"\n"),
        ..scenario("a missing comment comes back from the image", "")
    },
    Scenario {
        passwd: PASSWD_COMMENT,
        provisioned: Some("comment = \"X\"\n"),
        ..scenario("a comment set since is kept", "")
    },
    Scenario {
        provisioned: Some("shell = \"/bin/zsh\"\n"),
        ..scenario(
            "a definition that matches a change since",
            "shell = \"/bin/sh\"\n",
        )
    },
    Scenario {
        base: Some("shell = \"/bin/sh\"\n"),
        provisioned: None,
        ..scenario(
            "a definition against the base needs --force",
            "shell = \"/bin/zsh\"\n",
        )
    },
    Scenario {
        group: IN_VIDEO,
        base: Some(""),
        provisioned: None,
        ..scenario(
            "groups replace those of an empty base",
            "groups = [\"audio\"]\n",
        )
    },
    Scenario {
        group: IN_USERS,
        provisioned: Some("groups = [\"users\"]\n"),
        ..scenario("other groups than there need --force", "groups = [\"g\"]\n")
    },
    Scenario {
        group: IN_VIDEO,
        provisioned: Some(""),
        ..scenario(
            "groups not in the image need --force",
            "groups = [\"audio\"]\n",
        )
    },
    Scenario {
        base: None,
        provisioned: Some("uid = 1003\n"),
        ..scenario("an image without a base", "uid = 5000\n")
    },
    Scenario {
        group: IN_USERS,
        base: Some("groups = [\"audio\"]\n"),
        provisioned: Some("groups = [\"users\"]\n"),
        ..scenario(
            "the diff joins groups even when skipping",
            "groups = [\"g\"]\nskipBaseGroups = true\n",
        )
    },
    Scenario {
        passwd: "root:x:0:0:root:/root:/bin/bash\n",
        base: Some("uid = 1003\n"),
        provisioned: Some("uid = 1003\n"),
        ..scenario("a scrubbed entity that is gone comes back", "")
    },
    Scenario {
        base: Some("uid = 1003\n"),
        provisioned: Some("uid = 1003\nhome = \"/x\"\n"),
        ..scenario("a scrub that changes nothing", "")
    },
];

const SCRUBS: [&str; 2] = [
    "a scrubbed entity that is gone comes back",
    "a scrub that changes nothing",
];

fn run(holo: &Holo, case: &Scenario) -> Vec<(String, String)> {
    let root = Root::new(&holo.plugin);
    root.write("etc/passwd", case.passwd);
    root.write("etc/group", case.group);
    if !SCRUBS.contains(&case.name) {
        root.write(
            "usr/share/holo/users-groups/01.toml",
            &format!("[[user]]\nname = \"carol\"\n{}", case.definition),
        );
    }
    for (dir, image) in [("base", case.base), ("provisioned", case.provisioned)] {
        if let Some(image) = image {
            root.write(
                &format!("var/lib/holo/users-groups/{dir}/user:carol.toml"),
                &format!("[[user]]\nname = \"carol\"\n{image}"),
            );
        }
    }
    let mut seen = Vec::new();
    for args in [
        &["scan"][..],
        &["diff"],
        &["apply"],
        &["apply", "--force"],
        &["apply"],
    ] {
        seen.push((args.join(" "), root.holo(&holo.driver, args, &[])));
    }
    seen.extend(root.images());
    seen
}

#[test]
#[ignore = "needs Go and a Holo 3 checkout in HOLO3_SOURCE"]
fn scenarios_beyond_the_fixture_suite_give_what_holo3_gives() {
    let (_dir, holo3) = holo3();
    let ours = ours();
    let mut differences = Vec::new();
    for case in SCENARIOS {
        let (expected, got) = (run(&holo3, case), run(&ours, case));
        if expected != got {
            differences.push(format!(
                "{}:\nHolo 3: {expected:#?}\nours: {got:#?}",
                case.name
            ));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n\n"));
}

#[test]
#[ignore = "needs Go and a Holo 3 checkout in HOLO3_SOURCE"]
fn our_plugin_passes_holo3s_cases_under_holo3s_driver() {
    let source = test_support::holo3::require_source();
    let (_dir, holo3) = holo3();
    let work = tempfile::tempdir().unwrap();
    for dir in ["test", "util"] {
        let status = Command::new("cp")
            .arg("-a")
            .arg(source.join(dir))
            .arg(work.path())
            .status()
            .unwrap();
        assert!(status.success(), "cannot copy {dir} out of the checkout");
    }
    let plugin = work.path().join("test/holo-users-groups");
    let _ = std::fs::remove_file(&plugin);
    std::os::unix::fs::symlink(ours().plugin, &plugin).unwrap();
    let mut cases: Vec<String> = std::fs::read_dir(work.path().join("test/users-groups"))
        .unwrap()
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().to_string_lossy().into_owned();
            (name.as_bytes().get(2) == Some(&b'-')).then_some(name)
        })
        .collect();
    cases.sort();
    assert_eq!(
        cases.len(),
        12,
        "Holo 3 v3.0.1 has 12 users-groups cases: {cases:?}"
    );
    let run = Command::new("bash")
        .arg("util/holo-test")
        .arg("holo-users-groups")
        .args(cases.iter().map(|case| format!("test/users-groups/{case}")))
        .current_dir(work.path())
        .env("HOLO_BINARY", &holo3.driver)
        .env("HOLO_TEST_SCRIPTPATH", work.path().join("util"))
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "Holo 3's driver with our plugin:\n{}",
        String::from_utf8_lossy(&run.stdout)
    );
}

/// Stacked definitions, each as files `01.toml`, `02.toml`, ...
const STACKS: &[(&str, &[&str])] = &[
    (
        "groups of all, sorted",
        &[
            "[[user]]\nname = \"u\"\ngroups = [\"b\", \"a\"]\n",
            "[[user]]\nname = \"u\"\nshell = \"/s\"\n",
        ],
    ),
    (
        "skipBaseGroups from the first",
        &[
            "[[user]]\nname = \"u\"\ngroups = [\"b\"]\n",
            "[[user]]\nname = \"u\"\ngroups = [\"c\"]\nskipBaseGroups = true\n",
            "[[group]]\nname = \"g\"\nsystem = true\n[[group]]\nname = \"g\"\n",
        ],
    ),
    (
        "every conflict is reported",
        &[
            "[[user]]\nname = \"u\"\nuid = 1\n",
            "[[user]]\nname = \"u\"\nuid = 2\ncomment = \"two\"\n",
            "[[user]]\nname = \"u\"\nuid = 3\n",
        ],
    ),
    (
        "empty values are unset",
        &["[[user]]\nname = \"u\"\ngroups = []\ncomment = \"\"\nhome = \"\"\n"],
    ),
];

#[test]
#[ignore = "needs Go and a Holo 3 checkout in HOLO3_SOURCE"]
fn stacked_definitions_give_what_holo3_gives() {
    let (_dir, holo3) = holo3();
    let ours = ours();
    let run = |holo: &Holo, files: &[&str]| {
        let root = Root::new(&holo.plugin);
        root.write("etc/passwd", "root:x:0:0:root:/root:/bin/bash\n");
        root.write("etc/group", "root:x:0:root\n");
        for (index, text) in files.iter().enumerate() {
            root.write(
                &format!("usr/share/holo/users-groups/{:02}.toml", index + 1),
                text,
            );
        }
        let mut seen = vec![root.holo(&holo.driver, &["scan"], &[])];
        seen.push(root.holo(&holo.driver, &["apply"], &[]));
        seen
    };
    for (name, files) in STACKS {
        assert_eq!(run(&holo3, files), run(&ours, files), "{name}");
    }
}
