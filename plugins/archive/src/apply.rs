//! The archive type's decisions as plain functions: the state checks in the
//! order of CCM's design, the decision matrix (what to remove, download, extract and
//! clean up), and the noop message. Nothing here touches the system.

use crate::model::Ensure;

/// The desired state, with owner and group resolved to ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Desired {
    pub ensure: Ensure,
    /// Expected SHA-256; `None` accepts any content.
    pub checksum: Option<String>,
    /// `None` when the owner could not be resolved (yet): never matches.
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    /// `extract_parent` is set.
    pub extract: bool,
    /// `creates` is set.
    pub creates: bool,
    pub cleanup: bool,
}

/// What the system shows now (CCM's `Status()`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Status {
    pub archive_exists: bool,
    /// SHA-256 of the archive file, when it exists.
    pub checksum: Option<String>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    /// The `creates` marker exists (false when `creates` is not set).
    pub creates_exists: bool,
    /// The state record says an extraction started and did not finish (a
    /// killed run): what is in `extract_parent` may be partial.
    pub extraction_unfinished: bool,
}

/// Why the current state is not the desired one: the first failing check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unstable {
    /// 1. `ensure = absent`, and the archive exists.
    ArchiveExists,
    /// 2. An extraction started and did not finish.
    ExtractionUnfinished,
    /// 2. `creates` is set, and the marker is missing.
    CreatesMissing,
    /// 3. `cleanup = false`, and the archive is missing.
    ArchiveMissing,
    /// 3. `cleanup = true`, and the archive is still there.
    CleanupNeeded,
    /// 4. Owner differs.
    OwnerMismatch { current: Option<u32> },
    /// 4. Group differs.
    GroupMismatch { current: Option<u32> },
    /// 5. Checksum differs.
    ChecksumMismatch { current: Option<String> },
}

impl Unstable {
    /// The reason in words, for `desired state not achieved: ...`.
    pub fn describe(&self, desired: &Desired) -> String {
        let id = |id: Option<u32>| id.map_or_else(|| "unknown".to_string(), |id| id.to_string());
        match self {
            Unstable::ArchiveExists => "ensure is absent, but the archive file exists".to_string(),
            Unstable::ExtractionUnfinished => {
                "an extraction of the archive did not finish".to_string()
            }
            Unstable::CreatesMissing => {
                "the creates file does not exist; check that the archive contains it".to_string()
            }
            Unstable::ArchiveMissing => "the archive file does not exist".to_string(),
            Unstable::CleanupNeeded => {
                "cleanup is true, but the archive file still exists".to_string()
            }
            Unstable::OwnerMismatch { current } => format!(
                "the archive file is owned by uid {}, wanted uid {}",
                id(*current),
                id(desired.uid)
            ),
            Unstable::GroupMismatch { current } => format!(
                "the archive file has gid {}, wanted gid {}",
                id(*current),
                id(desired.gid)
            ),
            Unstable::ChecksumMismatch { current } => format!(
                "the archive file has checksum {}, wanted {}",
                current.as_deref().unwrap_or("none"),
                desired.checksum.as_deref().unwrap_or("any")
            ),
        }
    }
}

/// CCM's state checks, in order; `None` means stable.
pub fn check(desired: &Desired, status: &Status) -> Option<Unstable> {
    // 1. Ensure absent: the archive file must not exist.
    if desired.ensure == Ensure::Absent {
        return status.archive_exists.then_some(Unstable::ArchiveExists);
    }
    // 2. An extraction that a killed run left unfinished is redone, with
    // or without `creates`.
    if desired.extract && status.extraction_unfinished {
        return Some(Unstable::ExtractionUnfinished);
    }
    // 2. Creates: the marker must exist.
    if desired.creates && !status.creates_exists {
        return Some(Unstable::CreatesMissing);
    }
    // 3. Archive existence: kept unless cleanup, gone after cleanup.
    if !desired.cleanup && !status.archive_exists {
        return Some(Unstable::ArchiveMissing);
    }
    if desired.cleanup && status.archive_exists {
        return Some(Unstable::CleanupNeeded);
    }
    if status.archive_exists {
        // 4. Owner and group.
        if desired.uid.is_none() || desired.uid != status.uid {
            return Some(Unstable::OwnerMismatch {
                current: status.uid,
            });
        }
        if desired.gid.is_none() || desired.gid != status.gid {
            return Some(Unstable::GroupMismatch {
                current: status.gid,
            });
        }
        // 5. Checksum, when one is specified.
        if desired.checksum.is_some() && desired.checksum != status.checksum {
            return Some(Unstable::ChecksumMismatch {
                current: status.checksum.clone(),
            });
        }
    }
    None
}

/// The steps apply takes, in this order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Plan {
    pub remove: bool,
    pub download: bool,
    pub extract: bool,
    pub cleanup: bool,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        *self == Plan::default()
    }
}

