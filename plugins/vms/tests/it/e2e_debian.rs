//! The real end-to-end test: a Debian guest (systemd, cloud-init, sshd),
//! built by `tests/vm-image/build-debian.sh` from the machine's apt mirror,
//! runs a two-service project under TCG, first through `holo apply` (holo-vms
//! in a holorc, test mode under a `HOLO_ROOT_DIR`) and then through
//! `holos up`. It shows that:
//!
//! - cloud-init applied the hostname and the files;
//! - `web` resolves `db` and reaches it on the internal 10.10.0.0/24 network;
//! - the published port serves the file on 127.0.0.1;
//! - `holos exec web-0 -- cat /etc/hostname` works;
//! - `web` did not start before `db` was healthy;
//! - data written to the volume survives `holos down` + `holos up`;
//! - a guest killed with `kill -9` right after its boot, which lost its SSH
//!   host keys with it, heals on the next `holo apply`: `holos ps` says
//!   `starting` (not the `healthy` of before the kill) until the guest,
//!   whose boot made its keys again, is reachable and healthy;
//! - a file written before `holos snapshots create` of the running web-0 and
//!   deleted after it is back after `holos snapshots restore`;
//! - `holos stop` ends the guests through QMP `system_powerdown`, not a signal;
//! - after `holos start`, web's `command` (not a first-boot runcmd) serves
//!   its published port again;
//! - (a second test) a volume grown with `holos volumes resize` while the
//!   guest is stopped has a file system of the new size after `start`;
//!
//! and, with `holo`, `holo-file` and `holo-service` copied into `web-0`, that
//! holo-service converges a real systemd unit written by holo-file: enabled
//! and started, restarted when its file changes, healed after
//! `systemctl kill` and after `systemctl disable`.
//!
//! It needs qemu-system-x86_64, qemu-img, ssh and the image (building it
//! needs root and debootstrap), so it is ignored by default; run without
//! them, it fails naming what is missing. Run it alone with
//! `cargo test -p holo-vms --test it e2e_debian:: -- --ignored --nocapture` to see its
//! timings.

use crate::plugin_support;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime};

use plugin_support::Root;

/// How long one `holo apply` or `holos up` of the project may take: guests
/// boot in about a minute under TCG on an idle machine, much slower on a
/// loaded one.
const UP_LIMIT: Duration = Duration::from_secs(1500);
/// How long one `holos exec` may take.
const EXEC_LIMIT: Duration = Duration::from_secs(300);
/// The kernel command line of the guest (direct kernel boot).
const APPEND: &str = "root=LABEL=holos-root rw console=ttyS0";
/// What web's published port serves, and db's internal one.
const WEB_PAGE: &str = "hello from web, written by cloud-init";
const DB_PAGE: &str = "db answers on the internal network";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The image directory, built or reused by `build-debian.sh`; fails the test
/// naming what is missing when it cannot be.
fn image() -> PathBuf {
    // One build for the tests that run at once: a second build would
    // replace the base image under the first test's running overlays.
    static BUILT: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);
    let mut built = BUILT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(image) = built.as_ref() {
        return image.clone();
    }
    let image = build_image();
    *built = Some(image.clone());
    image
}

