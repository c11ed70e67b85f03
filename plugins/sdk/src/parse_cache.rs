//! The parsed form of resource files, kept between runs, so that a scan
//! parses only the files that changed, as make and ninja rebuild only what
//! changed: `ROOT/var/cache/holo/parsed/ID`, one file per plugin, owner-only
//! (resources may hold secrets).
//!
//! A resource file's entry is keyed by its device, inode, size, mtime and
//! ctime, and holds each table as the loader left it (properties rendered,
//! the common ones taken out), one JSON line per table. An entry is used
//! only when the file's ctime is older than the cache file, as git treats
//! racily clean entries: a file changed in the clock tick in which the
//! cache was written is parsed again.
//!
//! When templates took part in a file's tables (a rendered property, `if`
//! or `unless`), the entry also holds a fingerprint of what they saw: the
//! facts (custom facts included), the data, the environment but
//! `HOLO_CACHE_DIR` (which the driver makes anew for every run), and the
//! content of every file of the resource directory that they read or
//! looked for. The entry is used only when the fingerprint is the same now.
//!
//! Only files of [`CACHE_FROM_TABLES`] tables or more are kept: a smaller
//! one parses in less time than the check takes; and only resources read
//! in place, since a copy is new in every run. A cache that cannot be read
//! or written only means a parse, never an error.

use std::collections::HashMap;
use std::ops::Range;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::env::Env;
use crate::root_fs::RootFs;
use crate::template::TemplateContext;

/// A file of this many tables or more is kept.
pub(crate) const CACHE_FROM_TABLES: usize = 64;

/// Where the caches of all plugins are, below the root.
const CACHE_DIR: &str = "var/cache/holo/parsed";

/// The first line: a cache of another format is not read.
const FORMAT_LINE: &str = "holo parsed resources 1";

/// What identifies one version of a resource file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FileKey {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileKey {
    pub(crate) fn of(meta: &std::fs::Metadata) -> FileKey {
        FileKey {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// The line before a file's tables.
#[derive(Serialize, Deserialize)]
struct Header {
    path: PathBuf,
    key: FileKey,
    /// What templates saw, when they took part.
    fingerprint: Option<String>,
    /// The files of the resource directory that templates read or looked for.
    looked_up: Vec<PathBuf>,
    tables: usize,
}

/// One table as the loader leaves it, written.
#[derive(Serialize)]
pub(crate) struct TableOut<'a, C> {
    pub(crate) resource: serde_json::Value,
    pub(crate) common: &'a C,
    pub(crate) line: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) skipped: &'a Option<String>,
    pub(crate) key_offsets: &'a [usize],
}

/// One table as the loader leaves it, read back.
#[derive(Deserialize)]
pub(crate) struct TableIn<R, C> {
    pub(crate) resource: R,
    pub(crate) common: C,
    pub(crate) line: usize,
    #[serde(default)]
    pub(crate) skipped: Option<String>,
    pub(crate) key_offsets: Vec<usize>,
}

/// A stored entry: its header and where its table lines are in the text.
struct Stored {
    header: Header,
    lines: Range<usize>,
}

/// What the next cache holds for one file.
enum Next {
    /// The stored entry, unchanged.
    Kept(PathBuf),
    Fresh(Header, Vec<String>),
}

/// A stored entry that is still good: its table lines and the files its
/// templates read.
pub(crate) struct Hit<'c> {
    pub(crate) tables: std::str::Lines<'c>,
    /// How many lines `tables` gives.
    pub(crate) count: usize,
    pub(crate) looked_up: &'c [PathBuf],
}

/// The cache of one plugin, read at the start of a scan and written at
/// its end when anything changed.
pub(crate) struct ParseCache {
    /// `None` when there is no cache to read or write.
    path: Option<PathBuf>,
    /// The cache file's mtime: files changed since are parsed again.
    stamp: (i64, i64),
    text: String,
    stored: HashMap<PathBuf, Stored>,
    next: Vec<Next>,
    changed: bool,
    pub(crate) keep_from: usize,
}

