//! A session of one-offs (`holo session new`): the record of what each
//! one-off `ensure` did, which later one-offs of the session read for
//! `require` and `subscribe`, and `holo session report` prints. The SDK
//! writes it, the driver reads it; both go through these types.

use serde::{Deserialize, Serialize};

/// Bumped when a field changes meaning or goes away.
pub const FORMAT_VERSION: u32 = 1;

/// The file of the session's records in the session directory.
pub const RECORDS_FILE: &str = "session.json";

/// The lock file in the session directory, which a one-off holds while it
/// reads, runs and records, so that concurrent one-offs run one by one.
pub const LOCK_FILE: &str = "session.lock";

/// The variable that names the session directory, and CCM's name for it.
pub const ENV_VARS: [&str; 2] = ["HOLO_SESSION", "CCM_SESSION_STORE"];

/// Everything a session holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub version: u32,
    /// In the order the one-offs ran.
    pub records: Vec<Record>,
}

/// One entity that a one-off applied or skipped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub id: String,
    /// The plugin's id (`file` for holo-file).
    pub plugin: String,
    /// A result name of the run report: `changed`, `unchanged`, `failed`,
    /// `skipped`, `needs_force` or `interrupted`.
    pub result: String,
    /// When it started, in milliseconds since the epoch.
    pub start_ms: u64,
    pub duration_ms: u64,
}

impl Session {
    /// How `id` ended the last time a one-off of the session applied it.
    pub fn earlier(&self, id: &str) -> Option<crate::order::Earlier> {
        use crate::order::Earlier;
        let record = self.records.iter().rev().find(|record| record.id == id)?;
        Some(match record.result.as_str() {
            "changed" => Earlier::Changed,
            "failed" | "skipped" => Earlier::Failed,
            // As in holo apply: an entity left needing --force or cut
            // short by a signal neither blocks nor refreshes.
            _ => Earlier::Unchanged,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::order::Earlier;

    fn record(id: &str, result: &str) -> Record {
        Record {
            id: id.into(),
            plugin: "file".into(),
            result: result.into(),
            start_ms: 0,
            duration_ms: 0,
        }
    }

    #[test]
    fn the_last_run_of_an_entity_counts() {
        let session = Session {
            version: FORMAT_VERSION,
            records: vec![record("file:a", "failed"), record("file:a", "changed")],
        };
        assert_eq!(session.earlier("file:a"), Some(Earlier::Changed));
        assert_eq!(session.earlier("file:b"), None);
    }

    #[test]
    fn failures_and_skips_block() {
        for result in ["failed", "skipped"] {
            let session = Session {
                version: FORMAT_VERSION,
                records: vec![record("file:a", result)],
            };
            assert_eq!(session.earlier("file:a"), Some(Earlier::Failed), "{result}");
        }
    }
}
