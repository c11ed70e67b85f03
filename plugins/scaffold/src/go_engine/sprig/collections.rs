//! sprig's list and dict functions, and its tests on values.

use std::collections::BTreeMap;
use std::sync::Arc;

use gotmpl::{TemplateError, Value};

use super::super::budget;
use super::{Func, arity, at_least, error, int, is_empty, list, string, strval, text};

pub const FUNCTIONS: &[(&str, Func)] = &[
    ("list", |a| Ok(list(a.to_vec()))),
    ("tuple", |a| Ok(list(a.to_vec()))),
    ("first", |a| {
        items("first", a).map(|l| l.first().cloned().unwrap_or(Value::Nil))
    }),
    ("mustFirst", |a| {
        items("mustFirst", a).map(|l| l.first().cloned().unwrap_or(Value::Nil))
    }),
    ("last", |a| {
        items("last", a).map(|l| l.last().cloned().unwrap_or(Value::Nil))
    }),
    ("mustLast", |a| {
        items("mustLast", a).map(|l| l.last().cloned().unwrap_or(Value::Nil))
    }),
    ("rest", |a| {
        items("rest", a).map(|l| list(l.iter().skip(1).cloned().collect()))
    }),
    ("mustRest", |a| {
        items("mustRest", a).map(|l| list(l.iter().skip(1).cloned().collect()))
    }),
    ("initial", |a| {
        items("initial", a).map(|l| list(l[..l.len().saturating_sub(1)].to_vec()))
    }),
    ("mustInitial", |a| {
        items("mustInitial", a).map(|l| list(l[..l.len().saturating_sub(1)].to_vec()))
    }),
    ("reverse", |a| {
        items("reverse", a).map(|l| list(l.iter().rev().cloned().collect()))
    }),
    ("mustReverse", |a| {
        items("mustReverse", a).map(|l| list(l.iter().rev().cloned().collect()))
    }),
    ("uniq", |a| items("uniq", a).map(uniq)),
    ("mustUniq", |a| items("mustUniq", a).map(uniq)),
    ("compact", |a| {
        items("compact", a).map(|l| list(l.iter().filter(|v| !is_empty(v)).cloned().collect()))
    }),
    ("mustCompact", |a| {
        items("mustCompact", a).map(|l| list(l.iter().filter(|v| !is_empty(v)).cloned().collect()))
    }),
    ("append", |a| push("append", a)),
    ("push", |a| push("push", a)),
    ("mustAppend", |a| push("mustAppend", a)),
    ("mustPush", |a| push("mustPush", a)),
    ("prepend", prepend),
    ("mustPrepend", prepend),
    ("concat", concat),
    ("without", without),
    ("mustWithout", without),
    ("has", has),
    ("mustHas", has),
    ("chunk", chunk),
    ("mustChunk", chunk),
    ("join", join),
    ("sortAlpha", sort_alpha),
    ("splitList", split_list),
    ("split", |a| split("split", a, None)),
    ("splitn", |a| {
        arity("splitn", a, 3)
            .and_then(|()| split("splitn", &[a[0].clone(), a[2].clone()], Some(int(&a[1]))))
    }),
    ("toStrings", |a| {
        items("toStrings", a).map(|l| list(l.iter().map(|v| string(strval(v))).collect()))
    }),
    ("until", |a| {
        arity("until", a, 1).and_then(|()| steps(0, int(&a[0]), 1))
    }),
    ("untilStep", |a| {
        arity("untilStep", a, 3).and_then(|()| steps(int(&a[0]), int(&a[1]), int(&a[2])))
    }),
    ("dict", dict),
    ("get", get),
    ("set", set),
    ("unset", unset),
    ("hasKey", |a| {
        arity("hasKey", a, 2).and_then(|()| {
            Ok(Value::Bool(
                map("hasKey", a, 0)?.contains_key(text("hasKey", a, 1)?),
            ))
        })
    }),
    ("keys", keys),
    ("values", |a| {
        arity("values", a, 1)
            .and_then(|()| Ok(list(map("values", a, 0)?.values().cloned().collect())))
    }),
    ("pick", |a| pick("pick", a, true)),
    ("omit", |a| pick("omit", a, false)),
    ("pluck", pluck),
    ("dig", dig),
    ("merge", |a| merge("merge", a, false)),
    ("mustMerge", |a| merge("mustMerge", a, false)),
    ("mergeOverwrite", |a| merge("mergeOverwrite", a, true)),
    ("mustMergeOverwrite", |a| {
        merge("mustMergeOverwrite", a, true)
    }),
    ("deepCopy", |a| {
        arity("deepCopy", a, 1).map(|()| a[0].clone())
    }),
    ("mustDeepCopy", |a| {
        arity("mustDeepCopy", a, 1).map(|()| a[0].clone())
    }),
    ("default", default),
    ("empty", |a| {
        arity("empty", a, 1).map(|()| Value::Bool(is_empty(&a[0])))
    }),
    ("coalesce", |a| {
        Ok(a.iter()
            .find(|v| !is_empty(v))
            .cloned()
            .unwrap_or(Value::Nil))
    }),
    ("all", |a| Ok(Value::Bool(a.iter().all(|v| !is_empty(v))))),
    ("any", |a| Ok(Value::Bool(a.iter().any(|v| !is_empty(v))))),
    ("ternary", |a| {
        arity("ternary", a, 3).map(|()| {
            if a[2].is_truthy() {
                a[0].clone()
            } else {
                a[1].clone()
            }
        })
    }),
    ("deepEqual", |a| {
        arity("deepEqual", a, 2).map(|()| Value::Bool(a[0] == a[1]))
    }),
];

