//! Running plugin binaries: `info`, the environment of plugin interface v3,
//! and a poll loop that streams stdout, stderr and FD 3 as they arrive.

use crate::paths;
use std::collections::{BTreeSet, HashMap};
use std::ffi::{CString, OsString};
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use holo_protocol::API_VERSION;

/// A plugin that answered `info` compatibly.
#[derive(Debug)]
pub struct Plugin {
    pub id: String,
    /// As Holo 3 prints it.
    pub binary: String,
    pub extensions: BTreeSet<String>,
    /// What a timeout message calls it: `plugin holo-ID` or `generator PATH`.
    label: String,
    /// Stderr goes into the stdout pipe, which keeps the order of the two
    /// (a generator's output, as Go's `CombinedOutput`).
    combined_output: bool,
    /// `KEY=VALUE` for posix_spawn, built once per plugin.
    env: Vec<CString>,
    /// When the running operation's timeout started.
    started: std::cell::Cell<std::time::Instant>,
}

/// The descriptor of the run's lock while `apply` holds it (-1 when not),
/// which plugins declaring `run-lock` inherit.
static SHARED_RUN_LOCK: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

/// Passes the run's lock (its descriptor) to every plugin declaring
/// `run-lock` that starts from now on; `None` stops it.
pub fn share_run_lock(fd: Option<std::os::fd::RawFd>) {
    SHARED_RUN_LOCK.store(fd.unwrap_or(-1), std::sync::atomic::Ordering::Relaxed);
}

/// The most of `info`'s output that holo reads.
const MAX_INFO: usize = 1 << 20;

