//! Compose's `${VAR}` interpolation over a parsed file.
//!
//! Supports `$VAR`, `${VAR}`, `${VAR:-default}`, `${VAR-default}`,
//! `${VAR:?error}`, `${VAR?error}`, `${VAR:+alt}`, `${VAR+alt}` and `$$`.
//! Only values are interpolated, never keys, as Compose does. A service's
//! `cloud_init` is holos's own field and goes to cloud-init verbatim, so
//! its shell text keeps every `$`.

use crate::diag::Diags;
use crate::yaml::{Kind, Node};

/// Looks a variable up; `None` means unset (not the same as empty).
pub trait Lookup {
    fn lookup(&self, name: &str) -> Option<String>;
}

impl<F: Fn(&str) -> Option<String>> Lookup for F {
    fn lookup(&self, name: &str) -> Option<String> {
        self(name)
    }
}

/// Where a node sits, so that a service's `cloud_init` can be told apart
/// from a key of the same name deeper down.
#[derive(Clone, Copy, PartialEq)]
enum Level {
    Top,
    Services,
    Service,
    Below,
}

/// Interpolates every scalar value below `node`, recording errors.
pub fn interpolate_tree(node: &mut Node, env: &dyn Lookup, path: &str, diags: &mut Diags) {
    let level = if path.is_empty() {
        Level::Top
    } else {
        Level::Below
    };
    walk(node, env, path, level, diags);
}

fn walk(node: &mut Node, env: &dyn Lookup, path: &str, level: Level, diags: &mut Diags) {
    match &mut node.kind {
        Kind::Scalar { text, .. } => {
            if text.contains('$') {
                let mut unset = Vec::new();
                match interpolate_noting_unset(text, env, &mut unset) {
                    Ok(value) => *text = value,
                    Err(message) => diags.push(&node.pos, path, message),
                }
                for name in unset {
                    diags.warn(
                        &node.pos,
                        path,
                        format!("variable {name} is not set, using an empty string; set it or give a default with ${{{name}:-…}}"),
                    );
                }
            }
        }
        Kind::Seq(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                walk(item, env, &format!("{path}[{i}]"), Level::Below, diags);
            }
        }
        Kind::Map(entries) => {
            for (k, v) in entries.iter_mut() {
                let key = k.as_str().unwrap_or_default();
                if key == "cloud_init" && level == Level::Service {
                    continue;
                }
                let below = match (level, key) {
                    (Level::Top, "services") => Level::Services,
                    (Level::Services, _) => Level::Service,
                    _ => Level::Below,
                };
                let child = if path.is_empty() {
                    key.to_string()
                } else {
                    format!("{path}.{key}")
                };
                walk(v, env, &child, below, diags);
            }
        }
        Kind::Null => {}
    }
}

fn is_name_start(c: char) -> bool {
    c == '_' || c.is_ascii_alphabetic()
}

fn is_name_char(c: char) -> bool {
    c == '_' || c.is_ascii_alphanumeric()
}

/// Interpolates one string. The error text says what to fix.
pub fn interpolate(input: &str, env: &dyn Lookup) -> Result<String, String> {
    interpolate_noting_unset(input, env, &mut Vec::new())
}

/// Like [`interpolate`], and adds to `unset` every `$VAR` or `${VAR}` that
/// had no value and no default (Compose warns about those).
pub fn interpolate_noting_unset(
    input: &str,
    env: &dyn Lookup,
    unset: &mut Vec<String>,
) -> Result<String, String> {
    let chars: Vec<char> = input.chars().collect();
    let mut out = String::with_capacity(input.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c != '$' {
            out.push(c);
            i += 1;
            continue;
        }
        match chars.get(i + 1) {
            Some('$') => {
                out.push('$');
                i += 2;
            }
            Some('{') => {
                let close = matching_brace(&chars, i + 2).ok_or_else(|| {
                    format!("invalid interpolation format in {input:?}: missing '}}'")
                })?;
                let body: String = chars[i + 2..close].iter().collect();
                out.push_str(&expand_braced(&body, input, env, unset)?);
                i = close + 1;
            }
            Some(&n) if is_name_start(n) => {
                let start = i + 1;
                let mut end = start;
                while end < chars.len() && is_name_char(chars[end]) {
                    end += 1;
                }
                let name: String = chars[start..end].iter().collect();
                match env.lookup(&name) {
                    Some(value) => out.push_str(&value),
                    None => unset.push(name),
                }
                i = end;
            }
            _ => {
                return Err(format!(
                    "invalid interpolation format in {input:?}: write $$ for a literal $"
                ));
            }
        }
    }
    Ok(out)
}

