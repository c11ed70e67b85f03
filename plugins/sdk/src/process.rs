//! The one process runner every plugin uses: argv without a shell or
//! `/bin/sh -c`, a working directory, extra environment and `PATH`, a timeout
//! that kills the whole process group, the exit status returned (never turned
//! into an error by itself), and stdout/stderr captured or streamed by line.
//!
//! A command that leaves a background process behind (`sh -c 'daemon &'`)
//! does not hang the runner: once the command itself has exited, the runner
//! takes what is already in the pipes and returns, whoever else still holds
//! them. [`spawn_detached`] starts a long-lived process (a daemon, QEMU) that
//! holds none of the plugin's descriptors at all.
//!
//! Memory stays bounded whatever a command prints: lines are handed on as
//! they arrive (a line longer than [`MAX_LINE_PIECE`] in pieces of about
//! that size), and only the last bytes of each stream are kept for the
//! result ([`Command::keep_output`]).
//!
//! Once [`handle_interrupts`] is installed (the SDK does it for every
//! plugin), SIGTERM, SIGINT or SIGHUP is passed on to the process group of
//! the running command; after [`INTERRUPT_GRACE`] the group is killed. The
//! run then fails with "interrupted by SIGTERM", and no further command
//! starts.

use std::ffi::{OsStr, OsString};
use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read};
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use process_wrap::std::{ChildWrapper, CommandWrap, ProcessGroup, ProcessSession};

use crate::command::command_line;
use crate::error::{Error, Result};

/// Which of the command's output streams a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it (not ours).
    Signaled(i32),
    /// It outlived its timeout; its whole process group was killed.
    TimedOut,
}

impl Status {
    /// True for exit code 0.
    pub fn success(self) -> bool {
        self == Status::Exited(0)
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::Exited(code) => write!(f, "exit code {code}"),
            Status::Signaled(signal) => match nix::sys::signal::Signal::try_from(*signal) {
                Ok(name) => write!(f, "signal {name}"),
                Err(_) => write!(f, "signal {signal}"),
            },
            Status::TimedOut => f.write_str("a timeout"),
        }
    }
}

/// What a finished command left behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    pub status: Status,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Whether stdout is only the last part of what the command printed.
    pub stdout_cut: bool,
}

impl Finished {
    /// Stdout for a parser, which must never see a tail as if it were the
    /// whole (a first line cut in two, records missing).
    pub fn whole_stdout(&self, command: &str) -> Result<&[u8]> {
        if self.stdout_cut {
            return Err(Error::new(format!(
                "{command} printed more on stdout than is kept to be read (only its end was); run it by hand to see why"
            )));
        }
        Ok(&self.stdout)
    }

    /// True for exit code 0.
    pub fn success(&self) -> bool {
        self.status.success()
    }

    /// The last `count` lines of stderr, for error messages.
    pub fn stderr_tail(&self, count: usize) -> String {
        let text = String::from_utf8_lossy(&self.stderr);
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(count)..].join("\n")
    }
}

/// A command to run: a program and its arguments, or a shell script.
#[derive(Debug, Clone)]
pub struct Command {
    program: OsString,
    args: Vec<OsString>,
    cwd: Option<PathBuf>,
    /// Variables to set (`Some`) or remove (`None`), in order.
    env: Vec<(OsString, Option<OsString>)>,
    timeout: Option<Duration>,
    /// How many bytes of each stream the result keeps (the last ones).
    keep_output: Option<usize>,
    /// A file the command reads as stdin (else `/dev/null`).
    stdin: Option<PathBuf>,
}

/// What [`Command::run`] keeps of each stream by default: callers parse it,
/// so it is large, but still a bound.
pub const RUN_KEEP_OUTPUT: usize = 64 << 20;

/// What [`Command::run_streaming`] keeps of each stream by default: the
/// lines went to the callback, the tail is for error messages.
pub const STREAMED_KEEP_OUTPUT: usize = 64 << 10;

/// A line longer than this is handed on in pieces of about this size, so
/// that one endless line never has to fit in memory.
pub const MAX_LINE_PIECE: usize = 1 << 20;

/// How long a command has to end after the signal that interrupted the
/// plugin was passed on to it, before its process group is killed.
pub const INTERRUPT_GRACE: Duration = Duration::from_secs(5);

