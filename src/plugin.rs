//! Running plugin binaries: `info`, the environment of plugin interface v3,
//! and a poll loop that streams stdout, stderr and FD 3 as they arrive.

use crate::paths;
use std::collections::{BTreeSet, HashMap};
use std::ffi::{CString, OsString};
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

pub const API_VERSION: u32 = 3;
/// The extensions this driver understands, exported as `HOLO_EXTENSIONS`.
pub const DRIVER_EXTENSIONS: &str = "noop,order,batch,inplace";

/// A plugin that answered `info` compatibly.
#[derive(Debug)]
pub struct Plugin {
    pub id: String,
    /// As Holo 3 prints it.
    pub binary: String,
    pub extensions: BTreeSet<String>,
    /// `KEY=VALUE` for posix_spawn, built once per plugin.
    env: Vec<CString>,
}

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
            env: Vec::new(),
        };
        plugin.env = plugin.environment(dirs);
        let mut stdout = Vec::new();
        let mut stderr = StderrLines::default();
        let status = plugin
            .run(&["info"], &[], None, false, |chunk| match chunk {
                Chunk::Stdout(b) => stdout.extend_from_slice(b),
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
            Err(e) => Some(format!(
                "fork/exec {}: {}",
                self.binary,
                paths::errno_text(e)
            )),
        }
    }

    pub fn has_extension(&self, name: &str) -> bool {
        self.extensions.contains(name)
    }

    /// Points `HOLO_RESOURCE_DIR` elsewhere once the resources are ready
    /// (Holo 3 runs `info` with the static directory, then switches).
    pub fn set_resource_dir(&mut self, dir: &str) {
        const KEY: &[u8] = b"HOLO_RESOURCE_DIR=";
        let mut pair = KEY.to_vec();
        pair.extend_from_slice(dir.as_bytes());
        if let Ok(pair) = CString::new(pair) {
            self.env.retain(|entry| !entry.as_bytes().starts_with(KEY));
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
        set("HOLO_EXTENSIONS", DRIVER_EXTENSIONS);
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
        sink: impl FnMut(Chunk),
    ) -> std::io::Result<ExitStatus> {
        use nix::fcntl::OFlag;
        use nix::spawn::{PosixSpawnAttr, PosixSpawnFileActions, PosixSpawnFlags, posix_spawn};
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

        // Pipes are close-on-exec; the child gets its ends through dup2.
        let (stdin_read, stdin_write) = match stdin {
            Some(_) => {
                let (r, w) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
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
        actions.add_dup2(err_write.as_raw_fd(), 2)?;
        if let Some((_, write)) = &fd3 {
            actions.add_dup2(write.as_raw_fd(), 3)?;
        }
        // The driver blocks SIGINT/SIGTERM/SIGHUP for its cleanup thread and
        // ignores SIGPIPE (Rust runtime); plugins start with the defaults.
        let mut attr = PosixSpawnAttr::init()?;
        attr.set_sigmask(&nix::sys::signal::SigSet::empty())?;
        let mut defaults = nix::sys::signal::SigSet::empty();
        defaults.add(nix::sys::signal::Signal::SIGPIPE);
        attr.set_sigdefault(&defaults)?;
        attr.set_flags(
            PosixSpawnFlags::POSIX_SPAWN_SETSIGMASK | PosixSpawnFlags::POSIX_SPAWN_SETSIGDEF,
        )?;
        let pid = posix_spawn(path.as_c_str(), &actions, &attr, &argv, &envp)?;

        drop((out_write, err_write, stdin_read, null));
        let fd3_read = fd3.map(|(read, write)| {
            drop(write);
            read
        });
        let writer = match (stdin_write, stdin) {
            (Some(pipe), Some(data)) => Some(std::thread::spawn(move || {
                let _ = std::fs::File::from(pipe).write_all(&data);
            })),
            _ => None,
        };
        let pumped = pump(Some(out_read), Some(err_read), fd3_read, sink);
        if let Some(writer) = writer {
            let _ = writer.join();
        }
        let status = loop {
            match nix::sys::wait::waitpid(pid, None) {
                Ok(nix::sys::wait::WaitStatus::Exited(_, code)) => {
                    break ExitStatus::from_raw((code & 0xff) << 8);
                }
                Ok(nix::sys::wait::WaitStatus::Signaled(_, signal, core)) => {
                    break ExitStatus::from_raw(signal as i32 | if core { 0x80 } else { 0 });
                }
                Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            }
        };
        pumped?;
        Ok(status)
    }
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

/// Reads the three pipes until all of them are closed.
fn pump(
    stdout: Option<OwnedFd>,
    stderr: Option<OwnedFd>,
    fd3: Option<OwnedFd>,
    mut sink: impl FnMut(Chunk),
) -> std::io::Result<()> {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    let mut streams: Vec<(u8, std::fs::File)> = Vec::new();
    for (tag, fd) in [(1u8, stdout), (2, stderr), (3, fd3)] {
        if let Some(fd) = fd {
            streams.push((tag, std::fs::File::from(fd)));
        }
    }
    let mut buffer = vec![0u8; 64 * 1024];
    while !streams.is_empty() {
        let ready: Vec<bool> = {
            let mut fds: Vec<PollFd> = streams
                .iter()
                .map(|(_, f)| PollFd::new(f.as_fd(), PollFlags::POLLIN))
                .collect();
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            }
            fds.iter()
                .map(|f| f.revents().is_some_and(|r| !r.is_empty()))
                .collect()
        };
        let mut closed = Vec::new();
        for (index, is_ready) in ready.into_iter().enumerate() {
            if !is_ready {
                continue;
            }
            let (tag, file) = &mut streams[index];
            match file.read(&mut buffer) {
                Ok(0) => closed.push(index),
                Ok(n) => sink(match tag {
                    1 => Chunk::Stdout(&buffer[..n]),
                    2 => Chunk::Stderr(&buffer[..n]),
                    _ => Chunk::Fd3(&buffer[..n]),
                }),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => closed.push(index),
            }
        }
        for index in closed.into_iter().rev() {
            streams.remove(index);
        }
    }
    Ok(())
}

/// Splits plugin stderr into complete lines; a last partial line is
/// completed with a newline at the end.
#[derive(Default)]
pub struct StderrLines {
    partial: Vec<u8>,
}

impl StderrLines {
    pub fn push(&mut self, bytes: &[u8], each_line: &mut dyn FnMut(&[u8])) {
        self.partial.extend_from_slice(bytes);
        let mut start = 0;
        while let Some(offset) = self.partial[start..].iter().position(|b| *b == b'\n') {
            each_line(&self.partial[start..start + offset + 1]);
            start += offset + 1;
        }
        self.partial.drain(..start);
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
