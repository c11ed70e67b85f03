//! The state record of a file entity: what the plugin left at the path and
//! what was there before it first touched it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::apply::{Kind, Left, Original};
use crate::model::{Ensure, format_mode, parse_mode};

/// `$HOLO_STATE_DIR/<entity>.toml` for the file plugin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// What the path was brought to.
    pub ensure: Ensure,
    /// `sha256:HEX` of the file left behind, when its content was managed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// The target of the link the plugin made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// What was at the path before the plugin first changed it.
    pub original: OriginalRecord,
}

/// The original of a path, kept so that scrubbing can put it back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OriginalRecord {
    /// `none`, `file` (its content is in `$HOLO_STATE_DIR/base/PATH`),
    /// `directory` or `link`.
    pub kind: OriginalKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// An original link's target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// The kinds of original the plugin can restore.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OriginalKind {
    None,
    File,
    Directory,
    Link,
}

impl Record {
    /// What the guard compares the current state against.
    pub fn left(&self) -> Left {
        Left {
            kind: Kind::of(self.ensure),
            checksum: self.checksum.clone(),
            target: self.target.as_ref().map(PathBuf::from),
        }
    }
}

impl OriginalRecord {
    /// Nothing was there.
    pub fn none() -> OriginalRecord {
        OriginalRecord {
            kind: OriginalKind::None,
            owner: None,
            group: None,
            mode: None,
            target: None,
        }
    }

    /// A link to `target` owned by `uid:gid` was there.
    pub fn link(target: &Path, uid: u32, gid: u32) -> OriginalRecord {
        OriginalRecord {
            kind: OriginalKind::Link,
            owner: Some(uid),
            group: Some(gid),
            mode: None,
            target: Some(target.to_string_lossy().into_owned()),
        }
    }

    /// A file or directory with these attributes was there.
    pub fn existing(kind: OriginalKind, uid: u32, gid: u32, mode: u32) -> OriginalRecord {
        OriginalRecord {
            kind,
            owner: Some(uid),
            group: Some(gid),
            mode: Some(format_mode(mode)),
            target: None,
        }
    }

    /// The decision input.
    pub fn original(&self) -> Original {
        match self.kind {
            OriginalKind::None => Original::None,
            OriginalKind::File => Original::File,
            OriginalKind::Directory => Original::Directory,
            OriginalKind::Link => Original::Link,
        }
    }

    /// The recorded attributes; the defaults only apply to a hand-edited
    /// record that lost them.
    pub fn attributes(&self) -> (u32, u32, u32) {
        let mode = self
            .mode
            .as_deref()
            .and_then(|text| parse_mode(text).ok())
            .unwrap_or(0o644);
        (self.owner.unwrap_or(0), self.group.unwrap_or(0), mode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_toml() {
        let record = Record {
            ensure: Ensure::Present,
            checksum: Some("sha256:ab".into()),
            owner: Some(0),
            group: Some(0),
            mode: Some("0644".into()),
            target: None,
            original: OriginalRecord::existing(OriginalKind::File, 0, 4, 0o640),
        };
        let text = toml::to_string(&record).expect("serialise");
        assert!(text.contains("[original]\nkind = \"file\""), "{text}");
        assert_eq!(toml::from_str::<Record>(&text).expect("parse"), record);
        assert_eq!(record.original.attributes(), (0, 4, 0o640));
        assert_eq!(
            record.left(),
            Left {
                kind: Kind::File,
                checksum: Some("sha256:ab".into()),
                target: None,
            }
        );
    }
}
