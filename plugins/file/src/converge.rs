//! Carrying out apply, force-apply, noop, scrub and diff for one entity:
//! Status, the decisions of [`crate::apply`], the provider's changes, the
//! verification and the state record, in that order.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use holo_plugin::root_fs::RootFs;
use holo_plugin::{Env, Error, Mode, Outcome, Result, owners, state};

use crate::apply::{self, Action, Guard, Kind, Observed, Scrub, Wanted};
use crate::model::{Content, Ensure, FileSpec, Principal, format_mode};
use crate::provider::posix;
use crate::state::{OriginalKind, OriginalRecord, Record};

/// Applies a declared entity.
pub fn apply(env: &Env, id: &str, spec: &FileSpec, mode: Mode) -> Result<Outcome> {
    let fs = RootFs::of(env)?;
    let target = env.root_join(&spec.path);
    let context = |err: Error| err.context(id);
    let current = posix::status(&fs, &target).map_err(context)?;
    let wanted = wanted(env, &fs, spec).map_err(context)?;
    let action = apply::decide(&wanted, &current);
    let record_path = state::record_path(env, id);

    if action == Action::None {
        if mode != Mode::Noop && fs.symlink_metadata(&record_path).is_err() {
            // Adopt the path as it is, so that scrubbing later restores it.
            let original = save_original(env, &fs, spec, &current).map_err(context)?;
            write_record(env, id, spec, &wanted, &current, original)?;
        }
        return Ok(Outcome::NotChanged);
    }

    let record: Option<Record> = state::read(env, id)?;
    if spec.protect && mode != Mode::Force {
        match apply::guard(record.as_ref().map(Record::left).as_ref(), &current) {
            Guard::Proceed => {}
            Guard::RequiresForceOverwrite => return Ok(Outcome::RequiresForceOverwrite),
            Guard::RequiresForceRestore => return Ok(Outcome::RequiresForceRestore),
        }
    }
    check_type_conflict(spec, &target, &current).map_err(context)?;

    if mode == Mode::Noop {
        println!(
            "{}",
            match action {
                Action::Store => "Would have created the file",
                Action::CreateDirectory => "Would have created directory",
                Action::Remove | Action::None => "Would have removed the file",
            }
        );
        return Ok(Outcome::Changed);
    }

    let original = match &record {
        Some(record) => record.original.clone(),
        None => save_original(env, &fs, spec, &current).map_err(context)?,
    };
    match action {
        Action::None => {}
        Action::Remove => posix::remove(&fs, &target, spec.force).map_err(context)?,
        Action::CreateDirectory => {
            if current.kind == Kind::File {
                posix::remove(&fs, &target, false).map_err(context)?;
            }
            posix::create_directory(&fs, &target, wanted.uid, wanted.gid, wanted.mode)
                .map_err(context)?;
        }
        Action::Store => {
            let contents = desired_contents(&fs, spec, &target, &current).map_err(context)?;
            posix::store(&fs, &target, &contents, wanted.uid, wanted.gid, wanted.mode)
                .map_err(context)?;
        }
    }

    let reached = posix::status(&fs, &target).map_err(context)?;
    let differing = apply::differences(&wanted, &reached);
    if !differing.is_empty() {
        return Err(Error::new(format!(
            "{id}: after apply, {} still differs from the resource at {}; something else manages {} (check for another tool or a read-only mount)",
            differing.join(", "),
            spec.found_in,
            target.display()
        )));
    }
    write_record(env, id, spec, &wanted, &reached, original)?;
    Ok(Outcome::Changed)
}

