//! The plugin on the SDK: scan, apply (remove, download, extract, clean up,
//! verify), noop, diff as TOML, state records and scrubbing of archives
//! that are no longer declared. Paths in messages are the resource's own,
//! not the test root's.

use std::path::{Path, PathBuf};

use holo_plugin::resources::{self, Resource};
use holo_plugin::root_fs::RootFs;
use holo_plugin::{
    EntityCtx, Env, Error, Mode, Outcome, Plugin, Result, Scanned, StatusTable, owners, state,
};
use serde::{Deserialize, Serialize};

use crate::apply::{self, Desired, Protection, Status};
use crate::in_root;
use crate::model::{ArchiveSpec, ArchiveTable, Credentials, Ensure};
use crate::provider::http;
use holo_plugin::extract;

/// `$HOLO_STATE_DIR/archive:PATH.toml`: what apply left (no credentials).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub name: String,
    /// The URL with userinfo and query string redacted.
    pub url: String,
    /// SHA-256 of the URL without userinfo (query string included).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub url_sha256: String,
    pub ensure: Ensure,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extract_parent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creates: Option<String>,
    /// Set before an extraction starts and cleared once it is done, so
    /// that a run killed in between extracts again next time.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub extracting: bool,
}

/// The plugin, handed to [`holo_plugin::run`] by `main`.
pub struct ArchivePlugin;

impl Plugin for ArchivePlugin {
    const ID: &'static str = "archive";
    type Spec = ArchiveSpec;

    fn properties(&self) -> Vec<(String, Vec<&'static str>)> {
        resources::properties_with_ensure::<ArchiveTable, resources::Ensure>()
    }

    /// CCM: `ccm ensure archive FILE URL`; its one provider is http.
    fn oneoff_syntax(&self) -> holo_plugin::oneoff::OneOffSyntax {
        holo_plugin::oneoff::OneOffSyntax {
            positionals: &["url"],
            provider: Some("http"),
            entry_flags: &["headers"],
        }
    }

    /// CCM's flag names for properties of ours.
    fn flag_aliases(&self) -> &'static [(&'static str, &'static str)] {
        &[("extract", "extract_parent"), ("header", "headers")]
    }

    fn property_types(&self) -> Vec<(&'static str, holo_plugin::oneoff::ValueType)> {
        holo_plugin::oneoff::property_types::<ArchiveTable>()
    }

    /// Kept for `status` without credentials: the password and the header
    /// values become `***`, and the URL loses its userinfo and query.
    fn ensured_table(
        &self,
        mut table: holo_plugin::oneoff::Table,
    ) -> Option<holo_plugin::oneoff::Table> {
        use holo_plugin::oneoff::Value;
        if let Some(url) = table.get_mut("url")
            && let Some(text) = url.as_str()
        {
            *url = Value::String(holo_plugin::download::redact_url(text));
        }
        if let Some(password) = table.get_mut("password") {
            *password = Value::String(REDACTED.to_string());
        }
        if let Some(Value::Table(headers)) = table.get_mut("headers") {
            for (_, value) in headers.iter_mut() {
                *value = Value::String(REDACTED.to_string());
            }
        }
        Some(table)
    }

    /// The archive at `name` and what holo-archive recorded of it.
    fn status(&self, env: &Env, name: &str) -> Option<Result<StatusTable>> {
        Some(status_table(env, name))
    }

    fn scan(&self, env: &Env) -> Result<Vec<Scanned<ArchiveSpec>>> {
        let declared = resources::load::<ArchiveTable>(env)?;
        let mut found = resources::scan_each(declared, |declared| {
            let spec = match declared.resource.validate() {
                Ok(spec) => ArchiveSpec {
                    protect: declared.common.protect.unwrap_or(false),
                    ..spec
                },
                Err(message) => {
                    return Ok(Err(Error::new(format!(
                        "{}: archive {:?}: {message}",
                        declared.location, declared.resource.name
                    ))));
                }
            };
            let mut entity = declared
                .scanned(spec.clone())
                .info("found in", declared.location.to_string())
                .info("url", spec.shown_url.clone())
                .info("ensure", spec.ensure.as_str());
            let optional = [
                ("checksum", spec.checksum.clone()),
                ("extract_parent", spec.extract_parent.clone()),
                ("creates", spec.creates.clone()),
                ("cleanup", spec.cleanup.then(|| "true".to_string())),
                ("owner", Some(spec.owner.clone())),
                ("group", Some(spec.group.clone())),
                ("auth", spec.basic_auth.then(|| "basic".to_string())),
                ("protect", spec.protect.then(|| "true".to_string())),
                (
                    "headers",
                    (!spec.header_names.is_empty()).then(|| spec.header_names.join(", ")),
                ),
            ];
            for (key, value) in optional {
                if let Some(value) = value {
                    entity = entity.info(key, value);
                }
            }
            Ok(Ok(entity))
        })?;
        state::add_orphans(env, &mut found)?;
        for orphan in found.iter_mut().filter(|entity| entity.spec.is_none()) {
            orphan.action = Some(holo_plugin::Action {
                verb: "Scrubbing".to_string(),
                reason: Some(
                    "resource was deleted; the archive file and extracted files stay".to_string(),
                ),
            });
        }
        Ok(found)
    }

    fn apply(&self, env: &Env, entity: &EntityCtx<ArchiveSpec>, mode: Mode) -> Result<Outcome> {
        let result = match &entity.spec {
            Some(spec) => converge(env, &entity.id, spec, mode),
            None => {
                if mode != Mode::Noop {
                    state::remove(env, &entity.id)?;
                }
                Ok(Outcome::Changed)
            }
        };
        result.map_err(|err| err.context(&entity.id))
    }

    fn diff(
        &self,
        env: &Env,
        entity: &EntityCtx<ArchiveSpec>,
    ) -> Result<Option<(PathBuf, PathBuf)>> {
        match &entity.spec {
            Some(spec) => render_diff(env, &entity.id, spec).map_err(|err| err.context(&entity.id)),
            None => Ok(None),
        }
    }
}

