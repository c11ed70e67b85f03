//! Jet's built-in functions over JSON values, and how values print.

use serde_json::{Map, Value};

/// How Jet prints a value: Go's `fmt.Print` of the decoded JSON value.
pub fn print(v: &Value, out: &mut String) {
    match v {
        Value::Null => {}
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number(n)),
        Value::String(s) => out.push_str(s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                print_nested(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push_str("map[");
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                print_nested(&map[k], out);
            }
            out.push(']');
        }
    }
}

fn print_nested(v: &Value, out: &mut String) {
    if v.is_null() {
        out.push_str("<nil>");
    } else {
        print(v, out);
    }
}

pub fn to_text(v: &Value) -> String {
    let mut s = String::new();
    print(v, &mut s);
    s
}

/// Go's `%v` of an int64 or float64.
pub fn number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    float(n.as_f64().unwrap_or(0.0))
}

/// How Jet prints a float64: shortest digits, never an exponent.
pub fn float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    format!("{f}")
}

/// Go's encoding/json number: shortest digits, an exponent outside
/// [1e-6, 1e21).
fn json_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let s = format!("{f:e}");
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        // Go writes e+21 and e-7: two digits at least, except after a minus.
        return match exp.strip_prefix('-') {
            Some(d) => format!("{mantissa}e-{d}"),
            None => format!("{mantissa}e+{exp:0>2}"),
        };
    }
    format!("{f}")
}

pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "nil",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "map",
    }
}

/// Jet's truth: the zero value of a type is false. A decoded list or map
/// is never a Go zero value, so even an empty one is true.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

pub const BUILTINS: &[&str] = &[
    "lower",
    "upper",
    "hasPrefix",
    "hasSuffix",
    "repeat",
    "replace",
    "split",
    "trimSpace",
    "html",
    "url",
    "json",
    "writeJson",
    "map",
    "slice",
    "array",
    "len",
    "isset",
    "ints",
    "raw",
    "unsafe",
    "safeHtml",
    "safeJs",
];

fn want_args(name: &str, args: &[Value], n: usize) -> Result<(), String> {
    if args.len() != n {
        return Err(format!(
            "{name} needs {n} argument{}, but has {}",
            if n == 1 { "" } else { "s" },
            args.len()
        ));
    }
    Ok(())
}

fn string_arg<'v>(name: &str, args: &'v [Value], i: usize) -> Result<&'v str, String> {
    match &args[i] {
        Value::String(s) => Ok(s),
        other => Err(format!(
            "{name}: argument {} must be a string, not {} {}",
            i + 1,
            type_name(other),
            show(other)
        )),
    }
}

pub fn int_arg(name: &str, args: &[Value], i: usize) -> Result<i64, String> {
    match &args[i] {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .ok_or_else(|| format!("{name}: argument {} is out of range", i + 1)),
        other => Err(format!(
            "{name}: argument {} must be a number, not {} {}",
            i + 1,
            type_name(other),
            show(other)
        )),
    }
}

/// A short rendering of a value for messages.
pub fn show(v: &Value) -> String {
    let s = match v {
        Value::String(s) => format!("{s:?}"),
        other => to_text(other),
    };
    if s.chars().count() > 40 {
        format!("{}…", s.chars().take(40).collect::<String>())
    } else {
        s
    }
}

/// Calls built-in `name`; None when there is no such built-in.
/// The built-in `name` on `args`; a string it would make longer than
/// `max_output` (the render's budget) is refused.
pub fn call(name: &str, args: &[Value], max_output: usize) -> Option<Result<Value, String>> {
    string_call(name, args, max_output).or_else(|| value_call(name, args))
}

/// The functions on strings.
fn string_call(name: &str, args: &[Value], max_output: usize) -> Option<Result<Value, String>> {
    let r = match name {
        "lower" | "upper" | "trimSpace" | "html" | "url" | "safeHtml" | "safeJs" => (|| {
            want_args(name, args, 1)?;
            let s = string_arg(name, args, 0)?;
            Ok(Value::String(match name {
                "lower" => s.chars().map(go_lower).collect(),
                "upper" => s.chars().map(go_upper).collect(),
                "trimSpace" => s.trim().to_string(),
                "html" | "safeHtml" => html_escape(s),
                "url" => query_escape(s),
                _ => js_escape(s),
            }))
        })(),
        "hasPrefix" | "hasSuffix" => (|| {
            want_args(name, args, 2)?;
            let (s, p) = (string_arg(name, args, 0)?, string_arg(name, args, 1)?);
            Ok(Value::Bool(if name == "hasPrefix" {
                s.starts_with(p)
            } else {
                s.ends_with(p)
            }))
        })(),
        "repeat" => (|| {
            want_args(name, args, 2)?;
            let s = string_arg(name, args, 0)?;
            let n = int_arg(name, args, 1)?;
            if n < 0 {
                return Err("repeat: negative repeat count".into());
            }
            let n = n as usize;
            if s.len().saturating_mul(n) > max_output {
                return Err(format!(
                    "repeat: the result would exceed {max_output} bytes"
                ));
            }
            Ok(Value::String(s.repeat(n)))
        })(),
        "replace" => (|| {
            if args.len() != 4 {
                return Err(format!(
                    "replace needs 4 arguments (text, old, new, count; -1 for all), but has {}",
                    args.len()
                ));
            }
            let (s, old, new) = (
                string_arg(name, args, 0)?,
                string_arg(name, args, 1)?,
                string_arg(name, args, 2)?,
            );
            let n = int_arg(name, args, 3)?;
            Ok(Value::String(if n < 0 {
                s.replace(old, new)
            } else {
                s.replacen(old, new, n as usize)
            }))
        })(),
        "split" => (|| {
            want_args(name, args, 2)?;
            let (s, sep) = (string_arg(name, args, 0)?, string_arg(name, args, 1)?);
            let parts: Vec<Value> = if sep.is_empty() {
                s.chars().map(|c| Value::String(c.to_string())).collect()
            } else {
                s.split(sep).map(|p| Value::String(p.to_string())).collect()
            };
            Ok(Value::Array(parts))
        })(),
        _ => return None,
    };
    Some(r)
}

