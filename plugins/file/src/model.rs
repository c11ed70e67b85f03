//! The file resource: its properties as written in `[[file]]` tables, their
//! validation, and the validated desired state ([`FileSpec`]) that scan
//! caches for apply.

use std::fmt;
use std::path::{Component, Path, PathBuf};

use holo_plugin::resources::{self, Location, Resource};
use holo_plugin::root_fs::RootFs;
use serde::{Deserialize, Serialize};

/// What the path should be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ensure {
    /// A regular file.
    Present,
    /// Nothing at all.
    Absent,
    /// A directory.
    Directory,
    /// A symbolic link to `target`.
    Link,
}

impl Ensure {
    const ALL: [Ensure; 4] = [
        Ensure::Present,
        Ensure::Absent,
        Ensure::Directory,
        Ensure::Link,
    ];

    /// Parses the `ensure` property.
    pub fn parse(text: &str) -> Result<Ensure, String> {
        let names = Ensure::ALL.map(Ensure::as_str);
        let name = resources::one_of("ensure", text, &names)?;
        Ok(Ensure::ALL
            .into_iter()
            .find(|ensure| ensure.as_str() == name)
            .unwrap_or(Ensure::Present))
    }

    /// The property value, as written in resources and state records.
    pub fn as_str(self) -> &'static str {
        match self {
            Ensure::Present => "present",
            Ensure::Absent => "absent",
            Ensure::Directory => "directory",
            Ensure::Link => "link",
        }
    }
}

/// A user or group, by name or numeric id: a number or a string in the
/// scan cache.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Principal {
    /// A numeric id (`0`, or `"0"` in the resource).
    Id(u32),
    /// A name looked up at apply time.
    Name(String),
}

// By hand: serde's untagged enums buffer each value first, which made
// reading a file's spec from the scan cache cost twice as much.
impl<'de> Deserialize<'de> for Principal {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Principal, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Principal;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a numeric id or a name")
            }
            fn visit_u64<E: serde::de::Error>(self, id: u64) -> Result<Principal, E> {
                u32::try_from(id)
                    .map(Principal::Id)
                    .map_err(|_| E::custom(format!("id {id} is larger than 4294967295")))
            }
            fn visit_i64<E: serde::de::Error>(self, id: i64) -> Result<Principal, E> {
                u32::try_from(id)
                    .map(Principal::Id)
                    .map_err(|_| E::custom(format!("id {id} is not a valid numeric id")))
            }
            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<Principal, E> {
                Ok(Principal::Name(name.to_string()))
            }
            fn visit_string<E: serde::de::Error>(self, name: String) -> Result<Principal, E> {
                Ok(Principal::Name(name))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl Principal {
    /// Parses an `owner`/`group` value: all digits is an id, else a name.
    pub fn parse(text: &str, property: &str) -> Result<Principal, String> {
        if text.is_empty() {
            return Err(format!(
                "{property} is empty; give a name such as \"root\" or a numeric id"
            ));
        }
        if text.bytes().all(|b| b.is_ascii_digit()) {
            return text.parse().map(Principal::Id).map_err(|_| {
                format!("{property} = \"{text}\" is not a valid numeric id (at most 4294967295)")
            });
        }
        if text.contains([':', '\n', '/']) || text.trim() != text {
            return Err(format!(
                "{property} = \"{text}\" is not a valid name; names have no ':', '/', newlines or surrounding spaces"
            ));
        }
        Ok(Principal::Name(text.to_string()))
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Principal::Id(id) => write!(f, "{id}"),
            Principal::Name(name) => f.write_str(name),
        }
    }
}

/// Where the content of a present file comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Content {
    /// The rendered `content` property.
    Inline(String),
    /// A file to copy: `path` is what apply reads, `shown` is what messages name.
    Source { path: PathBuf, shown: PathBuf },
    /// Neither given: a missing file is created empty, an existing one keeps
    /// its content (only its attributes are managed, as in CCM).
    Unmanaged,
}

