//! Native, safe extraction of `.tar.gz`, `.tar` and `.zip` archives
//! (feature `extract`), shared by the archive and scaffold plugins.
//!
//! Every entry is unpacked into a fresh staging directory inside
//! `extract_parent`, then the staged tree is moved into place with renames.
//! Refused, before anything reaches `extract_parent`: absolute entry paths,
//! `..` components, entries written through a symlink, symlinks and hard
//! links that resolve outside `extract_parent`, and device, fifo and socket
//! entries. A refused or broken archive leaves `extract_parent` as it was:
//! the staging directory is removed, and conflicts with what is already
//! there are found before the first rename. File modes are kept, without
//! setuid/setgid unless the caller allows them. Extracted files belong to
//! the user running the plugin; owners recorded in the archive are ignored.
//!
//! Before the staging directory is made, a pass over the archive's headers
//! (for `.tar.gz` a streaming one: the data is decompressed and dropped)
//! counts the entries and the bytes they hold, and the archive is refused
//! when that passes the limits or the free space of `extract_parent`'s file
//! system. The pass stops as soon as one is passed, so a bomb costs no more
//! than its limit in decompression. While extracting, no more bytes are
//! written than the headers declared.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io::{BufReader, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The archive formats, from the file name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// `.tar.gz` or `.tgz`
    TarGz,
    /// `.tar`
    Tar,
    /// `.zip`
    Zip,
}

impl Format {
    /// The format a path or URL path ends in.
    pub fn of(path: &str) -> Option<Format> {
        let lower = path.to_ascii_lowercase();
        if lower.ends_with(".tar.gz") || lower.ends_with(".tgz") {
            Some(Format::TarGz)
        } else if lower.ends_with(".tar") {
            Some(Format::Tar)
        } else if lower.ends_with(".zip") {
            Some(Format::Zip)
        } else {
            None
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::TarGz => ".tar.gz",
            Format::Tar => ".tar",
            Format::Zip => ".zip",
        }
    }
}

/// The limits of one extraction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_bytes: u64,
    pub max_entries: u64,
}

/// What a pass over the archive's headers counted, before anything is
/// written. The pass stops once a limit or the free space is passed, so
/// the counts are then lower bounds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Survey {
    /// Bytes of file content.
    pub bytes: u64,
    /// The same, each file rounded up to whole blocks: what the disk needs.
    pub disk_bytes: u64,
    pub entries: u64,
}

/// Whether an archive may be extracted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Room {
    Fits,
    TooManyEntries,
    TooLarge,
    /// More than the target's file system has free.
    NoSpace,
}

/// The limits first (they name what to raise), then the free space of the
/// target's file system (`available` bytes).
pub fn room(limits: &Limits, survey: &Survey, available: u64) -> Room {
    if survey.entries > limits.max_entries {
        Room::TooManyEntries
    } else if survey.bytes > limits.max_bytes {
        Room::TooLarge
    } else if survey.disk_bytes > available {
        Room::NoSpace
    } else {
        Room::Fits
    }
}

/// Block size that file sizes are rounded up to when estimating the disk
/// space an extraction needs.
const BLOCK: u64 = 4096;

/// Symlink hops followed while checking where a link leads (as Linux's 40).
const MAX_SYMLINK_HOPS: u32 = 40;

/// Staging directories are `.holo-archive-` and six random characters.
const STAGING_PREFIX: &str = ".holo-archive-";

/// Removes staging directories that a killed extraction left behind
/// (best effort; holo runs one at a time).
fn remove_stale_staging(parent: &Path) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let stale = name
            .to_str()
            .and_then(|name| name.strip_prefix(STAGING_PREFIX))
            .is_some_and(|suffix| suffix.len() == 6);
        if stale && entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// How to extract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Keep setuid/setgid bits (the caller passes true only as root with the opt-in).
    pub keep_setuid: bool,
    pub limits: Limits,
    pub wording: Wording,
}

/// What messages call the directory extracted into and the properties that
/// raise the limits, in the words of the caller's resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wording {
    pub parent: &'static str,
    /// The properties that raise the entry and size limits; `None` where
    /// the resource has none (the limits are fixed).
    pub raise_limits: Option<(&'static str, &'static str)>,
}

