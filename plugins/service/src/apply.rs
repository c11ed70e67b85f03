//! The service type's decisions as plain functions: phase one (running
//! state, with the subscribe refresh), phase two (enabled state), the
//! desired-state check after a change, Holo's optional protection, and
//! CCM's noop messages. Nothing here runs a command.

use crate::model::Ensure;
use crate::provider::{Active, Verb};

/// Phase one: what to do about the running state. A refresh restarts only
/// a service that should run and runs; otherwise ensure and state are
/// compared as without a refresh (so a stopped service starts, not
/// restarts, and `ensure = stopped` ignores the refresh).
pub fn running_step(ensure: Ensure, running: bool, refresh: bool) -> Option<Verb> {
    match (refresh, ensure, running) {
        (true, Ensure::Running, true) => Some(Verb::Restart),
        (_, Ensure::Running, false) => Some(Verb::Start),
        (_, Ensure::Stopped, true) => Some(Verb::Stop),
        (false, Ensure::Running, true) | (_, Ensure::Stopped, false) => None,
    }
}

/// Phase two: what to do about the boot configuration; unset leaves it alone.
pub fn enabled_step(enable: Option<bool>, enabled: bool) -> Option<Verb> {
    match (enable, enabled) {
        (None, _) | (Some(true), true) | (Some(false), false) => None,
        (Some(true), false) => Some(Verb::Enable),
        (Some(false), true) => Some(Verb::Disable),
    }
}

/// The state a service is in, as far as the decisions need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Observed {
    pub active: Active,
    pub enabled: bool,
}

/// Why the service is not in the desired state (`None` when it is). Boot
/// configuration counts only when `enable` is set.
pub fn mismatch(ensure: Ensure, enable: Option<bool>, observed: &Observed) -> Option<String> {
    let running = observed.active.running();
    if running != (ensure == Ensure::Running) {
        return Some(format!(
            "ensure is {ensure}, but systemctl is-active says {}",
            observed.active.as_str()
        ));
    }
    match enable {
        Some(wanted) if wanted != observed.enabled => Some(format!(
            "enable is {wanted}, but the service is {}",
            if observed.enabled {
                "enabled"
            } else {
                "disabled"
            }
        )),
        _ => None,
    }
}

/// What apply left behind last time (the state record).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recorded {
    pub running: bool,
    pub enabled: bool,
}

/// Holo's protection, for resources with `protect = true`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protection {
    /// Apply may go ahead.
    Proceed,
    /// Someone stopped the service that apply had left running.
    RequiresForceRestore,
    /// Someone changed it otherwise (started it, or changed its boot config).
    RequiresForceOverwrite,
}

/// The service was applied before and now differs both from the record and
/// from the desired state: someone changed it by hand, and apply leaves it
/// alone. A service that crashed (`failed`) or is coming back up
/// (`activating`) was not stopped by hand, so it heals even when protected.
pub fn protection(
    protect: bool,
    ensure: Ensure,
    enable: Option<bool>,
    recorded: Option<Recorded>,
    observed: &Observed,
) -> Protection {
    let Some(recorded) = recorded.filter(|_| protect) else {
        return Protection::Proceed;
    };
    let running_changed = recorded.running != observed.active.running();
    let enabled_changed = enable.is_some() && recorded.enabled != observed.enabled;
    if !running_changed && !enabled_changed {
        return Protection::Proceed;
    }
    if mismatch(ensure, enable, observed).is_none() {
        return Protection::Proceed;
    }
    if enabled_changed {
        return Protection::RequiresForceOverwrite;
    }
    match (recorded.running, observed.active) {
        (true, Active::Inactive) => Protection::RequiresForceRestore,
        (true, _) => Protection::Proceed,
        (false, _) => Protection::RequiresForceOverwrite,
    }
}

