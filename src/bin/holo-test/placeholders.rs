//! Placeholders: what holo-test puts into a case (the path of its root, the
//! address of the `http-root/` server, the checksums of what it serves) and
//! takes out of the outputs and the tree again (those, and the times of the
//! run), so that the expected files hold nothing that changes from run to
//! run or from one checkout to another.

use std::ops::RangeInclusive;

use sha2::{Digest, Sha256};

use crate::http::Served;

/// Replaced by `http://127.0.0.1:PORT` in the target and in `commands`.
pub const URL_PLACEHOLDER: &str = "@HOLO_TEST_HTTP@";
/// `@HOLO_TEST_SHA256:NAME@` is replaced by the SHA-256 of the served NAME.
const CHECKSUM_PREFIX: &str = "@HOLO_TEST_SHA256:";
/// `@HOLO_TEST_URL_SHA256:NAME@`: the SHA-256 of NAME's URL, which holds
/// the port, for state that a plugin keys by the URL.
const URL_CHECKSUM_PREFIX: &str = "@HOLO_TEST_URL_SHA256:";

/// Replaced by the absolute path of the case's `target/`, for state that a
/// plugin keeps with absolute paths below the root.
pub const ROOT_PLACEHOLDER: &str = "@HOLO_TEST_ROOT@";

/// The placeholders of a case and their values.
pub struct Placeholders {
    /// The absolute paths of `target/` (as given and with links resolved),
    /// longest first.
    roots: Vec<String>,
    /// The server of `http-root/`, when the case has one.
    http: Option<HttpValues>,
}

struct HttpValues {
    url: String,
    /// (placeholder, SHA-256 in lower-case hex), two per served file.
    checksums: Vec<(String, String)>,
}

impl Placeholders {
    /// `roots`: the absolute paths of `target/`, the first one the value of
    /// `@HOLO_TEST_ROOT@`; `http`: the server's URL and what it serves.
    pub fn new(mut roots: Vec<String>, http: Option<(String, &Served)>) -> Placeholders {
        let http = http.map(|(url, served)| {
            let mut checksums = Vec::new();
            for (name, body) in served {
                checksums.push((
                    format!("{CHECKSUM_PREFIX}{name}@"),
                    sha256_hex(body.as_slice()),
                ));
                checksums.push((
                    format!("{URL_CHECKSUM_PREFIX}{name}@"),
                    sha256_hex(format!("{url}/{name}").as_bytes()),
                ));
            }
            HttpValues { url, checksums }
        });
        let filled_root = roots.first().cloned().unwrap_or_default();
        roots.sort_by_key(|root| std::cmp::Reverse(root.len()));
        roots.dedup();
        roots.retain(|root| !root.is_empty());
        // the value that fill gives first, so that restore finds it first
        if let Some(at) = roots.iter().position(|root| *root == filled_root) {
            let root = roots.remove(at);
            roots.insert(0, root);
        }
        Placeholders { roots, http }
    }

    /// `text` with the placeholders replaced by their values; `Err` names
    /// a checksum placeholder for a file that `http-root/` does not serve.
    /// Without an `http-root/`, only `@HOLO_TEST_ROOT@` is replaced.
    pub fn fill(&self, text: &[u8]) -> Result<Vec<u8>, String> {
        let root = self.roots.first().map_or("", String::as_str);
        let mut result = replace(text, ROOT_PLACEHOLDER.as_bytes(), root.as_bytes());
        let Some(http) = &self.http else {
            return Ok(result);
        };
        result = replace(&result, URL_PLACEHOLDER.as_bytes(), http.url.as_bytes());
        for (placeholder, hex) in &http.checksums {
            result = replace(&result, placeholder.as_bytes(), hex.as_bytes());
        }
        for prefix in [CHECKSUM_PREFIX, URL_CHECKSUM_PREFIX] {
            if let Some(start) = find(&result, prefix.as_bytes()) {
                let rest = &result[start + prefix.len()..];
                let name = rest.split(|byte| *byte == b'@' || *byte == b'\n').next();
                return Err(format!(
                    "{prefix}{}@ names no file that http-root serves",
                    String::from_utf8_lossy(name.unwrap_or_default())
                ));
            }
        }
        Ok(result)
    }

