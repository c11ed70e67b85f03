//! Typed reads from the YAML tree that record an error (with position and
//! key path) instead of failing, so decoding reports everything at once.

use crate::diag::{Diags, did_you_mean};
use crate::yaml::{Kind, Node, ScalarType};

pub struct Reader {
    pub diags: Diags,
}

pub fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

pub fn item(path: &str, index: usize) -> String {
    format!("{path}[{index}]")
}

impl Reader {
    pub fn error(&mut self, node: &Node, path: &str, message: impl Into<String>) {
        self.diags.push(&node.pos, path, message);
    }

    /// Checks that `node` is a mapping whose keys are all in `known` (or
    /// `x-*`). Returns the entries when it is a mapping.
    pub fn mapping<'n>(
        &mut self,
        node: &'n Node,
        path: &str,
        known: &[&str],
    ) -> Option<&'n [(Node, Node)]> {
        self.mapping_of(node, path, &[known])
    }

    pub fn mapping_of<'n>(
        &mut self,
        node: &'n Node,
        path: &str,
        known: &[&[&str]],
    ) -> Option<&'n [(Node, Node)]> {
        let Some(entries) = node.as_map() else {
            self.error(
                node,
                path,
                format!("must be a mapping, found {}", node.type_name()),
            );
            return None;
        };
        for (key, _) in entries {
            let name = key.as_str().unwrap_or_default();
            if name.starts_with("x-") || known.iter().any(|k| k.contains(&name)) {
                continue;
            }
            let suggestion = did_you_mean(name, known.iter().flat_map(|k| k.iter().copied()))
                .map(|s| format!("; did you mean {s:?}?"))
                .unwrap_or_else(|| {
                    "; remove it or prefix it with x- to keep it as an extension".into()
                });
            self.diags.push(
                &key.pos,
                child(path, name),
                format!("unknown key{suggestion}"),
            );
        }
        Some(entries)
    }

    pub fn string(&mut self, node: &Node, path: &str) -> Option<String> {
        match &node.kind {
            Kind::Scalar { text, .. } => Some(text.clone()),
            _ => {
                self.error(
                    node,
                    path,
                    format!("must be a string, found {}", node.type_name()),
                );
                None
            }
        }
    }

    /// A string, or null for "not set".
    pub fn opt_string(&mut self, node: Option<&Node>, path: &str) -> Option<String> {
        match node {
            Some(n) if !n.is_null() => self.string(n, path),
            _ => None,
        }
    }

    pub fn integer(&mut self, node: &Node, path: &str) -> Option<i64> {
        let parsed = match &node.kind {
            Kind::Scalar { text, .. } => text.trim().parse::<i64>().ok(),
            _ => None,
        };
        if parsed.is_none() {
            self.error(
                node,
                path,
                format!("must be an integer, found {}", describe(node)),
            );
        }
        parsed
    }

    pub fn unsigned(&mut self, node: &Node, path: &str, max: u64) -> Option<u64> {
        self.unsigned_in(node, path, 0, max)
    }

    /// An integer from `min` to `max`; the message names that range.
    pub fn unsigned_in(&mut self, node: &Node, path: &str, min: u64, max: u64) -> Option<u64> {
        let value = self.integer(node, path)?;
        match u64::try_from(value) {
            Ok(v) if (min..=max).contains(&v) => Some(v),
            _ => {
                self.error(
                    node,
                    path,
                    format!("must be between {min} and {max}, found {value}"),
                );
                None
            }
        }
    }

    pub fn number(&mut self, node: &Node, path: &str) -> Option<f64> {
        let parsed = match &node.kind {
            Kind::Scalar { text, .. } => text.trim().parse::<f64>().ok().filter(|f| f.is_finite()),
            _ => None,
        };
        if parsed.is_none() {
            self.error(
                node,
                path,
                format!("must be a number, found {}", describe(node)),
            );
        }
        parsed
    }

    pub fn boolean(&mut self, node: &Node, path: &str) -> Option<bool> {
        let parsed = match node.scalar_type() {
            ScalarType::Bool(b) => Some(b),
            // Interpolated values arrive as strings: read them as Compose does.
            ScalarType::Str => match node.as_str().map(str::to_ascii_lowercase).as_deref() {
                Some("true" | "yes" | "1") => Some(true),
                Some("false" | "no" | "0") => Some(false),
                _ => None,
            },
            _ => None,
        };
        if parsed.is_none() {
            self.error(
                node,
                path,
                format!("must be true or false, found {}", describe(node)),
            );
        }
        parsed
    }

    pub fn list<'n>(&mut self, node: &'n Node, path: &str) -> &'n [Node] {
        match &node.kind {
            Kind::Seq(items) => items,
            Kind::Null => &[],
            _ => {
                self.error(
                    node,
                    path,
                    format!("must be a list, found {}", node.type_name()),
                );
                &[]
            }
        }
    }

    /// A list of strings.
    pub fn strings(&mut self, node: &Node, path: &str) -> Vec<String> {
        let items = self.list(node, path);
        items
            .iter()
            .enumerate()
            .filter_map(|(i, n)| self.string(n, &item(path, i)))
            .collect()
    }

    /// A string or a list of strings.
    pub fn string_or_list(&mut self, node: &Node, path: &str) -> Vec<String> {
        match &node.kind {
            Kind::Scalar { text, .. } => vec![text.clone()],
            Kind::Null => Vec::new(),
            _ => self.strings(node, path),
        }
    }

    /// Compose's "map or list" syntax: `{K: V}` or `["K=V", "K"]`.
    /// `separators` are tried in order on list entries.
    pub fn key_values(
        &mut self,
        node: &Node,
        path: &str,
        separators: &[char],
    ) -> Vec<(String, Option<String>)> {
        match &node.kind {
            Kind::Null => Vec::new(),
            Kind::Map(entries) => entries
                .iter()
                .map(|(k, v)| {
                    let key = k.as_str().unwrap_or_default().to_string();
                    let value = match &v.kind {
                        Kind::Null => None,
                        Kind::Scalar { text, .. } => Some(text.clone()),
                        _ => {
                            self.error(
                                v,
                                &child(path, &key),
                                "must be a string, number or boolean",
                            );
                            None
                        }
                    };
                    (key, value)
                })
                .collect(),
            Kind::Seq(items) => items
                .iter()
                .enumerate()
                .filter_map(|(i, n)| {
                    let text = self.string(n, &item(path, i))?;
                    let split = separators.iter().find_map(|sep| text.find(*sep));
                    Some(match split {
                        Some(at) => (text[..at].to_string(), Some(text[at + 1..].to_string())),
                        None => (text, None),
                    })
                })
                .collect(),
            Kind::Scalar { .. } => {
                self.error(
                    node,
                    path,
                    "must be a mapping or a list of KEY=VALUE strings",
                );
                Vec::new()
            }
        }
    }
}