/// The desired state with owner and group resolved (unresolvable ones
/// never match, so that they are reported when apply needs them).
fn desired(env: &Env, spec: &ArchiveSpec) -> Desired {
    Desired {
        ensure: spec.ensure,
        checksum: spec.checksum.clone(),
        uid: owners::uid(env, &spec.owner).ok(),
        gid: owners::gid(env, &spec.group).ok(),
        extract: spec.extract_parent.is_some(),
        creates: spec.creates.is_some(),
        cleanup: spec.cleanup,
    }
}

fn converge(env: &Env, id: &str, spec: &ArchiveSpec, mode: Mode) -> Result<Outcome> {
    let wanted = desired(env, spec);
    let recorded = state::read::<Record>(env, id)?;
    let mut before = http::status(env, spec)?;
    before.extraction_unfinished = recorded.as_ref().is_some_and(|record| record.extracting);
    let plan = apply::plan(&wanted, &before);
    if plan.is_empty() {
        if mode != Mode::Noop {
            write_record(env, id, spec, &before)?;
        }
        return Ok(Outcome::NotChanged);
    }
    if spec.protect && mode != Mode::Force {
        let checksum = recorded.as_ref().and_then(|record| record.checksum.clone());
        match apply::protection(&wanted, checksum.as_deref(), &before) {
            Protection::Proceed => {}
            Protection::RequiresForceRestore => return Ok(Outcome::RequiresForceRestore),
            Protection::RequiresForceOverwrite => return Ok(Outcome::RequiresForceOverwrite),
        }
    }
    if mode == Mode::Noop {
        if let Some(message) = apply::noop_message(&plan) {
            println!("{message}");
        }
        return Ok(Outcome::Changed);
    }
    let archive = env.root_join(&spec.name);
    let fs = env.root_fs()?;
    if plan.remove {
        remove(&fs, &archive, &spec.name)?;
        println!("Removed {}", spec.name);
    }
    let extract_parent = spec.extract_parent.as_ref().filter(|_| plan.extract);
    if extract_parent.is_some() {
        // Marked before the new archive lands: a run killed between the
        // download and the extraction extracts again next time, since the
        // archive alone would then look converged.
        mark_extracting(env, id, spec, recorded.as_ref(), true)?;
    }
    if plan.download
        && let Err(err) = download(env, &fs, id, spec, &archive)
    {
        // A failed download changed nothing: the record goes back.
        if extract_parent.is_some() {
            restore_record(env, id, recorded.as_ref());
        }
        return Err(err);
    }
    if let Some(parent) = extract_parent {
        let extraction = Extraction {
            archive: &archive,
            parent,
            downloaded: plan.download,
            recorded: recorded.as_ref(),
        };
        extract_archive(env, &fs, id, spec, &extraction)?;
    }
    if plan.cleanup {
        remove(&fs, &archive, &spec.name)?;
        println!("Cleaned up {}", spec.name);
    }
    let after = http::status(env, spec)?;
    if let Some(unstable) = apply::check(&wanted, &after) {
        return Err(Error::new(format!(
            "desired state not achieved: {}",
            unstable.describe(&wanted)
        )));
    }
    write_record(env, id, spec, &after)?;
    Ok(Outcome::Changed)
}

