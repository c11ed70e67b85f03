//! CCM's template expressions (`${ EXPR }`, `{{ EXPR }}` and the bare
//! expressions of `control`) as minijinja: `lookup()` calls and the
//! `Facts`, `Data` and `Environ` variables, with `==`, `!=`, `&&`, `||`
//! and `!`. Anything else of expr-lang has no translation.

use holo_protocol::fact_names;

/// A string with its expressions translated, or why it cannot be.
pub fn translate_string(text: &str) -> Result<String, String> {
    if text.contains("kvGet") {
        return Err(
            "kvGet reads Choria's key-value store, which holo has not; put the value in data"
                .into(),
        );
    }
    let mut out = String::new();
    let mut rest = text;
    while let Some((start, open, close)) = next_expression(rest) {
        out.push_str(&rest[..start]);
        let after = &rest[start + open.len()..];
        let Some(end) = after.find(close) else {
            return Err(format!("{open} without a closing {close}"));
        };
        out.push_str("{{ ");
        out.push_str(&translate_expr(after[..end].trim())?);
        out.push_str(" }}");
        rest = &after[end + close.len()..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The first `${` or `{{` in `text`: its offset and delimiters.
fn next_expression(text: &str) -> Option<(usize, &'static str, &'static str)> {
    let dollar = text.find("${").map(|at| (at, "${", "}"));
    let braces = text.find("{{").map(|at| (at, "{{", "}}"));
    match (dollar, braces) {
        (Some(a), Some(b)) => Some(if a.0 < b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

/// One expr-lang expression as a minijinja expression.
pub fn translate_expr(expr: &str) -> Result<String, String> {
    let tokens = tokenize(expr)?;
    let mut out = Vec::new();
    let mut at = 0;
    while at < tokens.len() {
        let token = tokens[at].as_str();
        if token == "lookup" {
            let (text, next) = lookup_call(&tokens, at, expr)?;
            out.push(text);
            at = next;
            continue;
        }
        out.push(match token {
            "&&" => "and".to_string(),
            "||" => "or".to_string(),
            "!" => "not".to_string(),
            "nil" => "none".to_string(),
            "==" | "!=" | "<" | ">" | "<=" | ">=" | "(" | ")" | "true" | "false" => {
                token.to_string()
            }
            _ if is_literal(token) => token.to_string(),
            _ => variable(token).ok_or_else(|| unsupported(expr))?,
        });
        at += 1;
    }
    Ok(out.join(" "))
}

fn unsupported(expr: &str) -> String {
    format!(
        "expression `{expr}` has no minijinja form here: only lookup() and Facts, Data and \
         Environ with ==, !=, &&, || and ! translate, and only facts that holo gathers \
         (holo-data(5)); write it by hand"
    )
}

/// `lookup('PATH'[, DEFAULT])` from token `at`; the next token after it.
fn lookup_call(tokens: &[String], at: usize, expr: &str) -> Result<(String, usize), String> {
    let path = tokens
        .get(at + 2)
        .filter(|_| tokens.get(at + 1).is_some_and(|t| t == "("));
    let path = path
        .and_then(|quoted| unquote(quoted))
        .and_then(|path| map_path(&path))
        .ok_or_else(|| unsupported(expr))?;
    match tokens.get(at + 3).map(String::as_str) {
        Some(")") => Ok((format!("lookup('{path}')"), at + 4)),
        Some(",") if tokens.get(at + 5).is_some_and(|t| t == ")") => {
            let default = &tokens[at + 4];
            if !is_literal(default) {
                return Err(unsupported(expr));
            }
            Ok((format!("lookup('{path}', {default})"), at + 6))
        }
        _ => Err(unsupported(expr)),
    }
}

fn is_literal(token: &str) -> bool {
    unquote(token).is_some() || token.parse::<f64>().is_ok()
}

fn unquote(token: &str) -> Option<String> {
    let quote = token.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let inner = token.strip_prefix(quote)?.strip_suffix(quote)?;
    Some(inner.to_string())
}

/// `Facts.x`, `Data.x` and `Environ.X` as holo's variables.
fn variable(token: &str) -> Option<String> {
    let (root, rest) = token.split_once('.')?;
    let lower = match root {
        "Facts" => "facts",
        "Data" => "data",
        "Environ" => "env",
        _ => return None,
    };
    map_path(&format!("{lower}.{rest}"))
}

/// A lookup path of CCM as holo's: data and env as they are, the facts
/// that holo gathers under their names.
pub fn map_path(path: &str) -> Option<String> {
    let (root, rest) = path.split_once('.')?;
    match root {
        "data" | "env" => Some(path.to_string()),
        "facts" => map_fact(rest).map(|fact| format!("facts.{fact}")),
        _ => None,
    }
}

/// CCM's facts (gopsutil's names) that have a holo fact, and holo's own
/// (but `os` alone, which is a table in holo and a word in CCM).
fn map_fact(path: &str) -> Option<&str> {
    let root = path.split('.').next().unwrap_or_default();
    if fact_names::is_gathered(root) && path != "os" {
        return Some(path);
    }
    Some(match path {
        "host.info.hostname" => "hostname",
        "host.info.platform" | "host.info.platformFamily" => "os.id",
        "host.info.platformVersion" => "os.version_id",
        "host.info.kernelArch" => "arch",
        "host.info.kernelVersion" => "kernel",
        "host.info.virtualizationSystem" => "virtual",
        _ => return None,
    })
}

/// Words, quoted strings and operators of an expression.
fn tokenize(expr: &str) -> Result<Vec<String>, String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut tokens = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        let start = at;
        if c.is_whitespace() {
            at += 1;
            continue;
        }
        if c == '\'' || c == '"' {
            at += 1;
            while at < chars.len() && chars[at] != c {
                at += 1;
            }
            if at == chars.len() {
                return Err(format!("expression `{expr}` has an unclosed quote"));
            }
            at += 1;
        } else if c.is_alphanumeric() || c == '_' || c == '.' {
            while at < chars.len() && (chars[at].is_alphanumeric() || "_.".contains(chars[at])) {
                at += 1;
            }
        } else {
            let two: String = chars[at..chars.len().min(at + 2)].iter().collect();
            at += if ["==", "!=", "&&", "||", "<=", ">="].contains(&two.as_str()) {
                2
            } else {
                1
            };
        }
        tokens.push(chars[start..at].iter().collect());
    }
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_and_variables_become_minijinja() {
        assert_eq!(
            translate_string("${ lookup('data.package_name') }").unwrap(),
            "{{ lookup('data.package_name') }}"
        );
        assert_eq!(
            translate_string("os:{{ lookup(\"facts.host.info.platformFamily\") }}").unwrap(),
            "os:{{ lookup('facts.os.id') }}"
        );
        assert_eq!(
            translate_string("port {{ Data.port }}!").unwrap(),
            "port {{ data.port }}!"
        );
        assert_eq!(translate_string("plain").unwrap(), "plain");
        assert_eq!(
            translate_expr("lookup('data.x', 'y') == 'z' && !(Environ.CI == '1')").unwrap(),
            "lookup('data.x', 'y') == 'z' and not ( env.CI == '1' )"
        );
    }

    #[test]
    fn the_rest_of_expr_lang_is_refused() {
        for bad in [
            "${ lookup('facts.host.info.bootTime') }",
            "${ upper(Data.x) }",
            "${ kvGet('CCM', 'x') }",
            "${ lookup('data.x')",
        ] {
            assert!(translate_string(bad).is_err(), "{bad}");
        }
    }
}
