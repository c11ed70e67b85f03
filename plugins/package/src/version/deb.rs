//! Debian version ordering and validation, as dpkg implements the Debian Policy.
//!
//! `compare` is lenient: it orders any two strings the way dpkg's `verrevcmp`
//! would, so that CCM's vectors (some of which dpkg rejects) still order.
//! `check_syntax` rejects what `dpkg --compare-versions` rejects, and
//! `validate_strict` also rejects what dpkg only warns about; `ensure` values
//! go through the strict check.

use std::cmp::Ordering;
use std::fmt;

/// A version split into epoch, upstream version and Debian revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DebVersion<'a> {
    /// Decimal digits of the epoch without leading zeros; empty means 0.
    pub epoch: &'a str,
    pub upstream: &'a str,
    /// Empty when the version has no revision, which orders like "0".
    pub revision: &'a str,
}

/// Splits a version the way dpkg does, without judging it: the epoch is
/// before the first colon (only when it is all digits), the revision after
/// the last hyphen.
pub fn split(version: &str) -> DebVersion<'_> {
    let (epoch, rest) = match version.split_once(':') {
        Some((epoch, rest)) if !epoch.is_empty() && epoch.bytes().all(|b| b.is_ascii_digit()) => {
            (epoch.trim_start_matches('0'), rest)
        }
        _ => ("", version),
    };
    let (upstream, revision) = match rest.rsplit_once('-') {
        Some((upstream, revision)) => (upstream, revision),
        None => (rest, ""),
    };
    DebVersion {
        epoch,
        upstream,
        revision,
    }
}

/// Orders two versions as `dpkg --compare-versions` does for valid input,
/// and deterministically for anything else.
pub fn compare(a: &str, b: &str) -> Ordering {
    let (a, b) = (split(a), split(b));
    compare_digit_strings(a.epoch.as_bytes(), b.epoch.as_bytes())
        .then_with(|| verrevcmp(a.upstream.as_bytes(), b.upstream.as_bytes()))
        .then_with(|| verrevcmp(a.revision.as_bytes(), b.revision.as_bytes()))
}

/// Compares two strings of decimal digits by value, however long they are.
pub(crate) fn compare_digit_strings(a: &[u8], b: &[u8]) -> Ordering {
    let skip_zeros = |s: &[u8]| s.iter().take_while(|&&c| c == b'0').count();
    let (a, b) = (&a[skip_zeros(a)..], &b[skip_zeros(b)..]);
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// dpkg's character weight: `~` first, then the end of the string, then
/// letters, then everything else.
fn order(byte: Option<&u8>) -> i32 {
    match byte {
        None => 0,
        Some(b) if b.is_ascii_digit() => 0,
        Some(b) if b.is_ascii_alphabetic() => i32::from(*b),
        Some(b'~') => -1,
        Some(b) => i32::from(*b) + 256,
    }
}

/// The Debian Policy string comparison: alternating non-digit parts
/// (compared by `order`) and digit parts (compared numerically).
fn verrevcmp(a: &[u8], b: &[u8]) -> Ordering {
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        while a.get(i).is_some_and(|c| !c.is_ascii_digit())
            || b.get(j).is_some_and(|c| !c.is_ascii_digit())
        {
            let (ac, bc) = (order(a.get(i)), order(b.get(j)));
            if ac != bc {
                return ac.cmp(&bc);
            }
            i += 1;
            j += 1;
        }
        let digits_a = digit_run(a, i);
        let digits_b = digit_run(b, j);
        i += digits_a.len();
        j += digits_b.len();
        let by_value = compare_digit_strings(digits_a, digits_b);
        if by_value != Ordering::Equal {
            return by_value;
        }
    }
    Ordering::Equal
}

fn digit_run(bytes: &[u8], start: usize) -> &[u8] {
    let rest = bytes.get(start..).unwrap_or_default();
    let len = rest.iter().take_while(|c| c.is_ascii_digit()).count();
    &rest[..len]
}

/// Why a string is not a valid Debian version (dpkg's own wording).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidDebVersion {
    pub version: String,
    pub reason: &'static str,
}

impl fmt::Display for InvalidDebVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid Debian version {:?}: {} (expected [epoch:]upstream[-revision], e.g. 1:2.0-3)",
            self.version, self.reason
        )
    }
}

impl std::error::Error for InvalidDebVersion {}

fn invalid(version: &str, reason: &'static str) -> InvalidDebVersion {
    InvalidDebVersion {
        version: version.to_owned(),
        reason,
    }
}