/// The decision matrix: nothing when stable; for `absent` remove the
/// archive; for `present` download when the archive is missing or differs
/// (checksum, owner, group), extract when `extract_parent` is set and the
/// archive was downloaded or the `creates` marker is missing, and clean up
/// when `cleanup` is set.
pub fn plan(desired: &Desired, status: &Status) -> Plan {
    if check(desired, status).is_none() {
        return Plan::default();
    }
    if desired.ensure == Ensure::Absent {
        return Plan {
            remove: true,
            ..Plan::default()
        };
    }
    // Extracted already, only the archive is left to remove.
    if desired.cleanup && status.creates_exists && !status.extraction_unfinished {
        return Plan {
            cleanup: status.archive_exists,
            ..Plan::default()
        };
    }
    let archive_ok = status.archive_exists
        && desired.uid.is_some()
        && desired.uid == status.uid
        && desired.gid.is_some()
        && desired.gid == status.gid
        && (desired.checksum.is_none() || desired.checksum == status.checksum);
    let download = !archive_ok;
    Plan {
        remove: false,
        download,
        extract: desired.extract
            && (download || !status.creates_exists || status.extraction_unfinished),
        cleanup: desired.cleanup,
    }
}

/// Holo's protection, for resources with `protect = true`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protection {
    Proceed,
    /// The archive apply left was deleted: `requires --force to restore`.
    RequiresForceRestore,
    /// The archive apply left was replaced: `requires --force to overwrite`.
    RequiresForceOverwrite,
}

/// `recorded` is the checksum apply left (`None`: no archive, or never
/// applied). An archive that differs both from the record and from the
/// desired state was changed by hand.
pub fn protection(desired: &Desired, recorded: Option<&str>, status: &Status) -> Protection {
    let Some(recorded) = recorded else {
        return Protection::Proceed;
    };
    if desired.ensure == Ensure::Absent || desired.cleanup {
        return Protection::Proceed;
    }
    match status.checksum.as_deref() {
        None => Protection::RequiresForceRestore,
        Some(current) if current != recorded && check(desired, status).is_some() => {
            Protection::RequiresForceOverwrite
        }
        Some(_) => Protection::Proceed,
    }
}

/// The noop message: CCM's sentences joined with ". ".
pub fn noop_message(plan: &Plan) -> Option<String> {
    let mut sentences = Vec::new();
    if plan.remove {
        sentences.push("Would have removed");
    }
    if plan.download {
        sentences.push("Would have downloaded");
    }
    if plan.extract {
        sentences.push("Would have extracted");
    }
    if plan.cleanup {
        sentences.push("Would have cleaned up");
    }
    (!sentences.is_empty()).then(|| sentences.join(". "))
}

pub use holo_plugin::extract::{Limits, Room, Survey, room};

/// What `holo-archive status` reads back as `ensure` and `cleanup`, with a
/// note where it had to conclude something.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadBack {
    pub ensure: Ensure,
    pub cleanup: bool,
    pub note: Option<&'static str>,
}

