//! The real boot test: `holos up` boots the test guest of `tests/vm-image`
//! (a Debian cloud kernel and a busybox initramfs, built from Debian
//! packages and cached in `target/vm-image`) under TCG through
//! `vm.extra_args`, and proves that QEMU runs with our argv, that the serial
//! log is captured, that a forwarded port reaches the guest's httpd, that
//! `holos stop` ends the guest through QMP `system_powerdown` (the guest's
//! acpid powers off) within the grace period and not by a signal, and that
//! `down` keeps the named volume. Skips, saying so, without QEMU.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::runtime_support;
use runtime_support::{Project, Qemu, cmdline};

/// Builds the guest, or reuses the cached one.
fn guest_image() -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = repo.join("target/vm-image");
    let built = Command::new("sh")
        .arg(repo.join("tests/vm-image/build-guest.sh"))
        .arg(&out)
        .output()
        .expect("run build-guest.sh");
    assert!(
        built.status.success(),
        "tests/vm-image/build-guest.sh failed (it needs apt lists, dpkg-deb and cpio):\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    out
}

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < limit,
            "{what} did not happen within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn http_get(port: u16) -> String {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
        .write_all(b"GET /index.html HTTP/1.0\r\n\r\n")
        .unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}

#[test]
#[ignore = "needs QEMU (qemu-system-x86_64, qemu-img)"]
fn a_real_guest_boots_serves_a_forwarded_port_and_powers_off_through_qmp() {
    runtime_support::require_qemu();
    let image = guest_image();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let compose = format!(
        "name: boot\nservices:\n  guest:\n    image: {image}/disk.raw\n    image_format: raw\n    image_os: openrc\n    ports: [\"{port}:80\"]\n    stop_grace_period: 60s\n    volumes: [data:/data]\n    vm:\n      memory_mb: 256\n      extra_args: [\"-kernel\", \"{image}/vmlinuz\", \"-initrd\", \"{image}/initrd.img\", \"-append\", \"console=ttyS0 quiet panic=-1\"]\nvolumes:\n  data: {{size: 16M}}\n",
        image = image.canonicalize().unwrap().display()
    );
    let p = Project::new(&compose, Qemu::Real);
    p.ok(&["up", "--no-wait", "-q"]);
    let pid = p.pid_of("guest-0").expect("guest-0 runs");

    // QEMU runs with our argv: the instance's sockets, and extra_args last.
    let argv = cmdline(pid);
    let dir = p.state().join("instances/boot/guest-0");
    assert!(
        argv.iter().any(|a| a
            == &format!(
                "socket,id=qmp0,path={}/qmp.sock,server=on,wait=off",
                dir.display()
            )),
        "{argv:?}"
    );
    assert_eq!(argv[argv.len() - 1], "console=ttyS0 quiet panic=-1");
    assert!(
        argv.iter()
            .any(|a| a.contains(&format!("hostfwd=tcp:127.0.0.1:{port}-:80")))
    );

    // The serial log is captured, and holos logs shows it.
    let logs = || String::from_utf8_lossy(&p.run(&["logs", "guest-0"]).stdout).into_owned();
    wait_for("the guest's ready line", Duration::from_secs(90), || {
        logs().contains("HOLOS-TEST-GUEST: ready")
    });

    // The forwarded port reaches the guest's httpd.
    let response = http_get(port);
    assert!(
        response.ends_with("hello from the holos test guest\n")
            || response.ends_with("hello from the holos test guest"),
        "{response}"
    );

    // stop: ACPI power button over QMP; the guest powers itself off.
    let started = Instant::now();
    let said = p.ok(&["stop"]);
    assert_eq!(said, "holos: boot/guest-0 powered off\n");
    assert!(started.elapsed() < Duration::from_secs(60));
    assert!(logs().contains("HOLOS-TEST-GUEST: power button, powering off"));
    assert!(cmdline(pid).is_empty());

    // down removes the instance but keeps the named volume.
    let volume = p.state().join("volumes/boot/data.qcow2");
    assert!(volume.is_file());
    p.ok(&["down"]);
    assert!(!dir.exists());
    assert!(volume.is_file(), "down removed the named volume");
}
