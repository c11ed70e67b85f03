//! The `[[archive]]` resource: its properties and their validation into an
//! [`ArchiveSpec`]. Errors here are plain text; the caller prefixes the
//! resource file and line.
//!
//! Credentials (`password`, URL userinfo, the values of `headers`) are never
//! part of the spec, because the spec is cached between scan and apply and
//! shown in scan lines. Apply reads them again from the resource
//! ([`ArchiveTable::credentials`]).

use std::collections::BTreeMap;
use std::path::{Component, Path};
use std::time::Duration;

use holo_plugin::download::{
    check_userinfo, has_userinfo, is_sensitive_header, redact_url, url_sha256,
};
use holo_plugin::resources::Resource;
use serde::{Deserialize, Serialize};

/// The `ensure` property (`present` or `absent`), shared with other kinds.
pub use holo_plugin::resources::Ensure;

pub use holo_plugin::extract::Format;

/// The default limit on the total size of the extracted files: far above
/// any software or data release, far below what fills a disk by surprise.
pub const DEFAULT_MAX_EXTRACT_SIZE: u64 = 64 << 30;

/// The default limit on the number of entries extracted.
pub const DEFAULT_MAX_EXTRACT_ENTRIES: u64 = 1_000_000;

/// The default download timeout (CCM's fixed one minute).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// An `[[archive]]` table as written in a resource file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ArchiveTable {
    pub name: String,
    pub url: Option<String>,
    pub checksum: Option<String>,
    pub username: Option<String>,
    pub password: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    pub extract_parent: Option<String>,
    pub creates: Option<String>,
    #[serde(default)]
    pub cleanup: bool,
    pub owner: Option<String>,
    pub group: Option<String>,
    pub ensure: Option<String>,
    pub timeout: Option<String>,
    /// Keep setuid/setgid bits of extracted files (only honoured as root).
    #[serde(default)]
    pub keep_setuid: bool,
    /// Most bytes the extracted files may hold, like "100GiB".
    pub max_extract_size: Option<String>,
    /// Most entries (files, directories, links) extracted.
    pub max_extract_entries: Option<u64>,
}

impl Resource for ArchiveTable {
    const KIND: &'static str = "archive";
    fn entity_id(&self) -> String {
        format!("archive:{}", self.name)
    }
}

/// The validated desired state of one archive: what scan hands to apply.
/// It holds no credentials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchiveSpec {
    pub name: String,
    pub format: Format,
    /// The URL with userinfo and query string redacted (the real one comes
    /// from the resource at apply).
    pub shown_url: String,
    /// SHA-256 of the URL without userinfo: a changed query string (a new
    /// signature) changes it although `shown_url` stays the same.
    pub url_sha256: String,
    pub checksum: Option<String>,
    /// Basic auth is configured (username/password or URL userinfo).
    pub basic_auth: bool,
    /// Header names (values may be secrets).
    pub header_names: Vec<String>,
    pub extract_parent: Option<String>,
    pub creates: Option<String>,
    pub cleanup: bool,
    pub owner: String,
    pub group: String,
    pub ensure: Ensure,
    pub timeout_ms: u64,
    pub keep_setuid: bool,
    #[serde(default = "default_max_extract_size")]
    pub max_extract_size: u64,
    #[serde(default = "default_max_extract_entries")]
    pub max_extract_entries: u64,
    /// Holo's protection of manual changes (opt-in: archives converge by default).
    #[serde(default)]
    pub protect: bool,
}

fn default_max_extract_size() -> u64 {
    DEFAULT_MAX_EXTRACT_SIZE
}

fn default_max_extract_entries() -> u64 {
    DEFAULT_MAX_EXTRACT_ENTRIES
}

impl ArchiveSpec {
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }
}

/// What apply needs to fetch the URL: the secrets the spec leaves out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credentials {
    pub url: String,
    pub basic_auth: Option<(String, String)>,
    pub headers: Vec<(String, String)>,
}