/// The validated desired state of one file entity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSpec {
    /// The absolute, clean path on the managed system (not joined to the root).
    pub path: String,
    pub ensure: Ensure,
    pub content: Content,
    pub owner: Option<Principal>,
    pub group: Option<Principal>,
    pub mode: Option<u32>,
    /// With `link`: what the link points to, verbatim (absolute or relative).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// With `absent`: remove a non-empty directory too. With `link`: replace
    /// a regular file (saved as the original).
    pub force: bool,
    /// Refuse to overwrite manual edits without `--force`.
    pub protect: bool,
    /// `FILE:LINE` of the declaration, with the origin path.
    pub found_in: String,
}

/// A `[[file]]` table as written. Strings have already been rendered as
/// templates (unless `template = false`) by the time this is validated.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileResource {
    pub name: String,
    pub ensure: Option<String>,
    #[serde(alias = "contents")]
    pub content: Option<String>,
    pub source: Option<String>,
    pub owner: Option<IdOrName>,
    pub group: Option<IdOrName>,
    pub mode: Option<ModeValue>,
    pub target: Option<String>,
    pub force: Option<bool>,
    pub allow_setid: Option<bool>,
}

impl Resource for FileResource {
    const KIND: &'static str = "file";
    const ALIASES: &'static [(&'static str, &'static str)] = &[("contents", "content")];

    fn entity_id(&self) -> String {
        format!("file:{}", self.name)
    }
}

/// `owner`/`group` may be written as a string or a bare integer. Text
/// comes first: serde tries the variants in order and builds an error for
/// each miss, and most values are names.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum IdOrName {
    Text(String),
    Id(i64),
}

/// `mode` must be a string; a bare integer is caught to explain why.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum ModeValue {
    Text(String),
    Integer(i64),
}

/// A validation error for one property: the caller adds `FILE:LINE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub property: &'static str,
    pub message: String,
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "property `{}`: {}", self.property, self.message)
    }
}

fn invalid(property: &'static str, message: impl Into<String>) -> Invalid {
    Invalid {
        property,
        message: message.into(),
    }
}

impl FileResource {
    /// Validates the table into a [`FileSpec`]. `protect` is the common
    /// property (default on for files); `root_join` maps an absolute system
    /// path below `HOLO_ROOT_DIR` (for an absolute `source`), `fs` looks
    /// the source up, and a relative source stays inside `resource_dir`.
    pub fn validate(
        self,
        declared: &Location,
        protect: Option<bool>,
        fs: &RootFs,
        resource_dir: &Path,
        root_join: impl Fn(&Path) -> PathBuf,
    ) -> Result<FileSpec, Invalid> {
        validate_path(&self.name).map_err(|m| invalid("name", m))?;
        let ensure = match &self.ensure {
            Some(text) => Ensure::parse(text).map_err(|m| invalid("ensure", m))?,
            None => Ensure::Present,
        };
        let content = match (self.content, self.source) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "source",
                    "`content` and `source` exclude each other; keep one of them",
                ));
            }
            (Some(text), None) => Content::Inline(text),
            (None, Some(source)) => resolve_source(&source, declared, fs, resource_dir, root_join)?,
            (None, None) => Content::Unmanaged,
        };
        if ensure != Ensure::Present && content != Content::Unmanaged {
            let property = match content {
                Content::Source { .. } => "source",
                _ => "content",
            };
            return Err(invalid(
                property,
                format!(
                    "only a file with ensure = \"present\" has content, this one is \"{}\"; remove `{property}`",
                    ensure.as_str()
                ),
            ));
        }
        let owner = principal(self.owner, "owner")?;
        let group = principal(self.group, "group")?;
        let mode = mode_value(self.mode)?;
        let target = link_target(ensure, self.target)?;
        if ensure == Ensure::Link && mode.is_some() {
            return Err(invalid(
                "mode",
                "a symbolic link has no mode of its own (what it points to has); remove `mode`",
            ));
        }
        check_permissions(
            ensure,
            [owner.is_some(), group.is_some()],
            mode,
            self.allow_setid,
        )?;
        let force = self.force.unwrap_or(false);
        if force && !matches!(ensure, Ensure::Absent | Ensure::Link) {
            return Err(invalid(
                "force",
                "force only applies to ensure = \"absent\" (to remove a non-empty directory) and \"link\" (to replace a file); remove it",
            ));
        }
        Ok(FileSpec {
            path: self.name,
            ensure,
            content,
            owner,
            group,
            mode,
            target,
            force,
            protect: protect.unwrap_or(true),
            found_in: declared.to_string(),
        })
    }
}