/// Undoes what the plugin did for an entity whose resource was deleted.
pub fn scrub(env: &Env, id: &str, path: &str, mode: Mode) -> Result<Outcome> {
    let context = |err: Error| err.context(id);
    let Some(record) = state::read::<Record>(env, id)? else {
        return Ok(Outcome::NotChanged);
    };
    let fs = RootFs::of(env)?;
    let target = env.root_join(path);
    let current = posix::status(&fs, &target).map_err(context)?;
    let decision = apply::scrub(
        record.original.original(),
        &record.left(),
        &current,
        mode == Mode::Force,
    );
    if decision == Scrub::RequiresForceOverwrite {
        return Ok(Outcome::RequiresForceOverwrite);
    }
    if mode == Mode::Noop {
        match decision {
            Scrub::RestoreOriginal => println!("Would have restored the original file"),
            Scrub::Remove => println!("Would have removed the file"),
            Scrub::Forget | Scrub::RequiresForceOverwrite => {}
        }
        return Ok(Outcome::Changed);
    }
    let (uid, gid, original_mode) = record.original.attributes();
    match decision {
        Scrub::RestoreOriginal if record.original.kind == OriginalKind::Directory => {
            posix::set_directory_attributes(&fs, &target, uid, gid, original_mode)
                .map_err(context)?
        }
        Scrub::RestoreOriginal => {
            if current.kind == Kind::Directory && record.ensure == Ensure::Directory {
                // The plugin put a directory where the original file was.
                posix::remove(&fs, &target, false).map_err(context)?;
            }
            let base_root = base_root(env);
            posix::restore_original(
                &fs,
                &base_path(env, path),
                &base_root,
                &target,
                uid,
                gid,
                original_mode,
            )
            .map_err(context)?
        }
        Scrub::Remove => posix::remove(&fs, &target, false).map_err(context)?,
        Scrub::Forget | Scrub::RequiresForceOverwrite => {}
    }
    state::remove(env, id)?;
    Ok(Outcome::Changed)
}

/// The files to diff: the desired state (with the desired mode) and the path.
pub fn diff(
    env: &Env,
    id: &str,
    spec: Option<&FileSpec>,
    path: &str,
) -> Result<Option<(PathBuf, PathBuf)>> {
    let fs = RootFs::of(env)?;
    let target = env.root_join(path);
    let context = |err: Error| err.context(id);
    let Some(spec) = spec else {
        if fs.is_dir(&target) {
            return Ok(None);
        }
        let base = base_path(env, path);
        let desired = if fs.is_file(&base) {
            base
        } else {
            PathBuf::from("/dev/null")
        };
        return Ok(Some((desired, target)));
    };
    match spec.ensure {
        Ensure::Directory => Ok(None),
        // A directory that is to go has no text to show.
        Ensure::Absent if fs.is_dir(&target) => Ok(None),
        Ensure::Absent => Ok(Some((PathBuf::from("/dev/null"), target))),
        Ensure::Present => {
            let current = posix::status(&fs, &target).map_err(context)?;
            let contents = desired_contents(&fs, spec, &target, &current).map_err(context)?;
            let mode = spec.mode.unwrap_or(0o644);
            let in_place = current.kind == Kind::File
                && current.mode == mode
                && current.checksum.as_deref() == Some(posix::checksum_bytes(&contents).as_str());
            if in_place {
                // Nothing to show; spare the driver a copy to compare.
                return Ok(Some((target.clone(), target)));
            }
            let desired = env
                .cache_dir
                .join("desired")
                .join(path.trim_start_matches('/'));
            write_scratch(&fs, &desired, &contents, mode)?;
            Ok(Some((desired, target)))
        }
    }
}

/// Writes a file in the cache: it lives for one run, so no fsync.
fn write_scratch(fs: &RootFs, path: &Path, contents: &[u8], mode: u32) -> Result<()> {
    if let Some(parent) = path.parent() {
        fs.create_dir_all(parent)
            .map_err(|err| Error::io("create directory", parent, &err))?;
    }
    fs.create_file(path, mode)
        .and_then(|mut file| std::io::Write::write_all(&mut file, contents))
        .map_err(|err| Error::io("write", path, &err))
}

