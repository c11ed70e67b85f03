//! SSH access to the guests: the project key, waiting for sshd, the `ssh`
//! command line, and remote commands quoted so that the guest's shell sees
//! exactly the argv the user gave.

use std::io::Read;
use std::net::{Ipv4Addr, SocketAddrV4, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use holo_plugin::command::shell_quote;
use holo_plugin::process::{Command, Status};

use crate::error::Error;
use crate::spec::InstanceSpec;
use crate::state::make_private_dir;
use holos_compose::manifest::{self, Hook};

/// The project's key pair (made once with `ssh-keygen`, then reused);
/// returns the private key path and the public key line.
pub fn ensure_key(private: &Path, project: &str) -> Result<(PathBuf, String), Error> {
    let public = private.with_extension("pub");
    if !private.exists() || !public.exists() {
        if let Some(dir) = private.parent() {
            make_private_dir(dir)?;
        }
        let _ = std::fs::remove_file(private);
        let _ = std::fs::remove_file(&public);
        let keygen = Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-C"])
            .arg(format!("holos@{project}"))
            .arg("-f")
            .arg(private)
            .timeout(Duration::from_secs(30));
        let finished = keygen.run().map_err(|e| {
            Error::Guest(format!(
                "{e}; holos needs ssh-keygen (Debian package openssh-client)"
            ))
        })?;
        if !finished.success() {
            return Err(Error::Guest(format!(
                "ssh-keygen could not create {}: {}",
                private.display(),
                finished.stderr_tail(5)
            )));
        }
    }
    std::fs::set_permissions(private, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| Error::Guest(format!("cannot restrict {}: {e}", private.display())))?;
    let line = std::fs::read_to_string(&public)
        .map_err(|e| Error::Guest(format!("cannot read {}: {e}", public.display())))?;
    Ok((private.to_path_buf(), line.trim().to_string()))
}

/// Waits until something on 127.0.0.1:`port` greets with `SSH-`.
pub fn wait_for_sshd(port: u16, limit: Duration) -> Result<(), Error> {
    let started = Instant::now();
    let address = SocketAddrV4::new(Ipv4Addr::LOCALHOST, port);
    loop {
        // No single attempt outlasts what is left of the wait.
        let left = limit
            .saturating_sub(started.elapsed())
            .clamp(Duration::from_millis(100), Duration::from_secs(5));
        if let Ok(mut stream) = TcpStream::connect_timeout(&address.into(), left) {
            let _ = stream.set_read_timeout(Some(left));
            let mut banner = [0u8; 4];
            if stream.read_exact(&mut banner).is_ok() && &banner == b"SSH-" {
                return Ok(());
            }
        }
        if started.elapsed() >= limit {
            return Err(Error::Guest(format!(
                "no SSH server answered on 127.0.0.1:{port} within {}s; the guest may still be booting (see holos logs)",
                limit.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Joins an argv into one command line for the remote shell, each argument
/// quoted, as `docker compose exec` preserves its argv.
pub fn remote_command_line<S: AsRef<str>>(argv: &[S]) -> String {
    argv.iter()
        .map(|a| shell_quote(a.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The `scp` options (before the paths) to reach `spec`: those of
/// [`ssh_args`], with scp's `-P` for the port.
pub fn scp_options(key: &Path, spec: &InstanceSpec) -> Vec<String> {
    let mut args = ssh_args(key, spec, "", false);
    // The port flag, the -T and the destination are ssh's own.
    args.truncate(args.len() - 2);
    if let Some(flag) = args.iter_mut().find(|a| *a == "-p") {
        *flag = "-P".into();
    }
    args.push("-r".into());
    args
}

/// The `ssh` arguments (after the program name) to reach `spec` as `user`.
/// Host keys change whenever an instance is recreated, so none are kept.
pub fn ssh_args(key: &Path, spec: &InstanceSpec, user: &str, tty: bool) -> Vec<String> {
    let mut args: Vec<String> = [
        "-i",
        &key.to_string_lossy(),
        "-p",
        &spec.ssh_port.to_string(),
        "-o",
        "IdentitiesOnly=yes",
        "-o",
        "StrictHostKeyChecking=no",
        "-o",
        "UserKnownHostsFile=/dev/null",
        "-o",
        "LogLevel=ERROR",
        "-o",
        "BatchMode=yes",
        "-o",
        "ConnectTimeout=10",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(if tty { "-t" } else { "-T" }.to_string());
    args.push(format!("{user}@127.0.0.1"));
    args
}

/// The remote command line of a `pre_stop` (or `post_start`) hook.
pub fn hook_command_line(hook: &Hook) -> String {
    let mut line = String::new();
    if let Some(dir) = &hook.working_dir {
        line.push_str(&format!("cd {} && ", shell_quote(dir)));
    }
    if !hook.environment.is_empty() {
        line.push_str("env ");
        for (key, value) in &hook.environment {
            line.push_str(&shell_quote(&format!("{key}={value}")));
            line.push(' ');
        }
    }
    let command = match &hook.command {
        manifest::GuestCommand::Shell(text) => remote_command_line(&["sh", "-c", text]),
        manifest::GuestCommand::Exec(argv) => remote_command_line(argv),
    };
    match &hook.user {
        Some(user) => format!(
            "sudo -u {} -- sh -c {}",
            shell_quote(user),
            shell_quote(&format!("{line}{command}"))
        ),
        None => format!("{line}{command}"),
    }
}

/// The remote line that waits for cloud-init's last stage: `status --wait`
/// exits 0 when done, 2 when done with recoverable errors (deprecated keys
/// give that on current images) and 1 on errors. A guest without cloud-init
/// is ready once sshd is.
const CLOUD_INIT_WAIT: &str =
    "if command -v cloud-init >/dev/null 2>&1; then cloud-init status --wait >/dev/null 2>&1; fi";

/// Waits, within `limit`, until cloud-init in the guest has run its last
/// stage (packages, `runcmd`), which ends after sshd takes the key. `None`
/// when it finished; otherwise a warning to print, since the command may
/// still work.
pub fn wait_for_cloud_init(key: &Path, spec: &InstanceSpec, limit: Duration) -> Option<String> {
    let finished = Command::new("ssh")
        .args(ssh_args(key, spec, &spec.user, false))
        .arg(CLOUD_INIT_WAIT)
        .timeout(limit)
        .run();
    let name = &spec.name;
    match finished {
        Ok(finished) => match finished.status {
            Status::Exited(0 | 2) => None,
            Status::Exited(1) => Some(format!(
                "{name}: cloud-init reported errors (see holos logs); running the command anyway"
            )),
            Status::TimedOut => Some(format!(
                "{name}: cloud-init did not finish within {}s; running the command anyway",
                limit.as_secs()
            )),
            status => Some(format!(
                "{name}: cannot ask cloud-init whether it finished ({status}: {}); running the command anyway",
                finished.stderr_tail(1)
            )),
        },
        Err(e) => Some(format!(
            "{name}: cannot ask cloud-init whether it finished ({e}); running the command anyway"
        )),
    }
}

/// Runs the instance's `pre_stop` hooks over SSH, each within `limit`.
/// Failures are reported, not fatal: the VM stops either way.
pub fn run_pre_stop(key: &Path, spec: &InstanceSpec, limit: Duration) {
    for hook in &spec.pre_stop {
        let line = hook_command_line(hook);
        let command = Command::new("ssh")
            .args(ssh_args(key, spec, &spec.user, false))
            .arg(&line)
            .timeout(limit);
        match command.run() {
            Ok(finished) if finished.success() => {}
            Ok(finished) => eprintln!(
                "holos: {}: pre_stop hook {line:?} failed ({:?}): {}",
                spec.name,
                finished.status,
                finished.stderr_tail(3)
            ),
            Err(e) => eprintln!("holos: {}: pre_stop hook {line:?}: {e}", spec.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn remote_arguments_are_quoted_one_by_one() {
        assert_eq!(
            remote_command_line(&["sh", "-c", "echo a > /x"]),
            "sh -c 'echo a > /x'"
        );
        assert_eq!(remote_command_line(&["echo", "it's"]), r"echo 'it'\''s'");
        assert_eq!(remote_command_line(&["printf", ""]), "printf ''");
    }

    #[test]
    fn hooks_get_dir_env_and_user() {
        let hook = Hook {
            command: manifest::GuestCommand::Exec(vec!["pg_ctl".into(), "stop".into()]),
            user: Some("postgres".into()),
            working_dir: Some("/var/lib/pg data".into()),
            environment: BTreeMap::from([("MODE".into(), "fast".into())]),
        };
        assert_eq!(
            hook_command_line(&hook),
            r"sudo -u postgres -- sh -c 'cd '\''/var/lib/pg data'\'' && env MODE=fast pg_ctl stop'"
        );
    }
}
