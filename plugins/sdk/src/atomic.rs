//! Atomic file writes: a temp file in the target's own directory gets the
//! mode, the content and the owner, is synced and renamed over the target,
//! and the directory is synced. The target never holds a partial file.
//!
//! The directory is resolved once through [`RootFs`] (inside the root in
//! test mode), and the temp file, the rename and the sync all go through
//! that directory's descriptor.
//!
//! A writer killed between creating its temp file and the rename leaves the
//! temp file behind. `O_TMPFILE` with `linkat` would not avoid that: `linkat`
//! cannot replace an existing target, so the content still needs a name of
//! its own before the rename. So temp files carry our prefix, and the first
//! write into a directory in each process sweeps the leftovers there
//! ([`sweep_leftovers`]): a writer holds a shared `flock` on the directory
//! while its temp file exists, so when the sweep gets the lock exclusively,
//! every temp file there belongs to a writer that is gone. A retried write
//! lands in the same directory as the one that was killed, so the next
//! apply cleans up. A driver that starts a process per entity would have
//! each write list its directory; there the processes of one run share
//! their sweeps through marker files in the scan cache
//! ([`share_sweeps_in`]), so that each directory is listed once per run.
//!
//! A batch of a plugin that opts in ([`crate::Plugin::STAGES_WRITES`])
//! stages its writes instead ([`stage`]): each write leaves its temp file,
//! with content, owner and mode, in its directory, and [`commit_staged`]
//! makes all of them durable at once (one `syncfs` per file system), renames
//! them in the order they were staged, syncs each directory once, and only
//! then appends the batch's state records to the record journal
//! ([`crate::journal`]) with one write and one `fdatasync`, so a record is
//! never ahead of its file. A kill before the renames leaves every target
//! as it was; the temp files are swept as above.

use std::fs::{File, Permissions};
use std::hash::{BuildHasher, RandomState};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::os::unix::ffi::OsStrExt;
use std::sync::Mutex;

use rustix::fs::{AtFlags, FlockOperation, OFlags};
use sha2::Digest;

use crate::error::{Error, Result};
use crate::root_fs::{RootFs, entry_names};
use crate::temp_file::{TempFile, write_unsynced};

/// Attributes of the written file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Permission bits; `None` keeps the mode of an existing target, else 0644.
    pub mode: Option<u32>,
    /// Owner uid; `None` leaves it as the process creates it.
    pub uid: Option<u32>,
    /// Group gid; `None` leaves it as the process creates it.
    pub gid: Option<u32>,
}

impl WriteOptions {
    /// Options with just a mode.
    pub fn mode(mode: u32) -> Self {
        WriteOptions {
            mode: Some(mode),
            ..WriteOptions::default()
        }
    }
}

pub use crate::temp_file::TEMP_PREFIX;

/// Writes `contents` to `path` atomically. The parent directory must exist.
/// In a staging batch the write is staged (see [`stage`]).
pub fn write(fs: &RootFs, path: &Path, contents: &[u8], options: &WriteOptions) -> Result<()> {
    stage(fs, path, contents, options).map(drop)
}

/// Writes `contents` to `path` atomically, now; never staged.
fn write_now(fs: &RootFs, path: &Path, contents: &[u8], options: &WriteOptions) -> Result<()> {
    let fail = |err: io::Error| Error::io("write", path, &err);
    let (dir, name) = open_parent(fs, path)?;
    let mode = options.mode.unwrap_or_else(|| {
        rustix::fs::statat(&dir, name.as_os_str(), AtFlags::empty())
            .map_or(0o644, |stat| stat.st_mode & 0o7777)
    });
    sweep_once(&dir, path.parent().unwrap_or(Path::new("."))).map_err(fail)?;
    rustix::fs::flock(&dir, FlockOperation::LockShared).map_err(|err| fail(err.into()))?;
    let temp = TempFile::create(&dir).map_err(fail)?;
    let file = &temp.file;
    file.set_permissions(Permissions::from_mode(mode))
        .map_err(fail)?;
    (&temp.file).write_all(contents).map_err(fail)?;
    if options.uid.is_some() || options.gid.is_some() {
        std::os::unix::fs::fchown(file, options.uid, options.gid).map_err(fail)?;
        // chown clears setuid/setgid bits; set the mode again.
        file.set_permissions(Permissions::from_mode(mode))
            .map_err(fail)?;
    }
    file.sync_all().map_err(fail)?;
    temp.rename_to(name.as_os_str()).map_err(fail)?;
    // The rename is durable only once the directory entry is synced.
    dir.sync_all().map_err(|err| {
        Error::io(
            "sync directory",
            path.parent().unwrap_or(Path::new(".")),
            &err,
        )
    })
}

/// The owner and mode of a staged temp file: what the target has once the
/// batch is committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Staged {
    pub uid: u32,
    pub gid: u32,
    pub mode: u32,
}