/// The list argument of a one-argument list function.
fn items(name: &str, args: &[Value]) -> Result<Arc<[Value]>, TemplateError> {
    arity(name, args, 1)?;
    nth_list(name, args, 0)
}

fn nth_list(name: &str, args: &[Value], index: usize) -> Result<Arc<[Value]>, TemplateError> {
    match &args[index] {
        Value::List(items) => Ok(Arc::clone(items)),
        other => Err(error(format!(
            "{name}: cannot find {} on type {}",
            if index == 0 { "items" } else { "the list" },
            super::super::print::go_value(other)
        ))),
    }
}

fn uniq(items: Arc<[Value]>) -> Value {
    let mut out: Vec<Value> = Vec::new();
    for item in items.iter() {
        if !out.contains(item) {
            out.push(item.clone());
        }
    }
    list(out)
}

fn push(name: &str, args: &[Value]) -> Result<Value, TemplateError> {
    arity(name, args, 2)?;
    let mut out = nth_list(name, args, 0)?.to_vec();
    out.push(args[1].clone());
    Ok(list(out))
}

fn prepend(args: &[Value]) -> Result<Value, TemplateError> {
    arity("prepend", args, 2)?;
    let mut out = vec![args[1].clone()];
    out.extend(nth_list("prepend", args, 0)?.iter().cloned());
    Ok(list(out))
}

fn concat(args: &[Value]) -> Result<Value, TemplateError> {
    let mut out = Vec::new();
    for index in 0..args.len() {
        out.extend(nth_list("concat", args, index)?.iter().cloned());
    }
    Ok(list(out))
}

fn without(args: &[Value]) -> Result<Value, TemplateError> {
    at_least("without", args, 1)?;
    let items = nth_list("without", args, 0)?;
    Ok(list(
        items
            .iter()
            .filter(|item| !args[1..].contains(item))
            .cloned()
            .collect(),
    ))
}

fn has(args: &[Value]) -> Result<Value, TemplateError> {
    arity("has", args, 2)?;
    match &args[1] {
        Value::List(items) => Ok(Value::Bool(items.contains(&args[0]))),
        Value::Nil => Ok(Value::Bool(false)),
        _ => nth_list("has", args, 1).map(|_| Value::Bool(false)),
    }
}

