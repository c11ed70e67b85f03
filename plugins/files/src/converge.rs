//! Carrying out one entity's apply with the decisions of `apply.rs`:
//! provisioning a target from its base and repository entries, and
//! scrubbing an orphaned base.
//!
//! Every write is atomic, and the steps are ordered so that a run killed
//! at any point is finished by the next run without `--force`: the base
//! is stored before the target is written, the target before its
//! provisioned copy, and a leftover is removed only after what it became
//! is in place.

use std::path::{Path, PathBuf};

use holo_plugin::root_fs::RootFs;
use holo_plugin::{Env, Error, Mode, Outcome, Result};

use crate::apply::{self, BaseStep, ScrubStep, TargetStep, Update};
use crate::model::{EntryKind, RepoEntry, effective_entries, shown};
use crate::provider::fs::{self as files, Buffer, Found, below_root};
use crate::provider::{filter, platform};

/// Where one target's files are.
pub struct Places {
    /// The target's absolute path in the system, e.g. `/etc/foo.conf`.
    pub name: String,
    /// The target below the root.
    pub target: PathBuf,
    /// `$HOLO_STATE_DIR/base/...`: the target as its package installed it.
    pub base: PathBuf,
    /// `$HOLO_STATE_DIR/provisioned/...`: what was written last.
    pub provisioned: PathBuf,
}

impl Places {
    pub fn of(env: &Env, target: &str) -> Places {
        Places {
            name: target.to_string(),
            target: below_root(&env.root, Path::new(target)),
            base: below_root(&env.state_dir.join("base"), Path::new(target)),
            provisioned: below_root(&env.state_dir.join("provisioned"), Path::new(target)),
        }
    }
}

/// Says on stderr what happened besides the entity's main work (`>> `).
fn note(text: &str) {
    eprintln!(">> {text}");
}

/// Provisions `target` from its base and `entries`.
pub fn provision(env: &Env, target: &str, entries: &[RepoEntry], mode: Mode) -> Result<Outcome> {
    let fs = env.root_fs()?;
    let places = Places::of(env, target);
    let leftovers = platform::detect(env, &fs)?;
    let current = files::read(&fs, &places.target)?;
    let stored_base = files::read(&fs, &places.base)?;
    let update = platform::find_update(&fs, &leftovers, &places.target);
    let step = apply::base_step(
        current.presence(),
        stored_base != Found::Missing,
        update.as_ref().map(|(kind, _)| *kind),
    );
    let writes = mode != Mode::Noop;
    let found = (current, stored_base);
    let taken = take_base(&fs, &places, step, found, update.as_ref(), writes)?;
    if let (Some((kind, leftover)), true) = (&update, taken.updated) {
        note(&format!(
            "found updated target base: {} -> {}",
            platform::update_shown(*kind, leftover, &shown(&places.target), &leftovers),
            shown(&places.base)
        ));
    }
    let desired = desired(env, &fs, &places, &taken.base, entries)?;
    let provisioned = files::read(&fs, &places.provisioned)?;
    let last = provisioned.buffer().unwrap_or(&taken.base);
    let current = taken.current.buffer();
    let step = apply::target_step(
        taken.current.presence(),
        current.is_some_and(|now| now.same_content(&desired)),
        current.is_some_and(|now| now.same_content(last)),
        mode == Mode::Force,
    );
    let changed = || match taken.updated {
        true => Outcome::Changed,
        false => Outcome::NotChanged,
    };
    match step {
        TargetStep::RequiresForceOverwrite => Ok(Outcome::RequiresForceOverwrite),
        TargetStep::RequiresForceRestore => Ok(Outcome::RequiresForceRestore),
        TargetStep::Unchanged => {
            let stale = provisioned
                .buffer()
                .is_none_or(|old| !old.same_content(&desired));
            if writes && stale {
                files::write(&fs, &places.provisioned, &desired)?;
            }
            Ok(changed())
        }
        TargetStep::Write => {
            if writes {
                files::write(&fs, &places.target, &desired)?;
                files::write(&fs, &places.provisioned, &desired)?;
            }
            Ok(Outcome::Changed)
        }
    }
}