/// CCM's noop message for a change.
pub fn noop_message(verb: Verb) -> &'static str {
    match verb {
        Verb::Start => "Would have started",
        Verb::Stop => "Would have stopped",
        Verb::Restart => "Would have restarted",
        Verb::Enable => "Would have enabled",
        Verb::Disable => "Would have disabled",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Phase one, one test per row: (refresh, ensure, running) -> step.

    #[test]
    fn running_wanted_and_running_does_nothing() {
        assert_eq!(running_step(Ensure::Running, true, false), None);
    }

    #[test]
    fn running_wanted_and_stopped_starts() {
        assert_eq!(
            running_step(Ensure::Running, false, false),
            Some(Verb::Start)
        );
    }

    #[test]
    fn stopped_wanted_and_stopped_does_nothing() {
        assert_eq!(running_step(Ensure::Stopped, false, false), None);
    }

    #[test]
    fn stopped_wanted_and_running_stops() {
        assert_eq!(running_step(Ensure::Stopped, true, false), Some(Verb::Stop));
    }

    #[test]
    fn refresh_of_a_running_service_restarts() {
        assert_eq!(
            running_step(Ensure::Running, true, true),
            Some(Verb::Restart)
        );
    }

    #[test]
    fn refresh_of_a_stopped_service_starts_not_restarts() {
        assert_eq!(
            running_step(Ensure::Running, false, true),
            Some(Verb::Start)
        );
    }

    #[test]
    fn refresh_with_ensure_stopped_is_ignored_when_stopped() {
        assert_eq!(running_step(Ensure::Stopped, false, true), None);
    }

    #[test]
    fn refresh_with_ensure_stopped_still_stops_a_running_service() {
        assert_eq!(running_step(Ensure::Stopped, true, true), Some(Verb::Stop));
    }

    // Phase two, one test per row: (enable, enabled) -> step.

    #[test]
    fn enable_true_and_enabled_does_nothing() {
        assert_eq!(enabled_step(Some(true), true), None);
    }

    #[test]
    fn enable_true_and_disabled_enables() {
        assert_eq!(enabled_step(Some(true), false), Some(Verb::Enable));
    }

    #[test]
    fn enable_false_and_enabled_disables() {
        assert_eq!(enabled_step(Some(false), true), Some(Verb::Disable));
    }

    #[test]
    fn enable_false_and_disabled_does_nothing() {
        assert_eq!(enabled_step(Some(false), false), None);
    }

    #[test]
    fn enable_unset_and_enabled_does_nothing() {
        assert_eq!(enabled_step(None, true), None);
    }

    #[test]
    fn enable_unset_and_disabled_does_nothing() {
        assert_eq!(enabled_step(None, false), None);
    }

    // Desired-state check.

    fn observed(active: Active, enabled: bool) -> Observed {
        Observed { active, enabled }
    }

    #[test]
    fn desired_state_counts_boot_config_only_when_set() {
        assert_eq!(
            mismatch(Ensure::Running, None, &observed(Active::Active, false)),
            None
        );
        assert_eq!(
            mismatch(
                Ensure::Stopped,
                Some(false),
                &observed(Active::Failed, false)
            ),
            None
        );
        assert_eq!(
            mismatch(Ensure::Running, None, &observed(Active::Activating, true)).as_deref(),
            Some("ensure is running, but systemctl is-active says activating")
        );
        assert_eq!(
            mismatch(
                Ensure::Running,
                Some(false),
                &observed(Active::Active, true)
            )
            .as_deref(),
            Some("enable is false, but the service is enabled")
        );
    }

    // Protection, one test per row.

    const WAS_RUNNING_ENABLED: Option<Recorded> = Some(Recorded {
        running: true,
        enabled: true,
    });

    #[test]
    fn protection_off_always_proceeds() {
        let now = observed(Active::Inactive, true);
        assert_eq!(
            protection(false, Ensure::Running, None, WAS_RUNNING_ENABLED, &now),
            Protection::Proceed
        );
    }

    #[test]
    fn protection_without_a_record_proceeds() {
        let now = observed(Active::Inactive, true);
        assert_eq!(
            protection(true, Ensure::Running, None, None, &now),
            Protection::Proceed
        );
    }

    #[test]
    fn protection_with_state_as_recorded_proceeds() {
        // The resource changed (now stopped wanted); the service did not.
        let now = observed(Active::Active, true);
        assert_eq!(
            protection(true, Ensure::Stopped, Some(true), WAS_RUNNING_ENABLED, &now),
            Protection::Proceed
        );
    }

    #[test]
    fn protection_with_state_as_desired_proceeds() {
        let recorded = Some(Recorded {
            running: false,
            enabled: false,
        });
        let now = observed(Active::Active, true);
        assert_eq!(
            protection(true, Ensure::Running, Some(true), recorded, &now),
            Protection::Proceed
        );
    }

    #[test]
    fn protection_of_a_service_stopped_by_hand_requires_force_to_restore() {
        let now = observed(Active::Inactive, true);
        assert_eq!(
            protection(true, Ensure::Running, Some(true), WAS_RUNNING_ENABLED, &now),
            Protection::RequiresForceRestore
        );
    }

    #[test]
    fn protection_of_a_crashed_service_proceeds_so_it_heals() {
        let now = observed(Active::Failed, true);
        assert_eq!(
            protection(true, Ensure::Running, Some(true), WAS_RUNNING_ENABLED, &now),
            Protection::Proceed
        );
    }

    #[test]
    fn protection_of_a_service_started_by_hand_requires_force_to_overwrite() {
        let recorded = Some(Recorded {
            running: false,
            enabled: false,
        });
        let now = observed(Active::Active, false);
        assert_eq!(
            protection(true, Ensure::Stopped, None, recorded, &now),
            Protection::RequiresForceOverwrite
        );
    }

    #[test]
    fn protection_of_boot_config_changed_by_hand_requires_force_to_overwrite() {
        let now = observed(Active::Active, false);
        assert_eq!(
            protection(true, Ensure::Running, Some(true), WAS_RUNNING_ENABLED, &now),
            Protection::RequiresForceOverwrite
        );
    }

    #[test]
    fn protection_ignores_boot_config_when_enable_is_unset() {
        let now = observed(Active::Active, false);
        assert_eq!(
            protection(true, Ensure::Running, None, WAS_RUNNING_ENABLED, &now),
            Protection::Proceed
        );
    }

    #[test]
    fn noop_messages_are_ccms() {
        let messages: Vec<&str> = [
            Verb::Start,
            Verb::Stop,
            Verb::Restart,
            Verb::Enable,
            Verb::Disable,
        ]
        .into_iter()
        .map(noop_message)
        .collect();
        assert_eq!(
            messages,
            [
                "Would have started",
                "Would have stopped",
                "Would have restarted",
                "Would have enabled",
                "Would have disabled"
            ]
        );
    }
}