/// Staged files at which a batch is committed.
const STAGED_FILES_LIMIT: usize = 4096;
/// Staged bytes at which a batch is committed.
const STAGED_BYTES_LIMIT: usize = 256 << 20;
/// Directories (each an open descriptor) at which a batch is committed.
const STAGED_DIRS_LIMIT: usize = 256;

/// A directory that holds staged temp files, with a shared `flock` so that
/// no sweep removes them.
struct StagedDir {
    path: PathBuf,
    dir: File,
    device: u64,
    /// The owner and group a file created in it gets: this process's, or
    /// the directory's group when the directory is setgid.
    new_file_owner: (u32, u32),
}

/// One staged write: temp name, target name, and the entity it is for.
struct StagedRename {
    dir: usize,
    temp: String,
    target: std::ffi::OsString,
    owner: usize,
}

/// A state record that waits for its entity's files: appended to the
/// journal of state directory `dir` once they are in place.
struct StagedRecord {
    dir: usize,
    id: String,
    /// The record's file name, for a batch that writes record files.
    file_name: std::ffi::OsString,
    text: String,
    owner: usize,
}

/// The writes staged since the last commit.
#[derive(Default)]
struct Batch {
    records: Vec<StagedRecord>,
    record_ids: HashSet<String>,
    dirs: Vec<StagedDir>,
    /// By the directory's bytes (hashing a `Path` walks its components).
    dir_index: HashMap<std::ffi::OsString, usize>,
    renames: Vec<StagedRename>,
    targets: HashSet<PathBuf>,
    bytes: usize,
    /// The entity that stages now (the batch runner's line number).
    owner: usize,
    /// Entities with staged writes that another entity may read (not only
    /// their state records).
    visible_owners: HashSet<usize>,
    /// Staged writes that a commit could not finish, by entity.
    failures: Vec<(usize, Error)>,
    /// Test mode only: the step of a commit at which the process kills itself.
    kill_at: Option<String>,
    /// Staged files at which the batch is committed.
    files_limit: usize,
    /// Records go to the journal, not to a file each.
    journal: bool,
}

thread_local! {
    /// The batch runner applies entities on one thread; other threads
    /// (and tests running in parallel) write at once.
    static BATCH: RefCell<Option<Batch>> = const { RefCell::new(None) };
}

fn with_batch<R>(f: impl FnOnce(&mut Option<Batch>) -> R) -> R {
    BATCH.with(|batch| f(&mut batch.borrow_mut()))
}

/// Opens a staging batch: from now on [`write`] and [`stage`] stage, and
/// state records wait for their files; with `journal` they then go to the
/// record journal, else to a file each.
/// For tests: `kill_at` names a step of the commit (`staged`, `durable`,
/// `renamed`, `synced`) at which the process kills itself; `files_limit`
/// commits after fewer files than [`STAGED_FILES_LIMIT`].
pub(crate) fn begin_staging(kill_at: Option<String>, files_limit: Option<usize>, journal: bool) {
    with_batch(|batch| {
        *batch = Some(Batch {
            kill_at,
            files_limit: files_limit.unwrap_or(STAGED_FILES_LIMIT),
            journal,
            ..Batch::default()
        })
    });
}

/// Commits what is staged and closes the batch: writes are immediate again.
pub(crate) fn end_staging() -> Vec<(usize, Error)> {
    with_batch(|batch| {
        let failures = batch.as_mut().map(commit).unwrap_or_default();
        *batch = None;
        failures
    })
}

/// Tells which entity the writes staged from now on belong to.
pub(crate) fn set_staging_owner(owner: usize) {
    with_batch(|batch| {
        if let Some(batch) = batch.as_mut() {
            batch.owner = owner;
        }
    });
}

/// Whether writes are staged and not yet committed.
pub(crate) fn staged_pending() -> bool {
    with_batch(|batch| {
        batch
            .as_ref()
            .is_some_and(|batch| !batch.renames.is_empty() || !batch.records.is_empty())
    })
}

/// Whether a staging batch is open, and whether it keeps records in the
/// journal.
pub(crate) fn staging() -> Option<bool> {
    with_batch(|batch| batch.as_ref().map(|batch| batch.journal))
}

/// Stages the state record `text` of entity `id` in `state_dir`: it goes
/// to the record journal once the entity's staged files are in place.
pub(crate) fn stage_record(
    fs: &RootFs,
    state_dir: &Path,
    id: &str,
    file_name: &str,
    text: String,
) -> Result<()> {
    with_batch(|batch| {
        let Some(batch) = batch.as_mut() else {
            return Err(Error::new("no staging batch is open for the state record"));
        };
        if batch.record_ids.contains(id) {
            // A second record of one entity follows the first.
            let mut failures = commit(batch);
            batch.failures.append(&mut failures);
        }
        let dir = staged_dir(batch, fs, state_dir)?;
        batch.record_ids.insert(id.to_string());
        batch.records.push(StagedRecord {
            dir,
            id: id.to_string(),
            file_name: file_name.into(),
            text,
            owner: batch.owner,
        });
        Ok(())
    })
}