/// Rejects exactly what `dpkg --compare-versions` refuses as bad syntax.
pub fn check_syntax(version: &str) -> Result<(), InvalidDebVersion> {
    if version.trim().is_empty() {
        return Err(invalid(version, "version string is empty"));
    }
    let trimmed = version.trim_matches(|c: char| c.is_ascii_whitespace());
    if trimmed.contains(|c: char| c.is_ascii_whitespace()) {
        return Err(invalid(version, "version string has embedded spaces"));
    }
    let rest = match trimmed.split_once(':') {
        Some((epoch, rest)) => {
            if epoch.is_empty() {
                return Err(invalid(version, "epoch in version is empty"));
            }
            if !epoch.bytes().all(|b| b.is_ascii_digit()) {
                return Err(invalid(version, "epoch in version is not number"));
            }
            if epoch.parse::<i32>().is_err() {
                return Err(invalid(version, "epoch in version is too big"));
            }
            if rest.is_empty() {
                return Err(invalid(version, "nothing after colon in version number"));
            }
            rest
        }
        None => trimmed,
    };
    if let Some((upstream, revision)) = rest.rsplit_once('-') {
        if revision.is_empty() {
            return Err(invalid(version, "revision number is empty"));
        }
        if upstream.is_empty() {
            return Err(invalid(version, "version number is empty"));
        }
    }
    Ok(())
}

/// `check_syntax` plus the rules dpkg only warns about: the upstream version
/// starts with a digit, and only the characters Debian Policy allows occur.
pub fn validate_strict(version: &str) -> Result<(), InvalidDebVersion> {
    check_syntax(version)?;
    if version != version.trim() {
        return Err(invalid(version, "version string has surrounding spaces"));
    }
    let parts = split(version);
    if !parts.upstream.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(invalid(version, "version number does not start with digit"));
    }
    let upstream_ok = |c: char| c.is_ascii_alphanumeric() || ".-+~:".contains(c);
    if !parts.upstream.chars().all(upstream_ok) {
        return Err(invalid(version, "invalid character in version number"));
    }
    let revision_ok = |c: char| c.is_ascii_alphanumeric() || ".+~".contains(c);
    if !parts.revision.chars().all(revision_ok) {
        return Err(invalid(version, "invalid character in revision number"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use Ordering::{Equal, Greater, Less};

    #[test]
    fn orders_policy_examples() {
        assert_eq!(compare("1.0", "2.0"), Less);
        assert_eq!(compare("1:1.0", "2.0"), Greater);
        assert_eq!(compare("1.0~alpha", "1.0"), Less);
        assert_eq!(compare("1.0~alpha", "1.0~beta"), Less);
        assert_eq!(compare("1.0a", "1.0+"), Less, "letters before non-letters");
        assert_eq!(compare("1.0", "1.0-0"), Equal);
        assert_eq!(compare("0:1.0", "1.0"), Equal);
        assert_eq!(compare("1.9", "1.10"), Less);
        assert_eq!(compare("1.0+b1", "1.0"), Greater);
    }

    #[test]
    fn compares_huge_numbers_by_value() {
        assert_eq!(
            compare("99999999999999999999999", "100000000000000000000000"),
            Less
        );
        assert_eq!(compare("1.0001", "1.1"), Equal);
        assert_eq!(compare("99999999999:1", "100000000000:0"), Less);
    }

    #[test]
    fn splits_epoch_and_revision() {
        let parts = split("2:1.0.0+git-20190109-0ubuntu2");
        assert_eq!(parts.epoch, "2");
        assert_eq!(parts.upstream, "1.0.0+git-20190109");
        assert_eq!(parts.revision, "0ubuntu2");
    }

    #[test]
    fn syntax_check_matches_dpkg_errors() {
        assert!(check_syntax("1.0-1").is_ok());
        assert!(
            check_syntax("abc").is_ok(),
            "dpkg only warns about a letter start"
        );
        let reason = |v: &str| check_syntax(v).map_err(|e| e.reason).err();
        assert_eq!(reason(""), Some("version string is empty"));
        assert_eq!(reason("1 0"), Some("version string has embedded spaces"));
        assert_eq!(reason(":1"), Some("epoch in version is empty"));
        assert_eq!(reason("a:1"), Some("epoch in version is not number"));
        assert_eq!(reason("99999999999:1"), Some("epoch in version is too big"));
        assert_eq!(reason("1:"), Some("nothing after colon in version number"));
        assert_eq!(reason("1.0-"), Some("revision number is empty"));
        assert_eq!(reason("-1"), Some("version number is empty"));
    }

    #[test]
    fn strict_validation_rejects_dpkg_warnings() {
        assert!(validate_strict("2:9.0.1378-2").is_ok());
        assert!(validate_strict("1.0~rc1+dfsg-1~bpo12+1").is_ok());
        let reason = |v: &str| validate_strict(v).map_err(|e| e.reason).err();
        assert_eq!(
            reason("abc"),
            Some("version number does not start with digit")
        );
        assert_eq!(reason("1.0_1"), Some("invalid character in version number"));
        assert_eq!(
            reason("1.0-1_2"),
            Some("invalid character in revision number")
        );
        assert_eq!(reason("1;rm"), Some("invalid character in version number"));
    }

    #[test]
    fn error_message_names_version_and_format() {
        let message = validate_strict("x").map(|_| ()).unwrap_err().to_string();
        assert!(message.contains("\"x\""), "{message}");
        assert!(message.contains("[epoch:]upstream[-revision]"), "{message}");
    }
}
