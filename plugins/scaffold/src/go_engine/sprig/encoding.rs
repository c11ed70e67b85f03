//! sprig's encodings, hashes, JSON, regular expressions, paths, type
//! tests, `fail`, `env` and semantic versions.

use base64::Engine as _;
use gotmpl::{TemplateError, Value};
use holo_protocol::go_path::clean;
use sha2::Digest as _;

use super::super::budget;
use super::{Func, arity, error, list, string, text};

pub const FUNCTIONS: &[(&str, Func)] = &[
    ("b64enc", |a| {
        bytes_in("b64enc", a, |b| {
            base64::engine::general_purpose::STANDARD.encode(b)
        })
    }),
    ("b64dec", |a| {
        decoded("b64dec", a, |s| {
            base64::engine::general_purpose::STANDARD.decode(s).ok()
        })
    }),
    ("b32enc", |a| bytes_in("b32enc", a, base32)),
    ("b32dec", |a| decoded("b32dec", a, unbase32)),
    ("sha256sum", |a| {
        bytes_in("sha256sum", a, |b| hex(&sha2::Sha256::digest(b)))
    }),
    ("sha512sum", |a| {
        bytes_in("sha512sum", a, |b| hex(&sha2::Sha512::digest(b)))
    }),
    ("toJson", |a| json("toJson", a, false, true)),
    ("mustToJson", |a| json("mustToJson", a, false, true)),
    ("toRawJson", |a| json("toRawJson", a, false, false)),
    ("mustToRawJson", |a| json("mustToRawJson", a, false, false)),
    ("toPrettyJson", |a| json("toPrettyJson", a, true, true)),
    ("mustToPrettyJson", |a| {
        json("mustToPrettyJson", a, true, true)
    }),
    ("fromJson", |a| {
        from_json("fromJson", a).or_else(|_| Ok(string("")))
    }),
    ("mustFromJson", |a| from_json("mustFromJson", a)),
    ("regexMatch", |a| {
        regex_call("regexMatch", a, 2, |re, a| {
            Ok(Value::Bool(re.is_match(text("regexMatch", a, 1)?)))
        })
    }),
    ("mustRegexMatch", |a| {
        regex_call("mustRegexMatch", a, 2, |re, a| {
            Ok(Value::Bool(re.is_match(text("mustRegexMatch", a, 1)?)))
        })
    }),
    ("regexFind", |a| regex_call("regexFind", a, 2, find)),
    ("mustRegexFind", |a| regex_call("mustRegexFind", a, 2, find)),
    ("regexFindAll", |a| {
        regex_call("regexFindAll", a, 3, find_all)
    }),
    ("mustRegexFindAll", |a| {
        regex_call("mustRegexFindAll", a, 3, find_all)
    }),
    ("regexReplaceAll", |a| {
        regex_call("regexReplaceAll", a, 3, |re, a| replace(re, a, true))
    }),
    ("mustRegexReplaceAll", |a| {
        regex_call("mustRegexReplaceAll", a, 3, |re, a| replace(re, a, true))
    }),
    ("regexReplaceAllLiteral", |a| {
        regex_call("regexReplaceAllLiteral", a, 3, |re, a| {
            replace(re, a, false)
        })
    }),
    ("mustRegexReplaceAllLiteral", |a| {
        regex_call("mustRegexReplaceAllLiteral", a, 3, |re, a| {
            replace(re, a, false)
        })
    }),
    ("regexSplit", |a| regex_call("regexSplit", a, 3, split)),
    ("mustRegexSplit", |a| {
        regex_call("mustRegexSplit", a, 3, split)
    }),
    ("regexQuoteMeta", |a| {
        arity("regexQuoteMeta", a, 1)
            .and_then(|()| Ok(string(regex::escape(text("regexQuoteMeta", a, 0)?))))
    }),
    ("base", |a| path("base", a, |p| base(p).to_string())),
    ("dir", |a| path("dir", a, dir)),
    ("clean", |a| path("clean", a, clean)),
    ("ext", |a| path("ext", a, |p| ext(p).to_string())),
    ("isAbs", |a| {
        arity("isAbs", a, 1).and_then(|()| Ok(Value::Bool(text("isAbs", a, 0)?.starts_with('/'))))
    }),
    ("osBase", |a| path("osBase", a, |p| base(p).to_string())),
    ("osDir", |a| path("osDir", a, dir)),
    ("osClean", |a| path("osClean", a, clean)),
    ("osExt", |a| path("osExt", a, |p| ext(p).to_string())),
    ("osIsAbs", |a| {
        arity("osIsAbs", a, 1)
            .and_then(|()| Ok(Value::Bool(text("osIsAbs", a, 0)?.starts_with('/'))))
    }),
    ("typeOf", |a| {
        arity("typeOf", a, 1).map(|()| string(type_name(&a[0])))
    }),
    ("kindOf", |a| {
        arity("kindOf", a, 1).map(|()| string(kind(&a[0])))
    }),
    ("typeIs", |a| {
        arity("typeIs", a, 2)
            .and_then(|()| Ok(Value::Bool(text("typeIs", a, 0)? == type_name(&a[1]))))
    }),
    ("typeIsLike", |a| {
        arity("typeIsLike", a, 2).and_then(|()| {
            Ok(Value::Bool(
                text("typeIsLike", a, 0)?.trim_start_matches('*') == type_name(&a[1]),
            ))
        })
    }),
    ("kindIs", |a| {
        arity("kindIs", a, 2).and_then(|()| Ok(Value::Bool(text("kindIs", a, 0)? == kind(&a[1]))))
    }),
    ("fail", |a| {
        arity("fail", a, 1).and_then(|()| Err(error(text("fail", a, 0)?.to_string())))
    }),
    ("env", |a| {
        arity("env", a, 1).and_then(|()| {
            Ok(string(
                std::env::var(text("env", a, 0)?).unwrap_or_default(),
            ))
        })
    }),
    ("expandenv", |a| {
        arity("expandenv", a, 1).and_then(|()| Ok(string(expand_env(text("expandenv", a, 0)?))))
    }),
];

