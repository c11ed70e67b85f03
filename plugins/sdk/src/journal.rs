//! The record journal: `$HOLO_STATE_DIR/records.journal`, where a staging
//! batch appends the state records of its entities instead of writing a
//! file per record.
//!
//! The file starts with [`MAGIC`]; each entry is a header line
//! `put|drop <percent-encoded id> <length> <check>`, then `length` bytes of
//! record text (empty for `drop`) and a newline. `check` is the FNV-1a hash
//! (64 bits, 16 hex digits) of the operation, the id and the text, so a torn
//! or damaged tail is recognised: reading stops at the first entry that
//! does not check out, and the next append cuts the file there.
//!
//! A `put` holds the whole record text as a record file would, and takes
//! precedence over the entity's record file; a `drop` says the journal no
//! longer holds the entity (its record file, if any, counts again). The
//! batch appends its entries only once the files they describe are renamed
//! and their directories synced, with one write and one `fdatasync`, so a
//! crash never leaves a record ahead of its file.
//!
//! The journal does not grow without bound: when superseded entries
//! outnumber the live ones it is rewritten with only the live `put`s
//! ([`append`]), and a write outside a batch first folds it back into record
//! files and removes it ([`fold`]), so that per-process runs keep one small
//! file per record.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use rustix::fs::{AtFlags, Mode, OFlags};

use crate::error::{Error, Result};
use crate::root_fs::RootFs;

/// The journal's name in the state directory.
pub const JOURNAL_NAME: &str = "records.journal";
/// The first line: the format and its version.
const MAGIC: &[u8] = b"holo-record-journal 1\n";
/// Superseded entries tolerated before the journal is rewritten.
const COMPACT_SLACK: usize = 1024;

/// What the journal holds for an entity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// The record text.
    Put(String),
    /// Dropped: the record file, if any, counts.
    Drop,
}

/// Where an entry's record text is in [`Loaded::bytes`], or a drop.
#[derive(Clone)]
enum Slot {
    Put(std::ops::Range<usize>),
    Drop,
}

/// A journal as read, with what appends need. Record texts stay in
/// `bytes`, so that reading a journal allocates little per entry.
#[derive(Default)]
struct Loaded {
    /// The journal up to `valid_len`, as read and appended.
    bytes: Vec<u8>,
    /// Quick to hash: a batch looks up every entity's record.
    entries: holo_protocol::fast_hash::FastMap<String, Slot>,
    /// Entries in the file, superseded ones included.
    count: usize,
    /// Where the last entry that checks out ends; 0 for no file.
    valid_len: u64,
    /// The file's length (more than `valid_len` after a torn append).
    file_len: u64,
}

/// Journals read by this process, by state directory (its bytes: hashing a
/// `Path` walks its components, and a batch looks once per entity).
/// Appends keep them current; nothing else writes a journal while a
/// plugin runs.
static JOURNALS: Mutex<Option<HashMap<OsString, Loaded>>> = Mutex::new(None);

fn journals() -> MutexGuard<'static, Option<HashMap<OsString, Loaded>>> {
    JOURNALS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn journal_path(state_dir: &Path) -> PathBuf {
    state_dir.join(JOURNAL_NAME)
}

/// FNV-1a (64 bits) of the operation, the id and the text, in hex: it
/// tells a torn or zeroed tail from an entry, and costs little per entry.
fn check(op: &str, id: &str, text: &[u8]) -> String {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET;
    for part in [op.as_bytes(), b"\0", id.as_bytes(), b"\0", text] {
        for byte in part {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(PRIME);
        }
    }
    format!("{hash:016x}")
}

/// Appends one entry to `out`; gives where its text is.
fn encode(out: &mut Vec<u8>, id: &str, entry: Option<&str>) -> std::ops::Range<usize> {
    let (op, text) = match entry {
        Some(text) => ("put", text),
        None => ("drop", ""),
    };
    let encoded = crate::entity_file_name::encode_entity_id(id);
    let sum = check(op, id, text.as_bytes());
    out.extend_from_slice(format!("{op} {encoded} {} {sum}\n", text.len()).as_bytes());
    let start = out.len();
    out.extend_from_slice(text.as_bytes());
    out.push(b'\n');
    start..start + text.len()
}