/// Downloads the archive to its place, owned as the spec says.
fn download(env: &Env, fs: &RootFs, id: &str, spec: &ArchiveSpec, archive: &Path) -> Result<()> {
    let uid = owners::uid(env, &spec.owner)?;
    let gid = owners::gid(env, &spec.group)?;
    let parent = Path::new(&spec.name).parent().unwrap_or(Path::new("/"));
    create_missing_directory(env, fs, parent)
        .map_err(|err| Error::new(format!("cannot download to {}: {err}", spec.name)))?;
    let credentials = credentials(env, id)?;
    let target = in_root::real_entry(env, fs, archive)?;
    let done = http::fetch(&target, spec, &credentials, uid, gid)?;
    println!(
        "Downloaded {} to {} ({} bytes, sha256 {})",
        spec.shown_url, spec.name, done.bytes, done.sha256
    );
    Ok(())
}

/// An extraction of a downloaded archive.
struct Extraction<'a> {
    /// The archive on the host.
    archive: &'a Path,
    /// `extract_parent`, as the resource names it.
    parent: &'a str,
    /// The archive was downloaded in this run.
    downloaded: bool,
    /// The record before this run.
    recorded: Option<&'a Record>,
}

/// Extracts the archive into `extract_parent`. A failure removes a fresh
/// download and restores the record, so that the next run tries again.
fn extract_archive(
    env: &Env,
    fs: &RootFs,
    id: &str,
    spec: &ArchiveSpec,
    extraction: &Extraction,
) -> Result<()> {
    let parent = extraction.parent;
    let options = extract::Options {
        keep_setuid: spec.keep_setuid && nix::unistd::geteuid().is_root(),
        limits: apply::Limits {
            max_bytes: spec.max_extract_size,
            max_entries: spec.max_extract_entries,
        },
        wording: extract::Wording {
            parent: "extract_parent",
            raise_limits: Some(("max_extract_entries", "max_extract_size")),
        },
    };
    let host_parent = env.root_join(parent);
    let count = create_missing_directory(env, fs, Path::new(parent))
        .and_then(|()| {
            let real =
                |path: &Path| in_root::real_path(env, fs, path).map_err(|err| err.to_string());
            extract::extract(
                &real(extraction.archive)?,
                spec.format,
                &real(&host_parent)?,
                Path::new(parent),
                options,
            )
        })
        .map_err(|message| {
            // A downloaded archive that failed to extract goes again, so that
            // the next run fetches and extracts it rather than taking it as
            // done (without `creates` nothing else would tell).
            let removed =
                extraction.downloaded && remove(fs, extraction.archive, &spec.name).is_ok();
            // A refused extraction left nothing behind: the record goes
            // back to what it was.
            restore_record(env, id, extraction.recorded);
            Error::new(format!(
                "cannot extract {} into {parent}: {message}; nothing was extracted{}",
                spec.name,
                if removed {
                    ", and the download was removed so that the next run tries again"
                } else {
                    ""
                }
            ))
        })?;
    println!("Extracted {count} entries from {} into {parent}", spec.name);
    mark_extracting(env, id, spec, extraction.recorded, false)
}

