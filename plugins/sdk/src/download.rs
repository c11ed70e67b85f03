//! HTTP(S) downloads to a file (feature `download`), shared by the archive
//! plugin and `holos pull`.
//!
//! A [`Download`] fetches one URL with ureq (rustls; `ALL_PROXY`,
//! `HTTPS_PROXY`, `HTTP_PROXY` and `NO_PROXY` honoured) into a temp file in
//! the target's own directory (a random `.NAME-XXXXXX`, or `NAME.part` with
//! [`Download::part_file`]). The temp file gets its owner before any byte
//! is written, the SHA-256 (and the expected digest, SHA-256 or SHA-512) is
//! computed while streaming, and only a verified file is renamed over the
//! target; on any failure the temp file is removed and the target is
//! untouched. Anything but a 200 response is an error.
//! [`Download::fetch_bytes`] fetches a small document (a checksum file)
//! into memory with the same client, timeouts and redaction.
//! Credentials (URL userinfo, basic auth, the values of auth headers) never
//! reach a message: every text this module produces goes through a
//! [`Redactor`].

use std::fs::{File, Permissions};
use std::io::{IsTerminal, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use sha2::{Digest, Sha256, Sha512};

use crate::error::{Error, Result};

/// The digest algorithms a download can be checked against (a crate of
/// its own, so that holos's compose model names them without this feature).
pub use holo_checksum::Algorithm;

/// Downloads at least this large (or of unknown size) get a progress bar
/// when stderr is a terminal.
const PROGRESS_THRESHOLD: u64 = 4 * 1024 * 1024;

/// Redirects followed before a download fails.
const MAX_REDIRECTS: u32 = 10;

/// The replacement for a secret in messages.
const REDACTED: &str = "***";

/// Header names whose values are credentials (compared case-insensitively;
/// a name containing one of the words counts too).
const SENSITIVE_HEADER_WORDS: &[&str] = &[
    "authorization",
    "cookie",
    "token",
    "secret",
    "password",
    "api-key",
    "apikey",
    "session",
    "auth",
];

/// Whether the value of header `name` is a credential to redact.
pub fn is_sensitive_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SENSITIVE_HEADER_WORDS
        .iter()
        .any(|word| name.contains(word))
}

/// Replaces known secrets in texts with `***`.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

impl Redactor {
    /// Adds a secret (empty ones are ignored). Its percent-encoded and
    /// base64 (`user:password`) forms are the caller's to add.
    pub fn add(&mut self, secret: impl Into<String>) {
        let secret = secret.into();
        if !secret.is_empty() && !self.secrets.contains(&secret) {
            self.secrets.push(secret);
            // Longest first, so that a secret containing another goes whole.
            self.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
    }

    /// `text` with URL userinfo, URL query strings and every secret
    /// replaced by `***`.
    pub fn redact(&self, text: &str) -> String {
        let mut text = redact_urls_in_text(text);
        for secret in &self.secrets {
            text = text.replace(secret.as_str(), REDACTED);
        }
        text
    }
}

/// `url` as it may be shown and stored: its userinfo (`user:password@`,
/// also one whose password holds an unencoded `/`, `?` or `#`) replaced by
/// `***@` and its query string (signed URLs carry their secret there) by
/// `?***`.
pub fn redact_url(url: &str) -> String {
    let Some(start) = url.find("://").map(|at| at + 3) else {
        return url.to_string();
    };
    let (scheme, tail) = url.split_at(start);
    let (userinfo_end, _) = userinfo_end(tail);
    let (mut out, rest) = match userinfo_end {
        Some(at) => (format!("{scheme}{REDACTED}@"), &tail[at + 1..]),
        None => (scheme.to_string(), tail),
    };
    let fragment = rest.find('#').unwrap_or(rest.len());
    match rest[..fragment].find('?') {
        Some(query) => {
            out.push_str(&rest[..=query]);
            out.push_str(REDACTED);
            out.push_str(&rest[fragment..]);
        }
        None => out.push_str(rest),
    }
    out
}

/// Whether `url` carries userinfo (`user:password@`), well-formed or not.
pub fn has_userinfo(url: &str) -> bool {
    url.find("://")
        .is_some_and(|at| userinfo_end(&url[at + 3..]).0.is_some())
}

/// Refuses a URL whose password holds an unencoded `/`, `?` or `#`: a URL
/// parser would take the password for the host and port, and the rest for
/// the path, and show it. The message holds the URL redacted and says how
/// to encode the password.
pub fn check_userinfo(url: &str) -> std::result::Result<(), String> {
    let malformed = url
        .find("://")
        .is_some_and(|at| userinfo_end(&url[at + 3..]).1);
    if malformed {
        return Err(format!(
            "url {:?}: the password holds an unencoded /, ? or #, which ends the host part of a URL; percent-encode it (/ as %2F, ? as %3F, # as %23, @ as %40, : as %3A, % as %25), or set username and password instead",
            redact_url(url)
        ));
    }
    Ok(())
}

/// The SHA-256 of `url` without its userinfo, lowercase hex: it tells a
/// changed URL (a new signature in the query string) from the same one
/// without storing the URL's secrets.
pub fn url_sha256(url: &str) -> String {
    let without_userinfo = match url.find("://") {
        Some(at) => match userinfo_end(&url[at + 3..]).0 {
            Some(end) => format!("{}{}", &url[..at + 3], &url[at + 3 + end + 1..]),
            None => url.to_string(),
        },
        None => url.to_string(),
    };
    hex(&Sha256::digest(without_userinfo.as_bytes()))
}

/// Where the userinfo of `tail` (a URL after `scheme://`) ends: the index
/// of its `@`, and whether it is malformed (a password with an unencoded
/// `/`, `?` or `#`, so that the `@` comes after the host part ends).
fn userinfo_end(tail: &str) -> (Option<usize>, bool) {
    let authority_end = tail.find(['/', '?', '#']).unwrap_or(tail.len());
    if let Some(at) = tail[..authority_end].rfind('@') {
        return (Some(at), false);
    }
    let Some(at) = tail.find('@') else {
        return (None, false);
    };
    // `user:pa/ss@host`: the "host" before the delimiter has a colon that
    // is not followed by a port number.
    let head = &tail[..authority_end.min(at)];
    match head.split_once(':') {
        Some((user, port))
            if !user.is_empty()
                && (port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit())) =>
        {
            (Some(at), true)
        }
        _ => (None, false),
    }
}

