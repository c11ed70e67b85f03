//! sprig's `semver` and `semverCompare` (Masterminds/semver's versions
//! and constraints, from its documentation): `=`, `!=`, `>`, `<`, `>=`,
//! `<=`, `~`, `^`, `x` wildcards, `A - B` ranges, `,` or space for "and",
//! `||` for "or"; a pre-release matches only a constraint that has one.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use gotmpl::{TemplateError, Value};

use super::{Func, arity, error, string, text};

pub const FUNCTIONS: &[(&str, Func)] = &[("semver", semver), ("semverCompare", semver_compare)];

/// A version; `given` counts the numbers written (the rest are wildcards).
#[derive(Debug, Clone, Default)]
struct Version {
    numbers: [u64; 3],
    given: usize,
    pre: String,
    meta: String,
}

fn parse(text: &str) -> Option<Version> {
    let text = text.trim();
    let text = text.strip_prefix(['v', 'V']).unwrap_or(text);
    let (rest, meta) = text.split_once('+').unwrap_or((text, ""));
    let (core, pre) = rest.split_once('-').unwrap_or((rest, ""));
    let mut version = Version {
        pre: pre.to_string(),
        meta: meta.to_string(),
        ..Version::default()
    };
    for (index, part) in core.split('.').enumerate() {
        if index >= 3 {
            return None;
        }
        if matches!(part, "x" | "X" | "*") {
            break;
        }
        version.numbers[index] = part.parse().ok()?;
        version.given = index + 1;
    }
    Some(version)
}

fn compare_pre(a: &str, b: &str) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        _ => {}
    }
    for (x, y) in a.split('.').zip(b.split('.')) {
        let order = match (x.parse::<u64>(), y.parse::<u64>()) {
            (Ok(x), Ok(y)) => x.cmp(&y),
            (Ok(_), Err(_)) => Ordering::Less,
            (Err(_), Ok(_)) => Ordering::Greater,
            _ => x.cmp(y),
        };
        if order != Ordering::Equal {
            return order;
        }
    }
    a.split('.').count().cmp(&b.split('.').count())
}

fn compare(a: &Version, b: &Version) -> Ordering {
    a.numbers
        .cmp(&b.numbers)
        .then_with(|| compare_pre(&a.pre, &b.pre))
}

/// The first `count` numbers of `v` and `c` compared.
fn compare_given(v: &Version, c: &Version, count: usize) -> Ordering {
    v.numbers[..count].cmp(&c.numbers[..count])
}

/// One bound's operator and version.
fn matches_one(operator: &str, c: &Version, v: &Version) -> bool {
    if !v.pre.is_empty() && c.pre.is_empty() {
        return false;
    }
    let given = c.given;
    match operator {
        "" | "=" => compare_given(v, c, given).is_eq() && (given < 3 || v.pre == c.pre),
        "!=" => !(compare_given(v, c, given).is_eq() && (given < 3 || v.pre == c.pre)),
        ">" if given < 3 => compare_given(v, c, given).is_gt(),
        ">" => compare(v, c).is_gt(),
        "<" => compare(v, c).is_lt(),
        ">=" | "=>" => compare(v, c).is_ge(),
        "<=" | "=<" if given < 3 => compare_given(v, c, given).is_le(),
        "<=" | "=<" => compare(v, c).is_le(),
        "~" | "~>" => {
            let (major, minor) = (c.numbers[0], c.numbers[1]);
            let upper = if given <= 1 {
                (major + 1, 0)
            } else {
                (major, minor + 1)
            };
            compare(v, c).is_ge() && (v.numbers[0], v.numbers[1]) < upper
        }
        "^" => {
            let upper = match (c.numbers, given) {
                ([0, 0, patch], 3) => [0, 0, patch + 1],
                ([0, minor, _], g) if g >= 2 && minor > 0 => [0, minor + 1, 0],
                ([0, 0, _], 2) => [0, 1, 0],
                ([major, _, _], _) => [major + 1, 0, 0],
            };
            compare(v, c).is_ge() && v.numbers < upper
        }
        _ => false,
    }
}

