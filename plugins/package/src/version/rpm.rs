//! RPM version ordering: rpm's own `rpmvercmp` applied to epoch, version and
//! release, with `~` (sorts before everything) and `^` (sorts after the base
//! version but before any other addition).
//!
//! `compare` agrees with `rpm.labelCompare`: a missing epoch is 0, and a
//! missing release sorts before any release. `satisfies` is what dnf means by
//! `name-version`: a wanted version without a release matches every release.

use std::cmp::Ordering;
use std::fmt;

use super::deb::compare_digit_strings;

/// An `[epoch:]version[-release]` string split into its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evr<'a> {
    /// `None` when the string has no `epoch:` prefix (it then counts as 0).
    pub epoch: Option<&'a str>,
    pub version: &'a str,
    pub release: Option<&'a str>,
}

/// Splits at the first colon (when it follows digits) and the last hyphen,
/// the way rpm parses an EVR.
pub fn split(evr: &str) -> Evr<'_> {
    let (epoch, rest) = match evr.split_once(':') {
        Some((epoch, rest)) if epoch.bytes().all(|b| b.is_ascii_digit()) => (Some(epoch), rest),
        _ => (None, evr),
    };
    let (version, release) = match rest.rsplit_once('-') {
        Some((version, release)) => (version, Some(release)),
        None => (rest, None),
    };
    Evr {
        epoch,
        version,
        release,
    }
}

/// Orders two EVR strings as rpm's `labelCompare` does.
pub fn compare(a: &str, b: &str) -> Ordering {
    let (a, b) = (split(a), split(b));
    compare_epoch_version(&a, &b).then_with(|| match (a.release, b.release) {
        (Some(ra), Some(rb)) => rpmvercmp(ra, rb),
        (Some(_), None) => Ordering::Greater,
        (None, Some(_)) => Ordering::Less,
        (None, None) => Ordering::Equal,
    })
}

/// Whether the installed EVR is the wanted one; a wanted EVR without a
/// release (as in `dnf install name-1.0`) accepts any release.
pub fn satisfies(installed: &str, wanted: &str) -> bool {
    let (have, want) = (split(installed), split(wanted));
    compare_epoch_version(&have, &want) == Ordering::Equal
        && match want.release {
            None => true,
            Some(release) => rpmvercmp(have.release.unwrap_or(""), release) == Ordering::Equal,
        }
}

fn compare_epoch_version(a: &Evr<'_>, b: &Evr<'_>) -> Ordering {
    rpmvercmp(a.epoch.unwrap_or("0"), b.epoch.unwrap_or("0"))
        .then_with(|| rpmvercmp(a.version, b.version))
}

/// rpm's segment comparison. Separators are any bytes other than ASCII
/// letters, digits, `~` and `^`; numeric segments beat alphabetic ones.
pub fn rpmvercmp(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let is_separator = |c: &u8| !c.is_ascii_alphanumeric() && *c != b'~' && *c != b'^';
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        while a.get(i).is_some_and(is_separator) {
            i += 1;
        }
        while b.get(j).is_some_and(is_separator) {
            j += 1;
        }
        let (ca, cb) = (a.get(i).copied(), b.get(j).copied());
        if ca == Some(b'~') || cb == Some(b'~') {
            if ca != Some(b'~') {
                return Ordering::Greater;
            }
            if cb != Some(b'~') {
                return Ordering::Less;
            }
            i += 1;
            j += 1;
            continue;
        }
        if ca == Some(b'^') || cb == Some(b'^') {
            match (ca, cb) {
                (None, _) => return Ordering::Less,
                (_, None) => return Ordering::Greater,
                (Some(x), _) if x != b'^' => return Ordering::Greater,
                (_, Some(y)) if y != b'^' => return Ordering::Less,
                _ => {}
            }
            i += 1;
            j += 1;
            continue;
        }
        let Some(first) = ca else { break };
        if cb.is_none() {
            break;
        }
        let numeric = first.is_ascii_digit();
        let in_segment = |c: &u8| {
            if numeric {
                c.is_ascii_digit()
            } else {
                c.is_ascii_alphabetic()
            }
        };
        let seg_a = segment(a, i, in_segment);
        let seg_b = segment(b, j, in_segment);
        i += seg_a.len();
        j += seg_b.len();
        if seg_b.is_empty() {
            // Segments of different kinds: the numeric one is newer.
            return if numeric {
                Ordering::Greater
            } else {
                Ordering::Less
            };
        }
        let by_segment = if numeric {
            compare_digit_strings(seg_a, seg_b)
        } else {
            seg_a.cmp(seg_b)
        };
        if by_segment != Ordering::Equal {
            return by_segment;
        }
    }
    match (i < a.len(), j < b.len()) {
        (false, false) => Ordering::Equal,
        (true, _) => Ordering::Greater,
        (false, true) => Ordering::Less,
    }
}

