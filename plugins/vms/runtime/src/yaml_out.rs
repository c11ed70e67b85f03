//! A block-style YAML writer for the documents cloud-init reads.
//!
//! Every string is written double-quoted with JSON escapes (a JSON string is
//! a valid YAML double-quoted scalar), so no YAML 1.1 reader can take a MAC
//! like `52:54:00:12:34:56` for a sexagesimal number or `no` for a boolean.
//! Keys are written bare only when they are plain words.

use serde_json::Value;

/// Renders `value` as a YAML document body.
pub fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    write_node(value, 0, &mut out);
    out
}

fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::Null => Some("null".into()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(quote(s)),
        Value::Array(items) if items.is_empty() => Some("[]".into()),
        Value::Object(map) if map.is_empty() => Some("{}".into()),
        _ => None,
    }
}

fn quote(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

fn key(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        && text.bytes().next().is_some_and(|b| b.is_ascii_alphabetic());
    if plain { text.to_string() } else { quote(text) }
}

/// Writes a collection whose lines all start at `indent` spaces.
fn write_node(value: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                out.push_str(&pad);
                out.push_str(&key(k));
                out.push(':');
                match scalar(v) {
                    Some(text) => {
                        out.push(' ');
                        out.push_str(&text);
                        out.push('\n');
                    }
                    None => {
                        out.push('\n');
                        write_node(v, indent + 2, out);
                    }
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                out.push_str(&pad);
                out.push_str("- ");
                match scalar(item) {
                    Some(text) => {
                        out.push_str(&text);
                        out.push('\n');
                    }
                    None => {
                        // The item's first line goes after the dash.
                        let mut nested = String::new();
                        write_node(item, indent + 2, &mut nested);
                        out.push_str(nested.trim_start_matches(' '));
                    }
                }
            }
        }
        other => {
            out.push_str(&pad);
            out.push_str(&scalar(other).unwrap_or_default());
            out.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nests_maps_and_lists_and_quotes_every_string() {
        let doc = json!({
            "a": {"mac": "52:54:00:12:34:56", "on": true},
            "list": [["sh", "-c", "echo \"hi\"\n"], {"path": "/x", "n": 1}],
            "empty": [],
            "odd key": "no"
        });
        assert_eq!(
            to_yaml(&doc),
            "a:\n  mac: \"52:54:00:12:34:56\"\n  on: true\nempty: []\nlist:\n  - - \"sh\"\n    - \"-c\"\n    - \"echo \\\"hi\\\"\\n\"\n  - n: 1\n    path: \"/x\"\n\"odd key\": \"no\"\n"
        );
    }
}