fn bytes_in(name: &str, args: &[Value], f: fn(&[u8]) -> String) -> Result<Value, TemplateError> {
    arity(name, args, 1)?;
    Ok(string(f(text(name, args, 0)?.as_bytes())))
}

/// A decoder's result as text, or sprig's error text in its place.
fn decoded(
    name: &str,
    args: &[Value],
    f: fn(&str) -> Option<Vec<u8>>,
) -> Result<Value, TemplateError> {
    arity(name, args, 1)?;
    Ok(string(match f(text(name, args, 0)?) {
        Some(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        None => format!("{name}: the text is not valid encoded data"),
    }))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// RFC 4648 base32 with padding, as Go's `base32.StdEncoding`.
fn base32(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = String::new();
    for group in bytes.chunks(5) {
        let mut buffer = [0u8; 5];
        buffer[..group.len()].copy_from_slice(group);
        let bits = buffer
            .iter()
            .fold(0u64, |acc, b| (acc << 8) | u64::from(*b));
        let used = (group.len() * 8).div_ceil(5);
        for index in 0..8 {
            if index < used {
                let digit = (bits >> (35 - index * 5)) & 31;
                out.push(char::from(ALPHABET[usize::try_from(digit).unwrap_or(0)]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn unbase32(text: &str) -> Option<Vec<u8>> {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut bits: u64 = 0;
    let mut count = 0;
    let mut out = Vec::new();
    for byte in text.trim_end_matches('=').bytes() {
        let digit = ALPHABET.iter().position(|a| *a == byte)?;
        bits = (bits << 5) | u64::try_from(digit).ok()?;
        count += 5;
        if count >= 8 {
            count -= 8;
            out.push(u8::try_from((bits >> count) & 0xff).ok()?);
        }
    }
    Some(out)
}

fn to_json(value: &Value) -> serde_json::Value {
    match value {
        Value::Nil | Value::Function(_) => serde_json::Value::Null,
        Value::Bool(b) => (*b).into(),
        Value::Int(i) => (*i).into(),
        Value::Uint(u) => (*u).into(),
        Value::Float(f) => {
            serde_json::Number::from_f64(*f).map_or(serde_json::Value::Null, Into::into)
        }
        Value::String(s) => s.as_ref().into(),
        Value::List(items) => items.iter().map(to_json).collect(),
        Value::Map(map) => map
            .iter()
            .map(|(k, v)| (k.to_string(), to_json(v)))
            .collect::<serde_json::Map<_, _>>()
            .into(),
    }
}

/// Go's `json.Marshal` (`<`, `>` and `&` escaped unless raw), or
/// `MarshalIndent` with two spaces.
fn json(
    name: &str,
    args: &[Value],
    pretty: bool,
    escape_html: bool,
) -> Result<Value, TemplateError> {
    arity(name, args, 1)?;
    let value = to_json(&args[0]);
    let text = if pretty {
        serde_json::to_string_pretty(&value)
    } else {
        serde_json::to_string(&value)
    }
    .map_err(|err| error(format!("{name}: {err}")))?;
    let text = if escape_html {
        text.replace('<', "\\u003c")
            .replace('>', "\\u003e")
            .replace('&', "\\u0026")
    } else {
        text
    };
    Ok(string(text))
}

fn from_json(name: &str, args: &[Value]) -> Result<Value, TemplateError> {
    arity(name, args, 1)?;
    let parsed: serde_json::Value = serde_json::from_str(text(name, args, 0)?)
        .map_err(|err| error(format!("{name}: {err}")))?;
    gotmpl::to_value(&parsed)
}

type RegexFunc = fn(&regex::Regex, &[Value]) -> Result<Value, TemplateError>;

fn regex_call(
    name: &str,
    args: &[Value],
    count: usize,
    f: RegexFunc,
) -> Result<Value, TemplateError> {
    arity(name, args, count)?;
    let pattern = text(name, args, 0)?;
    let re = regex::Regex::new(pattern).map_err(|err| error(format!("{name}: {err}")))?;
    f(&re, args)
}

fn find(re: &regex::Regex, args: &[Value]) -> Result<Value, TemplateError> {
    let s = text("regexFind", args, 1)?;
    Ok(string(re.find(s).map_or("", |m| m.as_str())))
}

/// At most `n` matches (all when `n` is negative).
fn limit(args: &[Value], index: usize) -> usize {
    usize::try_from(super::int(&args[index])).unwrap_or(usize::MAX)
}

fn find_all(re: &regex::Regex, args: &[Value]) -> Result<Value, TemplateError> {
    let s = text("regexFindAll", args, 1)?;
    Ok(list(
        re.find_iter(s)
            .take(limit(args, 2))
            .map(|m| string(m.as_str()))
            .collect(),
    ))
}

fn replace(re: &regex::Regex, args: &[Value], expand: bool) -> Result<Value, TemplateError> {
    let (s, with) = (
        text("regexReplaceAll", args, 1)?,
        text("regexReplaceAll", args, 2)?,
    );
    if !with.is_empty() {
        let found = re.find_iter(s).count();
        // Each `$` may bring back a whole match, and the matches add up to s.
        let expanded = if expand { with.matches('$').count() } else { 0 };
        let bound = s
            .len()
            .saturating_add(found.saturating_mul(with.len()))
            .saturating_add(expanded.saturating_mul(s.len()));
        budget::allow("regexReplaceAll", bound)?;
    }
    let out = if expand {
        re.replace_all(s, with)
    } else {
        re.replace_all(s, regex::NoExpand(with))
    };
    Ok(string(out.into_owned()))
}

fn split(re: &regex::Regex, args: &[Value]) -> Result<Value, TemplateError> {
    let s = text("regexSplit", args, 1)?;
    let parts: Vec<Value> = match super::int(&args[2]) {
        0 => Vec::new(),
        n if n < 0 => re.split(s).map(string).collect(),
        n => re
            .splitn(s, usize::try_from(n).unwrap_or(1))
            .map(string)
            .collect(),
    };
    Ok(list(parts))
}

fn path(name: &str, args: &[Value], f: fn(&str) -> String) -> Result<Value, TemplateError> {
    arity(name, args, 1)?;
    Ok(string(f(text(name, args, 0)?)))
}

/// Go's `path.Base`.
fn base(p: &str) -> &str {
    if p.is_empty() {
        return ".";
    }
    let trimmed = p.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/";
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed)
}

/// Go's `path.Dir`.
fn dir(p: &str) -> String {
    let cut = p.rfind('/').map_or("", |at| &p[..=at]);
    clean(cut)
}

/// Go's `path.Ext`.
fn ext(p: &str) -> &str {
    let name = p.rsplit('/').next().unwrap_or(p);
    name.rfind('.').map_or("", |at| &name[at..])
}

/// Go's type name of a template value (`%T`).
fn type_name(value: &Value) -> String {
    match value {
        Value::Nil => "<nil>".into(),
        Value::Bool(_) => "bool".into(),
        Value::Int(_) => "int".into(),
        Value::Uint(_) => "uint64".into(),
        Value::Float(_) => "float64".into(),
        Value::String(_) => "string".into(),
        Value::List(_) => "[]interface {}".into(),
        Value::Map(_) => "map[string]interface {}".into(),
        Value::Function(_) => "func".into(),
    }
}

/// Go's `reflect.Kind` name of a template value.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Nil => "invalid",
        Value::Bool(_) => "bool",
        Value::Int(_) => "int",
        Value::Uint(_) => "uint64",
        Value::Float(_) => "float64",
        Value::String(_) => "string",
        Value::List(_) => "slice",
        Value::Map(_) => "map",
        Value::Function(_) => "func",
    }
}

/// Go's `os.ExpandEnv`: `$NAME` and `${NAME}` replaced by the variable.
fn expand_env(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, used) = if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(end) => (&braced[..end], end + 2),
                None => ("", 0),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        if used == 0 {
            out.push('$');
        } else {
            out.push_str(&std::env::var(name).unwrap_or_default());
        }
        rest = &after[used..];
    }
    out.push_str(rest);
    out
}
