//! `holos doctor` with `PATH` arranged: tools missing, a `qemu-img` of
//! another QEMU release (a script that answers `--version` as qemu-img 8.2
//! does), the crate's fake `qemu-system-x86_64` (KVM failing, or working
//! with `FAKE_QEMU_KVM=1`), a state directory
//! that cannot be created, OVMF below the test root; and for real on this
//! machine, against the installed QEMU.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

/// A directory of tools to put on `PATH`, and a state root.
struct Host {
    dir: tempfile::TempDir,
}

impl Host {
    fn new() -> Host {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("bin")).unwrap();
        Host { dir }
    }

    fn bin(&self) -> std::path::PathBuf {
        self.dir.path().join("bin")
    }

    /// Links the real `tool` (from /usr/bin) into the PATH directory.
    fn real(&self, tool: &str) -> &Host {
        std::os::unix::fs::symlink(Path::new("/usr/bin").join(tool), self.bin().join(tool))
            .unwrap();
        self
    }

    fn fake_qemu(&self) -> &Host {
        std::os::unix::fs::symlink(
            test_support::binary("fake-qemu-system-x86_64"),
            self.bin().join("qemu-system-x86_64"),
        )
        .unwrap();
        self
    }

    /// A `qemu-img` that prints what qemu-img 8.2.2 of Ubuntu 24.04 prints
    /// for `--version` (and `-V`), and fails on anything else as qemu-img
    /// fails on an unknown command.
    fn qemu_img_8_2(&self) -> &Host {
        let path = self.bin().join("qemu-img");
        std::fs::write(
            &path,
            "#!/bin/sh\ncase \"$1\" in\n  --version|-V)\n    printf 'qemu-img version 8.2.2 (Debian 1:8.2.2+ds-0ubuntu1.4)\\nCopyright (c) 2003-2023 Fabrice Bellard and the QEMU Project developers\\n'\n    exit 0;;\nesac\necho \"qemu-img: Command not found: $1\" >&2\necho \"Try 'qemu-img --help' for more information\" >&2\nexit 1\n",
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        self
    }

    fn doctor(&self, path: &str, env: &[(&str, &str)]) -> (Output, String) {
        self.doctor_with(&[], path, env)
    }

    fn doctor_with(&self, args: &[&str], path: &str, env: &[(&str, &str)]) -> (Output, String) {
        let mut command = Command::new(env!("CARGO_BIN_EXE_holos"));
        command
            .arg("doctor")
            .args(args)
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.dir.path())
            .env("HOLOS_STATE_DIR", self.dir.path().join("state"));
        for (key, value) in env {
            command.env(key, value);
        }
        let out = command.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        (out, text)
    }

    fn doctor_on_own_path(&self, env: &[(&str, &str)]) -> (Output, String) {
        self.doctor(&self.bin().display().to_string(), env)
    }
}

/// The report line of one check: `LEVEL  WHAT  TEXT`.
fn line<'t>(report: &'t str, what: &str) -> &'t str {
    report
        .lines()
        .find(|l| {
            l.get(6..)
                .is_some_and(|rest| rest.starts_with(&format!("{what} ")))
        })
        .unwrap_or_else(|| panic!("no {what} line in:\n{report}"))
}

fn level<'t>(report: &'t str, what: &str) -> &'t str {
    line(report, what).split_whitespace().next().unwrap()
}

#[test]
fn missing_tools_fail_and_name_the_debian_packages() {
    let host = Host::new();
    let (out, report) = host.doctor_on_own_path(&[]);
    assert_eq!(out.status.code(), Some(1), "{report}");
    for (tool, package) in [
        ("qemu-system-x86_64", "qemu-system-x86"),
        ("qemu-img", "qemu-utils"),
        ("ssh-keygen", "openssh-client"),
        ("ssh", "openssh-client"),
    ] {
        assert_eq!(level(&report, tool), "FAIL", "{report}");
        assert!(
            line(&report, tool).contains(&format!("install {package}")),
            "{report}"
        );
    }
    assert!(
        line(&report, "accelerator").contains("not probed: qemu-system-x86_64 is missing"),
        "{report}"
    );
    assert_eq!(level(&report, "state directory"), "ok", "{report}");
    assert!(
        report.ends_with(
            "holos doctor: 4 checks failed: holos up cannot work on this host until they are fixed\n"
        ),
        "{report}"
    );
    // The check left no state directory behind.
    assert!(!host.dir.path().join("state").exists());
}