impl Loaded {
    /// What the journal holds for `id`, as text.
    fn text(&self, id: &str) -> Option<Option<&str>> {
        match self.entries.get(id)? {
            Slot::Put(range) => Some(std::str::from_utf8(self.bytes.get(range.clone())?).ok()),
            Slot::Drop => Some(None),
        }
    }

    fn live(&self) -> impl Iterator<Item = (&String, &str)> {
        self.entries.iter().filter_map(|(id, slot)| match slot {
            Slot::Put(range) => Some((
                id,
                std::str::from_utf8(self.bytes.get(range.clone())?).ok()?,
            )),
            Slot::Drop => None,
        })
    }
}

/// Reads the journal text; an entry that does not check out ends it.
fn parse(path: &Path, mut bytes: Vec<u8>) -> Result<Loaded> {
    let mut loaded = Loaded {
        file_len: bytes.len() as u64,
        ..Loaded::default()
    };
    if bytes.len() < MAGIC.len() && MAGIC.starts_with(&bytes) {
        // Created by an append that was cut short: nothing in it counts.
        return Ok(loaded);
    }
    if !bytes.starts_with(MAGIC) {
        return Err(Error::new(format!(
            "{}: not a record journal of this plugin (it does not start with `{}`); remove the file to forget what was applied",
            path.display(),
            String::from_utf8_lossy(MAGIC).trim_end()
        )));
    }
    let mut at = MAGIC.len();
    loaded.valid_len = at as u64;
    while let Some((next, id, slot)) = parse_entry(&bytes, at) {
        loaded.entries.insert(id, slot);
        loaded.count += 1;
        at = next;
        loaded.valid_len = at as u64;
    }
    bytes.truncate(at);
    loaded.bytes = bytes;
    Ok(loaded)
}

/// The entry at `at`: where the next one starts, its id and what it holds.
fn parse_entry(bytes: &[u8], at: usize) -> Option<(usize, String, Slot)> {
    let rest = bytes.get(at..)?;
    let line_end = rest.iter().position(|byte| *byte == b'\n')?;
    let header = std::str::from_utf8(&rest[..line_end]).ok()?;
    let mut fields = header.split(' ');
    let (op, encoded, length, sum) = (
        fields.next()?,
        fields.next()?,
        fields.next()?,
        fields.next()?,
    );
    if fields.next().is_some() {
        return None;
    }
    let id = crate::entity_file_name::decode_entity_id(encoded)?;
    let length: usize = length.parse().ok()?;
    let text_start = line_end + 1;
    let text = rest.get(text_start..text_start.checked_add(length)?)?;
    if rest.get(text_start + length) != Some(&b'\n') || check(op, &id, text) != sum {
        return None;
    }
    let start = at + text_start;
    let slot = match op {
        "put" if std::str::from_utf8(text).is_ok() => Slot::Put(start..start + length),
        "drop" if length == 0 => Slot::Drop,
        _ => return None,
    };
    Some((start + length + 1, id, slot))
}

/// How [`load`] reaches the state directory.
enum Dir<'a> {
    Root(&'a RootFs),
    Open(&'a File),
}

/// The journal's bytes, `None` when there is none.
fn read_bytes(dir: &Dir<'_>, state_dir: &Path) -> io::Result<Option<Vec<u8>>> {
    let opened;
    let dir = match dir {
        Dir::Open(dir) => *dir,
        Dir::Root(fs) => match fs.open(state_dir) {
            Ok(dir) => {
                opened = dir;
                &opened
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(err),
        },
    };
    match rustix::fs::openat(
        dir,
        JOURNAL_NAME,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => {
            let mut bytes = Vec::new();
            File::from(fd).read_to_end(&mut bytes)?;
            Ok(Some(bytes))
        }
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(err) => Err(err.into()),
    }
}

/// Reads the journal in `state_dir` unless this process has it already.
fn load<'a>(
    cache: &'a mut HashMap<OsString, Loaded>,
    dir: Dir<'_>,
    state_dir: &Path,
) -> Result<&'a mut Loaded> {
    let key = state_dir.as_os_str();
    if !cache.contains_key(key) {
        let path = journal_path(state_dir);
        let loaded = match read_bytes(&dir, state_dir) {
            Ok(Some(bytes)) => parse(&path, bytes)?,
            Ok(None) => Loaded::default(),
            Err(err) if err.kind() == io::ErrorKind::NotADirectory => Loaded::default(),
            Err(err) => return Err(Error::io("read the record journal", &path, &err)),
        };
        cache.insert(key.to_owned(), loaded);
    }
    cache
        .get_mut(key)
        .ok_or_else(|| Error::new("the record journal cache lost an entry"))
}

