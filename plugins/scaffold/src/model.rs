//! The `[[scaffold]]` resource: its properties and their validation into a
//! [`ScaffoldSpec`]. Errors here are plain text; the caller prefixes the
//! resource file and line.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use holo_plugin::extract::Format;
use holo_plugin::resources::Resource;
use serde::{Deserialize, Serialize};

/// The `ensure` property (`present` or `absent`), shared with other kinds.
pub use holo_plugin::resources::Ensure;

/// A `[[scaffold]]` table as written in a resource file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ScaffoldTable {
    /// The target directory.
    pub name: String,
    pub source: Option<String>,
    pub ensure: Option<String>,
    #[serde(default)]
    pub skip_empty: bool,
    #[serde(default)]
    pub purge: bool,
    pub left_delimiter: Option<String>,
    pub right_delimiter: Option<String>,
    #[serde(default)]
    pub post: Vec<BTreeMap<String, String>>,
    #[serde(default)]
    pub data: toml::Table,
    pub engine: Option<String>,
    /// The SHA-256 of a URL source's archive.
    pub checksum: Option<String>,
}

impl Resource for ScaffoldTable {
    const KIND: &'static str = "scaffold";
    fn entity_id(&self) -> String {
        format!("scaffold:{}", self.name)
    }
}

/// One `post` entry: files whose base name matches `glob` get `command`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Post {
    pub glob: String,
    pub command: String,
}

impl Post {
    /// The argument vector for `path`: `{}` in any argument stands for the
    /// path, else the path is appended.
    pub fn argv(&self, path: &str) -> Result<Vec<String>, String> {
        let words = shell_words::split(&self.command)
            .map_err(|err| format!("post command {:?} cannot be split: {err}", self.command))?;
        if words.is_empty() {
            return Err(format!("post command for {:?} is empty", self.glob));
        }
        let mut substituted = false;
        let mut argv: Vec<String> = words
            .into_iter()
            .map(|word| {
                if word.contains("{}") {
                    substituted = true;
                    word.replace("{}", path)
                } else {
                    word
                }
            })
            .collect();
        if !substituted {
            argv.push(path.to_string());
        }
        Ok(argv)
    }

    /// Whether the post command applies to a file with this base name.
    pub fn matches(&self, file_name: &str) -> bool {
        glob::Pattern::new(&self.glob).is_ok_and(|pattern| pattern.matches(file_name))
    }
}

/// The validated desired state of one scaffold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScaffoldSpec {
    /// The target directory, absolute.
    pub name: String,
    /// The template directory, resolved against the declaring file; for a
    /// URL source, its place in the cache.
    pub source: PathBuf,
    /// A source given as a URL: an archive of the template tree.
    #[serde(default)]
    pub url: Option<UrlSource>,
    pub ensure: Ensure,
    pub skip_empty: bool,
    pub purge: bool,
    /// Jet's default is `[[ ]]`, as in CCM.
    pub delimiters: Option<(String, String)>,
    #[serde(default)]
    pub engine: TemplateEngine,
    pub post: Vec<Post>,
    pub data: toml::Table,
    /// Holo's protection of manual edits (on unless `protect = false`).
    #[serde(default)]
    pub protect: bool,
    /// How many bytes one file of the tree may render to (the common
    /// `max_render_size`).
    #[serde(default = "default_max_render_size")]
    pub max_render_size: usize,
}

fn default_max_render_size() -> usize {
    holo_plugin::template::DEFAULT_MAX_RENDER_SIZE
}

/// An `http(s)://` source: an archive of the template tree. With a
/// checksum it is verified against its SHA-256 and cached by it across
/// runs; without one (as CCM takes a URL) it is downloaded once per run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UrlSource {
    pub url: String,
    /// Lowercase hex.
    #[serde(default)]
    pub sha256: Option<String>,
    pub format: Format,
}

/// Where URL sources are kept, extracted, one directory per checksum.
pub const URL_CACHE: &str = "/var/cache/holo/scaffold";