#[test]
fn doctor_json_has_every_check_in_report_order_and_the_same_exit_status() {
    let host = Host::new();
    let (text_out, report) = host.doctor_on_own_path(&[]);
    let (out, json) = host.doctor_with(&["--json"], &host.bin().display().to_string(), &[]);
    assert_eq!(out.status.code(), text_out.status.code());
    assert_eq!(out.status.code(), Some(1), "{json}");
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["up_can_work"], false);
    assert_eq!(value["failed"], 4);
    let checks = value["checks"].as_array().unwrap();
    // One object per line of the text report (without its summary line).
    assert_eq!(checks.len(), report.lines().count() - 1, "{json}");
    for check in checks {
        let what = check["what"].as_str().unwrap();
        let text = check["text"].as_str().unwrap();
        let json_level = check["level"].as_str().unwrap();
        assert!(line(&report, what).ends_with(text), "{what}: {json}");
        assert_eq!(level_word(json_level), level(&report, what), "{what}");
    }
    let ssh = checks.iter().find(|c| c["what"] == "ssh").unwrap();
    assert_eq!(ssh["level"], "fail");
    assert!(
        ssh["text"]
            .as_str()
            .unwrap()
            .contains("install openssh-client")
    );
}

fn level_word(json_level: &str) -> &'static str {
    match json_level {
        "ok" => "ok",
        "warn" => "warn",
        "fail" => "FAIL",
        other => panic!("unknown level {other}"),
    }
}

#[test]
#[ignore = "needs ssh and ssh-keygen"]
fn qemu_tools_of_different_releases_warn_and_without_kvm_tcg_is_used() {
    test_support::require_tools(&["ssh", "ssh-keygen"], "openssh-client");
    let host = Host::new();
    host.fake_qemu()
        .qemu_img_8_2()
        .real("ssh")
        .real("ssh-keygen");
    // No firmware, whatever this machine has installed in /usr/share/OVMF.
    let missing = host.bin().join("no-OVMF_CODE.fd");
    let (out, report) = host.doctor_on_own_path(&[("HOLOS_OVMF_CODE", missing.to_str().unwrap())]);
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert_eq!(level(&report, "qemu-system-x86_64"), "ok", "{report}");
    assert!(
        line(&report, "qemu-system-x86_64").contains("QEMU emulator version 7.2.22"),
        "{report}"
    );
    assert!(
        line(&report, "qemu-img").contains(&format!(
            "qemu-img version 8.2.2 (Debian 1:8.2.2+ds-0ubuntu1.4) ({}/qemu-img)",
            host.bin().display()
        )),
        "{report}"
    );
    assert_eq!(level(&report, "qemu versions"), "warn", "{report}");
    assert!(
        line(&report, "qemu versions").contains(
            "qemu-system-x86_64 is 7.2.22 but qemu-img is 8.2.2; they come from different QEMU releases"
        ),
        "{report}"
    );
    // The fake QEMU fails to initialise KVM, as QEMU does without it.
    assert_eq!(level(&report, "accelerator"), "warn", "{report}");
    assert!(line(&report, "accelerator").contains("TCG"), "{report}");
    assert_eq!(level(&report, "uefi firmware"), "warn", "{report}");
    assert!(
        line(&report, "uefi firmware").contains("install ovmf"),
        "{report}"
    );
    assert!(
        // Three warnings here, four where the disk is nearly full.
        report.contains("\nholos doctor: holos up can work on this host ("),
        "{report}"
    );

    // HOLOS_ACCEL=kvm without a working KVM: up would fail.
    let (out, report) = host.doctor_on_own_path(&[("HOLOS_ACCEL", "kvm")]);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert_eq!(level(&report, "accelerator"), "FAIL", "{report}");
    assert!(
        line(&report, "accelerator").contains("HOLOS_ACCEL=kvm, but "),
        "{report}"
    );
    let (out, report) = host.doctor_on_own_path(&[("HOLOS_ACCEL", "fast")]);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(
        line(&report, "accelerator").contains("HOLOS_ACCEL=\"fast\" is not an accelerator"),
        "{report}"
    );
    let (out, report) = host.doctor_on_own_path(&[("HOLOS_ACCEL", "tcg")]);
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert_eq!(level(&report, "accelerator"), "ok", "{report}");

    // OVMF below the test root is found where up finds it.
    let ovmf = host.dir.path().join("root/usr/share/OVMF");
    std::fs::create_dir_all(&ovmf).unwrap();
    std::fs::write(ovmf.join("OVMF_CODE_4M.fd"), b"code").unwrap();
    std::fs::write(ovmf.join("OVMF_VARS_4M.fd"), b"vars").unwrap();
    let root = host.dir.path().join("root");
    let (_, report) = host.doctor_on_own_path(&[("HOLO_ROOT_DIR", root.to_str().unwrap())]);
    assert_eq!(
        line(&report, "uefi firmware"),
        format!(
            "ok    uefi firmware        OVMF at {}",
            ovmf.join("OVMF_CODE_4M.fd").display()
        ),
        "{report}"
    );

    // A state directory that cannot be created.
    let file = host.dir.path().join("a-file");
    std::fs::write(&file, b"").unwrap();
    let state = file.join("state");
    let (out, report) = host.doctor_on_own_path(&[("HOLOS_STATE_DIR", state.to_str().unwrap())]);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert_eq!(level(&report, "state directory"), "FAIL", "{report}");
    assert!(
        line(&report, "state directory").contains(&format!("cannot create {}", state.display())),
        "{report}"
    );
    assert!(
        !report.contains("free disk"),
        "no free space without a state directory:\n{report}"
    );
}