/// `mode`: a string of octal digits; a bare number is ambiguous.
fn mode_value(mode: Option<ModeValue>) -> Result<Option<u32>, Invalid> {
    match mode {
        Some(ModeValue::Text(text)) => Ok(Some(parse_mode(&text).map_err(|m| invalid("mode", m))?)),
        Some(ModeValue::Integer(number)) => Err(invalid(
            "mode",
            format!(
                "mode must be a string such as \"0644\"; the bare number {number} is ambiguous, quote it"
            ),
        )),
        None => Ok(None),
    }
}

/// `target`: required with ensure = "link", and only there.
fn link_target(ensure: Ensure, target: Option<String>) -> Result<Option<String>, Invalid> {
    match (ensure, target) {
        (Ensure::Link, Some(target)) => Ok(Some(
            validate_target(&target).map_err(|m| invalid("target", m))?,
        )),
        (Ensure::Link, None) => Err(invalid(
            "target",
            "`target` is required with ensure = \"link\"; give the path the link points to",
        )),
        (_, Some(_)) => Err(invalid(
            "target",
            format!(
                "target only applies to ensure = \"link\", this one is \"{}\"; remove it or set ensure = \"link\"",
                ensure.as_str()
            ),
        )),
        (_, None) => Ok(None),
    }
}

/// Owner, group and mode are required unless the file is absent or a
/// link (no default permissions); setuid and setgid on a file need
/// `allow_setid`.
fn check_permissions(
    ensure: Ensure,
    owner_and_group: [bool; 2],
    mode: Option<u32>,
    allow_setid: Option<bool>,
) -> Result<(), Invalid> {
    if !matches!(ensure, Ensure::Absent | Ensure::Link) {
        for (property, missing) in [
            ("owner", !owner_and_group[0]),
            ("group", !owner_and_group[1]),
            ("mode", mode.is_none()),
        ] {
            if missing {
                return Err(invalid(
                    property,
                    format!(
                        "`{property}` is required unless ensure = \"absent\" or \"link\", so that no file gets default permissions; add it"
                    ),
                ));
            }
        }
    }
    if let (Ensure::Present, Some(mode)) = (ensure, mode) {
        let bits = [(0o4000, "setuid"), (0o2000, "setgid")];
        let set: Vec<&str> = bits
            .iter()
            .filter(|(bit, _)| mode & bit != 0)
            .map(|(_, name)| *name)
            .collect();
        if !set.is_empty() && allow_setid != Some(true) {
            return Err(invalid(
                "mode",
                format!(
                    "mode \"{}\" sets the {} bit on a file, which is easy to do by mistake; add allow_setid = true to the resource if it is meant",
                    format_mode(mode),
                    set.join(" and ")
                ),
            ));
        }
    }
    Ok(())
}

fn principal(
    value: Option<IdOrName>,
    property: &'static str,
) -> Result<Option<Principal>, Invalid> {
    match value {
        None => Ok(None),
        Some(IdOrName::Text(text)) => Principal::parse(&text, property)
            .map(Some)
            .map_err(|m| invalid(property, m)),
        Some(IdOrName::Id(id)) => {
            u32::try_from(id)
                .map(|id| Some(Principal::Id(id)))
                .map_err(|_| {
                    invalid(
                        property,
                        format!("{property} = {id} is not a valid numeric id"),
                    )
                })
        }
    }
}