    /// `text` with the values put back as placeholders, so that neither the
    /// case's place on disk nor the port (nor a checksum) shows in an
    /// expected file.
    pub fn restore(&self, text: &[u8]) -> Vec<u8> {
        let mut result = text.to_vec();
        for root in &self.roots {
            result = replace_path(&result, root.as_bytes(), ROOT_PLACEHOLDER.as_bytes());
        }
        let Some(http) = &self.http else {
            return result;
        };
        result = replace_whole(&result, http.url.as_bytes(), URL_PLACEHOLDER.as_bytes());
        for (placeholder, hex) in &http.checksums {
            result = replace_whole(&result, hex.as_bytes(), placeholder.as_bytes());
        }
        result
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

fn replace(text: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    replace_where(text, from, to, |_, _| true)
}

/// As `replace`, but only where no letter or digit is on either side of
/// `from`: port 4711 is not part of port 47110, nor a checksum part of a
/// longer hex string.
fn replace_whole(text: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let is_word = |byte: Option<&u8>| byte.is_some_and(|byte| byte.is_ascii_alphanumeric());
    replace_where(text, from, to, |before, after| {
        !is_word(before.last()) && !is_word(after.first())
    })
}

/// As `replace`, but only where `from` is a whole path: not inside a
/// longer name on either side (`/a/target` is not in `/a/target2` or in
/// `/b/a/target`).
fn replace_path(text: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let is_name = |byte: Option<&u8>| {
        byte.is_some_and(|byte| byte.is_ascii_alphanumeric() || b"._-~".contains(byte))
    };
    replace_where(text, from, to, |before, after| {
        !is_name(before.last()) && before.last() != Some(&b'/') && !is_name(after.first())
    })
}

fn replace_where(
    text: &[u8],
    from: &[u8],
    to: &[u8],
    fits: impl Fn(&[u8], &[u8]) -> bool,
) -> Vec<u8> {
    if from.is_empty() {
        return text.to_vec();
    }
    let mut result = Vec::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = find(rest, from) {
        let end = start + from.len();
        result.extend_from_slice(&rest[..start]);
        if fits(&result, &rest[end..]) {
            result.extend_from_slice(to);
        } else {
            result.extend_from_slice(from);
        }
        rest = &rest[end..];
    }
    result.extend_from_slice(rest);
    result
}

/// What a time during the case's run becomes in the outputs and the tree.
pub const TIME_PLACEHOLDER: &str = "@HOLO_TEST_TIME@";

/// `text` with each time in `window` (Unix seconds) replaced by
/// `TIME_PLACEHOLDER`: ten-digit Unix seconds, and `YYYY-MM-DD HH:MM:SS` or
/// `YYYY-MM-DDTHH:MM:SS` in UTC, each as a whole word. A plugin that keeps
/// when something ran (a one-off's record, a status comment) stays
/// testable, and a number outside the run is left alone.
pub fn restore_times(text: &[u8], window: &RangeInclusive<i64>) -> Vec<u8> {
    let mut result = Vec::with_capacity(text.len());
    let mut index = 0;
    while index < text.len() {
        let at_word_start = index == 0 || !text[index - 1].is_ascii_alphanumeric();
        if at_word_start
            && text[index].is_ascii_digit()
            && let Some(length) = time_at(&text[index..], window)
        {
            result.extend_from_slice(TIME_PLACEHOLDER.as_bytes());
            index += length;
            continue;
        }
        result.push(text[index]);
        index += 1;
    }
    result
}

/// The length of the time in `window` that `text` starts with, if any.
fn time_at(text: &[u8], window: &RangeInclusive<i64>) -> Option<usize> {
    let digits = text.iter().take_while(|byte| byte.is_ascii_digit()).count();
    if digits == 10 && !text.get(10).is_some_and(u8::is_ascii_alphabetic) {
        let seconds: i64 = std::str::from_utf8(&text[..10]).ok()?.parse().ok()?;
        return window.contains(&seconds).then_some(10);
    }
    const SHAPE: &[u8; 19] = b"0000-00-00 00:00:00";
    let candidate = text.get(..19)?;
    let shaped = candidate
        .iter()
        .zip(SHAPE)
        .enumerate()
        .all(|(at, (byte, shape))| match shape {
            b'0' => byte.is_ascii_digit(),
            b' ' => *byte == b' ' || *byte == b'T',
            _ => byte == shape && at != 10,
        });
    if !shaped || text.get(19).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    let mut written = String::from_utf8(candidate.to_vec()).ok()?;
    written.replace_range(10..11, " ");
    let time = chrono::NaiveDateTime::parse_from_str(&written, "%Y-%m-%d %H:%M:%S").ok()?;
    window.contains(&time.and_utc().timestamp()).then_some(19)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn served(files: &[(&str, &str)]) -> Served {
        files
            .iter()
            .map(|(name, body)| (name.to_string(), Arc::new(body.as_bytes().to_vec())))
            .collect()
    }

    #[test]
    fn placeholders_are_filled_and_restored() {
        let served = served(&[("app.tar.gz", "")]);
        let placeholders = Placeholders::new(
            vec!["/cases/a/target".to_string()],
            Some(("http://127.0.0.1:4711".to_string(), &served)),
        );
        let empty_sha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        let declared = b"url = \"@HOLO_TEST_HTTP@/app.tar.gz\"\nchecksum = \"@HOLO_TEST_SHA256:app.tar.gz@\"\n";
        let filled = placeholders.fill(declared).expect("fill");
        assert_eq!(
            String::from_utf8_lossy(&filled),
            format!("url = \"http://127.0.0.1:4711/app.tar.gz\"\nchecksum = \"{empty_sha256}\"\n")
        );
        assert_eq!(placeholders.restore(&filled), declared);
        let url_sha256 = sha256_hex(b"http://127.0.0.1:4711/app.tar.gz");
        assert_eq!(
            placeholders
                .fill(b"@HOLO_TEST_URL_SHA256:app.tar.gz@")
                .expect("fill"),
            url_sha256.as_bytes()
        );
        assert_eq!(
            placeholders.restore(format!("url_sha256 = \"{url_sha256}\"").as_bytes()),
            b"url_sha256 = \"@HOLO_TEST_URL_SHA256:app.tar.gz@\""
        );
        // other ports, longer hex strings and other text stay as they are
        let other =
            format!("http://127.0.0.1:47110 0{empty_sha256} {empty_sha256}0 @HOLO_TEST_HTTP");
        assert_eq!(placeholders.restore(other.as_bytes()), other.as_bytes());
        let error = placeholders
            .fill(b"@HOLO_TEST_SHA256:missing.zip@")
            .expect_err("an unknown name");
        assert!(
            error.contains("@HOLO_TEST_SHA256:missing.zip@ names no file"),
            "{error}"
        );
    }

    #[test]
    fn the_root_is_filled_and_restored_as_a_whole_path() {
        let placeholders = Placeholders::new(
            vec![
                "/work/cases/a/target".to_string(),
                "/real/cases/a/target".to_string(),
            ],
            None,
        );
        assert_eq!(
            placeholders
                .fill(b"files = [\"@HOLO_TEST_ROOT@/srv/x.yaml\"] @HOLO_TEST_HTTP@")
                .expect("fill"),
            b"files = [\"/work/cases/a/target/srv/x.yaml\"] @HOLO_TEST_HTTP@"
        );
        assert_eq!(
            String::from_utf8_lossy(&placeholders.restore(
                b"in /real/cases/a/target/srv and /work/cases/a/target: /work/cases/a/target2 /x/work/cases/a/target\n"
            )),
            "in @HOLO_TEST_ROOT@/srv and @HOLO_TEST_ROOT@: /work/cases/a/target2 /x/work/cases/a/target\n"
        );
    }

    #[test]
    fn times_of_the_run_become_a_placeholder() {
        // 2026-11-26 01:24:57 UTC and the two seconds after it
        let window = 1_795_656_297..=1_795_656_299;
        let text = b"at = 1795656298\nran at 2026-11-26 01:24:59 UTC\nat 2026-11-26T01:24:57Z\n\
            before 1795656296, after 2026-11-26 01:25:00, longer 17956562980 x1795656298 \
            1795656298s 2026-11-26 01:24:571\n";
        assert_eq!(
            String::from_utf8_lossy(&restore_times(text, &window)),
            "at = @HOLO_TEST_TIME@\nran at @HOLO_TEST_TIME@ UTC\nat @HOLO_TEST_TIME@Z\n\
            before 1795656296, after 2026-11-26 01:25:00, longer 17956562980 x1795656298 \
            1795656298s 2026-11-26 01:24:571\n"
        );
    }
}