/// Creates `dir` (a path as the resource names it) with its missing parents,
/// 0755, owned by the user running holo, and says so: the archive's
/// directory and `extract_parent` follow the same rule.
fn create_missing_directory(env: &Env, fs: &RootFs, dir: &Path) -> std::result::Result<(), String> {
    let host_dir = env.root_join(dir);
    if fs.is_dir(&host_dir) {
        return Ok(());
    }
    fs.create_dir_all(&host_dir)
        .map_err(|err| format!("cannot create directory {}: {err}", dir.display()))?;
    println!("Created directory {}", dir.display());
    Ok(())
}

fn remove(fs: &RootFs, path: &Path, name: &str) -> Result<()> {
    match fs.remove_file(path) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(Error::new(format!("cannot remove {name}: {err}"))),
    }
}

/// The URL and secrets, read again from the resource: the scan cache never
/// holds them.
fn credentials(env: &Env, id: &str) -> Result<Credentials> {
    resources::load::<ArchiveTable>(env)?
        .into_iter()
        .find(|declared| declared.resource.entity_id() == id)
        .map(|declared| declared.resource.credentials())
        .ok_or_else(|| {
            Error::new("the resource is no longer declared; run holo apply again".to_string())
        })
}

/// Puts the record back as it was before this run, best effort: the
/// error that led here is the one to report.
fn restore_record(env: &Env, id: &str, recorded: Option<&Record>) {
    let _ = match recorded {
        Some(record) => state::write(env, id, record),
        None => state::remove(env, id),
    };
}

/// Writes the record with `extracting` set or cleared, keeping what it
/// held about the archive.
fn mark_extracting(
    env: &Env,
    id: &str,
    spec: &ArchiveSpec,
    recorded: Option<&Record>,
    extracting: bool,
) -> Result<()> {
    let record = match recorded {
        Some(record) => Record {
            extracting,
            ..record.clone()
        },
        None => Record {
            name: spec.name.clone(),
            url: spec.shown_url.clone(),
            url_sha256: spec.url_sha256.clone(),
            ensure: spec.ensure,
            checksum: None,
            uid: None,
            gid: None,
            extract_parent: spec.extract_parent.clone(),
            creates: spec.creates.clone(),
            extracting,
        },
    };
    state::write(env, id, &record)
}

fn write_record(env: &Env, id: &str, spec: &ArchiveSpec, status: &Status) -> Result<()> {
    let record = Record {
        name: spec.name.clone(),
        url: spec.shown_url.clone(),
        url_sha256: spec.url_sha256.clone(),
        ensure: spec.ensure,
        checksum: status.checksum.clone(),
        uid: status.uid,
        gid: status.gid,
        extract_parent: spec.extract_parent.clone(),
        creates: spec.creates.clone(),
        extracting: false,
    };
    if state::read::<Record>(env, id).ok().flatten().as_ref() == Some(&record) {
        return Ok(());
    }
    state::write(env, id, &record)
}

/// One side of the diff: the state as TOML.
#[derive(Debug, PartialEq, Eq, Serialize)]
struct Side {
    name: String,
    exists: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    checksum: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    owner: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    group: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    creates: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    creates_exists: Option<bool>,
}

#[derive(Serialize)]
struct Document<'a> {
    archive: &'a Side,
}

