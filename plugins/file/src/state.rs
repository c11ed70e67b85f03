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

impl Record {
    /// The record from the lines `toml::to_string` writes for it (the SDK's
    /// `state::read_with`), without the TOML parser, which costs more than
    /// the rest of a no-op check. `None` for anything else (comments,
    /// escapes, other keys or spacing, a key given twice, a value out of
    /// range), which the SDK then reads with the TOML parser.
    pub fn from_plain(text: &str) -> Option<Record> {
        let mut top = PlainTable::new(&["ensure", "checksum", "owner", "group", "mode", "target"]);
        let mut original = PlainTable::new(&["kind", "owner", "group", "mode", "target"]);
        let mut in_original = false;
        for line in text.lines() {
            if line.is_empty() {
                continue;
            }
            if line == "[original]" && !in_original {
                in_original = true;
                continue;
            }
            let (key, value) = line.split_once(" = ")?;
            match in_original {
                false => top.set(key, value)?,
                true => original.set(key, value)?,
            }
        }
        if !in_original {
            return None;
        }
        let ensure = top.string("ensure")??;
        let kind = original.string("kind")??;
        Some(Record {
            ensure: [
                Ensure::Present,
                Ensure::Absent,
                Ensure::Directory,
                Ensure::Link,
            ]
            .into_iter()
            .find(|known| known.as_str() == ensure)?,
            checksum: top.string("checksum")?,
            owner: top.number("owner")?,
            group: top.number("group")?,
            mode: top.string("mode")?,
            target: top.string("target")?,
            original: OriginalRecord {
                kind: match kind.as_str() {
                    "none" => OriginalKind::None,
                    "file" => OriginalKind::File,
                    "directory" => OriginalKind::Directory,
                    "link" => OriginalKind::Link,
                    _ => return None,
                },
                owner: original.number("owner")?,
                group: original.number("group")?,
                mode: original.string("mode")?,
                target: original.string("target")?,
            },
        })
    }
}

/// The raw values of one table's `key = value` lines, for the keys it may
/// hold.
struct PlainTable<'a> {
    keys: &'static [&'static str],
    values: [Option<&'a str>; 6],
}

impl<'a> PlainTable<'a> {
    fn new(keys: &'static [&'static str]) -> PlainTable<'a> {
        PlainTable {
            keys,
            values: [None; 6],
        }
    }

    /// `None` for a key the table does not hold, or one given twice.
    fn set(&mut self, key: &str, value: &'a str) -> Option<()> {
        let index = self.keys.iter().position(|known| *known == key)?;
        match self.values.get_mut(index)?.replace(value) {
            None => Some(()),
            Some(_) => None,
        }
    }

    fn raw(&self, key: &str) -> Option<&'a str> {
        let index = self.keys.iter().position(|known| *known == key)?;
        self.values.get(index).copied().flatten()
    }

    /// `Some(None)` for a missing key, `None` for a value that is not a
    /// string without escapes.
    fn string(&self, key: &str) -> Option<Option<String>> {
        let Some(raw) = self.raw(key) else {
            return Some(None);
        };
        let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
        let plain = !inner
            .chars()
            .any(|c| c == '"' || c == '\\' || c.is_control());
        plain.then(|| Some(inner.to_string()))
    }

    /// `Some(None)` for a missing key, `None` for a value that is not a
    /// decimal `u32` as TOML writes it.
    fn number(&self, key: &str) -> Option<Option<u32>> {
        let Some(raw) = self.raw(key) else {
            return Some(None);
        };
        let decimal = !raw.is_empty()
            && raw.bytes().all(|b| b.is_ascii_digit())
            && (raw == "0" || !raw.starts_with('0'));
        decimal.then(|| raw.parse().ok().map(Some))?
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

    fn plain(record: &Record) -> Option<Record> {
        Record::from_plain(&toml::to_string(record).expect("serialise"))
    }

    #[test]
    fn plain_lines_read_as_the_toml_parser_reads_them() {
        let full = Record {
            ensure: Ensure::Link,
            checksum: Some("sha256:ab".into()),
            owner: Some(4_000_000_000),
            group: Some(0),
            mode: Some("0644".into()),
            target: Some("/etc/ü".into()),
            original: OriginalRecord::link(Path::new("/old"), 1, 2),
        };
        assert_eq!(plain(&full), Some(full));
        for (ensure, kind) in [
            (Ensure::Present, OriginalKind::File),
            (Ensure::Absent, OriginalKind::Directory),
            (Ensure::Directory, OriginalKind::None),
        ] {
            let bare = Record {
                ensure,
                checksum: None,
                owner: None,
                group: None,
                mode: None,
                target: None,
                original: OriginalRecord::existing(kind, 0, 0, 0o755),
            };
            assert_eq!(plain(&bare), Some(bare));
        }
    }

    #[test]
    fn other_lines_are_left_to_the_toml_parser() {
        let original = "\n[original]\nkind = \"none\"\n";
        for top in [
            "ensure = \"present\" # edited",
            "ensure = 'present'",
            "ensure=\"present\"",
            "ensure = \"present\"\nensure = \"absent\"",
            "ensure = \"file\"",
            "ensure = \"present\"\nchecksum = \"a\\\"b\"",
            "ensure = \"present\"\nowner = -1",
            "ensure = \"present\"\nowner = 4294967296",
            "ensure = \"present\"\nowner = 007",
            "ensure = \"present\"\nowner = \"0\"",
            "ensure = \"present\"\nextra = 1",
            "checksum = \"sha256:ab\"",
            "ensure = \"present\"\n[other]",
        ] {
            let text = format!("{top}\n{original}");
            assert_eq!(Record::from_plain(&text), None, "{text}");
        }
        assert_eq!(Record::from_plain("ensure = \"present\"\n"), None);
        assert_eq!(
            Record::from_plain("ensure = \"present\"\n[original]\nkind = \"none\"\n[original]\n"),
            None
        );
    }

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