impl ParseCache {
    /// Reads the plugin's cache; an empty one when there is none or it
    /// cannot be read.
    pub(crate) fn open(env: &Env) -> ParseCache {
        // A copy of the resources (generators ran, or the plugin does not
        // read them in place) is new in every run: nothing to keep. Nor is
        // a one-off's resource, which must not replace the cache of the
        // plugin's own resource directory.
        let static_dir = env.root_join("usr/share/holo").join(&env.plugin_id);
        let in_place = env.resource_dir == env.resource_origin && env.resource_dir == static_dir;
        let path = in_place.then(|| env.root_join(CACHE_DIR).join(&env.plugin_id));
        // Test mode only: a smaller threshold, so that tests can use the
        // cache with a few tables.
        let keep_from = env
            .test_mode
            .then(|| std::env::var("HOLO_TEST_PARSE_CACHE_FROM").ok())
            .flatten()
            .and_then(|text| text.parse().ok())
            .filter(|_| in_place)
            .unwrap_or(if in_place {
                CACHE_FROM_TABLES
            } else {
                usize::MAX
            });
        let mut cache = ParseCache {
            path,
            stamp: (0, 0),
            text: String::new(),
            stored: HashMap::new(),
            next: Vec::new(),
            changed: false,
            keep_from,
        };
        if let Ok(fs) = env.root_fs() {
            cache.read(&fs);
        }
        cache
    }

    fn read(&mut self, fs: &RootFs) {
        let Some(path) = &self.path else { return };
        let Ok(file) = fs.open(path) else { return };
        let Ok(meta) = file.metadata() else { return };
        let mut text = String::new();
        if std::io::Read::read_to_string(&mut &file, &mut text).is_err() {
            return;
        }
        self.stamp = (meta.mtime(), meta.mtime_nsec());
        self.stored = index(&text).unwrap_or_default();
        self.text = text;
    }

    /// The stored entry of `path`, when it is for this version of the file
    /// and nothing since changed what its templates saw (`fingerprint`
    /// gives that now, for the files they looked up).
    pub(crate) fn lookup(
        &self,
        path: &Path,
        key: FileKey,
        fingerprint: impl FnOnce(&[PathBuf]) -> Option<String>,
    ) -> Option<Hit<'_>> {
        let stored = self.stored.get(path)?;
        let header = &stored.header;
        if header.key != key || key.ctime >= self.stamp {
            return None;
        }
        if let Some(stored_print) = &header.fingerprint
            && fingerprint(&header.looked_up).as_ref() != Some(stored_print)
        {
            return None;
        }
        Some(Hit {
            tables: self.text.get(stored.lines.clone())?.lines(),
            count: header.tables,
            looked_up: &header.looked_up,
        })
    }

    /// Keeps the stored entry of `path` for the next cache.
    pub(crate) fn keep(&mut self, path: &Path) {
        self.next.push(Next::Kept(path.to_path_buf()));
    }

    /// Puts a freshly parsed file into the next cache.
    pub(crate) fn put(
        &mut self,
        path: &Path,
        key: FileKey,
        fingerprint: Option<String>,
        looked_up: Vec<PathBuf>,
        tables: Vec<String>,
    ) {
        let header = Header {
            path: path.to_path_buf(),
            key,
            fingerprint,
            looked_up,
            tables: tables.len(),
        };
        self.next.push(Next::Fresh(header, tables));
        self.changed = true;
    }

    /// Writes the next cache when it differs from the stored one: through
    /// a temp file and a rename, so that a reader sees one or the other.
    pub(crate) fn write(self, env: &Env) {
        let dropped = self.next.len() != self.stored.len();
        let Some(path) = &self.path else { return };
        if !self.changed && !dropped {
            return;
        }
        let Ok(fs) = env.root_fs() else { return };
        if self.next.is_empty() {
            let _ = fs.remove_file(path);
            return;
        }
        let mut out = String::with_capacity(self.text.len().max(4096));
        out.push_str(FORMAT_LINE);
        out.push('\n');
        for next in &self.next {
            let (header, lines) = match next {
                Next::Kept(kept) => match self.stored.get(kept) {
                    Some(stored) => (
                        &stored.header,
                        self.text.get(stored.lines.clone()).unwrap_or_default(),
                    ),
                    None => continue,
                },
                Next::Fresh(header, tables) => {
                    push_entry(&mut out, header, tables.iter().map(String::as_str));
                    continue;
                }
            };
            push_entry(&mut out, header, lines.lines());
        }
        let _ = write_file(&fs, path, out.as_bytes());
    }
}