/// Appends a `drop` of entity `id` to the record journal in `state_dir`,
/// after committing a staged record of it.
pub(crate) fn drop_record(fs: &RootFs, state_dir: &Path, id: &str) -> Result<()> {
    with_batch(|batch| {
        if let Some(batch) = batch.as_mut().filter(|batch| batch.record_ids.contains(id)) {
            let mut failures = commit(batch);
            batch.failures.append(&mut failures);
        }
    });
    let dir = fs
        .open(state_dir)
        .map_err(|err| Error::io("open state directory", state_dir, &err))?;
    crate::journal::append(&dir, state_dir, &[(id.to_string(), None)])
}

/// Whether entity `owner` has staged writes that others may read.
pub(crate) fn staged_visible_for(owner: usize) -> bool {
    with_batch(|batch| {
        batch
            .as_ref()
            .is_some_and(|batch| batch.visible_owners.contains(&owner))
    })
}

/// Writes a state record file now; in a batch records go to the journal
/// instead ([`stage_record`]).
pub(crate) fn write_state_record(fs: &RootFs, path: &Path, contents: &[u8]) -> Result<()> {
    write_now(fs, path, contents, &WriteOptions::default())
}

/// Whether the staged writes reached a limit, so that the batch should be
/// committed before the next entity.
pub(crate) fn staging_full() -> bool {
    with_batch(|batch| {
        batch.as_ref().is_some_and(|batch| {
            batch.renames.len() >= batch.files_limit
                || batch.bytes >= STAGED_BYTES_LIMIT
                || batch.dirs.len() >= STAGED_DIRS_LIMIT
        })
    })
}

/// Commits the staged writes and returns those that failed, by entity.
pub(crate) fn commit_and_take_failures() -> Vec<(usize, Error)> {
    with_batch(|batch| {
        let Some(batch) = batch.as_mut() else {
            return Vec::new();
        };
        let mut failures = commit(batch);
        failures.append(&mut batch.failures);
        failures
    })
}

/// Puts every staged write in place now. A plugin calls this before it
/// changes a path in a way that a staged write must not cross (removing a
/// directory), or reads back what it wrote. Failures are reported for the
/// entities that staged the writes.
pub fn commit_staged() {
    with_batch(|batch| {
        if let Some(batch) = batch.as_mut() {
            let mut failures = commit(batch);
            batch.failures.append(&mut failures);
        }
    });
}

/// Whether a staged write of the current entity failed in a commit.
pub fn staging_failed() -> bool {
    with_batch(|batch| {
        batch.as_ref().is_some_and(|batch| {
            batch
                .failures
                .iter()
                .any(|(owner, _)| *owner == batch.owner)
        })
    })
}

/// Writes `contents` to `path` atomically; in a staging batch, leaves the
/// temp file with content, owner and mode for the batch's commit and
/// returns its owner and mode, read back from the file. Without a batch
/// the write is immediate and `None` is returned.
pub fn stage(
    fs: &RootFs,
    path: &Path,
    contents: &[u8],
    options: &WriteOptions,
) -> Result<Option<Staged>> {
    with_batch(|batch| match batch.as_mut() {
        Some(batch) => stage_in(batch, fs, path, contents, options).map(Some),
        None => write_now(fs, path, contents, options).map(|()| None),
    })
}