/// What a running plugin produced, in arrival order.
pub enum Chunk<'a> {
    Stdout(&'a [u8]),
    Stderr(&'a [u8]),
    Fd3(&'a [u8]),
}

/// The directories a plugin gets, already normalised for display.
pub struct PluginDirs {
    pub root: String,
    pub cache: String,
    pub resource: String,
    pub resource_origin: String,
    pub state: String,
}

impl Plugin {
    /// Runs `BINARY info` and checks the API version range.
    /// `on_stderr` receives the complete lines the plugin writes on stderr.
    pub fn load(
        id: &str,
        binary: &str,
        dirs: &PluginDirs,
        mut on_stderr: impl FnMut(&[u8]),
    ) -> Result<Plugin, String> {
        let mut plugin = Plugin {
            id: id.to_string(),
            binary: binary.to_string(),
            extensions: BTreeSet::new(),
            label: format!("plugin holo-{id}"),
            combined_output: false,
            env: Vec::new(),
            started: std::cell::Cell::new(std::time::Instant::now()),
        };
        plugin.env = plugin.environment(dirs);
        let mut stdout = Vec::new();
        let mut stderr = StderrLines::default();
        let status = plugin
            .run(&["info"], &[], None, false, |chunk| match chunk {
                // `info` is a few lines; more is not kept.
                Chunk::Stdout(b) if stdout.len() < MAX_INFO => stdout.extend_from_slice(b),
                Chunk::Stdout(_) => {}
                Chunk::Stderr(b) => stderr.push(b, &mut |line| on_stderr(line)),
                Chunk::Fd3(_) => {}
            })
            .map_err(|e| format!("fork/exec {binary}: {}", paths::errno_text(&e)))?;
        stderr.finish(&mut |line| on_stderr(line));
        if !status.success() {
            // Holo 3 passes the plugin's stderr through and prints the status.
            return Err(describe_status(status));
        }
        let metadata = parse_info(&String::from_utf8_lossy(&stdout));
        let version = |key: &str| -> Result<i64, String> {
            go_atoi(metadata.get(key).map(String::as_str).unwrap_or(""))
        };
        let (min, max) = (version("MIN_API_VERSION")?, version("MAX_API_VERSION")?);
        if min > i64::from(API_VERSION) || max < i64::from(API_VERSION) {
            return Err(format!(
                "plugin holo-{id} is incompatible with this Holo (plugin min: {min}, plugin max: {max}, Holo: {API_VERSION})"
            ));
        }
        if let Some(list) = metadata.get("EXTENSIONS") {
            plugin.extensions = list
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect();
        }
        Ok(plugin)
    }

    /// Holo 3's text for a run that did not succeed (`exit status 1`,
    /// `signal: killed`, `fork/exec PATH: …`); `None` on success.
    pub fn failure(&self, result: &std::io::Result<ExitStatus>) -> Option<String> {
        match result {
            Ok(status) if status.success() => None,
            Ok(status) => Some(describe_status(*status)),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted
                ) =>
            {
                Some(e.to_string())
            }
            Err(e) => Some(format!(
                "fork/exec {}: {}",
                self.binary,
                paths::errno_text(e)
            )),
        }
    }

    /// A resource generator, run (with no arguments) like a plugin: in a
    /// session of its own, with the scan timeout, signals passed on and its
    /// output streamed. It gets holo's environment and `vars`.
    pub fn generator(path: &str, vars: &[(&str, &str)]) -> Plugin {
        let env = std::env::vars_os()
            .filter(|(key, _)| !vars.iter().any(|(name, _)| key == name))
            .chain(vars.iter().map(|(key, value)| (key.into(), value.into())))
            .filter_map(|(key, value)| {
                let mut pair = key.into_vec();
                pair.push(b'=');
                pair.extend(value.into_vec());
                CString::new(pair).ok()
            })
            .collect();
        Plugin {
            id: String::new(),
            binary: path.to_string(),
            extensions: BTreeSet::new(),
            label: format!("generator {path}"),
            combined_output: true,
            env,
            started: std::cell::Cell::new(std::time::Instant::now()),
        }
    }

    pub fn has_extension(&self, name: &str) -> bool {
        self.extensions.contains(name)
    }

    /// Points `HOLO_RESOURCE_DIR` elsewhere once the resources are ready
    /// (Holo 3 runs `info` with the static directory, then switches).
    pub fn set_resource_dir(&mut self, dir: &str) {
        self.set_env("HOLO_RESOURCE_DIR", dir);
    }

    /// Sets `key` in the environment of every later run of the plugin.
    pub fn set_env(&mut self, key: &str, value: &str) {
        let mut prefix = key.as_bytes().to_vec();
        prefix.push(b'=');
        let mut pair = prefix.clone();
        pair.extend_from_slice(value.as_bytes());
        if let Ok(pair) = CString::new(pair) {
            self.env
                .retain(|entry| !entry.as_bytes().starts_with(&prefix));
            self.env.push(pair);
        }
    }

    fn environment(&self, dirs: &PluginDirs) -> Vec<CString> {
        let ours = [
            "HOLO_API_VERSION",
            "HOLO_CACHE_DIR",
            "HOLO_RESOURCE_DIR",
            "HOLO_RESOURCE_ORIGIN",
            "HOLO_STATE_DIR",
            "HOLO_ROOT_DIR",
            "HOLO_EXTENSIONS",
            "HOLO_REFRESH",
            holo_protocol::run_entities::VARIABLE,
        ];
        let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
            .filter(|(k, _)| !ours.iter().any(|o| k == o))
            .collect();
        let mut set = |k: &str, v: &str| env.push((k.into(), v.into()));
        set("HOLO_API_VERSION", &API_VERSION.to_string());
        set("HOLO_CACHE_DIR", &dirs.cache);
        set("HOLO_RESOURCE_DIR", &dirs.resource);
        set("HOLO_RESOURCE_ORIGIN", &dirs.resource_origin);
        set("HOLO_STATE_DIR", &dirs.state);
        set("HOLO_ROOT_DIR", &dirs.root);
        set(
            "HOLO_EXTENSIONS",
            &holo_protocol::extension::DRIVER.join(","),
        );
        env.into_iter()
            .filter_map(|(key, value)| {
                let mut pair = key.into_vec();
                pair.push(b'=');
                pair.extend(value.into_vec());
                // a variable with a NUL byte cannot be passed on at all
                CString::new(pair).ok()
            })
            .collect()
    }

    /// Runs the plugin and hands every chunk of output to `sink` as it
    /// arrives. `with_fd3` opens a pipe as the plugin's file descriptor 3.
    pub fn run(
        &self,
        args: &[&str],
        extra_env: &[(&str, &str)],
        stdin: Option<Vec<u8>>,
        with_fd3: bool,
        mut sink: impl FnMut(Chunk),
    ) -> std::io::Result<ExitStatus> {
        self.run_streaming(args, extra_env, stdin, with_fd3, |event| {
            if let Some(chunk) = event {
                sink(chunk)
            }
        })
    }

    /// The executable's path, argv and environment as C strings.
    fn exec_arguments(
        &self,
        args: &[&str],
        extra_env: &[(&str, &str)],
    ) -> std::io::Result<(CString, Vec<CString>, Vec<CString>)> {
        let to_c = |s: &str| {
            CString::new(s).map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))
        };
        let path = to_c(&executable_path(&self.binary))?;
        let mut argv = vec![to_c(&self.binary)?];
        for arg in args {
            argv.push(to_c(arg)?);
        }
        let mut envp = self.env.clone();
        for (key, value) in extra_env {
            envp.push(to_c(&format!("{key}={value}"))?);
        }
        Ok((path, argv, envp))
    }

    /// [`Plugin::run`], where `sink` also gets `None` whenever the driver is
    /// about to wait for the plugin: the moment to show what it printed.
    ///
    /// Once the plugin process has exited, what is already in the pipes is
    /// read and the run ends: a grandchild that keeps a pipe open (a daemon
    /// the plugin started) never holds the driver.
    pub fn run_streaming(
        &self,
        args: &[&str],
        extra_env: &[(&str, &str)],
        stdin: Option<Vec<u8>>,
        with_fd3: bool,
        sink: impl FnMut(Option<Chunk>),
    ) -> std::io::Result<ExitStatus> {
        use nix::fcntl::OFlag;
        if let Some(signal) = crate::interrupt::signal() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Interrupted,
                format!("not started: interrupted by {}", signal.as_str()),
            ));
        }
        use nix::spawn::{PosixSpawnFileActions, posix_spawn};
        let (path, argv, envp) = self.exec_arguments(args, extra_env)?;

        // Pipes are close-on-exec; the child gets its ends through dup2.
        let (stdin_read, stdin_write) = match stdin {
            Some(_) => {
                let (r, w) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
                // Only our end: the plugin reads a blocking stdin.
                nix::fcntl::fcntl(&w, nix::fcntl::FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
                (Some(r), Some(w))
            }
            None => (None, None),
        };
        let (out_read, out_write) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        let (err_read, err_write) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        let fd3 = if with_fd3 {
            let (r, w) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
            Some((r, above_stdio_and_fd3(w)?))
        } else {
            None
        };
        let null = std::fs::File::open("/dev/null")?;

        let mut actions = PosixSpawnFileActions::init()?;
        let stdin_fd = stdin_read
            .as_ref()
            .map_or(null.as_raw_fd(), |fd| fd.as_raw_fd());
        actions.add_dup2(stdin_fd, 0)?;
        actions.add_dup2(out_write.as_raw_fd(), 1)?;
        let stderr_write = if self.combined_output {
            &out_write
        } else {
            &err_write
        };
        actions.add_dup2(stderr_write.as_raw_fd(), 2)?;
        if let Some((_, write)) = &fd3 {
            actions.add_dup2(write.as_raw_fd(), 3)?;
        }
        // Last: the lock's descriptor is above every other source.
        let lock = SHARED_RUN_LOCK.load(std::sync::atomic::Ordering::Relaxed);
        if self.has_extension(holo_protocol::extension::RUN_LOCK) && lock >= 0 {
            actions.add_dup2(lock, holo_protocol::RUN_LOCK_FD)?;
        }
        let attr = spawn_attributes()?;
        let pid = posix_spawn(path.as_c_str(), &actions, &attr, &argv, &envp)?;

        drop((out_write, err_write, stdin_read, null));
        let fd3_read = fd3.map(|(read, write)| {
            drop(write);
            read
        });
        let mut child = Child {
            pid,
            exit: pidfd_open(pid),
            status: None,
        };
        let streams = Streams {
            stdin: stdin_write.zip(stdin).map(|(fd, data)| (fd, data, 0)),
            outputs: [(1u8, Some(out_read)), (2, Some(err_read)), (3, fd3_read)]
                .into_iter()
                .filter_map(|(tag, fd)| fd.map(|fd| (tag, std::fs::File::from(fd))))
                .collect(),
        };
        let (timeout, variable) = operation_timeout(args.first().copied().unwrap_or(""));
        self.started.set(std::time::Instant::now());
        let limits = Limits {
            timeout,
            started: &self.started,
            grace: crate::interrupt::grace(),
        };
        let pumped = pump(streams, &mut child, &limits, sink);
        let status = match child.status {
            Some(status) => status,
            None => child.wait(true)?.unwrap_or_else(|| ExitStatus::from_raw(0)),
        };
        let ending = pumped?;
        if ending != Ending::Exited {
            // What the plugin started and left behind goes with it.
            crate::interrupt::kill_session(pid.as_raw());
        }
        if ending == Ending::TimedOut {
            let limit = timeout
                .map(crate::interrupt::format_duration)
                .unwrap_or_default();
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "{} timed out after {limit} ({variable}); it was ended with every process it started",
                    self.label
                ),
            ));
        }
        Ok(status)
    }

    /// Restarts the timeout of the running operation (a batch's entity
    /// finished).
    pub fn restart_timer(&self) {
        self.started.set(std::time::Instant::now());
    }
}