fn render_diff(env: &Env, id: &str, spec: &ArchiveSpec) -> Result<Option<(PathBuf, PathBuf)>> {
    let wanted = desired(env, spec);
    let current = http::status(env, spec)?;
    let keep = spec.ensure == Ensure::Present && !spec.cleanup;
    // A name when the id is the wanted one, so that a match reads the same.
    let shown = |id: Option<u32>, wanted_id: Option<u32>, name: &str| {
        id.map(|id| {
            if Some(id) == wanted_id {
                name.to_string()
            } else {
                id.to_string()
            }
        })
    };
    let desired_side = Side {
        name: spec.name.clone(),
        exists: keep,
        checksum: keep
            .then(|| spec.checksum.clone().or_else(|| current.checksum.clone()))
            .flatten(),
        owner: keep.then(|| spec.owner.clone()),
        group: keep.then(|| spec.group.clone()),
        creates: spec.creates.clone(),
        creates_exists: (spec.ensure == Ensure::Present && spec.creates.is_some()).then_some(true),
    };
    let current_side = Side {
        name: spec.name.clone(),
        exists: current.archive_exists,
        checksum: current.checksum.clone(),
        owner: shown(current.uid, wanted.uid, &spec.owner),
        group: shown(current.gid, wanted.gid, &spec.group),
        creates: spec.creates.clone(),
        creates_exists: (spec.ensure == Ensure::Present && spec.creates.is_some())
            .then_some(current.creates_exists),
    };
    if desired_side == current_side {
        return Ok(None);
    }
    let dir = env.cache_dir.join(state::entity_file_name(id, ".diff"));
    std::fs::create_dir_all(&dir).map_err(|err| Error::io("create", &dir, &err))?;
    let write_side = |file: &str, side: &Side| -> Result<PathBuf> {
        let text = toml::to_string(&Document { archive: side })
            .map_err(|err| Error::new(format!("cannot render the diff: {err}")))?;
        let path = dir.join(file);
        std::fs::write(&path, text).map_err(|err| Error::io("write", &path, &err))?;
        Ok(path)
    };
    Ok(Some((
        write_side("desired.toml", &desired_side)?,
        write_side("current.toml", &current_side)?,
    )))
}

/// What redaction leaves in place of a credential.
const REDACTED: &str = "***";

/// What the record says of the archive's source and extraction, over
/// the ensured table.
fn record_properties(properties: &mut holo_plugin::oneoff::Table, record: &Record) {
    use holo_plugin::oneoff::Value;
    properties.insert("url".to_string(), Value::String(record.url.clone()));
    for (key, value) in [
        ("extract_parent", &record.extract_parent),
        ("creates", &record.creates),
        ("checksum", &record.checksum),
    ] {
        match value {
            Some(value) => properties.insert(key.to_string(), Value::String(value.clone())),
            None => properties.remove(key),
        };
    }
}

/// Notes on the extraction: one that did not finish, and whether
/// `creates` exists.
fn extraction_notes(
    record: Option<&Record>,
    creates: Option<&str>,
    exists: &dyn Fn(&str) -> bool,
    on_disk: bool,
) -> Vec<String> {
    let mut notes = Vec::new();
    if record.is_some_and(|record| record.extracting) {
        notes.push(
            "an extraction started and did not finish: the next apply extracts again".to_string(),
        );
    }
    match creates {
        Some(path) if exists(path) => notes.push(format!("creates {path} exists")),
        Some(path) => notes.push(format!(
            "creates {path} does not exist: the next apply extracts the archive"
        )),
        None if on_disk => notes.push(
            "whether the archive was extracted, and where, is not recorded: add extract_parent and creates if it is to be"
                .to_string(),
        ),
        None => {}
    }
    notes
}