/// Reads the journal in `state_dir` now, unless this process has it: a
/// batch calls it on a thread of its own while it reads the scan cache. An
/// error is left for the first look, which reads again and reports it.
pub fn preload(fs: &RootFs, state_dir: &Path) {
    let mut guard = journals();
    let cache = guard.get_or_insert_with(HashMap::new);
    let _ = load(cache, Dir::Root(fs), state_dir);
}

/// What the journal in `state_dir` holds for `id`; `None` when nothing.
pub fn lookup(fs: &RootFs, state_dir: &Path, id: &str) -> Result<Option<Entry>> {
    let mut guard = journals();
    let cache = guard.get_or_insert_with(HashMap::new);
    let loaded = load(cache, Dir::Root(fs), state_dir)?;
    Ok(loaded
        .text(id)
        .map(|text| text.map_or(Entry::Drop, |text| Entry::Put(text.to_string()))))
}

/// Calls `with` on the record text the journal in `state_dir` holds for
/// `id`; `None` when it holds none.
pub fn with_record<R>(
    fs: &RootFs,
    state_dir: &Path,
    id: &str,
    with: impl FnOnce(&str) -> R,
) -> Result<Option<R>> {
    let mut guard = journals();
    let cache = guard.get_or_insert_with(HashMap::new);
    Ok(match load(cache, Dir::Root(fs), state_dir)?.text(id) {
        Some(Some(text)) => Some(with(text)),
        _ => None,
    })
}

/// The ids the journal in `state_dir` holds a record for.
pub fn ids(fs: &RootFs, state_dir: &Path) -> Result<Vec<String>> {
    let mut guard = journals();
    let cache = guard.get_or_insert_with(HashMap::new);
    Ok(load(cache, Dir::Root(fs), state_dir)?
        .live()
        .map(|(id, _)| id.clone())
        .collect())
}

/// Appends `entries` (a record text, or `None` to drop) to the journal in
/// directory `dir` (the state directory `state_dir`, opened) with one write
/// and one `fdatasync`; rewrites it with only its live records when
/// superseded entries outnumber them.
pub fn append(dir: &File, state_dir: &Path, entries: &[(String, Option<String>)]) -> Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    let path = journal_path(state_dir);
    let fail = |err: io::Error| Error::io("append to the record journal", &path, &err);
    let mut guard = journals();
    let cache = guard.get_or_insert_with(HashMap::new);
    let loaded = load(cache, Dir::Open(dir), state_dir)?;
    let mut bytes = Vec::with_capacity(entries.len() * 256);
    let fresh = loaded.valid_len == 0;
    if fresh {
        bytes.extend_from_slice(MAGIC);
    }
    // Where each new text will be in `loaded.bytes`.
    let base = loaded.bytes.len();
    let mut slots = Vec::with_capacity(entries.len());
    for (id, text) in entries {
        let range = encode(&mut bytes, id, text.as_deref());
        slots.push(match text {
            Some(_) => Slot::Put(base + range.start..base + range.end),
            None => Slot::Drop,
        });
    }
    let file = File::from(
        rustix::fs::openat(
            dir,
            JOURNAL_NAME,
            OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|err| fail(err.into()))?,
    );
    // Cut what a torn append left, then write after the last good entry.
    if loaded.file_len != loaded.valid_len {
        file.set_len(loaded.valid_len).map_err(fail)?;
    }
    rustix::fs::seek(&file, rustix::fs::SeekFrom::Start(loaded.valid_len))
        .map_err(|err| fail(err.into()))?;
    (&file).write_all(&bytes).map_err(fail)?;
    file.sync_data().map_err(fail)?;
    if fresh {
        // A new journal's name is durable once the directory is synced.
        dir.sync_all().map_err(fail)?;
    }
    loaded.valid_len += bytes.len() as u64;
    loaded.file_len = loaded.valid_len;
    loaded.bytes.extend_from_slice(&bytes);
    for ((id, _), slot) in entries.iter().zip(slots) {
        loaded.entries.insert(id.clone(), slot);
        loaded.count += 1;
    }
    let live = loaded
        .entries
        .values()
        .filter(|slot| matches!(slot, Slot::Put(_)))
        .count();
    if loaded.count > 2 * live + COMPACT_SLACK {
        compact(dir, &path, loaded)?;
    }
    Ok(())
}

