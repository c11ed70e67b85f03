//! `holos validate`, `holos up` and the holo plugin (`holo apply` with
//! holo-vms) validate a compose file in one place: each case below is
//! refused by all three with the same message, naming the file and line,
//! and neither `holos up` nor `holo apply` starts a VM for it.

use crate::plugin_support;
use crate::runtime_support;

use plugin_support::Root;
use runtime_support::{Project, Qemu};

/// (what, holos.yaml, the line the error names, the message).
const CASES: &[(&str, &str, u32, &str)] = &[
    (
        "an empty file",
        "",
        1,
        "services: is required: a mapping of service names to services",
    ),
    (
        "no services key",
        "volumes:\n  data:\n",
        1,
        "services: is required: a mapping of service names to services",
    ),
    (
        "a quoted protect",
        "services:\n  app:\n    image: alpine\n    x-holo: {protect: \"yes\"}\n",
        4,
        "services.app.x-holo.protect: must be true or false (unquoted), found \"yes\"",
    ),
    (
        "a top-level protect that is no boolean",
        "x-holo: {protect: 1}\nservices:\n  app:\n    image: alpine\n",
        1,
        "x-holo.protect: must be true or false (unquoted), found \"1\"",
    ),
    (
        "cpus past what vm.vcpu allows",
        "services:\n  app:\n    image: alpine\n    cpus: 1e9\n",
        4,
        "services.app.cpus: must be between 0 and 1024, found 1000000000",
    ),
    (
        "vm.vcpu past its bound (for comparison)",
        "services:\n  app:\n    image: alpine\n    vm: {vcpu: 2000}\n",
        4,
        "services.app.vm.vcpu: must be between 1 and 1024, found 2000",
    ),
];

fn said(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn holos_validate_refuses_each_case_with_file_and_line() {
    for (what, text, line, message) in CASES {
        let p = Project::new(text, Qemu::Fake);
        let out = p.run(&["validate"]);
        let text = said(&out);
        assert!(!out.status.success(), "{what}: validate passed:\n{text}");
        let file = p.path().join("holos.yaml");
        assert!(
            text.contains(&format!("{}:{line}:", file.display())) && text.contains(message),
            "{what}:\n{text}"
        );
    }
}

#[test]
fn holos_up_refuses_each_case_and_starts_nothing() {
    for (what, text, line, message) in CASES {
        let mut p = Project::new(text, Qemu::Fake);
        p.name = Some("one".into());
        let out = p.run(&["up", "--no-wait"]);
        let text = said(&out);
        assert!(!out.status.success(), "{what}: up passed:\n{text}");
        let file = p.path().join("holos.yaml");
        assert!(
            text.contains(&format!("{}:{line}:", file.display())) && text.contains(message),
            "{what}:\n{text}"
        );
        assert!(p.recorded_argvs().is_empty(), "{what}: QEMU started");
    }
}

#[test]
fn holo_apply_refuses_each_case_and_starts_nothing() {
    for (what, text, line, message) in CASES {
        let root = Root::new();
        root.compose("shop", text);
        let (code, said) = root.holo_text(&["apply"]);
        assert_ne!(code, 0, "{what}: holo apply passed:\n{said}");
        let file = root.path().join("usr/share/holo/vms/shop/holos.yaml");
        assert!(
            said.contains(&format!("{}:{line}:", file.display())) && said.contains(message),
            "{what}:\n{said}"
        );
        assert!(
            !root.state().join("projects/shop.json").exists(),
            "{what}: a VM was started:\n{said}"
        );
    }
}
