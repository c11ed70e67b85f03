//! fake-qemu-system-x86_64: a test double that stands in for
//! `qemu-system-x86_64` in holos's fast tests. It is a crate of its own
//! (`publish = false`, left out of every release build), so that neither
//! the packages nor `cargo install --path plugins/vms` carry it; tests link
//! it into a directory on `PATH` under the name `qemu-system-x86_64`.
//!
//! It behaves as QEMU 7.2 does where holos can observe it:
//! - parses the options as QEMU spells them (`-chardev socket,id=..,path=..,
//!   server=on,wait=off`, `-qmp unix:PATH,server,nowait`, `-mon chardev=ID,
//!   mode=control`, `-serial chardev:ID|unix:..|file:..`, `-netdev user,
//!   hostfwd=..`, `,,` escapes) and rejects unknown options with QEMU's text;
//!   `-machine none` with `-cpu` fails as in QEMU 7.2 (x86 CPUs need a board);
//! - listens on the unix sockets (and waits for a client when `wait` is on),
//!   binds every `hostfwd` host port, TCP or UDP (a taken port fails as QEMU
//!   does), and
//!   answers a forward to guest port 22 with an SSH banner;
//! - speaks QMP on unix sockets and on `-qmp stdio` (the KVM probe launch):
//!   greeting, `qmp_capabilities`, `query-status`, `query-version`,
//!   `query-kvm`, `system_powerdown` (the `POWERDOWN` event comes before
//!   the `return`, as in 7.2), `stop` and `cont` (the `STOP` and `RESUME`
//!   events, and `query-status` says `paused` in between), `quit`, and `blockdev-snapshot-internal-sync`
//!   / `blockdev-snapshot-delete-internal-sync` and `block_resize` on a
//!   `-drive` id (done in the image file with the real `qemu-img`); replies
//!   end in `\r\n`;
//! - writes a console banner to the serial chardev and its `logfile`, and
//!   echoes what a console client types;
//! - on SIGTERM/SIGINT/SIGHUP prints QEMU's "terminating on signal" line and
//!   exits 0; removes its sockets and pidfile on exit.
//!
//! Knobs (environment):
//! - `FAKE_QEMU_ARGV_FILE`: append the arguments (argv without argv[0]) as
//!   one JSON array per line; default `qemu-argv.jsonl` next to the first QMP
//!   socket.
//! - `FAKE_QEMU_POWERDOWN_DELAY_MS`: how long the "guest" takes to power off
//!   after `system_powerdown` (default 100); `never` simulates a guest that
//!   ignores ACPI.
//! - `FAKE_QEMU_IGNORE_SIGTERM=1`: ignore SIGTERM (a hung QEMU), so that only
//!   SIGKILL ends it.
//! - `FAKE_QEMU_KVM=1`: KVM works; otherwise `-enable-kvm`, `-accel kvm` and
//!   `accel=kvm` fail as on a machine without KVM.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::OpenOptions;
use std::io::{BufReader, Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

/// Whether the "guest" is paused (QMP `stop`, until `cont`).
static PAUSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Options that take no argument; every other known option takes one.
const FLAGS: &[&str] = &[
    "nodefaults",
    "no-user-config",
    "enable-kvm",
    "no-reboot",
    "no-shutdown",
    "S",
    "snapshot",
    "nographic",
    "daemonize",
    "version",
    "help",
    "h",
    "no-hpet",
    "no-acpi",
    "full-screen",
    "s",
    "usb",
    "mem-prealloc",
    "only-migratable",
    "preconfig",
];

const WITH_ARGUMENT: &[&str] = &[
    "machine",
    "M",
    "cpu",
    "smp",
    "m",
    "accel",
    "name",
    "uuid",
    "display",
    "vga",
    "serial",
    "parallel",
    "chardev",
    "qmp",
    "qmp-pretty",
    "mon",
    "monitor",
    "device",
    "drive",
    "blockdev",
    "netdev",
    "nic",
    "net",
    "object",
    "kernel",
    "initrd",
    "append",
    "dtb",
    "pidfile",
    "virtfs",
    "fsdev",
    "rtc",
    "boot",
    "bios",
    "global",
    "smbios",
    "fw_cfg",
    "L",
    "k",
    "D",
    "d",
    "trace",
    "action",
    "msg",
    "sandbox",
    "run-with",
    "overcommit",
    "numa",
    "incoming",
    "icount",
    "watchdog-action",
    "audiodev",
    "audio",
    "spice",
    "vnc",
    "cdrom",
    "hda",
    "hdb",
    "hdc",
    "hdd",
    "fda",
    "fdb",
    "pflash",
    "mtdblock",
    "sd",
    "mem-path",
    "readconfig",
    "loadvm",
    "add-fd",
    "set",
    "runas",
    "chroot",
    "plugin",
    "tpmdev",
    "debugcon",
    "gdb",
    "echr",
    "iscsi",
    "semihosting-config",
    "usbdevice",
    "smp-opts",
];

/// Whether the machine runs with KVM (`query-kvm`'s `enabled`).
static KVM_ENABLED: OnceLock<bool> = OnceLock::new();
/// The `-drive` files by id, for the internal snapshot commands.
static DRIVES: OnceLock<HashMap<String, String>> = OnceLock::new();

/// `FAKE_QEMU_KVM=1`: the host has a working KVM (`query-kvm`'s `present`).
fn kvm_present() -> bool {
    std::env::var_os("FAKE_QEMU_KVM").is_some_and(|v| v == "1")
}

/// Things that happen to the process as a whole; the main thread acts on them.
enum Event {
    /// The guest powered itself off (after `system_powerdown`).
    GuestPoweredOff,
    /// QMP `quit`.
    Quit,
    /// A terminating signal, with the sender's pid.
    Signal(i32, i32),
}

/// A failed start: QEMU's message, printed as `PROGRAM: message`.
struct StartError(String);

type Clients = Arc<Mutex<Vec<UnixStream>>>;

/// What the main thread needs to run and clean up.
struct Machine {
    program: String,
    name: String,
    serial: Vec<SerialOut>,
    qmp_clients: Clients,
    cleanup: Vec<PathBuf>,
}

/// Where the guest's serial output goes.
#[derive(Clone)]
struct SerialOut {
    clients: Clients,
    log: Option<PathBuf>,
    stdout: bool,
}

impl SerialOut {
    fn write(&self, text: &str) {
        if let Some(log) = &self.log
            && let Ok(mut file) = OpenOptions::new().create(true).append(true).open(log)
        {
            let _ = file.write_all(text.as_bytes());
        }
        if self.stdout {
            let _ = std::io::stdout().write_all(text.as_bytes());
            let _ = std::io::stdout().flush();
        }
        if let Ok(mut clients) = self.clients.lock() {
            clients.retain_mut(|c| c.write_all(text.as_bytes()).is_ok());
        }
    }
}

/// A `-chardev` (or one made by `-serial`/`-qmp` shorthand).
#[derive(Clone, Debug, Default)]
struct Chardev {
    backend: String,
    options: HashMap<String, String>,
    /// The option as given (`-chardev socket,...`), for messages.
    spelled: String,
    role: Option<Role>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Serial,
    Qmp,
}

/// Splits a QEMU option string at single commas; `,,` is a literal comma.
fn split_options(text: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut part = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ',' && chars.peek() == Some(&',') {
            chars.next();
            part.push(',');
        } else if c == ',' {
            parts.push(std::mem::take(&mut part));
        } else {
            part.push(c);
        }
    }
    parts.push(part);
    parts
}

