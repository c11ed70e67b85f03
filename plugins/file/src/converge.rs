//! Carrying out apply, force-apply, noop, scrub and diff for one entity:
//! Status, the decisions of [`crate::apply`], the provider's changes, the
//! verification and the state record, in that order.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use holo_plugin::root_fs::RootFs;
use holo_plugin::{Diff, Env, Error, Mode, Outcome, Result, owners, state};

use crate::apply::{self, Action, Guard, Kind, Observed, Scrub, Wanted};
use crate::model::{Content, Ensure, FileSpec, Principal, format_mode};
use crate::provider::posix;
use crate::state::{OriginalKind, OriginalRecord, Record};

/// Applies a declared entity.
pub fn apply(env: &Env, id: &str, spec: &FileSpec, mode: Mode) -> Result<Outcome> {
    let fs = env.root_fs()?;
    let target = env.root_join(&spec.path);
    let context = |err: Error| err.context(id);
    let current = posix::status(&fs, &target).map_err(context)?;
    let wanted = wanted(env, &fs, spec).map_err(context)?;
    let action = apply::decide(&wanted, &current);

    if action == Action::None {
        if mode != Mode::Noop {
            catch_up_record(env, &fs, id, spec, &wanted, &current)?;
        }
        return Ok(Outcome::NotChanged);
    }

    let record = read_record(env, id)?;
    if spec.protect && mode != Mode::Force {
        match apply::guard(record.as_ref().map(Record::left).as_ref(), &current) {
            Guard::Proceed => {}
            Guard::RequiresForceOverwrite => return Ok(Outcome::RequiresForceOverwrite),
            Guard::RequiresForceRestore => return Ok(Outcome::RequiresForceRestore),
        }
    }
    check_type_conflict(spec, &target, &current, record.is_some()).map_err(context)?;
    let changes = changes(env, spec, &wanted, &current);

    if mode == Mode::Noop {
        print_noop(spec, action, &current, &changes);
        return Ok(Outcome::Changed);
    }

    let original = match &record {
        Some(record) => record.original.clone(),
        None => save_original(env, &fs, spec, &current).map_err(context)?,
    };
    let (uid, gid) = (wanted.uid.unwrap_or(0), wanted.gid.unwrap_or(0));
    let file_mode = wanted.mode.unwrap_or(0o644);
    // A staged file is not at the target yet: what it will be there.
    let mut staged = None;
    match action {
        Action::None => {}
        Action::Remove => posix::remove(&fs, &target, spec.force).map_err(context)?,
        Action::CreateDirectory => {
            if current.kind == Kind::File {
                posix::remove(&fs, &target, false).map_err(context)?;
            }
            posix::create_directory(&fs, &target, uid, gid, file_mode).map_err(context)?;
        }
        Action::Store => {
            let contents = desired_contents(&fs, spec, &target, &current).map_err(context)?;
            staged = posix::store(&fs, &target, &contents, uid, gid, file_mode)
                .map_err(context)?
                .map(|staged| Observed {
                    kind: Kind::File,
                    checksum: Some(posix::checksum_bytes(&contents)),
                    uid: staged.uid,
                    gid: staged.gid,
                    mode: staged.mode,
                    target: None,
                });
        }
        Action::Link => {
            let link_target = wanted.target.as_deref().unwrap_or(Path::new(""));
            posix::link(&fs, &target, link_target, wanted.uid, wanted.gid).map_err(context)?;
        }
    }

    let reached = match staged {
        Some(staged) => staged,
        None => posix::status(&fs, &target).map_err(context)?,
    };
    let differing = apply::differences(&wanted, &reached);
    if !differing.is_empty() {
        return Err(Error::new(format!(
            "{id}: after apply, {} still differs from the resource at {}; something else manages {} (check for another tool or a read-only mount)",
            differing.join(", "),
            spec.found_in,
            target.display()
        )));
    }
    for change in &changes {
        println!("{}", change.done());
    }
    write_record(env, id, spec, &wanted, &reached, original)?;
    Ok(Outcome::Changed)
}

