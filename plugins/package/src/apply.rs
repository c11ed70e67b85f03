//! The package type's decisions as plain functions: CCM's phase 1
//! (`latest`) and phase 2 (absent/present/version), its decision table,
//! desired-state verification, Holo's optional protection, and the noop
//! messages. Nothing here runs a command.

use std::cmp::Ordering;

use crate::model::Ensure;

/// What the package manager reports for one package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Current {
    Absent,
    Installed { version: String },
}

impl Current {
    pub fn version(&self) -> Option<&str> {
        match self {
            Current::Absent => None,
            Current::Installed { version } => Some(version),
        }
    }
}

/// The step the provider must take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Nothing,
    /// `ensure = "present"` on an absent package.
    Install,
    InstallLatest,
    /// `latest` on an installed package: always run, the package manager is
    /// idempotent.
    UpgradeLatest,
    InstallVersion(String),
    Upgrade(String),
    Downgrade(String),
    Uninstall,
}

/// How the provider orders and matches versions.
pub trait VersionOrder {
    /// Orders two versions.
    fn compare(&self, a: &str, b: &str) -> Ordering;
    /// Whether the installed version is the wanted one.
    fn satisfies(&self, installed: &str, wanted: &str) -> bool {
        self.compare(installed, wanted) == Ordering::Equal
    }
}

/// Phase 1: `latest` installs when absent and upgrades otherwise; any other
/// ensure value goes on to phase 2 (`None`).
pub fn phase_one(ensure: &Ensure, current: &Current) -> Option<Step> {
    match (ensure, current) {
        (Ensure::Latest, Current::Absent) => Some(Step::InstallLatest),
        (Ensure::Latest, Current::Installed { .. }) => Some(Step::UpgradeLatest),
        _ => None,
    }
}

/// Phase 2 for `absent`, `present` and a version.
pub fn phase_two(ensure: &Ensure, current: &Current, order: &dyn VersionOrder) -> Step {
    match (ensure, current) {
        (Ensure::Absent, Current::Absent) => Step::Nothing,
        (Ensure::Absent, Current::Installed { .. }) => Step::Uninstall,
        (Ensure::Present, Current::Absent) => Step::Install,
        (Ensure::Present, Current::Installed { .. }) => Step::Nothing,
        (Ensure::Version(wanted), Current::Absent) => Step::InstallVersion(wanted.clone()),
        (Ensure::Version(wanted), Current::Installed { version }) => {
            if order.satisfies(version, wanted) {
                Step::Nothing
            } else if order.compare(version, wanted) == Ordering::Less {
                Step::Upgrade(wanted.clone())
            } else {
                Step::Downgrade(wanted.clone())
            }
        }
        // Phase 1 handles `latest`; reaching here means "install it".
        (Ensure::Latest, Current::Absent) => Step::InstallLatest,
        (Ensure::Latest, Current::Installed { .. }) => Step::UpgradeLatest,
    }
}

/// CCM's decision table: phase 1, then phase 2.
pub fn decide(ensure: &Ensure, current: &Current, order: &dyn VersionOrder) -> Step {
    phase_one(ensure, current).unwrap_or_else(|| phase_two(ensure, current, order))
}

/// Whether `current` is the desired state. `latest` cannot be verified, so
/// it only checks that the package is not absent.
pub fn is_desired_state(ensure: &Ensure, current: &Current, order: &dyn VersionOrder) -> bool {
    match (ensure, current) {
        (Ensure::Absent, current) => *current == Current::Absent,
        (Ensure::Present | Ensure::Latest, current) => *current != Current::Absent,
        (Ensure::Version(_), Current::Absent) => false,
        (Ensure::Version(wanted), Current::Installed { version }) => {
            order.satisfies(version, wanted)
        }
    }
}

/// Why `current` is not the desired state, for `desired state not achieved: …`.
pub fn describe_mismatch(ensure: &Ensure, current: &Current) -> String {
    match (ensure, current) {
        (Ensure::Absent, Current::Installed { version }) => {
            format!("ensure is absent, but version {version} is still installed")
        }
        (Ensure::Version(wanted), Current::Installed { version }) => {
            format!("version is {version}, wanted {wanted}")
        }
        (ensure, Current::Absent) => {
            format!(
                "ensure is {}, but the package is not installed",
                ensure.as_str()
            )
        }
        (ensure, Current::Installed { version }) => {
            format!(
                "ensure is {}, installed version is {version}",
                ensure.as_str()
            )
        }
    }
}