/// `key=value` pairs; a bare word is `implied` (the first one) or a boolean
/// flag (`server` is `server=on`, `nowait` is `wait=off`).
fn parse_options(text: &str, implied: &str) -> (HashMap<String, String>, Vec<(String, String)>) {
    let mut map = HashMap::new();
    let mut all = Vec::new();
    for (i, part) in split_options(text).into_iter().enumerate() {
        let (key, value) = match part.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None if i == 0 && !implied.is_empty() => (implied.to_string(), part),
            None => match part.strip_prefix("no") {
                Some(flag) if !flag.is_empty() => (flag.to_string(), "off".to_string()),
                _ => (part, "on".to_string()),
            },
        };
        all.push((key.clone(), value.clone()));
        map.insert(key, value);
    }
    (map, all)
}

fn is_on(options: &HashMap<String, String>, key: &str, default: bool) -> bool {
    match options.get(key).map(String::as_str) {
        Some("on" | "yes" | "true") => true,
        Some(_) => false,
        None => default,
    }
}

/// A legacy chardev spec (`unix:PATH,server=on`, `file:PATH`, `chardev:ID`,
/// `stdio`, `none`, `null`), as `-serial`, `-qmp` and `-monitor` take it.
enum Spec {
    Chardev(Chardev),
    Reference(String),
    None,
}

