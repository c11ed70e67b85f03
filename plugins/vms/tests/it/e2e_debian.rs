//! The real end-to-end test: a Debian guest (systemd, cloud-init, sshd),
//! built by `tests/vm-image/build-debian.sh` from the machine's apt mirror,
//! runs a three-service project under TCG, first through `holo apply` (holo-vms
//! in a holorc, test mode under a `HOLO_ROOT_DIR`) and then through
//! `holos up`. It shows that:
//!
//! - cloud-init applied the hostname and the files;
//! - Compose networks: `web` is on `front` and `back`, `db` on `back`, `edge`
//!   on `front`; each guest's `/etc/hosts` names its networks' members only;
//!   `web` reaches `db` and `edge` (ICMP, TCP, HTTP), and `edge` and `db`
//!   cannot reach each other, by name or by address (no ARP answer, no TCP);
//! - a UDP forward (`HOSTPORT:PORT/udp`) carries a datagram from the host to
//!   an echo server in `web` and back;
//! - `vm.disk_size` on `db`: `df /` shows its root grown past the image's;
//! - `holos run --rm --runcmd … IMAGE -- sh -c '…; exit 3'` runs the command
//!   after cloud-init's `runcmd`, prints its output, exits 3 and leaves
//!   nothing behind (it runs beside the next two steps);
//! - the published port serves the file on 127.0.0.1;
//! - `holos exec web-0 -- cat /etc/hostname` works;
//! - `web` did not start before `db` was healthy;
//! - data written to the volume survives `holos down` + `holos up db web`
//!   (`edge`, done with once the networks are checked, stays down, so that
//!   later steps boot two guests, not three);
//! - a `holos up` interrupted while a guest boots (SIGTERM while db-0 boots,
//!   then SIGINT while web-0 does, after db-0 was healthy) leaves that QEMU
//!   running and listed by `holos ps` (no QEMU of the test that ps does not
//!   list), and the next `holos up`, without `--force`, goes on with those
//!   guests, starting none again: web serves, and no half-written file is
//!   left in the instance directories;
//! - a guest killed with `kill -9` right after its boot, which lost its SSH
//!   host keys with it, heals on the next `holo apply`: `holos ps` says
//!   `starting` (not the `healthy` of before the kill) until the guest,
//!   whose boot made its keys again, is reachable and healthy;
//! - a file written before `holos snapshots create` of the running web-0 and
//!   deleted after it is back after `holos snapshots restore`;
//! - `holos stop` ends the guests through QMP `system_powerdown`, not a signal;
//! - after `holos start`, web's `command` (not a first-boot runcmd) serves
//!   its published port again;
//! - a volume grown with `holos volumes resize` between `stop` and `start`
//!   has a file system of the new size after `start`;
//!
//! and, with `holo`, `holo-file` and `holo-service` copied into `web-0`, that
//! holo-service converges a real systemd unit written by holo-file: enabled
//! and started, restarted when its file changes, healed after
//! `systemctl kill` and after `systemctl disable`.
//!
//! It needs qemu-system-x86_64, qemu-img, ssh and the image (building it
//! needs root and debootstrap), so it is ignored by default; run without
//! them, it fails naming what is missing. Run it alone with
//! `cargo test -p holo-vms --test it e2e_debian:: -- --ignored --nocapture` to see
//! the time of each step.

use crate::plugin_support;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime};

use nix::sys::signal::Signal;
use plugin_support::Root;

/// How long one `holo apply` or `holos up` of the project may take: guests
/// boot in about a minute under TCG on an idle machine, much slower on a
/// loaded one.
const UP_LIMIT: Duration = Duration::from_secs(1500);
/// How long one `holos exec` may take.
const EXEC_LIMIT: Duration = Duration::from_secs(300);
/// The kernel command line of the guest (direct kernel boot). No
/// speculation mitigations: they only slow an emulated CPU.
const APPEND: &str = "root=LABEL=holos-root rw console=ttyS0 mitigations=off";
/// What web's published port serves, and db's internal one.
const WEB_PAGE: &str = "hello from web, written by cloud-init";
const DB_PAGE: &str = "db answers on the internal network";
/// db's `vm.disk_size`, against the base image's root of about 1.2 GB.
const DB_DISK_SIZE: &str = "2G";
/// The guest port of web's UDP echo server.
const UDP_ECHO_PORT: u16 = 7007;

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

/// The guest settings of one service: `memory_mb` and more `vm:` lines.
fn guest(image: &Path, memory_mb: u32, vm_more: &str) -> String {
    let image = image.display();
    format!(
        r#"    image: {image}/disk.qcow2
    image_format: qcow2
    image_os: systemd
    stop_grace_period: 300s
    vm:
      memory_mb: {memory_mb}
      extra_args: ["-kernel", "{image}/vmlinuz", "-initrd", "{image}/initrd.img", "-append", "{APPEND}"]
{vm_more}"#
    )
}

