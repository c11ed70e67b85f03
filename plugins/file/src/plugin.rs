//! The plugin on the SDK: scan (validation, what each entity would do),
//! apply through [`crate::converge`], diff, and the scrub of orphans.

use std::path::Path;
use std::process::ExitCode;

use holo_plugin::resources;
use holo_plugin::root_fs::RootFs;
use holo_plugin::template::TemplateContext;
use holo_plugin::{Diff, EntityCtx, Env, Error, Mode, Outcome, Plugin, Result, Scanned};

use crate::model::{self, Content, FileResource, FileSpec, format_mode};
use crate::{converge, provider, state};

/// The plugin, handed to [`holo_plugin::run`] by `main`.
pub struct FilePlugin;

impl Plugin for FilePlugin {
    const ID: &'static str = "file";
    const STAGES_WRITES: bool = true;
    type Spec = FileSpec;

    fn properties(&self) -> Vec<(String, Vec<&'static str>)> {
        resources::properties_with_ensure::<FileResource, model::Ensure>()
    }

    /// CCM: `ccm ensure file NAME [ENSURE]`; its one provider is posix.
    fn oneoff_syntax(&self) -> holo_plugin::oneoff::OneOffSyntax {
        holo_plugin::oneoff::OneOffSyntax {
            positionals: &["ensure"],
            provider: Some("posix"),
            entry_flags: &[],
        }
    }

    fn property_types(&self) -> Vec<(&'static str, holo_plugin::oneoff::ValueType)> {
        holo_plugin::oneoff::property_types::<FileResource>()
    }

    fn status(&self, env: &Env, name: &str) -> Option<Result<holo_plugin::StatusTable>> {
        Some(status_table(env, name).map(Into::into))
    }

    fn scan(&self, env: &Env) -> Result<Vec<Scanned<FileSpec>>> {
        let fs = env.root_fs()?;
        // The records are listed beside the load: a large scan's orphan
        // check reads the whole record journal.
        let mut found = holo_plugin::state::scan_with_orphans(env, || {
            let declared = resources::load_reading::<FileResource>(env, names_as_source)?;
            resources::scan_each(declared, |mut declared| {
                let id = resources::Resource::entity_id(&declared.resource);
                let resource = std::mem::take(&mut declared.resource);
                let location = &declared.location;
                let spec = match resource.validate(
                    location,
                    declared.common.protect,
                    &fs,
                    &env.resource_dir,
                    |path| env.root_join(path),
                ) {
                    Ok(spec) => spec,
                    Err(invalid) => {
                        let place = declared.location_of(invalid.property);
                        return Ok(Err(Error::new(format!("{place}: {invalid}"))));
                    }
                };
                // The lines first, then the spec moves into the entity
                // (a copy per entity would cost as much as the lines).
                let mut info = Vec::with_capacity(7);
                info.push(("found in", location.to_string()));
                info.push(("ensure", spec.ensure.as_str().to_string()));
                if let Some(owner) = &spec.owner {
                    info.push(("owner", owner.to_string()));
                }
                if let Some(group) = &spec.group {
                    info.push(("group", group.to_string()));
                }
                if let Some(mode) = spec.mode {
                    info.push(("mode", format_mode(mode)));
                }
                if let Some(target) = &spec.target {
                    info.push(("target", describe_target(env, &fs, &spec.path, target)));
                }
                match &spec.content {
                    Content::Inline(text) => {
                        let checksum = provider::posix::checksum_bytes(text.as_bytes());
                        info.push(("content", checksum));
                    }
                    Content::Source { shown, .. } => {
                        info.push(("source", shown.display().to_string()));
                    }
                    Content::Unmanaged => {}
                }
                let mut entity = Scanned::new(id, spec).source(&location.path);
                entity
                    .info
                    .extend(info.into_iter().map(|(key, value)| (key.into(), value)));
                for required in &declared.common.require {
                    entity = entity.requires(required);
                }
                for subscribed in &declared.common.subscribe {
                    entity = entity.subscribes(subscribed);
                }
                Ok(Ok(entity))
            })
        })?;
        for orphan in found.iter_mut().filter(|entity| entity.spec.is_none()) {
            describe_scrub(env, orphan)?;
        }
        Ok(found)
    }

    fn apply(&self, env: &Env, entity: &EntityCtx<FileSpec>, mode: Mode) -> Result<Outcome> {
        match &entity.spec {
            Some(spec) => converge::apply(env, &entity.id, spec, mode),
            None => converge::scrub(env, &entity.id, path_of(&entity.id)?, mode),
        }
    }

    fn diff_with_header(&self, env: &Env, entity: &EntityCtx<FileSpec>) -> Result<Option<Diff>> {
        let path = match &entity.spec {
            Some(spec) => spec.path.as_str(),
            None => path_of(&entity.id)?,
        };
        converge::diff(env, &entity.id, entity.spec.as_ref(), path)
    }

    fn subcommand(&self, env: &Env, name: &str, args: &[String]) -> Option<Result<ExitCode>> {
        let print: fn(&TemplateContext) -> String = match name {
            "facts" => |context| context.facts().to_toml(),
            "data" => TemplateContext::data_toml,
            _ => return None,
        };
        if !args.is_empty() {
            return Some(Err(Error::new(format!(
                "usage: holo-file {name} (no arguments); it prints the {name} that templates see as TOML"
            ))));
        }
        Some(
            TemplateContext::load(&env.root, env.test_mode)
                .map_err(|err| Error::new(err.to_string()))
                .map(|context| {
                    print!("{}", print(&context));
                    ExitCode::SUCCESS
                }),
        )
    }
}