/// The base this apply works from, the target after the base was taken,
/// and whether a package manager's update was taken.
struct Taken {
    base: Buffer,
    current: Found,
    updated: bool,
}

fn not_manageable() -> Error {
    Error::new("skipping target: not a manageable file")
}

fn take_base(
    fs: &RootFs,
    places: &Places,
    step: BaseStep,
    (current, stored): (Found, Found),
    update: Option<&(Update, PathBuf)>,
    writes: bool,
) -> Result<Taken> {
    let leftover = |wanted: Update| -> Result<(PathBuf, Buffer)> {
        let path = match update {
            Some((kind, path)) if *kind == wanted => path.clone(),
            _ => return Err(not_manageable()),
        };
        let buffer = files::read(fs, &path)?
            .buffer()
            .cloned()
            .ok_or_else(not_manageable)?;
        Ok((path, buffer))
    };
    match step {
        BaseStep::NotManageable => Err(not_manageable()),
        BaseStep::Keep => {
            let base = stored.buffer().cloned().ok_or_else(not_manageable)?;
            Ok(Taken {
                base,
                current,
                updated: false,
            })
        }
        BaseStep::StoreTarget => {
            let base = current.buffer().cloned().ok_or_else(not_manageable)?;
            if writes {
                files::write(fs, &places.base, &base)?;
            }
            Ok(Taken {
                base,
                current,
                updated: false,
            })
        }
        BaseStep::TakeBeside => {
            let (path, base) = leftover(Update::Beside)?;
            if writes {
                files::write(fs, &places.base, &base)?;
                files::remove(fs, &path)?;
            }
            Ok(Taken {
                base,
                current,
                updated: true,
            })
        }
        BaseStep::TakeTargetRestoreSaved => {
            let base = current.buffer().cloned().ok_or_else(not_manageable)?;
            let (path, saved) = leftover(Update::SavedOld)?;
            if writes {
                files::write(fs, &places.base, &base)?;
                files::rename_beside(fs, &path, &places.target)?;
            }
            Ok(Taken {
                base,
                current: Found::Buffer(saved),
                updated: true,
            })
        }
    }
}

/// The target's desired content: the base, then the entries from the last
/// plain one on (the steps before it would be discarded, so they never run).
fn desired(
    env: &Env,
    fs: &RootFs,
    places: &Places,
    base: &Buffer,
    entries: &[RepoEntry],
) -> Result<Buffer> {
    let target_dir = Path::new(&places.name).parent().unwrap_or(Path::new("/"));
    let mut buffer = base.clone();
    for entry in effective_entries(entries) {
        buffer = match entry.kind {
            EntryKind::Plain => plain(&entry.path, &buffer)?,
            EntryKind::Holoscript | EntryKind::Patch => {
                let input = files::contents(fs, &buffer, &env.root, target_dir)?;
                let Buffer::File {
                    content,
                    mode,
                    uid,
                    gid,
                } = input
                else {
                    return Err(Error::new("a followed link is a file"));
                };
                let content = match entry.kind {
                    EntryKind::Patch => filter::patch(env, &entry.path, &content)?,
                    _ => filter::holoscript(env, &entry.path, &content)?,
                };
                Buffer::File {
                    content,
                    mode,
                    uid,
                    gid,
                }
            }
        };
    }
    Ok(buffer)
}