fn chunk(args: &[Value]) -> Result<Value, TemplateError> {
    arity("chunk", args, 2)?;
    let size = usize::try_from(int(&args[0])).unwrap_or(0).max(1);
    let items = nth_list("chunk", args, 1)?;
    Ok(list(
        items.chunks(size).map(|part| list(part.to_vec())).collect(),
    ))
}

/// sprig's `strslice`: a list's items as strings (nil ones left out), or
/// any other value as one string.
fn strings_of(value: &Value) -> Vec<String> {
    match value {
        Value::List(items) => items
            .iter()
            .filter(|item| !matches!(item, Value::Nil))
            .map(strval)
            .collect(),
        Value::Nil => Vec::new(),
        other => vec![strval(other)],
    }
}

fn join(args: &[Value]) -> Result<Value, TemplateError> {
    arity("join", args, 2)?;
    let (separator, all) = (text("join", args, 0)?, strings_of(&args[1]));
    let joined = all.iter().map(String::len).sum::<usize>();
    let between = all.len().saturating_sub(1).saturating_mul(separator.len());
    budget::allow("join", joined.saturating_add(between))?;
    Ok(string(all.join(separator)))
}

fn sort_alpha(args: &[Value]) -> Result<Value, TemplateError> {
    arity("sortAlpha", args, 1)?;
    let mut all = strings_of(&args[0]);
    all.sort();
    Ok(list(all.into_iter().map(string).collect()))
}

fn split_list(args: &[Value]) -> Result<Value, TemplateError> {
    arity("splitList", args, 2)?;
    let (separator, s) = (text("splitList", args, 0)?, text("splitList", args, 1)?);
    Ok(list(s.split(separator).map(string).collect()))
}

/// `split` and `splitn`: a dict of the parts as `_0`, `_1`, ...
fn split(name: &str, args: &[Value], count: Option<i64>) -> Result<Value, TemplateError> {
    arity(name, args, 2)?;
    let (separator, s) = (text(name, args, 0)?, text(name, args, 1)?);
    let parts: Vec<&str> = match count.map(usize::try_from) {
        Some(Ok(count)) => s.splitn(count, separator).collect(),
        _ => s.split(separator).collect(),
    };
    let map: BTreeMap<Arc<str>, Value> = parts
        .into_iter()
        .enumerate()
        .map(|(index, part)| (Arc::from(format!("_{index}")), string(part)))
        .collect();
    Ok(Value::Map(map.into()))
}

fn steps(start: i64, stop: i64, step: i64) -> Result<Value, TemplateError> {
    let mut out = Vec::new();
    let mut at = start;
    while step != 0 && ((step > 0 && at < stop) || (step < 0 && at > stop)) {
        if out.len() >= 1 << 20 {
            return Err(error("until: more than a million numbers".into()));
        }
        out.push(Value::Int(at));
        at += step;
    }
    Ok(list(out))
}

fn map<'a>(
    name: &str,
    args: &'a [Value],
    index: usize,
) -> Result<&'a BTreeMap<Arc<str>, Value>, TemplateError> {
    match args.get(index) {
        Some(Value::Map(map)) => Ok(map),
        other => Err(error(format!(
            "{name}: {} is not a dict",
            other.map_or("nothing".into(), super::super::print::go_value)
        ))),
    }
}

fn dict(args: &[Value]) -> Result<Value, TemplateError> {
    let mut map = BTreeMap::new();
    for pair in args.chunks(2) {
        let value = pair.get(1).cloned().unwrap_or_else(|| string(""));
        map.insert(Arc::from(strval(&pair[0])), value);
    }
    Ok(Value::Map(map.into()))
}

fn get(args: &[Value]) -> Result<Value, TemplateError> {
    arity("get", args, 2)?;
    let found = map("get", args, 0)?.get(text("get", args, 1)?);
    Ok(found.cloned().unwrap_or_else(|| string("")))
}