fn parse_spec(text: &str, spelled: &str) -> Result<Spec, String> {
    let chardev = |backend: &str, rest: &str, implied: &str| {
        let (options, _) = parse_options(rest, implied);
        Spec::Chardev(Chardev {
            backend: backend.to_string(),
            options,
            spelled: spelled.to_string(),
            role: None,
        })
    };
    if let Some(rest) = text.strip_prefix("unix:") {
        return Ok(chardev("socket", rest, "path"));
    }
    if let Some(rest) = text.strip_prefix("file:") {
        return Ok(chardev("file", rest, "path"));
    }
    if let Some(id) = text.strip_prefix("chardev:") {
        return Ok(Spec::Reference(id.to_string()));
    }
    match text {
        "none" => Ok(Spec::None),
        "null" | "vc" => Ok(chardev("null", "", "")),
        "stdio" | "mon:stdio" => Ok(chardev("stdio", "", "")),
        _ => Err(format!("'{text}' is not a valid char driver")),
    }
}

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    let program = args
        .first()
        .map(|a| {
            Path::new(a)
                .file_name()
                .unwrap_or(a.as_os_str())
                .to_string_lossy()
                .into_owned()
        })
        .unwrap_or_else(|| "qemu-system-x86_64".into());
    let args: Vec<String> = args[1.min(args.len())..]
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    // Signals go to the signal thread only: block them before any thread starts.
    let mut signals = nix::sys::signal::SigSet::empty();
    for signal in [
        nix::sys::signal::Signal::SIGTERM,
        nix::sys::signal::Signal::SIGINT,
        nix::sys::signal::Signal::SIGHUP,
    ] {
        signals.add(signal);
    }
    let _ = signals.thread_block();
    let (events, received) = channel();
    let machine = match start(&program, &args, events.clone()) {
        Ok(Some(machine)) => machine,
        Ok(None) => return ExitCode::SUCCESS,
        Err(StartError(message)) => {
            eprintln!("{program}: {message}");
            return ExitCode::FAILURE;
        }
    };
    spawn_signal_thread(signals, events);
    for serial in &machine.serial {
        serial.write(&format!(
            "fake-qemu-system-x86_64: serial console of {}\r\nfake guest booted\r\n",
            machine.name
        ));
    }
    let ignore_sigterm = std::env::var_os("FAKE_QEMU_IGNORE_SIGTERM").is_some_and(|v| v == "1");
    loop {
        let (reason, guest) = match received.recv() {
            Ok(Event::GuestPoweredOff) => {
                for serial in &machine.serial {
                    serial.write("reboot: Power down\r\n");
                }
                ("guest-shutdown", true)
            }
            Ok(Event::Quit) => ("host-qmp-quit", false),
            Ok(Event::Signal(signal, pid)) => {
                if signal == libc::SIGTERM && ignore_sigterm {
                    continue;
                }
                eprintln!(
                    "{}: terminating on signal {signal} from pid {pid} ({})",
                    machine.program,
                    process_name(pid)
                );
                ("host-signal", false)
            }
            Err(_) => ("host-error", false),
        };
        broadcast(
            &machine.qmp_clients,
            &event_line(
                "SHUTDOWN",
                Some(&format!("{{\"guest\": {guest}, \"reason\": \"{reason}\"}}")),
            ),
        );
        for path in &machine.cleanup {
            let _ = std::fs::remove_file(path);
        }
        return ExitCode::SUCCESS;
    }
}

/// What the command line asks for, before anything is set up.
#[derive(Default)]
struct CommandLine {
    chardevs: Vec<Chardev>,
    /// Chardevs that options name by id, and the role they give them.
    references: Vec<(String, Role)>,
    /// `hostfwd` rules, with the option that spelled each.
    forwards: Vec<(String, String)>,
    /// The option, the path and what it is (file, drive, kernel…).
    must_exist: Vec<(String, String, String)>,
    pidfile: Option<PathBuf>,
    drives: HashMap<String, String>,
    name: String,
    /// The option that asked for an accelerator, and the accelerator.
    kvm_requested: Option<(String, String)>,
    machine_none: bool,
    cpu_given: bool,
}

/// Parses the command line and sets everything up. `Ok(None)`: a command
/// such as `-version` that prints and exits.
fn start(
    program: &str,
    args: &[String],
    events: Sender<Event>,
) -> Result<Option<Machine>, StartError> {
    let mut command_line = CommandLine {
        name: "guest".to_string(),
        ..CommandLine::default()
    };
    let mut i = 0;
    while i < args.len() {
        let raw = &args[i];
        let Some(option) = raw.strip_prefix("--").or_else(|| raw.strip_prefix('-')) else {
            // A bare word is the disk image, as `qemu-system-x86_64 disk.img`.
            command_line
                .must_exist
                .push((raw.clone(), raw.clone(), "file".into()));
            i += 1;
            continue;
        };
        if FLAGS.contains(&option) {
            if !command_line.flag(program, option, raw)? {
                return Ok(None);
            }
            i += 1;
            continue;
        }
        if !WITH_ARGUMENT.contains(&option) {
            return Err(StartError(format!("{raw}: invalid option")));
        }
        let Some(value) = args.get(i + 1) else {
            return Err(StartError(format!("{raw}: requires an argument")));
        };
        command_line.option(option, value, &format!("{raw} {value}"))?;
        i += 2;
    }
    command_line.check()?;

    record_argv(args, &command_line.chardevs);
    let qmp_clients: Clients = Arc::default();
    let mut serial = Vec::new();
    let mut cleanup = Vec::new();
    // QEMU writes its pidfile before it creates any backend.
    if let Some(path) = &command_line.pidfile {
        std::fs::write(path, format!("{}\n", std::process::id()))
            .map_err(|e| StartError(format!("cannot create PID file: {e}")))?;
        cleanup.push(path.clone());
    }
    let backend = Backend {
        program,
        events: &events,
        qmp_clients: &qmp_clients,
    };
    for chardev in &command_line.chardevs {
        if let Some(out) = backend.open(chardev, &mut cleanup)? {
            serial.push(out);
        }
    }
    for (spelled, rule) in &command_line.forwards {
        bind_forward(spelled, rule)?;
    }
    Ok(Some(Machine {
        program: program.to_string(),
        name: command_line.name,
        serial,
        qmp_clients,
        cleanup,
    }))
}