/// Three services on two networks: web on `front` and `back`, db on `back`,
/// edge (small, no work of its own) on `front`.
fn compose(image: &Path, web_port: u16, udp_port: u16) -> String {
    let db = guest(image, 768, &format!("      disk_size: {DB_DISK_SIZE}\n"));
    let web = guest(image, 768, "");
    let edge = guest(image, 384, "");
    format!(
        r#"name: e2e
services:
  db:
{db}    networks: [back]
    volumes: ["dbdata:/srv/db"]
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
{web}    hostname: webhost
    depends_on: [db]
    networks: [front, back]
    ports: ["{web_port}:80", "{udp_port}:{UDP_ECHO_PORT}/udp"]
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
        - path: /usr/local/bin/udp-echo
          permissions: "0755"
          content: |
            #!/usr/bin/python3
            import socket
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("0.0.0.0", {UDP_ECHO_PORT}))
            while True:
                data, peer = s.recvfrom(2048)
                s.sendto(data, peer)
  edge:
{edge}    networks: [front]
networks:
  front: {{}}
  back: {{}}
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
        ["db-0", "web-0", "edge-0"]
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

    /// The size of db-0's volume's file system, in bytes.
    fn volume_size(&self) -> u64 {
        let said = self.sh("db-0", "df -B1 --output=size /srv/db | tail -n 1");
        said.parse()
            .unwrap_or_else(|_| panic!("df /srv/db said {said:?}"))
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

/// One line of the test's timeline: how long after its start `what` was done.
fn mark(test_started: Instant, what: &str) {
    eprintln!(
        "e2e: at {:.0}s: {what}",
        test_started.elapsed().as_secs_f64()
    );
}

fn mtime(path: &Path) -> SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The response, or what went wrong in words: while a guest boots, QEMU's
/// port forward accepts and then drops the connection (a broken pipe), and a
/// caller that polls must see that as "not yet", not as a failure.
fn http_get(port: u16, path: &str) -> String {
    let exchange = || -> std::io::Result<String> {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port))?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        write!(stream, "GET {path} HTTP/1.0\r\n\r\n")?;
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        Ok(response)
    };
    exchange().unwrap_or_else(|e| format!("no response from 127.0.0.1:{port}: {e}"))
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
    let udp_port = free_udp_port();
    let root = real_root();
    root.compose("e2e", &compose(&image, web_port, udp_port));
    let e2e = E2e {
        compose: root.path().join("usr/share/holo/vms/e2e/holos.yaml"),
        root,
        project: "e2e",
    };

    apply_brings_db_then_web_up(&e2e, web_port);
    mark(test_started, "apply checked");
    let volume_before = networks_udp_and_disks(&e2e, udp_port);
    mark(test_started, "networks, UDP and disks checked");
    // A one-off `holos run --rm` of the image boots beside the next two
    // steps, which keep one guest busy at a time.
    let debian_version = e2e.sh("web-0", "cat /etc/debian_version");
    let one_off = OneOff::start(&e2e.root, &image);

    // 2 and 3 at once, on two guests: db-0 crashes and heals while
    // holo-file and holo-service converge a real systemd unit in web-0
    // (`holos exec` takes no project lock).
    std::thread::scope(|scope| {
        let heal = scope.spawn(|| crash_and_heal(&e2e));
        let phase = Instant::now();
        holo_service_in_the_guest(&e2e);
        eprintln!(
            "e2e: holo-service against systemd in web-0 took {:.0}s",
            phase.elapsed().as_secs_f64()
        );
        if let Err(panic) = heal.join() {
            std::panic::resume_unwind(panic);
        }
    });
    mark(test_started, "crash healed, holo-service checked");
    let step = Instant::now();
    let one_off_started = one_off.started;
    one_off.check(&e2e.root, &debian_version);
    eprintln!(
        "e2e: holos run --rm ended {:.0}s after holo-service did, {:.0}s after it started",
        step.elapsed().as_secs_f64(),
        one_off_started.elapsed().as_secs_f64()
    );

    mark(test_started, "holos run --rm checked");
    down_and_up(&e2e, web_port);
    mark(test_started, "down and interrupted ups checked");
    snapshot_restores_a_deleted_file(&e2e);
    mark(test_started, "snapshot checked");
    compose_verbs_on_the_running_guests(&e2e);
    mark(test_started, "compose verbs checked");
    stop_powers_the_guests_off(&e2e);
    resize_and_start(&e2e, web_port, volume_before);
    mark(test_started, "stop, resize and start checked");
    let step = Instant::now();
    e2e.holos_ok(&["down"], UP_LIMIT);
    eprintln!(
        "e2e: holos down took {:.0}s; the whole test {:.0}s",
        step.elapsed().as_secs_f64(),
        test_started.elapsed().as_secs_f64()
    );
}