impl Command {
    /// `program` with no arguments yet, run without a shell (looked up in
    /// `PATH` when it has no slash).
    pub fn new(program: impl AsRef<OsStr>) -> Command {
        Command {
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            cwd: None,
            env: Vec::new(),
            timeout: None,
            keep_output: None,
            stdin: None,
        }
    }

    /// `/bin/sh -c SCRIPT`.
    pub fn shell(script: impl AsRef<OsStr>) -> Command {
        Command::new("/bin/sh").arg("-c").arg(script)
    }

    /// A command from an argv (`argv[0]` is the program).
    pub fn from_argv<S: AsRef<OsStr>>(argv: &[S]) -> Result<Command> {
        let Some((program, args)) = argv.split_first() else {
            return Err(Error::new("cannot run an empty command line"));
        };
        Ok(Command::new(program).args(args))
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Command {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub fn args<S: AsRef<OsStr>>(mut self, args: impl IntoIterator<Item = S>) -> Command {
        self.args
            .extend(args.into_iter().map(|arg| arg.as_ref().to_owned()));
        self
    }

    /// The working directory.
    pub fn cwd(mut self, dir: impl AsRef<Path>) -> Command {
        self.cwd = Some(dir.as_ref().to_owned());
        self
    }

    /// One more environment variable (added to the inherited ones).
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Command {
        self.env
            .push((key.as_ref().to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    /// Removes an inherited environment variable.
    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Command {
        self.env.push((key.as_ref().to_owned(), None));
        self
    }

    /// `PATH` for the command and for finding its program.
    pub fn path<P: AsRef<Path>>(self, dirs: &[P]) -> Command {
        let joined = std::env::join_paths(dirs.iter().map(AsRef::as_ref))
            .unwrap_or_else(|_| OsString::from("/usr/sbin:/usr/bin:/sbin:/bin"));
        self.env("PATH", joined)
    }

    /// Kill the whole process group after `limit`; the status is then
    /// [`Status::TimedOut`].
    pub fn timeout(mut self, limit: Duration) -> Command {
        self.timeout = Some(limit);
        self
    }

    /// Keep only the last `bytes` of stdout and of stderr in the result
    /// (defaults: [`RUN_KEEP_OUTPUT`], [`STREAMED_KEEP_OUTPUT`]).
    pub fn keep_output(mut self, bytes: usize) -> Command {
        self.keep_output = Some(bytes);
        self
    }

    /// Stdin from the file at `path` (a filter's input) instead of `/dev/null`.
    pub fn stdin_file(mut self, path: impl AsRef<Path>) -> Command {
        self.stdin = Some(path.as_ref().to_owned());
        self
    }

    /// The command line, shell-quoted, for messages.
    pub fn command_line(&self) -> String {
        let mut argv = vec![self.program.to_string_lossy().into_owned()];
        argv.extend(self.args.iter().map(|a| a.to_string_lossy().into_owned()));
        command_line(&argv)
    }

    fn std_command(&self) -> std::process::Command {
        // A command may change any directory entry.
        crate::root_fs::entries_changed();
        let mut command = std::process::Command::new(&self.program);
        command.args(&self.args).stdin(Stdio::null());
        if let Some(dir) = &self.cwd {
            command.current_dir(dir);
        }
        for (key, value) in &self.env {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        command
    }

    /// [`Command::std_command`] for a command the plugin waits for: it
    /// gets SIGKILL when the plugin dies, so that a killed plugin leaves no
    /// command running.
    fn supervised_command(&self) -> std::process::Command {
        let mut command = self.std_command();
        // SAFETY: prctl is a plain syscall, async-signal-safe.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                Ok(())
            });
        }
        command
    }

    fn spawn_error(&self, err: &std::io::Error) -> Error {
        let hint = match err.kind() {
            ErrorKind::NotFound => "; check that the program is installed and on PATH",
            ErrorKind::PermissionDenied => "; check that it is executable",
            _ => "",
        };
        let place = match &self.cwd {
            Some(dir) if err.kind() == ErrorKind::NotFound && !dir.is_dir() => {
                format!(" (working directory {} does not exist)", dir.display())
            }
            _ => String::new(),
        };
        Error::new(format!(
            "cannot run {}: {err}{place}{hint}",
            self.command_line()
        ))
    }

    /// Runs the command with stdout and stderr captured (the last
    /// [`RUN_KEEP_OUTPUT`] bytes of each unless [`Command::keep_output`]).
    pub fn run(&self) -> Result<Finished> {
        self.run_lines(self.keep_output.unwrap_or(RUN_KEEP_OUTPUT), |_, _| {})
    }

    /// Runs the command; `on_line` sees every line of stdout and stderr as it
    /// arrives (a last line without a newline included, a very long line in
    /// pieces of about [`MAX_LINE_PIECE`]). The result keeps the last
    /// [`STREAMED_KEEP_OUTPUT`] bytes of each stream unless
    /// [`Command::keep_output`] says otherwise.
    pub fn run_streaming(&self, on_line: impl FnMut(Stream, &[u8])) -> Result<Finished> {
        self.run_lines(self.keep_output.unwrap_or(STREAMED_KEEP_OUTPUT), on_line)
    }

    fn run_lines(&self, keep: usize, mut on_line: impl FnMut(Stream, &[u8])) -> Result<Finished> {
        self.refuse_when_interrupted()?;
        let mut command = self.supervised_command();
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        if let Some(path) = &self.stdin {
            let input = File::open(path).map_err(|err| Error::io("open", path, &err))?;
            command.stdin(input);
        }
        let mut wrapped = CommandWrap::from(command);
        wrapped.wrap(ProcessGroup::leader());
        let mut child = wrapped.spawn().map_err(|err| self.spawn_error(&err))?;
        let stdout = child.stdout().take().map(OwnedFd::from);
        let stderr = child.stderr().take().map(OwnedFd::from);
        let mut pipes = [
            Pipe::new(Stream::Stdout, stdout, keep),
            Pipe::new(Stream::Stderr, stderr, keep),
        ];
        let status = self.supervise(&mut *child, &mut pipes, &mut on_line)?;
        // The command is gone: take what is already buffered, but never wait
        // for a background process that still holds the pipes.
        for pipe in &mut pipes {
            pipe.drain_nonblocking(&mut on_line);
            pipe.finish(&mut on_line);
        }
        let status = status?;
        let [out, err] = pipes;
        Ok(Finished {
            status,
            stdout_cut: out.captured.cut,
            stdout: out.captured.into_vec(),
            stderr: err.captured.into_vec(),
        })
    }

    /// Waits for the command while handling its output; kills its group at
    /// the timeout, and passes an interrupt on to it. The inner error is an
    /// interrupt (returned once the output is drained).
    fn supervise(
        &self,
        child: &mut dyn ChildWrapper,
        pipes: &mut [Pipe],
        on_line: &mut impl FnMut(Stream, &[u8]),
    ) -> Result<Result<Status>> {
        let exited = ExitWatch::new(child.id());
        let deadline = self.timeout.map(|limit| Instant::now() + limit);
        let group = nix::unistd::Pid::from_raw(-(child.id() as libc::pid_t));
        // The signal passed on, and when the group gets SIGKILL.
        let mut interrupt: Option<(i32, Instant)> = None;
        loop {
            if let Some(status) = try_wait_leader(child.id()).map_err(|e| self.wait_error(&e))? {
                return Ok(match interrupt {
                    Some((signal, _)) => {
                        // What the command left behind in its group goes too.
                        let _ = nix::sys::signal::kill(group, nix::sys::signal::Signal::SIGKILL);
                        Err(self.interrupted_error(signal))
                    }
                    None => Ok(status),
                });
            }
            let now = Instant::now();
            if let Some((signal, kill_at)) = interrupt {
                if now >= kill_at {
                    kill_group(child);
                    return Ok(Err(self.interrupted_error(signal)));
                }
            } else if let Some(signal) = interrupted_by() {
                if let Ok(signal) = nix::sys::signal::Signal::try_from(signal) {
                    let _ = nix::sys::signal::kill(group, signal);
                }
                interrupt = Some((signal, now + INTERRUPT_GRACE));
                continue;
            } else if deadline.is_some_and(|at| now >= at) {
                kill_group(child);
                return Ok(Ok(Status::TimedOut));
            }
            let until = match interrupt {
                Some((_, kill_at)) => Some(kill_at),
                None => deadline,
            };
            let wait = until.map(|at| at.saturating_duration_since(now));
            wait_for_events(pipes, &exited, wait, interrupt.is_none(), on_line);
        }
    }

    fn refuse_when_interrupted(&self) -> Result<()> {
        match interrupted_by() {
            Some(signal) => Err(Error::new(format!(
                "interrupted by {}; {} was not started",
                signal_name(signal),
                self.command_line()
            ))),
            None => Ok(()),
        }
    }

    fn interrupted_error(&self, signal: i32) -> Error {
        Error::new(format!(
            "interrupted by {}; {} and its process group were ended",
            signal_name(signal),
            self.command_line()
        ))
    }

    /// Runs the command with stdout and stderr going where the plugin's go
    /// (so the driver, or a batch, shows them as the plugin's output).
    pub fn run_forwarded(&self) -> Result<Status> {
        self.refuse_when_interrupted()?;
        let mut wrapped = CommandWrap::from(self.supervised_command());
        wrapped.wrap(ProcessGroup::leader());
        let mut child = wrapped.spawn().map_err(|err| self.spawn_error(&err))?;
        self.supervise(&mut *child, &mut [], &mut |_, _| {})?
    }

    /// Runs the command with its output forwarded, like
    /// [`Command::run_forwarded`], for callers to whom anything but exit
    /// code 0 is a failure: the error names the command line and the status.
    pub fn run_forwarded_checked(&self) -> Result<()> {
        match self.run_forwarded()? {
            Status::Exited(0) => Ok(()),
            status => Err(Error::new(format!(
                "{} failed with {status}",
                self.command_line()
            ))),
        }
    }

    fn wait_error(&self, err: &std::io::Error) -> Error {
        Error::new(format!("cannot wait for {}: {err}", self.command_line()))
    }
}

/// A process started by [`spawn_detached`].
#[derive(Debug)]
pub struct Detached {
    child: Box<dyn ChildWrapper>,
}

impl Detached {
    /// Its process id (also its session and process group id).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `Some(status)` once it has exited (it is then reaped), else `None`.
    pub fn try_wait(&mut self) -> Result<Option<Status>> {
        try_wait_leader(self.pid())
            .map_err(|err| Error::new(format!("cannot wait for process {}: {err}", self.pid())))
    }
}

/// Reaps the command itself (the group leader) if it has exited. Only its
/// pid is waited for: a plugin that is a child subreaper (a batch) also
/// inherits the command's background children, and waiting for the whole
/// group would mistake them for the command.
fn try_wait_leader(pid: u32) -> std::io::Result<Option<Status>> {
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    let pid = nix::unistd::Pid::from_raw(pid as libc::pid_t);
    loop {
        match waitpid(pid, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(_, code)) => return Ok(Some(Status::Exited(code))),
            Ok(WaitStatus::Signaled(_, signal, _)) => {
                return Ok(Some(Status::Signaled(signal as i32)));
            }
            Ok(_) => return Ok(None),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(errno) => return Err(std::io::Error::from(errno)),
        }
    }
}

/// Kills the command's whole process group (so children it put in the
/// background go too) and reaps the command.
fn kill_group(child: &mut dyn ChildWrapper) {
    let _ = child.start_kill();
    let pid = nix::unistd::Pid::from_raw(child.id() as libc::pid_t);
    while let Err(nix::errno::Errno::EINTR) = nix::sys::wait::waitpid(pid, None) {}
}

/// The write end of the self-pipe that wakes a waiting runner, and the
/// first interrupting signal (0 for none).
static INTERRUPT_WAKE: AtomicI32 = AtomicI32::new(-1);
static INTERRUPT_WATCH: AtomicI32 = AtomicI32::new(-1);
static INTERRUPT_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_interrupt(signal: libc::c_int) {
    let _ = INTERRUPT_SIGNAL.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
    let fd = INTERRUPT_WAKE.load(Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: write(2) is async-signal-safe; the pipe is never closed.
        unsafe { libc::write(fd, b"!".as_ptr().cast(), 1) };
    }
}

/// The run's lock (FD 4, the `run-lock` extension) stays with the plugin:
/// a later run waits for the plugin, never for a daemon or VM that one of
/// its commands left running.
pub(crate) fn keep_run_lock_from_commands() {
    // SAFETY: fcntl on a descriptor number changes only its flags; on a
    // closed FD 4 it fails with EBADF, which is fine.
    unsafe {
        libc::fcntl(holo_protocol::RUN_LOCK_FD, libc::F_SETFD, libc::FD_CLOEXEC);
    }
}

/// From now on SIGTERM, SIGINT and SIGHUP no longer end the process at
/// once: they end the running command's process group (see the module
/// documentation), and every later command is refused. Code that runs long
/// without commands asks [`interrupted_by`] between steps.
pub fn handle_interrupts() -> Result<()> {
    use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
    if INTERRUPT_WAKE.load(Ordering::SeqCst) < 0 {
        let (watch, wake) =
            nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC | nix::fcntl::OFlag::O_NONBLOCK)
                .map_err(|err| Error::new(format!("cannot create the interrupt pipe: {err}")))?;
        INTERRUPT_WATCH.store(watch.into_raw_fd(), Ordering::SeqCst);
        INTERRUPT_WAKE.store(wake.into_raw_fd(), Ordering::SeqCst);
    }
    let action = SigAction::new(
        SigHandler::Handler(on_interrupt),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for signal in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        // SAFETY: the handler only touches atomics and calls write(2).
        unsafe { sigaction(signal, &action) }
            .map_err(|err| Error::new(format!("cannot handle {signal}: {err}")))?;
    }
    Ok(())
}

/// The signal that interrupted the plugin, if one did.
pub fn interrupted_by() -> Option<i32> {
    match INTERRUPT_SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal),
    }
}