/// Extracts `archive` into `parent` (created 0755 when missing). `logical_parent`
/// is `extract_parent` as the resource names it, which absolute symlink
/// targets are checked against (it differs from `parent` in test mode).
/// Returns the number of entries extracted.
pub fn extract(
    archive: &Path,
    format: Format,
    parent: &Path,
    logical_parent: &Path,
    options: Options,
) -> Result<usize, String> {
    // It makes directories: what a batch kept of the tree no longer holds.
    crate::root_fs::entries_changed();
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(parent)
        .map_err(|err| format!("cannot create {}: {err}", logical_parent.display()))?;
    remove_stale_staging(parent);
    let available = available_bytes(parent).map_err(|err| {
        format!(
            "cannot read the free space of {}: {err}",
            logical_parent.display()
        )
    })?;
    let survey = survey(archive, format, &options.limits, available)?;
    refuse_without_room(&options, &survey, available, logical_parent)?;
    let staging = tempfile::Builder::new()
        .prefix(STAGING_PREFIX)
        .tempdir_in(parent)
        .map_err(|err| {
            format!(
                "cannot create a staging directory in {}: {err}",
                logical_parent.display()
            )
        })?;
    let mut stager = Stager {
        root: staging.path().to_path_buf(),
        options,
        symlinks: Vec::new(),
        dir_modes: Vec::new(),
        entries: 0,
        budget: survey.bytes,
    };
    let file = File::open(archive).map_err(|err| format!("cannot open the archive: {err}"))?;
    match format {
        Format::TarGz => stage_tar(
            tar::Archive::new(flate2::read::GzDecoder::new(BufReader::new(file))),
            &mut stager,
        )?,
        Format::Tar => stage_tar(tar::Archive::new(BufReader::new(file)), &mut stager)?,
        Format::Zip => stage_zip(file, &mut stager)?,
    }
    stager.check_symlinks(parent, logical_parent)?;
    stager.set_dir_modes()?;
    find_conflicts(staging.path(), parent, Path::new(""))?;
    move_into_place(staging.path(), parent, Path::new(""))?;
    let entries = stager.entries;
    staging
        .close()
        .map_err(|err| format!("cannot remove the staging directory: {err}"))?;
    Ok(entries)
}

/// The validated components of an entry path: relative, without `..`.
fn entry_components(raw: &Path, what: &str, parent: &str) -> Result<Vec<OsString>, String> {
    let mut parts = Vec::new();
    for component in raw.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_os_string()),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!(
                    "{what} {} is an absolute path; only relative paths are extracted",
                    raw.display()
                ));
            }
            Component::ParentDir => {
                return Err(format!(
                    "{what} {} contains \"..\", which could write outside {parent}",
                    raw.display()
                ));
            }
        }
    }
    Ok(parts)
}

fn join(parts: &[OsString]) -> PathBuf {
    parts.iter().collect()
}

/// Unpacks entries into the staging directory and remembers what must be
/// checked or set once all entries are there.
struct Stager {
    root: PathBuf,
    options: Options,
    /// `(link path, target)` relative to the staging root.
    symlinks: Vec<(Vec<OsString>, PathBuf)>,
    dir_modes: Vec<(PathBuf, u32)>,
    entries: usize,
    /// Bytes the headers declared that are not written yet.
    budget: u64,
}

impl Stager {
    fn mode(&self, raw: u32) -> u32 {
        let mode = raw & 0o7777;
        if self.options.keep_setuid {
            mode
        } else {
            mode & !0o6000
        }
    }

    /// Creates the directories `parts` in staging, refusing to go through
    /// a symlink or a file; returns the full path.
    fn make_dirs(&self, parts: &[OsString], raw: &Path) -> Result<PathBuf, String> {
        let mut current = self.root.clone();
        for (index, part) in parts.iter().enumerate() {
            current.push(part);
            match fs::symlink_metadata(&current) {
                Ok(meta) if meta.is_dir() => {}
                Ok(meta) => {
                    let kind = if meta.file_type().is_symlink() {
                        "a symlink"
                    } else {
                        "not a directory"
                    };
                    return Err(format!(
                        "entry {} would be written through {}, which is {kind} in the archive",
                        raw.display(),
                        join(&parts[..=index]).display()
                    ));
                }
                Err(_) => fs::DirBuilder::new()
                    .mode(0o755)
                    .create(&current)
                    .map_err(|err| format!("entry {}: {err}", raw.display()))?,
            }
        }
        Ok(current)
    }