/// Step 1, holo apply: db first, healthy, then web; cloud-init applied the
/// hostname and the files, and the published port serves the page.
fn apply_brings_db_then_web_up(e2e: &E2e, web_port: u16) {
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
}

/// The networks in the guests, a UDP forward, and `vm.disk_size`; writes
/// data to db's volume, to be found again after down + up. The volume's
/// size, before it is resized.
fn networks_udp_and_disks(e2e: &E2e, udp_port: u16) -> u64 {
    // Compose networks: web (front and back) reaches db and edge; edge
    // and db share no network and cannot reach each other.
    let step = Instant::now();
    networks_in_the_guests(e2e);
    eprintln!(
        "e2e: the networks checked in the guests in {:.0}s",
        step.elapsed().as_secs_f64()
    );

    // A UDP forward: a datagram to the published port comes back from
    // web's echo server.
    let step = Instant::now();
    e2e.sh(
        "web-0",
        "systemd-run --unit=udp-echo /usr/local/bin/udp-echo >/dev/null 2>&1",
    );
    udp_echo(udp_port);
    eprintln!(
        "e2e: a UDP datagram came back through 127.0.0.1:{udp_port} in {:.0}s",
        step.elapsed().as_secs_f64()
    );

    // vm.disk_size: db's root file system was grown into its larger disk;
    // web's has the base image's size.
    let step = Instant::now();
    let root_size = |instance: &str| -> u64 {
        let said = e2e.sh(instance, "df -B1 --output=size / | tail -n 1");
        said.parse()
            .unwrap_or_else(|_| panic!("{instance}: df said {said:?}"))
    };
    let (db_root, web_root) = (root_size("db-0"), root_size("web-0"));
    assert!(
        web_root < 1300 << 20 && db_root > 1800 << 20,
        "df / says db-0 {db_root} bytes (disk_size {DB_DISK_SIZE}), web-0 {web_root} bytes (the image's)"
    );
    let volume_before = e2e.volume_size();
    assert!(volume_before < 64 << 20, "{volume_before}");
    eprintln!(
        "e2e: df / says db-0 {db_root} and web-0 {web_root} bytes, db's volume {volume_before}; {:.0}s",
        step.elapsed().as_secs_f64()
    );

    // Data written to db's volume, to be found again after down + up.
    e2e.sh(
        "db-0",
        "mountpoint /srv/db && echo kept across down and up > /srv/db/kept && sync",
    );
    volume_before
}

/// Step 2, a crash right after boot (`kill -9` of db-0's QEMU), healed by the
/// next holo apply on the same disk.
fn crash_and_heal(e2e: &E2e) {
    // 2. A crash right after boot. What a `kill -9` of QEMU loses is what
    // the guest had not written to its disk yet; host keys that cloud-init
    // made seconds before come back as empty files (ext4's delayed
    // allocation). The test makes that loss certain: it empties the keys,
    // syncs, and kills QEMU.
    let phase = Instant::now();
    let killed = kill_db_losing_its_host_keys(e2e);
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
    // Started again on its own disk, not made anew (nor any other guest).
    assert!(!said.contains("recreating"), "{said}");
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
}

/// Empties db-0's SSH host keys, syncs and kills its QEMU (`kill -9`);
/// the pid it had.
fn kill_db_losing_its_host_keys(e2e: &E2e) -> u32 {
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
    killed
}