/// One row each: an archive on disk is present; a missing one is absent,
/// unless the record says present and its `creates` exists, which only
/// `cleanup = true` leaves behind; a missing one that the record says is
/// present was removed since.
pub fn read_back(
    archive_exists: bool,
    recorded: Option<Ensure>,
    recorded_creates_exists: bool,
) -> ReadBack {
    let plain = |ensure| ReadBack {
        ensure,
        cleanup: false,
        note: None,
    };
    match (archive_exists, recorded) {
        (true, _) => plain(Ensure::Present),
        (false, None | Some(Ensure::Absent)) => plain(Ensure::Absent),
        (false, Some(Ensure::Present)) if recorded_creates_exists => ReadBack {
            ensure: Ensure::Present,
            cleanup: true,
            note: Some(
                "the archive is gone and what it created is there, which only cleanup = true leaves",
            ),
        },
        (false, Some(Ensure::Present)) => ReadBack {
            ensure: Ensure::Absent,
            cleanup: false,
            note: Some(
                "the record says the archive was present, but it is gone and nothing says it was cleaned up",
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_back_an_archive_on_disk_is_present() {
        for recorded in [None, Some(Ensure::Absent), Some(Ensure::Present)] {
            assert_eq!(read_back(true, recorded, false).ensure, Ensure::Present);
            assert!(!read_back(true, recorded, true).cleanup);
        }
    }

    #[test]
    fn read_back_a_missing_archive_without_a_record_is_absent() {
        assert_eq!(read_back(false, None, false).ensure, Ensure::Absent);
        assert_eq!(
            read_back(false, Some(Ensure::Absent), false).ensure,
            Ensure::Absent
        );
    }

    #[test]
    fn read_back_a_cleaned_up_archive_is_present_with_cleanup() {
        let found = read_back(false, Some(Ensure::Present), true);
        assert_eq!((found.ensure, found.cleanup), (Ensure::Present, true));
        assert!(found.note.is_some());
    }

    #[test]
    fn read_back_a_removed_archive_is_absent_with_a_note() {
        let found = read_back(false, Some(Ensure::Present), false);
        assert_eq!((found.ensure, found.cleanup), (Ensure::Absent, false));
        assert!(found.note.is_some_and(|note| note.contains("it is gone")));
    }

    const SUM: &str = "aaaa";

    fn desired() -> Desired {
        Desired {
            ensure: Ensure::Present,
            checksum: Some(SUM.to_string()),
            uid: Some(0),
            gid: Some(0),
            extract: true,
            creates: true,
            cleanup: false,
        }
    }

    fn archive(exists: bool, creates_exists: bool) -> Status {
        Status {
            archive_exists: exists,
            checksum: exists.then(|| SUM.to_string()),
            uid: exists.then_some(0),
            gid: exists.then_some(0),
            creates_exists,
            extraction_unfinished: false,
        }
    }

    fn steps(remove: bool, download: bool, extract: bool, cleanup: bool) -> Plan {
        Plan {
            remove,
            download,
            extract,
            cleanup,
        }
    }

    // The HTTP provider's decision matrix, one test per row.

    #[test]
    fn matrix_no_archive_no_creates_no_cleanup_downloads() {
        let status = archive(false, false);
        assert_eq!(check(&desired(), &status), Some(Unstable::CreatesMissing));
        assert_eq!(plan(&desired(), &status), steps(false, true, true, false));
    }

    #[test]
    fn matrix_archive_without_creates_extracts_only() {
        let status = archive(true, false);
        assert_eq!(check(&desired(), &status), Some(Unstable::CreatesMissing));
        assert_eq!(plan(&desired(), &status), steps(false, false, true, false));
    }

    #[test]
    fn matrix_unfinished_extraction_without_creates_extracts_again() {
        let wanted = Desired {
            creates: false,
            ..desired()
        };
        let status = Status {
            extraction_unfinished: true,
            ..archive(true, false)
        };
        assert_eq!(
            check(&wanted, &status),
            Some(Unstable::ExtractionUnfinished)
        );
        assert_eq!(plan(&wanted, &status), steps(false, false, true, false));
        assert_eq!(check(&wanted, &archive(true, false)), None);
    }

    #[test]
    fn matrix_unfinished_extraction_with_creates_extracts_again() {
        let status = Status {
            extraction_unfinished: true,
            ..archive(true, true)
        };
        assert_eq!(
            check(&desired(), &status),
            Some(Unstable::ExtractionUnfinished)
        );
        assert_eq!(plan(&desired(), &status), steps(false, false, true, false));
    }

    #[test]
    fn matrix_unfinished_extraction_after_cleanup_downloads_again() {
        let wanted = Desired {
            cleanup: true,
            ..desired()
        };
        let status = Status {
            extraction_unfinished: true,
            ..archive(false, true)
        };
        assert_eq!(plan(&wanted, &status), steps(false, true, true, true));
    }

    #[test]
    fn matrix_archive_and_creates_is_stable() {
        assert_eq!(check(&desired(), &archive(true, true)), None);
        assert!(plan(&desired(), &archive(true, true)).is_empty());
    }

    #[test]
    fn matrix_cleanup_with_creates_and_no_archive_is_stable() {
        let wanted = Desired {
            cleanup: true,
            ..desired()
        };
        assert_eq!(check(&wanted, &archive(false, true)), None);
        assert!(plan(&wanted, &archive(false, true)).is_empty());
    }

    #[test]
    fn matrix_cleanup_with_creates_and_archive_cleans_up() {
        let wanted = Desired {
            cleanup: true,
            ..desired()
        };
        assert_eq!(
            check(&wanted, &archive(true, true)),
            Some(Unstable::CleanupNeeded)
        );
        assert_eq!(
            plan(&wanted, &archive(true, true)),
            steps(false, false, false, true)
        );
    }

    // The archive type's decision table, one test per row.

    #[test]
    fn table_absent_and_missing_is_stable() {
        let wanted = Desired {
            ensure: Ensure::Absent,
            ..desired()
        };
        assert_eq!(check(&wanted, &archive(false, true)), None);
        assert!(plan(&wanted, &archive(false, false)).is_empty());
    }

    #[test]
    fn table_absent_and_existing_removes() {
        let wanted = Desired {
            ensure: Ensure::Absent,
            ..desired()
        };
        assert_eq!(
            check(&wanted, &archive(true, true)),
            Some(Unstable::ArchiveExists)
        );
        assert_eq!(
            plan(&wanted, &archive(true, true)),
            steps(true, false, false, false)
        );
    }

    #[test]
    fn table_creates_missing_extracts_a_fresh_download() {
        let wanted = Desired {
            cleanup: true,
            ..desired()
        };
        let status = archive(false, false);
        assert_eq!(check(&wanted, &status), Some(Unstable::CreatesMissing));
        assert_eq!(plan(&wanted, &status), steps(false, true, true, true));
    }

    #[test]
    fn table_no_cleanup_and_missing_archive_downloads() {
        // A fresh download is extracted again (CCM), even when creates exists.
        let status = archive(false, true);
        assert_eq!(check(&desired(), &status), Some(Unstable::ArchiveMissing));
        assert_eq!(plan(&desired(), &status), steps(false, true, true, false));
        let no_extract = Desired {
            extract: false,
            creates: false,
            ..desired()
        };
        assert_eq!(
            plan(&no_extract, &archive(false, false)),
            steps(false, true, false, false)
        );
    }

    #[test]
    fn table_checksum_mismatch_downloads_again() {
        let status = Status {
            checksum: Some("bbbb".to_string()),
            ..archive(true, true)
        };
        assert_eq!(
            check(&desired(), &status),
            Some(Unstable::ChecksumMismatch {
                current: Some("bbbb".to_string())
            })
        );
        assert_eq!(plan(&desired(), &status), steps(false, true, true, false));
        let any_content = Desired {
            checksum: None,
            ..desired()
        };
        assert_eq!(check(&any_content, &status), None);
    }

    #[test]
    fn table_owner_or_group_mismatch_downloads_again() {
        let wrong_owner = Status {
            uid: Some(1000),
            ..archive(true, true)
        };
        assert_eq!(
            check(&desired(), &wrong_owner),
            Some(Unstable::OwnerMismatch {
                current: Some(1000)
            })
        );
        assert_eq!(
            plan(&desired(), &wrong_owner),
            steps(false, true, true, false)
        );
        let wrong_group = Status {
            gid: Some(1000),
            ..archive(true, true)
        };
        assert_eq!(
            check(&desired(), &wrong_group),
            Some(Unstable::GroupMismatch {
                current: Some(1000)
            })
        );
        let unresolved = Desired {
            uid: None,
            ..desired()
        };
        assert!(check(&unresolved, &archive(true, true)).is_some());
    }

    // Room for an extraction, one test per row.

    const LIMITS: Limits = Limits {
        max_bytes: 1000,
        max_entries: 10,
    };

    fn survey(bytes: u64, entries: u64) -> Survey {
        Survey {
            bytes,
            disk_bytes: bytes + 100,
            entries,
        }
    }

    #[test]
    fn room_within_limits_and_space_fits() {
        assert_eq!(room(&LIMITS, &survey(1000, 10), 1100), Room::Fits);
    }

    #[test]
    fn room_too_many_entries_is_refused_first() {
        assert_eq!(room(&LIMITS, &survey(5000, 11), 0), Room::TooManyEntries);
    }

    #[test]
    fn room_too_many_bytes_is_refused() {
        assert_eq!(room(&LIMITS, &survey(1001, 10), u64::MAX), Room::TooLarge);
    }

    #[test]
    fn room_more_than_the_free_space_is_refused() {
        assert_eq!(room(&LIMITS, &survey(1000, 10), 1099), Room::NoSpace);
    }

    #[test]
    fn noop_messages_are_joined_with_a_period() {
        assert_eq!(
            noop_message(&steps(false, true, true, true)).as_deref(),
            Some("Would have downloaded. Would have extracted. Would have cleaned up")
        );
        assert_eq!(
            noop_message(&steps(true, false, false, false)).as_deref(),
            Some("Would have removed")
        );
        assert_eq!(noop_message(&Plan::default()), None);
    }

    #[test]
    fn protection_asks_for_force_only_after_a_manual_change() {
        let replaced = Status {
            checksum: Some("bbbb".into()),
            ..archive(true, true)
        };
        assert_eq!(protection(&desired(), None, &replaced), Protection::Proceed);
        assert_eq!(
            protection(&desired(), Some(SUM), &replaced),
            Protection::RequiresForceOverwrite
        );
        assert_eq!(
            protection(&desired(), Some(SUM), &archive(false, true)),
            Protection::RequiresForceRestore
        );
        assert_eq!(
            protection(&desired(), Some(SUM), &archive(true, false)),
            Protection::Proceed
        );
    }

    #[test]
    fn mismatches_are_described_with_both_sides() {
        let text = Unstable::ChecksumMismatch {
            current: Some("bbbb".into()),
        }
        .describe(&desired());
        assert!(text.contains("bbbb") && text.contains(SUM), "{text}");
    }
}