/// Stages one write in `batch`; see [`stage`].
fn stage_in(
    batch: &mut Batch,
    fs: &RootFs,
    path: &Path,
    contents: &[u8],
    options: &WriteOptions,
) -> Result<Staged> {
    if batch.targets.contains(path) {
        // A second write of one path follows the first.
        let mut failures = commit(batch);
        batch.failures.append(&mut failures);
    }
    let fail = |err: io::Error| Error::io("write", path, &err);
    let parent = path.parent().unwrap_or(Path::new("."));
    let index = staged_dir(batch, fs, parent)?;
    let Some(name) = path.file_name() else {
        return Err(Error::new(format!(
            "cannot write {}: the path names no file",
            path.display()
        )));
    };
    let dir = &batch.dirs[index].dir;
    let mode = options.mode.unwrap_or_else(|| {
        rustix::fs::statat(dir, name, AtFlags::empty()).map_or(0o644, |stat| stat.st_mode & 0o7777)
    });
    // A new file already has the owner of the process (the usual wanted
    // one when holo runs as root): no chown then, and it is created with
    // its mode, so that most need no chmod either; a first apply of
    // thousands of files would pay both per file.
    let wrong_owner = |(owner, group): (u32, u32)| {
        options.uid.is_some_and(|uid| uid != owner) || options.gid.is_some_and(|gid| gid != group)
    };
    let chowned = wrong_owner(batch.dirs[index].new_file_owner);
    let created_mode = if chowned { 0o600 } else { mode & 0o777 };
    let temp = TempFile::create_with_mode(dir, created_mode).map_err(fail)?;
    (&temp.file).write_all(contents).map_err(fail)?;
    let set_owner_and_mode = || -> io::Result<rustix::fs::Stat> {
        std::os::unix::fs::fchown(&temp.file, options.uid, options.gid)?;
        // After chown, which clears setuid/setgid bits.
        temp.file.set_permissions(Permissions::from_mode(mode))?;
        Ok(rustix::fs::fstat(&temp.file)?)
    };
    let mut stat = if chowned {
        set_owner_and_mode().map_err(fail)?
    } else {
        let stat = rustix::fs::fstat(&temp.file).map_err(|err| fail(err.into()))?;
        if stat.st_mode & 0o7777 == mode {
            stat
        } else {
            // The umask, a default ACL or setuid bits: set it exactly.
            temp.file
                .set_permissions(Permissions::from_mode(mode))
                .map_err(fail)?;
            rustix::fs::fstat(&temp.file).map_err(|err| fail(err.into()))?
        }
    };
    // The file system gave it another owner after all: chown as usual.
    if !chowned && wrong_owner((stat.st_uid, stat.st_gid)) {
        stat = set_owner_and_mode().map_err(fail)?;
    }
    let temp_name = temp.keep();
    batch.renames.push(StagedRename {
        dir: index,
        temp: temp_name,
        target: name.to_os_string(),
        owner: batch.owner,
    });
    batch.targets.insert(path.to_path_buf());
    batch.bytes += contents.len();
    batch.visible_owners.insert(batch.owner);
    Ok(Staged {
        uid: stat.st_uid,
        gid: stat.st_gid,
        mode: stat.st_mode & 0o7777,
    })
}

/// The index of directory `parent` among the batch's directories, opened,
/// swept and locked the first time.
fn staged_dir(batch: &mut Batch, fs: &RootFs, parent: &Path) -> Result<usize> {
    if let Some(index) = batch.dir_index.get(parent.as_os_str()) {
        return Ok(*index);
    }
    let fail = |err: io::Error| Error::io("write into", parent, &err);
    let dir = fs
        .open_with(parent, OFlags::RDONLY | OFlags::DIRECTORY)
        .map_err(|err| match err.kind() {
            io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => Error::new(format!(
                "cannot write into {}: {}",
                parent.display(),
                missing_directory(parent)
            )),
            _ => fail(err),
        })?;
    sweep_once(&dir, parent).map_err(fail)?;
    rustix::fs::flock(&dir, FlockOperation::LockShared).map_err(|err| fail(err.into()))?;
    let stat = rustix::fs::fstat(&dir).map_err(|err| fail(err.into()))?;
    let group = if stat.st_mode & libc::S_ISGID != 0 {
        stat.st_gid
    } else {
        nix::unistd::getegid().as_raw()
    };
    batch.dirs.push(StagedDir {
        path: parent.to_path_buf(),
        dir,
        device: stat.st_dev,
        new_file_owner: (nix::unistd::geteuid().as_raw(), group),
    });
    batch
        .dir_index
        .insert(parent.as_os_str().to_owned(), batch.dirs.len() - 1);
    Ok(batch.dirs.len() - 1)
}

/// Test mode: the process kills itself at step `step` of a commit when
/// asked to, so that tests can check what each step leaves.
fn kill_point(batch: &Batch, step: &str) {
    if batch.kill_at.as_deref() == Some(step) {
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
    }
}