/// Whether a `source` names a URL rather than a directory.
fn is_url(source: &str) -> bool {
    let lower = source.to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

fn url_source(url: &str, checksum: Option<&str>) -> Result<UrlSource, String> {
    if holo_plugin::download::has_userinfo(url) {
        return Err(format!(
            "source {:?} holds credentials; scaffold sources are fetched without them: publish the archive where it can be read without a password",
            holo_plugin::download::redact_url(url)
        ));
    }
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let format = Format::of(path).ok_or_else(|| {
        format!(
            "source {:?} is not an archive: a URL source is a .tar.gz, .tgz, .tar or .zip of the template tree",
            holo_plugin::download::redact_url(url)
        )
    })?;
    let sha256 = checksum.map(sha256_hex).transpose()?;
    Ok(UrlSource {
        url: url.to_string(),
        sha256,
        format,
    })
}

/// A `checksum` as lowercase hex, or what to write instead.
fn sha256_hex(checksum: &str) -> Result<String, String> {
    let sha256 = checksum.trim().to_ascii_lowercase();
    if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "checksum {checksum:?} is not a SHA-256: write the 64 hex digits that sha256sum prints"
        ));
    }
    Ok(sha256)
}

/// The template language of a scaffold's files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum TemplateEngine {
    /// minijinja (Jinja2 syntax), by name only.
    Jinja,
    /// Jet, CCM's default and so ours, through holo-jet.
    #[default]
    Jet,
    /// Go's text/template, CCM's other engine, through gotmpl.
    Go,
}

impl TemplateEngine {
    /// The `engine` property: CCM's default is Jet, and a CCM template
    /// tree moved here renders the same. `jinja` is the older name of
    /// `minijinja`.
    pub fn parse(engine: Option<&str>) -> Result<TemplateEngine, String> {
        match engine {
            None | Some("jet") => Ok(TemplateEngine::Jet),
            Some("minijinja" | "jinja") => Ok(TemplateEngine::Jinja),
            Some("go") => Ok(TemplateEngine::Go),
            Some(other) => Err(format!(
                "unknown engine {other:?}: use \"jet\" (the default, as in CCM), \"go\" or \"minijinja\""
            )),
        }
    }

    /// The name the state record keeps.
    pub fn name(self) -> &'static str {
        match self {
            TemplateEngine::Jinja => "minijinja",
            TemplateEngine::Jet => "jet",
            TemplateEngine::Go => "go",
        }
    }
}

impl ScaffoldTable {
    /// Validates the table; `declared_in` is the resource file, which a
    /// relative `source` is resolved against. In test mode `test_root` is
    /// the root, which an absolute `source` is read inside of. Whether the
    /// source is a directory is for the caller to check, inside the root.
    pub fn validate(
        &self,
        declared_in: &Path,
        test_root: Option<&Path>,
    ) -> Result<ScaffoldSpec, String> {
        validate_target(&self.name)?;
        let source = self
            .source
            .as_deref()
            .filter(|source| !source.is_empty())
            .ok_or("source is required: set source = \"DIRECTORY\" (relative to this file)")?;
        let url = if is_url(source) {
            Some(url_source(source, self.checksum.as_deref())?)
        } else if self.checksum.is_some() {
            return Err(
                "checksum is for a URL source only: remove it, or set source to the archive's http(s) URL"
                    .to_string(),
            );
        } else {
            None
        };
        if url.is_none()
            && Path::new(source)
                .components()
                .any(|component| component == Component::ParentDir)
        {
            return Err(format!(
                "source {source:?} contains \"..\": name a directory beside this file or below it, or an absolute path"
            ));
        }
        let resolved = match (Path::new(source).strip_prefix("/"), test_root) {
            _ if url.is_some() => Path::new(URL_CACHE).join(
                url.as_ref()
                    .and_then(|url| url.sha256.as_deref())
                    .unwrap_or_default(),
            ),
            (Ok(below_root), Some(root)) => root.join(below_root),
            (Ok(_), None) => PathBuf::from(source),
            (Err(_), _) => match declared_in.parent() {
                Some(dir) => dir.join(source),
                None => PathBuf::from(source),
            },
        };
        let engine = TemplateEngine::parse(self.engine.as_deref())?;
        let ensure = Ensure::parse(self.ensure.as_deref())?;
        let delimiters = delimiters(
            engine,
            self.left_delimiter.as_ref(),
            self.right_delimiter.as_ref(),
        )?;
        let post = post_commands(&self.post)?;
        Ok(ScaffoldSpec {
            name: self.name.clone(),
            source: resolved,
            url,
            ensure,
            skip_empty: self.skip_empty,
            purge: self.purge,
            delimiters,
            engine,
            post,
            data: self.data.clone(),
            protect: true,
            max_render_size: default_max_render_size(),
        })
    }
}