/// `SIGTERM`, `SIGINT`, … for messages.
pub fn signal_name(signal: i32) -> String {
    match nix::sys::signal::Signal::try_from(signal) {
        Ok(signal) => signal.as_str().to_string(),
        Err(_) => format!("signal {signal}"),
    }
}

/// Starts a long-lived process that outlives the plugin: in a new session,
/// stdin from /dev/null, stdout and stderr appended to `log`, and no other
/// descriptor of the plugin (not even the driver's FD 3), so that it never
/// holds a pipe of `holo` open. The timeout of `command` is ignored.
pub fn spawn_detached(command: &Command, log: &Path) -> Result<Detached> {
    spawn_detached_inner(command, log, None)
}

/// [`spawn_detached`], and the child writes its [`PidRecord`] to
/// `pid_file` before it execs: the process is on record before it runs,
/// however soon the caller is killed. When the record cannot be written,
/// nothing is started.
///
/// [`PidRecord`]: crate::pid_record::PidRecord
pub fn spawn_detached_recorded(command: &Command, log: &Path, pid_file: &Path) -> Result<Detached> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(pid_file.as_os_str().as_bytes())
        .map_err(|_| Error::new(format!("{} holds a NUL byte", pid_file.display())))?;
    spawn_detached_inner(command, log, Some(path))
        .map_err(|err| Error::new(format!("{err} (pid file {})", pid_file.display())))
}