/// Builds (or finds up to date) the Debian guest image.
fn build_image() -> PathBuf {
    test_support::require_tools(
        &["qemu-system-x86_64", "qemu-img", "ssh", "ssh-keygen"],
        "apt-get install qemu-system-x86 qemu-utils openssh-client",
    );
    let out = repo().join("target/vm-image-debian");
    let cached = out.join("stamp").is_file();
    let can_build = nix::unistd::geteuid().is_root() && test_support::have_tool("debootstrap");
    test_support::require(
        cached || can_build,
        "the Debian guest image, or root and debootstrap to build it",
        &format!(
            "there is no cached image in {} (apt-get install debootstrap and run as root, or build it with sudo tests/vm-image/build-debian.sh {})",
            out.display(),
            out.display()
        ),
    );
    let started = Instant::now();
    let built = Command::new("sh")
        .arg(repo().join("tests/vm-image/build-debian.sh"))
        .arg(&out)
        .output()
        .expect("run build-debian.sh");
    let said = String::from_utf8_lossy(&built.stdout).into_owned()
        + &String::from_utf8_lossy(&built.stderr);
    assert!(
        built.status.success(),
        "tests/vm-image/build-debian.sh failed:\n{said}"
    );
    eprintln!(
        "e2e: image ready in {:.0}s: {}",
        started.elapsed().as_secs_f64(),
        said.trim()
    );
    out.canonicalize().unwrap()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn compose(image: &Path, web_port: u16) -> String {
    let image = image.display();
    let vm = format!(
        r#"    image: {image}/disk.qcow2
    image_format: qcow2
    image_os: systemd
    stop_grace_period: 300s
    vm:
      memory_mb: 768
      extra_args: ["-kernel", "{image}/vmlinuz", "-initrd", "{image}/initrd.img", "-append", "{APPEND}"]
"#
    );
    format!(
        r#"name: e2e
services:
  db:
{vm}    volumes: ["dbdata:/srv/db"]
    healthcheck:
      test: "mountpoint -q /srv/db && test -s /srv/db/boots && busybox wget -q -O /dev/null http://127.0.0.1:5432/index.html"
      interval: 5s
      timeout: 20s
      retries: 5
      start_period: 600s
    cloud_init:
      write_files:
        - path: /srv/dbwww/index.html
          content: "{DB_PAGE}\n"
      # bootcmd runs at every boot: db serves again after a restart on its
      # own disk (runcmd runs once per instance).
      bootcmd:
        - "mkdir -p /srv/dbwww && busybox httpd -p 5432 -h /srv/dbwww"
      runcmd:
        - "hostname >> /srv/db/boots"
  web:
{vm}    hostname: webhost
    depends_on: [db]
    ports: ["{web_port}:80"]
    # Also gives web's first SSH answer the start period's slack, which a
    # loaded machine needs.
    healthcheck:
      test: "busybox wget -q -O /dev/null http://127.0.0.1:80/index.html"
      interval: 5s
      timeout: 20s
      retries: 5
      start_period: 600s
    # The service's command: it runs at every boot, not only the first.
    command: [busybox, httpd, -f, -p, "80", -h, /srv/www]
    cloud_init:
      write_files:
        - path: /srv/www/index.html
          content: "{WEB_PAGE}\n"
          permissions: "0644"
volumes:
  dbdata: {{size: 64M}}
"#
    )
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// The test root: the plugin test root, with the real QEMU and the real ssh
/// (its fake ones removed).
fn real_root() -> Root {
    let root = Root::new();
    for fake in ["bin/qemu-system-x86_64", "bin/ssh"] {
        std::fs::remove_file(root.path().join(fake)).unwrap();
    }
    root
}

struct E2e {
    root: Root,
    compose: PathBuf,
    /// The project: each test has its own, and so its own network segment
    /// (the tests run at once, and one segment would give two guests one
    /// address).
    project: &'static str,
}

impl E2e {
    fn holos(&self, args: &[&str]) -> Command {
        let mut all = vec!["-p", self.project];
        all.extend_from_slice(args);
        self.root.holos(&all)
    }

    fn holos_ok(&self, args: &[&str], limit: Duration) -> String {
        let out = self.root.run_within(self.holos(args), limit);
        let said = text(&out);
        assert!(out.status.success(), "holos {args:?} failed:\n{said}");
        said
    }

    /// `holos exec INSTANCE -- sudo sh -c SCRIPT` with `input` on stdin.
    fn exec_with(&self, instance: &str, script: &str, input: Stdio) -> Output {
        let mut command = self.holos(&["exec", instance, "--", "sudo", "sh", "-c", script]);
        command.stdin(input);
        self.root.run_within(command, EXEC_LIMIT)
    }

    /// Runs `script` as root in the guest; its stdout, trimmed. It must succeed.
    fn sh(&self, instance: &str, script: &str) -> String {
        let out = self.run(instance, script);
        assert!(
            out.status.success(),
            "{instance}: {script:?} failed ({}):\n{}",
            out.status,
            text(&out)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Runs `script`; its stdout, trimmed, whatever its exit status.
    fn sh_any(&self, instance: &str, script: &str) -> String {
        let out = self.run(instance, script);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Runs `script` (no stdin). ssh itself failing (255) is retried: in
    /// its first minutes a guest's cloud-init restarts sshd (after setting
    /// PasswordAuthentication), which drops a connection being set up.
    fn run(&self, instance: &str, script: &str) -> Output {
        let mut attempt = 1;
        loop {
            let out = self.exec_with(instance, script, Stdio::null());
            if out.status.code() != Some(255) || attempt == 5 {
                return out;
            }
            eprintln!(
                "e2e: {instance}: ssh failed ({}), again: {script}",
                text(&out).trim()
            );
            attempt += 1;
            std::thread::sleep(Duration::from_secs(3));
        }
    }

    fn instance_dir(&self, instance: &str) -> PathBuf {
        self.root
            .state()
            .join("instances")
            .join(self.project)
            .join(instance)
    }

    fn console(&self, instance: &str) -> String {
        String::from_utf8_lossy(
            &std::fs::read(self.instance_dir(instance).join("console.log")).unwrap_or_default(),
        )
        .into_owned()
    }

    /// The end of each console log, for a failure message.
    fn consoles(&self) -> String {
        ["db-0", "web-0"]
            .iter()
            .map(|i| {
                let log = self.console(i);
                let lines: Vec<&str> = log.lines().collect();
                format!(
                    "--- {i} console (last 40 lines):\n{}",
                    lines[lines.len().saturating_sub(40)..].join("\n")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// `web` did not start before `db` was healthy: db-0's health record
    /// said `healthy` before web-0's seed was written and its QEMU launched.
    fn assert_web_started_after_db_healthy(&self) {
        let health = self.instance_dir("db-0").join("health");
        assert_eq!(std::fs::read_to_string(&health).unwrap(), "healthy\n");
        let healthy_at = mtime(&health);
        let web_seed_at = mtime(&self.instance_dir("web-0").join("seed.iso"));
        assert!(
            healthy_at <= web_seed_at,
            "web-0 was set up at {web_seed_at:?}, before db-0 was healthy at {healthy_at:?}"
        );
    }
}

fn mtime(path: &Path) -> SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn http_get(port: u16, path: &str) -> String {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\n\r\n").unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}

/// `holo`, `holo-file` and `holo-service` from the workspace's build.
fn holo_binaries() -> [PathBuf; 3] {
    ["holo", "holo-file", "holo-service"].map(test_support::binary)
}

/// The test unit; `greeting` tells one version of its file from another.
fn unit_resource(greeting: &str) -> String {
    format!(
        "[[file]]\nname = \"/etc/systemd/system/holo-e2e.service\"\nowner = \"root\"\ngroup = \"root\"\nmode = \"0644\"\ncontent = \"\"\"\n[Unit]\nDescription=holo end-to-end test service\n\n[Service]\nEnvironment=GREETING={greeting}\nExecStart=/bin/busybox httpd -f -p 8081 -h /srv/www\n\n[Install]\nWantedBy=multi-user.target\n\"\"\"\n"
    )
}

const SERVICE_RESOURCE: &str = "[[service]]\nname = \"holo-e2e\"\nensure = \"running\"\nenable = true\nsubscribe = [\"file:/etc/systemd/system/holo-e2e.service\"]\n";

#[test]
#[ignore = "needs QEMU, ssh and the Debian guest image (or root and debootstrap)"]
fn a_debian_project_runs_end_to_end_through_holo_apply_and_holos_up() {
    let image = image();
    let test_started = Instant::now();
    let web_port = free_port();
    let root = real_root();
    root.compose("e2e", &compose(&image, web_port));
    let e2e = E2e {
        compose: root.path().join("usr/share/holo/vms/e2e/holos.yaml"),
        root,
        project: "e2e",
    };

    // 1. holo apply: db first, healthy, then web.
    let phase = Instant::now();
    let out = e2e.root.run_within(e2e.root.holo(&["apply"]), UP_LIMIT);
    let said = text(&out);
    assert!(
        out.status.success(),
        "holo apply failed:\n{said}\n{}",
        e2e.consoles()
    );
    let db = said.find("Working on vm:e2e/db").expect(&said);
    let web = said.find("Working on vm:e2e/web").expect(&said);
    assert!(db < web, "db is applied before web:\n{said}");
    eprintln!(
        "e2e: holo apply brought db and web up in {:.0}s",
        phase.elapsed().as_secs_f64()
    );
    e2e.assert_web_started_after_db_healthy();

    // cloud-init applied the hostname and the files (web's check passed
    // once its command served the page; cloud-init may still be finishing).
    let status = e2e.sh_any("web-0", "cloud-init status --wait --long");
    assert!(status.contains("status: done"), "{status}");
    assert_eq!(e2e.sh("web-0", "hostname"), "webhost");
    let hostname = e2e.holos_ok(&["exec", "web-0", "--", "cat", "/etc/hostname"], EXEC_LIMIT);
    assert_eq!(hostname.trim(), "webhost");
    assert_eq!(e2e.sh("web-0", "cat /srv/www/index.html"), WEB_PAGE);
    assert_eq!(
        e2e.sh("web-0", "stat -c %a /srv/www/index.html"),
        "644",
        "write_files permissions"
    );
    // The published port serves the file on 127.0.0.1.
    let response = http_get(web_port, "/index.html");
    assert!(
        response.starts_with("HTTP/1.1 200 OK") || response.starts_with("HTTP/1.0 200 OK"),
        "{response}"
    );
    assert!(response.trim_end().ends_with(WEB_PAGE), "{response}");

    // web resolves db and reaches it on the internal network.
    let ps = e2e.root.ps("e2e");
    let ip_of = |name: &str| {
        ps.iter()
            .find(|i| i["instance"] == name)
            .and_then(|i| i["ip"].as_str())
            .unwrap_or_else(|| panic!("{name} in holos ps: {ps:?}"))
            .to_string()
    };
    let (db_ip, web_ip) = (ip_of("db-0"), ip_of("web-0"));
    assert!(db_ip.starts_with("10.10.0.") && web_ip.starts_with("10.10.0."));
    let resolved = e2e.sh("web-0", "getent hosts db");
    assert_eq!(resolved.split_whitespace().next(), Some(db_ip.as_str()));
    let addresses = e2e.sh("web-0", "ip -4 -o addr show");
    assert!(
        addresses.contains(&format!("inet {web_ip}/24")),
        "{addresses}"
    );
    let route = e2e.sh("web-0", &format!("ip -4 route get {db_ip}"));
    assert!(
        !route.contains(" via "),
        "db is on a directly attached network: {route}"
    );
    assert_eq!(
        e2e.sh("web-0", "busybox wget -q -O - http://db:5432/index.html"),
        DB_PAGE
    );

    // Data written to db's volume, to be found again after down + up.
    e2e.sh(
        "db-0",
        "mountpoint /srv/db && echo kept across down and up > /srv/db/kept && sync",
    );

    // 2. A crash right after boot. What a `kill -9` of QEMU loses is what
    // the guest had not written to its disk yet; host keys that cloud-init
    // made seconds before come back as empty files (ext4's delayed
    // allocation). The test makes that loss certain: it empties the keys,
    // syncs, and kills QEMU.
    let phase = Instant::now();
    e2e.sh(
        "db-0",
        "for f in /etc/ssh/ssh_host_*_key /etc/ssh/ssh_host_*_key.pub; do : > \"$f\"; done; sync",
    );
    let killed = e2e.root.pid("e2e", "db-0").expect("db-0 runs") as u32;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(killed as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !gone(killed) {
        assert!(Instant::now() < deadline, "QEMU {killed} survived SIGKILL");
        std::thread::sleep(Duration::from_millis(100));
    }
    // The next holo apply starts db-0 again on its disk. While it boots,
    // ps says starting: the healthy of before the kill is gone.
    let apply_log = e2e.root.path().join("crash-apply.log");
    let mut apply = e2e.root.holo(&["apply"]);
    apply
        .stdout(std::fs::File::create(&apply_log).unwrap())
        .stderr(
            std::fs::File::options()
                .append(true)
                .open(&apply_log)
                .unwrap(),
        );
    let mut apply = apply.spawn().unwrap();
    let restarted = loop {
        let db = e2e
            .root
            .ps("e2e")
            .into_iter()
            .find(|i| i["instance"] == "db-0")
            .expect("db-0 in holos ps");
        if db["pid"].as_u64().is_some_and(|p| p as u32 != killed) {
            break db;
        }
        if let Some(status) = apply.try_wait().unwrap() {
            panic!(
                "holo apply ended ({status}) before db-0 ran again:\n{}",
                std::fs::read_to_string(&apply_log).unwrap_or_default()
            );
        }
        assert!(
            phase.elapsed() < UP_LIMIT,
            "db-0 was not started again:\n{}",
            std::fs::read_to_string(&apply_log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(restarted["health"], "starting", "{restarted}");
    let status = loop {
        if let Some(status) = apply.try_wait().unwrap() {
            break status;
        }
        if phase.elapsed() >= UP_LIMIT {
            let _ = apply.kill();
            let _ = apply.wait();
            panic!(
                "holo apply did not heal db-0 within {UP_LIMIT:?}:\n{}\n{}",
                std::fs::read_to_string(&apply_log).unwrap_or_default(),
                e2e.consoles()
            );
        }
        std::thread::sleep(Duration::from_secs(1));
    };
    let said = std::fs::read_to_string(&apply_log).unwrap_or_default();
    assert!(
        status.success(),
        "holo apply after the crash failed:\n{said}\n{}",
        e2e.consoles()
    );
    assert!(said.contains("Working on vm:e2e/db"), "{said}");
    let db = e2e
        .root
        .ps("e2e")
        .into_iter()
        .find(|i| i["instance"] == "db-0")
        .expect("db-0 in holos ps");
    assert_eq!(db["health"], "healthy", "{db}");
    // Reachable: its boot made the keys again, and sshd runs on them.
    let repaired = e2e.sh(
        "db-0",
        "grep -h 'regenerating the broken SSH host key' /var/log/cloud-init-output.log; \
         for f in /etc/ssh/ssh_host_*_key; do ssh-keygen -y -f \"$f\" >/dev/null && echo \"sound $f\"; done; \
         systemctl is-active ssh.service",
    );
    assert!(
        repaired
            .contains("holos: regenerating the broken SSH host key /etc/ssh/ssh_host_ed25519_key")
            && repaired.contains("sound /etc/ssh/ssh_host_ed25519_key")
            && repaired.ends_with("active"),
        "{repaired}"
    );
    assert_eq!(
        e2e.sh("db-0", "cat /srv/db/kept"),
        "kept across down and up"
    );
    eprintln!(
        "e2e: holo apply healed db-0 after kill -9 in {:.0}s",
        phase.elapsed().as_secs_f64()
    );

    // 3. Real systemd: holo-file writes a unit, holo-service converges it.
    let phase = Instant::now();
    holo_service_in_the_guest(&e2e);
    eprintln!(
        "e2e: holo-service against systemd in web-0 took {:.0}s",
        phase.elapsed().as_secs_f64()
    );

    // 4. holos down, then holos up from the compose file.
    let phase = Instant::now();
    let down = e2e.holos_ok(&["down"], UP_LIMIT);
    assert!(
        down.contains("holos: removed web-0") && down.contains("holos: removed db-0"),
        "{down}"
    );
    assert!(!e2e.instance_dir("db-0").exists());
    let compose_file = e2e.compose.display().to_string();
    let out = e2e
        .root
        .run_within(e2e.root.holos(&["-f", &compose_file, "up"]), UP_LIMIT);
    let said = text(&out);
    assert!(
        out.status.success(),
        "holos up failed:\n{said}\n{}",
        e2e.consoles()
    );
    let waits = said
        .find("holos: web waits for db-0 to be healthy")
        .expect(&said);
    let web_started = said.find("holos: web-0 started").expect(&said);
    assert!(
        said.find("holos: db-0 started").expect(&said) < waits,
        "{said}"
    );
    assert!(
        waits < web_started,
        "web started before db was healthy:\n{said}"
    );
    e2e.assert_web_started_after_db_healthy();
    eprintln!(
        "e2e: holos down + holos up took {:.0}s",
        phase.elapsed().as_secs_f64()
    );
    assert_eq!(
        e2e.sh("db-0", "cat /srv/db/kept"),
        "kept across down and up"
    );
    // Each first boot's runcmd wrote into the volume (mounted before it ran).
    assert_eq!(e2e.sh("db-0", "cat /srv/db/boots"), "db-0\ndb-0");
    assert_eq!(e2e.sh("web-0", "cat /etc/hostname"), "webhost");
    let status = e2e.sh_any("web-0", "cloud-init status --wait --long");
    assert!(status.contains("status: done"), "{status}");
    assert!(
        http_get(web_port, "/index.html")
            .trim_end()
            .ends_with(WEB_PAGE)
    );

    // 4b. A snapshot of the running web-0 brings back a file deleted after it.
    let phase = Instant::now();
    e2e.sh(
        "web-0",
        "echo taken before the snapshot > /root/snapped && sync",
    );
    e2e.holos_ok(&["snapshots", "create", "web-0", "e2e"], EXEC_LIMIT);
    e2e.sh("web-0", "rm /root/snapped && sync");
    let restored = e2e.holos_ok(&["snapshots", "restore", "web-0", "e2e"], UP_LIMIT);
    assert!(
        restored.contains("holos: web-0: root disk restored to snapshot e2e"),
        "{restored}"
    );
    // Waits for the booted guest's sshd; `sh` retries an early dropped connection.
    let _ = e2e.root.run_within(
        e2e.holos(&["exec", "web-0", "-w", "1500", "--", "true"]),
        UP_LIMIT,
    );
    assert_eq!(
        e2e.sh("web-0", "cat /root/snapped"),
        "taken before the snapshot"
    );
    eprintln!(
        "e2e: snapshot, delete, restore and boot took {:.0}s",
        phase.elapsed().as_secs_f64()
    );

    // 5. holos stop: the ACPI power button over QMP; the guests shut down.
    let phase = Instant::now();
    let pids: Vec<u32> = ["web-0", "db-0"]
        .iter()
        .map(|i| e2e.root.pid("e2e", i).expect("running") as u32)
        .collect();
    let stopped = e2e.holos_ok(&["stop"], UP_LIMIT);
    assert_eq!(
        stopped, "holos: web-0 powered off\nholos: db-0 powered off\n",
        "stop went past the power button"
    );
    for (instance, pid) in ["web-0", "db-0"].iter().zip(pids) {
        assert!(gone(pid), "{instance}: QEMU pid {pid} still runs");
        // QEMU logs every signal it ends on; it got none.
        let qemu_log = std::fs::read_to_string(e2e.instance_dir(instance).join("qemu.log"))
            .unwrap_or_default();
        assert!(
            !qemu_log.contains("terminating on signal"),
            "{instance}: {qemu_log}"
        );
        // systemd shut the guest down, then the kernel powered off.
        let console = e2e.console(instance);
        assert!(
            console.contains("reboot: Power down"),
            "{instance}:\n{console}"
        );
    }
    eprintln!("e2e: holos stop took {:.0}s", phase.elapsed().as_secs_f64(),);

    // 6. holos start: the same disks boot again, and web's command, which
    // runs at every boot, serves the published port again.
    let phase = Instant::now();
    e2e.holos_ok(&["start"], UP_LIMIT);
    let served = loop {
        let response = http_get(web_port, "/index.html");
        if response.trim_end().ends_with(WEB_PAGE) {
            break true;
        }
        if phase.elapsed() > UP_LIMIT {
            break false;
        }
        std::thread::sleep(Duration::from_secs(5));
    };
    assert!(
        served,
        "web's command did not serve port {web_port} after stop and start:\n{}",
        e2e.consoles()
    );
    eprintln!(
        "e2e: holos start until the port served took {:.0}s; the whole test {:.0}s",
        phase.elapsed().as_secs_f64(),
        test_started.elapsed().as_secs_f64()
    );
    // A power button pressed while a guest still boots goes unheard (no
    // logind yet), and down would wait out the grace period.
    for instance in ["db-0", "web-0"] {
        let status = e2e.sh_any(instance, "cloud-init status --wait --long");
        assert!(status.contains("status: done"), "{instance}: {status}");
    }
    e2e.holos_ok(&["down"], UP_LIMIT);
}

/// Whether `pid` no longer runs (a zombie has an empty cmdline).
fn gone(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline")).map_or(true, |c| c.is_empty())
}

/// Copies holo, holo-file and holo-service into web-0 and converges a real
/// systemd unit with them.
fn holo_service_in_the_guest(e2e: &E2e) {
    for (binary, target) in holo_binaries().iter().zip([
        "/usr/local/bin/holo",
        "/usr/lib/holo/holo-file",
        "/usr/lib/holo/holo-service",
    ]) {
        // gzip on both sides: the copy crosses ssh and slirp under TCG.
        let mut gzip = Command::new("gzip")
            .args(["-1", "-c"])
            .arg(binary)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let out = e2e.exec_with(
            "web-0",
            &format!("mkdir -p /usr/lib/holo && gzip -dc > {target}.new && chmod 0755 {target}.new && mv {target}.new {target}"),
            Stdio::from(gzip.stdout.take().unwrap()),
        );
        assert!(gzip.wait().unwrap().success());
        assert!(
            out.status.success(),
            "copying {}: {}",
            binary.display(),
            text(&out)
        );
    }
    // The host's binaries run in the guest (the same Debian release).
    assert_eq!(e2e.sh("web-0", "holo version"), env!("CARGO_PKG_VERSION"));
    e2e.sh(
        "web-0",
        "mkdir -p /etc/holorc.d /usr/share/holo/file /usr/share/holo/service && \
         echo 'plugin file' > /etc/holorc.d/20-file && echo 'plugin service' > /etc/holorc.d/50-service",
    );
    let put = |path: &str, content: &str| {
        let out = e2e.exec_with(
            "web-0",
            &format!("cat > {path}"),
            Stdio::from(tempfile_with(content)),
        );
        assert!(out.status.success(), "{}", text(&out));
    };
    let unit = || Unit::of(e2e);
    let apply = || {
        let out = e2e.exec_with("web-0", "holo apply", Stdio::null());
        let said = text(&out);
        assert!(out.status.success(), "holo apply in web-0 failed:\n{said}");
        said
    };

    // Before: no unit at all.
    let before = unit();
    assert_eq!(before.active, "inactive", "{before:?}");
    assert_ne!(before.enabled, "enabled", "{before:?}");

    put("/usr/share/holo/file/e2e.toml", &unit_resource("first"));
    put("/usr/share/holo/service/e2e.toml", SERVICE_RESOURCE);
    let said = apply();
    assert!(
        said.contains("Working on file:/etc/systemd/system/holo-e2e.service"),
        "{said}"
    );
    assert!(said.contains("Working on service:holo-e2e"), "{said}");
    let first = unit();
    assert_eq!(
        (first.active.as_str(), first.enabled.as_str()),
        ("active", "enabled"),
        "{said}"
    );
    assert_ne!(first.main_pid, "0");
    assert_eq!(first.environment, "GREETING=first");

    // Converged: a second apply changes nothing and restarts nothing.
    let said = apply();
    assert!(!said.contains("Working on"), "{said}");
    assert_eq!(unit().main_pid, first.main_pid);

    // The unit's file changes: holo-file rewrites it, holo-service restarts
    // the subscribed service, which now runs with the new file.
    put("/usr/share/holo/file/e2e.toml", &unit_resource("second"));
    let said = apply();
    assert!(said.contains("Working on service:holo-e2e"), "{said}");
    let second = unit();
    assert_eq!(second.active, "active", "{said}");
    assert_ne!(second.main_pid, first.main_pid, "not restarted:\n{said}");
    assert_eq!(
        second.environment, "GREETING=second",
        "restarted without daemon-reload:\n{said}"
    );

    // Self-healing: killed by hand, started again by the next apply.
    e2e.sh(
        "web-0",
        "systemctl kill --wait holo-e2e || systemctl kill holo-e2e",
    );
    let killed = Instant::now();
    while unit().active == "active" {
        assert!(
            killed.elapsed() < Duration::from_secs(120),
            "systemctl kill did not stop it"
        );
        std::thread::sleep(Duration::from_secs(1));
    }
    let said = apply();
    assert!(said.contains("Working on service:holo-e2e"), "{said}");
    let healed = unit();
    assert_eq!(healed.active, "active", "{said}");
    assert_ne!(healed.main_pid, second.main_pid);

    // Disabled by hand: the next apply restores the boot configuration.
    e2e.sh("web-0", "systemctl disable holo-e2e 2>/dev/null");
    assert_eq!(unit().enabled, "disabled");
    let said = apply();
    let restored = unit();
    assert_eq!(
        (restored.active.as_str(), restored.enabled.as_str()),
        ("active", "enabled"),
        "{said}"
    );
}

/// What systemd says of the test unit in web-0 (one `holos exec`).
#[derive(Debug)]
struct Unit {
    active: String,
    enabled: String,
    main_pid: String,
    environment: String,
}

impl Unit {
    fn of(e2e: &E2e) -> Unit {
        let said = e2e.sh_any(
            "web-0",
            "systemctl is-active holo-e2e; enabled=$(systemctl is-enabled holo-e2e 2>/dev/null); \
             echo \"${enabled:-absent}\"; \
             systemctl show -p MainPID --value holo-e2e; systemctl show -p Environment --value holo-e2e",
        );
        let mut lines = said.lines().map(str::to_string);
        let mut next = || lines.next().unwrap_or_default();
        Unit {
            active: next(),
            enabled: next(),
            main_pid: next(),
            environment: next(),
        }
    }
}

/// A readable file holding `content`, unlinked already.
fn tempfile_with(content: &str) -> std::fs::File {
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(content.as_bytes()).unwrap();
    std::io::Seek::rewind(&mut file).unwrap();
    file
}

/// `holos volumes resize` on the real guest: after `stop`, `resize` and
/// `start`, the boot's bootcmd has grown the mounted ext4 to the new size.
#[test]
#[ignore = "needs QEMU, ssh and the Debian guest image (or root and debootstrap)"]
fn a_resized_volume_grows_in_the_debian_guest_at_its_next_boot() {
    let image = image();
    let started = Instant::now();
    let root = real_root();
    let shown = image.display();
    root.compose(
        "e2e-resize",
        &format!(
            r#"name: e2e-resize
services:
  db:
    image: {shown}/disk.qcow2
    image_format: qcow2
    image_os: systemd
    stop_grace_period: 300s
    vm:
      memory_mb: 768
      extra_args: ["-kernel", "{shown}/vmlinuz", "-initrd", "{shown}/initrd.img", "-append", "{APPEND}"]
    volumes: ["dbdata:/srv/db"]
volumes:
  dbdata: {{size: 64M}}
"#
        ),
    );
    let e2e = E2e {
        compose: root.path().join("usr/share/holo/vms/e2e-resize/holos.yaml"),
        root,
        project: "e2e-resize",
    };
    let compose_file = e2e.compose.display().to_string();
    let booted = |what: &str| {
        // Waits for sshd, then for cloud-init (the first boot mounts the volume).
        let _ = e2e.root.run_within(
            e2e.holos(&["exec", "db-0", "-w", "1500", "--", "true"]),
            UP_LIMIT,
        );
        let status = e2e.sh_any("db-0", "cloud-init status --wait");
        assert!(status.contains("done"), "{what}: {status}");
    };
    let size = || {
        e2e.sh("db-0", "df -B1 --output=size /srv/db | tail -n 1")
            .parse::<u64>()
            .unwrap()
    };
    e2e.holos_ok(&["-f", &compose_file, "up"], UP_LIMIT);
    booted("first boot");
    let before = size();
    assert!(before < 64 << 20, "{before}");
    e2e.holos_ok(&["stop"], UP_LIMIT);
    let said = e2e.holos_ok(&["volumes", "resize", "dbdata", "256M"], EXEC_LIMIT);
    assert!(
        said.contains("volume dbdata grown from 64.0 MiB to 256.0 MiB"),
        "{said}"
    );
    e2e.holos_ok(&["start"], UP_LIMIT);
    booted("after the resize");
    let after = size();
    assert!(after > 200 << 20, "{before} -> {after}\n{}", e2e.consoles());
    assert!(
        e2e.console("db-0")
            .contains("holos: grew the file system of volume dbdata"),
        "{}",
        e2e.consoles()
    );
    eprintln!(
        "e2e: volume grown from {before} to {after} bytes in the guest; {:.0}s",
        started.elapsed().as_secs_f64()
    );
    e2e.holos_ok(&["down"], UP_LIMIT);
}