#[test]
#[ignore = "needs ssh, ssh-keygen and KVM (/dev/kvm)"]
fn where_kvm_works_the_probe_launch_finds_it() {
    test_support::require_tools(&["ssh", "ssh-keygen"], "openssh-client");
    // The probe first needs /dev/kvm; the fake's FAKE_QEMU_KVM=1 answers
    // query-kvm with enabled.
    test_support::require_path(Path::new("/dev/kvm"), "KVM (/dev/kvm)");
    let host = Host::new();
    host.fake_qemu()
        .qemu_img_8_2()
        .real("ssh")
        .real("ssh-keygen");
    for accel in [None, Some("kvm")] {
        let mut env = vec![("FAKE_QEMU_KVM", "1")];
        env.extend(accel.map(|a| ("HOLOS_ACCEL", a)));
        let (out, report) = host.doctor_on_own_path(&env);
        assert_eq!(out.status.code(), Some(0), "{report}");
        assert_eq!(
            line(&report, "accelerator"),
            "ok    accelerator          KVM (the probe launch with KVM worked)",
            "{report}"
        );
    }
}

#[test]
fn a_qemu_img_that_does_not_answer_version_fails() {
    let host = Host::new();
    let path = host.bin().join("qemu-img");
    // A truncated install: the binary's loader is gone.
    std::fs::write(&path, "#!/nonexistent/ld\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (out, report) = host.doctor_on_own_path(&[]);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert_eq!(level(&report, "qemu-img"), "FAIL", "{report}");
    assert!(
        line(&report, "qemu-img").contains(&format!("{} does not work: ", path.display())),
        "{report}"
    );
    assert!(!report.contains("qemu versions"), "{report}");
}

#[test]
#[ignore = "needs QEMU and ssh"]
fn on_this_machine_the_installed_qemu_passes() {
    test_support::require_tools(
        &["qemu-system-x86_64", "qemu-img", "ssh", "ssh-keygen"],
        "qemu-system-x86, qemu-utils, openssh-client",
    );
    let host = Host::new();
    let (out, report) = host.doctor("/usr/local/bin:/usr/bin:/bin", &[]);
    println!("{report}");
    assert_eq!(out.status.code(), Some(0), "{report}");
    let version = Command::new("qemu-img").arg("--version").output().unwrap();
    let first = String::from_utf8_lossy(&version.stdout)
        .lines()
        .next()
        .unwrap()
        .to_string();
    assert!(line(&report, "qemu-img").contains(&first), "{report}");
    let number = first.split_whitespace().nth(2).unwrap();
    assert_eq!(
        line(&report, "qemu versions"),
        format!("ok    qemu versions        both {number}")
    );
    // KVM or TCG, whichever the probe launch finds; never a failure.
    let accel = line(&report, "accelerator");
    assert!(
        accel.starts_with("ok    accelerator          KVM")
            || accel.starts_with("warn  accelerator          TCG"),
        "{report}"
    );
    assert!(line(&report, "free disk").contains(" free for images and disks in "));
}