impl CommandLine {
    /// An option without an argument; `Ok(false)` when it printed and
    /// the program exits.
    fn flag(&mut self, program: &str, option: &str, raw: &str) -> Result<bool, StartError> {
        let raw = raw.to_string();
        match option {
            "version" => {
                println!(
                    "QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3) [fake-qemu-system-x86_64]\nCopyright (c) 2003-2022 Fabrice Bellard and the QEMU Project developers"
                );
                return Ok(false);
            }
            "help" | "h" => {
                println!("usage: {program} [options] [disk_image] (fake for holos tests)");
                return Ok(false);
            }
            "enable-kvm" => self.kvm_requested = Some((raw.clone(), "kvm".to_string())),
            "daemonize" => {
                return Err(StartError(
                    "-daemonize: not supported by fake-qemu-system-x86_64; start it detached instead".into(),
                ));
            }
            _ => {}
        }
        Ok(true)
    }

    /// An option with its argument, `spelled` as the command line wrote
    /// both.
    fn option(&mut self, option: &str, value: &str, spelled: &str) -> Result<(), StartError> {
        match option {
            "chardev" => {
                let backend = split_options(value).into_iter().next().unwrap_or_default();
                let (options, _) = parse_options(value, "backend");
                if !options.contains_key("id") {
                    return Err(StartError(format!("{spelled}: Parameter 'id' is missing")));
                }
                self.chardevs.push(Chardev {
                    backend,
                    options,
                    spelled: spelled.to_string(),
                    role: None,
                });
            }
            "serial" | "qmp" | "qmp-pretty" | "monitor" => {
                let role = if option == "serial" {
                    Role::Serial
                } else {
                    Role::Qmp
                };
                match parse_spec(value, spelled)
                    .map_err(|m| StartError(format!("{spelled}: {m}")))?
                {
                    Spec::Chardev(mut chardev) => {
                        chardev.role = Some(role);
                        self.chardevs.push(chardev);
                    }
                    Spec::Reference(id) => self.references.push((id, role)),
                    Spec::None => {}
                }
            }
            "mon" => {
                let (options, _) = parse_options(value, "chardev");
                let Some(id) = options.get("chardev") else {
                    return Err(StartError(format!(
                        "{spelled}: Parameter 'chardev' is missing"
                    )));
                };
                if options.get("mode").map(String::as_str) == Some("control") {
                    self.references.push((id.clone(), Role::Qmp));
                }
            }
            "device" => {
                let (options, _) = parse_options(value, "driver");
                if let Some(id) = options.get("chardev") {
                    self.references.push((id.clone(), Role::Serial));
                }
            }
            "netdev" | "nic" => {
                let (_, all) = parse_options(value, "type");
                for (key, rule) in all {
                    if key == "hostfwd" {
                        self.forwards.push((spelled.to_string(), rule));
                    }
                }
            }
            "drive" => {
                let (options, _) = parse_options(value, "file");
                if let Some(file) = options.get("file") {
                    self.must_exist
                        .push((spelled.to_string(), file.clone(), "drive".into()));
                    if let Some(id) = options.get("id") {
                        self.drives.insert(id.clone(), file.clone());
                    }
                }
            }
            "blockdev" => {
                let (options, _) = parse_options(value, "driver");
                if let Some(file) = options.get("filename") {
                    self.must_exist
                        .push((spelled.to_string(), file.clone(), "drive".into()));
                }
            }
            "kernel" | "initrd" | "cdrom" => {
                self.must_exist
                    .push((spelled.to_string(), value.to_string(), option.to_string()));
            }
            "pidfile" => self.pidfile = Some(PathBuf::from(value)),
            "name" => {
                let (options, _) = parse_options(value, "guest");
                if let Some(guest) = options.get("guest") {
                    self.name = guest.clone();
                }
            }
            "accel" => self.kvm_requested = Some((spelled.to_string(), value.to_string())),
            "cpu" => self.cpu_given = true,
            "machine" | "M" => {
                let (options, _) = parse_options(value, "type");
                self.machine_none = options.get("type").is_some_and(|t| t == "none");
                if let Some(accel) = options.get("accel") {
                    self.kvm_requested = Some((spelled.to_string(), accel.clone()));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// What QEMU refuses before it starts: an accelerator it cannot use,
    /// `-machine none` with a CPU, files that do not exist, chardevs named
    /// but not defined.
    fn check(&mut self) -> Result<(), StartError> {
        let kvm_works = kvm_present();
        if let Some((spelled, accel)) = &self.kvm_requested {
            let first = split_options(accel).into_iter().next().unwrap_or_default();
            let accels: Vec<&str> = first.split(':').collect();
            let _ = KVM_ENABLED.set(accels.first() == Some(&"kvm") && kvm_works);
            if accels.first() == Some(&"kvm") && !kvm_works && !accels.contains(&"tcg") {
                eprintln!("Could not access KVM kernel module: No such file or directory");
                return Err(StartError(format!(
                    "{spelled}: failed to initialize kvm: No such file or directory"
                )));
            }
        }
        if self.machine_none && self.cpu_given {
            // x86 CPUs need a board to number them: QEMU 7.2 fails so.
            return Err(StartError(
                "apic-id property was not initialized properly".into(),
            ));
        }
        let _ = DRIVES.set(std::mem::take(&mut self.drives));
        for (spelled, path, kind) in &self.must_exist {
            if !Path::new(path).exists() {
                return Err(StartError(match kind.as_str() {
                    "kernel" => {
                        format!("could not load kernel '{path}': No such file or directory")
                    }
                    "initrd" => format!("could not load initial ram disk '{path}'"),
                    _ => format!("{spelled}: Could not open '{path}': No such file or directory"),
                }));
            }
        }
        for (id, role) in std::mem::take(&mut self.references) {
            match self
                .chardevs
                .iter_mut()
                .find(|c| c.options.get("id") == Some(&id))
            {
                Some(chardev) => chardev.role = Some(role),
                None => return Err(StartError(format!("chardev: '{id}' not found"))),
            }
        }
        Ok(())
    }
}

/// Where a chardev's backend is opened.
struct Backend<'a> {
    program: &'a str,
    events: &'a Sender<Event>,
    qmp_clients: &'a Clients,
}

impl Backend<'_> {
    /// Opens the chardev's backend (socket, file, stdio or null); its
    /// output when it is a serial port. Sockets and files it creates go
    /// into `cleanup`.
    fn open(
        &self,
        chardev: &Chardev,
        cleanup: &mut Vec<PathBuf>,
    ) -> Result<Option<SerialOut>, StartError> {
        let (program, events, qmp_clients) = (self.program, self.events, self.qmp_clients);
        let out = SerialOut {
            clients: Arc::default(),
            log: chardev.options.get("logfile").map(PathBuf::from),
            stdout: chardev.backend == "stdio",
        };
        match chardev.backend.as_str() {
            "socket" => {
                let Some(path) = chardev.options.get("path").map(PathBuf::from) else {
                    return Err(StartError(format!(
                        "{}: only unix sockets (path=) are faked",
                        chardev.spelled
                    )));
                };
                if !is_on(&chardev.options, "server", false) {
                    let stream = UnixStream::connect(&path).map_err(|e| {
                        StartError(format!(
                            "{}: Failed to connect to '{}': {e}",
                            chardev.spelled,
                            path.display()
                        ))
                    })?;
                    if let Ok(mut clients) = out.clients.lock() {
                        clients.push(stream);
                    }
                } else {
                    let _ = std::fs::remove_file(&path);
                    let listener = UnixListener::bind(&path).map_err(|e| {
                        StartError(format!(
                            "{}: Failed to bind socket to {}: {e}",
                            chardev.spelled,
                            path.display()
                        ))
                    })?;
                    cleanup.push(path.clone());
                    let first = if is_on(&chardev.options, "wait", true) {
                        eprintln!(
                            "{program}: {}: info: QEMU waiting for connection on: disconnected:unix:{},server=on",
                            chardev.spelled,
                            path.display()
                        );
                        listener.accept().ok().map(|(s, _)| s)
                    } else {
                        None
                    };
                    match chardev.role {
                        Some(Role::Qmp) => {
                            spawn_qmp_server(listener, first, qmp_clients.clone(), events.clone())
                        }
                        _ => spawn_serial_server(listener, first, out.clone()),
                    }
                }
            }
            "file" => {
                let path = chardev.options.get("path").cloned().unwrap_or_default();
                OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .map_err(|e| {
                        StartError(format!("{}: Could not open '{path}': {e}", chardev.spelled))
                    })?;
                let out = SerialOut {
                    log: Some(PathBuf::from(path)),
                    ..out
                };
                return Ok((chardev.role == Some(Role::Serial)).then_some(out));
            }
            "stdio" if chardev.role == Some(Role::Qmp) => {
                let events = events.clone();
                let clients = qmp_clients.clone();
                std::thread::spawn(move || {
                    serve_qmp(std::io::stdin(), std::io::stdout(), None, &clients, &events);
                });
            }
            "null" | "stdio" => {}
            other => {
                return Err(StartError(format!(
                    "{}: backend '{other}' is not faked",
                    chardev.spelled
                )));
            }
        }
        Ok((chardev.role == Some(Role::Serial)).then_some(out))
    }
}

/// Appends the arguments as one JSON line to `FAKE_QEMU_ARGV_FILE`, else to
/// `qemu-argv.jsonl` beside the first QMP socket.
fn record_argv(args: &[String], chardevs: &[Chardev]) {
    let path = std::env::var_os("FAKE_QEMU_ARGV_FILE")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            chardevs
                .iter()
                .filter(|c| c.role == Some(Role::Qmp))
                .find_map(|c| c.options.get("path"))
                .map(|p| Path::new(p).with_file_name("qemu-argv.jsonl"))
        });
    if let Some(path) = path {
        let mut line = serde_json::to_string(args).unwrap_or_default();
        line.push('\n');
        if let Ok(mut file) = OpenOptions::new().create(true).append(true).open(&path) {
            let _ = file.write_all(line.as_bytes());
        }
    }
}