/// The default timeout of `apply`, `force-apply`, `noop` and their batches
/// (per entity), and of `info`, `scan` and `diff`.
pub const DEFAULT_APPLY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3600);
pub const DEFAULT_SCAN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// The variables that change them (a number of seconds, or with `s`, `m`
/// or `h`; `0` for no limit).
pub const TIMEOUT_VARIABLES: [&str; 2] = ["HOLO_APPLY_TIMEOUT", "HOLO_SCAN_TIMEOUT"];

/// The timeout of an operation and the variable that sets it.
fn operation_timeout(operation: &str) -> (Option<std::time::Duration>, &'static str) {
    let (variable, default) = match operation {
        // No operation: a generator, which runs as part of the scan.
        "info" | "scan" | "diff" | "" => (TIMEOUT_VARIABLES[1], DEFAULT_SCAN_TIMEOUT),
        _ => (TIMEOUT_VARIABLES[0], DEFAULT_APPLY_TIMEOUT),
    };
    let limit = match std::env::var(variable) {
        Ok(text) => crate::interrupt::parse_duration(&text).unwrap_or(Some(default)),
        Err(_) => Some(default),
    };
    (limit, variable)
}

/// Checks the timeout variables once, before anything runs.
pub fn check_timeout_variables() -> Result<(), String> {
    for variable in TIMEOUT_VARIABLES
        .iter()
        .chain(&["HOLO_KILL_GRACE", "HOLO_STALE_LOCK_WAIT"])
    {
        if let Some(value) = std::env::var_os(variable) {
            let valid = value
                .to_str()
                .and_then(crate::interrupt::parse_duration)
                .is_some();
            if !valid {
                return Err(format!(
                    "{variable}={} is not a duration; give seconds (90) or a number with s, m or h (15m), or 0 for no limit",
                    value.to_string_lossy()
                ));
            }
        }
    }
    Ok(())
}