impl ArchiveTable {
    /// The URL, basic auth and headers, for the download only.
    pub fn credentials(&self) -> Credentials {
        let basic_auth = self
            .username
            .as_ref()
            .map(|user| (user.clone(), self.password.clone().unwrap_or_default()));
        Credentials {
            url: self.url.clone().unwrap_or_default(),
            basic_auth,
            headers: self
                .headers
                .iter()
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect(),
        }
    }

    /// Validates the table into a spec.
    pub fn validate(&self) -> Result<ArchiveSpec, String> {
        validate_absolute("name", &self.name)?;
        let format = Format::of(&self.name).ok_or_else(|| {
            format!(
                "name {:?} must end in .tar.gz, .tgz, .tar or .zip (the archive type)",
                self.name
            )
        })?;
        let url = self
            .url
            .as_deref()
            .filter(|url| !url.is_empty())
            .ok_or("url is required: set url = \"https://...\"")?;
        let shown_url = validate_url(url, format)?;
        let checksum = self
            .checksum
            .as_deref()
            .map(validate_checksum)
            .transpose()?;
        let has_userinfo = url_has_userinfo(url);
        match (&self.username, &self.password) {
            (None, Some(_)) => {
                return Err("password is set without username: set username too".to_string());
            }
            (Some(_), _) if has_userinfo => {
                return Err(
                    "the url carries user:password@ and username is set too: give the credentials once"
                        .to_string(),
                );
            }
            _ => {}
        }
        let basic_auth = self.username.is_some() || has_userinfo;
        for (name, value) in &self.headers {
            validate_header(name, value)?;
            if basic_auth && name.eq_ignore_ascii_case("authorization") {
                return Err(
                    "headers sets Authorization and basic auth is configured too: use one"
                        .to_string(),
                );
            }
        }
        let extract_parent = self
            .extract_parent
            .as_deref()
            .map(|path| validate_absolute("extract_parent", path).map(|()| path.to_string()))
            .transpose()?;
        let creates = self
            .creates
            .as_deref()
            .map(|path| validate_absolute("creates", path).map(|()| path.to_string()))
            .transpose()?;
        if self.cleanup && (extract_parent.is_none() || creates.is_none()) {
            return Err(
                "cleanup = true requires extract_parent and creates (creates tells later runs that the archive was extracted)"
                    .to_string(),
            );
        }
        let owner = required("owner", self.owner.as_deref())?;
        let group = required("group", self.group.as_deref())?;
        let ensure = Ensure::parse(self.ensure.as_deref())?;
        let timeout = match &self.timeout {
            None => DEFAULT_TIMEOUT,
            Some(text) => parse_duration(text)?,
        };
        let max_extract_size = match &self.max_extract_size {
            None => DEFAULT_MAX_EXTRACT_SIZE,
            Some(text) => parse_size(text)?,
        };
        let max_extract_entries = match self.max_extract_entries {
            None => DEFAULT_MAX_EXTRACT_ENTRIES,
            Some(0) => return Err("max_extract_entries must be more than 0".to_string()),
            Some(count) => count,
        };
        Ok(ArchiveSpec {
            name: self.name.clone(),
            format,
            shown_url,
            url_sha256: url_sha256(url),
            checksum,
            basic_auth,
            header_names: self.headers.keys().cloned().collect(),
            extract_parent,
            creates,
            cleanup: self.cleanup,
            owner,
            group,
            ensure,
            timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            keep_setuid: self.keep_setuid,
            max_extract_size,
            max_extract_entries,
            protect: false,
        })
    }
}

fn required(property: &str, value: Option<&str>) -> Result<String, String> {
    match value {
        Some(value) if !value.trim().is_empty() => Ok(value.to_string()),
        _ => Err(format!(
            "{property} is required: set {property} = \"NAME\" (a name or a numeric id)"
        )),
    }
}

/// Absolute and canonical: starts with `/`, no `.` or `..` components, no
/// trailing or doubled slashes.
pub fn validate_absolute(property: &str, path: &str) -> Result<(), String> {
    let canonical = path.starts_with('/')
        && (path == "/" || !path.ends_with('/'))
        && !path.contains("//")
        && Path::new(path)
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    if !canonical || path.contains('\0') {
        return Err(format!(
            "{property} {path:?} must be an absolute, canonical path (starting with /, without . or .. components)"
        ));
    }
    Ok(())
}