/// Index of the `}` closing a `${` whose body starts at `from`.
fn matching_brace(chars: &[char], from: usize) -> Option<usize> {
    let mut depth = 1usize;
    let mut i = from;
    while i < chars.len() {
        match chars[i] {
            '$' if chars.get(i + 1) == Some(&'{') => {
                depth += 1;
                i += 2;
                continue;
            }
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

fn expand_braced(
    body: &str,
    input: &str,
    env: &dyn Lookup,
    unset: &mut Vec<String>,
) -> Result<String, String> {
    let name_len = body.chars().take_while(|c| is_name_char(*c)).count();
    let name = &body[..name_len];
    if name.is_empty() || !body.starts_with(is_name_start) {
        return Err(format!(
            "invalid interpolation format in {input:?}: ${{{body}}} does not start with a variable name"
        ));
    }
    let rest = &body[name_len..];
    let value = env.lookup(name);
    let (op, arg) = if let Some(arg) = rest.strip_prefix(":-") {
        (":-", arg)
    } else if let Some(arg) = rest.strip_prefix(":?") {
        (":?", arg)
    } else if let Some(arg) = rest.strip_prefix(":+") {
        (":+", arg)
    } else if let Some(arg) = rest.strip_prefix('-') {
        ("-", arg)
    } else if let Some(arg) = rest.strip_prefix('?') {
        ("?", arg)
    } else if let Some(arg) = rest.strip_prefix('+') {
        ("+", arg)
    } else if rest.is_empty() {
        ("", "")
    } else {
        return Err(format!(
            "invalid interpolation format in {input:?}: unknown operator in ${{{body}}}"
        ));
    };
    let set_nonempty = value.as_deref().is_some_and(|v| !v.is_empty());
    match op {
        "" => Ok(value.unwrap_or_else(|| {
            unset.push(name.to_string());
            String::new()
        })),
        ":-" if set_nonempty => Ok(value.unwrap_or_default()),
        "-" if value.is_some() => Ok(value.unwrap_or_default()),
        ":-" | "-" => interpolate_noting_unset(arg, env, unset),
        ":+" if set_nonempty => interpolate_noting_unset(arg, env, unset),
        "+" if value.is_some() => interpolate_noting_unset(arg, env, unset),
        ":+" | "+" => Ok(String::new()),
        ":?" if set_nonempty => Ok(value.unwrap_or_default()),
        "?" if value.is_some() => Ok(value.unwrap_or_default()),
        _ => {
            let message = interpolate_noting_unset(arg, env, unset)?;
            let state = if value.is_some() { "empty" } else { "unset" };
            let message = if message.is_empty() {
                String::new()
            } else {
                format!(": {message}")
            };
            Err(format!(
                "required variable {name} is {state}{message}; set it in the environment or in .env"
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "SET" => Some("value".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    fn run(s: &str) -> Result<String, String> {
        interpolate(s, &env)
    }

    #[test]
    fn expands_every_form() {
        assert_eq!(run("$SET/${SET}").as_deref(), Ok("value/value"));
        assert_eq!(
            run("${UNSET:-d}|${EMPTY:-d}|${EMPTY-d}|${UNSET-d}").as_deref(),
            Ok("d|d||d")
        );
        assert_eq!(
            run("${SET:+alt}|${EMPTY:+alt}|${EMPTY+alt}|${UNSET+alt}").as_deref(),
            Ok("alt||alt|")
        );
        assert_eq!(run("$$SET costs $$5").as_deref(), Ok("$SET costs $5"));
        assert_eq!(run("${UNSET:-${SET}}").as_deref(), Ok("value"));
        assert_eq!(run("$UNSET.").as_deref(), Ok("."));
    }

    #[test]
    fn required_variable_quotes_the_message() {
        let err = run("${UNSET:?please set UNSET}").unwrap_err();
        assert!(
            err.contains("required variable UNSET is unset: please set UNSET"),
            "{err}"
        );
        let err = run("${EMPTY:?need it}").unwrap_err();
        assert!(err.contains("EMPTY is empty: need it"), "{err}");
        assert_eq!(run("${EMPTY?x}").as_deref(), Ok(""));
        let err = run("${UNSET:?}").unwrap_err();
        assert!(
            err.starts_with("required variable UNSET is unset; set it"),
            "{err}"
        );
    }

    #[test]
    fn notes_unset_variables_without_defaults() {
        let mut unset = Vec::new();
        let got = interpolate_noting_unset("$A ${B} ${C:-x} ${D-y} ${SET}", &env, &mut unset);
        assert_eq!(got.as_deref(), Ok("  x y value"));
        assert_eq!(unset, ["A", "B"]);
    }

    #[test]
    fn rejects_malformed_templates() {
        assert!(run("${SET").unwrap_err().contains("missing '}'"));
        assert!(run("cost $5").unwrap_err().contains("$$"));
        assert!(run("${1x}").is_err());
        assert!(run("${SET!x}").is_err());
    }
}
