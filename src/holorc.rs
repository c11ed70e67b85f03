//! holorc(5): `$ROOT/etc/holorc.d/*` in byte order, then `$ROOT/etc/holorc`.

use crate::paths;
use std::collections::HashMap;

/// One `plugin` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginDecl {
    pub id: String,
    /// The binary as Holo 3 prints it (cleaned, or as given after `=`).
    pub binary: String,
    pub file: String,
    pub line: usize,
}

/// A fatal holorc error; the text is printed after `!! `.
#[derive(Debug, PartialEq, Eq)]
pub struct HolorcError(pub String);

/// Lists the files to read, in order. A missing `etc/holorc` is fine when
/// snippets exist (Holo 3 fails there).
pub fn config_files(root: &str) -> Result<Vec<String>, HolorcError> {
    let dir = paths::join(root, "etc/holorc.d");
    let mut files = Vec::new();
    match std::fs::read_dir(&dir) {
        Ok(entries) => {
            for entry in entries {
                let entry = entry.map_err(|e| {
                    HolorcError(format!("cannot read {dir}: {}", paths::errno_text(&e)))
                })?;
                let is_dir = std::fs::metadata(entry.path()).is_ok_and(|m| m.is_dir());
                if !is_dir {
                    files.push(paths::join(&dir, &entry.file_name().to_string_lossy()));
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(HolorcError(format!(
                "cannot read {dir}: {}",
                paths::errno_text(&e)
            )));
        }
    }
    files.sort();
    let holorc = paths::join(root, "etc/holorc");
    if std::path::Path::new(&holorc).exists() || files.is_empty() {
        files.push(holorc);
    }
    Ok(files)
}

/// Reads and parses every holorc file.
pub fn read(root: &str) -> Result<Vec<PluginDecl>, HolorcError> {
    let mut decls = Vec::new();
    for file in config_files(root)? {
        let text = std::fs::read(&file).map_err(|e| {
            HolorcError(format!(
                "cannot read {file}: open {file}: {}",
                paths::errno_text(&e)
            ))
        })?;
        decls.extend(parse(&file, &String::from_utf8_lossy(&text), root)?);
    }
    check_duplicates(&decls)?;
    Ok(decls)
}

/// `[a-z0-9][a-z0-9-]*`
pub fn is_valid_plugin_id(id: &str) -> bool {
    let mut bytes = id.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z' | b'0'..=b'9'))
        && bytes.all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'-'))
}

/// Parses one holorc file.
pub fn parse(file: &str, text: &str, root: &str) -> Result<Vec<PluginDecl>, HolorcError> {
    let mut decls = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some(rest) = line.strip_prefix("plugin ") else {
            return Err(HolorcError(format!(
                "cannot parse configuration: unknown command: {line}"
            )));
        };
        let rest = rest.trim();
        let (id, binary) = match rest.split_once('=') {
            Some((id, binary)) => (id.to_string(), binary.to_string()),
            None => (
                rest.to_string(),
                paths::join(root, &format!("usr/lib/holo/holo-{rest}")),
            ),
        };
        if !is_valid_plugin_id(&id) {
            return Err(HolorcError(format!(
                "{file}:{}: invalid plugin ID \"{id}\": a plugin ID must match [a-z0-9][a-z0-9-]* (lowercase letters, digits and dashes)",
                index + 1
            )));
        }
        if binary.is_empty() {
            return Err(HolorcError(format!(
                "{file}:{}: plugin {id} has an empty binary path after \"=\"; write `plugin {id}` or `plugin {id}=/path/to/binary`",
                index + 1
            )));
        }
        decls.push(PluginDecl {
            id,
            binary,
            file: file.to_string(),
            line: index + 1,
        });
    }
    Ok(decls)
}

fn check_duplicates(decls: &[PluginDecl]) -> Result<(), HolorcError> {
    let mut seen: HashMap<&str, &PluginDecl> = HashMap::new();
    for decl in decls {
        if let Some(first) = seen.get(decl.id.as_str()) {
            return Err(HolorcError(format!(
                "plugin {} is declared twice, at {}:{} and at {}:{}; remove one of the two lines",
                decl.id, first.file, first.line, decl.file, decl.line
            )));
        }
        seen.insert(&decl.id, decl);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plugin_lines_comments_and_blank_lines() {
        let text = "# comment\n\n  plugin files  \nplugin foo=./bin/holo-foo\n";
        let decls = parse("rc", text, "./target/").unwrap();
        assert_eq!(decls.len(), 2);
        assert_eq!(decls[0].id, "files");
        assert_eq!(decls[0].binary, "target/usr/lib/holo/holo-files");
        assert_eq!(decls[0].line, 3);
        assert_eq!(decls[1].id, "foo");
        assert_eq!(decls[1].binary, "./bin/holo-foo");
    }

    #[test]
    fn binary_splits_at_first_equals_sign() {
        let decls = parse("rc", "plugin foo=/a=b\n", "/").unwrap();
        assert_eq!(decls[0].binary, "/a=b");
    }

    #[test]
    fn unknown_command_keeps_holo3_text() {
        let err = parse("rc", "plugins foo\n", "/").unwrap_err();
        assert_eq!(
            err.0,
            "cannot parse configuration: unknown command: plugins foo"
        );
        let err = parse("rc", "plugin\n", "/").unwrap_err();
        assert_eq!(err.0, "cannot parse configuration: unknown command: plugin");
    }

    #[test]
    fn invalid_id_names_file_and_line() {
        let err = parse("etc/holorc", "\nplugin Foo\n", "/").unwrap_err();
        assert!(
            err.0.starts_with("etc/holorc:2: invalid plugin ID \"Foo\""),
            "{}",
            err.0
        );
        assert!(parse("rc", "plugin -x\n", "/").is_err());
        assert!(parse("rc", "plugin a_b\n", "/").is_err());
        assert!(parse("rc", "plugin 9a-b\n", "/").is_ok());
    }

    #[test]
    fn duplicate_names_both_places() {
        let mut decls = parse("a", "plugin x\n", "/").unwrap();
        decls.extend(parse("b", "\n\nplugin x=/bin/x\n", "/").unwrap());
        let err = check_duplicates(&decls).unwrap_err();
        assert_eq!(
            err.0,
            "plugin x is declared twice, at a:1 and at b:3; remove one of the two lines"
        );
    }

    #[test]
    fn plugin_id_validator() {
        assert!(is_valid_plugin_id("users-groups"));
        assert!(is_valid_plugin_id("0"));
        assert!(!is_valid_plugin_id(""));
        assert!(!is_valid_plugin_id("-a"));
        assert!(!is_valid_plugin_id("a b"));
    }
}