/// The plugin process: its pid, a pidfd that becomes readable when it
/// exits (None on kernels without pidfd_open), and its status once reaped.
struct Child {
    pid: nix::unistd::Pid,
    exit: Option<OwnedFd>,
    status: Option<ExitStatus>,
}

impl Child {
    /// Reaps the child; `Ok(None)` when `block` is false and it still runs.
    fn wait(&mut self, block: bool) -> std::io::Result<Option<ExitStatus>> {
        use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
        let flags = (!block).then_some(WaitPidFlag::WNOHANG);
        loop {
            let status = match waitpid(self.pid, flags) {
                Ok(WaitStatus::Exited(_, code)) => ExitStatus::from_raw((code & 0xff) << 8),
                Ok(WaitStatus::Signaled(_, signal, core)) => {
                    ExitStatus::from_raw(signal as i32 | if core { 0x80 } else { 0 })
                }
                Ok(WaitStatus::StillAlive) => return Ok(None),
                Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            };
            self.status = Some(status);
            return Ok(Some(status));
        }
    }
}

/// A pidfd for `pid`; None where the kernel has none (before Linux 5.3).
fn pidfd_open(pid: nix::unistd::Pid) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor
    // (close-on-exec) or -1; no memory is passed.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid.as_raw(), 0) };
    let fd = i32::try_from(fd).ok().filter(|fd| *fd >= 0)?;
    // SAFETY: the syscall returned a fresh descriptor that nothing else owns.
    Some(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}

/// The driver's ends of the plugin's pipes.
struct Streams {
    /// The stdin write end (non-blocking), the data and how much is written.
    stdin: Option<(OwnedFd, Vec<u8>, usize)>,
    /// stdout (1), stderr (2) and FD 3 (3), each until its end of file.
    outputs: Vec<(u8, std::fs::File)>,
}

