//! The decision table of one script's apply, and the exit code the plugin
//! passes on when a script fails.

use holo_plugin::Mode;
use holo_plugin::process::Status;

/// What apply does with a script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Run it (apply and force-apply alike: a script has no state to guard).
    Run,
    /// A dry run: say it would run, run nothing.
    WouldRun,
    /// It has no execute bit: refuse with a message saying so.
    NotExecutable,
}

/// One row per case.
pub fn decide(mode: Mode, executable: bool) -> Decision {
    match (mode, executable) {
        (_, false) => Decision::NotExecutable,
        (Mode::Noop, true) => Decision::WouldRun,
        (Mode::Apply | Mode::Force, true) => Decision::Run,
    }
}

/// The plugin's exit code for how the script ended: `None` when it
/// succeeded; else its own exit code, or 128 + the signal as a shell
/// reports it (so the driver shows `!! exit status N`).
pub fn failure_exit_code(status: Status) -> Option<u8> {
    match status {
        Status::Exited(0) => None,
        Status::Exited(code) => Some(u8::try_from(code).unwrap_or(1).max(1)),
        Status::Signaled(signal) => Some(u8::try_from(128 + signal).unwrap_or(255)),
        Status::TimedOut => Some(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_executable_script_runs_on_apply() {
        assert_eq!(decide(Mode::Apply, true), Decision::Run);
    }

    #[test]
    fn an_executable_script_runs_on_force_apply() {
        assert_eq!(decide(Mode::Force, true), Decision::Run);
    }

    #[test]
    fn a_dry_run_runs_nothing() {
        assert_eq!(decide(Mode::Noop, true), Decision::WouldRun);
    }

    #[test]
    fn a_file_without_execute_bit_is_refused() {
        assert_eq!(decide(Mode::Apply, false), Decision::NotExecutable);
        assert_eq!(decide(Mode::Noop, false), Decision::NotExecutable);
    }

    #[test]
    fn success_passes_nothing_on() {
        assert_eq!(failure_exit_code(Status::Exited(0)), None);
    }

    #[test]
    fn a_failing_script_passes_its_exit_code_on() {
        assert_eq!(failure_exit_code(Status::Exited(1)), Some(1));
        assert_eq!(failure_exit_code(Status::Exited(42)), Some(42));
    }

    #[test]
    fn a_killed_script_exits_as_a_shell_reports_it() {
        assert_eq!(failure_exit_code(Status::Signaled(9)), Some(137));
    }
}
