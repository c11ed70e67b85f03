//! holo-session: the directory of a session of one-off `ensure` runs
//! (`holo session new`), for the SDK's one-offs, which read and append
//! its records, and for the driver's `holo session report`. The records'
//! format and what they mean for `require` and `subscribe` are
//! holo-protocol's (`session`, `order::gate`); this crate is their I/O.
//!
//! Invariants: whoever reads or writes the records holds the session's
//! exclusive `flock` (a one-off from reading to its last record, so that
//! concurrent one-offs of a session run one by one); the records file is
//! only ever replaced by a synced temporary file renamed over it, so a
//! killed one-off leaves the records as they were; the directory belongs
//! to this user and no one else can write to it, since its records decide
//! what runs.

use holo_protocol::session::{FORMAT_VERSION, LOCK_FILE, RECORDS_FILE, Record, Session};
use nix::fcntl::{Flock, FlockArg};
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The prefix of the temporary files the records are written through.
const TEMP_PREFIX: &str = ".session-";

/// An open session, locked until dropped. Errors are plain text for the
/// caller to prefix with its command and the session's directory.
pub struct Locked {
    dir: PathBuf,
    session: Session,
    _lock: Flock<File>,
}

impl Locked {
    /// Checks the directory, waits for its lock and reads the records.
    pub fn open(dir: &Path) -> Result<Locked, String> {
        check_private(dir)?;
        let lock = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(dir.join(LOCK_FILE))
            .map_err(|err| format!("cannot open its lock: {err}"))?;
        // Waits for a one-off of the same session that runs now.
        let lock = Flock::lock(lock, FlockArg::LockExclusive)
            .map_err(|(_, err)| format!("cannot lock it: {err}"))?;
        Ok(Locked {
            dir: dir.to_path_buf(),
            session: read(dir)?,
            _lock: lock,
        })
    }

    /// The records so far.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Appends `record` and replaces the records file atomically.
    pub fn append(&mut self, record: Record) -> Result<(), String> {
        self.session.records.push(record);
        let mut text =
            serde_json::to_string_pretty(&self.session).map_err(|err| err.to_string())?;
        text.push('\n');
        write_atomically(&self.dir, text.as_bytes()).map_err(|err| {
            format!(
                "cannot write {}: {err}",
                self.dir.join(RECORDS_FILE).display()
            )
        })
    }

    /// Removes the session's directory, when it holds nothing but the
    /// session's own files.
    pub fn remove(self) -> Result<(), String> {
        let entries = std::fs::read_dir(&self.dir).map_err(|err| err.to_string())?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let ours = name == RECORDS_FILE || name == LOCK_FILE || name.starts_with(TEMP_PREFIX);
            if !ours {
                return Err(format!(
                    "holds {name}, which is not the session's; not removed (remove it yourself)"
                ));
            }
        }
        std::fs::remove_dir_all(&self.dir).map_err(|err| format!("cannot remove it: {err}"))
    }
}

/// The directory belongs to this user and no one else can write to it.
pub fn check_private(dir: &Path) -> Result<(), String> {
    let meta = std::fs::metadata(dir).map_err(|err| {
        format!("{err}; start a session with eval \"$(holo session new)\", or give a directory that exists")
    })?;
    if !meta.is_dir() {
        return Err("is not a directory; give the directory that holo session new printed".into());
    }
    if meta.uid() != nix::unistd::geteuid().as_raw() || meta.mode() & 0o022 != 0 {
        return Err("must belong to this user and be writable by no one else (chmod 700), since its records decide what runs".into());
    }
    Ok(())
}

/// The records, or none in a new session.
fn read(dir: &Path) -> Result<Session, String> {
    let path = dir.join(RECORDS_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Session {
                version: FORMAT_VERSION,
                records: Vec::new(),
            });
        }
        Err(err) => return Err(format!("cannot read {}: {err}", path.display())),
    };
    let session: Session = serde_json::from_str(&text).map_err(|err| {
        format!(
            "{}: {err}; it is not a session's records, start a new session",
            path.display()
        )
    })?;
    if session.version != FORMAT_VERSION {
        return Err(format!(
            "{} has format version {}, this holo knows {FORMAT_VERSION}; start a new session",
            path.display(),
            session.version
        ));
    }
    Ok(session)
}

/// The records file replaced by a synced temporary file beside it.
fn write_atomically(dir: &Path, content: &[u8]) -> std::io::Result<()> {
    let mut temp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .suffix(".tmp")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .tempfile_in(dir)?;
    temp.write_all(content)?;
    temp.as_file().sync_all()?;
    temp.persist(dir.join(RECORDS_FILE))
        .map_err(|err| err.error)?;
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn private_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))
            .expect("chmod");
        dir
    }

    fn record(id: &str) -> Record {
        Record {
            id: id.into(),
            plugin: "file".into(),
            result: "changed".into(),
            start_ms: 1,
            duration_ms: 2,
        }
    }

    #[test]
    fn records_survive_a_reopen_and_leave_no_temporary_file() {
        let dir = private_dir();
        let mut session = Locked::open(dir.path()).expect("open");
        session.append(record("file:/a")).expect("append");
        drop(session);
        let session = Locked::open(dir.path()).expect("reopen");
        assert_eq!(session.session().records, vec![record("file:/a")]);
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|entry| {
                entry
                    .expect("entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .filter(|name| name.starts_with(TEMP_PREFIX))
            .collect();
        assert!(names.is_empty(), "{names:?}");
    }

    #[test]
    fn a_directory_others_can_write_is_refused() {
        let dir = private_dir();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777))
            .expect("chmod");
        let err = Locked::open(dir.path()).err().expect("refused");
        assert!(err.contains("writable by no one else"), "{err}");
    }

    #[test]
    fn records_of_another_format_are_refused() {
        let dir = private_dir();
        std::fs::write(
            dir.path().join(RECORDS_FILE),
            "{\"version\": 9, \"records\": []}",
        )
        .expect("write");
        let err = Locked::open(dir.path()).err().expect("refused");
        assert!(err.contains("format version 9"), "{err}");
    }

    #[test]
    fn remove_keeps_a_directory_with_other_files() {
        let dir = private_dir();
        std::fs::write(dir.path().join("mine"), "x").expect("write");
        let session = Locked::open(dir.path()).expect("open");
        let err = session.remove().expect_err("kept");
        assert!(err.contains("holds mine"), "{err}");
        assert!(dir.path().join("mine").exists());
    }
}