/// Makes every staged temp file durable (one `syncfs` per file system),
/// renames them in staging order, syncs each directory once and empties
/// the batch. Returns the writes that failed, by entity; their temp files
/// are removed.
fn commit(batch: &mut Batch) -> Vec<(usize, Error)> {
    let mut failures = Vec::new();
    let renames = std::mem::take(&mut batch.renames);
    let records = std::mem::take(&mut batch.records);
    let dirs = std::mem::take(&mut batch.dirs);
    batch.record_ids.clear();
    batch.dir_index.clear();
    batch.targets.clear();
    batch.visible_owners.clear();
    batch.bytes = 0;
    if renames.is_empty() && records.is_empty() {
        return failures;
    }
    kill_point(batch, "staged");
    let mut synced: Vec<u64> = Vec::new();
    let mut sync_error = None;
    for staged in &dirs {
        if synced.contains(&staged.device) {
            continue;
        }
        if let Err(err) = rustix::fs::syncfs(&staged.dir) {
            sync_error = Some(Error::io(
                "sync the file system of",
                &staged.path,
                &err.into(),
            ));
            break;
        }
        synced.push(staged.device);
    }
    kill_point(batch, "durable");
    // The entities whose files were renamed, by directory.
    let mut renamed: Vec<Vec<usize>> = vec![Vec::new(); dirs.len()];
    for staged in renames {
        let dir = &dirs[staged.dir];
        let result = match &sync_error {
            Some(err) => Err(err.clone()),
            None => rustix::fs::renameat(
                &dir.dir,
                staged.temp.as_str(),
                &dir.dir,
                staged.target.as_os_str(),
            )
            .map_err(|err| Error::io("write", &dir.path.join(&staged.target), &err.into())),
        };
        match result {
            Ok(()) => renamed[staged.dir].push(staged.owner),
            Err(err) => {
                let _ = rustix::fs::unlinkat(&dir.dir, staged.temp.as_str(), AtFlags::empty());
                failures.push((staged.owner, err));
            }
        }
    }
    crate::root_fs::entries_changed();
    kill_point(batch, "renamed");
    for (staged, mut owners) in dirs.iter().zip(renamed) {
        if owners.is_empty() {
            continue;
        }
        // The renames are durable only once the directory entries are synced.
        if let Err(err) = staged.dir.sync_all() {
            let err = Error::io("sync directory", &staged.path, &err);
            owners.dedup();
            failures.extend(owners.into_iter().map(|owner| (owner, err.clone())));
        }
    }
    kill_point(batch, "synced");
    append_records(&dirs, records, batch.journal, &mut failures);
    // A directory that a killed writer still held when the batch first
    // looked is swept now: nothing of this batch is left in it, and no
    // later write may come to sweep it. (Under holo the run lock keeps a
    // killed run's writers out; a driver without `run-lock` does not.)
    for staged in &dirs {
        let _ = rustix::fs::flock(&staged.dir, FlockOperation::Unlock);
        let _ = sweep_once(&staged.dir, &staged.path);
    }
    failures
}

/// Appends the records of the entities whose writes all succeeded to the
/// journal of their state directory, or writes them as files there (made
/// durable with one `syncfs`); a failure fails their entities.
fn append_records(
    dirs: &[StagedDir],
    records: Vec<StagedRecord>,
    journal: bool,
    failures: &mut Vec<(usize, Error)>,
) {
    let failed: HashSet<usize> = failures.iter().map(|(owner, _)| *owner).collect();
    let mut by_dir: Vec<Vec<StagedRecord>> = Vec::new();
    by_dir.resize_with(dirs.len(), Vec::new);
    for record in records {
        if !failed.contains(&record.owner) {
            let dir = record.dir;
            by_dir[dir].push(record);
        }
    }
    for (staged, records) in dirs.iter().zip(by_dir) {
        if records.is_empty() {
            continue;
        }
        let owners: Vec<usize> = records.iter().map(|record| record.owner).collect();
        let written = if journal {
            let entries: Vec<(String, Option<String>)> = records
                .into_iter()
                .map(|record| (record.id, Some(record.text)))
                .collect();
            crate::journal::append(&staged.dir, &staged.path, &entries)
        } else {
            write_record_files(staged, &records)
        };
        if let Err(err) = written {
            failures.extend(owners.into_iter().map(|owner| (owner, err.clone())));
        }
    }
}

/// Why `dir` is no directory to write into: a file in the way (the
/// nearest ancestor that exists and is not a directory), or nothing there.
pub(crate) fn missing_directory(dir: &Path) -> String {
    for ancestor in dir.ancestors() {
        match std::fs::symlink_metadata(ancestor) {
            Ok(meta) if meta.is_dir() || meta.is_symlink() => break,
            Ok(_) => {
                return format!(
                    "{} is a file, in the way of directory {}; move the file away or choose another path",
                    ancestor.display(),
                    dir.display()
                );
            }
            Err(_) => {}
        }
    }
    format!(
        "directory {} does not exist; create it first (for example with a directory resource)",
        dir.display()
    )
}

/// Writes record files into a staged directory: renamed, then one
/// `syncfs` and a sync of the directory.
fn write_record_files(staged: &StagedDir, records: &[StagedRecord]) -> Result<()> {
    let fail = |err: io::Error| Error::io("write state records in", &staged.path, &err);
    for record in records {
        write_unsynced(&staged.dir, &record.file_name, record.text.as_bytes()).map_err(fail)?;
    }
    rustix::fs::syncfs(&staged.dir).map_err(|err| fail(err.into()))?;
    staged.dir.sync_all().map_err(fail)
}

/// The directory that will hold `path`, opened, and `path`'s name in it.
fn open_parent(fs: &RootFs, path: &Path) -> Result<(File, std::ffi::OsString)> {
    match fs.open_parent(path) {
        Ok(opened) => Ok(opened),
        Err(err)
            if matches!(
                err.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            let parent = path.parent().unwrap_or(Path::new("."));
            Err(Error::new(format!(
                "cannot write {}: {}",
                path.display(),
                missing_directory(parent)
            )))
        }
        Err(err) => Err(Error::io("write", path, &err)),
    }
}