/// One property that apply changes on a path that exists: printed as
/// `mode changed 0600 to 0644`, or in noop mode as `Would have changed
/// mode 0600 to 0644`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub property: &'static str,
    pub old: String,
    pub new: String,
}

impl Change {
    /// The line apply prints once the change is made.
    pub fn done(&self) -> String {
        format!("{} changed {} to {}", self.property, self.old, self.new)
    }
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} to {}", self.property, self.old, self.new)
    }
}

/// A path already as wanted: adopted as it is (so that scrubbing later
/// restores it) when there is no record, and the record brought up to
/// date when a run was killed between writing the path and its record
/// (or the next change would be taken for an edit by the user).
fn catch_up_record(
    env: &Env,
    fs: &RootFs,
    id: &str,
    spec: &FileSpec,
    wanted: &Wanted,
    current: &Observed,
) -> Result<()> {
    let context = |err: Error| err.context(id);
    match read_record(env, id)? {
        None => {
            let original = save_original(env, fs, spec, current).map_err(context)?;
            write_record(env, id, spec, wanted, current, original)?;
        }
        Some(record) if apply::guard(Some(&record.left()), current) != Guard::Proceed => {
            write_record(env, id, spec, wanted, current, record.original)?;
        }
        Some(_) => {}
    }
    Ok(())
}

/// The entity's record: its plain lines read directly, anything else by
/// the TOML parser.
fn read_record(env: &Env, id: &str) -> Result<Option<Record>> {
    state::read_with(env, id, Record::from_plain)
}

/// What a noop run would have done.
fn print_noop(spec: &FileSpec, action: Action, current: &Observed, changes: &[Change]) {
    if current.kind == Kind::of(spec.ensure) {
        for change in changes {
            println!("Would have changed {change}");
        }
    } else {
        println!(
            "{}",
            match action {
                Action::Store => "Would have created the file",
                Action::CreateDirectory => "Would have created directory",
                Action::Link if current.kind == Kind::Absent => "Would have created the link",
                Action::Link => "Would have replaced the file with the link",
                Action::Remove | Action::None => "Would have removed the file",
            }
        );
    }
}

/// What apply changes on a path that exists, one entry per property, in
/// CCM's order of checks. Creating and removing list nothing (the
/// entity's block says it); replacing one type with another lists `ensure`.
fn changes(env: &Env, spec: &FileSpec, wanted: &Wanted, current: &Observed) -> Vec<Change> {
    if current.kind == Kind::Absent || spec.ensure == Ensure::Absent {
        return Vec::new();
    }
    if current.kind != Kind::of(spec.ensure) {
        return vec![Change {
            property: "ensure",
            old: current.kind.as_str().to_string(),
            new: spec.ensure.as_str().to_string(),
        }];
    }
    let unknown = || "(none)".to_string();
    let shown = |path: &Option<PathBuf>| {
        path.as_ref()
            .map_or_else(unknown, |p| p.display().to_string())
    };
    apply::differences(wanted, current)
        .into_iter()
        .map(|property| {
            let (old, new) = match property {
                "content" => (
                    current.checksum.clone().unwrap_or_else(unknown),
                    wanted.checksum.clone().unwrap_or_else(unknown),
                ),
                "target" => (shown(&current.target), shown(&wanted.target)),
                "owner" => (
                    user_shown(env, current.uid, None),
                    user_shown(env, wanted.uid.unwrap_or(0), spec.owner.as_ref()),
                ),
                "group" => (
                    group_shown(env, current.gid, None),
                    group_shown(env, wanted.gid.unwrap_or(0), spec.group.as_ref()),
                ),
                _ => (
                    format_mode(current.mode),
                    format_mode(wanted.mode.unwrap_or(0)),
                ),
            };
            Change { property, old, new }
        })
        .collect()
}