/// The desired state with owner and group looked up now (a package applied
/// earlier in this run may have created them).
fn wanted(env: &Env, fs: &RootFs, spec: &FileSpec) -> Result<Wanted> {
    let lookup = |principal: &Option<Principal>, kind: IdKind| match principal {
        Some(Principal::Id(id)) => Ok(*id),
        Some(Principal::Name(name)) => cached_id(env, kind, name),
        None => Ok(0),
    };
    let checksum = match (&spec.ensure, &spec.content) {
        (Ensure::Present, Content::Inline(text)) => Some(posix::checksum_bytes(text.as_bytes())),
        (Ensure::Present, Content::Source { path, .. }) => Some(posix::checksum_file(fs, path)?),
        _ => None,
    };
    Ok(Wanted {
        ensure: spec.ensure,
        checksum,
        uid: lookup(&spec.owner, IdKind::User)?,
        gid: lookup(&spec.group, IdKind::Group)?,
        mode: spec.mode.unwrap_or(0o644),
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum IdKind {
    User,
    Group,
}

thread_local! {
    /// Names resolved in this process. A process applies either one entity
    /// or one batch of consecutive file entities, so no other plugin can
    /// create a user between two lookups that this cache answers.
    static RESOLVED: RefCell<HashMap<(IdKind, String), u32>> = RefCell::new(HashMap::new());
}

fn cached_id(env: &Env, kind: IdKind, name: &str) -> Result<u32> {
    let key = (kind, name.to_string());
    if let Some(id) = RESOLVED.with(|cache| cache.borrow().get(&key).copied()) {
        return Ok(id);
    }
    let id = match kind {
        IdKind::User => owners::uid(env, name)?,
        IdKind::Group => owners::gid(env, name)?,
    };
    RESOLVED.with(|cache| cache.borrow_mut().insert(key, id));
    Ok(id)
}

fn desired_contents(
    fs: &RootFs,
    spec: &FileSpec,
    target: &Path,
    current: &Observed,
) -> Result<Vec<u8>> {
    match &spec.content {
        Content::Inline(text) => Ok(text.as_bytes().to_vec()),
        Content::Source { path, shown } => {
            fs.read(path).map_err(|err| Error::io("read", shown, &err))
        }
        Content::Unmanaged if current.kind == Kind::File => fs
            .read(target)
            .map_err(|err| Error::io("read", target, &err)),
        Content::Unmanaged => Ok(Vec::new()),
    }
}

/// Types the provider does not replace on its own.
fn check_type_conflict(spec: &FileSpec, target: &Path, current: &Observed) -> Result<()> {
    let what = match current.kind {
        Kind::Directory => "a directory",
        Kind::Other => "a symlink or special file",
        Kind::Absent | Kind::File => return Ok(()),
    };
    match spec.ensure {
        Ensure::Present => Err(Error::new(format!(
            "{} is {what}, not a regular file; remove it by hand or declare ensure = \"{}\" ({})",
            target.display(),
            if current.kind == Kind::Directory {
                "directory"
            } else {
                "absent"
            },
            spec.found_in
        ))),
        Ensure::Directory if current.kind == Kind::Other => Err(Error::new(format!(
            "{} is {what}, not a directory; remove it by hand ({})",
            target.display(),
            spec.found_in
        ))),
        Ensure::Directory | Ensure::Absent => Ok(()),
    }
}

fn base_root(env: &Env) -> PathBuf {
    env.state_dir.join("base")
}

/// Where the original of `path` is kept: `$HOLO_STATE_DIR/base/PATH`.
pub fn base_path(env: &Env, path: &str) -> PathBuf {
    base_root(env).join(path.trim_start_matches('/'))
}

/// Keeps what is at the path before the plugin first changes it.
fn save_original(
    env: &Env,
    fs: &RootFs,
    spec: &FileSpec,
    current: &Observed,
) -> Result<OriginalRecord> {
    let base = base_path(env, &spec.path);
    // A saved original without a record: an apply was killed after saving
    // it, and the path may hold what that apply wrote. The copy is the
    // original, so keep it rather than save the new content over it.
    let saved = posix::status(fs, &base)?;
    if saved.kind == Kind::File {
        return Ok(OriginalRecord::existing(
            OriginalKind::File,
            saved.uid,
            saved.gid,
            saved.mode,
        ));
    }
    match current.kind {
        Kind::File => {
            posix::save_original(fs, &env.root_join(&spec.path), &base, current)?;
            Ok(OriginalRecord::existing(
                OriginalKind::File,
                current.uid,
                current.gid,
                current.mode,
            ))
        }
        Kind::Directory => Ok(OriginalRecord::existing(
            OriginalKind::Directory,
            current.uid,
            current.gid,
            current.mode,
        )),
        Kind::Absent | Kind::Other => Ok(OriginalRecord::none()),
    }
}

fn write_record(
    env: &Env,
    id: &str,
    spec: &FileSpec,
    wanted: &Wanted,
    reached: &Observed,
    original: OriginalRecord,
) -> Result<()> {
    let present = spec.ensure != Ensure::Absent;
    let record = Record {
        ensure: spec.ensure,
        checksum: if wanted.checksum.is_some() {
            reached.checksum.clone()
        } else {
            None
        },
        owner: present.then_some(reached.uid),
        group: present.then_some(reached.gid),
        mode: present.then(|| format_mode(reached.mode)),
        original,
    };
    state::write(env, id, &record)
}