/// `tcp:[HOSTADDR]:HOSTPORT-[GUESTADDR]:GUESTPORT`: binds the host side.
fn bind_forward(spelled: &str, rule: &str) -> Result<(), StartError> {
    let failed = || {
        StartError(format!(
            "{spelled}: Could not set up host forwarding rule '{rule}'"
        ))
    };
    let (udp, rest) = match rule.strip_prefix("udp:") {
        Some(rest) => (true, rest),
        None => (false, rule.strip_prefix("tcp:").unwrap_or(rule)),
    };
    let (host, guest) = rest.split_once('-').ok_or_else(failed)?;
    let (host_addr, host_port) = host.rsplit_once(':').ok_or_else(failed)?;
    let guest_port: u16 = guest
        .rsplit_once(':')
        .map_or(guest, |(_, p)| p)
        .parse()
        .map_err(|_| failed())?;
    let host_addr = if host_addr.is_empty() {
        "0.0.0.0"
    } else {
        host_addr
    };
    if udp {
        // Held, so that the port stays taken while the machine runs.
        let socket = UdpSocket::bind(format!("{host_addr}:{host_port}")).map_err(|_| failed())?;
        std::thread::spawn(move || {
            let mut buffer = [0u8; 512];
            while socket.recv_from(&mut buffer).is_ok() {}
        });
        return Ok(());
    }
    let listener = TcpListener::bind(format!("{host_addr}:{host_port}")).map_err(|_| failed())?;
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            if guest_port == 22 {
                let mut stream = stream;
                let _ = stream.write_all(b"SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n");
            }
        }
    });
    Ok(())
}