/// The template delimiters: both or neither (jet's default `[[ ]]`),
/// non-empty and different.
fn delimiters(
    engine: TemplateEngine,
    left: Option<&String>,
    right: Option<&String>,
) -> Result<Option<(String, String)>, String> {
    match (left, right) {
        (None, None) if engine == TemplateEngine::Jet => Ok(Some(("[[".into(), "]]".into()))),
        (None, None) => Ok(None),
        (Some(left), Some(right)) if !left.trim().is_empty() && !right.trim().is_empty() => {
            if left == right {
                return Err("left_delimiter and right_delimiter must differ".to_string());
            }
            Ok(Some((left.clone(), right.clone())))
        }
        _ => Err(
            "set both left_delimiter and right_delimiter, non-empty (for example \"[[\" and \"]]\")"
                .to_string(),
        ),
    }
}

/// `post`: each entry's glob (valid) and command (one that splits into
/// words).
fn post_commands(entries: &[BTreeMap<String, String>]) -> Result<Vec<Post>, String> {
    let mut post = Vec::new();
    for entry in entries {
        for (glob, command) in entry {
            if glob.trim().is_empty() || command.trim().is_empty() {
                return Err(
                    "post: every entry needs a glob and a command, as { \"*.sh\" = \"chmod +x {}\" }"
                        .to_string(),
                );
            }
            glob::Pattern::new(glob)
                .map_err(|err| format!("post: {glob:?} is not a valid glob: {err}"))?;
            let entry = Post {
                glob: glob.clone(),
                command: command.clone(),
            };
            entry.argv("PATH")?;
            post.push(entry);
        }
    }
    Ok(post)
}