/// Holo's protection, for resources with `protect = true`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Protection {
    /// Apply may go ahead.
    Proceed,
    /// Someone removed the package that was applied: `requires --force to restore`.
    RequiresForceRestore,
    /// Someone changed the applied version: `requires --force to overwrite`.
    RequiresForceOverwrite,
}

/// The package was applied before (`recorded` is what apply left), and it now
/// differs both from the record and from the desired state: someone changed
/// it by hand, and apply leaves it alone.
pub fn protection(
    ensure: &Ensure,
    recorded: Option<&Current>,
    current: &Current,
    order: &dyn VersionOrder,
) -> Protection {
    let Some(recorded) = recorded else {
        return Protection::Proceed;
    };
    let unchanged = match (recorded, current) {
        (Current::Absent, Current::Absent) => true,
        (Current::Installed { version: was }, Current::Installed { version: now }) => {
            order.compare(was, now) == Ordering::Equal
        }
        _ => false,
    };
    if unchanged || is_desired_state(ensure, current, order) {
        return Protection::Proceed;
    }
    match (recorded, current) {
        (Current::Installed { .. }, Current::Absent) => Protection::RequiresForceRestore,
        _ => Protection::RequiresForceOverwrite,
    }
}

/// CCM's noop message for a step (`None` when nothing would change).
/// `candidate` is the version `present` would install, when known.
pub fn noop_message(step: &Step, candidate: Option<&str>) -> Option<String> {
    Some(match step {
        Step::Nothing => return None,
        Step::Install => match candidate {
            Some(version) => format!("Would have installed version {version}"),
            None => "Would have installed".to_owned(),
        },
        Step::InstallLatest => "Would have installed latest".to_owned(),
        Step::UpgradeLatest => "Would have upgraded to latest".to_owned(),
        Step::InstallVersion(version) => format!("Would have installed version {version}"),
        Step::Upgrade(version) => format!("Would have upgraded to {version}"),
        Step::Downgrade(version) => format!("Would have downgraded to {version}"),
        Step::Uninstall => "Would have uninstalled".to_owned(),
    })
}

