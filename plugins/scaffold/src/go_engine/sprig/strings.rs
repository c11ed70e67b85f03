//! sprig's string functions.

use gotmpl::{TemplateError, Value};

use super::super::budget;
use super::{Func, arity, at_least, int, string, strval, text};

pub const FUNCTIONS: &[(&str, Func)] = &[
    ("hello", |_| Ok(string("Hello!"))),
    ("upper", |a| one("upper", a, str::to_uppercase)),
    ("lower", |a| one("lower", a, str::to_lowercase)),
    ("title", |a| one("title", a, |s| each_word(s, true))),
    ("untitle", |a| one("untitle", a, |s| each_word(s, false))),
    ("swapcase", |a| one("swapcase", a, swapcase)),
    ("trim", |a| one("trim", a, |s| s.trim().to_string())),
    ("nospace", |a| {
        one("nospace", a, |s| s.split_whitespace().collect())
    }),
    ("initials", |a| one("initials", a, initials)),
    ("snakecase", |a| one("snakecase", a, |s| separated(s, '_'))),
    ("kebabcase", |a| one("kebabcase", a, |s| separated(s, '-'))),
    ("camelcase", |a| one("camelcase", a, camelcase)),
    ("trimAll", |a| {
        two("trimAll", a, |cut, s| {
            s.trim_matches(|c| cut.contains(c)).to_string()
        })
    }),
    ("trimall", |a| {
        two("trimall", a, |cut, s| {
            s.trim_matches(|c| cut.contains(c)).to_string()
        })
    }),
    ("trimSuffix", |a| {
        two("trimSuffix", a, |x, s| {
            s.strip_suffix(x).unwrap_or(s).to_string()
        })
    }),
    ("trimPrefix", |a| {
        two("trimPrefix", a, |x, s| {
            s.strip_prefix(x).unwrap_or(s).to_string()
        })
    }),
    ("contains", |a| test("contains", a, |x, s| s.contains(x))),
    ("hasPrefix", |a| {
        test("hasPrefix", a, |x, s| s.starts_with(x))
    }),
    ("hasSuffix", |a| test("hasSuffix", a, |x, s| s.ends_with(x))),
    ("repeat", repeat),
    ("substr", substr),
    ("trunc", trunc),
    ("abbrev", abbrev),
    ("abbrevboth", abbrevboth),
    ("quote", |a| Ok(string(quoted(a, |s| format!("{s:?}"))))),
    ("squote", |a| Ok(string(quoted(a, |s| format!("'{s}'"))))),
    ("cat", cat),
    ("indent", |a| indent("indent", a).map(string)),
    ("nindent", |a| {
        indent("nindent", a).map(|s| string(format!("\n{s}")))
    }),
    ("replace", replace),
    ("plural", plural),
    ("wrap", |a| wrap("wrap", a, 0)),
    ("wrapWith", |a| wrap("wrapWith", a, 1)),
    ("toString", |a| {
        arity("toString", a, 1).map(|()| string(strval(&a[0])))
    }),
];

fn one(name: &str, args: &[Value], f: fn(&str) -> String) -> Result<Value, TemplateError> {
    arity(name, args, 1)?;
    Ok(string(f(text(name, args, 0)?)))
}

fn two(name: &str, args: &[Value], f: fn(&str, &str) -> String) -> Result<Value, TemplateError> {
    arity(name, args, 2)?;
    Ok(string(f(text(name, args, 0)?, text(name, args, 1)?)))
}

fn test(name: &str, args: &[Value], f: fn(&str, &str) -> bool) -> Result<Value, TemplateError> {
    arity(name, args, 2)?;
    Ok(Value::Bool(f(text(name, args, 0)?, text(name, args, 1)?)))
}

