//! Running plugin binaries: `info`, the environment of plugin interface v3,
//! and a poll loop that streams stdout, stderr and FD 3 as they arrive.

use crate::paths;
use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus, Stdio};

pub const API_VERSION: u32 = 3;
/// The extensions this driver understands, exported as `HOLO_EXTENSIONS`.
pub const DRIVER_EXTENSIONS: &str = "noop,order,batch";

/// A plugin that answered `info` compatibly.
#[derive(Debug)]
pub struct Plugin {
    pub id: String,
    /// As Holo 3 prints it.
    pub binary: String,
    pub extensions: BTreeSet<String>,
    env: Vec<(OsString, OsString)>,
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

    pub fn has_extension(&self, name: &str) -> bool {
        self.extensions.contains(name)
    }

    fn environment(&self, dirs: &PluginDirs) -> Vec<(OsString, OsString)> {
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
        env
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
        let mut command = Command::new(executable_path(&self.binary));
        command
            .args(args)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .envs(extra_env.iter().copied())
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let fd3_pair = if with_fd3 {
            let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
            let raw = write.as_raw_fd();
            // SAFETY: only async-signal-safe calls (dup2, fcntl) between fork and exec.
            unsafe {
                command.pre_exec(move || {
                    if raw == 3 {
                        if libc::fcntl(3, libc::F_SETFD, 0) == -1 {
                            return Err(std::io::Error::last_os_error());
                        }
                    } else if libc::dup2(raw, 3) == -1 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
            Some((read, write))
        } else {
            None
        };
        let mut child = command.spawn()?;
        let fd3_read = fd3_pair.map(|(read, write)| {
            drop(write);
            read
        });
        let writer = match (child.stdin.take(), stdin) {
            (Some(mut pipe), Some(data)) => Some(std::thread::spawn(move || {
                let _ = pipe.write_all(&data);
            })),
            _ => None,
        };
        let stdout: Option<OwnedFd> = child.stdout.take().map(OwnedFd::from);
        let stderr: Option<OwnedFd> = child.stderr.take().map(OwnedFd::from);
        pump(stdout, stderr, fd3_read, sink)?;
        if let Some(writer) = writer {
            let _ = writer.join();
        }
        child.wait()
    }
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
            format!("signal: {name}")
        }
        None => "exit status unknown".to_string(),
    }
}

fn signal_text(signal: nix::sys::signal::Signal) -> String {
    use nix::sys::signal::Signal::*;
    match signal {
        SIGKILL => "killed",
        SIGTERM => "terminated",
        SIGINT => "interrupt",
        SIGSEGV => "segmentation fault",
        SIGABRT => "aborted",
        SIGHUP => "hangup",
        SIGPIPE => "broken pipe",
        SIGBUS => "bus error",
        SIGFPE => "floating point exception",
        SIGILL => "illegal instruction",
        SIGQUIT => "quit",
        other => return other.as_str().to_lowercase(),
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
    fn relative_binaries_stay_in_the_working_directory() {
        assert_eq!(executable_path("holo-foo"), "./holo-foo");
        assert_eq!(executable_path("bin/holo-foo"), "bin/holo-foo");
    }
}