    /// Creates the parent directories of entry `parts` and clears the way
    /// for it; returns the full path of the entry.
    fn prepare(&self, parts: &[OsString], raw: &Path) -> Result<PathBuf, String> {
        let mut current = self.make_dirs(&parts[..parts.len() - 1], raw)?;
        current.push(&parts[parts.len() - 1]);
        // A later entry replaces an earlier one, but never a directory.
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.is_dir() => Err(format!(
                "entry {} would replace a directory of the same name in the archive",
                raw.display()
            )),
            Ok(_) => fs::remove_file(&current)
                .map(|()| current)
                .map_err(|err| format!("entry {}: {err}", raw.display())),
            Err(_) => Ok(current),
        }
    }

    fn file(&mut self, raw: &Path, mode: u32, content: &mut dyn Read) -> Result<(), String> {
        let parts = entry_components(raw, "entry", self.options.wording.parent)?;
        if parts.is_empty() {
            return Err(format!(
                "entry {:?} is a file without a name",
                raw.display().to_string()
            ));
        }
        let path = self.prepare(&parts, raw)?;
        let fail = |err: std::io::Error| format!("entry {}: {err}", raw.display());
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(fail)?;
        // An entry's data never goes past what the headers declared (a zip
        // entry may claim less than it inflates to).
        let copied = std::io::copy(&mut content.take(self.budget + 1), &mut file).map_err(fail)?;
        if copied > self.budget {
            return Err(format!(
                "entry {} holds more data than the archive's headers declare; the archive is damaged or hostile",
                raw.display()
            ));
        }
        self.budget -= copied;
        file.set_permissions(fs::Permissions::from_mode(self.mode(mode)))
            .map_err(fail)?;
        self.entries += 1;
        Ok(())
    }

    fn dir(&mut self, raw: &Path, mode: u32) -> Result<(), String> {
        let parts = entry_components(raw, "entry", self.options.wording.parent)?;
        if parts.is_empty() {
            return Ok(());
        }
        let current = self.make_dirs(&parts, raw)?;
        self.dir_modes.push((current, self.mode(mode)));
        self.entries += 1;
        Ok(())
    }

    fn symlink(&mut self, raw: &Path, target: &Path) -> Result<(), String> {
        let parts = entry_components(raw, "entry", self.options.wording.parent)?;
        if parts.is_empty() || target.as_os_str().is_empty() {
            return Err(format!(
                "symlink entry {} has no name or no target",
                raw.display()
            ));
        }
        let path = self.prepare(&parts, raw)?;
        std::os::unix::fs::symlink(target, &path)
            .map_err(|err| format!("entry {}: {err}", raw.display()))?;
        self.symlinks.push((parts, target.to_path_buf()));
        self.entries += 1;
        Ok(())
    }

    fn hardlink(&mut self, raw: &Path, target: &Path) -> Result<(), String> {
        let parts = entry_components(raw, "entry", self.options.wording.parent)?;
        let what = format!("hard link {} points to", raw.display());
        let target_parts = entry_components(target, &what, self.options.wording.parent)?;
        if parts.is_empty() || target_parts.is_empty() {
            return Err(format!(
                "hard link entry {} has no name or no target",
                raw.display()
            ));
        }
        let not_earlier = || {
            format!(
                "hard link {} points to {}, which is not a file earlier in the archive",
                raw.display(),
                target.display()
            )
        };
        // The target must be a regular file reached without symlinks.
        let mut source = self.root.clone();
        for (index, part) in target_parts.iter().enumerate() {
            source.push(part);
            let meta = fs::symlink_metadata(&source).map_err(|_| not_earlier())?;
            let last = index == target_parts.len() - 1;
            if (last && !meta.is_file()) || (!last && !meta.is_dir()) {
                return Err(not_earlier());
            }
        }
        let path = self.prepare(&parts, raw)?;
        fs::hard_link(&source, &path).map_err(|err| format!("entry {}: {err}", raw.display()))?;
        self.entries += 1;
        Ok(())
    }

    /// Every symlink must resolve inside `extract_parent`, looking through
    /// the staged tree and, below it, what is already in `parent`.
    fn check_symlinks(&self, parent: &Path, logical_parent: &Path) -> Result<(), String> {
        let view = View {
            staging: &self.root,
            parent,
            logical_parent,
        };
        for (parts, target) in &self.symlinks {
            let mut hops = 0;
            let dir = parts[..parts.len() - 1].to_vec();
            if view.resolve(dir, target, &mut hops).is_none() {
                return Err(format!(
                    "symlink {} -> {} resolves outside {} {}",
                    join(parts).display(),
                    target.display(),
                    self.options.wording.parent,
                    logical_parent.display()
                ));
            }
        }
        Ok(())
    }

    /// Directory modes last, deepest first, so that a read-only directory
    /// did not stop its own entries.
    fn set_dir_modes(&mut self) -> Result<(), String> {
        self.dir_modes
            .sort_by_key(|(path, _)| std::cmp::Reverse(path.components().count()));
        for (path, mode) in &self.dir_modes {
            fs::set_permissions(path, fs::Permissions::from_mode(*mode)).map_err(|err| {
                format!(
                    "cannot set the mode of {}: {err}",
                    path.strip_prefix(&self.root).unwrap_or(path).display()
                )
            })?;
        }
        Ok(())
    }
}