/// Makes `path` a symbolic link to `target` atomically: a temp link in the
/// same directory gets the owner (when given) and is renamed over `path`,
/// replacing a file or link there (never a directory). `target` is written
/// verbatim and need not exist.
pub fn symlink(fs: &RootFs, path: &Path, target: &Path, options: &WriteOptions) -> Result<()> {
    let fail = |err: io::Error| Error::io("create the link", path, &err);
    let (dir, name) = open_parent(fs, path)?;
    sweep_once(&dir, path.parent().unwrap_or(Path::new("."))).map_err(fail)?;
    rustix::fs::flock(&dir, FlockOperation::LockShared).map_err(|err| fail(err.into()))?;
    let random = RandomState::new();
    let mut attempt = 0u64;
    let temp = loop {
        let temp = format!("{TEMP_PREFIX}{:016x}", random.hash_one(attempt));
        match rustix::fs::symlinkat(target, &dir, temp.as_str()) {
            Ok(()) => break temp,
            Err(rustix::io::Errno::EXIST) if attempt < 100 => attempt += 1,
            Err(err) => return Err(fail(err.into())),
        }
    };
    let finish = || -> io::Result<()> {
        if options.uid.is_some() || options.gid.is_some() {
            rustix::fs::chownat(
                &dir,
                temp.as_str(),
                options.uid.map(rustix::fs::Uid::from_raw),
                options.gid.map(rustix::fs::Gid::from_raw),
                AtFlags::SYMLINK_NOFOLLOW,
            )?;
        }
        rustix::fs::renameat(&dir, temp.as_str(), &dir, name.as_os_str())?;
        Ok(())
    };
    if let Err(err) = finish() {
        let _ = rustix::fs::unlinkat(&dir, temp.as_str(), AtFlags::empty());
        return Err(fail(err));
    }
    dir.sync_all().map_err(|err| {
        Error::io(
            "sync directory",
            path.parent().unwrap_or(Path::new(".")),
            &err,
        )
    })
}

/// Where the processes of one run tell each other which directories they
/// swept: a marker file per directory (see [`share_sweeps_in`]).
static SHARED_SWEEPS: Mutex<Option<(RootFs, PathBuf)>> = Mutex::new(None);

/// Lets this process skip the sweep of a directory that an earlier process
/// of the same run swept, and tell later ones of its own sweeps, through
/// marker files in `markers`. That directory must live for one run only
/// (it is in the scan cache, which each scan clears): a killed writer's
/// leftovers are then swept by the next run, as before.
pub(crate) fn share_sweeps_in(fs: &RootFs, markers: PathBuf) {
    *SHARED_SWEEPS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some((fs.clone(), markers));
}

/// The marker file that says directory `path` was swept in this run.
fn sweep_marker(path: &Path) -> Option<(RootFs, PathBuf)> {
    let shared = SHARED_SWEEPS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let (fs, markers) = shared.as_ref()?;
    let digest = sha2::Sha256::digest(path.as_os_str().as_bytes());
    let name: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    Some((fs.clone(), markers.join(name)))
}

/// Sweeps `dir` unless this process, or an earlier one of the same run
/// that shares its sweeps, already did: writes into one directory follow
/// each other, and a listing per write would make a large directory
/// quadratic.
fn sweep_once(dir: &File, path: &Path) -> io::Result<()> {
    // Keyed by path, not inode: an inode number is reused once a directory
    // is removed, and a skipped sweep would go unnoticed.
    static SWEPT: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
    let mut swept = SWEPT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if swept.contains(path) {
        return Ok(());
    }
    let marker = sweep_marker(path);
    if let Some((fs, marker)) = &marker
        && fs.symlink_metadata(marker).is_ok()
    {
        swept.insert(path.to_path_buf());
        return Ok(());
    }
    if sweep(dir)? {
        swept.insert(path.to_path_buf());
        if let Some((fs, marker)) = &marker {
            // A marker that cannot be made costs a later process a sweep.
            if let Some(markers) = marker.parent() {
                let _ = fs.create_dir_all(markers);
            }
            let _ = fs.create_file(marker, 0o600);
        }
    }
    Ok(())
}

/// Removes the temp files that killed writers left in directory `path`
/// (see the module documentation). A directory that does not exist has none.
pub fn sweep_leftovers(fs: &RootFs, path: &Path) -> Result<()> {
    let dir = match fs.open(path) {
        Ok(dir) => dir,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(Error::io("open directory", path, &err)),
    };
    sweep(&dir)
        .map(drop)
        .map_err(|err| Error::io("remove leftover temp files in", path, &err))
}