/// Every URL (`scheme://…` up to white space or a quote) in free text
/// redacted with [`redact_url`].
fn redact_urls_in_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at);
        out.push_str(head);
        let end = tail[3..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`'))
            .map_or(tail.len(), |end| end + 3);
        let redacted = redact_url(&format!("x{}", &tail[..end]));
        out.push_str(&redacted[1..]);
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// `(scheme://, userinfo, host...)` when the URL has userinfo.
fn split_userinfo(url: &str) -> Option<(&str, &str, &str)> {
    let start = url.find("://")? + 3;
    let tail = &url[start..];
    let at = userinfo_end(tail).0?;
    Some((&url[..start], &tail[..at], &tail[at + 1..]))
}

/// `scheme://host:port` of an absolute URL, lowercase, with the default
/// port filled in; `None` for anything else.
fn origin(url: &str) -> Option<(String, String, u16)> {
    let uri: ureq::http::Uri = url.parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let port = uri
        .port_u16()
        .unwrap_or(if scheme == "https" { 443 } else { 80 });
    Some((scheme, uri.host()?.to_ascii_lowercase(), port))
}

/// The absolute URL a `Location` header points to from `base`; `None`
/// when it is not http(s).
fn resolve_location(base: &str, location: &str) -> Option<String> {
    let location = location.trim();
    let lower = location.to_ascii_lowercase();
    let absolute = if lower.starts_with("http://") || lower.starts_with("https://") {
        location.to_string()
    } else if location.contains("://") {
        return None;
    } else {
        let scheme_end = base.find("://")? + 3;
        let authority_end = base[scheme_end..]
            .find(['/', '?', '#'])
            .map_or(base.len(), |end| scheme_end + end);
        if let Some(rest) = location.strip_prefix("//") {
            format!("{}{rest}", &base[..scheme_end])
        } else if location.starts_with('/') {
            format!("{}{location}", &base[..authority_end])
        } else {
            let path_end = base[authority_end..]
                .find(['?', '#'])
                .map_or(base.len(), |end| authority_end + end);
            let directory_end = base[authority_end..path_end]
                .rfind('/')
                .map_or(authority_end, |slash| authority_end + slash);
            format!("{}/{location}", &base[..directory_end])
        }
    };
    origin(&absolute).map(|_| absolute)
}

/// Decodes `%XX` escapes (userinfo is percent-encoded in URLs).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let hex = bytes
            .get(index + 1..index + 3)
            .and_then(|pair| std::str::from_utf8(pair).ok())
            .and_then(|pair| u8::from_str_radix(pair, 16).ok());
        match (bytes[index], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                index += 3;
            }
            (byte, _) => {
                out.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Why streaming a body into its temp file stopped.
enum CopyError {
    /// Reading the response failed after this many bytes.
    Fetch(std::io::Error, u64),
    /// Writing the temp file failed.
    Write(std::io::Error),
    /// The content is not the expected one (the message says how).
    Mismatch(String),
}

/// The result of a successful download.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Downloaded {
    /// SHA-256 of the content, lowercase hex.
    pub sha256: String,
    /// Bytes written.
    pub bytes: u64,
}

/// One download: build it, then [`Download::fetch`].
#[derive(Debug, Clone)]
pub struct Download {
    /// The URL without userinfo: what is requested.
    url: String,
    target: PathBuf,
    expected: Option<(Algorithm, String)>,
    part_file: bool,
    basic_auth: Option<(String, String)>,
    headers: Vec<(String, String)>,
    idle_timeout: Duration,
    timeout: Option<Duration>,
    uid: Option<u32>,
    gid: Option<u32>,
    mode: Option<u32>,
    progress: bool,
    redactor: Redactor,
}

impl Download {
    /// A download of `url` (`http` or `https`) to `target`, whose directory
    /// must exist. Userinfo in the URL becomes basic auth. Defaults: no
    /// checksum, 30 s idle timeout (also the connect timeout), 1 min overall
    /// timeout, mode of an existing target or 0644, progress bar on a
    /// terminal, a random temp file name.
    pub fn new(url: &str, target: impl Into<PathBuf>) -> Result<Download> {
        check_userinfo(url).map_err(|message| Error::new(format!("cannot download: {message}")))?;
        let mut redactor = Redactor::default();
        let (url, basic_auth) = match split_userinfo(url) {
            Some((scheme, userinfo, rest)) => {
                let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
                redactor.add(userinfo);
                redactor.add(password);
                (
                    format!("{scheme}{rest}"),
                    Some((percent_decode(user), percent_decode(password))),
                )
            }
            None => (url.to_string(), None),
        };
        let lower = url.to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
            return Err(Error::new(format!(
                "cannot download {}: only http:// and https:// URLs are supported",
                redactor.redact(&url)
            )));
        }
        let mut download = Download {
            url,
            target: target.into(),
            expected: None,
            part_file: false,
            basic_auth: None,
            headers: Vec::new(),
            idle_timeout: Duration::from_secs(30),
            timeout: Some(Duration::from_secs(60)),
            uid: None,
            gid: None,
            mode: None,
            progress: true,
            redactor,
        };
        if let Some((user, password)) = basic_auth {
            download = download.basic_auth(&user, &password);
        }
        Ok(download)
    }

    /// The expected SHA-256 (hex, any case); a mismatch fails the download.
    pub fn sha256(self, hex: &str) -> Self {
        self.digest(Algorithm::Sha256, hex)
    }

    /// The expected digest (hex, any case) in `algorithm`; a mismatch fails
    /// the download. It is computed in the same pass as the SHA-256.
    pub fn digest(mut self, algorithm: Algorithm, hex: &str) -> Self {
        self.expected = Some((algorithm, hex.trim().to_ascii_lowercase()));
        self
    }

    /// Downloads through `TARGET.part` instead of a random temp name, so
    /// that an interrupted download is visible as such. The caller makes
    /// sure that only one download of the target runs at a time (a lock);
    /// a `.part` left by a killed one is overwritten by the next.
    pub fn part_file(mut self, yes: bool) -> Self {
        self.part_file = yes;
        self
    }

    /// The path of the `.part` file used with [`Download::part_file`].
    pub fn part_path(&self) -> PathBuf {
        let mut name = self.target.as_os_str().to_os_string();
        name.push(".part");
        PathBuf::from(name)
    }

    /// Basic authentication.
    pub fn basic_auth(mut self, user: &str, password: &str) -> Self {
        self.redactor.add(password);
        let encoded =
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        self.redactor.add(encoded.clone());
        self.basic_auth = Some((user.to_string(), password.to_string()));
        self
    }

    /// A request header, sent as given. Values of auth-like headers
    /// ([`is_sensitive_header`]) are redacted from messages.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        if is_sensitive_header(name) {
            self.redactor.add(value);
            // `Bearer TOKEN`: the token alone may show up too.
            if let Some((_, token)) = value.split_once(' ') {
                self.redactor.add(token.trim());
            }
        }
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// The longest time without any data from the server.
    pub fn idle_timeout(mut self, limit: Duration) -> Self {
        self.idle_timeout = limit;
        self
    }

    /// The longest time for the whole download, connecting included.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// No limit for the whole download (large images on slow links); the
    /// idle timeout still ends a stalled one.
    pub fn no_overall_timeout(mut self) -> Self {
        self.timeout = None;
        self
    }

    /// Owner and group of the downloaded file (set before any content is written).
    pub fn owner(mut self, uid: Option<u32>, gid: Option<u32>) -> Self {
        self.uid = uid;
        self.gid = gid;
        self
    }

    /// Permission bits of the downloaded file.
    pub fn mode(mut self, mode: u32) -> Self {
        self.mode = Some(mode);
        self
    }

    /// Whether a progress bar may be shown (only ever on a terminal).
    pub fn progress(mut self, show: bool) -> Self {
        self.progress = show;
        self
    }

    /// The URL as it may be shown: userinfo and secrets redacted.
    pub fn shown_url(&self) -> String {
        self.redactor.redact(&self.url)
    }

    /// The redactor holding this download's secrets, for the caller's own messages.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// Fetches the URL into the target. On error the target is unchanged
    /// and no temp file is left behind.
    pub fn fetch(&self) -> Result<Downloaded> {
        self.fetch_inner()
            .map_err(|message| Error::new(self.redactor.redact(&message)))
    }

    fn fetch_inner(&self) -> std::result::Result<Downloaded, String> {
        let shown = self.shown_url();
        let target = &self.target;
        let cannot =
            |what: &str| format!("cannot download {shown} to {}: {what}", target.display());
        // What the server or the network did has nothing to do with the
        // target, which may be a caller's staging file with a random name.
        let cannot_fetch = |what: &str| format!("cannot download {shown}: {what}");
        let parent = match target.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        if !parent.is_dir() {
            return Err(cannot(&crate::atomic::missing_directory(parent)));
        }
        let response = self.get().map_err(|what| cannot_fetch(&what))?;
        let status = response.status();
        if status != ureq::http::StatusCode::OK {
            return Err(cannot_fetch(&format!(
                "the server answered {status} instead of 200 OK; check the URL{}",
                if status == 401 || status == 403 {
                    " and the credentials"
                } else {
                    ""
                }
            )));
        }
        let mut body = response.into_body();
        let length = body.content_length();
        let file_name = target
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut temp = self
            .create_temp(parent, &file_name)
            .map_err(|what| cannot(&what))?;
        let io_error = |err: std::io::Error| cannot(&err.to_string());
        let bar = self.progress_bar(length, &file_name);
        let copied = self.copy_body(&mut body.as_reader(), &mut temp, &bar);
        bar.finish_and_clear();
        let (sha256, bytes) = match copied {
            Ok(copied) => copied,
            Err(CopyError::Fetch(err, received)) => {
                return Err(cannot_fetch(&self.describe_cut(&err, received, length)));
            }
            Err(CopyError::Write(err)) => return Err(io_error(err)),
            Err(CopyError::Mismatch(what)) => return Err(cannot_fetch(&what)),
        };
        temp.as_file().sync_all().map_err(io_error)?;
        temp.persist(target).map_err(|err| io_error(err.error))?;
        if let Ok(dir) = File::open(parent) {
            // The rename is durable only once the directory is synced.
            let _ = dir.sync_all();
        }
        Ok(Downloaded { sha256, bytes })
    }

    /// The temp file the body goes to (the `.part` file, or a random one
    /// beside the target), with its owner and mode set before any byte is
    /// written. The error says what failed.
    fn create_temp(
        &self,
        parent: &Path,
        file_name: &str,
    ) -> std::result::Result<tempfile::NamedTempFile, String> {
        let temp = if self.part_file {
            let part = self.part_path();
            let file = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&part)
                .map_err(|err| format!("cannot create {}: {err}", part.display()))?;
            let path = tempfile::TempPath::try_from_path(&part)
                .map_err(|err| format!("cannot use {}: {err}", part.display()))?;
            tempfile::NamedTempFile::from_parts(file, path)
        } else {
            let prefix = format!(".{file_name}-");
            remove_stale_temp_files(parent, &prefix);
            tempfile::Builder::new()
                .prefix(&prefix)
                .tempfile_in(parent)
                .map_err(|err| {
                    format!("cannot create a temp file in {}: {err}", parent.display())
                })?
        };
        let mode = self.mode.unwrap_or_else(|| {
            std::fs::metadata(&self.target).map_or(0o644, |meta| meta.permissions().mode() & 0o7777)
        });
        if self.uid.is_some() || self.gid.is_some() {
            std::os::unix::fs::fchown(temp.as_file(), self.uid, self.gid)
                .map_err(|err| err.to_string())?;
        }
        temp.as_file()
            .set_permissions(Permissions::from_mode(mode))
            .map_err(|err| err.to_string())?;
        Ok(temp)
    }

    /// Streams the body into `temp`, hashing it on the way, and checks the
    /// expected digest: the SHA-256 and the byte count.
    fn copy_body(
        &self,
        reader: &mut dyn Read,
        temp: &mut tempfile::NamedTempFile,
        bar: &indicatif::ProgressBar,
    ) -> std::result::Result<(String, u64), CopyError> {
        let mut hasher = Sha256::new();
        let mut sha512 = matches!(self.expected, Some((Algorithm::Sha512, _))).then(Sha512::new);
        let mut bytes = 0u64;
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            let read = match reader.read(&mut buffer) {
                Ok(0) => break,
                Ok(read) => read,
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(CopyError::Fetch(err, bytes)),
            };
            hasher.update(&buffer[..read]);
            if let Some(sha512) = &mut sha512 {
                sha512.update(&buffer[..read]);
            }
            temp.write_all(&buffer[..read]).map_err(CopyError::Write)?;
            bytes += read as u64;
            bar.inc(read as u64);
        }
        let sha256 = hex(&hasher.finalize());
        if let Some((algorithm, expected)) = &self.expected {
            let got = match sha512 {
                Some(sha512) => hex(&sha512.finalize()),
                None => sha256.clone(),
            };
            if *expected != got {
                let name = match algorithm {
                    Algorithm::Sha256 => "checksum",
                    Algorithm::Sha512 => "sha512 checksum",
                };
                return Err(CopyError::Mismatch(format!(
                    "{name} mismatch, expected {expected:?} got {got:?}; nothing was written"
                )));
            }
        }
        Ok((sha256, bytes))
    }

    /// GETs the URL, following at most [`MAX_REDIRECTS`] redirects. A
    /// redirect to another origin (scheme, host or port) drops basic auth
    /// and every header this download set, for that request and all later
    /// ones: a mirror never sees the credentials of the first server.
    fn get(&self) -> std::result::Result<ureq::http::Response<ureq::Body>, String> {
        let agent = self.agent();
        let mut url = self.url.clone();
        let mut credentials = true;
        for _ in 0..=MAX_REDIRECTS {
            let response = self
                .request(&agent, &url, credentials)
                .call()
                .map_err(|err| self.describe(&err))?;
            if !response.status().is_redirection() {
                return Ok(response);
            }
            let Some(location) = response
                .headers()
                .get("location")
                .and_then(|value| value.to_str().ok())
            else {
                return Ok(response);
            };
            let next = resolve_location(&url, location).ok_or_else(|| {
                format!(
                    "the server redirected to {:?}, which is not an http or https URL",
                    redact_url(location)
                )
            })?;
            if origin(&next) != origin(&url) {
                credentials = false;
            }
            url = next;
        }
        Err(format!(
            "more than {MAX_REDIRECTS} redirects; check the URL"
        ))
    }

    fn agent(&self) -> ureq::Agent {
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .proxy(ureq::Proxy::try_from_env())
            .timeout_global(self.timeout)
            .timeout_connect(Some(self.idle_timeout))
            .timeout_per_read(Some(self.idle_timeout))
            .user_agent(concat!("holo/", env!("CARGO_PKG_VERSION")))
            .build()
            .into()
    }

    /// The GET request of `url`, with the credentials and headers when
    /// `credentials` is true.
    fn request(
        &self,
        agent: &ureq::Agent,
        url: &str,
        credentials: bool,
    ) -> ureq::RequestBuilder<ureq::typestate::WithoutBody> {
        let mut request = agent.get(url);
        if !credentials {
            return request;
        }
        if let Some((user, password)) = &self.basic_auth {
            let encoded =
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
            request = request.header("Authorization", format!("Basic {encoded}"));
        }
        for (name, value) in &self.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        request
    }

    /// Fetches the URL into memory (a checksum file, an index): at most
    /// `limit` bytes, else an error. The target is not touched.
    pub fn fetch_bytes(&self, limit: u64) -> Result<Vec<u8>> {
        self.fetch_bytes_inner(limit)
            .map_err(|message| Error::new(self.redactor.redact(&message)))
    }

    fn fetch_bytes_inner(&self, limit: u64) -> std::result::Result<Vec<u8>, String> {
        let shown = self.shown_url();
        let cannot = |what: &str| format!("cannot download {shown}: {what}");
        let response = self.get().map_err(|what| cannot(&what))?;
        let status = response.status();
        if status != ureq::http::StatusCode::OK {
            return Err(cannot(&format!(
                "the server answered {status} instead of 200 OK; check the URL"
            )));
        }
        let mut body = Vec::new();
        response
            .into_body()
            .into_reader()
            .take(limit + 1)
            .read_to_end(&mut body)
            .map_err(|err| cannot(&self.describe_io(&err)))?;
        if body.len() as u64 > limit {
            return Err(cannot(&format!("it is larger than {limit} bytes")));
        }
        Ok(body)
    }

    fn progress_bar(&self, length: Option<u64>, file_name: &str) -> indicatif::ProgressBar {
        let large = length.is_none_or(|length| length >= PROGRESS_THRESHOLD);
        if !(self.progress && large && std::io::stderr().is_terminal()) {
            return indicatif::ProgressBar::hidden();
        }
        let bar = indicatif::ProgressBar::with_draw_target(
            length,
            indicatif::ProgressDrawTarget::stderr(),
        );
        let template = if length.is_some() {
            "{msg} {wide_bar} {bytes}/{total_bytes} {bytes_per_sec} {eta}"
        } else {
            "{msg} {spinner} {bytes} {bytes_per_sec}"
        };
        if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
            bar.set_style(style);
        }
        bar.set_message(self.redactor.redact(file_name));
        bar
    }

    fn describe(&self, err: &ureq::Error) -> String {
        match err {
            ureq::Error::Timeout(_) => self.timeout_text(),
            ureq::Error::Io(io) => self.describe_io(io),
            other => other.to_string(),
        }
    }

    fn describe_io(&self, err: &std::io::Error) -> String {
        if matches!(
            err.kind(),
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
        ) || err.to_string().contains("timeout")
        {
            return self.timeout_text();
        }
        err.to_string()
    }

    /// A body that ended early says how much of it came: ureq's own
    /// words ("Peer disconnected") do not.
    fn describe_cut(&self, err: &std::io::Error, received: u64, length: Option<u64>) -> String {
        let reason = self.describe_io(err);
        match length {
            Some(total) if received < total && !reason.starts_with("timed out") => format!(
                "the server closed the connection after {received} of {total} bytes ({reason}); try again, or check the server"
            ),
            _ => reason,
        }
    }

    fn timeout_text(&self) -> String {
        match self.timeout {
            Some(timeout) => format!(
                "timed out (no data for {} s, or more than {} s in all); raise the timeout or check the server",
                self.idle_timeout.as_secs_f64(),
                timeout.as_secs_f64()
            ),
            None => format!(
                "timed out (no data for {} s); raise the idle timeout or check the server",
                self.idle_timeout.as_secs_f64()
            ),
        }
    }
}