/// The tree as it will be after the move: staged entries over `parent`.
struct View<'a> {
    staging: &'a Path,
    parent: &'a Path,
    logical_parent: &'a Path,
}

impl View<'_> {
    fn lookup(&self, parts: &[OsString]) -> Option<(PathBuf, fs::Metadata)> {
        let rel = join(parts);
        [self.staging.join(&rel), self.parent.join(&rel)]
            .into_iter()
            .find_map(|path| fs::symlink_metadata(&path).ok().map(|meta| (path, meta)))
    }

    /// Resolves `target` as seen from directory `dir` (components below
    /// `extract_parent`), following symlinks; `None` when it leaves.
    fn resolve(&self, dir: Vec<OsString>, target: &Path, hops: &mut u32) -> Option<Vec<OsString>> {
        let (mut resolved, rest) = if target.is_absolute() {
            (Vec::new(), target.strip_prefix(self.logical_parent).ok()?)
        } else {
            (dir, target)
        };
        for component in rest.components() {
            match component {
                Component::CurDir => {}
                Component::RootDir | Component::Prefix(_) => return None,
                Component::ParentDir => {
                    resolved.pop()?;
                }
                Component::Normal(part) => {
                    resolved.push(part.to_os_string());
                    if let Some((path, meta)) = self.lookup(&resolved)
                        && meta.file_type().is_symlink()
                    {
                        *hops += 1;
                        if *hops > MAX_SYMLINK_HOPS {
                            return None;
                        }
                        let next = fs::read_link(&path).ok()?;
                        resolved.pop();
                        resolved = self.resolve(resolved, &next, hops)?;
                    }
                }
            }
        }
        Some(resolved)
    }
}

/// Finds what would stop the move before anything is moved: a directory
/// where a file goes, or a file or symlink where a directory goes (a
/// symlink in `parent` is never written through).
fn find_conflicts(staged: &Path, target: &Path, rel: &Path) -> Result<(), String> {
    for (name, staged_is_dir) in sorted_entries(staged)? {
        let rel = rel.join(&name);
        let existing = match fs::symlink_metadata(target.join(&name)) {
            Ok(meta) => meta,
            Err(_) => continue,
        };
        match (staged_is_dir, existing.is_dir()) {
            (true, true) => find_conflicts(&staged.join(&name), &target.join(&name), &rel)?,
            (true, false) => {
                return Err(format!(
                    "cannot extract directory {}: a file or symlink of that name is in extract_parent; remove it first",
                    rel.display()
                ));
            }
            (false, true) => {
                return Err(format!(
                    "cannot extract {}: a directory of that name is in extract_parent; remove it first",
                    rel.display()
                ));
            }
            (false, false) => {}
        }
    }
    Ok(())
}

/// Renames staged entries into place; directories that exist are merged.
fn move_into_place(staged: &Path, target: &Path, rel: &Path) -> Result<(), String> {
    for (name, staged_is_dir) in sorted_entries(staged)? {
        let from = staged.join(&name);
        let to = target.join(&name);
        let rel = rel.join(&name);
        let merge = staged_is_dir && fs::symlink_metadata(&to).is_ok_and(|meta| meta.is_dir());
        if merge {
            move_into_place(&from, &to, &rel)?;
        } else {
            fs::rename(&from, &to)
                .map_err(|err| format!("cannot move {} into place: {err}", rel.display()))?;
        }
    }
    Ok(())
}

/// Names in `dir` (not followed) and whether each is a real directory.
fn sorted_entries(dir: &Path) -> Result<Vec<(OsString, bool)>, String> {
    let read = fs::read_dir(dir).map_err(|err| format!("cannot list the staged entries: {err}"))?;
    let mut names = Vec::new();
    for entry in read {
        let entry = entry.map_err(|err| format!("cannot list the staged entries: {err}"))?;
        let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
        names.push((entry.file_name(), is_dir));
    }
    names.sort();
    Ok(names)
}