fn spawn_detached_inner(
    command: &Command,
    log: &Path,
    pid_file: Option<std::ffi::CString>,
) -> Result<Detached> {
    let log_file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|err| Error::io("open the log file", log, &err))?;
    let log_copy = log_file
        .try_clone()
        .map_err(|err| Error::io("open the log file", log, &err))?;
    let mut std_command = command.std_command();
    std_command
        .stdout(Stdio::from(log_file))
        .stderr(Stdio::from(log_copy));
    // SAFETY: close_range is a plain syscall, async-signal-safe; it runs in
    // the child after the stdio descriptors are in place.
    // write_own_record uses only raw system calls and stack buffers.
    unsafe {
        std_command.pre_exec(move || {
            close_descriptors_from(3);
            match &pid_file {
                Some(path) => crate::pid_record::write_own_record(path),
                None => Ok(()),
            }
        });
    }
    let mut wrapped = CommandWrap::from(std_command);
    wrapped.wrap(ProcessSession);
    let child = wrapped.spawn().map_err(|err| command.spawn_error(&err))?;
    Ok(Detached { child })
}

/// Closes every descriptor from `first` up (in a child before exec).
fn close_descriptors_from(first: u32) {
    // SAFETY: raw syscalls on descriptors we own in the child.
    let done = unsafe { libc::syscall(libc::SYS_close_range, first, u32::MAX, 0) } == 0;
    if !done {
        let limit = unsafe { libc::sysconf(libc::_SC_OPEN_MAX) }.clamp(256, 65536);
        for fd in first as libc::c_long..limit {
            unsafe { libc::close(fd as libc::c_int) };
        }
    }
}