/// Moves a pipe end off fds 0-3, so that `dup2(fd, 3)` in the child never
/// meets `fd == 3` (which would leave it close-on-exec).
fn above_stdio_and_fd3(fd: OwnedFd) -> std::io::Result<OwnedFd> {
    if fd.as_raw_fd() > 3 {
        return Ok(fd);
    }
    let moved = nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC(10))?;
    // SAFETY: F_DUPFD_CLOEXEC returned a new descriptor that nothing else owns.
    Ok(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(moved) })
}

/// A relative binary is resolved against the working directory, never `PATH`.
fn executable_path(binary: &str) -> String {
    if binary.contains('/') {
        binary.to_string()
    } else {
        format!("./{binary}")
    }
}

/// How long to wait between checks whether the plugin exited, on kernels
/// without pidfd.
const EXIT_CHECK_INTERVAL_MS: u16 = 100;

/// How a supervised run ended.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Ending {
    /// The plugin exited by itself.
    Exited,
    /// It outlived its timeout: SIGTERM, then after the grace time SIGKILL.
    TimedOut,
    /// holo was interrupted: the signal was passed on to the plugin.
    Interrupted,
}

/// The limits of one run: its timeout (counted from `started`, which a
/// batch moves at every entity's result) and the grace time after the
/// signal before SIGKILL.
struct Limits<'a> {
    timeout: Option<std::time::Duration>,
    started: &'a std::cell::Cell<std::time::Instant>,
    grace: std::time::Duration,
}

/// How a plugin starts: every signal unblocked, SIGPIPE at its default,
/// in a session of its own.
fn spawn_attributes() -> std::io::Result<nix::spawn::PosixSpawnAttr> {
    use nix::spawn::{PosixSpawnAttr, PosixSpawnFlags};
    // The driver handles SIGINT/SIGTERM/SIGHUP (reset by exec) and
    // ignores SIGPIPE (Rust runtime); plugins start with the defaults.
    let mut attr = PosixSpawnAttr::init()?;
    attr.set_sigmask(&nix::sys::signal::SigSet::empty())?;
    let mut defaults = nix::sys::signal::SigSet::empty();
    defaults.add(nix::sys::signal::Signal::SIGPIPE);
    attr.set_sigdefault(&defaults)?;
    // A session of its own: holo can end the plugin's process group,
    // and find every process it started (they stay in the session unless
    // meant to outlive it) when it must kill what is left. A terminal's
    // Ctrl-C reaches holo alone, which passes it on.
    attr.set_flags(
        PosixSpawnFlags::POSIX_SPAWN_SETSIGMASK
            | PosixSpawnFlags::POSIX_SPAWN_SETSIGDEF
            | PosixSpawnFlags::from_bits_retain(i32::from(libc::POSIX_SPAWN_SETSID)),
    )?;
    Ok(attr)
}

