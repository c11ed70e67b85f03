//! The fake `qemu-system-x86_64` (this crate's binary) behaves as QEMU 7.2
//! does where holos observes it: argv, sockets, QMP, serial log, signals.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The fake under the name QEMU has, in a fresh directory.
struct Fake {
    dir: tempfile::TempDir,
    program: PathBuf,
}

impl Fake {
    fn new() -> Fake {
        let dir = tempfile::tempdir().expect("temporary directory");
        let program = dir.path().join("qemu-system-x86_64");
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_fake-qemu-system-x86_64"), &program)
            .expect("symlink the fake");
        Fake { dir, program }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.env_remove("FAKE_QEMU_ARGV_FILE")
            .env_remove("FAKE_QEMU_POWERDOWN_DELAY_MS")
            .env_remove("FAKE_QEMU_IGNORE_SIGTERM")
            .env_remove("FAKE_QEMU_KVM")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// The arguments holos passes for one instance, sockets in this directory.
    fn instance_args(&self) -> Vec<String> {
        let dir = self.dir.path().display();
        [
            "-name",
            "web-0",
            "-machine",
            "q35,accel=tcg",
            "-nodefaults",
            "-no-user-config",
            "-display",
            "none",
            "-chardev",
            &format!("socket,id=serial0,path={dir}/serial.sock,server=on,wait=off,logfile={dir}/console.log"),
            "-serial",
            "chardev:serial0",
            "-chardev",
            &format!("socket,id=qmp,path={dir}/qmp.sock,server=on,wait=off"),
            "-mon",
            "chardev=qmp,mode=control",
            "-append",
            "console=ttyS0 quiet,,x",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    fn spawn(&self, args: &[String], env: &[(&str, &str)]) -> Running {
        let mut cmd = self.command();
        cmd.args(args);
        for (key, value) in env {
            cmd.env(key, value);
        }
        let child = Running(cmd.spawn().expect("start the fake"));
        wait_for(|| self.path("qmp.sock").exists(), "the QMP socket");
        child
    }
}

/// A started fake, killed when the test ends (also when it fails), so that
/// no QEMU stand-in outlives its test.
struct Running(Child);

impl std::ops::Deref for Running {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for Running {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_for(mut ready: impl FnMut() -> bool, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Connects once the fake listens: it creates its QMP socket first, and under
/// load the serial socket and the forwards may come a moment later.
fn connect_when_ready<T>(mut connect: impl FnMut() -> std::io::Result<T>, what: &str) -> T {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match connect() {
            Ok(stream) => return stream,
            Err(err) if Instant::now() >= deadline => panic!("cannot connect to {what}: {err}"),
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

fn wait_exit(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        assert!(Instant::now() < deadline, "the fake did not exit");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn stderr_of(child: &mut Child) -> String {
    let mut text = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut text);
    }
    text
}

/// A QMP connection that reads one `\r\n`-terminated message at a time.
struct Qmp {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Qmp {
    fn connect(path: &Path) -> Qmp {
        // The socket file appears at bind(), a moment before listen().
        let stream = connect_when_ready(|| UnixStream::connect(path), "QMP");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        Qmp {
            writer: stream.try_clone().expect("clone"),
            reader: BufReader::new(stream),
        }
    }

    fn line(&mut self) -> String {
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("read a QMP line");
        assert!(line.ends_with("\r\n"), "QMP lines end in CR LF: {line:?}");
        line.trim_end().to_string()
    }

    fn send(&mut self, command: &str) {
        self.writer
            .write_all(format!("{command}\n").as_bytes())
            .expect("send");
    }
}

#[test]
fn qmp_exchange_and_powerdown_as_qemu_7_2_does_it() {
    let fake = Fake::new();
    let args = fake.instance_args();
    let mut child = fake.spawn(&args, &[("FAKE_QEMU_POWERDOWN_DELAY_MS", "50")]);
    let mut qmp = Qmp::connect(&fake.path("qmp.sock"));
    let greeting: serde_json::Value = serde_json::from_str(&qmp.line()).expect("greeting");
    assert_eq!(greeting["QMP"]["version"]["qemu"]["major"], 7);
    assert_eq!(greeting["QMP"]["capabilities"][0], "oob");
    qmp.send(r#"{"execute": "query-status"}"#);
    assert_eq!(
        qmp.line(),
        r#"{"error": {"class": "CommandNotFound", "desc": "Expecting capabilities negotiation with 'qmp_capabilities'"}}"#
    );
    qmp.send(r#"{"execute": "qmp_capabilities", "id": 1}"#);
    assert_eq!(qmp.line(), r#"{"return": {}, "id": 1}"#);
    qmp.send(r#"{"execute": "query-status"}"#);
    assert_eq!(
        qmp.line(),
        r#"{"return": {"status": "running", "singlestep": false, "running": true}}"#
    );
    qmp.send(r#"{"execute": "system_powerdown"}"#);
    // The event comes before the return: a client must skip event lines.
    let event: serde_json::Value = serde_json::from_str(&qmp.line()).expect("event");
    assert_eq!(event["event"], "POWERDOWN");
    assert!(event["timestamp"]["seconds"].as_u64().is_some());
    assert_eq!(qmp.line(), r#"{"return": {}}"#);
    let shutdown: serde_json::Value = serde_json::from_str(&qmp.line()).expect("shutdown");
    assert_eq!(shutdown["event"], "SHUTDOWN");
    assert_eq!(shutdown["data"]["reason"], "guest-shutdown");
    assert_eq!(wait_exit(&mut child).code(), Some(0));
    // The argv is recorded beside the QMP socket; sockets are removed on exit.
    let recorded = std::fs::read_to_string(fake.path("qemu-argv.jsonl")).expect("argv file");
    let recorded: Vec<String> = serde_json::from_str(recorded.trim_end()).expect("one JSON line");
    assert_eq!(recorded, args);
    assert!(!fake.path("qmp.sock").exists() && !fake.path("serial.sock").exists());
    let console = std::fs::read_to_string(fake.path("console.log")).expect("console log");
    assert!(console.contains("serial console of web-0"), "{console}");
    assert!(console.ends_with("reboot: Power down\r\n"), "{console}");
}

#[test]
fn a_guest_that_ignores_acpi_runs_until_sigterm() {
    let fake = Fake::new();
    let argv_file = fake.path("argv.jsonl");
    let argv_file_text = argv_file.display().to_string();
    let mut child = fake.spawn(
        &fake.instance_args(),
        &[
            ("FAKE_QEMU_POWERDOWN_DELAY_MS", "never"),
            ("FAKE_QEMU_ARGV_FILE", &argv_file_text),
        ],
    );
    assert!(argv_file.exists() && !fake.path("qemu-argv.jsonl").exists());
    let mut qmp = Qmp::connect(&fake.path("qmp.sock"));
    qmp.line();
    qmp.send(r#"{"execute": "qmp_capabilities"}"#);
    assert_eq!(qmp.line(), r#"{"return": {}}"#);
    qmp.send(r#"{"execute": "system_powerdown"}"#);
    assert!(qmp.line().contains(r#""event": "POWERDOWN""#));
    assert_eq!(qmp.line(), r#"{"return": {}}"#);
    // Under test: that it does not exit, which only time can show.
    std::thread::sleep(Duration::from_millis(300));
    assert!(child.try_wait().expect("try_wait").is_none(), "exited");
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).expect("SIGTERM");
    assert_eq!(wait_exit(&mut child).code(), Some(0));
    let stderr = stderr_of(&mut child);
    assert!(
        stderr.starts_with("qemu-system-x86_64: terminating on signal 15 from pid "),
        "{stderr}"
    );
    let shutdown: serde_json::Value = serde_json::from_str(&qmp.line()).expect("shutdown");
    assert_eq!(shutdown["data"]["reason"], "host-signal");
}

#[test]
fn a_hung_qemu_ignores_sigterm_and_dies_by_sigkill() {
    use std::os::unix::process::ExitStatusExt;
    let fake = Fake::new();
    let mut child = fake.spawn(&fake.instance_args(), &[("FAKE_QEMU_IGNORE_SIGTERM", "1")]);
    let pid = Pid::from_raw(child.id() as i32);
    kill(pid, Signal::SIGTERM).expect("SIGTERM");
    // Under test: that it does not exit, which only time can show.
    std::thread::sleep(Duration::from_millis(300));
    assert!(child.try_wait().expect("try_wait").is_none(), "exited");
    kill(pid, Signal::SIGKILL).expect("SIGKILL");
    assert_eq!(wait_exit(&mut child).signal(), Some(9));
}

#[test]
fn qmp_quit_and_the_legacy_qmp_option() {
    let fake = Fake::new();
    let dir = fake.dir.path().display().to_string();
    let args: Vec<String> = vec![
        "-qmp".into(),
        format!("unix:{dir}/qmp.sock,server,nowait"),
        "-pidfile".into(),
        format!("{dir}/qemu.pid"),
    ];
    let mut child = fake.spawn(&args, &[]);
    let pid = std::fs::read_to_string(fake.path("qemu.pid")).expect("pidfile");
    assert_eq!(pid, format!("{}\n", child.id()));
    let mut qmp = Qmp::connect(&fake.path("qmp.sock"));
    qmp.line();
    qmp.send(r#"{"execute": "qmp_capabilities"} {"execute": "quit", "id": "q"}"#);
    assert_eq!(qmp.line(), r#"{"return": {}}"#);
    assert_eq!(qmp.line(), r#"{"return": {}, "id": "q"}"#);
    assert_eq!(wait_exit(&mut child).code(), Some(0));
    assert!(!fake.path("qemu.pid").exists());
}

#[test]
fn serial_console_clients_see_the_guest_echo_and_the_log_keeps_it() {
    let fake = Fake::new();
    let mut child = fake.spawn(&fake.instance_args(), &[]);
    let mut console = connect_when_ready(
        || UnixStream::connect(fake.path("serial.sock")),
        "the serial socket",
    );
    console
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    // Type after the guest has booted, as a person at the console would.
    wait_for(
        || {
            std::fs::read_to_string(fake.path("console.log"))
                .is_ok_and(|log| log.contains("fake guest booted\r\n"))
        },
        "the boot banner in console.log",
    );
    console.write_all(b"root\n").expect("type");
    // A client that connected before the boot also got the banner: read up
    // to the echo.
    let mut seen = Vec::new();
    while !seen.ends_with(b"root\n") {
        let mut byte = [0u8; 1];
        console.read_exact(&mut byte).expect("echo");
        seen.push(byte[0]);
    }
    assert!(!String::from_utf8_lossy(&seen).contains("root\nroot"));
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).expect("SIGTERM");
    wait_exit(&mut child);
    let log = std::fs::read_to_string(fake.path("console.log")).expect("log");
    assert!(log.contains("fake guest booted\r\nroot\n"), "{log:?}");
}

#[test]
fn host_forwards_bind_like_slirp_and_a_taken_port_fails() {
    let fake = Fake::new();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let taken_port = taken.local_addr().expect("addr").port();
    let free_port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        probe.local_addr().expect("addr").port()
    };
    let mut args = fake.instance_args();
    args.extend([
        "-netdev".to_string(),
        format!("user,id=net0,hostfwd=tcp:127.0.0.1:{free_port}-:22"),
    ]);
    let mut child = fake.spawn(&args, &[]);
    let mut ssh = connect_when_ready(
        || std::net::TcpStream::connect(("127.0.0.1", free_port)),
        "the forwarded port",
    );
    ssh.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut banner = [0u8; 4];
    ssh.read_exact(&mut banner).expect("banner");
    assert_eq!(&banner, b"SSH-");
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).expect("SIGTERM");
    wait_exit(&mut child);

    let rule = format!("tcp:127.0.0.1:{taken_port}-:80");
    let out = fake
        .command()
        .args(["-netdev", &format!("user,id=net0,hostfwd={rule}")])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "qemu-system-x86_64: -netdev user,id=net0,hostfwd={rule}: Could not set up host forwarding rule '{rule}'\n"
        )
    );
}

#[test]
fn bad_command_lines_fail_with_qemus_messages() {
    let fake = Fake::new();
    let run = |args: &[&str]| {
        let out = fake.command().args(args).output().expect("run");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    assert_eq!(
        run(&["-foo"]),
        (Some(1), "qemu-system-x86_64: -foo: invalid option\n".into())
    );
    assert_eq!(
        run(&["-m"]),
        (
            Some(1),
            "qemu-system-x86_64: -m: requires an argument\n".into()
        )
    );
    assert_eq!(
        run(&["-drive", "file=/nonexistent.qcow2,if=virtio"]),
        (
            Some(1),
            "qemu-system-x86_64: -drive file=/nonexistent.qcow2,if=virtio: Could not open '/nonexistent.qcow2': No such file or directory\n".into()
        )
    );
    let (code, stderr) = run(&["-accel", "kvm"]);
    assert_eq!(code, Some(1));
    assert!(
        stderr.ends_with(
            "qemu-system-x86_64: -accel kvm: failed to initialize kvm: No such file or directory\n"
        ),
        "{stderr}"
    );
    let (code, stderr) = run(&["-serial", "chardev:nosuch"]);
    assert_eq!(
        (code, stderr.as_str()),
        (Some(1), "qemu-system-x86_64: chardev: 'nosuch' not found\n")
    );
    let out = fake.command().arg("-version").output().expect("run");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("QEMU emulator version 7.2."));
}

#[test]
fn a_server_socket_without_nowait_blocks_until_a_client_connects() {
    let fake = Fake::new();
    let dir = fake.dir.path().display().to_string();
    let mut cmd = fake.command();
    cmd.args(["-qmp", &format!("unix:{dir}/qmp.sock,server")]);
    let mut child = Running(cmd.spawn().expect("start the fake"));
    wait_for(|| fake.path("qmp.sock").exists(), "the QMP socket");
    // The waiting QEMU serves the first client once it connects.
    let mut qmp = Qmp::connect(&fake.path("qmp.sock"));
    assert!(qmp.line().starts_with(r#"{"QMP": "#));
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).expect("SIGTERM");
    wait_exit(&mut child);
    let stderr = stderr_of(&mut child);
    assert!(
        stderr.starts_with(&format!(
            "qemu-system-x86_64: -qmp unix:{dir}/qmp.sock,server: info: QEMU waiting for connection on: disconnected:unix:{dir}/qmp.sock,server=on\n"
        )),
        "{stderr}"
    );
}

/// The replies (not the greeting, not events) of `program` to `script` on
/// `-qmp stdio`, with a 16M qcow2 as drive vol0, and that drive's size after.
fn replies_on_a_drive(program: &Path, dir: &Path, script: &str) -> (Vec<String>, String) {
    let image = dir.join("vol.qcow2");
    let _ = std::fs::remove_file(&image);
    let made = Command::new("qemu-img")
        .args(["create", "-q", "-f", "qcow2"])
        .arg(&image)
        .arg("16M")
        .status()
        .expect("qemu-img");
    assert!(made.success());
    let mut child = Command::new(program)
        .args(["-machine", "none", "-nodefaults", "-display", "none"])
        .args(["-qmp", "stdio", "-drive"])
        .arg(format!(
            "if=none,id=vol0,file={},format=qcow2",
            image.display()
        ))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(script.as_bytes()).expect("write");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut replies = Vec::new();
    let expected = script.lines().count();
    for line in lines.by_ref() {
        let line = line.expect("read");
        if line.contains("\"return\"") || line.contains("\"error\"") {
            replies.push(line.trim_end().to_string());
            if replies.len() == expected {
                break;
            }
        }
    }
    stdin.write_all(b"{\"execute\": \"quit\"}\n").expect("quit");
    drop(stdin);
    wait_exit(&mut child);
    let info = Command::new("qemu-img")
        .args(["info", "--output=json"])
        .arg(&image)
        .output()
        .expect("qemu-img info");
    let info: serde_json::Value = serde_json::from_slice(&info.stdout).expect("JSON");
    (replies, info["virtual-size"].to_string())
}

/// `block_resize` answers as QEMU 7.2's does, and really resizes the image
/// file: compared reply for reply with the real QEMU.
#[test]
#[ignore = "needs QEMU (qemu-system-x86_64, qemu-img)"]
fn block_resize_answers_as_real_qemu_does() {
    let real = [
        "/usr/bin/qemu-system-x86_64",
        "/usr/local/bin/qemu-system-x86_64",
    ]
    .into_iter()
    .map(PathBuf::from)
    .find(|p| p.is_file())
    .expect("the real qemu-system-x86_64 (apt-get install qemu-system-x86 qemu-utils)");
    let script = [
        r#"{"execute": "qmp_capabilities"}"#,
        r#"{"execute": "block_resize", "arguments": {"device": "vol0", "size": 33554432}}"#,
        r#"{"execute": "block_resize", "arguments": {"device": "vol9", "size": 33554432}}"#,
        r#"{"execute": "block_resize", "arguments": {"node-name": "nope", "size": 512}}"#,
        r#"{"execute": "block_resize", "arguments": {"device": "vol0"}}"#,
        r#"{"execute": "block_resize", "arguments": {"device": "vol0", "size": "x"}}"#,
        r#"{"execute": "block_resize", "arguments": {"device": "vol0", "size": -512}}"#,
        r#"{"execute": "block_resize", "arguments": {"device": "vol0", "size": 50331649}}"#,
        r#"{"execute": "block_resize", "arguments": {"device": "vol0", "size": 50331648}}"#,
    ]
    .map(|line| format!("{line}\n"))
    .concat();
    let fake = Fake::new();
    let from_fake = replies_on_a_drive(&fake.program, fake.dir.path(), &script);
    let from_real = replies_on_a_drive(&real, fake.dir.path(), &script);
    assert_eq!(from_fake, from_real);
    assert_eq!(from_fake.1, (48 << 20).to_string());
}