/// The target: absolute and canonical, and not `/` itself.
pub fn validate_target(path: &str) -> Result<(), String> {
    let canonical = path.starts_with('/')
        && path != "/"
        && !path.ends_with('/')
        && !path.contains("//")
        && Path::new(path)
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    if !canonical {
        return Err(format!(
            "name {path:?} must be an absolute, canonical directory path (starting with /, without . or .. components, not /)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(dir: &Path) -> ScaffoldTable {
        std::fs::create_dir_all(dir.join("templates")).expect("mkdir");
        ScaffoldTable {
            name: "/etc/app".into(),
            source: Some("templates".into()),
            ..ScaffoldTable::default()
        }
    }

    #[test]
    fn source_is_resolved_next_to_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let spec = valid(dir.path())
            .validate(&dir.path().join("app.toml"), None)
            .expect("valid");
        assert_eq!(spec.source, dir.path().join("templates"));
        assert_eq!(spec.ensure, Ensure::Present);
        let mut climbing = valid(dir.path());
        climbing.source = Some("../../etc/ssh".into());
        let err = climbing
            .validate(&dir.path().join("app.toml"), None)
            .expect_err("..");
        assert!(err.contains("\"..\""), "{err}");
        let mut absolute = valid(dir.path());
        absolute.source = Some("/etc/ssh".into());
        let spec = absolute
            .validate(&dir.path().join("app.toml"), Some(Path::new("/r")))
            .expect("absolute");
        assert_eq!(spec.source, Path::new("/r/etc/ssh"));
    }

    #[test]
    fn engines_are_jet_by_default_minijinja_and_go() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut table = valid(dir.path());
        let spec = table
            .validate(&dir.path().join("a.toml"), None)
            .expect("no engine");
        assert_eq!(
            (spec.engine, spec.delimiters),
            (TemplateEngine::Jet, Some(("[[".into(), "]]".into()))),
            "CCM's default"
        );
        table.engine = Some("minijinja".into());
        let spec = table
            .validate(&dir.path().join("a.toml"), None)
            .expect("minijinja");
        assert_eq!(
            (spec.engine, spec.delimiters),
            (TemplateEngine::Jinja, None)
        );
        table.engine = Some("go".into());
        let spec = table
            .validate(&dir.path().join("a.toml"), None)
            .expect("go");
        assert_eq!((spec.engine, spec.delimiters), (TemplateEngine::Go, None));
        table.engine = Some("mustache".into());
        let err = table
            .validate(&dir.path().join("a.toml"), None)
            .expect_err("mustache");
        assert!(
            err.contains("\"jet\" (the default") && err.contains("\"minijinja\""),
            "{err}"
        );
        table.engine = Some("jinja".into());
        let spec = table
            .validate(&dir.path().join("a.toml"), None)
            .expect("jinja");
        assert_eq!(
            (spec.engine, spec.delimiters),
            (TemplateEngine::Jinja, None)
        );
    }

    #[test]
    fn a_url_source_takes_an_optional_checksum_and_is_cached_by_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let declared_in = dir.path().join("a.toml");
        let mut table = valid(dir.path());
        table.source = Some("HTTPS://example.org/t/app.tar.gz?sig=1".into());
        let spec = table.validate(&declared_in, None).expect("no checksum");
        let url = spec.url.expect("a URL source without a checksum, as CCM");
        assert_eq!((url.sha256, url.format), (None, Format::TarGz));
        table.checksum = Some("AB".repeat(32));
        let spec = table.validate(&declared_in, None).expect("url");
        let url = spec.url.expect("a URL source");
        assert_eq!(
            (url.sha256.as_deref(), url.format),
            (Some("ab".repeat(32).as_str()), Format::TarGz)
        );
        assert_eq!(spec.source, Path::new(URL_CACHE).join("ab".repeat(32)));
        table.source = Some("https://example.org/app.zip".into());
        let spec = table.validate(&declared_in, Some(Path::new("/r")));
        assert_eq!(
            spec.map(|spec| spec.url.map(|url| url.format)),
            Ok(Some(Format::Zip))
        );
        table.checksum = Some("abc".into());
        let err = table.validate(&declared_in, None).expect_err("short");
        assert!(err.contains("not a SHA-256"), "{err}");
        table.checksum = Some("ab".repeat(32));
        table.source = Some("https://user:secret@example.org/app.zip".into());
        let err = table.validate(&declared_in, None).expect_err("credentials");
        assert!(
            err.contains("credentials") && !err.contains("secret"),
            "{err}"
        );
        table.source = Some("https://example.org/app/".into());
        let err = table
            .validate(&declared_in, None)
            .expect_err("not an archive");
        assert!(err.contains("is not an archive"), "{err}");
        table.source = Some("templates".into());
        let err = table
            .validate(&declared_in, None)
            .expect_err("checksum of a dir");
        assert!(err.contains("URL source only"), "{err}");
    }

    #[test]
    fn jet_defaults_to_bracket_delimiters_as_ccm() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut table = valid(dir.path());
        table.engine = Some("jet".into());
        let spec = table
            .validate(&dir.path().join("a.toml"), None)
            .expect("jet");
        assert_eq!(spec.engine, TemplateEngine::Jet);
        assert_eq!(spec.delimiters, Some(("[[".into(), "]]".into())));
        table.left_delimiter = Some("<<".into());
        table.right_delimiter = Some(">>".into());
        let spec = table
            .validate(&dir.path().join("a.toml"), None)
            .expect("jet <<");
        assert_eq!(spec.delimiters, Some(("<<".into(), ">>".into())));
    }

    #[test]
    fn delimiters_come_in_pairs_and_targets_are_canonical() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut table = valid(dir.path());
        table.left_delimiter = Some("[[".into());
        assert!(table.validate(&dir.path().join("a.toml"), None).is_err());
        table.right_delimiter = Some("]]".into());
        assert!(table.validate(&dir.path().join("a.toml"), None).is_ok());
        for bad in ["etc/app", "/etc/../app", "/", "/etc/app/"] {
            assert!(validate_target(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn post_commands_substitute_or_append_the_path() {
        let with = Post {
            glob: "*.sh".into(),
            command: "chmod 0755 {}".into(),
        };
        assert_eq!(
            with.argv("/t/a.sh"),
            Ok(vec!["chmod".into(), "0755".into(), "/t/a.sh".into()])
        );
        let without = Post {
            glob: "*.go".into(),
            command: "gofmt -w".into(),
        };
        assert_eq!(
            without.argv("/t/m.go"),
            Ok(vec!["gofmt".into(), "-w".into(), "/t/m.go".into()])
        );
        assert!(with.matches("run.sh") && !with.matches("run.py"));
        let unclosed = Post {
            glob: "*".into(),
            command: "echo 'oops".into(),
        };
        assert!(unclosed.argv("/x").is_err());
    }
}