/// `set`: the dict with the key set. Values here do not change in place,
/// so the engine turns `$_ := set $d ...` into `$d = set $d ...`.
fn set(args: &[Value]) -> Result<Value, TemplateError> {
    arity("set", args, 3)?;
    let mut out = map("set", args, 0)?.clone();
    out.insert(Arc::from(text("set", args, 1)?), args[2].clone());
    Ok(Value::Map(out.into()))
}

fn unset(args: &[Value]) -> Result<Value, TemplateError> {
    arity("unset", args, 2)?;
    let mut out = map("unset", args, 0)?.clone();
    out.remove(text("unset", args, 1)?);
    Ok(Value::Map(out.into()))
}

fn keys(args: &[Value]) -> Result<Value, TemplateError> {
    let mut out = Vec::new();
    for index in 0..args.len() {
        out.extend(
            map("keys", args, index)?
                .keys()
                .map(|key| Value::String(Arc::clone(key))),
        );
    }
    Ok(list(out))
}

fn pick(name: &str, args: &[Value], keep: bool) -> Result<Value, TemplateError> {
    at_least(name, args, 1)?;
    let wanted: Vec<String> = args[1..].iter().map(strval).collect();
    let out: BTreeMap<Arc<str>, Value> = map(name, args, 0)?
        .iter()
        .filter(|(key, _)| wanted.iter().any(|w| w.as_str() == key.as_ref()) == keep)
        .map(|(key, value)| (Arc::clone(key), value.clone()))
        .collect();
    Ok(Value::Map(out.into()))
}

fn pluck(args: &[Value]) -> Result<Value, TemplateError> {
    at_least("pluck", args, 1)?;
    let key = text("pluck", args, 0)?;
    let mut out = Vec::new();
    for index in 1..args.len() {
        out.extend(map("pluck", args, index)?.get(key).cloned());
    }
    Ok(list(out))
}

fn dig(args: &[Value]) -> Result<Value, TemplateError> {
    at_least("dig", args, 3)?;
    let (path, rest) = args.split_at(args.len() - 2);
    let mut at = map("dig", rest, 1)?;
    for (index, key) in path.iter().enumerate() {
        let Some(found) = at.get(strval(key).as_str()) else {
            return Ok(rest[0].clone());
        };
        if index + 1 == path.len() {
            return Ok(found.clone());
        }
        let Value::Map(next) = found else {
            return Ok(rest[0].clone());
        };
        at = next;
    }
    Ok(rest[0].clone())
}

fn merge(name: &str, args: &[Value], overwrite: bool) -> Result<Value, TemplateError> {
    at_least(name, args, 1)?;
    let mut out = map(name, args, 0)?.clone();
    for index in 1..args.len() {
        merge_into(&mut out, map(name, args, index)?, overwrite);
    }
    Ok(Value::Map(out.into()))
}

fn merge_into(
    out: &mut BTreeMap<Arc<str>, Value>,
    from: &BTreeMap<Arc<str>, Value>,
    overwrite: bool,
) {
    for (key, value) in from {
        match (out.get_mut(key), value) {
            (Some(Value::Map(mine)), Value::Map(theirs)) => {
                let mut merged = mine.as_ref().clone();
                merge_into(&mut merged, theirs, overwrite);
                *mine = merged.into();
            }
            (Some(existing), _) if overwrite => *existing = value.clone(),
            (Some(existing), _) if is_empty(existing) => *existing = value.clone(),
            (Some(_), _) => {}
            (None, _) => {
                out.insert(Arc::clone(key), value.clone());
            }
        }
    }
}

fn default(args: &[Value]) -> Result<Value, TemplateError> {
    at_least("default", args, 1)?;
    match args.get(1) {
        Some(given) if !is_empty(given) => Ok(given.clone()),
        _ => Ok(args[0].clone()),
    }
}