/// The file a `source` names. `..` is refused like in `template()`, and a
/// relative source must stay inside the resource directory: once a
/// generator runs, the resources are a copy elsewhere (below the cache
/// directory), where neither `..` nor a copied symlink may reach the host.
fn resolve_source(
    source: &str,
    declared: &Location,
    fs: &RootFs,
    resource_dir: &Path,
    root_join: impl Fn(&Path) -> PathBuf,
) -> Result<Content, Invalid> {
    if source.is_empty() {
        return Err(invalid(
            "source",
            "source is empty; give a path or remove it",
        ));
    }
    let given = Path::new(source);
    if given.components().any(|part| part == Component::ParentDir) {
        return Err(invalid(
            "source",
            format!(
                "source {source:?} has a .. component; write the path without .. (a relative source is resolved from the directory of the TOML file and stays inside the resource directory)"
            ),
        ));
    }
    let (path, shown) = if given.is_absolute() {
        let path = root_join(given);
        (path.clone(), path)
    } else {
        let beside = |toml: &Path| toml.parent().unwrap_or(Path::new(".")).join(given);
        let path = beside(&declared.path);
        if let (Ok(real), Ok(dir)) = (path.canonicalize(), resource_dir.canonicalize())
            && !real.starts_with(&dir)
        {
            let link = std::fs::read_link(&path)
                .map(|target| format!(" (-> {})", target.display()))
                .unwrap_or_default();
            return Err(invalid(
                "source",
                format!(
                    "source {source:?} is a symlink out of the resource directory{link}; a relative source stays inside it: copy the file there, or give an absolute source"
                ),
            ));
        }
        (path, beside(&declared.origin))
    };
    match fs.metadata(&path) {
        Ok(meta) if meta.is_file() => Ok(Content::Source { path, shown }),
        Ok(_) => Err(invalid(
            "source",
            format!(
                "{} is not a regular file; point source at a file",
                shown.display()
            ),
        )),
        Err(err) => Err(invalid(
            "source",
            format!(
                "cannot read {}: {err}; a relative source is resolved from the directory of the TOML file",
                shown.display()
            ),
        )),
    }
}

/// Checks that a path is absolute and clean: no `.` or `..` components, no
/// `//`, no trailing `/`, and not `/` itself.
pub fn validate_path(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err("name is empty; give an absolute path such as \"/etc/motd\"".to_string());
    }
    if !path.starts_with('/') {
        return Err(format!(
            "\"{path}\" is not absolute; file names start with '/'"
        ));
    }
    if path == "/" {
        return Err("\"/\" cannot be managed as a file; name a path below it".to_string());
    }
    if let Some(message) = length_problem(path) {
        return Err(message);
    }
    if path.contains('\0') || path.contains('\n') {
        return Err(format!(
            "{path:?} contains a NUL or newline; use a plain path"
        ));
    }
    let clean = path.len() > 1
        && !path.ends_with('/')
        && !path.contains("//")
        && Path::new(path)
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
        && !path.split('/').any(|part| part == "." || part == "..");
    if !clean {
        return Err(format!(
            "\"{path}\" is not clean; write it without '.', '..', '//' or a trailing '/'"
        ));
    }
    Ok(())
}

/// A path longer than `PATH_MAX`, or with a component longer than
/// `NAME_MAX`: no system call would take it.
fn length_problem(path: &str) -> Option<String> {
    use holo_plugin::limits::{NAME_MAX, PATH_MAX, over_limit};
    if let Some(message) = over_limit("the path", path, PATH_MAX) {
        return Some(message);
    }
    path.split('/')
        .find_map(|part| over_limit("a component of the path", part, NAME_MAX))
}

/// Checks a link target: any path, absolute or relative to the link's
/// directory, and it need not exist (a dangling link is allowed).
pub fn validate_target(target: &str) -> Result<String, String> {
    if target.is_empty() {
        return Err("target is empty; give the path the link points to".to_string());
    }
    if target.contains('\0') || target.contains('\n') {
        return Err(format!(
            "target {target:?} contains a NUL or newline; use a plain path"
        ));
    }
    Ok(target.to_string())
}