fn url_has_userinfo(url: &str) -> bool {
    has_userinfo(url)
}

/// Checks scheme, host and path ending; returns the URL with userinfo redacted.
pub fn validate_url(url: &str, format: Format) -> Result<String, String> {
    check_userinfo(url)?;
    let shown = redact_url(url);
    // Checked before parsing, so that file:// (which has no host to
    // parse) gets the same reason as ftp://.
    if let Some((scheme, _)) = url.split_once("://")
        && !matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https")
    {
        return Err(format!("url {shown:?} must use http or https"));
    }
    let parsed: ureq::http::Uri = strip_userinfo(url).parse().map_err(|err| {
        format!(
            "url {shown:?} is not a valid URL ({err}); write it as https://host/path/file{}",
            format.name()
        )
    })?;
    match parsed.scheme_str() {
        Some("http" | "https") => {}
        _ => {
            return Err(format!("url {shown:?} must use http or https"));
        }
    }
    if parsed.host().is_none_or(str::is_empty) {
        return Err(format!("url {shown:?} has no host"));
    }
    match Format::of(parsed.path()) {
        Some(url_format) if url_format == format => Ok(shown),
        Some(url_format) => Err(format!(
            "url {shown:?} is a {} archive but name is a {} archive: they must be the same type",
            url_format.name(),
            format.name()
        )),
        None => Err(format!(
            "url {shown:?}: its path must end in {} like name (the archive type)",
            format.name()
        )),
    }
}

fn strip_userinfo(url: &str) -> String {
    let Some(start) = url.find("://").map(|i| i + 3) else {
        return url.to_string();
    };
    let tail = &url[start..];
    let end = tail.find(['/', '?', '#']).unwrap_or(tail.len());
    match tail[..end].rfind('@') {
        Some(at) => format!("{}{}", &url[..start], &tail[at + 1..]),
        None => url.to_string(),
    }
}

fn validate_checksum(text: &str) -> Result<String, String> {
    let hex = text.trim().to_ascii_lowercase();
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "checksum {text:?} is not a SHA-256: write the 64 hex digits that sha256sum prints"
        ));
    }
    Ok(hex)
}

fn validate_header(name: &str, value: &str) -> Result<(), String> {
    if ureq::http::HeaderName::from_bytes(name.as_bytes()).is_err() {
        return Err(format!(
            "headers: {name:?} is not a valid header name (letters, digits and -)"
        ));
    }
    if ureq::http::HeaderValue::from_str(value).is_err() {
        let shown = if is_sensitive_header(name) {
            "(redacted)".to_string()
        } else {
            format!("{value:?}")
        };
        return Err(format!(
            "headers: the value of {name} {shown} is not a valid header value (no line breaks or control characters)"
        ));
    }
    Ok(())
}

/// Parses a Go-style duration: `90s`, `5m`, `1h30m`, `500ms`.
/// `max_extract_size`: a number of bytes with an optional unit, B, KB, MB,
/// GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let invalid = || {
        format!(
            "max_extract_size {text:?} is not a size: write it like \"500MiB\", \"100GiB\" or \"2TB\""
        )
    };
    let trimmed = text.trim();
    let digits = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let number: u64 = trimmed[..digits].parse().map_err(|_| invalid())?;
    let unit: u64 = match trimmed[digits..].trim() {
        "" | "B" => 1,
        "KB" => 1000,
        "MB" => 1000_u64.pow(2),
        "GB" => 1000_u64.pow(3),
        "TB" => 1000_u64.pow(4),
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "TiB" => 1 << 40,
        _ => return Err(invalid()),
    };
    match number.checked_mul(unit) {
        Some(0) => Err("max_extract_size must be more than 0".to_string()),
        Some(bytes) => Ok(bytes),
        None => Err(invalid()),
    }
}

pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let invalid =
        || format!("timeout {text:?} is not a duration: write it like 30s, 5m, 1h30m or 500ms");
    let mut rest = text.trim();
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total = Duration::ZERO;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .ok_or_else(invalid)?;
        let number: f64 = rest[..digits].parse().map_err(|_| invalid())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(invalid()),
        };
        rest = &rest[unit_len..];
        total += Duration::try_from_secs_f64(number * seconds).map_err(|_| invalid())?;
    }
    if total.is_zero() {
        return Err(format!("timeout {text:?} must be more than zero"));
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> ArchiveTable {
        ArchiveTable {
            name: "/opt/app.tar.gz".into(),
            url: Some("https://example.com/releases/app.tgz".into()),
            owner: Some("root".into()),
            group: Some("root".into()),
            ..ArchiveTable::default()
        }
    }

    fn error_of(change: impl FnOnce(&mut ArchiveTable)) -> String {
        let mut table = table();
        change(&mut table);
        table.validate().expect_err("invalid")
    }

    #[test]
    fn a_minimal_table_is_valid() {
        let spec = table().validate().expect("valid");
        assert_eq!(spec.format, Format::TarGz);
        assert_eq!(spec.ensure, Ensure::Present);
        assert_eq!(spec.timeout(), DEFAULT_TIMEOUT);
        assert!(!spec.basic_auth);
    }

    #[test]
    fn names_and_urls_must_agree_on_the_type() {
        assert!(error_of(|t| t.name = "opt/app.tar.gz".into()).contains("absolute"));
        assert!(error_of(|t| t.name = "/opt/../app.tar".into()).contains("canonical"));
        assert!(error_of(|t| t.name = "/opt/app.rar".into()).contains(".tar.gz, .tgz"));
        assert!(error_of(|t| t.url = Some("https://h/app.zip".into())).contains("same type"));
        assert!(error_of(|t| t.url = Some("ftp://h/app.tgz".into())).contains("http or https"));
        assert!(error_of(|t| t.url = Some("https://h/download".into())).contains("must end in"));
        assert!(error_of(|t| t.url = None).contains("url is required"));
    }

    #[test]
    fn credentials_stay_out_of_the_spec_and_errors() {
        let mut with_userinfo = table();
        with_userinfo.url = Some("https://deploy:hunter2@example.com/app.tar.gz".into());
        let spec = with_userinfo.validate().expect("valid");
        assert!(spec.basic_auth);
        let serialised = toml::to_string(&spec).expect("toml");
        assert!(!serialised.contains("hunter2"), "{serialised}");
        let message = error_of(|t| {
            t.url = Some("https://deploy:hunter2@example.com/app.zip".into());
        });
        assert!(!message.contains("hunter2"), "{message}");
        let message = error_of(|t| {
            t.headers.insert("X-Token".into(), "abc\ndef".into());
        });
        assert!(!message.contains("abc"), "{message}");
        assert!(error_of(|t| t.password = Some("x".into())).contains("without username"));
    }

    #[test]
    fn cleanup_needs_extract_parent_and_creates() {
        let message = error_of(|t| {
            t.cleanup = true;
            t.extract_parent = Some("/opt/app".into());
        });
        assert!(
            message.contains("requires extract_parent and creates"),
            "{message}"
        );
    }

    #[test]
    fn owner_group_and_ensure_are_checked() {
        assert!(error_of(|t| t.owner = None).contains("owner is required"));
        assert!(error_of(|t| t.group = Some(" ".into())).contains("group is required"));
        assert!(
            error_of(|t| t.ensure = Some("latest".into())).contains("\"present\" or \"absent\"")
        );
        assert!(error_of(|t| t.checksum = Some("abc".into())).contains("SHA-256"));
    }

    #[test]
    fn sizes_parse_with_decimal_and_binary_units() {
        assert_eq!(parse_size("500"), Ok(500));
        assert_eq!(parse_size("2KB"), Ok(2000));
        assert_eq!(parse_size("100GiB"), Ok(100 << 30));
        assert_eq!(parse_size(" 1 TiB "), Ok(1 << 40));
        for bad in ["", "1.5GiB", "10 gallons", "-1", "0", "99999999999999TiB"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_parse_like_go() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5m"), Ok(Duration::from_secs(90)));
        for bad in ["", "10", "5x", "m", "0s", "-1s"] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
    }
}
