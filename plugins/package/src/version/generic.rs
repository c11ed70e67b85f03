//! CCM's generic `VersionCmp` (ported by CCM from Puppet's `versioncmp`),
//! kept for resources that ask for it. It is not RPM's ordering.
//!
//! Two deliberate differences from CCM's Go code, both where CCM's code and
//! its own design text disagree and the design text is followed:
//! - `ignore_trailing_zeroes` strips whole trailing `.0` segments only, so
//!   `10` stays `10` (CCM's regex turns it into `1`);
//! - digit segments compare by value however long they are (Go's `Atoi`
//!   saturates on overflow).

use std::cmp::Ordering;

use super::deb::compare_digit_strings;

/// Compares two arbitrary version strings; see the module documentation.
pub fn compare(a: &str, b: &str, ignore_trailing_zeroes: bool) -> Ordering {
    let (a, b) = if ignore_trailing_zeroes {
        (strip_trailing_zeroes(a), strip_trailing_zeroes(b))
    } else {
        (a.to_owned(), b.to_owned())
    };
    for (x, y) in tokens(&a).zip(tokens(&b)) {
        if x == y {
            continue;
        }
        if x == "-" {
            return Ordering::Less;
        }
        if y == "-" {
            return Ordering::Greater;
        }
        if x == "." {
            return Ordering::Less;
        }
        if y == "." {
            return Ordering::Greater;
        }
        let digits = |s: &str| s.bytes().all(|c| c.is_ascii_digit());
        if digits(x) && digits(y) && !x.starts_with('0') && !y.starts_with('0') {
            return compare_digit_strings(x.as_bytes(), y.as_bytes());
        }
        // A leading zero makes the comparison lexical; like Puppet, an
        // equal-ignoring-case pair ends the comparison as equal.
        return x.to_uppercase().cmp(&y.to_uppercase());
    }
    a.cmp(&b)
}

/// Splits into `-`, `.`, runs of ASCII digits and runs of anything else.
fn tokens(version: &str) -> impl Iterator<Item = &str> {
    let class = |c: char| match c {
        '-' | '.' => 0,
        '0'..='9' => 1,
        _ => 2,
    };
    let mut rest = version;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let len = if class(first) == 0 {
            1
        } else {
            rest.find(|c| class(c) != class(first))
                .unwrap_or(rest.len())
        };
        let (token, tail) = rest.split_at(len);
        rest = tail;
        Some(token)
    })
}

/// Removes trailing all-zero segments (`.0`, `.00`, a bare trailing `.`)
/// from the part before the first `-`: `1.0.0-rc1` becomes `1-rc1`.
pub fn strip_trailing_zeroes(version: &str) -> String {
    let (mut head, tail) = match version.split_once('-') {
        Some((head, tail)) => (head, Some(tail)),
        None => (version, None),
    };
    while let Some(dot) = head.rfind('.') {
        if !head[dot + 1..].bytes().all(|c| c == b'0') {
            break;
        }
        head = &head[..dot];
    }
    match tail {
        Some(tail) => format!("{head}-{tail}"),
        None => head.to_owned(),
    }
}

/// A version for the generic comparison must be non-empty and free of
/// whitespace and control characters.
pub fn validate(version: &str) -> Result<(), String> {
    if version.is_empty() {
        return Err("invalid version \"\": version string is empty".to_owned());
    }
    if version.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "invalid version {version:?}: contains whitespace or control characters; remove them"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use Ordering::{Equal, Greater, Less};

    #[test]
    fn tokenizes_like_puppet() {
        let all: Vec<&str> = tokens("1.10-rc2äb").collect();
        assert_eq!(all, ["1", ".", "10", "-", "rc", "2", "äb"]);
    }

    #[test]
    fn strips_only_zero_segments() {
        assert_eq!(strip_trailing_zeroes("1.0.0-rc1"), "1-rc1");
        assert_eq!(strip_trailing_zeroes("2.0.0"), "2");
        assert_eq!(strip_trailing_zeroes("10"), "10");
        assert_eq!(strip_trailing_zeroes("10.0"), "10");
        assert_eq!(strip_trailing_zeroes("1.00."), "1");
        assert_eq!(strip_trailing_zeroes("1.0-1.0"), "1-1.0");
    }

    #[test]
    fn seed_examples() {
        assert_eq!(compare("1.10", "1.9", false), Greater);
        assert_eq!(compare("1.0", "1.0.1", false), Less);
        assert_eq!(compare("1.0a", "1.0b", false), Less);
        assert_eq!(compare("1.0.0", "1.0", false), Greater);
        assert_eq!(compare("1.0.0", "1.0", true), Equal);
        assert_eq!(compare("10", "1", true), Greater);
    }

    #[test]
    fn case_insensitive_match_ends_as_equal() {
        assert_eq!(compare("1.0.ALPHA.2", "1.0.alpha.1", false), Equal);
    }

    #[test]
    fn validation_rejects_empty_and_whitespace() {
        assert!(validate("1.0").is_ok());
        assert!(validate("").is_err());
        assert!(validate("1 0").is_err());
    }
}