/// Removes every temp file in `dir` when no writer is busy there; false
/// when one is (it, or a later run, sweeps instead).
fn sweep(dir: &File) -> io::Result<bool> {
    match rustix::fs::flock(dir, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {}
        Err(rustix::io::Errno::WOULDBLOCK) => return Ok(false),
        Err(err) => return Err(err.into()),
    }
    let names = entry_names(dir);
    let removed = names.and_then(|names| {
        for name in names {
            if !name.as_bytes().starts_with(TEMP_PREFIX.as_bytes()) {
                continue;
            }
            match rustix::fs::unlinkat(dir, name.as_os_str(), AtFlags::empty()) {
                Ok(()) | Err(rustix::io::Errno::NOENT) => {}
                Err(err) => return Err(err.into()),
            }
        }
        Ok(true)
    });
    rustix::fs::flock(dir, FlockOperation::Unlock)?;
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_content_and_mode_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("motd");
        write(
            &RootFs::unconfined(),
            &target,
            b"hello\n",
            &WriteOptions::mode(0o640),
        )
        .expect("write");
        assert_eq!(std::fs::read(&target).expect("read"), b"hello\n");
        let mode = std::fs::metadata(&target)
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o640);
        write(
            &RootFs::unconfined(),
            &target,
            b"again\n",
            &WriteOptions::default(),
        )
        .expect("rewrite");
        let mode = std::fs::metadata(&target)
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o640, "an existing file keeps its mode");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["motd"]);
    }

    #[test]
    fn symlinked_directories_in_test_mode_stay_inside_the_root() {
        let escape = crate::root_fs::tests::escape();
        let (root, outside) = (&escape.root, &escape.outside);
        let fs = RootFs::contained_in(root).expect("root");
        let err = write(
            &fs,
            &root.join("etc/outdir/motd"),
            b"x",
            &WriteOptions::default(),
        )
        .expect_err("no such directory inside the root");
        assert!(err.message().contains("does not exist"), "{err}");
        write(
            &fs,
            &root.join("etc/up/motd"),
            b"x",
            &WriteOptions::default(),
        )
        .expect("`..` stops at the root");
        assert_eq!(std::fs::read(root.join("motd")).expect("read"), b"x");
        let untouched: Vec<_> = std::fs::read_dir(outside)
            .expect("ls")
            .map(|entry| entry.expect("entry").file_name())
            .collect();
        assert_eq!(untouched, ["secret"]);
    }

    #[test]
    fn leftover_temp_files_are_swept_unless_a_writer_is_busy() {
        let dir = tempfile::tempdir().expect("tempdir");
        let busy = tempfile::tempdir().expect("tempdir");
        for place in [dir.path(), busy.path()] {
            std::fs::write(place.join(".holo-tmp-killed"), "half a fi").expect("leftover");
            std::fs::write(place.join("unrelated"), "x").expect("other file");
        }
        // A writer in another process holds its shared lock on `busy`.
        let writer = File::open(busy.path()).expect("open");
        rustix::fs::flock(&writer, FlockOperation::LockShared).expect("lock");
        let fs = RootFs::unconfined();
        for place in [dir.path(), busy.path()] {
            write(&fs, &place.join("motd"), b"new\n", &WriteOptions::default()).expect("write");
        }
        let names = |place: &Path| {
            let mut names: Vec<_> = std::fs::read_dir(place)
                .expect("list")
                .map(|e| e.expect("entry").file_name())
                .collect();
            names.sort();
            names
        };
        assert_eq!(names(dir.path()), ["motd", "unrelated"]);
        assert_eq!(
            names(busy.path()),
            [".holo-tmp-killed", "motd", "unrelated"],
            "a busy writer's temp file stays"
        );
        drop(writer);
        sweep_leftovers(&fs, busy.path()).expect("sweep");
        assert_eq!(names(busy.path()), ["motd", "unrelated"]);
    }

    #[test]
    fn missing_parent_is_a_clear_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("missing/motd");
        let err = write(
            &RootFs::unconfined(),
            &target,
            b"x",
            &WriteOptions::default(),
        )
        .expect_err("no parent");
        assert!(err.message().contains("does not exist"), "{err}");
        assert!(err.message().contains(&target.display().to_string()));
    }

    #[test]
    fn a_file_in_the_way_of_the_parent_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("etc"), "a file").expect("write");
        let fs = RootFs::unconfined();
        let target = dir.path().join("etc/app/motd");
        let expected = format!(
            "{} is a file, in the way of directory {}; move the file away or choose another path",
            dir.path().join("etc").display(),
            dir.path().join("etc/app").display()
        );
        let err = write(&fs, &target, b"x", &WriteOptions::default()).expect_err("file in the way");
        assert_eq!(
            err.message(),
            format!("cannot write {}: {expected}", target.display())
        );
        let mut batch = Batch::default();
        let err = stage_in(&mut batch, &fs, &target, b"x", &WriteOptions::default())
            .expect_err("file in the way");
        assert!(err.message().contains(&expected), "{err}");
    }

    #[test]
    fn writes_leave_no_descriptor_open() {
        let open = || std::fs::read_dir("/proc/self/fd").expect("fds").count();
        let dir = tempfile::tempdir().expect("tempdir");
        let fs = RootFs::unconfined();
        let options = WriteOptions::mode(0o644);
        write(&fs, &dir.path().join("warm-up"), b"x", &options).expect("write");
        let before = open();
        for i in 0..50 {
            write(&fs, &dir.path().join(format!("f{i}")), b"x", &options).expect("write");
        }
        // Other tests run in parallel threads and open files too; a
        // descriptor per write would show as 50.
        assert!(open() < before + 25, "{before} before, {} after", open());
    }

    #[test]
    fn symlinks_replace_files_and_links_atomically() {
        let dir = tempfile::tempdir().expect("tempdir");
        let link = dir.path().join("site");
        std::fs::write(&link, "a file\n").expect("write");
        let fs = RootFs::unconfined();
        symlink(
            &fs,
            &link,
            Path::new("../available/site"),
            &WriteOptions::default(),
        )
        .expect("over a file");
        assert_eq!(
            std::fs::read_link(&link).expect("link"),
            Path::new("../available/site")
        );
        symlink(
            &fs,
            &link,
            Path::new("/etc/other"),
            &WriteOptions::default(),
        )
        .expect("over a link");
        assert_eq!(
            std::fs::read_link(&link).expect("link"),
            Path::new("/etc/other")
        );
        std::fs::create_dir(dir.path().join("dir")).expect("mkdir");
        symlink(
            &fs,
            &dir.path().join("dir"),
            Path::new("x"),
            &WriteOptions::default(),
        )
        .expect_err("a directory is not replaced");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names.len(), 2, "no temp link is left: {names:?}");
    }

    #[test]
    fn staged_writes_land_together_at_the_commit_and_failures_name_their_entity() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fs = RootFs::unconfined();
        std::fs::write(dir.path().join("a"), "old a\n").expect("old");
        std::fs::create_dir(dir.path().join("blocked")).expect("mkdir");
        begin_staging(None, None, true);
        set_staging_owner(1);
        let staged = stage(
            &fs,
            &dir.path().join("a"),
            b"new a\n",
            &WriteOptions::mode(0o600),
        )
        .expect("stage a");
        assert_eq!(staged.map(|staged| staged.mode), Some(0o600));
        set_staging_owner(2);
        write(
            &fs,
            &dir.path().join("blocked"),
            b"x",
            &WriteOptions::default(),
        )
        .expect("stage over a directory");
        assert!(staged_pending() && staged_visible_for(1));
        assert_eq!(
            std::fs::read(dir.path().join("a")).expect("read"),
            b"old a\n"
        );
        let failures = commit_and_take_failures();
        assert_eq!(
            std::fs::read(dir.path().join("a")).expect("read"),
            b"new a\n"
        );
        assert_eq!(
            failures.iter().map(|(owner, _)| *owner).collect::<Vec<_>>(),
            [2]
        );
        assert!(!staged_pending());
        assert!(end_staging().is_empty());
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        names.sort();
        assert_eq!(names, ["a", "blocked"], "no temp file is left");
    }

    #[test]
    fn a_staged_file_gets_its_exact_mode_and_owner_whether_or_not_it_is_chowned() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let fs = RootFs::unconfined();
        let uid = nix::unistd::geteuid().as_raw();
        let gid = nix::unistd::getegid().as_raw();
        // Root can give a file another group; anyone else keeps their own.
        let other_gid = if uid == 0 {
            gid.wrapping_add(4321)
        } else {
            gid
        };
        // The process's own owner (no chown; created with the mode), setid
        // bits that creation cannot give (a chmod after), and another group
        // (a chown, then the mode again, which chown would have cleared).
        let cases = [
            ("plain", 0o640, gid),
            ("setuid", 0o4755, gid),
            ("other group", 0o2750, other_gid),
        ];
        begin_staging(None, None, false);
        for (index, (name, mode, group)) in cases.iter().enumerate() {
            set_staging_owner(index + 1);
            let options = WriteOptions {
                mode: Some(*mode),
                uid: Some(uid),
                gid: Some(*group),
            };
            let staged = stage(&fs, &dir.path().join(name), b"x", &options)
                .expect("stage")
                .expect("staged");
            assert_eq!(
                (staged.mode, staged.uid, staged.gid),
                (*mode, uid, *group),
                "{name}"
            );
        }
        assert!(end_staging().is_empty());
        for (name, mode, group) in cases {
            let meta = std::fs::metadata(dir.path().join(name)).expect("meta");
            assert_eq!(
                (meta.mode() & 0o7777, meta.uid(), meta.gid()),
                (mode, uid, group),
                "{name}"
            );
        }
    }

    #[test]
    fn owner_is_set_when_given() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("owned");
        let uid = nix::unistd::getuid().as_raw();
        let gid = nix::unistd::getgid().as_raw();
        let options = WriteOptions {
            mode: Some(0o600),
            uid: Some(uid),
            gid: Some(gid),
        };
        write(&RootFs::unconfined(), &target, b"x", &options).expect("write");
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(&target).expect("meta");
        assert_eq!((meta.uid(), meta.gid()), (uid, gid));
    }
}