fn segment(bytes: &[u8], start: usize, in_segment: impl Fn(&u8) -> bool) -> &[u8] {
    let rest = bytes.get(start..).unwrap_or_default();
    let len = rest.iter().take_while(|c| in_segment(c)).count();
    &rest[..len]
}

/// Why a string is not a usable `[epoch:]version[-release]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidRpmVersion {
    pub version: String,
    pub reason: &'static str,
}

impl fmt::Display for InvalidRpmVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid RPM version {:?}: {} (expected [epoch:]version[-release], e.g. 1:2.0-3.fc39)",
            self.version, self.reason
        )
    }
}

impl std::error::Error for InvalidRpmVersion {}

/// Accepts what rpm accepts in a package's EVR: a numeric epoch, and a
/// version and release made of letters, digits and `._+~^`.
pub fn validate(evr: &str) -> Result<(), InvalidRpmVersion> {
    let fail = |reason| {
        Err(InvalidRpmVersion {
            version: evr.to_owned(),
            reason,
        })
    };
    if evr.is_empty() {
        return fail("version string is empty");
    }
    let rest = match evr.split_once(':') {
        Some((epoch, rest)) => {
            if epoch.is_empty() || !epoch.bytes().all(|b| b.is_ascii_digit()) {
                return fail("epoch is not a number");
            }
            rest
        }
        None => evr,
    };
    let allowed = |c: char| c.is_ascii_alphanumeric() || "._+~^".contains(c);
    let (version, release) = match rest.split_once('-') {
        Some((version, release)) => (version, Some(release)),
        None => (rest, None),
    };
    if version.is_empty() {
        return fail("version is empty");
    }
    if !version.chars().all(allowed) {
        return fail("invalid character in version (allowed: letters, digits and ._+~^)");
    }
    match release {
        Some("") => fail("release is empty"),
        Some(release) if !release.chars().all(allowed) => {
            fail("invalid character in release (allowed: letters, digits and ._+~^)")
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Ordering::{Equal, Greater, Less};

    #[test]
    fn rpmvercmp_matches_rpm_test_suite_examples() {
        let cases = [
            ("1.0", "1.0", Equal),
            ("1.0", "2.0", Less),
            ("2.0.1", "2.0.1a", Less),
            ("5.5p1", "5.5p10", Less),
            ("10xyz", "10.1xyz", Less),
            ("xyz10", "xyz10.1", Less),
            ("1.0", "1.0a", Less),
            ("1.0", "1.0~rc1", Greater),
            ("1.0~rc1", "1.0~rc2", Less),
            ("1.0~rc1~git123", "1.0~rc1", Less),
            ("1.0^", "1.0", Greater),
            ("1.0^git1", "1.0^git2", Less),
            ("1.0^git1", "1.01", Less),
            ("1.0^20160101", "1.0.1", Less),
            ("1.0~rc1^git1", "1.0~rc1", Greater),
            ("1.0^git1~pre", "1.0^git1", Less),
            ("a", "1", Less),
            ("1", "a", Greater),
            ("1.0", "1_0", Equal),
            ("010", "10", Equal),
            ("1.a", "1a", Equal),
            ("1.", "1", Equal),
        ];
        for (a, b, expected) in cases {
            assert_eq!(rpmvercmp(a, b), expected, "rpmvercmp({a}, {b})");
        }
    }

    #[test]
    fn epoch_wins_and_missing_release_sorts_first() {
        assert_eq!(compare("1:1.0-1", "2.0-1"), Greater);
        assert_eq!(compare("0:1.0-1", "1.0-1"), Equal);
        assert_eq!(compare("1.0", "1.0-1"), Less);
        assert_eq!(compare("5.8-9.el9", "5.8-10.el9"), Less);
    }

    #[test]
    fn wanted_version_without_release_accepts_any_release() {
        assert!(satisfies("5.8-9.el9", "5.8"));
        assert!(satisfies("1:5.8-9.el9", "1:5.8-9.el9"));
        assert!(!satisfies("1:5.8-9.el9", "5.8"));
        assert!(!satisfies("5.8-9.el9", "5.8-10.el9"));
    }

    #[test]
    fn validation_names_the_problem() {
        assert!(validate("1:2.0-3.fc39").is_ok());
        assert!(validate("1.0~rc1^git2").is_ok());
        let reason = |v: &str| validate(v).map_err(|e| e.reason).err();
        assert_eq!(reason(""), Some("version string is empty"));
        assert_eq!(reason("x:1"), Some("epoch is not a number"));
        assert_eq!(reason("-1"), Some("version is empty"));
        assert_eq!(reason("1.0-"), Some("release is empty"));
        assert!(validate("1.0-1-2").is_err());
        assert!(validate("1.0;ls").is_err());
    }
}
