//! The systemd provider: `systemctl … --system` with CCM's argv, its
//! tables for `is-active`/`is-enabled`, and one `daemon-reload` per
//! process before its first change (so unit files that a file resource
//! wrote earlier in the run are seen).

use std::sync::atomic::{AtomicBool, Ordering};

use holo_plugin::process::{Command, Finished};
use holo_plugin::{Error, Result};

use super::{
    Active, DAEMON_RELOAD, Provider, Status, UnitFileState, Verb, not_found, systemctl_argv,
    unknown_output,
};

/// Set once this process ran `systemctl daemon-reload`.
static DAEMON_RELOADED: AtomicBool = AtomicBool::new(false);

/// systemctl on PATH.
pub struct Systemd;

fn run_query(argv: [&str; 4]) -> Result<(String, Finished)> {
    let command = Command::from_argv(&argv)?;
    let finished = command.run()?;
    if let holo_plugin::process::Status::Signaled(_) | holo_plugin::process::Status::TimedOut =
        finished.status
    {
        return Err(Error::new(format!(
            "{} ended by {}",
            command.command_line(),
            finished.status
        )));
    }
    let stdout = String::from_utf8_lossy(&finished.stdout).trim().to_owned();
    Ok((stdout, finished))
}

fn run_change(argv: &[&str]) -> Result<()> {
    Command::from_argv(argv)?.run_forwarded_checked()
}

/// Whether systemd < 253 said the unit does not exist (those versions print
/// nothing on stdout and this on stderr, where newer ones print `not-found`).
fn old_not_found(stdout: &str, finished: &Finished) -> bool {
    stdout.is_empty()
        && !finished.success()
        && String::from_utf8_lossy(&finished.stderr).contains("No such file or directory")
}

impl Provider for Systemd {
    fn status(&mut self, name: &str) -> Result<Status> {
        // is-active exits 3 for a unit that is not active: the output decides.
        let (active_out, active_run) = run_query(systemctl_argv("is-active", name))?;
        let active = Active::parse(&active_out).ok_or_else(|| {
            unknown_output(
                "is-active",
                name,
                &active_out,
                &String::from_utf8_lossy(&active_run.stderr),
            )
        })?;
        let (enabled_out, enabled_run) = run_query(systemctl_argv("is-enabled", name))?;
        let stderr = String::from_utf8_lossy(&enabled_run.stderr);
        if old_not_found(&enabled_out, &enabled_run) {
            return Err(not_found(name, stderr.trim()));
        }
        let enabled = match UnitFileState::parse(&enabled_out) {
            Some(UnitFileState::Enabled(_)) => true,
            Some(UnitFileState::Disabled(_)) => false,
            Some(UnitFileState::NotFound) => return Err(not_found(name, &enabled_out)),
            None => return Err(unknown_output("is-enabled", name, &enabled_out, &stderr)),
        };
        Ok(Status {
            active,
            enabled,
            unit_file_state: enabled_out,
        })
    }

    fn change(&mut self, verb: Verb, name: &str) -> Result<()> {
        if !DAEMON_RELOADED.load(Ordering::Relaxed) {
            run_change(&DAEMON_RELOAD)?;
            DAEMON_RELOADED.store(true, Ordering::Relaxed);
        }
        run_change(&systemctl_argv(verb.as_str(), name))
    }
}
