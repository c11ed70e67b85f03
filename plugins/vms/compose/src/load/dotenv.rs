//! `.env` and `env_file` parsing, as Compose parses them.
//!
//! Quotes, comments and an optional `export` prefix are understood; double
//! quoted and unquoted values are interpolated with the variables defined so
//! far. `format: raw` takes every value verbatim.

use std::path::Path;

use crate::load::interpolate::{Lookup, interpolate};

/// One `KEY=VALUE` line; `value` is `None` for a bare `KEY` that is unset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvEntry {
    pub key: String,
    pub value: Option<String>,
    pub line: usize,
}

/// Reads an env file; errors name the file and line.
pub fn read_env_file(path: &Path, raw: bool, env: &dyn Lookup) -> Result<Vec<EnvEntry>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read env file: {e}", path.display()))?;
    if raw {
        Ok(parse_raw(&text))
    } else {
        parse(&text, env).map_err(|(line, msg)| format!("{}:{line}: {msg}", path.display()))
    }
}

/// `format: raw`: `KEY=VALUE` taken verbatim; blank and `#` lines skipped.
pub fn parse_raw(text: &str) -> Vec<EnvEntry> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|(i, l)| match l.split_once('=') {
            Some((k, v)) => EnvEntry {
                key: k.trim().to_string(),
                value: Some(v.to_string()),
                line: i + 1,
            },
            None => EnvEntry {
                key: l.trim().to_string(),
                value: None,
                line: i + 1,
            },
        })
        .collect()
}

fn valid_key(key: &str) -> bool {
    key.starts_with(|c: char| c == '_' || c.is_ascii_alphabetic())
        && key
            .chars()
            .all(|c| c == '_' || c == '.' || c == '-' || c.is_ascii_alphanumeric())
}

/// Parses `.env` syntax. Variables already defined in the file shadow `env`
/// for later interpolation.
pub fn parse(text: &str, env: &dyn Lookup) -> Result<Vec<EnvEntry>, (usize, String)> {
    let mut entries: Vec<EnvEntry> = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line_no = i + 1;
        let line = lines[i].trim_start();
        i += 1;
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line
            .strip_prefix("export ")
            .map(str::trim_start)
            .unwrap_or(line);
        let Some(split) = line.find(['=', ':']) else {
            let key = line.trim();
            if !valid_key(key) {
                return Err((
                    line_no,
                    format!("invalid variable name {key:?}; use KEY=VALUE"),
                ));
            }
            entries.push(EnvEntry {
                key: key.to_string(),
                value: env.lookup(key),
                line: line_no,
            });
            continue;
        };
        let key = line[..split].trim();
        if !valid_key(key) {
            return Err((
                line_no,
                format!("invalid variable name {key:?}; use KEY=VALUE"),
            ));
        }
        let rest = line[split + 1..].trim_start();
        let scope = |name: &str| {
            entries
                .iter()
                .rev()
                .find(|e| e.key == name)
                .and_then(|e| e.value.clone())
                .or_else(|| env.lookup(name))
        };
        let value = if let Some(body) = rest.strip_prefix('\'') {
            let (content, consumed) = quoted(body, '\'', &lines, &mut i).ok_or((
                line_no,
                "unterminated single quote; close it with '".to_string(),
            ))?;
            let _ = consumed;
            content
        } else if let Some(body) = rest.strip_prefix('"') {
            let (content, _) = quoted(body, '"', &lines, &mut i).ok_or((
                line_no,
                "unterminated double quote; close it with \"".to_string(),
            ))?;
            let unescaped = unescape(&content);
            interpolate(&unescaped, &scope).map_err(|e| (line_no, e))?
        } else {
            let unquoted = match rest.find(" #") {
                Some(hash) => &rest[..hash],
                None if rest.starts_with('#') => "",
                None => rest,
            };
            interpolate(unquoted.trim_end(), &scope).map_err(|e| (line_no, e))?
        };
        entries.push(EnvEntry {
            key: key.to_string(),
            value: Some(value),
            line: line_no,
        });
    }
    Ok(entries)
}

/// Reads a quoted value that may continue over the following lines.
fn quoted(first: &str, quote: char, lines: &[&str], next: &mut usize) -> Option<(String, usize)> {
    let mut content = String::new();
    let mut current = first.to_string();
    let mut consumed = 0;
    loop {
        let mut escaped = false;
        for (idx, c) in current.char_indices() {
            if quote == '"' && c == '\\' && !escaped {
                escaped = true;
                continue;
            }
            if c == quote && !escaped {
                content.push_str(&current[..idx]);
                return Some((content, consumed));
            }
            escaped = false;
        }
        content.push_str(&current);
        content.push('\n');
        let line = lines.get(*next)?;
        *next += 1;
        consumed += 1;
        current = (*line).to_string();
    }
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        (name == "HOME").then(|| "/home/me".to_string())
    }

    fn values(text: &str) -> Vec<(String, Option<String>)> {
        parse(text, &env)
            .unwrap()
            .into_iter()
            .map(|e| (e.key, e.value))
            .collect()
    }

    #[test]
    fn parses_compose_env_syntax() {
        let got = values(
            "# comment\nexport A=1\nB = two words # note\nC='$HOME lit'\nD=\"x\\ny $HOME\"\nE=${A}b\nHOME\nMISSING\nF=\"multi\nline\"\nG=a#b\n",
        );
        let want = vec![
            ("A", Some("1")),
            ("B", Some("two words")),
            ("C", Some("$HOME lit")),
            ("D", Some("x\ny /home/me")),
            ("E", Some("1b")),
            ("HOME", Some("/home/me")),
            ("MISSING", None),
            ("F", Some("multi\nline")),
            ("G", Some("a#b")),
        ];
        let want: Vec<(String, Option<String>)> = want
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.map(str::to_string)))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn reports_the_line_of_bad_entries() {
        assert_eq!(parse("A=1\n9X=2\n", &env).unwrap_err().0, 2);
        assert_eq!(parse("A='open\n", &env).unwrap_err().0, 1);
    }

    #[test]
    fn raw_format_keeps_values_verbatim() {
        let got = parse_raw("A='q' # not a comment\n\n# c\nB=$HOME\n");
        assert_eq!(got[0].value.as_deref(), Some("'q' # not a comment"));
        assert_eq!(got[1].value.as_deref(), Some("$HOME"));
    }
}