/// Bytes free for an unprivileged user on `dir`'s file system.
fn available_bytes(dir: &Path) -> std::io::Result<u64> {
    let stat = nix::sys::statvfs::statvfs(dir).map_err(std::io::Error::from)?;
    Ok(stat.blocks_available().saturating_mul(stat.fragment_size()))
}

fn round_up_to_block(bytes: u64) -> u64 {
    bytes.div_ceil(BLOCK).saturating_mul(BLOCK)
}

/// Counts the archive's entries and bytes from its headers, stopping as
/// soon as a limit or the free space is passed.
fn survey(
    archive: &Path,
    format: Format,
    limits: &Limits,
    available: u64,
) -> Result<Survey, String> {
    let mut survey = Survey::default();
    let passed = |survey: &Survey| room(limits, survey, available) != Room::Fits;
    let add = |survey: &mut Survey, bytes: u64| {
        survey.entries += 1;
        survey.bytes = survey.bytes.saturating_add(bytes);
        survey.disk_bytes = survey
            .disk_bytes
            .saturating_add(round_up_to_block(bytes).max(BLOCK));
    };
    let file = File::open(archive).map_err(|err| format!("cannot open the archive: {err}"))?;
    match format {
        Format::Zip => {
            let broken = |err: zip::result::ZipError| {
                format!("the archive is damaged or not a zip archive: {err}")
            };
            let mut zip = zip::ZipArchive::new(BufReader::new(file)).map_err(broken)?;
            for index in 0..zip.len() {
                let entry = zip.by_index_raw(index).map_err(broken)?;
                add(&mut survey, entry.size());
                if passed(&survey) {
                    break;
                }
            }
        }
        Format::Tar | Format::TarGz => {
            let reader: Box<dyn Read> = if format == Format::TarGz {
                Box::new(flate2::read::GzDecoder::new(BufReader::new(file)))
            } else {
                Box::new(BufReader::new(file))
            };
            let broken =
                |err: std::io::Error| format!("the archive is damaged or not a tar archive: {err}");
            let mut tar = tar::Archive::new(reader);
            for entry in tar.entries().map_err(broken)? {
                let entry = entry.map_err(broken)?;
                add(&mut survey, entry.size());
                if passed(&survey) {
                    break;
                }
            }
        }
    }
    Ok(survey)
}

fn refuse_without_room(
    options: &Options,
    survey: &Survey,
    available: u64,
    logical_parent: &Path,
) -> Result<(), String> {
    let refused = "refused before extracting anything";
    let limits = &options.limits;
    // `which`: 0 for the entry limit's property, 1 for the size limit's.
    let raise = |which: usize, example: String| match options.wording.raise_limits {
        Some((entries, size)) => {
            let property = if which == 0 { entries } else { size };
            format!("if it is expected, raise {property}{example}")
        }
        None => "the limit is fixed".to_string(),
    };
    match room(limits, survey, available) {
        Room::Fits => Ok(()),
        Room::TooManyEntries => Err(format!(
            "the archive has more than {} entries, the limit; {refused}; {}",
            limits.max_entries,
            raise(0, String::new())
        )),
        Room::TooLarge => Err(format!(
            "the archive expands to more than {} bytes, the limit; {refused}; {}",
            limits.max_bytes,
            raise(
                1,
                format!(" (for example \"{}GiB\")", (survey.bytes >> 30) + 1)
            )
        )),
        Room::NoSpace => Err(format!(
            "the archive needs at least {} bytes, and the file system of {} has {} bytes free; {refused}; free some space{}",
            survey.disk_bytes,
            logical_parent.display(),
            available,
            match options.wording.raise_limits {
                Some(_) => format!(" or choose another {}", options.wording.parent),
                None => String::new(),
            }
        )),
    }
}

fn special(raw: &Path, kind: &str) -> String {
    format!(
        "entry {} is a {kind}; device, fifo and socket entries are refused",
        raw.display()
    )
}