/// A pidfd that becomes readable when the process exits, so the runner
/// sleeps in poll instead of polling `waitpid` (falls back to short sleeps
/// on kernels without pidfd_open).
struct ExitWatch(Option<OwnedFd>);

impl ExitWatch {
    fn new(pid: u32) -> ExitWatch {
        // SAFETY: pidfd_open returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        ExitWatch((fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) }))
    }
}

/// The last `limit` bytes of a stream. Appending is amortised linear: the
/// front is cut only once the buffer holds twice the limit.
struct Tail {
    bytes: Vec<u8>,
    limit: usize,
    /// Bytes were dropped from the front.
    cut: bool,
}

impl Tail {
    fn push(&mut self, data: &[u8]) {
        self.cut |= self.bytes.len() + data.len() > self.limit;
        if data.len() >= self.limit {
            self.bytes.clear();
            self.bytes
                .extend_from_slice(&data[data.len() - self.limit..]);
            return;
        }
        self.bytes.extend_from_slice(data);
        if self.bytes.len() > 2 * self.limit {
            let cut = self.bytes.len() - self.limit;
            self.bytes.drain(..cut);
        }
    }

    fn into_vec(mut self) -> Vec<u8> {
        let cut = self.bytes.len().saturating_sub(self.limit);
        self.bytes.drain(..cut);
        self.bytes
    }
}

