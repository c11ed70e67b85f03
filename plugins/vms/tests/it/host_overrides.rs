//! What upstream holos users set on the command line and in the
//! environment: `--lock-timeout`, `HOLOS_QEMU_SYSTEM`, `HOLOS_QEMU_IMG`,
//! `HOLOS_OVMF_CODE`/`HOLOS_OVMF_VARS` and `HOLOS_DEBUG_QMP`, with the fake
//! QEMU.

use std::os::unix::fs::PermissionsExt;

use crate::runtime_support;
use runtime_support::{Project, Qemu};

const COMPOSE: &str =
    "name: env\nservices:\n  web:\n    image: ./base.qcow2\n    stop_grace_period: 1s\n";

#[test]
fn lock_timeout_bounds_the_wait_for_another_command() {
    let p = Project::new(COMPOSE, Qemu::Fake);
    let locks = p.state().join("locks");
    std::fs::create_dir_all(&locks).unwrap();
    let file = std::fs::File::create(locks.join("env.lock")).unwrap();
    let _held = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive).unwrap();
    let out = p.run(&["--lock-timeout", "1s", "stop"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("project env is still locked by another holos command after 1s"),
        "{said}"
    );
    assert!(said.contains("--lock-timeout"), "{said}");
    let out = p.run(&["stop", "--lock-timeout", "soon"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a bad duration is a usage error"
    );
}

#[test]
#[ignore = "needs qemu-img"]
fn qemu_programs_come_from_the_environment_and_qmp_traffic_is_shown_on_request() {
    runtime_support::require_qemu_img();
    let p = Project::new(COMPOSE, Qemu::Fake);
    // Not the one on PATH (the real QEMU there, if any): HOLOS_QEMU_SYSTEM's.
    std::fs::remove_file(p.path().join("bin/qemu-system-x86_64")).unwrap();
    let alt = p.path().join("alt");
    std::fs::create_dir(&alt).unwrap();
    let qemu = alt.join("qemu-system-x86_64");
    std::os::unix::fs::symlink(test_support::binary("fake-qemu-system-x86_64"), &qemu).unwrap();
    // A qemu-img that notes its arguments, then is the real one.
    let img_log = p.path().join("qemu-img.log");
    let img = alt.join("logging-qemu-img");
    std::fs::write(
        &img,
        format!(
            "#!/bin/sh\necho \"$@\" >> {}\nexec qemu-img \"$@\"\n",
            img_log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&img, std::fs::Permissions::from_mode(0o755)).unwrap();
    let with_env = |args: &[&str]| {
        let mut command = p.holos(args);
        command
            .env("HOLOS_QEMU_SYSTEM", &qemu)
            .env("HOLOS_QEMU_IMG", &img);
        command
    };

    p.ok_with(&mut with_env(&["up", "--no-wait"]));
    let pid = p.pid_of("web-0").expect("running");
    assert_eq!(
        runtime_support::cmdline(pid)[0],
        qemu.to_str().unwrap(),
        "the QEMU started is HOLOS_QEMU_SYSTEM"
    );
    let logged = std::fs::read_to_string(&img_log).unwrap();
    assert!(logged.contains("create"), "{logged}");

    let said = p.ok_with(with_env(&["stop"]).env("HOLOS_DEBUG_QMP", "1"));
    assert!(
        said.contains("holos: qmp> {\"execute\":\"system_powerdown\"}"),
        "{said}"
    );
    assert!(said.contains("holos: qmp< {\"QMP\": "), "{said}");
    assert!(said.contains("holos: qmp< {\"return\": {}}"), "{said}");
    let quiet = p.ok_with(&mut with_env(&["start"]));
    assert!(!quiet.contains("qmp>"), "{quiet}");
}

#[test]
#[ignore = "needs qemu-img"]
fn uefi_firmware_comes_from_holos_ovmf_code_and_vars() {
    runtime_support::require_qemu_img();
    let compose = "name: fw\nservices:\n  web:\n    image: ./base.qcow2\n    stop_grace_period: 1s\n    vm: {uefi: true}\n";
    let p = Project::new(compose, Qemu::Fake);
    let code = p.path().join("MY_CODE.fd");
    let vars = p.path().join("MY_VARS.fd");
    std::fs::write(&code, vec![0u8; 4096]).unwrap();
    std::fs::write(&vars, vec![1u8; 4096]).unwrap();
    let mut missing = p.holos(&["up", "--no-wait"]);
    missing
        .env("HOLOS_OVMF_CODE", &code)
        .env("HOLOS_OVMF_VARS", p.path().join("nope.fd"));
    let out = missing.output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        said.contains("service web needs UEFI firmware (vm.uefi is set)")
            && said.contains("HOLOS_OVMF_CODE and HOLOS_OVMF_VARS"),
        "{said}"
    );
    p.ok_with(
        p.holos(&["up", "--no-wait"])
            .env("HOLOS_OVMF_CODE", &code)
            .env("HOLOS_OVMF_VARS", &vars),
    );
    let argv = p.recorded_argvs().pop().unwrap();
    let pflash = format!(
        "if=pflash,format=raw,unit=0,readonly=on,file={}",
        code.display()
    );
    assert!(argv.contains(&pflash), "{argv:?}");
    // The instance's vars start as a copy of HOLOS_OVMF_VARS.
    let copy = argv
        .iter()
        .find_map(|a| a.strip_prefix("if=pflash,format=raw,unit=1,file="))
        .unwrap();
    assert_eq!(std::fs::read(copy).unwrap(), vec![1u8; 4096]);
}