/// A user as messages show it: the name the resource gives, else the name
/// of the id, else the id.
fn user_shown(env: &Env, uid: u32, declared: Option<&Principal>) -> String {
    match declared {
        Some(Principal::Name(name)) => name.clone(),
        _ => owners::user_name(env, uid).unwrap_or_else(|| uid.to_string()),
    }
}

/// A group as messages show it; see [`user_shown`].
fn group_shown(env: &Env, gid: u32, declared: Option<&Principal>) -> String {
    match declared {
        Some(Principal::Name(name)) => name.clone(),
        _ => owners::group_name(env, gid).unwrap_or_else(|| gid.to_string()),
    }
}

/// git's extended header lines for the attributes that differ between the
/// desired state (`old`) and the path (`new`): `old mode`/`new mode` with
/// all permission bits, and `old owner`/`new owner`, `old group`/`new
/// group`, which git has no lines for. Empty unless both are of one type.
fn header_lines(env: &Env, spec: &FileSpec, wanted: &Wanted, current: &Observed) -> Vec<String> {
    let type_bits = match current.kind {
        Kind::File => 0o100000,
        Kind::Directory => 0o040000,
        Kind::Link => 0o120000,
        Kind::Absent | Kind::Other => return Vec::new(),
    };
    if current.kind != Kind::of(spec.ensure) {
        return Vec::new();
    }
    // git's mode lines first, then ours.
    let mut lines = Vec::new();
    let mut owners = Vec::new();
    for change in changes(env, spec, wanted, current) {
        match change.property {
            "mode" => {
                let wanted_mode = wanted.mode.unwrap_or(0);
                lines.push(format!("old mode {:06o}", type_bits | wanted_mode));
                lines.push(format!("new mode {:06o}", type_bits | current.mode));
            }
            "owner" | "group" => {
                owners.push(format!("old {} {}", change.property, change.new));
                owners.push(format!("new {} {}", change.property, change.old));
            }
            _ => {}
        }
    }
    lines.extend(owners);
    lines
}