/// Parses a mode: `"0644"`, `"644"`, `"0o755"` or `"0O700"`, with the
/// setuid, setgid and sticky bits as a fourth digit (`"2775"`); at most
/// `07777`.
pub fn parse_mode(text: &str) -> Result<u32, String> {
    let digits = text
        .strip_prefix("0o")
        .or_else(|| text.strip_prefix("0O"))
        .unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        return Err(format!(
            "mode \"{text}\" is not octal; write it as \"0644\", \"644\" or \"0o644\""
        ));
    }
    let mode = u32::from_str_radix(digits, 8)
        .map_err(|_| format!("mode \"{text}\" is too large; the maximum is \"7777\""))?;
    if mode > 0o7777 {
        return Err(format!(
            "mode \"{text}\" is above 7777; write at most four octal digits: setuid, setgid and sticky (4, 2, 1), then owner, group and others"
        ));
    }
    Ok(mode)
}

/// Formats a mode the way resources and messages write it: `0644`.
pub fn format_mode(mode: u32) -> String {
    format!("{mode:04o}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn principals_read_back_as_written() {
        #[derive(Debug, PartialEq, Serialize, Deserialize)]
        struct Owners {
            owner: Option<Principal>,
            group: Option<Principal>,
        }
        for owners in [
            Owners {
                owner: Some(Principal::Id(4_294_967_295)),
                group: Some(Principal::Name("0x".into())),
            },
            Owners {
                owner: Some(Principal::Name("root".into())),
                group: None,
            },
        ] {
            let text = toml::to_string(&owners).expect("serialise");
            assert_eq!(toml::from_str::<Owners>(&text).expect("parse"), owners);
        }
        for bad in ["owner = 4294967296", "owner = -1", "owner = true"] {
            assert!(toml::from_str::<Owners>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn valid_modes_in_every_format() {
        for (text, mode) in [
            ("0644", 0o644),
            ("644", 0o644),
            ("0o755", 0o755),
            ("0O700", 0o700),
            ("0", 0),
            ("0777", 0o777),
            ("00640", 0o640),
            ("2775", 0o2775),
            ("1777", 0o1777),
            ("4755", 0o4755),
            ("0o7777", 0o7777),
        ] {
            assert_eq!(parse_mode(text), Ok(mode), "{text}");
        }
    }

    #[test]
    fn invalid_modes_say_why() {
        for (text, reason) in [
            ("0888", "not octal"),
            ("rw-r--r--", "not octal"),
            ("", "not octal"),
            ("0o", "not octal"),
            ("0x644", "not octal"),
            ("-644", "not octal"),
            ("17777", "above 7777"),
            ("00010000", "above 7777"),
            ("77777777777777", "too large"),
        ] {
            let err = parse_mode(text).expect_err(text);
            assert!(err.contains(reason), "{text}: {err}");
        }
    }

    #[test]
    fn mode_formatting_is_four_digits() {
        assert_eq!(format_mode(0o644), "0644");
        assert_eq!(format_mode(0o7), "0007");
    }

    #[test]
    fn clean_absolute_paths_are_accepted() {
        for path in [
            "/etc/motd",
            "/a",
            "/etc/app.d/x.conf",
            "/srv/.hidden",
            "/x/...y",
        ] {
            assert_eq!(validate_path(path), Ok(()), "{path}");
        }
    }

    #[test]
    fn unclean_or_relative_paths_are_rejected() {
        for (path, reason) in [
            ("etc/motd", "not absolute"),
            ("", "empty"),
            ("/", "cannot be managed"),
            ("/etc/", "not clean"),
            ("/etc//motd", "not clean"),
            ("/etc/./motd", "not clean"),
            ("/etc/../motd", "not clean"),
            ("/etc/..", "not clean"),
            ("//etc", "not clean"),
            ("/etc/mo\ntd", "NUL or newline"),
        ] {
            let err = validate_path(path).expect_err(path);
            assert!(err.contains(reason), "{path:?}: {err}");
        }
    }

    fn declared() -> Location {
        Location {
            path: PathBuf::from("/cache/res/app/files.toml"),
            origin: PathBuf::from("/usr/share/holo/file/app/files.toml"),
            line: 7,
        }
    }

    fn resource(toml_text: &str) -> FileResource {
        toml::from_str(toml_text).expect("resource parses")
    }

    fn validate(toml_text: &str) -> Result<FileSpec, Invalid> {
        resource(toml_text).validate(
            &declared(),
            None,
            &RootFs::unconfined(),
            Path::new("/cache/res"),
            |p| Path::new("/root").join(p.strip_prefix("/").unwrap_or(p)),
        )
    }

    #[test]
    fn a_full_resource_validates() {
        let spec = validate(
            "name = \"/etc/motd\"\ncontents = \"hi\\n\"\nowner = \"root\"\ngroup = 0\nmode = \"0o640\"\n",
        )
        .expect("valid");
        assert_eq!(spec.ensure, Ensure::Present);
        assert_eq!(spec.content, Content::Inline("hi\n".into()));
        assert_eq!(spec.owner, Some(Principal::Name("root".into())));
        assert_eq!(spec.group, Some(Principal::Id(0)));
        assert_eq!(spec.mode, Some(0o640));
        assert!(spec.protect);
        assert_eq!(spec.found_in, "/usr/share/holo/file/app/files.toml:7");
    }

    #[test]
    fn absent_needs_no_attributes() {
        let spec =
            validate("name = \"/etc/old\"\nensure = \"absent\"\nforce = true\n").expect("valid");
        assert_eq!(spec.ensure, Ensure::Absent);
        assert!(spec.force);
    }

    /// A resource (TOML), the property its error names, and a part of the
    /// message.
    const PROPERTY_ERRORS: &[(&str, &str, &str)] = &[
        (
            "name = \"etc\"\nowner=\"a\"\ngroup=\"a\"\nmode=\"0644\"",
            "name",
            "not absolute",
        ),
        (
            "name = \"/e\"\nensure=\"file\"",
            "ensure",
            "use \"present\", \"absent\", \"directory\" or \"link\"",
        ),
        (
            "name = \"/e\"\nensure=\"presnt\"",
            "ensure",
            "(did you mean \"present\"?)",
        ),
        (
            "name = \"/e\"\nowner=\"a\"\ngroup=\"a\"\nmode=\"4755\"",
            "mode",
            "sets the setuid bit on a file",
        ),
        (
            "name = \"/e\"\nowner=\"a\"\ngroup=\"a\"\nmode=\"6755\"",
            "mode",
            "setuid and setgid bit on a file, which is easy to do by mistake; add allow_setid = true",
        ),
        (
            "name = \"/e\"\nensure=\"link\"",
            "target",
            "`target` is required with ensure = \"link\"",
        ),
        (
            "name = \"/e\"\nensure=\"link\"\ntarget=\"\"",
            "target",
            "target is empty",
        ),
        (
            "name = \"/e\"\ntarget=\"/x\"\nowner=\"a\"\ngroup=\"a\"\nmode=\"0644\"",
            "target",
            "target only applies to ensure = \"link\"",
        ),
        (
            "name = \"/e\"\nensure=\"link\"\ntarget=\"/x\"\nmode=\"0777\"",
            "mode",
            "a symbolic link has no mode of its own",
        ),
        (
            "name = \"/e\"\nensure=\"link\"\ntarget=\"/x\"\ncontent=\"x\"",
            "content",
            "only a file with ensure = \"present\"",
        ),
        (
            "name = \"/e\"\ngroup=\"a\"\nmode=\"0644\"",
            "owner",
            "required",
        ),
        (
            "name = \"/e\"\nowner=\"a\"\nmode=\"0644\"",
            "group",
            "required",
        ),
        (
            "name = \"/e\"\nowner=\"a\"\ngroup=\"a\"",
            "mode",
            "required",
        ),
        (
            "name = \"/e\"\nowner=\"a\"\ngroup=\"a\"\nmode=644",
            "mode",
            "quote it",
        ),
        (
            "name = \"/e\"\nowner=\"a\"\ngroup=\"a\"\nmode=\"0999\"",
            "mode",
            "not octal",
        ),
        (
            "name = \"/e\"\nowner=-1\ngroup=\"a\"\nmode=\"0644\"",
            "owner",
            "not a valid numeric id",
        ),
        (
            "name = \"/e\"\nowner=\"a b \"\ngroup=\"a\"\nmode=\"0644\"",
            "owner",
            "not a valid name",
        ),
        (
            "name = \"/e\"\ncontent=\"x\"\nsource=\"y\"\nowner=\"a\"\ngroup=\"a\"\nmode=\"0644\"",
            "source",
            "exclude each other",
        ),
        (
            "name = \"/e\"\nensure=\"directory\"\ncontent=\"x\"\nowner=\"a\"\ngroup=\"a\"\nmode=\"0755\"",
            "content",
            "only a file with ensure = \"present\"",
        ),
        (
            "name = \"/e\"\nforce=true\nowner=\"a\"\ngroup=\"a\"\nmode=\"0755\"",
            "force",
            "only applies to ensure = \"absent\"",
        ),
        (
            "name = \"/e\"\nsource=\"missing.txt\"\nowner=\"a\"\ngroup=\"a\"\nmode=\"0644\"",
            "source",
            "/usr/share/holo/file/app/missing.txt",
        ),
    ];

    #[test]
    fn property_errors_name_the_property() {
        for (text, property, needle) in PROPERTY_ERRORS {
            let err = validate(text).expect_err(text);
            assert_eq!(err.property, *property, "{text}: {err}");
            assert!(err.message.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn full_modes_need_allow_setid_only_on_files() {
        let file = validate(
            "name = \"/usr/bin/x\"\nowner=\"a\"\ngroup=\"a\"\nmode=\"4755\"\nallow_setid = true",
        )
        .expect("allowed");
        assert_eq!(file.mode, Some(0o4755));
        let sticky = validate("name = \"/e\"\nowner=\"a\"\ngroup=\"a\"\nmode=\"1644\"")
            .expect("sticky is no setid");
        assert_eq!(sticky.mode, Some(0o1644));
        for (mode, bits) in [("2775", 0o2775), ("1777", 0o1777), ("4755", 0o4755)] {
            let dir = validate(&format!(
                "name = \"/srv/x\"\nensure=\"directory\"\nowner=\"a\"\ngroup=\"a\"\nmode=\"{mode}\""
            ))
            .expect("directories need no allow_setid");
            assert_eq!(dir.mode, Some(bits));
        }
    }

    #[test]
    fn links_need_a_target_and_no_attributes() {
        let spec = validate(
            "name = \"/etc/nginx/sites-enabled/site\"\nensure = \"link\"\ntarget = \"../sites-available/site\"\nforce = true",
        )
        .expect("valid");
        assert_eq!(spec.ensure, Ensure::Link);
        assert_eq!(spec.target.as_deref(), Some("../sites-available/site"));
        assert!(spec.force);
        assert_eq!((spec.owner, spec.mode), (None, None));
    }

    #[test]
    fn unknown_properties_are_rejected_by_the_table_shape() {
        let err =
            toml::from_str::<FileResource>("name = \"/e\"\nmod = \"0644\"\n").expect_err("unknown");
        assert!(err.to_string().contains("mod"), "{err}");
    }

    #[test]
    fn relative_source_resolves_beside_the_toml_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let res = dir.path().join("res/app");
        let origin = dir.path().join("origin/app");
        std::fs::create_dir_all(res.join("files")).expect("mkdir");
        std::fs::write(res.join("files/motd"), "hello\n").expect("write");
        let declared = Location {
            path: res.join("files.toml"),
            origin: origin.join("files.toml"),
            line: 1,
        };
        let spec = resource("name = \"/etc/motd\"\nsource = \"files/motd\"\nowner=\"root\"\ngroup=\"root\"\nmode=\"0644\"")
            .validate(
                &declared,
                Some(false),
                &RootFs::unconfined(),
                &dir.path().join("res"),
                |p| p.to_path_buf(),
            )
            .expect("valid");
        assert_eq!(
            spec.content,
            Content::Source {
                path: res.join("files/motd"),
                shown: origin.join("files/motd"),
            }
        );
    }
}
