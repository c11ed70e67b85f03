//! What the command line asks of a one-off: its resources and how to run.

use std::path::{Path, PathBuf};

/// What the command line asks of `ensure`.
#[derive(Debug, Clone, PartialEq)]
pub struct EnsureRequest {
    /// The resource directory of the one-off: for flags, one file holding
    /// the one-table document, `[[KIND]]` and the properties.
    pub resources: Vec<ResourceEntry>,
    /// `--noop`: say what would change.
    pub noop: bool,
    /// `--force-apply`: as `holo apply --force`.
    pub force: bool,
    /// The flag that set each property, as written (`--version` sets
    /// `ensure`), so that messages name what the user typed.
    pub flags_given: Vec<(String, String)>,
}

/// The name of the resource file that `ensure` writes from flags.
pub(crate) const FLAGS_FILE: &str = "ensure.toml";

impl EnsureRequest {
    /// The table the flags gave (without `name`), for [`Ensured`]; `None`
    /// for resources that are not one table.
    pub(crate) fn flags_table(&self) -> Option<toml::Table> {
        let [ResourceEntry::File { path, content }] = self.resources.as_slice() else {
            return None;
        };
        if path != Path::new(FLAGS_FILE) {
            return None;
        }
        let document: toml::Table = content.parse().ok()?;
        let (_, tables) = document.into_iter().next()?;
        let mut table = tables.as_array()?.first()?.as_table()?.clone();
        table.remove("name");
        Some(table)
    }
}

/// One entry of a one-off's resource directory, at `path` below it.
#[derive(Debug, Clone, PartialEq)]
pub enum ResourceEntry {
    /// A file with this content.
    File { path: PathBuf, content: String },
    /// A symbolic link to `target`, an absolute path, which the output
    /// names as `shown` (the path as the user gave it).
    Link {
        path: PathBuf,
        target: PathBuf,
        shown: String,
    },
}