/// Rewrites the journal with its live records only: a temp file, synced,
/// renamed over it, the directory synced.
fn compact(dir: &File, path: &Path, loaded: &mut Loaded) -> Result<()> {
    let fail = |err: io::Error| Error::io("compact the record journal", path, &err);
    let mut live: Vec<(String, String)> = loaded
        .live()
        .map(|(id, text)| (id.clone(), text.to_string()))
        .collect();
    live.sort();
    let mut bytes = MAGIC.to_vec();
    let mut entries =
        holo_protocol::fast_hash::FastMap::with_capacity_and_hasher(live.len(), Default::default());
    for (id, text) in live {
        let range = encode(&mut bytes, &id, Some(&text));
        entries.insert(id, Slot::Put(range));
    }
    let temp = format!("{}{JOURNAL_NAME}", crate::temp_file::TEMP_PREFIX);
    let file = File::from(
        rustix::fs::openat(
            dir,
            temp.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|err| fail(err.into()))?,
    );
    (&file).write_all(&bytes).map_err(fail)?;
    file.sync_data().map_err(fail)?;
    rustix::fs::renameat(dir, temp.as_str(), dir, JOURNAL_NAME).map_err(|err| fail(err.into()))?;
    dir.sync_all().map_err(fail)?;
    loaded.count = entries.len();
    loaded.entries = entries;
    loaded.valid_len = bytes.len() as u64;
    loaded.file_len = loaded.valid_len;
    loaded.bytes = bytes;
    Ok(())
}

/// Folds the journal in `state_dir` back into record files and removes
/// it: every record file is written (temp file, rename), the file system
/// is synced once, and only then is the journal removed. A crash on the
/// way leaves the journal, which still takes precedence, so the fold is
/// simply done again. `record_file` names an entity's record file.
pub fn fold(fs: &RootFs, state_dir: &Path, record_file: impl Fn(&str) -> PathBuf) -> Result<()> {
    let mut guard = journals();
    let cache = guard.get_or_insert_with(HashMap::new);
    let loaded = load(cache, Dir::Root(fs), state_dir)?;
    if loaded.file_len == 0 {
        return Ok(());
    }
    let fail = |err: io::Error| Error::io("fold the record journal back into", state_dir, &err);
    let dir = fs.open(state_dir).map_err(fail)?;
    for (id, text) in loaded.live() {
        let record = record_file(id);
        let Some(name) = record.file_name() else {
            continue;
        };
        crate::temp_file::write_unsynced(&dir, name, text.as_bytes()).map_err(fail)?;
    }
    rustix::fs::syncfs(&dir).map_err(|err| fail(err.into()))?;
    rustix::fs::unlinkat(&dir, JOURNAL_NAME, AtFlags::empty()).map_err(|err| fail(err.into()))?;
    dir.sync_all().map_err(fail)?;
    *loaded = Loaded::default();
    Ok(())
}

/// Forgets the journals this process read, so that the next look reads the
/// file again (for tests that change state between runs in one process).
#[cfg(test)]
fn forget() {
    *journals() = None;
}