/// Feeds stdin and reads the output pipes until the plugin has exited;
/// then takes only what is already in the pipes. Passes an interrupt on to
/// the plugin's process group, ends it at its timeout, and kills its whole
/// session when it does not end within the grace time.
fn pump(
    mut streams: Streams,
    child: &mut Child,
    limits: &Limits,
    mut sink: impl FnMut(Option<Chunk>),
) -> std::io::Result<Ending> {
    use nix::poll::{PollFd, PollFlags, poll};
    use nix::sys::signal::{Signal, kill};
    use std::time::Instant;
    let mut buffer = vec![0u8; 64 * 1024];
    let mut quiet = false;
    let mut ending = Ending::Exited;
    let mut kill_at: Option<Instant> = None;
    let mut forwarded = false;
    let group = nix::unistd::Pid::from_raw(-child.pid.as_raw());
    loop {
        let now = Instant::now();
        if kill_at.is_some_and(|at| now >= at) {
            crate::interrupt::kill_session(child.pid.as_raw());
            let _ = kill(group, Signal::SIGKILL);
            child.wait(true)?;
            drain_after_exit(&streams.outputs, &mut buffer, &mut sink);
            return Ok(ending);
        }
        let deadline = limits.timeout.map(|limit| limits.started.get() + limit);
        if ending == Ending::Exited && deadline.is_some_and(|at| now >= at) {
            let _ = kill(group, Signal::SIGTERM);
            ending = Ending::TimedOut;
            kill_at = Some(now + limits.grace);
            continue;
        }
        let watch = (!forwarded).then(crate::interrupt::watch_fd).flatten();
        // poll set: outputs, then stdin, then the pidfd, then the interrupt
        let (ready, stdin_ready, exited, signalled) = {
            let mut fds: Vec<PollFd> = streams
                .outputs
                .iter()
                .map(|(_, f)| PollFd::new(f.as_fd(), PollFlags::POLLIN))
                .collect();
            if let Some((fd, _, _)) = &streams.stdin {
                fds.push(PollFd::new(fd.as_fd(), PollFlags::POLLOUT));
            }
            if let Some(fd) = &child.exit {
                fds.push(PollFd::new(fd.as_fd(), PollFlags::POLLIN));
            }
            if let Some(fd) = watch {
                fds.push(PollFd::new(fd, PollFlags::POLLIN));
            }
            let timeout = poll_timeout(
                quiet,
                child.exit.is_some(),
                [deadline.filter(|_| kill_at.is_none()), kill_at],
                now,
            );
            let count = match poll(&mut fds, timeout) {
                Ok(count) => count,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            };
            let is_ready = |f: &PollFd| f.revents().is_some_and(|r| !r.is_empty());
            let outputs = streams.outputs.len();
            let ready: Vec<bool> = fds[..outputs].iter().map(is_ready).collect();
            let mut next = outputs;
            let stdin_ready = streams.stdin.is_some() && is_ready(&fds[next]);
            next += usize::from(streams.stdin.is_some());
            let has_pidfd = child.exit.is_some();
            let pidfd_ready = has_pidfd && is_ready(&fds[next]);
            next += usize::from(has_pidfd);
            let signalled = watch.is_some() && is_ready(&fds[next]);
            drop(fds);
            if count == 0 && !quiet {
                quiet = true;
                sink(None);
                continue;
            }
            let exited = if has_pidfd {
                pidfd_ready
            } else {
                (count == 0 || outputs == 0) && child.wait(false)?.is_some()
            };
            (ready, stdin_ready, exited, signalled)
        };
        quiet = false;
        if signalled {
            forwarded = true;
            if let Some(signal) = crate::interrupt::signal() {
                let _ = kill(group, signal);
                if ending == Ending::Exited {
                    ending = Ending::Interrupted;
                }
                let grace_end = Instant::now() + limits.grace;
                kill_at = Some(kill_at.map_or(grace_end, |at| at.min(grace_end)));
            }
        }
        if stdin_ready {
            feed_stdin(&mut streams.stdin);
        }
        if exited {
            drain_after_exit(&streams.outputs, &mut buffer, &mut sink);
            return Ok(ending);
        }
        read_ready(&mut streams, ready, &mut buffer, &mut sink);
    }
}

/// How long the poll may wait: not at all until it has once found nothing
/// ready (only then is the caller told that the driver is about to wait),
/// then until the child exits (or the next check for it without a pidfd),
/// and never past the deadlines.
fn poll_timeout(
    quiet: bool,
    has_pidfd: bool,
    deadlines: [Option<std::time::Instant>; 2],
    now: std::time::Instant,
) -> nix::poll::PollTimeout {
    use nix::poll::PollTimeout;
    use std::time::Duration;
    let mut wait: Option<Duration> = if !quiet {
        Some(Duration::ZERO)
    } else if has_pidfd {
        None
    } else {
        Some(Duration::from_millis(EXIT_CHECK_INTERVAL_MS.into()))
    };
    for at in deadlines.into_iter().flatten() {
        let left = at.saturating_duration_since(now) + Duration::from_millis(1);
        wait = Some(wait.map_or(left, |wait| wait.min(left)));
    }
    match wait {
        None => PollTimeout::NONE,
        Some(wait) => {
            PollTimeout::try_from(wait.as_millis().min(60_000) as i32).unwrap_or(PollTimeout::MAX)
        }
    }
}

/// Hands what the ready outputs hold to `sink`; those at their end (or
/// failing) are dropped from `streams`.
fn read_ready(
    streams: &mut Streams,
    ready: Vec<bool>,
    buffer: &mut [u8],
    sink: &mut impl FnMut(Option<Chunk>),
) {
    let mut closed = Vec::new();
    for (index, is_ready) in ready.into_iter().enumerate() {
        if !is_ready {
            continue;
        }
        let (tag, file) = &mut streams.outputs[index];
        match file.read(buffer) {
            Ok(0) => closed.push(index),
            Ok(n) => sink(Some(chunk(*tag, &buffer[..n]))),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => closed.push(index),
        }
    }
    for index in closed.into_iter().rev() {
        streams.outputs.remove(index);
    }
}