/// Go's `strings.Title` (true) or sprig's `untitle` (false): the first
/// letter of each word.
fn each_word(s: &str, upper: bool) -> String {
    let mut out = String::new();
    let mut at_start = true;
    for c in s.chars() {
        if at_start && !c.is_whitespace() {
            if upper {
                out.extend(c.to_uppercase());
            } else {
                out.extend(c.to_lowercase());
            }
        } else {
            out.push(c);
        }
        at_start = c.is_whitespace() || (upper && !c.is_alphanumeric() && c != '\'' && c != '_');
    }
    out
}

fn swapcase(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            if c.is_uppercase() {
                c.to_lowercase().collect::<Vec<_>>()
            } else {
                c.to_uppercase().collect()
            }
        })
        .collect()
}

fn initials(s: &str) -> String {
    s.split_whitespace()
        .filter_map(|word| word.chars().next())
        .collect()
}

/// xstrings' snake and kebab case: words split at case changes, spaces,
/// `_` and `-`, lower-cased and joined with `separator`.
fn separated(s: &str, separator: char) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::new();
    for (index, &c) in chars.iter().enumerate() {
        if matches!(c, '_' | '-' | ' ' | '.') {
            if !out.is_empty() && !out.ends_with(separator) {
                out.push(separator);
            }
            continue;
        }
        if c.is_uppercase() && index > 0 {
            let previous = chars[index - 1];
            let next_lower = chars.get(index + 1).is_some_and(|n| n.is_lowercase());
            let boundary = previous.is_lowercase()
                || previous.is_ascii_digit()
                || (previous.is_uppercase() && next_lower);
            if boundary && !out.ends_with(separator) {
                out.push(separator);
            }
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// xstrings' camel case: words split at `_`, `-` and spaces, each
/// capitalised.
fn camelcase(s: &str) -> String {
    s.split(['_', '-', ' '])
        .filter(|word| !word.is_empty())
        .map(|word| {
            let mut chars = word.chars();
            chars
                .next()
                .map(|first| first.to_uppercase().chain(chars).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

fn repeat(args: &[Value]) -> Result<Value, TemplateError> {
    arity("repeat", args, 2)?;
    let count = usize::try_from(int(&args[0])).unwrap_or(0);
    let s = text("repeat", args, 1)?;
    budget::allow("repeat", s.len().saturating_mul(count))?;
    Ok(string(s.repeat(count)))
}

/// A byte range of `s` clamped to it and to character boundaries.
fn bytes(s: &str, start: usize, end: usize) -> String {
    String::from_utf8_lossy(
        &s.as_bytes()[start.min(s.len())..end.min(s.len()).max(start.min(s.len()))],
    )
    .into_owned()
}

fn substr(args: &[Value]) -> Result<Value, TemplateError> {
    arity("substr", args, 3)?;
    let (start, end, s) = (int(&args[0]), int(&args[1]), text("substr", args, 2)?);
    let len = s.len() as i64;
    let out = if start < 0 {
        bytes(s, 0, usize::try_from(end.clamp(0, len)).unwrap_or(0))
    } else if end < 0 || end > len {
        bytes(s, usize::try_from(start).unwrap_or(0), s.len())
    } else {
        bytes(
            s,
            usize::try_from(start).unwrap_or(0),
            usize::try_from(end).unwrap_or(0),
        )
    };
    Ok(string(out))
}

fn trunc(args: &[Value]) -> Result<Value, TemplateError> {
    arity("trunc", args, 2)?;
    let (count, s) = (int(&args[0]), text("trunc", args, 1)?);
    let len = s.len() as i64;
    let out = if count < 0 && len + count > 0 {
        bytes(s, usize::try_from(len + count).unwrap_or(0), s.len())
    } else if count >= 0 && len > count {
        bytes(s, 0, usize::try_from(count).unwrap_or(0))
    } else {
        s.to_string()
    };
    Ok(string(out))
}

fn abbreviate(s: &str, width: usize) -> String {
    if width < 4 || s.len() <= width {
        return s.to_string();
    }
    format!("{}...", bytes(s, 0, width - 3))
}

fn abbrev(args: &[Value]) -> Result<Value, TemplateError> {
    arity("abbrev", args, 2)?;
    let width = usize::try_from(int(&args[0])).unwrap_or(0);
    Ok(string(abbreviate(text("abbrev", args, 1)?, width)))
}

/// goutils' `AbbreviateFull(s, offset, width)`.
fn abbrevboth(args: &[Value]) -> Result<Value, TemplateError> {
    arity("abbrevboth", args, 3)?;
    let mut offset = usize::try_from(int(&args[0])).unwrap_or(0);
    let width = usize::try_from(int(&args[1])).unwrap_or(0);
    let s = text("abbrevboth", args, 2)?;
    if width < 4 || s.len() <= width {
        return Ok(string(s));
    }
    offset = offset.min(s.len());
    if s.len() - offset < width - 3 {
        offset = s.len() - (width - 3);
    }
    if offset <= 4 {
        return Ok(string(format!("{}...", bytes(s, 0, width - 3))));
    }
    if width < 7 {
        return Ok(string(s));
    }
    if offset + width - 3 < s.len() {
        return Ok(string(format!(
            "...{}",
            abbreviate(&bytes(s, offset, s.len()), width - 3)
        )));
    }
    Ok(string(format!(
        "...{}",
        bytes(s, s.len() - (width - 3), s.len())
    )))
}

fn quoted(args: &[Value], f: fn(&str) -> String) -> String {
    args.iter()
        .filter(|arg| !matches!(arg, Value::Nil))
        .map(|arg| f(&strval(arg)))
        .collect::<Vec<_>>()
        .join(" ")
}

fn cat(args: &[Value]) -> Result<Value, TemplateError> {
    Ok(string(quoted(args, str::to_string)))
}

fn indent(name: &str, args: &[Value]) -> Result<String, TemplateError> {
    arity(name, args, 2)?;
    let pad = " ".repeat(usize::try_from(int(&args[0])).unwrap_or(0).min(1 << 16));
    let s = text(name, args, 1)?;
    let lines = s.matches('\n').count() + 1;
    budget::allow(
        name,
        s.len().saturating_add(lines.saturating_mul(pad.len())),
    )?;
    Ok(format!("{pad}{}", s.replace('\n', &format!("\n{pad}"))))
}

fn replace(args: &[Value]) -> Result<Value, TemplateError> {
    arity("replace", args, 3)?;
    let (old, new, s) = (
        text("replace", args, 0)?,
        text("replace", args, 1)?,
        text("replace", args, 2)?,
    );
    if new.len() > old.len() {
        let found = if old.is_empty() {
            s.chars().count() + 1
        } else {
            s.matches(old).count()
        };
        let grown = found.saturating_mul(new.len() - old.len());
        budget::allow("replace", s.len().saturating_add(grown))?;
    }
    Ok(string(s.replace(old, new)))
}

fn plural(args: &[Value]) -> Result<Value, TemplateError> {
    arity("plural", args, 3)?;
    let count = int(&args[2]);
    Ok(string(text(
        "plural",
        args,
        if count == 1 { 0 } else { 1 },
    )?))
}

/// goutils' `WrapCustom`: words joined into lines of at most `width`
/// characters (a longer word stays whole), lines joined with the separator.
fn wrap(name: &str, args: &[Value], has_separator: usize) -> Result<Value, TemplateError> {
    at_least(name, args, 2 + has_separator)?;
    arity(name, args, 2 + has_separator)?;
    let width = usize::try_from(int(&args[0])).unwrap_or(0).max(1);
    let separator = if has_separator == 1 {
        text(name, args, 1)?
    } else {
        "\n"
    };
    let s = text(name, args, 1 + has_separator)?;
    let words = s.split(' ').filter(|word| !word.is_empty()).count();
    budget::allow(
        name,
        s.len()
            .saturating_add(words.saturating_mul(separator.len())),
    )?;
    let mut lines: Vec<String> = Vec::new();
    for word in s.split(' ').filter(|word| !word.is_empty()) {
        match lines.last_mut() {
            Some(line) if line.len() + 1 + word.len() <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    Ok(string(lines.join(separator)))
}