fn push_entry<'l>(out: &mut String, header: &Header, tables: impl Iterator<Item = &'l str>) {
    let Ok(line) = serde_json::to_string(header) else {
        return;
    };
    out.push_str(&line);
    out.push('\n');
    for table in tables {
        out.push_str(table);
        out.push('\n');
    }
}

/// The entries of a cache's text; `None` when it is not one.
fn index(text: &str) -> Option<HashMap<PathBuf, Stored>> {
    let mut stored = HashMap::new();
    let rest = text.strip_prefix(FORMAT_LINE)?.strip_prefix('\n')?;
    let mut offset = text.len() - rest.len();
    let mut lines = rest.split_inclusive('\n');
    while let Some(line) = lines.next() {
        offset += line.len();
        let header: Header = serde_json::from_str(line).ok()?;
        let start = offset;
        for _ in 0..header.tables {
            let table = lines.next().filter(|table| table.ends_with('\n'))?;
            offset += table.len();
        }
        stored.insert(
            header.path.clone(),
            Stored {
                header,
                lines: start..offset,
            },
        );
    }
    Some(stored)
}

fn write_file(fs: &RootFs, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    fs.create_dir_all(dir)?;
    let _ = fs.set_mode(dir, 0o700);
    // What a killed writer left.
    let _ = crate::atomic::sweep_leftovers(fs, dir);
    let dir_file = fs.open(dir)?;
    let temp = crate::temp_file::TempFile::create(&dir_file)?;
    std::io::Write::write_all(&mut &temp.file, bytes)?;
    let name = path.file_name().unwrap_or_default();
    temp.rename_to(name)
}

/// What templates see, as a digest: the facts, the data, the environment
/// but `HOLO_CACHE_DIR`, and every file in `looked_up` (its content, or
/// that it is not there).
pub(crate) fn fingerprint(context: &TemplateContext, looked_up: &[PathBuf]) -> String {
    let mut digest = Sha256::new();
    let mut part = |bytes: &[u8]| {
        digest.update((bytes.len() as u64).to_le_bytes());
        digest.update(bytes);
    };
    part(context.facts().to_toml().as_bytes());
    part(context.data_toml().as_bytes());
    let mut vars: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os()
        .filter(|(key, _)| key != "HOLO_CACHE_DIR")
        .collect();
    vars.sort();
    for (key, value) in &vars {
        part(key.as_encoded_bytes());
        part(value.as_encoded_bytes());
    }
    for path in looked_up {
        part(path.as_os_str().as_encoded_bytes());
        match std::fs::read(path) {
            Ok(bytes) => part(&Sha256::digest(&bytes)),
            Err(err) => part(err.kind().to_string().as_bytes()),
        }
    }
    digest
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_finds_each_entry_and_refuses_a_torn_cache() {
        let key = FileKey {
            dev: 1,
            ino: 2,
            size: 3,
            mtime: (4, 5),
            ctime: (6, 7),
        };
        let mut out = format!("{FORMAT_LINE}\n");
        for (name, tables) in [
            ("/r/a.toml", vec!["{\"a\":1}", "{\"a\":2}"]),
            ("/r/b.toml", vec!["{}"]),
        ] {
            let header = Header {
                path: PathBuf::from(name),
                key,
                fingerprint: None,
                looked_up: Vec::new(),
                tables: tables.len(),
            };
            push_entry(&mut out, &header, tables.into_iter());
        }
        let stored = index(&out).expect("index");
        let a = &stored[Path::new("/r/a.toml")];
        assert_eq!(&out[a.lines.clone()], "{\"a\":1}\n{\"a\":2}\n");
        let b = &stored[Path::new("/r/b.toml")];
        assert_eq!(&out[b.lines.clone()], "{}\n");
        assert!(index(&out[..out.len() - 3]).is_none(), "a table is missing");
        assert!(index("another format\n").is_none());
    }
}