/// One output pipe of the command: the kept tail, plus the partial line
/// not yet handed to the line callback.
struct Pipe {
    stream: Stream,
    fd: Option<File>,
    captured: Tail,
    /// Bytes after the last newline, never more than about [`MAX_LINE_PIECE`].
    partial: Vec<u8>,
}

impl Pipe {
    fn new(stream: Stream, fd: Option<OwnedFd>, keep: usize) -> Pipe {
        Pipe {
            stream,
            fd: fd.map(File::from),
            captured: Tail {
                bytes: Vec::new(),
                limit: keep,
                cut: false,
            },
            partial: Vec::new(),
        }
    }

    /// Reads once; closes the pipe at end of file.
    fn read_some(&mut self, on_line: &mut impl FnMut(Stream, &[u8])) -> std::io::Result<usize> {
        let Some(file) = self.fd.as_mut() else {
            return Ok(0);
        };
        let mut buffer = [0u8; 65536];
        match file.read(&mut buffer) {
            Ok(0) => {
                self.fd = None;
                Ok(0)
            }
            Ok(n) => {
                self.captured.push(&buffer[..n]);
                self.emit_lines(&buffer[..n], on_line);
                Ok(n)
            }
            Err(err) if err.kind() == ErrorKind::Interrupted => Ok(1),
            Err(err) => {
                if err.kind() != ErrorKind::WouldBlock {
                    self.fd = None;
                }
                Err(err)
            }
        }
    }

    /// Hands on the lines that `data` completes; only `data` is scanned.
    fn emit_lines(&mut self, data: &[u8], on_line: &mut impl FnMut(Stream, &[u8])) {
        let mut start = 0;
        while let Some(pos) = data[start..].iter().position(|&b| b == b'\n') {
            let end = start + pos + 1;
            if self.partial.is_empty() {
                on_line(self.stream, &data[start..end]);
            } else {
                self.partial.extend_from_slice(&data[start..end]);
                on_line(self.stream, &self.partial);
                self.partial.clear();
            }
            start = end;
        }
        self.partial.extend_from_slice(&data[start..]);
        if self.partial.len() >= MAX_LINE_PIECE {
            on_line(self.stream, &self.partial);
            self.partial.clear();
        }
    }