fn chunk(tag: u8, bytes: &[u8]) -> Chunk<'_> {
    match tag {
        1 => Chunk::Stdout(bytes),
        2 => Chunk::Stderr(bytes),
        _ => Chunk::Fd3(bytes),
    }
}

/// Writes what the pipe takes; closes stdin when all is written or the
/// plugin closed its end.
fn feed_stdin(stdin: &mut Option<(OwnedFd, Vec<u8>, usize)>) {
    let Some((fd, data, written)) = stdin else {
        return;
    };
    loop {
        if *written == data.len() {
            *stdin = None;
            return;
        }
        match nix::unistd::write(&*fd, &data[*written..]) {
            Ok(n) => *written += n,
            Err(nix::errno::Errno::EINTR) => {}
            Err(nix::errno::Errno::EAGAIN) => return,
            Err(_) => {
                *stdin = None;
                return;
            }
        }
    }
}

/// Reads exactly what each pipe holds now, so that a grandchild that keeps
/// writing cannot keep the driver reading.
fn drain_after_exit(
    outputs: &[(u8, std::fs::File)],
    buffer: &mut [u8],
    sink: &mut impl FnMut(Option<Chunk>),
) {
    for (tag, file) in outputs {
        let mut available: libc::c_int = 0;
        // SAFETY: FIONREAD stores the number of readable bytes in `available`.
        if unsafe { libc::ioctl(file.as_raw_fd(), libc::FIONREAD, &mut available) } != 0 {
            continue;
        }
        let mut left = usize::try_from(available).unwrap_or(0);
        while left > 0 {
            let want = left.min(buffer.len());
            match (&*file).read(&mut buffer[..want]) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    left -= n;
                    sink(Some(chunk(*tag, &buffer[..n])));
                }
            }
        }
    }
}

/// Splits plugin stderr into complete lines; a last partial line is
/// completed with a newline at the end. Only new bytes are searched, and a
/// line longer than [`MAX_STDERR_LINE`] is passed on in pieces of about that
/// size (without a newline), so memory stays bounded.
#[derive(Default)]
pub struct StderrLines {
    partial: Vec<u8>,
}

/// See [`StderrLines`].
pub const MAX_STDERR_LINE: usize = 1 << 20;

impl StderrLines {
    pub fn push(&mut self, mut bytes: &[u8], each_line: &mut dyn FnMut(&[u8])) {
        while let Some(offset) = bytes.iter().position(|b| *b == b'\n') {
            let (line, rest) = bytes.split_at(offset + 1);
            if self.partial.is_empty() {
                each_line(line);
            } else {
                self.partial.extend_from_slice(line);
                each_line(&self.partial);
                self.partial.clear();
            }
            bytes = rest;
        }
        self.partial.extend_from_slice(bytes);
        if self.partial.len() >= MAX_STDERR_LINE {
            each_line(&self.partial);
            self.partial.clear();
        }
    }

    pub fn finish(&mut self, each_line: &mut dyn FnMut(&[u8])) {
        if !self.partial.is_empty() {
            let mut rest = std::mem::take(&mut self.partial);
            rest.push(b'\n');
            each_line(&rest);
        }
    }
}

/// Go's `strconv.Atoi`, with its error text (Holo 3 prints it as is).
fn go_atoi(value: &str) -> Result<i64, String> {
    let digits = value.strip_prefix(['+', '-']).unwrap_or(value);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("strconv.Atoi: parsing \"{value}\": invalid syntax"));
    }
    value
        .parse()
        .map_err(|_| format!("strconv.Atoi: parsing \"{value}\": value out of range"))
}

