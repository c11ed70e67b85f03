//! holorc(5): `$ROOT/etc/holorc.d/*` in byte order, then `$ROOT/etc/holorc`.

use crate::paths;

/// One `plugin` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginDecl {
    pub id: String,
    /// The binary as Holo 3 prints it (cleaned, or as given after `=`).
    pub binary: String,
    pub file: String,
    pub line: usize,
}

/// A fatal holorc error: `message` is printed after `!! `, and `hint`, when
/// there is one, as the next line.
#[derive(Debug, PartialEq, Eq)]
pub struct HolorcError {
    pub message: String,
    pub hint: Option<String>,
}

impl HolorcError {
    fn new(message: String) -> HolorcError {
        HolorcError {
            message,
            hint: None,
        }
    }
}

/// Lists the files to read, in order. A missing `etc/holorc` is fine when
/// snippets exist (Holo 3 fails there).
pub fn config_files(root: &str) -> Result<Vec<String>, HolorcError> {
    let dir = paths::join(root, "etc/holorc.d");
    let mut files = Vec::new();
    match std::fs::read_dir(&dir) {
        Ok(entries) => {
            for entry in entries {
                let entry = entry.map_err(|e| {
                    HolorcError::new(format!("cannot read {dir}: {}", paths::errno_text(&e)))
                })?;
                let is_dir = std::fs::metadata(entry.path()).is_ok_and(|m| m.is_dir());
                if !is_dir {
                    files.push(paths::join(&dir, &entry.file_name().to_string_lossy()));
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(HolorcError::new(format!(
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

/// What holorc declares: the plugin lines up to the first bad line, and
/// that line's error. Holo 3 loads the plugins before it reaches the bad
/// line, so their messages come first.
#[derive(Debug, Default)]
pub struct Holorc {
    pub decls: Vec<PluginDecl>,
    pub error: Option<HolorcError>,
}

/// Reads every holorc file (a file that cannot be read stops everything),
/// then parses them in order.
pub fn read(root: &str) -> Holorc {
    let mut texts = Vec::new();
    let files = match config_files(root) {
        Ok(files) => files,
        Err(error) => {
            return Holorc {
                decls: Vec::new(),
                error: Some(error),
            };
        }
    };
    for file in files {
        match std::fs::read(&file) {
            Ok(text) => texts.push((file, String::from_utf8_lossy(&text).into_owned())),
            Err(e) => {
                let mut error = HolorcError::new(format!(
                    "cannot read {file}: open {file}: {}",
                    paths::errno_text(&e)
                ));
                error.hint = missing_root_hint(root);
                return Holorc {
                    decls: Vec::new(),
                    error: Some(error),
                };
            }
        }
    }
    let mut holorc = Holorc::default();
    for (file, text) in &texts {
        let (decls, error) = parse(file, text, root);
        for decl in decls {
            if let Some(first) = holorc.decls.iter().find(|d| d.id == decl.id) {
                holorc.error = Some(duplicate(first, &decl));
                return holorc;
            }
            holorc.decls.push(decl);
        }
        if error.is_some() {
            holorc.error = error;
            return holorc;
        }
    }
    holorc
}

/// When the root itself does not exist, it is `HOLO_ROOT_DIR` that is
/// wrong, not holorc: say so.
fn missing_root_hint(root: &str) -> Option<String> {
    if std::path::Path::new(root).exists() {
        return None;
    }
    Some(format!(
        "HOLO_ROOT_DIR={root} does not exist: create it (with etc/holorc), or unset HOLO_ROOT_DIR to manage /"
    ))
}

/// `[a-z0-9][a-z0-9-]*`
pub fn is_valid_plugin_id(id: &str) -> bool {
    let mut bytes = id.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z' | b'0'..=b'9'))
        && bytes.all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'-'))
}

/// Parses one holorc file: the plugin lines before the first bad line, and
/// that line's error.
pub fn parse(file: &str, text: &str, root: &str) -> (Vec<PluginDecl>, Option<HolorcError>) {
    let mut decls = Vec::new();
    let error = parse_into(file, text, root, &mut decls).err();
    (decls, error)
}

fn parse_into(
    file: &str,
    text: &str,
    root: &str,
    decls: &mut Vec<PluginDecl>,
) -> Result<(), HolorcError> {
    for (index, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some(rest) = line.strip_prefix("plugin ") else {
            // Holo 3's exact line, then where it is and what to do.
            return Err(HolorcError {
                message: format!("cannot parse configuration: unknown command: {line}"),
                hint: Some(format!(
                    "{file}:{}: a holorc line is `plugin ID`, `plugin ID=BINARY`, a comment (#) or empty; fix or remove this line (see holorc(5))",
                    index + 1
                )),
            });
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
            return Err(HolorcError::new(format!(
                "{file}:{}: invalid plugin ID \"{id}\": a plugin ID must match [a-z0-9][a-z0-9-]* (lowercase letters, digits and dashes)",
                index + 1
            )));
        }
        if binary.is_empty() {
            return Err(HolorcError::new(format!(
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
    Ok(())
}

fn duplicate(first: &PluginDecl, again: &PluginDecl) -> HolorcError {
    HolorcError::new(format!(
        "plugin {} is declared twice, at {}:{} and at {}:{}; remove one of the two lines",
        again.id, first.file, first.line, again.file, again.line
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plugin_lines_comments_and_blank_lines() {
        let text = "# comment\n\n  plugin files  \nplugin foo=./bin/holo-foo\n";
        let decls = parse("rc", text, "./target/").0;
        assert_eq!(decls.len(), 2);
        assert_eq!(decls[0].id, "files");
        assert_eq!(decls[0].binary, "target/usr/lib/holo/holo-files");
        assert_eq!(decls[0].line, 3);
        assert_eq!(decls[1].id, "foo");
        assert_eq!(decls[1].binary, "./bin/holo-foo");
    }

    #[test]
    fn binary_splits_at_first_equals_sign() {
        let decls = parse("rc", "plugin foo=/a=b\n", "/").0;
        assert_eq!(decls[0].binary, "/a=b");
    }

    #[test]
    fn unknown_command_keeps_holo3_text() {
        let (decls, err) = parse("rc", "plugin a\nplugins foo\nplugin b\n", "/");
        assert_eq!(decls.len(), 1, "the lines before the bad one count");
        let err = err.unwrap();
        assert_eq!(
            err.message,
            "cannot parse configuration: unknown command: plugins foo"
        );
        assert_eq!(
            err.hint.as_deref(),
            Some(
                "rc:2: a holorc line is `plugin ID`, `plugin ID=BINARY`, a comment (#) or empty; fix or remove this line (see holorc(5))"
            )
        );
        let err = parse("rc", "plugin\n", "/").1.unwrap();
        assert_eq!(
            err.message,
            "cannot parse configuration: unknown command: plugin"
        );
        assert!(err.hint.unwrap().starts_with("rc:1: "));
    }

    #[test]
    fn invalid_id_names_file_and_line() {
        let err = parse("etc/holorc", "\nplugin Foo\n", "/").1.unwrap();
        assert!(
            err.message
                .starts_with("etc/holorc:2: invalid plugin ID \"Foo\""),
            "{}",
            err.message
        );
        assert!(parse("rc", "plugin -x\n", "/").1.is_some());
        assert!(parse("rc", "plugin a_b\n", "/").1.is_some());
        assert!(parse("rc", "plugin 9a-b\n", "/").1.is_none());
    }

    #[test]
    fn duplicate_names_both_places() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("etc/holorc.d");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("10-a"), "plugin x\nplugin y\n").unwrap();
        std::fs::write(dir.join("20-b"), "\n\nplugin x=/bin/x\nplugin z\n").unwrap();
        let root = root.path().to_str().unwrap();
        let holorc = read(root);
        let ids: Vec<&str> = holorc.decls.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(ids, ["x", "y"]);
        assert_eq!(
            holorc.error.unwrap().message,
            format!(
                "plugin x is declared twice, at {root}/etc/holorc.d/10-a:1 and at {root}/etc/holorc.d/20-b:3; remove one of the two lines"
            )
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