    fn drain_nonblocking(&mut self, on_line: &mut impl FnMut(Stream, &[u8])) {
        if let Some(file) = &self.fd {
            let _ = nix::fcntl::fcntl(
                file.as_fd(),
                nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
            );
        }
        while self.fd.is_some() {
            match self.read_some(on_line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        self.fd = None;
    }

    fn finish(&mut self, on_line: &mut impl FnMut(Stream, &[u8])) {
        if !self.partial.is_empty() {
            on_line(self.stream, &self.partial);
            self.partial.clear();
        }
    }
}

/// Sleeps until output arrives on a pipe, the process exits, or `limit`
/// passes; handles the output that arrived.
fn wait_for_events(
    pipes: &mut [Pipe],
    exited: &ExitWatch,
    limit: Option<Duration>,
    watch_interrupt: bool,
    on_line: &mut impl FnMut(Stream, &[u8]),
) {
    // Without a pidfd, wake up often to look at the process.
    let fallback = Duration::from_millis(5);
    let limit = match (&exited.0, limit) {
        (Some(_), limit) => limit,
        (None, Some(limit)) => Some(limit.min(fallback)),
        (None, None) => Some(fallback),
    };
    let timeout = match limit {
        Some(limit) => PollTimeout::try_from(limit.as_millis().min(60_000) as i32 + 1)
            .unwrap_or(PollTimeout::MAX),
        None => PollTimeout::NONE,
    };
    // Only the pipes still open are polled.
    let (open, mut fds): (Vec<usize>, Vec<PollFd>) = pipes
        .iter()
        .enumerate()
        .filter_map(|(i, pipe)| {
            let fd = pipe.fd.as_ref()?;
            Some((i, PollFd::new(fd.as_fd(), PollFlags::POLLIN)))
        })
        .unzip();
    if let Some(pidfd) = &exited.0 {
        fds.push(PollFd::new(pidfd.as_fd(), PollFlags::POLLIN));
    }
    let watch = INTERRUPT_WATCH.load(Ordering::SeqCst);
    if watch_interrupt && watch >= 0 {
        // SAFETY: the watch end of the interrupt pipe is never closed.
        let watch = unsafe { BorrowedFd::borrow_raw(watch) };
        fds.push(PollFd::new(watch, PollFlags::POLLIN));
    }
    if poll(&mut fds, timeout).unwrap_or(0) <= 0 {
        return;
    }
    let ready: Vec<bool> = fds[..open.len()]
        .iter()
        .map(|fd| fd.revents().is_some_and(|r| !r.is_empty()))
        .collect();
    drop(fds);
    for (index, ready) in open.into_iter().zip(ready) {
        if ready {
            let _ = pipes[index].read_some(on_line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn exit_status_is_returned_not_an_error() {
        let done = Command::shell("echo out; echo err >&2; exit 3")
            .run()
            .expect("runs");
        assert_eq!(done.status, Status::Exited(3));
        assert_eq!(done.stdout, b"out\n");
        assert_eq!(done.stderr, b"err\n");
        assert_eq!(done.stderr_tail(5), "err");
    }

    #[test]
    fn argv_is_not_split_by_a_shell() {
        let done = Command::new("printf")
            .args(["%s|", "a b", "$USER"])
            .run()
            .expect("runs");
        assert_eq!(done.stdout, b"a b|$USER|");
    }

    #[test]
    fn cwd_env_and_path_reach_the_command() {
        let dir = tempfile::tempdir().expect("tempdir");
        let done = Command::shell("pwd; echo $GREETING; echo ${HOME:-no home}; echo $PATH")
            .cwd(dir.path())
            .env("GREETING", "hello")
            .env_remove("HOME")
            .path(&["/usr/bin", "/bin"])
            .run()
            .expect("runs");
        let expected = format!("{}\nhello\nno home\n/usr/bin:/bin\n", dir.path().display());
        assert_eq!(String::from_utf8_lossy(&done.stdout), expected);
    }

    #[test]
    fn lines_stream_in_order_with_the_last_partial_line() {
        let mut lines = Vec::new();
        let done = Command::shell("echo one; echo two >&2; printf three")
            .run_streaming(|stream, line| lines.push((stream, line.to_vec())))
            .expect("runs");
        assert!(done.success());
        assert!(lines.contains(&(Stream::Stdout, b"one\n".to_vec())));
        assert!(lines.contains(&(Stream::Stderr, b"two\n".to_vec())));
        // The last partial line comes too; across streams order is not kept.
        let stdout_lines: Vec<&[u8]> = lines
            .iter()
            .filter(|(stream, _)| *stream == Stream::Stdout)
            .map(|(_, line)| line.as_slice())
            .collect();
        assert_eq!(stdout_lines, [b"one\n".as_slice(), b"three".as_slice()]);
    }

    #[test]
    fn timeout_kills_the_whole_process_group() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pidfile = dir.path().join("pid");
        let script = format!("sleep 600 & echo $! > {}; wait", pidfile.display());
        let started = Instant::now();
        let done = Command::shell(script)
            .timeout(Duration::from_millis(300))
            .run()
            .expect("runs");
        assert_eq!(done.status, Status::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(10));
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .expect("pid file")
            .trim()
            .parse()
            .expect("pid");
        // The backgrounded sleep was in the group: it is gone (or a zombie
        // about to be reaped by init).
        std::thread::sleep(Duration::from_millis(100));
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(state.is_empty() || state.contains(") Z"), "{state}");
    }

    #[test]
    fn a_background_child_holding_the_pipes_does_not_hang_the_runner() {
        let started = Instant::now();
        let done = Command::shell("echo started; sleep 600 & echo $! >&2")
            .run()
            .expect("runs");
        assert!(done.success());
        assert_eq!(done.stdout, b"started\n");
        assert!(started.elapsed() < Duration::from_secs(10));
        let pid: i32 = String::from_utf8_lossy(&done.stderr)
            .trim()
            .parse()
            .expect("pid");
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }

    #[test]
    fn only_the_tail_of_the_output_is_kept() {
        let done = Command::shell("seq 1 100000")
            .keep_output(13)
            .run()
            .expect("runs");
        assert_eq!(done.stdout, b"99999\n100000\n");
        assert!(done.stdout_cut);
        assert!(done.whole_stdout("seq").is_err());
        let whole = Command::shell("seq 1 2")
            .keep_output(13)
            .run()
            .expect("runs");
        assert!(!whole.stdout_cut);
        assert_eq!(whole.whole_stdout("seq").expect("whole"), b"1\n2\n");
        let mut tail = Tail {
            bytes: Vec::new(),
            limit: 4,
            cut: false,
        };
        tail.push(b"ab");
        assert!(!tail.cut);
        for piece in [&b"cdef"[..], b"g", b"hijklmnop", b"q"] {
            tail.push(piece);
        }
        assert!(tail.cut);
        assert_eq!(tail.into_vec(), b"nopq");
    }

    #[test]
    fn a_long_line_is_handed_on_in_pieces() {
        let mut pipe = Pipe::new(Stream::Stdout, None, 16);
        let mut pieces: Vec<Vec<u8>> = Vec::new();
        let mut on_line = |_: Stream, line: &[u8]| pieces.push(line.to_vec());
        let chunk = vec![b'x'; 1 << 16];
        for _ in 0..(MAX_LINE_PIECE >> 16) + 1 {
            pipe.emit_lines(&chunk, &mut on_line);
        }
        pipe.emit_lines(b"y\nz", &mut on_line);
        pipe.finish(&mut on_line);
        assert_eq!(pieces.len(), 3, "one piece, the rest of the line, the last");
        assert_eq!(pieces[0].len(), MAX_LINE_PIECE);
        assert_eq!(pieces[1], [&chunk[..], b"y\n"].concat());
        assert_eq!(pieces[2], b"z");
    }

    #[test]
    fn checked_runs_name_the_failing_command_line() {
        Command::new("true")
            .run_forwarded_checked()
            .expect("true succeeds");
        let err = Command::shell("exit 3")
            .run_forwarded_checked()
            .expect_err("fails");
        assert_eq!(err.message(), "/bin/sh -c 'exit 3' failed with exit code 3");
    }

    #[test]
    fn missing_programs_and_directories_are_clear_errors() {
        let err = Command::new("/nonexistent/program")
            .run()
            .expect_err("missing");
        assert!(
            err.message().contains("cannot run /nonexistent/program"),
            "{err}"
        );
        assert!(err.message().contains("installed"), "{err}");
        let err = Command::new("true")
            .cwd("/nonexistent/dir")
            .run()
            .expect_err("missing cwd");
        assert!(
            err.message().contains("/nonexistent/dir does not exist"),
            "{err}"
        );
    }

    #[test]
    fn detached_processes_get_a_new_session_a_log_and_no_extra_descriptors() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("daemon.log");
        // An inheritable descriptor 3 in the parent, as the driver's FD 3 is.
        let (read_end, write_end) = nix::unistd::pipe().expect("pipe");
        let raw = write_end.as_raw_fd();
        nix::fcntl::fcntl(
            write_end.as_fd(),
            nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()),
        )
        .expect("inheritable");
        let script = format!(
            "echo session $(cut -d' ' -f6 /proc/$$/stat); test -e /proc/$$/fd/{raw} && echo LEAK; true"
        );
        let mut child = spawn_detached(&Command::shell(script), &log).expect("spawns");
        drop(write_end);
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("waits") {
                break status;
            }
            assert!(started.elapsed() < Duration::from_secs(10));
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(status.success());
        let text = std::fs::read_to_string(&log).expect("log");
        assert!(text.contains(&format!("session {}", child.pid())), "{text}");
        assert!(!text.contains("LEAK"), "{text}");
        // Nobody holds the write end any more: the read end sees EOF.
        let mut rest = Vec::new();
        File::from(read_end).read_to_end(&mut rest).expect("eof");
    }
}