/// A plain repository entry replaces the buffer; a file keeps the
/// permissions and owner of what it replaces (at first the base's).
fn plain(path: &Path, previous: &Buffer) -> Result<Buffer> {
    let (mode, uid, gid) = previous.mode_and_owner();
    let meta = std::fs::symlink_metadata(path).map_err(|err| Error::io("inspect", path, &err))?;
    if meta.file_type().is_symlink() {
        let link =
            std::fs::read_link(path).map_err(|err| Error::io("read the link", path, &err))?;
        return Ok(Buffer::Symlink { link, uid, gid });
    }
    let content = std::fs::read(path).map_err(|err| Error::io("read", path, &err))?;
    Ok(Buffer::File {
        content,
        mode,
        uid,
        gid,
    })
}

/// Scrubs the orphaned base of `target`: restores the target from it, or,
/// when the target was deleted, forgets it.
pub fn scrub(env: &Env, target: &str, target_deleted: bool, mode: Mode) -> Result<Outcome> {
    let fs = env.root_fs()?;
    let places = Places::of(env, target);
    let leftovers = platform::detect(env, &fs)?;
    let update = match target_deleted {
        true => None,
        false => platform::find_update(&fs, &leftovers, &places.target),
    };
    let step = apply::scrub_step(target_deleted, update.as_ref().map(|(kind, _)| *kind));
    if let (Some((kind, leftover)), false) = (&update, target_deleted) {
        note(&format!(
            "found updated target base: {} -> {}",
            platform::update_shown(*kind, leftover, &shown(&places.target), &leftovers),
            shown(&places.target)
        ));
    }
    if mode == Mode::Noop {
        return Ok(Outcome::Changed);
    }
    let mut errors = Vec::new();
    let leftover = update.map(|(_, path)| path);
    if let Err(err) = restore(&fs, &places, step, leftover.as_deref(), &leftovers) {
        errors.push(err);
    }
    for path in [&places.provisioned, &places.base] {
        if let Err(err) = files::remove(&fs, path) {
            errors.push(err);
        }
    }
    match errors.is_empty() {
        true => Ok(Outcome::Changed),
        false => Err(Error::many(errors)),
    }
}

fn restore(
    fs: &RootFs,
    places: &Places,
    step: ScrubStep,
    leftover: Option<&Path>,
    leftovers: &platform::Leftovers,
) -> Result<()> {
    match (step, leftover) {
        (ScrubStep::RestoreBase, _) => match files::read(fs, &places.base)? {
            Found::Buffer(base) => files::write(fs, &places.target, &base),
            _ => Ok(()),
        },
        (ScrubStep::TakeBeside, Some(path)) => {
            // The base becomes what the target will be, so that a run
            // killed after the rename restores the same content.
            if let Some(update) = files::read(fs, path)?.buffer() {
                files::write(fs, &places.base, update)?;
            }
            files::rename_beside(fs, path, &places.target)
        }
        (ScrubStep::KeepTargetDropSaved, Some(path)) => {
            if let Some(now) = files::read(fs, &places.target)?.buffer() {
                files::write(fs, &places.base, now)?;
            }
            files::remove(fs, path)
        }
        (ScrubStep::Forget, _) => forget_saved_copies(fs, places, leftovers),
        _ => Ok(()),
    }
}

/// Removes the package manager's saved copies of a deleted target that
/// are what was provisioned; a copy the user changed stays.
fn forget_saved_copies(
    fs: &RootFs,
    places: &Places,
    leftovers: &platform::Leftovers,
) -> Result<()> {
    let provisioned = files::read(fs, &places.provisioned)?;
    let mut errors = Vec::new();
    for path in platform::saved_on_removal(fs, leftovers, &places.target) {
        let same = match (files::read(fs, &path), provisioned.buffer()) {
            (Ok(Found::Buffer(saved)), Some(last)) => saved.same_content(last),
            _ => false,
        };
        if apply::remove_saved_copy(provisioned.buffer().is_some(), same) {
            note(&format!("also deleting {}", shown(&path)));
            if let Err(err) = files::remove(fs, &path) {
                errors.push(err);
            }
        }
    }
    match errors.is_empty() {
        true => Ok(()),
        false => Err(Error::many(errors)),
    }
}