/// The noop message of an uninstall that would take `casualties` (the
/// packages depending on it) along, as apt-get or dnf would.
pub fn noop_removal_message(casualties: &[String]) -> String {
    if casualties.is_empty() {
        return "Would have uninstalled".to_owned();
    }
    format!(
        "Would have uninstalled, and with it {}, which depend on it (holo apply refuses this without --force)",
        casualties.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Debian;
    impl VersionOrder for Debian {
        fn compare(&self, a: &str, b: &str) -> Ordering {
            crate::version::deb::compare(a, b)
        }
    }

    fn installed(version: &str) -> Current {
        Current::Installed {
            version: version.to_owned(),
        }
    }

    fn version(v: &str) -> Ensure {
        Ensure::Version(v.to_owned())
    }

    // One test per row of CCM's decision table.

    #[test]
    fn row_present_installed_any_version_is_none() {
        assert_eq!(
            decide(&Ensure::Present, &installed("0.1-1"), &Debian),
            Step::Nothing
        );
    }

    #[test]
    fn row_present_absent_installs() {
        assert_eq!(
            decide(&Ensure::Present, &Current::Absent, &Debian),
            Step::Install
        );
    }

    #[test]
    fn row_absent_absent_is_none() {
        assert_eq!(
            decide(&Ensure::Absent, &Current::Absent, &Debian),
            Step::Nothing
        );
    }

    #[test]
    fn row_absent_installed_uninstalls() {
        assert_eq!(
            decide(&Ensure::Absent, &installed("1.0"), &Debian),
            Step::Uninstall
        );
    }

    #[test]
    fn row_latest_absent_installs_latest() {
        assert_eq!(
            phase_one(&Ensure::Latest, &Current::Absent),
            Some(Step::InstallLatest)
        );
        assert_eq!(
            decide(&Ensure::Latest, &Current::Absent, &Debian),
            Step::InstallLatest
        );
    }

    #[test]
    fn row_latest_installed_always_upgrades() {
        assert_eq!(
            decide(&Ensure::Latest, &installed("9:99"), &Debian),
            Step::UpgradeLatest
        );
    }

    #[test]
    fn row_version_same_is_none() {
        assert_eq!(
            decide(&version("1:2.0-1"), &installed("1:2.0-1"), &Debian),
            Step::Nothing
        );
        // Equal by Debian ordering, not by spelling.
        assert_eq!(
            decide(&version("2.0-1"), &installed("0:2.0-1"), &Debian),
            Step::Nothing
        );
    }

    #[test]
    fn row_version_older_installed_upgrades() {
        assert_eq!(
            decide(&version("2.0-1"), &installed("2.0~rc1-1"), &Debian),
            Step::Upgrade("2.0-1".to_owned())
        );
    }

    #[test]
    fn row_version_newer_installed_downgrades() {
        assert_eq!(
            decide(&version("1.9-1"), &installed("1:1.0-1"), &Debian),
            Step::Downgrade("1.9-1".to_owned())
        );
    }

    #[test]
    fn row_version_absent_installs_version() {
        assert_eq!(
            decide(&version("1.0-1"), &Current::Absent, &Debian),
            Step::InstallVersion("1.0-1".to_owned())
        );
    }

    #[test]
    fn phase_one_leaves_other_ensures_to_phase_two() {
        assert_eq!(phase_one(&Ensure::Present, &Current::Absent), None);
        assert_eq!(phase_one(&version("1"), &installed("1")), None);
    }

    #[test]
    fn desired_state_checks() {
        assert!(is_desired_state(&Ensure::Latest, &installed("1"), &Debian));
        assert!(!is_desired_state(
            &Ensure::Latest,
            &Current::Absent,
            &Debian
        ));
        assert!(is_desired_state(&Ensure::Absent, &Current::Absent, &Debian));
        assert!(!is_desired_state(
            &version("1.0"),
            &installed("1.0.1"),
            &Debian
        ));
        assert!(is_desired_state(
            &version("1.0"),
            &installed("1.0-0"),
            &Debian
        ));
    }

    #[test]
    fn mismatch_names_the_property() {
        assert_eq!(
            describe_mismatch(&version("2.0"), &installed("1.0")),
            "version is 1.0, wanted 2.0"
        );
        assert_eq!(
            describe_mismatch(&Ensure::Present, &Current::Absent),
            "ensure is present, but the package is not installed"
        );
    }

    #[test]
    fn protection_only_when_changed_by_hand_and_not_desired() {
        let pinned = version("1.0-1");
        let applied = installed("1.0-1");
        assert_eq!(
            protection(&pinned, None, &Current::Absent, &Debian),
            Protection::Proceed
        );
        assert_eq!(
            protection(&pinned, Some(&applied), &applied, &Debian),
            Protection::Proceed
        );
        assert_eq!(
            protection(&pinned, Some(&applied), &Current::Absent, &Debian),
            Protection::RequiresForceRestore
        );
        assert_eq!(
            protection(&pinned, Some(&applied), &installed("1.1-1"), &Debian),
            Protection::RequiresForceOverwrite
        );
        // The resource changed since the last apply: converge.
        assert_eq!(
            protection(&version("1.1-1"), Some(&applied), &applied, &Debian),
            Protection::Proceed
        );
        // An upgrade by hand still satisfies `present`.
        assert_eq!(
            protection(&Ensure::Present, Some(&applied), &installed("2.0"), &Debian),
            Protection::Proceed
        );
    }

    #[test]
    fn noop_messages_are_ccms() {
        let message = |step: Step| noop_message(&step, None);
        assert_eq!(message(Step::Nothing), None);
        assert_eq!(
            message(Step::InstallLatest).as_deref(),
            Some("Would have installed latest")
        );
        assert_eq!(
            message(Step::UpgradeLatest).as_deref(),
            Some("Would have upgraded to latest")
        );
        assert_eq!(
            message(Step::InstallVersion("1.24.0-1".into())).as_deref(),
            Some("Would have installed version 1.24.0-1")
        );
        assert_eq!(
            message(Step::Upgrade("2".into())).as_deref(),
            Some("Would have upgraded to 2")
        );
        assert_eq!(
            message(Step::Downgrade("1".into())).as_deref(),
            Some("Would have downgraded to 1")
        );
        assert_eq!(
            message(Step::Uninstall).as_deref(),
            Some("Would have uninstalled")
        );
        assert_eq!(
            noop_message(&Step::Install, Some("2:9.1-1")).as_deref(),
            Some("Would have installed version 2:9.1-1")
        );
    }

    #[test]
    fn noop_removal_without_dependents_is_ccms() {
        assert_eq!(noop_removal_message(&[]), "Would have uninstalled");
    }

    #[test]
    fn noop_removal_names_the_dependents() {
        assert_eq!(
            noop_removal_message(&["app-one".into(), "app-two".into()]),
            "Would have uninstalled, and with it app-one, app-two, which depend on it (holo apply refuses this without --force)"
        );
    }
}