/// Step 4, holos down, then holos up from the compose file: db first, then
/// web. The up is interrupted twice while a guest boots (SIGTERM while db-0
/// boots, SIGINT while web-0 does), and the third converges on the guests
/// the first two started.
fn down_and_up(e2e: &E2e, web_port: u16) {
    // 4. holos down, then holos up from the compose file.
    let phase = Instant::now();
    let down = e2e.holos_ok(&["down"], UP_LIMIT);
    assert!(
        down.contains("holos: removed e2e/web-0") && down.contains("holos: removed e2e/db-0"),
        "{down}"
    );
    assert!(!e2e.instance_dir("db-0").exists());
    let step = Instant::now();
    // edge has done its part (the networks): it stays down from here on,
    // which spares three boots and shutdowns of a guest under TCG.
    let db = e2e.interrupt_up_while_booting("db-0", Signal::SIGTERM, "up-sigterm.log");
    let web = e2e.interrupt_up_while_booting("web-0", Signal::SIGINT, "up-sigint.log");
    let log = std::fs::read_to_string(&web.log).unwrap_or_default();
    assert!(
        log.contains("holos: e2e/db-0 is up to date")
            && log.contains("holos: web waits for db-0 to be healthy")
            && !log.contains("holos: e2e/db-0 started"),
        "the second up did not go on with the booting db-0:\n{log}"
    );
    // Before the next up, whose wait for db writes its health again.
    e2e.assert_web_started_after_db_healthy();
    eprintln!(
        "e2e: two holos up interrupted while db-0, then web-0 booted, in {:.0}s",
        step.elapsed().as_secs_f64()
    );
    // Nothing else: the next up converges on the guests that boot, without
    // --force, starting nothing again.
    let step = Instant::now();
    let said = e2e.up_db_and_web();
    for instance in ["db-0", "web-0"] {
        assert!(
            said.contains(&format!("holos: e2e/{instance} is up to date"))
                && !said.contains(&format!("holos: e2e/{instance} started")),
            "{said}"
        );
    }
    assert!(!said.contains("recreating"), "{said}");
    assert_eq!(
        (e2e.root.pid("e2e", "db-0"), e2e.root.pid("e2e", "web-0")),
        (Some(u64::from(db.pid)), Some(u64::from(web.pid))),
        "{said}"
    );
    e2e.assert_ps_shows_every_qemu();
    e2e.assert_no_partial_files();
    eprintln!(
        "e2e: the next holos up converged in {:.0}s; holos down + holos up took {:.0}s",
        step.elapsed().as_secs_f64(),
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
}

impl E2e {
    /// `holos -f COMPOSE up db web`, which must succeed; what it said.
    fn up_db_and_web(&self) -> String {
        let out = self.root.run_within(self.up_command(), UP_LIMIT);
        let said = text(&out);
        assert!(
            out.status.success(),
            "holos up failed:\n{said}\n{}",
            self.consoles()
        );
        said
    }

    fn up_command(&self) -> Command {
        let compose_file = self.compose.display().to_string();
        self.root.holos(&["-f", &compose_file, "up", "db", "web"])
    }

    /// Starts `holos up db web` (its output to `log` in the root) and sends
    /// it `signal` as soon as `holos ps` shows `instance`'s QEMU running:
    /// while the guest boots. Checks that holos is gone, that `ps` shows
    /// every QEMU of the test, and that `instance`'s still runs.
    fn interrupt_up_while_booting(
        &self,
        instance: &str,
        signal: Signal,
        log: &str,
    ) -> InterruptedUp {
        let log = self.root.path().join(log);
        let mut up = self.up_command();
        up.stdout(std::fs::File::create(&log).unwrap())
            .stderr(std::fs::File::options().append(true).open(&log).unwrap());
        let mut up = up.spawn().unwrap();
        let started = Instant::now();
        // The pid file first (cheap), then ps: the QEMU runs.
        let pid_file = self.instance_dir(instance).join("qemu.pid");
        let booting = loop {
            if pid_file.exists()
                && let Some(pid) = self.root.pid("e2e", instance)
            {
                break pid as u32;
            }
            if let Some(status) = up.try_wait().unwrap() {
                panic!(
                    "holos up ended ({status}) before {instance} ran:\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
            assert!(
                started.elapsed() < UP_LIMIT,
                "{instance} did not start:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        };
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(up.id() as i32), signal).unwrap();
        let status = up.wait().unwrap();
        assert!(
            !status.success(),
            "holos up ended well despite {signal}:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        eprintln!(
            "e2e: holos up, sent {signal} {:.0}s after it started, while {instance} (pid {booting}) booted: {status}",
            started.elapsed().as_secs_f64()
        );
        assert!(
            !gone(booting),
            "{instance}: its QEMU {booting} died with holos"
        );
        self.assert_ps_shows_every_qemu();
        InterruptedUp { pid: booting, log }
    }

    /// Every QEMU whose command line names the test root is one that
    /// `holos ps` shows running.
    fn assert_ps_shows_every_qemu(&self) {
        let shown: Vec<u64> = self
            .root
            .ps("e2e")
            .iter()
            .filter_map(|i| i["pid"].as_u64())
            .collect();
        let running = qemus_under(self.root.path());
        assert!(!running.is_empty(), "no QEMU runs");
        for (pid, argv) in &running {
            assert!(
                shown.contains(&u64::from(*pid)),
                "QEMU {pid} runs, but holos ps shows only {shown:?}: {argv}"
            );
        }
    }

    /// No file under the project's instance directories is one written
    /// aside to be renamed into place, or left half-made.
    fn assert_no_partial_files(&self) {
        let dir = self.root.state().join("instances").join(self.project);
        let mut names = Vec::new();
        let mut dirs = vec![dir.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                if entry.path().is_dir() {
                    dirs.push(entry.path());
                }
                names.push(entry.path());
            }
        }
        let partial = |path: &PathBuf| {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            // The SDK's atomic writes go through `.holo-tmp-…` files.
            name.starts_with(".holo-tmp-")
                || [".tmp", ".new", "partial", ".importing", "holos-new", "~"]
                    .iter()
                    .any(|end| name.ends_with(end))
        };
        let left: Vec<&PathBuf> = names.iter().filter(|p| partial(p)).collect();
        assert!(left.is_empty(), "left behind: {left:?}\nall: {names:?}");
        let mut instances: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        instances.sort_unstable();
        assert_eq!(instances, ["db-0", "web-0"], "{names:?}");
    }
}

/// What [`E2e::interrupt_up_while_booting`] saw: the booting QEMU, and
/// where the interrupted `up` wrote.
struct InterruptedUp {
    pid: u32,
    log: PathBuf,
}

/// The live QEMUs whose command line names `dir`, with their command line.
fn qemus_under(dir: &Path) -> Vec<(u32, String)> {
    let dir = dir.display().to_string();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_string_lossy().parse::<u32>().ok()?;
            let argv = std::fs::read(e.path().join("cmdline")).ok()?;
            let argv = String::from_utf8_lossy(&argv).replace('\0', " ");
            let program = argv.split(' ').next()?.rsplit('/').next()?.to_string();
            (program.starts_with("qemu-system") && argv.contains(&dir)).then_some((pid, argv))
        })
        .collect()
}

/// Step 4b, a snapshot of the running web-0 brings back a file deleted after it.
fn snapshot_restores_a_deleted_file(e2e: &E2e) {
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
}

/// Step 4c, on the guests already up: `cp` both ways, `pause` and
/// `unpause` seen by `stats`, and `restart` of web (a reboot, no new VM).
fn compose_verbs_on_the_running_guests(e2e: &E2e) {
    let phase = Instant::now();
    let there = e2e.root.path().join("to-guest.txt");
    std::fs::write(&there, "copied by holos cp\n").unwrap();
    let to = there.display().to_string();
    e2e.holos_ok(&["cp", &to, "web-0:/tmp/copied"], EXEC_LIMIT);
    assert_eq!(e2e.sh("web-0", "cat /tmp/copied"), "copied by holos cp");
    let back = e2e.root.path().join("from-guest.txt");
    let from = back.display().to_string();
    e2e.holos_ok(&["cp", "web-0:/etc/hostname", &from], EXEC_LIMIT);
    assert_eq!(std::fs::read_to_string(&back).unwrap().trim(), "webhost");

    let stats = |e2e: &E2e| -> serde_json::Value {
        let out = e2e
            .root
            .run_within(e2e.holos(&["stats", "--json", "web"]), EXEC_LIMIT);
        assert!(out.status.success(), "{}", text(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let running = stats(e2e);
    assert_eq!(running[0]["status"], "running", "{running}");
    assert!(
        running[0]["memory_rss_bytes"].as_u64().unwrap() > 0,
        "{running}"
    );
    e2e.holos_ok(&["pause", "web"], EXEC_LIMIT);
    assert_eq!(stats(e2e)[0]["status"], "paused");
    e2e.holos_ok(&["unpause", "web"], EXEC_LIMIT);
    assert_eq!(stats(e2e)[0]["status"], "running");
    assert_eq!(e2e.sh("web-0", "cat /tmp/copied"), "copied by holos cp");

    let restarted = e2e.holos_ok(&["restart", "web"], UP_LIMIT);
    assert!(
        restarted.contains("holos: e2e/web-0 powered off")
            && restarted.contains("holos: e2e/web-0 started (pid "),
        "{restarted}"
    );
    let _ = e2e.root.run_within(
        e2e.holos(&["exec", "web-0", "-w", "1500", "--", "true"]),
        UP_LIMIT,
    );
    assert_eq!(e2e.sh("web-0", "cat /etc/hostname"), "webhost");
    eprintln!(
        "e2e: cp, pause, stats and restart took {:.0}s",
        phase.elapsed().as_secs_f64()
    );
}

/// Step 5, holos stop: the ACPI power button over QMP; the guests shut down.
fn stop_powers_the_guests_off(e2e: &E2e) {
    // 5. holos stop: the ACPI power button over QMP; the guests shut down.
    let phase = Instant::now();
    let instances = ["web-0", "db-0"];
    let pids: Vec<u32> = instances
        .iter()
        .map(|i| e2e.root.pid("e2e", i).expect("running") as u32)
        .collect();
    let stopped = e2e.holos_ok(&["stop"], UP_LIMIT);
    let mut said: Vec<&str> = stopped.lines().collect();
    said.sort_unstable();
    assert_eq!(
        said,
        [
            "holos: e2e/db-0 powered off",
            "holos: e2e/web-0 powered off"
        ],
        "stop went past the power button:\n{stopped}"
    );
    for (instance, pid) in instances.iter().zip(pids) {
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
}

/// Steps 5b and 6: the stopped db's volume grows; holos start boots the same disks,
/// web serves again and db's file system has grown.
fn resize_and_start(e2e: &E2e, web_port: u16, volume_before: u64) {
    // 5b. The stopped db's volume grows; its file system follows at the
    // next boot (resize refuses while a running instance attaches it).
    let step = Instant::now();
    let said = e2e.holos_ok(&["volumes", "resize", "dbdata", "256M"], EXEC_LIMIT);
    assert!(
        said.contains("volume dbdata grown from 64.0 MiB to 256.0 MiB"),
        "{said}"
    );
    eprintln!(
        "e2e: holos volumes resize took {:.0}s",
        step.elapsed().as_secs_f64()
    );

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
        "e2e: holos start until the port served took {:.0}s",
        phase.elapsed().as_secs_f64(),
    );
    // A power button pressed while a guest still boots goes unheard (no
    // logind yet), and down would wait out the grace period.
    let step = Instant::now();
    for instance in ["db-0", "web-0"] {
        let status = e2e.sh_any(instance, "cloud-init status --wait --long");
        assert!(status.contains("status: done"), "{instance}: {status}");
    }
    // The boot grew the resized volume's file system.
    let volume_after = e2e.volume_size();
    assert!(
        volume_after > 200 << 20,
        "{volume_before} -> {volume_after}\n{}",
        e2e.consoles()
    );
    assert!(
        e2e.console("db-0")
            .contains("holos: grew the file system of volume dbdata"),
        "{}",
        e2e.consoles()
    );
    eprintln!(
        "e2e: the guests settled and db's volume grew from {volume_before} to {volume_after} bytes in {:.0}s",
        step.elapsed().as_secs_f64()
    );
}

/// Whether `pid` no longer runs (a zombie has an empty cmdline).
fn gone(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline")).map_or(true, |c| c.is_empty())
}

/// Copies holo, holo-file and holo-service into web-0 and converges a real
/// systemd unit with them.
fn holo_service_in_the_guest(e2e: &E2e) {
    copy_holo_into(e2e, "web-0");
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

/// Copies the host's holo, holo-file and holo-service into `instance`.
fn copy_holo_into(e2e: &E2e, instance: &str) {
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
            instance,
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

/// A free UDP port on 127.0.0.1.
fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Sends datagrams to 127.0.0.1:`port` until one comes back unchanged
/// (the echo server may still be starting), for at most two minutes.
fn udp_echo(port: u16) {
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.connect(("127.0.0.1", port)).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    let started = Instant::now();
    let mut attempt = 0;
    let mut last = String::new();
    while started.elapsed() < Duration::from_secs(120) {
        attempt += 1;
        let sent = format!("holos udp echo {attempt}");
        // A refused send (an ICMP error from an earlier datagram) is retried.
        if let Err(e) = socket.send(sent.as_bytes()) {
            last = e.to_string();
            std::thread::sleep(Duration::from_secs(1));
            continue;
        }
        let mut buffer = [0u8; 2048];
        match socket.recv(&mut buffer) {
            Ok(n) if buffer[..n] == *sent.as_bytes() => return,
            Ok(n) => last = format!("{:?}", String::from_utf8_lossy(&buffer[..n])),
            Err(e) => last = e.to_string(),
        }
    }
    panic!("no echo through 127.0.0.1:{port}/udp after {attempt} datagrams: {last}");
}

/// `/etc/hosts` of `instance`: each line's address and names.
fn hosts_of(e2e: &E2e, instance: &str) -> Vec<(String, Vec<String>)> {
    e2e.sh(instance, "cat /etc/hosts")
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let ip = words.next()?;
            Some((ip.to_string(), words.map(str::to_string).collect()))
        })
        .collect()
}

/// The addresses `name` has in these `/etc/hosts` lines.
fn addresses(hosts: &[(String, Vec<String>)], name: &str) -> Vec<String> {
    hosts
        .iter()
        .filter(|(_, names)| names.iter().any(|n| n == name))
        .map(|(ip, _)| ip.clone())
        .collect()
}

/// Whether two addresses are in one /24.
fn same_subnet(a: &str, b: &str) -> bool {
    a.rsplit_once('.').map(|p| p.0) == b.rsplit_once('.').map(|p| p.0)
}

/// A guest script line that prints `yes` if `test` succeeds, else `no`.
fn probe(test: &str, yes: &str, no: &str) -> String {
    format!("if {test} >/dev/null 2>&1; then echo '{yes}'; else echo '{no}'; fi\n")
}

/// web-0 is on `front` and `back`, db-0 on `back`, edge-0 on `front`: each
/// guest's `/etc/hosts` names the members of its networks only, and real
/// traffic (ICMP, TCP) passes where a network is shared and nowhere else,
/// by name or by address.
fn networks_in_the_guests(e2e: &E2e) {
    let ps = e2e.root.ps("e2e");
    let ip_of = |name: &str| {
        ps.iter()
            .find(|i| i["instance"] == name)
            .and_then(|i| i["ip"].as_str())
            .unwrap_or_else(|| panic!("{name} in holos ps: {ps:?}"))
            .to_string()
    };
    // An instance's ip is its first NIC's: web's on front.
    let (db_ip, web_ip, edge_ip) = (ip_of("db-0"), ip_of("web-0"), ip_of("edge-0"));
    let web_hosts = hosts_of(e2e, "web-0");
    let db_hosts = hosts_of(e2e, "db-0");
    let edge_hosts = hosts_of(e2e, "edge-0");
    assert_eq!(
        addresses(&web_hosts, "db"),
        [db_ip.as_str()],
        "{web_hosts:?}"
    );
    assert_eq!(
        addresses(&web_hosts, "edge"),
        [edge_ip.as_str()],
        "{web_hosts:?}"
    );
    let web_ips = addresses(&web_hosts, "web-0");
    assert_eq!(web_ips.len(), 2, "web-0 on each network: {web_hosts:?}");
    assert_eq!(web_ips[0], web_ip, "{web_hosts:?}");
    let web_back_ip = web_ips[1].clone();
    assert!(
        same_subnet(&web_ip, &edge_ip)
            && same_subnet(&web_back_ip, &db_ip)
            && !same_subnet(&db_ip, &edge_ip),
        "front {web_ip} {edge_ip}, back {web_back_ip} {db_ip}"
    );
    // Each outer guest sees its own network only.
    assert_eq!(
        addresses(&edge_hosts, "web"),
        [web_ip.as_str()],
        "{edge_hosts:?}"
    );
    assert!(
        addresses(&edge_hosts, "db").is_empty() && addresses(&edge_hosts, "db-0").is_empty(),
        "{edge_hosts:?}"
    );
    assert_eq!(
        addresses(&db_hosts, "web"),
        [web_back_ip.as_str()],
        "{db_hosts:?}"
    );
    assert!(
        addresses(&db_hosts, "edge").is_empty() && addresses(&db_hosts, "edge-0").is_empty(),
        "{db_hosts:?}"
    );

    // web has a NIC on each network, and db is directly attached.
    let addrs = e2e.sh(
        "web-0",
        &format!("ip -4 -o addr show; ip -4 route get {db_ip}"),
    );
    assert!(
        addrs.contains(&format!("inet {web_ip}/24"))
            && addrs.contains(&format!("inet {web_back_ip}/24")),
        "{addrs}"
    );
    let route = addrs.lines().last().unwrap_or_default();
    assert!(
        !route.contains(" via "),
        "db is on a directly attached network: {route}"
    );

    // The middle reaches both, by name.
    let said = e2e.sh(
        "web-0",
        &(probe("busybox ping -c 1 -W 20 db", "db pinged", "db not pinged")
            + &probe(
                "busybox ping -c 1 -W 20 edge",
                "edge pinged",
                "edge not pinged",
            )
            + &probe(
                "timeout 20 bash -c '</dev/tcp/edge/22'",
                "edge connected",
                "edge not connected",
            )),
    );
    assert_eq!(said, "db pinged\nedge pinged\nedge connected");
    assert_eq!(
        e2e.sh("web-0", "busybox wget -q -O - http://db:5432/index.html"),
        DB_PAGE
    );
    // The outer two reach web (so their NICs are up), not each other: not
    // by name (no /etc/hosts line, no DNS answer) nor by address on the
    // link (no ARP answer, and a TCP connect through a route put on the
    // NIC fails). Not through the default route: it leads to the host's
    // network, which may answer any address (a proxy that accepts every
    // TCP connect does here).
    assert_isolated(e2e, ("edge-0", &edge_ip), &web_ip, ("db", &db_ip), 5432);
    assert_isolated(e2e, ("db-0", &db_ip), &web_back_ip, ("edge", &edge_ip), 22);
}

/// `instance` (at `own_ip`) reaches web (at `web_ip` on its network) but
/// not `other` (at `other_ip`, port `port`): not by name nor by address on
/// the link (no ARP answer, and a TCP connect through a route put on the
/// NIC fails).
fn assert_isolated(
    e2e: &E2e,
    (instance, own_ip): (&str, &str),
    web_ip: &str,
    (other, other_ip): (&str, &str),
    port: u16,
) {
    let script = format!("nic=$(ip -4 -o addr show to {own_ip} | awk '{{print $2}}')\n")
        + &probe(
            "busybox ping -c 1 -W 20 web",
            "web pinged",
            "web not pinged",
        )
        + &probe(
            &format!("busybox arping -f -c 2 -w 20 -I \"$nic\" {web_ip}"),
            "web answers ARP",
            "web silent",
        )
        + &probe(&format!("getent hosts {other}"), "named", "unnamed")
        + &probe(
            &format!("busybox arping -f -c 3 -w 5 -I \"$nic\" {other_ip}"),
            "answers ARP",
            "silent",
        )
        + &format!("ip route add {other_ip}/32 dev \"$nic\"\n")
        + &probe(
            &format!("timeout 20 bash -c '</dev/tcp/{other_ip}/{port}'"),
            "connected",
            "not connected",
        )
        + &format!("ip route del {other_ip}/32 dev \"$nic\"\n");
    let said = e2e.sh(instance, &script);
    assert_eq!(
        said, "web pinged\nweb answers ARP\nunnamed\nsilent\nnot connected",
        "{instance} and {other} ({other_ip}:{port})"
    );
}

/// `holos run --rm --runcmd … IMAGE -- sh -c '…; exit 3'` of the test image, running
/// while the test goes on.
struct OneOff {
    child: std::process::Child,
    stdout: PathBuf,
    stderr: PathBuf,
    started: Instant,
}

impl OneOff {
    const NAME: &'static str = "e2e-run";

    fn start(root: &Root, image: &Path) -> OneOff {
        // `holos run` has no vm.extra_args, and the image has no boot
        // loader: the real QEMU gets the image's kernel from a wrapper.
        let qemu = test_support::find_tool("qemu-system-x86_64").expect("qemu-system-x86_64");
        let wrapper = root.path().join("qemu-direct-boot");
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\nexec {} \"$@\" -kernel {image}/vmlinuz -initrd {image}/initrd.img -append '{APPEND}'\n",
                qemu.display(),
                image = image.display()
            ),
        )
        .unwrap();
        test_support::make_executable(&wrapper);
        let disk = image.join("disk.qcow2").display().to_string();
        let mut command = root.holos(&[
            "run",
            "--rm",
            "--name",
            Self::NAME,
            "--memory",
            "384M",
            // cloud-init's last stage ends after sshd takes the key: the
            // command runs only once it has.
            "--runcmd",
            "echo ran by runcmd > /var/tmp/holos-run-marker",
            &disk,
            "--",
            "sh",
            "-c",
            "cat /etc/debian_version /var/tmp/holos-run-marker; exit 3",
        ]);
        let stdout = root.path().join("run.out");
        let stderr = root.path().join("run.err");
        command
            .env("HOLOS_QEMU_SYSTEM", &wrapper)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout).unwrap())
            .stderr(std::fs::File::create(&stderr).unwrap());
        OneOff {
            child: command.spawn().unwrap(),
            stdout,
            stderr,
            started: Instant::now(),
        }
    }

    /// Waits for the run: its exit status is the command's, its output
    /// came through, and nothing of it is left.
    fn check(mut self, root: &Root, debian_version: &str) {
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if self.started.elapsed() > UP_LIMIT {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "holos run did not end within {UP_LIMIT:?}:\n{}",
                    std::fs::read_to_string(&self.stderr).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_secs(1));
        };
        let stdout = std::fs::read_to_string(&self.stdout).unwrap_or_default();
        let stderr = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        assert_eq!(
            (status.code(), stdout.trim()),
            (Some(3), format!("{debian_version}\nran by runcmd").as_str()),
            "holos run: {status}\nstdout:\n{stdout}\nstderr:\n{stderr}"
        );
        let mut left = Vec::new();
        let mut dirs = vec![root.state()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if entry.file_name().to_string_lossy().contains(Self::NAME) {
                    left.push(path.clone());
                }
                if path.is_dir() {
                    dirs.push(path);
                }
            }
        }
        assert!(left.is_empty(), "holos run --rm left {left:?}\n{stderr}");
        let running: Vec<String> = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .filter(|c| c.contains(&root.path().display().to_string()) && c.contains(Self::NAME))
            .collect();
        assert!(running.is_empty(), "still running: {running:?}");
    }
}