/// Undoes what the plugin did for an entity whose resource was deleted.
pub fn scrub(env: &Env, id: &str, path: &str, mode: Mode) -> Result<Outcome> {
    let context = |err: Error| err.context(id);
    let Some(record) = state::read::<Record>(env, id)? else {
        return Ok(Outcome::NotChanged);
    };
    let fs = env.root_fs()?;
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
    let what = |kind| {
        if kind == OriginalKind::Link {
            "link"
        } else {
            "file"
        }
    };
    if mode == Mode::Noop {
        match decision {
            Scrub::RestoreOriginal => println!(
                "Would have restored the original {}",
                what(record.original.kind)
            ),
            Scrub::Remove if record.ensure == Ensure::Link => {
                println!("Would have removed the link")
            }
            Scrub::Remove => println!("Would have removed the file"),
            Scrub::Forget | Scrub::RequiresForceOverwrite => {}
        }
        return Ok(Outcome::Changed);
    }
    let (uid, gid, original_mode) = record.original.attributes();
    match decision {
        Scrub::RestoreOriginal if record.original.kind == OriginalKind::Link => {
            let original = PathBuf::from(record.original.target.clone().unwrap_or_default());
            posix::link(&fs, &target, &original, Some(uid), Some(gid)).map_err(context)?
        }
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

/// The files to diff: the desired state (with the desired mode) and the
/// path, and header lines for attribute drift.
pub fn diff(env: &Env, id: &str, spec: Option<&FileSpec>, path: &str) -> Result<Option<Diff>> {
    let fs = env.root_fs()?;
    let target = env.root_join(path);
    let context = |err: Error| err.context(id);
    let plain = |desired: PathBuf, current: PathBuf| Diff {
        desired,
        current,
        header: Vec::new(),
    };
    let Some(spec) = spec else {
        if fs.is_dir(&target) {
            return Ok(None);
        }
        let base = base_path(env, path);
        let desired = if fs.is_file(&base) {
            base
        } else if let Some(original) = original_link(env, id)? {
            // Scrubbing puts the original link back.
            scratch_link(env, &fs, path, &original)?
        } else {
            PathBuf::from("/dev/null")
        };
        return Ok(Some(plain(desired, target)));
    };
    if spec.ensure == Ensure::Absent {
        // A directory that is to go has no text to show.
        if fs.is_dir(&target) {
            return Ok(None);
        }
        return Ok(Some(plain(PathBuf::from("/dev/null"), target)));
    }
    let current = posix::status(&fs, &target).map_err(context)?;
    // An owner that does not exist yet fails apply, not diff: then only
    // the files show.
    let header = match wanted(env, &fs, spec) {
        Ok(wanted) => header_lines(env, spec, &wanted, &current),
        Err(_) => Vec::new(),
    };
    let scratch = scratch_path(env, path);
    match spec.ensure {
        Ensure::Absent => Ok(None),
        // A directory shows only its attributes, and only where it is one.
        Ensure::Directory if header.is_empty() => Ok(None),
        Ensure::Directory => Ok(Some(Diff {
            desired: target.clone(),
            current: target,
            header,
        })),
        Ensure::Link => {
            let link_target = Path::new(spec.target.as_deref().unwrap_or_default());
            Ok(Some(Diff {
                desired: scratch_link(env, &fs, path, link_target)?,
                current: target,
                header,
            }))
        }
        Ensure::Present => {
            let contents = desired_contents(&fs, spec, &target, &current).map_err(context)?;
            let mode = spec.mode.unwrap_or(0o644);
            let in_place = current.kind == Kind::File
                && current.mode == mode
                && current.checksum.as_deref() == Some(posix::checksum_bytes(&contents).as_str());
            if in_place {
                // Nothing to show but the owner; spare the driver a copy to compare.
                return Ok(Some(Diff {
                    desired: target.clone(),
                    current: target,
                    header,
                }));
            }
            write_scratch(&fs, &scratch, &contents, mode)?;
            Ok(Some(Diff {
                desired: scratch,
                current: target,
                header,
            }))
        }
    }
}

/// Where diff puts the desired state of `path` in the cache.
fn scratch_path(env: &Env, path: &str) -> PathBuf {
    env.cache_dir
        .join("desired")
        .join(path.trim_start_matches('/'))
}

/// A link to `target` in the cache, as the desired state of `path`.
fn scratch_link(env: &Env, fs: &RootFs, path: &str, target: &Path) -> Result<PathBuf> {
    let scratch = scratch_path(env, path);
    if let Some(parent) = scratch.parent() {
        fs.create_dir_all(parent)
            .map_err(|err| Error::io("create directory", parent, &err))?;
    }
    posix::link(fs, &scratch, target, None, None)?;
    Ok(scratch)
}

/// The original link that scrubbing an entity puts back, if it had one.
fn original_link(env: &Env, id: &str) -> Result<Option<PathBuf>> {
    let record: Option<Record> = state::read(env, id)?;
    Ok(record
        .filter(|record| record.original.kind == OriginalKind::Link)
        .and_then(|record| record.original.target)
        .map(PathBuf::from))
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
        Some(Principal::Id(id)) => Ok(Some(*id)),
        Some(Principal::Name(name)) => cached_id(env, kind, name).map(Some),
        None => Ok(None),
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
        mode: match spec.ensure {
            Ensure::Link => None,
            _ => Some(spec.mode.unwrap_or(0o644)),
        },
        target: spec.target.as_ref().map(PathBuf::from),
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

/// Types the provider does not replace on its own. `managed` is true when
/// the plugin applied the entity before (a file that replaced its link is
/// then a manual edit, which `--force` overwrites without `force = true`).
fn check_type_conflict(
    spec: &FileSpec,
    target: &Path,
    current: &Observed,
    managed: bool,
) -> Result<()> {
    let what = match current.kind {
        Kind::Directory => "a directory",
        Kind::Link => "a symbolic link",
        Kind::Other => "a special file",
        Kind::File if spec.ensure == Ensure::Link && !spec.force && !managed => {
            return Err(Error::new(format!(
                "{} is a regular file; set force = true to replace it with the link (the file is saved and put back when the resource is removed) ({})",
                target.display(),
                spec.found_in
            )));
        }
        Kind::Absent | Kind::File => return Ok(()),
    };
    match spec.ensure {
        Ensure::Present => Err(Error::new(format!(
            "{} is {what}, not a regular file; remove it by hand or declare ensure = \"{}\" ({})",
            target.display(),
            match current.kind {
                Kind::Directory => "directory",
                Kind::Link => "link",
                _ => "absent",
            },
            spec.found_in
        ))),
        Ensure::Directory if current.kind != Kind::Directory => Err(Error::new(format!(
            "{} is {what}, not a directory; remove it by hand ({})",
            target.display(),
            spec.found_in
        ))),
        Ensure::Link if current.kind != Kind::Link => Err(Error::new(format!(
            "{} is {what}, which a link does not replace; remove it by hand ({})",
            target.display(),
            spec.found_in
        ))),
        Ensure::Directory | Ensure::Absent | Ensure::Link => Ok(()),
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
        Kind::Link => Ok(OriginalRecord::link(
            current.target.as_deref().unwrap_or(Path::new("")),
            current.uid,
            current.gid,
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
        mode: (present && wanted.mode.is_some()).then(|| format_mode(reached.mode)),
        target: spec.target.clone(),
        original,
    };
    state::write(env, id, &record)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_in(root: &Path) -> Env {
        let root = root.to_path_buf();
        Env::from_lookup("file", |key| match key {
            "HOLO_ROOT_DIR" => Some(root.clone().into()),
            "HOLO_CACHE_DIR" => Some(root.join("cache").into()),
            "HOLO_STATE_DIR" => Some(root.join("state").into()),
            _ => None,
        })
        .expect("env")
    }

    fn spec(path: &str, ensure: Ensure) -> FileSpec {
        FileSpec {
            path: path.to_string(),
            ensure,
            content: Content::Unmanaged,
            owner: None,
            group: None,
            mode: None,
            target: None,
            force: false,
            protect: false,
            found_in: "res.toml:1".to_string(),
        }
    }

    fn with_content(path: &str, text: &str) -> FileSpec {
        FileSpec {
            content: Content::Inline(text.to_string()),
            ..spec(path, Ensure::Present)
        }
    }

    fn observed(kind: Kind, mode: u32) -> Observed {
        Observed {
            kind,
            checksum: None,
            uid: 0,
            gid: 0,
            mode,
            target: None,
        }
    }

    fn wanted_mode(ensure: Ensure, mode: u32) -> Wanted {
        Wanted {
            ensure,
            checksum: None,
            uid: None,
            gid: None,
            mode: Some(mode),
            target: None,
        }
    }

    fn conflict(ensure: Ensure, kind: Kind, force: bool, managed: bool) -> Result<()> {
        let spec = FileSpec {
            force,
            ..spec("/etc/x", ensure)
        };
        check_type_conflict(
            &spec,
            Path::new("/r/etc/x"),
            &observed(kind, 0o644),
            managed,
        )
    }

    #[test]
    fn nothing_in_the_way_is_no_conflict() {
        assert!(conflict(Ensure::Present, Kind::Absent, false, false).is_ok());
        assert!(conflict(Ensure::Present, Kind::File, false, false).is_ok());
    }

    #[test]
    fn a_file_where_a_link_goes_needs_force() {
        let err = conflict(Ensure::Link, Kind::File, false, false).expect_err("conflict");
        assert!(err.message().contains("set force = true"), "{err}");
        assert!(err.message().contains("res.toml:1"), "{err}");
        assert!(conflict(Ensure::Link, Kind::File, true, false).is_ok());
    }

    #[test]
    fn a_file_that_replaced_a_managed_link_is_an_edit_not_a_conflict() {
        assert!(conflict(Ensure::Link, Kind::File, false, true).is_ok());
    }

    #[test]
    fn a_directory_or_link_is_not_replaced_by_a_file() {
        let err = conflict(Ensure::Present, Kind::Directory, true, true).expect_err("dir");
        assert!(
            err.message().contains(
                "is a directory, not a regular file; remove it by hand or declare ensure = \"directory\""
            ),
            "{err}"
        );
        let err = conflict(Ensure::Present, Kind::Link, true, true).expect_err("link");
        assert!(err.message().contains("declare ensure = \"link\""), "{err}");
    }

    #[test]
    fn only_a_directory_is_kept_for_a_directory() {
        let err = conflict(Ensure::Directory, Kind::Other, true, true).expect_err("special");
        assert!(
            err.message().contains("is a special file, not a directory"),
            "{err}"
        );
        assert!(conflict(Ensure::Directory, Kind::Directory, false, false).is_ok());
    }

    #[test]
    fn a_link_replaces_only_a_link() {
        let err = conflict(Ensure::Link, Kind::Directory, true, true).expect_err("dir");
        assert!(
            err.message().contains("which a link does not replace"),
            "{err}"
        );
        assert!(conflict(Ensure::Link, Kind::Link, false, false).is_ok());
    }

    #[test]
    fn removing_tolerates_any_type() {
        assert!(conflict(Ensure::Absent, Kind::Directory, false, false).is_ok());
        assert!(conflict(Ensure::Absent, Kind::Other, false, false).is_ok());
    }

    #[test]
    fn creating_or_removing_lists_no_changes() {
        let root = tempfile::tempdir().expect("tempdir");
        let env = env_in(root.path());
        let present = spec("/etc/x", Ensure::Present);
        let wanted = wanted_mode(Ensure::Present, 0o644);
        assert!(changes(&env, &present, &wanted, &observed(Kind::Absent, 0)).is_empty());
        let absent = spec("/etc/x", Ensure::Absent);
        assert!(changes(&env, &absent, &wanted, &observed(Kind::File, 0o600)).is_empty());
    }

    #[test]
    fn replacing_a_type_lists_ensure() {
        let root = tempfile::tempdir().expect("tempdir");
        let env = env_in(root.path());
        let directory = spec("/etc/x", Ensure::Directory);
        let wanted = wanted_mode(Ensure::Directory, 0o755);
        assert_eq!(
            changes(&env, &directory, &wanted, &observed(Kind::File, 0o644)),
            vec![Change {
                property: "ensure",
                old: "present".to_string(),
                new: "directory".to_string(),
            }]
        );
    }

    #[test]
    fn a_mode_change_shows_both_modes() {
        let root = tempfile::tempdir().expect("tempdir");
        let env = env_in(root.path());
        let present = spec("/etc/x", Ensure::Present);
        let wanted = wanted_mode(Ensure::Present, 0o644);
        let listed = changes(&env, &present, &wanted, &observed(Kind::File, 0o600));
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].to_string(), "mode 0600 to 0644");
        assert_eq!(listed[0].done(), "mode changed 0600 to 0644");
    }

    #[test]
    fn header_lines_carry_git_mode_bits_desired_first() {
        let root = tempfile::tempdir().expect("tempdir");
        let env = env_in(root.path());
        let present = spec("/etc/x", Ensure::Present);
        let wanted = wanted_mode(Ensure::Present, 0o644);
        assert_eq!(
            header_lines(&env, &present, &wanted, &observed(Kind::File, 0o600)),
            vec!["old mode 100644".to_string(), "new mode 100600".to_string()]
        );
        // Of different types: no attribute lines.
        let directory = spec("/etc/x", Ensure::Directory);
        let wanted = wanted_mode(Ensure::Directory, 0o755);
        assert!(header_lines(&env, &directory, &wanted, &observed(Kind::File, 0o600)).is_empty());
        assert!(header_lines(&env, &directory, &wanted, &observed(Kind::Absent, 0)).is_empty());
    }

    #[test]
    fn a_named_owner_is_shown_by_the_name_the_resource_gives() {
        let root = tempfile::tempdir().expect("tempdir");
        let env = env_in(root.path());
        let declared = Principal::Name("web".to_string());
        assert_eq!(user_shown(&env, 33, Some(&declared)), "web");
        assert_eq!(group_shown(&env, 33, Some(&declared)), "web");
        // No passwd/group in the root: the id.
        assert_eq!(user_shown(&env, 4242, None), "4242");
        assert_eq!(group_shown(&env, 4242, None), "4242");
    }

    #[test]
    fn originals_are_kept_below_the_state_dir() {
        let root = tempfile::tempdir().expect("tempdir");
        let env = env_in(root.path());
        assert_eq!(
            base_path(&env, "/etc/app.conf"),
            root.path().join("state/base/etc/app.conf")
        );
    }

    fn read_record(env: &Env, id: &str) -> Option<Record> {
        state::read(env, id).expect("record")
    }

    #[test]
    fn a_path_already_as_wanted_is_adopted_with_a_record() {
        let root = tempfile::tempdir().expect("tempdir");
        let env = env_in(root.path());
        std::fs::create_dir_all(root.path().join("etc")).expect("mkdir");
        let path = root.path().join("etc/x");
        std::fs::write(&path, "hello\n").expect("write");
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o644))
            .expect("chmod");
        let spec = with_content("/etc/x", "hello\n");
        let outcome = apply(&env, "file:/etc/x", &spec, Mode::Apply).expect("apply");
        assert_eq!(outcome, Outcome::NotChanged);
        let record = read_record(&env, "file:/etc/x").expect("adopted");
        assert_eq!(record.original.kind, OriginalKind::File);
        assert_eq!(
            record.checksum.as_deref(),
            Some(posix::checksum_bytes(b"hello\n").as_str())
        );
    }

    #[test]
    fn noop_changes_nothing_and_writes_no_record() {
        let root = tempfile::tempdir().expect("tempdir");
        let env = env_in(root.path());
        let spec = with_content("/etc/x", "hello\n");
        let outcome = apply(&env, "file:/etc/x", &spec, Mode::Noop).expect("noop");
        assert_eq!(outcome, Outcome::Changed);
        assert!(!root.path().join("etc/x").exists());
        assert!(read_record(&env, "file:/etc/x").is_none());
    }

    #[test]
    fn apply_creates_the_file_and_records_what_it_left() {
        let root = tempfile::tempdir().expect("tempdir");
        let env = env_in(root.path());
        std::fs::create_dir_all(root.path().join("etc")).expect("mkdir");
        let spec = FileSpec {
            mode: Some(0o600),
            ..with_content("/etc/x", "hello\n")
        };
        let outcome = apply(&env, "file:/etc/x", &spec, Mode::Apply).expect("apply");
        assert_eq!(outcome, Outcome::Changed);
        holo_plugin::atomic::commit_staged();
        assert_eq!(
            std::fs::read_to_string(root.path().join("etc/x")).expect("read"),
            "hello\n"
        );
        let record = read_record(&env, "file:/etc/x").expect("record");
        assert_eq!(record.original.kind, OriginalKind::None);
        assert_eq!(record.mode.as_deref(), Some("0600"));
    }

    #[test]
    fn a_protected_file_edited_by_hand_requires_force() {
        let root = tempfile::tempdir().expect("tempdir");
        let env = env_in(root.path());
        std::fs::create_dir_all(root.path().join("etc")).expect("mkdir");
        let spec = FileSpec {
            protect: true,
            ..with_content("/etc/x", "hello\n")
        };
        apply(&env, "file:/etc/x", &spec, Mode::Apply).expect("first apply");
        holo_plugin::atomic::commit_staged();
        std::fs::write(root.path().join("etc/x"), "edited\n").expect("edit");
        let changed = FileSpec {
            content: Content::Inline("new\n".to_string()),
            ..spec.clone()
        };
        let outcome = apply(&env, "file:/etc/x", &changed, Mode::Apply).expect("apply");
        assert_eq!(outcome, Outcome::RequiresForceOverwrite);
        assert_eq!(
            std::fs::read_to_string(root.path().join("etc/x")).expect("read"),
            "edited\n"
        );
    }

    #[test]
    fn scrubbing_an_entity_without_a_record_changes_nothing() {
        let root = tempfile::tempdir().expect("tempdir");
        let env = env_in(root.path());
        let outcome = scrub(&env, "file:/etc/x", "/etc/x", Mode::Apply).expect("scrub");
        assert_eq!(outcome, Outcome::NotChanged);
    }

    #[test]
    fn scrubbing_a_created_file_removes_it_and_its_record() {
        let root = tempfile::tempdir().expect("tempdir");
        let env = env_in(root.path());
        std::fs::create_dir_all(root.path().join("etc")).expect("mkdir");
        let spec = with_content("/etc/x", "hello\n");
        apply(&env, "file:/etc/x", &spec, Mode::Apply).expect("apply");
        holo_plugin::atomic::commit_staged();
        let outcome = scrub(&env, "file:/etc/x", "/etc/x", Mode::Apply).expect("scrub");
        assert_eq!(outcome, Outcome::Changed);
        assert!(!root.path().join("etc/x").exists());
        assert!(read_record(&env, "file:/etc/x").is_none());
    }

    #[test]
    fn diff_of_an_orphan_without_an_original_is_against_dev_null() {
        let root = tempfile::tempdir().expect("tempdir");
        let env = env_in(root.path());
        let diff = diff(&env, "file:/etc/x", None, "/etc/x")
            .expect("diff")
            .expect("some");
        assert_eq!(diff.desired, PathBuf::from("/dev/null"));
        assert_eq!(diff.current, root.path().join("etc/x"));
    }

    #[test]
    fn diff_shows_nothing_for_a_directory_to_remove_or_as_wanted() {
        let root = tempfile::tempdir().expect("tempdir");
        let env = env_in(root.path());
        std::fs::create_dir_all(root.path().join("srv/d")).expect("mkdir");
        let absent = spec("/srv/d", Ensure::Absent);
        assert!(
            diff(&env, "file:/srv/d", Some(&absent), "/srv/d")
                .expect("diff")
                .is_none()
        );
        std::fs::set_permissions(
            root.path().join("srv/d"),
            std::os::unix::fs::PermissionsExt::from_mode(0o644),
        )
        .expect("chmod");
        let directory = spec("/srv/d", Ensure::Directory);
        assert!(
            diff(&env, "file:/srv/d", Some(&directory), "/srv/d")
                .expect("diff")
                .is_none()
        );
    }

    #[test]
    fn diff_of_a_file_writes_the_desired_content_to_the_cache() {
        let root = tempfile::tempdir().expect("tempdir");
        let env = env_in(root.path());
        let spec = with_content("/etc/x", "hello\n");
        let diff = diff(&env, "file:/etc/x", Some(&spec), "/etc/x")
            .expect("diff")
            .expect("some");
        assert_eq!(diff.desired, root.path().join("cache/desired/etc/x"));
        assert_eq!(
            std::fs::read_to_string(&diff.desired).expect("read"),
            "hello\n"
        );
    }
}