/// `KEY=VALUE` lines; others are ignored, as in Holo 3.
pub fn parse_info(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter_map(|line| line.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Go's `ExitError` text: `exit status N` or `signal: killed`.
pub fn describe_status(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exit status {code}");
    }
    match status.signal() {
        Some(signal) => {
            let name = nix::sys::signal::Signal::try_from(signal)
                .map(signal_text)
                .unwrap_or_else(|_| format!("signal {signal}"));
            let core = if status.core_dumped() {
                " (core dumped)"
            } else {
                ""
            };
            format!("signal: {name}{core}")
        }
        None => "exit status unknown".to_string(),
    }
}

/// Go's names for signals (`syscall.Signal.String()` on Linux).
fn signal_text(signal: nix::sys::signal::Signal) -> String {
    use nix::sys::signal::Signal::*;
    match signal {
        SIGHUP => "hangup",
        SIGINT => "interrupt",
        SIGQUIT => "quit",
        SIGILL => "illegal instruction",
        SIGTRAP => "trace/breakpoint trap",
        SIGABRT => "aborted",
        SIGBUS => "bus error",
        SIGFPE => "floating point exception",
        SIGKILL => "killed",
        SIGUSR1 => "user defined signal 1",
        SIGSEGV => "segmentation fault",
        SIGUSR2 => "user defined signal 2",
        SIGPIPE => "broken pipe",
        SIGALRM => "alarm clock",
        SIGTERM => "terminated",
        SIGSTKFLT => "stack fault",
        SIGCHLD => "child exited",
        SIGCONT => "continued",
        SIGSTOP => "stopped (signal)",
        SIGTSTP => "stopped",
        SIGTTIN => "stopped (tty input)",
        SIGTTOU => "stopped (tty output)",
        SIGURG => "urgent I/O condition",
        SIGXCPU => "CPU time limit exceeded",
        SIGXFSZ => "file size limit exceeded",
        SIGVTALRM => "virtual timer expired",
        SIGPROF => "profiling timer expired",
        SIGWINCH => "window changed",
        SIGIO => "I/O possible",
        SIGPWR => "power failure",
        SIGSYS => "bad system call",
        _ => return format!("signal {}", signal as i32),
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_lines() {
        let info =
            parse_info("MIN_API_VERSION=3\nMAX_API_VERSION=3\nEXTENSIONS=noop,batch\njunk\n");
        assert_eq!(info["MIN_API_VERSION"], "3");
        assert_eq!(info["EXTENSIONS"], "noop,batch");
        assert_eq!(info.len(), 3);
    }

    #[test]
    fn atoi_errors_read_like_go() {
        assert_eq!(go_atoi("3"), Ok(3));
        assert_eq!(go_atoi("+3"), Ok(3));
        assert_eq!(go_atoi("-1"), Ok(-1));
        assert_eq!(
            go_atoi(""),
            Err("strconv.Atoi: parsing \"\": invalid syntax".to_string())
        );
        assert_eq!(
            go_atoi("3.0"),
            Err("strconv.Atoi: parsing \"3.0\": invalid syntax".to_string())
        );
        assert_eq!(
            go_atoi("99999999999999999999"),
            Err("strconv.Atoi: parsing \"99999999999999999999\": value out of range".to_string())
        );
    }

    #[test]
    fn stderr_lines_split_and_complete_the_last_line() {
        let mut lines = StderrLines::default();
        let mut seen: Vec<Vec<u8>> = Vec::new();
        lines.push(b"a\nb", &mut |l| seen.push(l.to_vec()));
        lines.push(b"c\n\nd", &mut |l| seen.push(l.to_vec()));
        lines.finish(&mut |l| seen.push(l.to_vec()));
        assert_eq!(
            seen,
            vec![
                b"a\n".to_vec(),
                b"bc\n".to_vec(),
                b"\n".to_vec(),
                b"d\n".to_vec()
            ]
        );
    }

    #[test]
    fn a_long_stderr_line_is_passed_on_in_pieces() {
        let mut lines = StderrLines::default();
        let mut seen: Vec<usize> = Vec::new();
        let chunk = vec![b'x'; 1 << 16];
        for _ in 0..(MAX_STDERR_LINE >> 16) + 1 {
            lines.push(&chunk, &mut |l| seen.push(l.len()));
        }
        lines.push(b"\n", &mut |l| seen.push(l.len()));
        lines.finish(&mut |l| seen.push(l.len()));
        assert_eq!(seen, vec![MAX_STDERR_LINE, (1 << 16) + 1]);
    }

    #[test]
    fn signal_texts_read_like_go() {
        assert_eq!(describe_status(ExitStatus::from_raw(9)), "signal: killed");
        assert_eq!(
            describe_status(ExitStatus::from_raw(10)),
            "signal: user defined signal 1"
        );
        assert_eq!(
            describe_status(ExitStatus::from_raw(11 | 0x80)),
            "signal: segmentation fault (core dumped)"
        );
        assert_eq!(
            describe_status(ExitStatus::from_raw(3 << 8)),
            "exit status 3"
        );
    }

    #[test]
    fn relative_binaries_stay_in_the_working_directory() {
        assert_eq!(executable_path("holo-foo"), "./holo-foo");
        assert_eq!(executable_path("bin/holo-foo"), "bin/holo-foo");
    }
}