fn describe(node: &Node) -> String {
    match node.as_str() {
        Some(text) => format!("{text:?}"),
        None => node.type_name().to_string(),
    }
}

/// Compose duration strings (`1m30s`, `500ms`, `2h`, `10`) in milliseconds.
pub fn parse_duration_ms(text: &str) -> Option<u64> {
    let text = text.trim();
    if let Ok(seconds) = text.parse::<u64>() {
        return seconds.checked_mul(1000);
    }
    let mut total = 0f64;
    let mut rest = text;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if number_len == 0 {
            return None;
        }
        let value: f64 = rest[..number_len].parse().ok()?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let factor = match &rest[..unit_len] {
            "ns" => 1e-6,
            "us" | "µs" => 1e-3,
            "ms" => 1.0,
            "s" => 1e3,
            "m" => 60e3,
            "h" => 3600e3,
            _ => return None,
        };
        total += value * factor;
        rest = &rest[unit_len..];
    }
    (total.is_finite() && total < 1e15).then(|| total.round() as u64)
}

/// Byte sizes (`512m`, `2g`, `1.5G`, `20G`, `1024`): powers of 1024, as
/// Compose reads memory limits.
pub fn parse_bytes(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let value: f64 = text[..split].parse().ok()?;
    let unit = text[split..].trim().to_ascii_lowercase();
    let factor: f64 = match unit.as_str() {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tb" | "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let bytes = value * factor;
    (bytes.is_finite() && bytes < 1.8e19).then(|| bytes.ceil() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ms("1m30s"), Some(90_000));
        assert_eq!(parse_duration_ms("500ms"), Some(500));
        assert_eq!(parse_duration_ms("1.5s"), Some(1500));
        assert_eq!(parse_duration_ms("2h"), Some(7_200_000));
        assert_eq!(parse_duration_ms("10"), Some(10_000));
        assert_eq!(parse_duration_ms("10x"), None);
        assert_eq!(parse_duration_ms("s"), None);
        assert_eq!(parse_duration_ms(""), None);
    }

    #[test]
    fn byte_sizes() {
        assert_eq!(parse_bytes("512m"), Some(512 << 20));
        assert_eq!(parse_bytes("2g"), Some(2 << 30));
        assert_eq!(parse_bytes("1.5G"), Some(3 << 29));
        assert_eq!(parse_bytes("20GB"), Some(20 << 30));
        assert_eq!(parse_bytes("1024"), Some(1024));
        assert_eq!(parse_bytes("12q"), None);
        assert_eq!(parse_bytes("m"), None);
    }
}