/// The functions that build or measure values.
fn value_call(name: &str, args: &[Value]) -> Option<Result<Value, String>> {
    let r = match name {
        "json" | "writeJson" => (|| {
            want_args(name, args, 1)?;
            let mut s = json(&args[0])?;
            if name == "writeJson" {
                s.push('\n');
            }
            Ok(Value::String(s))
        })(),
        "map" => (|| {
            if !args.len().is_multiple_of(2) {
                return Err(format!(
                    "map needs key and value pairs, but has {} arguments",
                    args.len()
                ));
            }
            let mut m = Map::new();
            for pair in args.chunks(2) {
                let Value::String(k) = &pair[0] else {
                    return Err(format!("map: key {} is not a string", show(&pair[0])));
                };
                m.insert(k.clone(), pair[1].clone());
            }
            Ok(Value::Object(m))
        })(),
        "slice" | "array" => Ok(Value::Array(args.to_vec())),
        "len" => (|| {
            want_args(name, args, 1)?;
            Ok(Value::from(match &args[0] {
                Value::String(s) => s.len(),
                Value::Array(a) => a.len(),
                Value::Object(m) => m.len(),
                other => {
                    return Err(format!(
                        "len: cannot take the length of {} {}",
                        type_name(other),
                        show(other)
                    ));
                }
            }))
        })(),
        "ints" => (|| {
            want_args(name, args, 2)?;
            let (from, to) = (int_arg(name, args, 0)?, int_arg(name, args, 1)?);
            if to <= from {
                return Err(format!(
                    "ints: upper limit {to} must be greater than lower limit {from}"
                ));
            }
            if to - from > 1_000_000 {
                return Err("ints: more than 1000000 numbers".into());
            }
            Ok(Value::Array((from..to).map(Value::from).collect()))
        })(),
        "raw" | "unsafe" => (|| {
            want_args(name, args, 1)?;
            Ok(args[0].clone())
        })(),
        _ => return None,
    };
    Some(r)
}

/// Go's json.Marshal: compact, sorted keys, `<`, `>`, `&` escaped.
fn json(v: &Value) -> Result<String, String> {
    let mut out = String::new();
    write_json(v, &mut out)?;
    Ok(out)
}

fn write_json(v: &Value, out: &mut String) -> Result<(), String> {
    match v {
        Value::Null | Value::Bool(_) => out.push_str(&v.to_string()),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => out.push_str(&i.to_string()),
            (None, Some(u)) => out.push_str(&u.to_string()),
            _ => out.push_str(&json_float(n.as_f64().unwrap_or(0.0))),
        },
        Value::String(s) => {
            let quoted = serde_json::to_string(s).map_err(|e| format!("json: {e}"))?;
            for c in quoted.chars() {
                match c {
                    '<' => out.push_str("\\u003c"),
                    '>' => out.push_str("\\u003e"),
                    '&' => out.push_str("\\u0026"),
                    '\u{2028}' => out.push_str("\\u2028"),
                    '\u{2029}' => out.push_str("\\u2029"),
                    c => out.push(c),
                }
            }
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(item, out)?;
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(&Value::String(k.clone()), out)?;
                out.push(':');
                write_json(&map[k], out)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

/// Go's html.EscapeString.
pub fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\'' => out.push_str("&#39;"),
            '"' => out.push_str("&#34;"),
            c => out.push(c),
        }
    }
    out
}

/// Go's url.QueryEscape.
fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Go's text/template JSEscapeString.
/// Go's `unicode.ToLower` of one rune (the simple mapping: one rune for
/// one, so `İ` is `i` and `Σ` is always `σ`).
fn go_lower(c: char) -> char {
    c.to_lowercase().next().unwrap_or(c)
}

/// Go's `unicode.ToUpper` of one rune: a rune whose uppercase is several
/// (`ß`) stays as it is.
fn go_upper(c: char) -> char {
    let mut up = c.to_uppercase();
    match (up.next(), up.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

/// Go's `unicode.IsPrint`, near enough: not a control, not a space other
/// than ' ', not a format character.
fn go_printable(c: char) -> bool {
    c == ' '
        || !(c.is_control()
            || c.is_whitespace()
            || matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}'))
}

fn js_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' => out.push_str("\\u003C"),
            '>' => out.push_str("\\u003E"),
            '&' => out.push_str("\\u0026"),
            '=' => out.push_str("\\u003D"),
            c if (c as u32) < 0x20 || !go_printable(c) => {
                out.push_str(&format!("\\u{:04X}", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_as_go_does() {
        assert_eq!(float(4.9), "4.9");
        assert_eq!(float(8080.0), "8080");
        assert_eq!(float(1e21), "1000000000000000000000");
        assert_eq!(json_float(1e-7), "1e-7");
        assert_eq!(json_float(1.5e21), "1.5e+21");
        assert_eq!(json_float(8080.0), "8080");
    }

    #[test]
    fn query_escape_matches_go() {
        assert_eq!(
            query_escape("<h1>Hello Buddy!</h1>"),
            "%3Ch1%3EHello+Buddy%21%3C%2Fh1%3E"
        );
    }
}
