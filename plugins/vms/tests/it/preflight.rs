//! `holos validate` runs the check that `holos up` runs first: every
//! refusal of `up` that needs no running VM is a refusal of `validate`,
//! with the same message.

use crate::runtime_support;
use runtime_support::{Project, Qemu};

/// The compose file, and what both commands must say.
struct Case {
    what: &'static str,
    compose: &'static str,
    setup: fn(&Project),
    message: &'static str,
}

fn nothing(_: &Project) {}

fn text_image(p: &Project) {
    std::fs::write(p.path().join("text.qcow2"), "not a disk\n").unwrap();
}

fn broken_lock(p: &Project) {
    std::fs::write(p.path().join("holos.images.lock"), "garbage\n").unwrap();
}

fn unpinning_lock(p: &Project) {
    std::fs::write(p.path().join("holos.images.lock"), "version = 1\n").unwrap();
}

const CASES: &[Case] = &[
    Case {
        what: "volume serials collide",
        compose: "name: t\nservices:\n  web:\n    image: ./base.qcow2\n    volumes: [averyveryverylongname-a:/a, averyveryverylongname-b:/b]\nvolumes:\n  averyveryverylongname-a: {}\n  averyveryverylongname-b: {}\n",
        setup: nothing,
        message: "service web: volumes averyveryverylongname-a and averyveryverylongname-b both appear in the guest as /dev/disk/by-id/virtio-vol-averyveryverylon (a disk serial holds 20 bytes); shorten one volume name",
    },
    Case {
        what: "a broken lock file",
        compose: "name: t\nservices:\n  web:\n    image: ./base.qcow2\n",
        setup: broken_lock,
        message: "holos.images.lock:1: key with no value, expected `=`; fix the file or write it again with `holos lock`",
    },
    Case {
        what: "a lock file that does not pin an image",
        compose: "name: t\nservices:\n  web:\n    image: ./base.qcow2\n",
        setup: unpinning_lock,
        message: "service web: image ./base.qcow2 is not pinned in ",
    },
    Case {
        what: "a base image not in its declared format",
        compose: "name: t\nservices:\n  web:\n    image: ./text.qcow2\n",
        setup: text_image,
        message: "text.qcow2 is not a disk image (no format's signature, and its size is not a whole number of 512-byte sectors); point image: at a disk image",
    },
    Case {
        what: "a qcow2 declared raw",
        compose: "name: t\nservices:\n  web:\n    image: ./base.qcow2\n    image_format: raw\n",
        setup: nothing,
        message: "base.qcow2 is a qcow2 image, not raw as image_format says; set image_format: qcow2",
    },
    Case {
        what: "a missing bind-mount source",
        compose: "name: t\nservices:\n  web:\n    image: ./base.qcow2\n    volumes: [./missing:/data]\n",
        setup: nothing,
        message: "missing, the source of bind mount /data, does not exist; create it or correct the mount",
    },
];

#[test]
#[ignore = "needs qemu-img"]
fn validate_refuses_what_up_refuses_with_the_same_message() {
    runtime_support::require_qemu_img();
    for case in CASES {
        let p = Project::new(case.compose, Qemu::Fake);
        (case.setup)(&p);
        let validate = runtime_support::fails(&p, &["validate", "-q"]);
        let up = runtime_support::fails(&p, &["up", "--no-wait"]);
        for (command, said) in [("validate", &validate), ("up", &up)] {
            assert!(
                said.contains(case.message),
                "{}: holos {command} does not say {:?}:\n{said}",
                case.what,
                case.message
            );
        }
        assert!(
            p.ps().is_empty(),
            "{}: up started something before refusing",
            case.what
        );
    }
}

#[test]
fn capacity_counts_the_base_images_size_as_root_disk() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("base.raw");
    std::fs::File::create(&image)
        .unwrap()
        .set_len(3 * 1024 * 1024 * 1024)
        .unwrap();
    std::fs::write(
        dir.path().join("holos.yaml"),
        "name: cap\nservices:\n  web:\n    image: ./base.raw\n    deploy: {replicas: 2}\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_holos"))
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOLOS_STATE_DIR", dir.path().join("state"))
        .args(["validate", "-q", "--capacity"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("and up to 6.0 GiB of new disk"), "{said}");
}