/// Reads a whole file; for tests.
#[cfg(test)]
fn read_all(path: &Path) -> Vec<u8> {
    let mut bytes = Vec::new();
    let _ = File::open(path).and_then(|mut file| file.read_to_end(&mut bytes));
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, PathBuf, File) {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = dir.path().join("state");
        std::fs::create_dir_all(&state).expect("mkdir");
        let handle = File::open(&state).expect("open");
        (dir, state, handle)
    }

    fn put(id: &str, text: &str) -> (String, Option<String>) {
        (id.to_string(), Some(text.to_string()))
    }

    #[test]
    fn appended_records_are_read_back_and_a_drop_forgets_one() {
        let (_dir, state, handle) = setup();
        let fs = RootFs::unconfined();
        append(
            &handle,
            &state,
            &[put("f:/a", "version = 1\n"), put("f:/b b", "x\n")],
        )
        .expect("append");
        append(&handle, &state, &[(String::from("f:/a"), None)]).expect("drop");
        forget();
        let read = |id| lookup(&fs, &state, id).expect("lookup");
        assert_eq!(read("f:/a"), Some(Entry::Drop));
        assert_eq!(read("f:/b b"), Some(Entry::Put("x\n".into())));
        assert_eq!(ids(&fs, &state).expect("ids"), ["f:/b b"]);
        let text = String::from_utf8(read_all(&state.join(JOURNAL_NAME))).expect("utf8");
        assert!(
            text.starts_with("holo-record-journal 1\nput f:%2Fa 12 "),
            "{text}"
        );
    }

    #[test]
    fn a_torn_tail_is_ignored_and_cut_by_the_next_append() {
        let (_dir, state, handle) = setup();
        let fs = RootFs::unconfined();
        append(&handle, &state, &[put("f:/a", "one\n")]).expect("append");
        let path = state.join(JOURNAL_NAME);
        let good = read_all(&path);
        let mut torn = Vec::new();
        encode(&mut torn, "f:/b", Some("two\n"));
        for cut in [1, torn.len() / 2, torn.len() - 1] {
            let mut bytes = good.clone();
            bytes.extend_from_slice(&torn[..cut]);
            std::fs::write(&path, &bytes).expect("tear");
            forget();
            assert_eq!(
                lookup(&fs, &state, "f:/b").expect("lookup"),
                None,
                "cut {cut}"
            );
            assert_eq!(
                lookup(&fs, &state, "f:/a").expect("lookup"),
                Some(Entry::Put("one\n".into()))
            );
        }
        append(&handle, &state, &[put("f:/c", "three\n")]).expect("append");
        forget();
        assert_eq!(
            lookup(&fs, &state, "f:/c").expect("lookup"),
            Some(Entry::Put("three\n".into()))
        );
        let mut ids = ids(&fs, &state).expect("ids");
        ids.sort();
        assert_eq!(ids, ["f:/a", "f:/c"]);
    }

    #[test]
    fn a_damaged_entry_ends_the_journal() {
        let (_dir, state, handle) = setup();
        let fs = RootFs::unconfined();
        append(
            &handle,
            &state,
            &[put("f:/a", "one\n"), put("f:/b", "two\n")],
        )
        .expect("append");
        let path = state.join(JOURNAL_NAME);
        let text = String::from_utf8(read_all(&path)).expect("utf8");
        std::fs::write(&path, text.replace("two", "twO")).expect("damage");
        forget();
        assert_eq!(ids(&fs, &state).expect("ids"), ["f:/a"]);
    }

    #[test]
    fn a_file_of_another_format_is_an_error_naming_it() {
        let (_dir, state, _handle) = setup();
        let fs = RootFs::unconfined();
        std::fs::write(state.join(JOURNAL_NAME), "something else\n").expect("write");
        forget();
        let err = lookup(&fs, &state, "f:/a").expect_err("not a journal");
        assert!(err.message().contains(JOURNAL_NAME), "{}", err.message());
        assert!(
            err.message().contains("remove the file"),
            "{}",
            err.message()
        );
    }

    #[test]
    fn superseded_entries_are_compacted_away() {
        let (_dir, state, handle) = setup();
        let fs = RootFs::unconfined();
        for round in 0..(COMPACT_SLACK + 10) {
            append(&handle, &state, &[put("f:/a", &format!("{round}\n"))]).expect("append");
        }
        let bytes = read_all(&state.join(JOURNAL_NAME));
        assert!(bytes.len() < 200 * 1024, "{} bytes", bytes.len());
        forget();
        assert_eq!(
            lookup(&fs, &state, "f:/a").expect("lookup"),
            Some(Entry::Put(format!("{}\n", COMPACT_SLACK + 9)))
        );
    }

    #[test]
    fn folding_writes_record_files_and_removes_the_journal() {
        let (_dir, state, handle) = setup();
        let fs = RootFs::unconfined();
        append(
            &handle,
            &state,
            &[put("f:/a", "one\n"), put("f:/b", "two\n")],
        )
        .expect("append");
        append(&handle, &state, &[(String::from("f:/b"), None)]).expect("drop");
        fold(&fs, &state, |id| {
            state.join(format!(
                "{}.toml",
                crate::entity_file_name::encode_entity_id(id)
            ))
        })
        .expect("fold");
        assert!(!state.join(JOURNAL_NAME).exists());
        assert_eq!(
            std::fs::read_to_string(state.join("f:%2Fa.toml")).expect("record"),
            "one\n"
        );
        assert!(!state.join("f:%2Fb.toml").exists());
        assert_eq!(lookup(&fs, &state, "f:/a").expect("lookup"), None);
    }
}