/// The properties no record gives (credentials are never written down):
/// removed, each with what to fill in.
fn mark_unknown(found: &mut StatusTable, name: &str) {
    use holo_plugin::oneoff::Value;
    let properties = &mut found.properties;
    match properties.get("url").and_then(Value::as_str) {
        None => found.unknown.push((
            "url".to_string(),
            format!(
                "holo-archive has no record of where {name} comes from; fill in the URL it is downloaded from"
            ),
        )),
        Some(url) if url.contains(REDACTED) => {
            found.unknown.push((
                "url".to_string(),
                format!(
                    "recorded as {url}, without its credentials and query string, which are never written down; fill in the whole URL"
                ),
            ));
            properties.remove("url");
        }
        Some(_) => {}
    }
    if properties.get("password").and_then(Value::as_str) == Some(REDACTED) {
        properties.remove("password");
        found.unknown.push((
            "password".to_string(),
            "a credential, never written down; fill it in".to_string(),
        ));
    }
    let redacted_headers: Vec<String> = match properties.get("headers") {
        Some(Value::Table(headers)) => headers.keys().cloned().collect(),
        _ => Vec::new(),
    };
    if !redacted_headers.is_empty() {
        properties.remove("headers");
        found.unknown.push((
            "headers".to_string(),
            format!(
                "the values of {} may be credentials and are never written down; fill them in",
                redacted_headers.join(", ")
            ),
        ));
    }
    for key in ["owner", "group"] {
        if !properties.contains_key(key) {
            found.unknown.push((
                key.to_string(),
                "required, and nothing on disk or in a record gives it; fill in a name or a numeric id"
                    .to_string(),
            ));
        }
    }
}

/// The table of `holo-archive status NAME`: the archive on disk (whether
/// it is there, its checksum, owner and group), then holo-archive's
/// record (the URL, `extract_parent`, `creates`), then the table of the
/// last `holo-archive ensure`; what none of them holds is to fill in.
fn status_table(env: &Env, name: &str) -> Result<StatusTable> {
    use holo_plugin::oneoff::Value;
    crate::model::validate_absolute("name", name)
        .map_err(|message| Error::new(format!("holo-archive status: {message}")))?;
    let id = format!("archive:{name}");
    let record: Option<Record> = state::read(&holo_plugin::oneoff::record_env(env, &id)?, &id)?;
    let ensured = holo_plugin::oneoff::ensured(env, &id)?;
    let fs = env.root_fs()?;
    let archive = env.root_join(name);
    let on_disk = match fs.metadata(&archive) {
        Ok(meta) if meta.is_file() => Some(meta),
        Ok(_) => {
            return Err(Error::new(format!(
                "holo-archive status: {name} exists but is not a regular file, so it is no archive holo-archive manages"
            )));
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
        Err(err) => return Err(Error::io("read", &archive, &err)),
    };
    let exists = |path: &str| fs.metadata(&env.root_join(path)).is_ok();
    let mut found = StatusTable {
        properties: ensured.map(|ensured| ensured.table).unwrap_or_default(),
        ..StatusTable::default()
    };
    let properties = &mut found.properties;
    if let Some(record) = &record {
        record_properties(properties, record);
    }
    let creates = properties
        .get("creates")
        .and_then(Value::as_str)
        .map(str::to_string);
    let extracted =
        properties.contains_key("extract_parent") && creates.as_deref().is_some_and(&exists);
    let read = apply::read_back(
        on_disk.is_some(),
        record.as_ref().map(|record| record.ensure),
        extracted,
    );
    properties.insert(
        "ensure".to_string(),
        Value::String(read.ensure.as_str().to_string()),
    );
    if read.cleanup {
        properties.insert("cleanup".to_string(), Value::Boolean(true));
    } else {
        properties.remove("cleanup");
    }
    let ids = match &on_disk {
        Some(meta) => {
            use std::os::unix::fs::MetadataExt;
            let real = in_root::real_path(env, &fs, &archive)?;
            properties.insert(
                "checksum".to_string(),
                Value::String(holo_plugin::download::sha256_file(&real)?),
            );
            Some((meta.uid(), meta.gid()))
        }
        None => record
            .as_ref()
            .and_then(|record| Some((record.uid?, record.gid?))),
    };
    if let Some((uid, gid)) = ids {
        let user = owners::user_name(env, uid).map_or(Value::Integer(uid.into()), Value::String);
        let group = owners::group_name(env, gid).map_or(Value::Integer(gid.into()), Value::String);
        properties.insert("owner".to_string(), user);
        properties.insert("group".to_string(), group);
    }
    if let Some(note) = read.note {
        found.notes.push(note.to_string());
    }
    found.notes.extend(extraction_notes(
        record.as_ref(),
        creates.as_deref(),
        &exists,
        on_disk.is_some(),
    ));
    mark_unknown(&mut found, name);
    Ok(found)
}