fn spawn_serial_server(listener: UnixListener, first: Option<UnixStream>, out: SerialOut) {
    std::thread::spawn(move || {
        let connections = first.into_iter().map(Ok).chain(listener.incoming());
        for stream in connections.flatten() {
            let Ok(reader) = stream.try_clone() else {
                continue;
            };
            if let Ok(mut clients) = out.clients.lock() {
                clients.push(stream);
            }
            let out = out.clone();
            // A terminal echoes what is typed.
            std::thread::spawn(move || {
                let mut reader = reader;
                let mut buffer = [0u8; 1024];
                while let Ok(n) = reader.read(&mut buffer) {
                    if n == 0 {
                        break;
                    }
                    out.write(&String::from_utf8_lossy(&buffer[..n]));
                }
            });
        }
    });
}

fn spawn_qmp_server(
    listener: UnixListener,
    first: Option<UnixStream>,
    clients: Clients,
    events: Sender<Event>,
) {
    std::thread::spawn(move || {
        // One client at a time, as a QEMU monitor serves them.
        let connections = first.into_iter().map(Ok).chain(listener.incoming());
        for stream in connections.flatten() {
            let Ok(writer) = stream.try_clone() else {
                continue;
            };
            let client = stream.try_clone().ok();
            serve_qmp(stream, writer, client.as_ref(), &clients, &events);
        }
    });
}