/// Whether a resource reads `path` (below the resource directory) as its
/// relative `source`; every other file there gets a `>>` warning.
fn names_as_source(path: &Path, declared: &[resources::Declared<FileResource>]) -> bool {
    let path = resources::lexically_normal(path);
    declared.iter().any(|declared| {
        let (Some(source), Some(dir)) =
            (&declared.resource.source, declared.location.path.parent())
        else {
            return false;
        };
        !Path::new(source).is_absolute() && resources::lexically_normal(&dir.join(source)) == path
    })
}

/// A link's target for the scan report; a dangling one (nothing there now)
/// is allowed, and said so, since a later entity may create it.
fn describe_target(env: &Env, fs: &RootFs, link: &str, target: &str) -> String {
    let dir = Path::new(link).parent().unwrap_or(Path::new("/"));
    let resolved = env.root_join(dir.join(target));
    if fs.metadata(&resolved).is_ok() {
        target.to_string()
    } else {
        format!("{target} (dangling: nothing is there now; the link is made anyway)")
    }
}

/// Adds what scrubbing will do to an orphan's scan lines.
fn describe_scrub(env: &Env, orphan: &mut Scanned<FileSpec>) -> Result<()> {
    let path = path_of(&orphan.id)?;
    let base = converge::base_path(env, path);
    let line = if env.root_fs()?.is_file(&base) {
        Some(("restore", base.display().to_string()))
    } else {
        match holo_plugin::state::read::<state::Record>(env, &orphan.id)? {
            Some(record) if record.original.kind == state::OriginalKind::None => {
                Some(("delete", env.root_join(path).display().to_string()))
            }
            Some(record) if record.original.kind == state::OriginalKind::Link => Some((
                "restore",
                format!(
                    "link to {}",
                    record.original.target.as_deref().unwrap_or_default()
                ),
            )),
            _ => None,
        }
    };
    if let Some((key, value)) = line {
        orphan.info.push((key.into(), value));
    }
    Ok(())
}

/// `file:/etc/motd` → `/etc/motd`, for entities known only from their record.
fn path_of(id: &str) -> Result<&str> {
    id.strip_prefix("file:")
        .filter(|path| model::validate_path(path).is_ok())
        .ok_or_else(|| {
            Error::new(format!(
                "{id}: not a file entity id; remove its record from the state directory"
            ))
        })
}

/// The largest file whose content `status` writes into the table.
const STATUS_CONTENT_LIMIT: usize = 64 * 1024;

/// What is at `name` now, as the properties of a `[[file]]` table: the
/// content of a text file up to [`STATUS_CONTENT_LIMIT`] (with `template =
/// false` when it looks like a template), owner and group by name, mode and
/// a link's target.
fn status_table(env: &Env, name: &str) -> Result<holo_plugin::oneoff::Table> {
    let path = Path::new(name);
    if !path.is_absolute() {
        return Err(Error::new(format!(
            "holo-file status: {name:?} is not an absolute path; give the path as a [[file]] table names it, like /etc/motd"
        )));
    }
    let fs = env.root_fs()?;
    let path = &env.root_join(path);
    let observed = provider::posix::status(&fs, path)?;
    let mut table = holo_plugin::oneoff::Table::new();
    let text = |value: &str| holo_plugin::oneoff::Value::String(value.to_string());
    let ensure = match observed.kind {
        crate::apply::Kind::Absent => {
            table.insert("ensure".to_string(), text("absent"));
            return Ok(table);
        }
        crate::apply::Kind::File => "present",
        crate::apply::Kind::Directory => "directory",
        crate::apply::Kind::Link => "link",
        crate::apply::Kind::Other => {
            return Err(Error::new(format!(
                "holo-file status: {name} is a socket, device or fifo, which holo-file does not manage"
            )));
        }
    };
    table.insert("ensure".to_string(), text(ensure));
    if let Some(target) = &observed.target {
        table.insert("target".to_string(), text(&target.to_string_lossy()));
        return Ok(table);
    }
    let owner = holo_plugin::owners::user_name(env, observed.uid).map_or(
        holo_plugin::oneoff::Value::Integer(observed.uid.into()),
        |name| text(&name),
    );
    let group = holo_plugin::owners::group_name(env, observed.gid).map_or(
        holo_plugin::oneoff::Value::Integer(observed.gid.into()),
        |name| text(&name),
    );
    table.insert("owner".to_string(), owner);
    table.insert("group".to_string(), group);
    table.insert("mode".to_string(), text(&format_mode(observed.mode)));
    if observed.mode & 0o6000 != 0 {
        table.insert(
            "allow_setid".to_string(),
            holo_plugin::oneoff::Value::Boolean(true),
        );
    }
    if ensure == "present" {
        let bytes = fs.read(path).map_err(|err| Error::io("read", path, &err))?;
        if bytes.len() <= STATUS_CONTENT_LIMIT
            && !bytes.contains(&0)
            && let Ok(content) = String::from_utf8(bytes)
        {
            if content.contains("{{") || content.contains("{%") || content.contains("{#") {
                table.insert(
                    "template".to_string(),
                    holo_plugin::oneoff::Value::Boolean(false),
                );
            }
            table.insert(
                "content".to_string(),
                holo_plugin::oneoff::Value::String(content),
            );
        }
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Ensure;

    #[test]
    fn orphan_ids_map_back_to_paths() {
        assert_eq!(path_of("file:/etc/motd").ok(), Some("/etc/motd"));
        assert!(path_of("file:etc").is_err());
        assert!(path_of("package:x").is_err());
    }

    #[test]
    fn ensure_names_match_the_resource_spelling() {
        for ensure in [
            Ensure::Present,
            Ensure::Absent,
            Ensure::Directory,
            Ensure::Link,
        ] {
            assert_eq!(Ensure::parse(ensure.as_str()), Ok(ensure));
        }
    }
}