/// Whether `v` meets `constraint`; None if the constraint cannot be read.
fn meets(constraint: &str, v: &Version) -> Option<bool> {
    let mut any = false;
    for alternative in constraint.split("||") {
        let mut all = true;
        for (operator, version) in bounds(alternative)? {
            all &= matches_one(&operator, &version, v);
        }
        any |= all;
    }
    Some(any)
}

/// The bounds of one "and" group: `A - B` ranges and operator-version pairs.
fn bounds(group: &str) -> Option<Vec<(String, Version)>> {
    let words: Vec<&str> = group.split([' ', ',']).filter(|w| !w.is_empty()).collect();
    let mut found = Vec::new();
    let mut index = 0;
    while index < words.len() {
        if words.get(index + 1) == Some(&"-") {
            let low = parse(words[index])?;
            let high = parse(words.get(index + 2)?)?;
            found.push((">=".to_string(), low));
            found.push(("<=".to_string(), high));
            index += 3;
            continue;
        }
        let word = words[index];
        let split = word
            .find(|c: char| c.is_ascii_alphanumeric() || c == '*')
            .unwrap_or(word.len());
        let (operator, mut version) = (&word[..split], &word[split..]);
        if version.is_empty() {
            index += 1;
            version = words.get(index)?;
        }
        found.push((operator.to_string(), parse(version)?));
        index += 1;
    }
    Some(found)
}

fn semver(args: &[Value]) -> Result<Value, TemplateError> {
    arity("semver", args, 1)?;
    let written = text("semver", args, 0)?;
    let version = parse(written)
        .filter(|v| v.given > 0)
        .ok_or_else(|| error(format!("semver: {written:?} is not a semantic version")))?;
    let mut map: BTreeMap<Arc<str>, Value> = BTreeMap::new();
    for (name, number) in ["Major", "Minor", "Patch"].iter().zip(version.numbers) {
        map.insert(
            Arc::from(*name),
            Value::Int(i64::try_from(number).unwrap_or(i64::MAX)),
        );
    }
    map.insert(Arc::from("Prerelease"), string(version.pre));
    map.insert(Arc::from("Metadata"), string(version.meta));
    map.insert(Arc::from("Original"), string(written));
    Ok(Value::Map(map.into()))
}

fn semver_compare(args: &[Value]) -> Result<Value, TemplateError> {
    arity("semverCompare", args, 2)?;
    let (constraint, written) = (
        text("semverCompare", args, 0)?,
        text("semverCompare", args, 1)?,
    );
    let version = parse(written).filter(|v| v.given > 0).ok_or_else(|| {
        error(format!(
            "semverCompare: {written:?} is not a semantic version"
        ))
    })?;
    meets(constraint, &version).map(Value::Bool).ok_or_else(|| {
        error(format!(
            "semverCompare: cannot read the constraint {constraint:?}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constraints_as_masterminds_documents_them() {
        let rows = [
            ("^1.2.0", "1.2.3", true),
            ("^1.2.0", "2.0.0", false),
            ("^0.2.3", "0.2.9", true),
            ("^0.2.3", "0.3.0", false),
            ("~1.2.3", "1.2.9", true),
            ("~1.2.3", "1.3.0", false),
            (">2", "1.0.0", false),
            (">2", "3.0.0", true),
            (">= 1.2, < 3.0.0", "2.9.9", true),
            ("<1.0 || >=2.0", "1.5.0", false),
            ("1.2 - 1.4.5", "1.4.5", true),
            ("1.2.x", "1.2.7", true),
            ("!=1.2.3", "1.2.3", false),
            (">=1.0.0", "1.2.0-beta", false),
            (">=1.0.0-0", "1.2.0-beta", true),
        ];
        for (constraint, version, expected) in rows {
            let version = parse(version).expect("version");
            assert_eq!(
                meets(constraint, &version),
                Some(expected),
                "{constraint} {version:?}"
            );
        }
    }
}
