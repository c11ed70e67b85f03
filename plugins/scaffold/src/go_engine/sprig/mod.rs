//! The sprig functions CCM registers (`sprig.FuncMap()`), written from
//! sprig's documentation: strings, lists, dicts, numbers, encodings,
//! regular expressions, paths, types and semantic versions. Sprig's
//! clock, random, crypto and network functions are left out (see
//! holo-scaffold(8)). Go's `slice` stays Go's.

mod collections;
mod encoding;
mod numbers;
mod semver;
mod strings;

use std::sync::Arc;

use gotmpl::{FuncMap, TemplateError, Value};

use super::print::go_value;

type Func = fn(&[Value]) -> Result<Value, TemplateError>;

const TABLES: &[&[(&str, Func)]] = &[
    strings::FUNCTIONS,
    collections::FUNCTIONS,
    numbers::FUNCTIONS,
    encoding::FUNCTIONS,
    semver::FUNCTIONS,
];

/// Every sprig function this engine has.
pub fn functions() -> FuncMap {
    let mut map = FuncMap::new();
    for table in TABLES {
        for (name, function) in *table {
            map.insert((*name).to_string(), Arc::new(*function));
        }
    }
    map
}

/// Whether sprig's function `name` is here.
pub fn has(name: &str) -> bool {
    TABLES
        .iter()
        .any(|table| table.iter().any(|(known, _)| *known == name))
}

fn error(message: String) -> TemplateError {
    TemplateError::Exec(message)
}

/// Go's "wrong number of args" unless `args` has `count`.
fn arity(name: &str, args: &[Value], count: usize) -> Result<(), TemplateError> {
    if args.len() == count {
        return Ok(());
    }
    Err(error(format!(
        "wrong number of args for {name}: want {count} got {}",
        args.len()
    )))
}

fn at_least(name: &str, args: &[Value], count: usize) -> Result<(), TemplateError> {
    if args.len() >= count {
        return Ok(());
    }
    Err(error(format!(
        "wrong number of args for {name}: want at least {count} got {}",
        args.len()
    )))
}

/// The string argument `index` of `name`.
fn text<'a>(name: &str, args: &'a [Value], index: usize) -> Result<&'a str, TemplateError> {
    match args.get(index) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(error(format!(
            "{name}: argument {} is {}, not a string",
            index + 1,
            go_value(other)
        ))),
        None => Err(error(format!("{name}: argument {} is missing", index + 1))),
    }
}

/// sprig's `strval`: a string as it is, anything else as Go's `%v`.
fn strval(value: &Value) -> String {
    match value {
        Value::String(s) => s.to_string(),
        other => go_value(other),
    }
}

/// sprig's `toInt64` (spf13/cast): numbers, numeric strings and bools;
/// anything else 0.
fn int(value: &Value) -> i64 {
    match value {
        Value::Int(i) => *i,
        Value::Uint(u) => i64::try_from(*u).unwrap_or(i64::MAX),
        Value::Float(f) => *f as i64,
        Value::Bool(b) => i64::from(*b),
        Value::String(s) => parse_int(s).unwrap_or(0),
        _ => 0,
    }
}

fn parse_int(s: &str) -> Option<i64> {
    let (negative, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let lower = digits.to_ascii_lowercase();
    let value = if let Some(hex) = lower.strip_prefix("0x") {
        i64::from_str_radix(hex, 16).ok()?
    } else if let Some(bin) = lower.strip_prefix("0b") {
        i64::from_str_radix(bin, 2).ok()?
    } else if let Some(oct) = lower.strip_prefix("0o") {
        i64::from_str_radix(oct, 8).ok()?
    } else if lower.len() > 1 && lower.starts_with('0') {
        i64::from_str_radix(&lower[1..], 8).ok()?
    } else {
        lower.parse().ok()?
    };
    Some(if negative { -value } else { value })
}

/// spf13/cast's `ToFloat64`.
fn float(value: &Value) -> f64 {
    match value {
        Value::Int(i) => *i as f64,
        Value::Uint(u) => *u as f64,
        Value::Float(f) => *f,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::String(s) => s.parse().unwrap_or(0.0),
        _ => 0.0,
    }
}

/// sprig's `empty`: nil, false, 0, "" and empty lists and maps.
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Nil => true,
        Value::Bool(b) => !b,
        Value::Int(i) => *i == 0,
        Value::Uint(u) => *u == 0,
        Value::Float(f) => *f == 0.0,
        Value::String(s) => s.is_empty(),
        Value::List(items) => items.is_empty(),
        Value::Map(map) => map.is_empty(),
        Value::Function(_) => false,
    }
}

fn string(s: impl Into<Arc<str>>) -> Value {
    Value::String(s.into())
}

fn list(items: Vec<Value>) -> Value {
    Value::List(items.into())
}