/// Removes temp files that a killed download left: `PREFIX` followed by
/// tempfile's six random characters. Best effort; holo runs one at a time.
fn remove_stale_temp_files(dir: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let stale = name
            .to_str()
            .and_then(|name| name.strip_prefix(prefix))
            .is_some_and(|suffix| {
                suffix.len() == 6 && suffix.bytes().all(|b| b.is_ascii_alphanumeric())
            });
        if stale && entry.file_type().is_ok_and(|kind| kind.is_file()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// SHA-256 of a file, lowercase hex.
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut file = File::open(path).map_err(|err| Error::io("read", path, &err))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(|err| Error::io("read", path, &err))?;
    Ok(hex(&hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_support::http::{Route, Seen, Server};

    /// A request as text, lowercased: `get /path` and one `name: value`
    /// line per header.
    fn raw(seen: &Seen) -> String {
        let mut text = format!("{} {} \n", seen.method, seen.path);
        for (name, value) in &seen.headers {
            text.push_str(&format!("{name}: {value}\n"));
        }
        text.to_ascii_lowercase()
    }

    fn sha(bytes: &[u8]) -> String {
        hex(&Sha256::digest(bytes))
    }

    #[test]
    fn redact_url_hides_userinfo_only() {
        assert_eq!(
            redact_url("https://deploy:s3cret@example.com/a.tar.gz"),
            "https://***@example.com/a.tar.gz"
        );
        assert_eq!(
            redact_url("https://example.com/a@b.tgz"),
            "https://example.com/a@b.tgz"
        );
        let mut redactor = Redactor::default();
        redactor.add("tok");
        redactor.add("token-123");
        assert_eq!(
            redactor.redact("see http://u:p@h/x with token-123 and tok"),
            "see http://***@h/x with *** and ***"
        );
    }

    #[test]
    fn percent_encoded_userinfo_is_decoded() {
        assert_eq!(percent_decode("p%40ss%3Aw"), "p@ss:w");
        assert_eq!(percent_decode("100%"), "100%");
    }

    #[test]
    fn downloads_verifies_and_sends_credentials() {
        let body = b"archive bytes".to_vec();
        let server = Server::start();
        server.serve("/a.tar", Route::body(body.clone()));
        let base = server.base.clone();
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("a.tar");
        let url = format!(
            "{}/a.tar",
            base.replace("http://", "http://deploy:pa%40ss@")
        );
        let download = Download::new(&url, &target)
            .expect("valid")
            .sha256(&sha(&body).to_uppercase())
            .header("X-Api-Token", "Bearer abc123");
        assert!(
            !download.shown_url().contains("pa"),
            "{}",
            download.shown_url()
        );
        let done = download.fetch().expect("download");
        assert_eq!(done.sha256, sha(&body));
        assert_eq!(done.bytes, body.len() as u64);
        assert_eq!(std::fs::read(&target).expect("read"), body);
        let requests: Vec<String> = server.requests().iter().map(raw).collect();
        let expected = base64::engine::general_purpose::STANDARD
            .encode("deploy:pa@ss")
            .to_ascii_lowercase();
        assert!(
            requests[0].contains(&format!("authorization: basic {expected}")),
            "{}",
            requests[0]
        );
        assert!(requests[0].contains("x-api-token: bearer abc123"));
        assert!(requests[0].starts_with("get /a.tar "), "{}", requests[0]);
    }

    #[test]
    fn mismatch_and_non_200_leave_the_target_alone() {
        // The server answers 404 for /missing.zip.
        let server = Server::start();
        server.serve("/a.zip", Route::body(b"new content".to_vec()));
        let base = server.base.clone();
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("a.zip");
        std::fs::write(&target, b"old").expect("old");
        let wanted = sha(b"something else");
        let err = Download::new(&format!("{base}/a.zip"), &target)
            .expect("valid")
            .sha256(&wanted)
            .fetch()
            .expect_err("mismatch");
        assert!(err.message().contains(&wanted), "{err}");
        assert!(err.message().contains(&sha(b"new content")), "{err}");
        // the target may be a caller's staging file: what the server did is
        // said without it
        let target_shown = target.display().to_string();
        assert!(!err.message().contains(&target_shown), "{err}");
        let err = Download::new(&format!("{base}/missing.zip"), &target)
            .expect("valid")
            .fetch()
            .expect_err("404");
        assert!(err.message().contains("404 Not Found"), "{err}");
        assert!(!err.message().contains(&target_shown), "{err}");
        assert_eq!(server.count("/missing.zip"), 1);
        assert_eq!(std::fs::read(&target).expect("read"), b"old");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|entry| entry.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["a.zip"], "no temp file is left");
    }

    #[test]
    fn temp_files_of_a_killed_download_are_removed() {
        let server = Server::start();
        let url = server.serve("/a.tar", Route::body(b"x".to_vec()));
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join(".a.tar-Ab12Cd"), b"partial").expect("leftover");
        std::fs::write(dir.path().join(".a.tar-keep-me"), b"not ours").expect("other");
        Download::new(&url, dir.path().join("a.tar"))
            .expect("valid")
            .fetch()
            .expect("download");
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|entry| entry.expect("entry").file_name())
            .collect();
        names.sort();
        assert_eq!(names, [".a.tar-keep-me", "a.tar"]);
    }

    #[test]
    fn idle_server_times_out_without_a_temp_file() {
        // Content-Length 100, 50 bytes, then nothing.
        let server = Server::start();
        let url = server.serve(
            "/slow.tar",
            Route {
                stall: true,
                ..Route::body(vec![b'p'; 100])
            },
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("slow.tar");
        let err = Download::new(&url, &target)
            .expect("valid")
            .idle_timeout(Duration::from_millis(300))
            .fetch()
            .expect_err("idle");
        assert!(err.message().contains("timed out"), "{err}");
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 0);
    }

    #[test]
    fn sha512_and_part_file_and_in_memory_fetches() {
        let body = b"image bytes".to_vec();
        let server = Server::start();
        server.serve("/disk.img", Route::body(body.clone()));
        server.serve("/SUMS", Route::body(b"abc  disk.img\n".to_vec()));
        let base = server.base.clone();
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("disk.img");
        let sha512 = hex(&Sha512::digest(&body));
        // A wrong SHA-512 fails and leaves neither the target nor the .part.
        let download = Download::new(&format!("{base}/disk.img"), &target)
            .expect("valid")
            .digest(Algorithm::Sha512, &sha512.replace('a', "b"))
            .part_file(true)
            .no_overall_timeout();
        assert_eq!(download.part_path(), dir.path().join("disk.img.part"));
        let err = download.fetch().expect_err("mismatch");
        assert!(err.message().contains("sha512 checksum mismatch"), "{err}");
        assert!(err.message().contains(&sha512), "{err}");
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 0);
        // The right one lands at the target, through the .part.
        let done = Download::new(&format!("{base}/disk.img"), &target)
            .expect("valid")
            .digest(Algorithm::Sha512, &sha512.to_uppercase())
            .part_file(true)
            .fetch()
            .expect("download");
        assert_eq!(done.sha256, sha(&body));
        assert_eq!(std::fs::read(&target).expect("read"), body);
        assert!(!dir.path().join("disk.img.part").exists());
        let memory = Download::new(&format!("{base}/SUMS"), "").expect("valid");
        assert_eq!(memory.fetch_bytes(100).expect("sums"), b"abc  disk.img\n");
        let err = memory.fetch_bytes(10).expect_err("too large");
        assert!(err.message().contains("larger than 10 bytes"), "{err}");
        assert_eq!(Algorithm::parse("SHA512"), Some(Algorithm::Sha512));
        assert_eq!(Algorithm::parse("md5"), None);
    }

    #[test]
    fn a_cross_origin_redirect_drops_every_header_the_download_set() {
        // Two ports on 127.0.0.1 are two origins.
        let mirror_server = Server::start();
        let mirror = mirror_server.serve("/a.tar?sig=s3cr3t", Route::body(b"payload".to_vec()));
        let first_server = Server::start();
        first_server.serve("/a.tar", Route::redirect("/moved/a.tar"));
        first_server.serve("/moved/a.tar", Route::redirect(mirror));
        let first = first_server.base.clone();
        let dir = tempfile::tempdir().expect("tempdir");
        let url = format!("{}/a.tar", first.replace("http://", "http://deploy:pw@"));
        Download::new(&url, dir.path().join("a.tar"))
            .expect("valid")
            .header("X-Api-Token", "tok-1")
            .header("PRIVATE-TOKEN", "tok-2")
            .header("X-JFrog-Art-Api", "tok-3")
            .header("X-Plain", "not-a-secret")
            .fetch()
            .expect("download");
        let first_requests: Vec<String> = first_server.requests().iter().map(raw).collect();
        let mirror_requests: Vec<String> = mirror_server.requests().iter().map(raw).collect();
        // The same-origin hop keeps them.
        let same_origin = first_requests[1].clone();
        assert!(
            same_origin.starts_with("get /moved/a.tar "),
            "{same_origin}"
        );
        for header in [
            "x-api-token: tok-1",
            "private-token: tok-2",
            "authorization: basic",
        ] {
            assert!(same_origin.contains(header), "{header} in {same_origin}");
        }
        let received = mirror_requests[0].clone();
        assert!(received.starts_with("get /a.tar?sig=s3cr3t "), "{received}");
        for secret in [
            "tok-1",
            "tok-2",
            "tok-3",
            "not-a-secret",
            "authorization",
            "cookie",
        ] {
            assert!(
                !received.contains(secret),
                "{secret} reached the mirror: {received}"
            );
        }
        assert_eq!(
            std::fs::read(dir.path().join("a.tar")).expect("read"),
            b"payload"
        );
    }

    #[test]
    fn redirect_loops_end_with_a_message() {
        let server = Server::start();
        let url = server.serve("/a.tar", Route::redirect("/a.tar"));
        let dir = tempfile::tempdir().expect("tempdir");
        let err = Download::new(&url, dir.path().join("a.tar"))
            .expect("valid")
            .fetch()
            .expect_err("loop");
        assert!(err.message().contains("more than 10 redirects"), "{err}");
        assert_eq!(server.count("/a.tar"), 11);
    }

    #[test]
    fn locations_resolve_against_the_request() {
        let base = "http://h:81/dir/a.tar?x=1";
        assert_eq!(
            resolve_location(base, "b.tar").as_deref(),
            Some("http://h:81/dir/b.tar")
        );
        assert_eq!(
            resolve_location(base, "/b.tar").as_deref(),
            Some("http://h:81/b.tar")
        );
        assert_eq!(
            resolve_location(base, "//m/b.tar").as_deref(),
            Some("http://m/b.tar")
        );
        assert_eq!(resolve_location(base, "ftp://m/b.tar"), None);
        assert_eq!(origin("http://H:80/x"), origin("http://h/y"));
        assert_ne!(origin("http://h/x"), origin("https://h/x"));
        assert_ne!(origin("http://h:81/x"), origin("http://h:82/x"));
    }

    #[test]
    fn passwords_with_unencoded_delimiters_are_refused_and_redacted() {
        for url in [
            "https://deploy:pa#ss@example.com/a.tgz",
            "https://deploy:pa?ss@example.com/a.tgz",
            "https://deploy:pa/ss@example.com/a.tgz",
        ] {
            let message = check_userinfo(url).expect_err(url);
            assert!(
                !message.contains("deploy") && !message.contains("ss@"),
                "{message}"
            );
            assert!(
                message.contains("%2F") && message.contains("%23"),
                "{message}"
            );
            assert_eq!(redact_url(url), "https://***@example.com/a.tgz");
            assert!(has_userinfo(url));
            let err = Download::new(url, "/tmp/x").expect_err(url);
            assert!(!err.message().contains("ss@"), "{err}");
            let text = Redactor::default().redact(&format!("see {url} now"));
            assert_eq!(text, "see https://***@example.com/a.tgz now");
        }
        // A port and an @ in the path are not userinfo.
        assert!(check_userinfo("https://example.com:8080/a@b.tgz").is_ok());
        assert!(check_userinfo("https://example.com/a.tgz?by=a@b").is_ok());
        assert!(check_userinfo("https://deploy:pa%2Fss@example.com/a.tgz").is_ok());
    }

    #[test]
    fn query_strings_are_redacted_and_urls_compared_by_hash() {
        let signed = "https://bucket.example/a.tgz?X-Amz-Signature=abc123&X-Amz-Expires=60";
        assert_eq!(redact_url(signed), "https://bucket.example/a.tgz?***");
        assert_eq!(
            redact_url("https://h/a.tgz?q=1#frag"),
            "https://h/a.tgz?***#frag"
        );
        assert_eq!(
            Redactor::default().redact(&format!("cannot download \"{signed}\": 403")),
            "cannot download \"https://bucket.example/a.tgz?***\": 403"
        );
        let other = signed.replace("abc123", "def456");
        assert_ne!(url_sha256(signed), url_sha256(&other));
        assert_eq!(
            url_sha256("https://u:p@h/a.tgz"),
            url_sha256("https://h/a.tgz"),
            "credentials are not part of the URL's identity"
        );
        let download = Download::new(signed, "/tmp/x").expect("valid");
        assert!(!download.shown_url().contains("abc123"));
    }

    #[test]
    fn a_file_in_the_way_of_the_target_directory_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("opt"), "a file").expect("write");
        let err = Download::new("http://127.0.0.1:9/a.tar", dir.path().join("opt/app/a.tar"))
            .expect("download")
            .fetch()
            .expect_err("a file is in the way");
        assert!(
            err.message().contains(&format!(
                "{} is a file, in the way of directory {}; move the file away",
                dir.path().join("opt").display(),
                dir.path().join("opt/app").display()
            )),
            "{err}"
        );
    }

    #[test]
    fn other_schemes_are_refused() {
        let err = Download::new("ftp://u:pw@h/a.tar", "/tmp/x").expect_err("ftp");
        assert!(err.message().contains("only http"), "{err}");
        assert!(!err.message().contains("pw"), "{err}");
    }
}