fn stage_tar<R: Read>(mut archive: tar::Archive<R>, stager: &mut Stager) -> Result<(), String> {
    let broken =
        |err: std::io::Error| format!("the archive is damaged or not a tar archive: {err}");
    for entry in archive.entries().map_err(broken)? {
        let mut entry = entry.map_err(broken)?;
        let raw = entry.path().map_err(broken)?.into_owned();
        let mode = entry.header().mode().unwrap_or(0o644);
        let link = entry
            .link_name()
            .map_err(broken)?
            .map(|link| link.into_owned());
        let no_target = || format!("link entry {} has no target", raw.display());
        use tar::EntryType;
        match entry.header().entry_type() {
            EntryType::Regular | EntryType::Continuous => stager.file(&raw, mode, &mut entry)?,
            EntryType::Directory => stager.dir(&raw, mode)?,
            EntryType::Symlink => stager.symlink(&raw, &link.ok_or_else(no_target)?)?,
            EntryType::Link => stager.hardlink(&raw, &link.ok_or_else(no_target)?)?,
            EntryType::Char => return Err(special(&raw, "character device")),
            EntryType::Block => return Err(special(&raw, "block device")),
            EntryType::Fifo => return Err(special(&raw, "fifo")),
            EntryType::XGlobalHeader | EntryType::XHeader => {}
            other => {
                return Err(format!(
                    "entry {} has the unsupported tar type {other:?}",
                    raw.display()
                ));
            }
        }
    }
    Ok(())
}

const S_IFMT: u32 = 0o170_000;
const S_IFLNK: u32 = 0o120_000;
const S_IFDIR: u32 = 0o040_000;
const S_IFREG: u32 = 0o100_000;

fn stage_zip(file: File, stager: &mut Stager) -> Result<(), String> {
    let broken =
        |err: zip::result::ZipError| format!("the archive is damaged or not a zip archive: {err}");
    let mut archive = zip::ZipArchive::new(BufReader::new(file)).map_err(broken)?;
    for index in 0..archive.len() {
        let mut entry = archive.by_index(index).map_err(broken)?;
        let raw = PathBuf::from(OsStr::from_bytes(entry.name_raw()));
        let unix_mode = entry.unix_mode();
        match unix_mode.map(|mode| mode & S_IFMT) {
            Some(S_IFLNK) => {
                let mut target = Vec::new();
                entry
                    .read_to_end(&mut target)
                    .map_err(|err| format!("entry {}: {err}", raw.display()))?;
                stager.symlink(&raw, Path::new(OsStr::from_bytes(&target)))?;
            }
            Some(0o020_000) => return Err(special(&raw, "character device")),
            Some(0o060_000) => return Err(special(&raw, "block device")),
            Some(0o010_000) => return Err(special(&raw, "fifo")),
            Some(0o140_000) => return Err(special(&raw, "socket")),
            Some(S_IFDIR) => stager.dir(&raw, unix_mode.unwrap_or(0o755))?,
            Some(S_IFREG) | Some(0) | None if entry.is_dir() => {
                stager.dir(&raw, unix_mode.filter(|m| m & 0o777 != 0).unwrap_or(0o755))?
            }
            _ => {
                let mode = unix_mode.filter(|m| m & 0o777 != 0).unwrap_or(0o644);
                stager.file(&raw, mode, &mut entry)?
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(raise_limits: Option<(&'static str, &'static str)>) -> Options {
        Options {
            keep_setuid: false,
            limits: Limits {
                max_bytes: 10,
                max_entries: 2,
            },
            wording: Wording {
                parent: "extract_parent",
                raise_limits,
            },
        }
    }

    #[test]
    fn a_refusal_names_the_property_to_raise_only_where_there_is_one() {
        let many = Survey {
            entries: 3,
            ..Survey::default()
        };
        let settable = options(Some(("max_extract_entries", "max_extract_size")));
        let err = refuse_without_room(&settable, &many, 1 << 30, Path::new("/srv"))
            .expect_err("too many");
        assert!(
            err.ends_with("if it is expected, raise max_extract_entries"),
            "{err}"
        );
        let err = refuse_without_room(&options(None), &many, 1 << 30, Path::new("/srv"))
            .expect_err("too many");
        assert!(err.ends_with("the limit is fixed"), "{err}");
        let large = Survey {
            bytes: 11,
            disk_bytes: 4096,
            entries: 1,
        };
        let err = refuse_without_room(&settable, &large, 1 << 30, Path::new("/srv"))
            .expect_err("too large");
        assert!(
            err.contains("raise max_extract_size (for example \"1GiB\")"),
            "{err}"
        );
        let fits = Survey {
            bytes: 5,
            disk_bytes: 4096,
            entries: 1,
        };
        let err = refuse_without_room(&options(None), &fits, 10, Path::new("/srv"))
            .expect_err("no space");
        assert!(err.ends_with("free some space"), "{err}");
        let err =
            refuse_without_room(&settable, &fits, 10, Path::new("/srv")).expect_err("no space");
        assert!(err.ends_with("or choose another extract_parent"), "{err}");
    }
}