/// QEMU's JSON: `", "` and `": "` separators, one message per `\r\n` line.
fn qemu_json(value: &Value) -> String {
    match value {
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(qemu_json).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), qemu_json(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

fn event_line(event: &str, data: Option<&str>) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let data = data.map(|d| format!(", \"data\": {d}")).unwrap_or_default();
    format!(
        "{{\"timestamp\": {{\"seconds\": {}, \"microseconds\": {}}}, \"event\": \"{event}\"{data}}}\r\n",
        now.as_secs(),
        now.subsec_micros()
    )
}

fn broadcast(clients: &Clients, line: &str) {
    if let Ok(mut clients) = clients.lock() {
        clients.retain_mut(|c| c.write_all(line.as_bytes()).is_ok());
    }
}

fn error_reply(class: &str, desc: &str) -> String {
    format!(
        "{{\"error\": {{\"class\": \"{class}\", \"desc\": {}}}}}",
        Value::String(desc.to_string())
    )
}

/// The reply to one QMP command, without the `id` (QEMU puts it last).
fn reply_to(
    command: &Value,
    negotiated: &mut bool,
    client: Option<&UnixStream>,
    clients: &Clients,
    events: &Sender<Event>,
) -> (String, Option<Event>) {
    const MEMBERS: [&str; 4] = ["execute", "arguments", "id", "control"];
    let Some(members) = command.as_object() else {
        return (
            error_reply("GenericError", "QMP input must be a JSON object"),
            None,
        );
    };
    if let Some(extra) = members.keys().find(|k| !MEMBERS.contains(&k.as_str())) {
        let desc = format!("QMP input member '{extra}' is unexpected");
        return (error_reply("GenericError", &desc), None);
    }
    let Some(execute) = command.get("execute").and_then(Value::as_str) else {
        return (
            error_reply("GenericError", "QMP input lacks member 'execute'"),
            None,
        );
    };
    let ok = |body: &str| format!("{{\"return\": {body}}}");
    let reply = match execute {
        "qmp_capabilities" if *negotiated => error_reply(
            "CommandNotFound",
            "Capabilities negotiation is already complete, command ignored",
        ),
        "qmp_capabilities" => {
            *negotiated = true;
            // A socket client gets events from now on (stdio gets none).
            if let (Ok(mut list), Some(Ok(clone))) =
                (clients.lock(), client.map(UnixStream::try_clone))
            {
                list.push(clone);
            }
            ok("{}")
        }
        _ if !*negotiated => error_reply(
            "CommandNotFound",
            "Expecting capabilities negotiation with 'qmp_capabilities'",
        ),
        "query-status" if PAUSED.load(std::sync::atomic::Ordering::SeqCst) => {
            ok(r#"{"status": "paused", "singlestep": false, "running": false}"#)
        }
        "query-status" => ok(r#"{"status": "running", "singlestep": false, "running": true}"#),
        // As QEMU 7.2: the event, then the empty return.
        "stop" => {
            PAUSED.store(true, std::sync::atomic::Ordering::SeqCst);
            broadcast(clients, &event_line("STOP", None));
            ok("{}")
        }
        "cont" => {
            PAUSED.store(false, std::sync::atomic::Ordering::SeqCst);
            broadcast(clients, &event_line("RESUME", None));
            ok("{}")
        }
        "query-kvm" => ok(&format!(
            r#"{{"enabled": {}, "present": {}}}"#,
            KVM_ENABLED.get().copied().unwrap_or(false),
            kvm_present()
        )),
        "query-version" => ok(&format!(r#"{{"qemu": {VERSION}, "package": "{PACKAGE}"}}"#)),
        "system_powerdown" => {
            // QEMU 7.2 emits the event before it answers.
            broadcast(clients, &event_line("POWERDOWN", None));
            schedule_guest_power_off(events.clone());
            ok("{}")
        }
        "blockdev-snapshot-internal-sync" | "blockdev-snapshot-delete-internal-sync" => {
            match internal_snapshot(execute, command.get("arguments")) {
                Ok(body) => ok(&body),
                Err(desc) => error_reply("GenericError", &desc),
            }
        }
        "block_resize" => match block_resize(command.get("arguments")) {
            Ok(()) => ok("{}"),
            Err(desc) => error_reply("GenericError", &desc),
        },
        "quit" => return (ok("{}"), Some(Event::Quit)),
        other => error_reply(
            "CommandNotFound",
            &format!("The command {other} has not been found"),
        ),
    };
    (reply, None)
}

/// `blockdev-snapshot-internal-sync` and `blockdev-snapshot-delete-internal-sync`
/// on a `-drive` by its id: the snapshot really goes into (or out of) the
/// qcow2 file, through the real `qemu-img`, with QEMU 7.2's replies and
/// error texts.
fn internal_snapshot(execute: &str, arguments: Option<&Value>) -> Result<String, String> {
    let text = |key: &str| {
        arguments
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let device = text("device").ok_or("Parameter 'device' is missing")?;
    let name = text("name").ok_or("Parameter 'name' is missing")?;
    let file = DRIVES
        .get()
        .and_then(|drives| drives.get(&device))
        .ok_or_else(|| format!("Cannot find device='{device}' nor node-name='{device}'"))?;
    let info = std::process::Command::new("qemu-img")
        .args(["info", "-U", "--output=json", file])
        .output()
        .map_err(|e| format!("qemu-img: {e}"))?;
    let info: Value = serde_json::from_slice(&info.stdout).map_err(|e| e.to_string())?;
    let existing = info["snapshots"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["name"] == name.as_str())
        .cloned();
    let (flag, body) = if execute == "blockdev-snapshot-internal-sync" {
        if existing.is_some() {
            return Err(format!(
                "Snapshot with name '{name}' already exists on device '{device}'"
            ));
        }
        ("-c", "{}".to_string())
    } else {
        let Some(existing) = existing else {
            return Err(format!(
                "Snapshot with id 'null' and name '{name}' does not exist on device '{device}'"
            ));
        };
        ("-d", qemu_json(&existing))
    };
    let done = std::process::Command::new("qemu-img")
        .args(["snapshot", flag, &name, file])
        .output()
        .map_err(|e| format!("qemu-img: {e}"))?;
    if !done.status.success() {
        return Err(String::from_utf8_lossy(&done.stderr).trim().to_string());
    }
    Ok(body)
}

/// `block_resize` on a `-drive` by its id: the image file really changes
/// size (through the real `qemu-img`; QMP shrinks as readily as it grows),
/// with QEMU 7.2's error texts.
fn block_resize(arguments: Option<&Value>) -> Result<(), String> {
    let get = |key: &str| arguments.and_then(|a| a.get(key));
    let device = get("device").and_then(Value::as_str).unwrap_or_default();
    let node = get("node-name").and_then(Value::as_str).unwrap_or_default();
    let size = get("size")
        .ok_or("Parameter 'size' is missing")?
        .as_i64()
        .ok_or("Invalid parameter type for 'size', expected: integer")?;
    let file = DRIVES
        .get()
        .and_then(|drives| drives.get(device).or_else(|| drives.get(node)))
        .ok_or_else(|| format!("Cannot find device='{device}' nor node-name='{node}'"))?;
    if size < 0 {
        return Err("Parameter 'size' expects a >0 size".into());
    }
    if size % 512 != 0 {
        return Err("The new size must be a multiple of 512".into());
    }
    let done = std::process::Command::new("qemu-img")
        .args(["resize", "-q", "--shrink", file, &size.to_string()])
        .output()
        .map_err(|e| format!("qemu-img: {e}"))?;
    if !done.status.success() {
        let text = String::from_utf8_lossy(&done.stderr);
        return Err(text.trim().trim_start_matches("qemu-img: ").to_string());
    }
    Ok(())
}

/// QEMU's version object and package string, as 7.2 in Debian 12 gives them.
const VERSION: &str = r#"{"micro": 22, "minor": 2, "major": 7}"#;
const PACKAGE: &str = "Debian 1:7.2+dfsg-7+deb12u18+b3";

/// One monitor connection: `reader` and `writer` are a unix socket client
/// (`client`, which then receives events) or stdin and stdout.
fn serve_qmp(
    reader: impl Read,
    mut writer: impl Write,
    client: Option<&UnixStream>,
    clients: &Clients,
    events: &Sender<Event>,
) {
    let greeting = format!(
        r#"{{"QMP": {{"version": {{"qemu": {VERSION}, "package": "{PACKAGE}"}}, "capabilities": ["oob"]}}}}"#
    );
    if writer
        .write_all(format!("{greeting}\r\n").as_bytes())
        .is_err()
    {
        return;
    }
    let mut negotiated = false;
    let commands =
        serde_json::Deserializer::from_reader(BufReader::new(reader)).into_iter::<Value>();
    for command in commands {
        let command = match command {
            Ok(command) => command,
            Err(err) => {
                let reply = error_reply("GenericError", &format!("JSON parse error, {err}"));
                let _ = writer.write_all(format!("{reply}\r\n").as_bytes());
                return;
            }
        };
        let (mut reply, after_reply) = reply_to(&command, &mut negotiated, client, clients, events);
        if let Some(id) = command.get("id") {
            reply.pop();
            reply.push_str(&format!(", \"id\": {}}}", qemu_json(id)));
        }
        if writer
            .write_all(format!("{reply}\r\n").as_bytes())
            .and_then(|()| writer.flush())
            .is_err()
        {
            return;
        }
        if let Some(event) = after_reply {
            let _ = events.send(event);
        }
    }
}

/// The guest acts on the ACPI power button after a delay, or never.
fn schedule_guest_power_off(events: Sender<Event>) {
    let delay = std::env::var("FAKE_QEMU_POWERDOWN_DELAY_MS").unwrap_or_default();
    if delay == "never" {
        return;
    }
    let delay = Duration::from_millis(delay.parse().unwrap_or(100));
    std::thread::spawn(move || {
        std::thread::sleep(delay);
        let _ = events.send(Event::GuestPoweredOff);
    });
}

fn spawn_signal_thread(signals: nix::sys::signal::SigSet, events: Sender<Event>) {
    std::thread::spawn(move || {
        loop {
            // SAFETY: a zeroed siginfo_t is a valid output buffer for sigwaitinfo.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: `signals` is a valid signal set and `info` a valid buffer.
            let signal = unsafe { libc::sigwaitinfo(signals.as_ref(), &mut info) };
            if signal < 0 {
                continue;
            }
            // SAFETY: sigwaitinfo filled `info` for a signal sent by a process.
            let pid = unsafe { info.si_pid() };
            if events.send(Event::Signal(signal, pid)).is_err() {
                return;
            }
        }
    });
}

/// The sender's program name for the "terminating on signal" line.
fn process_name(pid: i32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .ok()
        .and_then(|cmdline| {
            cmdline
                .split(|b| *b == 0)
                .next()
                .map(|a| String::from_utf8_lossy(a).into_owned())
        })
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "<unknown process>".into())
}
