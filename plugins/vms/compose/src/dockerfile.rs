//! Dockerfile provisioning: `FROM`, `RUN`, `COPY`, `ENV` and `WORKDIR`
//! translated into cloud-init steps that run before `cloud_init.runcmd`.
//!
//! Every other instruction fails with advice on the holos way to do it.

use std::path::{Path, PathBuf};

use base64::Engine;

use crate::manifest::{GuestCommand, WriteFile};

/// What a Dockerfile contributes to a service.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Provisioning {
    /// The `FROM` image, used when the service sets no `image`.
    pub base_image: Option<String>,
    pub write_files: Vec<WriteFile>,
    pub runcmd: Vec<GuestCommand>,
    pub environment: Vec<(String, String)>,
}

/// An error with the Dockerfile line it is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DockerfileError {
    pub line: usize,
    pub message: String,
}

/// Joins continuation lines; yields (first line number, instruction text).
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut start = 0;
    for (i, raw) in text.lines().enumerate() {
        let trimmed = raw.trim();
        if current.is_empty() && (trimmed.is_empty() || trimmed.starts_with('#')) {
            continue;
        }
        if !current.is_empty() && trimmed.starts_with('#') {
            continue;
        }
        if current.is_empty() {
            start = i + 1;
        }
        if let Some(body) = trimmed.strip_suffix('\\') {
            current.push_str(body);
            current.push(' ');
        } else {
            current.push_str(trimmed);
            out.push((start, std::mem::take(&mut current)));
        }
    }
    if !current.trim().is_empty() {
        out.push((start, current));
    }
    out
}

fn advice(instruction: &str) -> String {
    let hint = match instruction {
        "EXPOSE" => "use services.<name>.ports instead",
        "HEALTHCHECK" => "use services.<name>.healthcheck instead",
        "CMD" | "ENTRYPOINT" => "use guest systemd units or cloud_init.runcmd instead",
        "VOLUME" => "use services.<name>.volumes instead",
        "USER" => "use services.<name>.user or cloud_init.user instead",
        "ARG" => "use ${VAR} interpolation in holos.yaml instead",
        "LABEL" => "use services.<name>.labels instead",
        _ => "holos supports only FROM, RUN, COPY, ENV and WORKDIR",
    };
    format!("unsupported Dockerfile instruction {instruction}: {hint}")
}

/// A JSON exec-form array, if `args` is one.
fn exec_form(args: &str) -> Option<Vec<String>> {
    if !args.trim_start().starts_with('[') {
        return None;
    }
    serde_json::from_str(args.trim()).ok()
}

/// Quotes one word for a POSIX shell.
pub fn shell_quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c));
    if safe {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Translates a Dockerfile. `context` is the directory COPY sources are
/// relative to; they must stay inside it and be files.
pub fn translate(text: &str, context: &Path) -> Result<Provisioning, Vec<DockerfileError>> {
    let mut out = Provisioning::default();
    let mut errors = Vec::new();
    let mut workdir: Option<String> = None;
    let context_canonical = context
        .canonicalize()
        .unwrap_or_else(|_| context.to_path_buf());
    for (line, instruction) in logical_lines(text) {
        let (keyword, args) = match instruction.split_once(char::is_whitespace) {
            Some((k, a)) => (k.to_ascii_uppercase(), a.trim().to_string()),
            None => (instruction.to_ascii_uppercase(), String::new()),
        };
        let mut fail = |message: String| errors.push(DockerfileError { line, message });
        match keyword.as_str() {
            "FROM" => {
                let words: Vec<&str> = args
                    .split_whitespace()
                    .filter(|w| !w.starts_with("--"))
                    .collect();
                match words.first() {
                    Some(image) if out.base_image.is_none() => {
                        out.base_image = Some(image.to_string())
                    }
                    Some(_) => fail("multi-stage builds are not supported: keep one FROM".into()),
                    None => fail("FROM needs an image, such as FROM ubuntu:noble".into()),
                }
            }
            "RUN" => {
                if args.is_empty() {
                    fail("RUN needs a command".into());
                    continue;
                }
                let command = match exec_form(&args) {
                    Some(argv) => argv
                        .iter()
                        .map(|a| shell_quote(a))
                        .collect::<Vec<_>>()
                        .join(" "),
                    None => args.clone(),
                };
                let mut prefix = String::new();
                for (k, v) in &out.environment {
                    prefix.push_str(&format!("export {k}={}; ", shell_quote(v)));
                }
                if let Some(dir) = &workdir {
                    prefix.push_str(&format!("cd {} && ", shell_quote(dir)));
                }
                out.runcmd
                    .push(GuestCommand::Shell(format!("{prefix}{command}")));
            }
            "ENV" => match parse_env(&args) {
                Some(pairs) => out.environment.extend(pairs),
                None => fail("ENV needs KEY=VALUE (or KEY VALUE)".into()),
            },
            "WORKDIR" => {
                if args.is_empty() {
                    fail("WORKDIR needs a directory".into());
                    continue;
                }
                let dir = match (&workdir, args.starts_with('/')) {
                    (Some(base), false) => format!("{}/{args}", base.trim_end_matches('/')),
                    _ => args.clone(),
                };
                out.runcmd.push(GuestCommand::Shell(format!(
                    "mkdir -p {}",
                    shell_quote(&dir)
                )));
                workdir = Some(dir);
            }
            "ADD" => {
                fail("unsupported Dockerfile instruction ADD: use COPY for local files".into())
            }
            "COPY" => {
                let mut owner = None;
                let mut words: Vec<String> = Vec::new();
                match exec_form(&args) {
                    Some(list) => words = list,
                    None => {
                        for word in args.split_whitespace() {
                            if let Some(chown) = word.strip_prefix("--chown=") {
                                owner = Some(chown.to_string());
                            } else if word.starts_with("--") {
                                fail(format!("COPY option {word} is not supported; only --chown"));
                            } else {
                                words.push(word.to_string());
                            }
                        }
                    }
                }
                if words.len() < 2 {
                    fail("COPY needs a source and a destination".into());
                    continue;
                }
                let dest = words.pop().unwrap_or_default();
                let dest = match (&workdir, dest.starts_with('/')) {
                    (Some(base), false) => format!("{}/{dest}", base.trim_end_matches('/')),
                    _ => dest,
                };
                let many = words.len() > 1;
                for source in &words {
                    match read_copy_source(source, context, &context_canonical) {
                        Ok(bytes) => {
                            let file_name = Path::new(source)
                                .file_name()
                                .map(|n| n.to_string_lossy().into_owned())
                                .unwrap_or_default();
                            let path = if dest.ends_with('/') || many {
                                format!("{}/{file_name}", dest.trim_end_matches('/'))
                            } else {
                                dest.clone()
                            };
                            out.write_files.push(WriteFile {
                                path,
                                content: base64::engine::general_purpose::STANDARD.encode(bytes),
                                encoding: Some("b64".into()),
                                owner: owner.clone(),
                                ..WriteFile::default()
                            });
                        }
                        Err(message) => fail(message),
                    }
                }
            }
            other => fail(advice(other)),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

fn read_copy_source(
    source: &str,
    context: &Path,
    canonical_context: &Path,
) -> Result<Vec<u8>, String> {
    let joined: PathBuf = context.join(source);
    let lexical = crate::load::paths::absolutize(context, source);
    if !Path::new(&lexical).starts_with(crate::load::paths::absolutize(context, ".")) {
        return Err(format!(
            "COPY source {source} is outside the build context {}; move it inside",
            context.display()
        ));
    }
    let resolved = joined.canonicalize().map_err(|e| {
        format!(
            "COPY source {source} cannot be read ({e}); it is looked up in {}",
            context.display()
        )
    })?;
    if !resolved.starts_with(canonical_context) {
        return Err(format!(
            "COPY source {source} is outside the build context {}; move it inside",
            context.display()
        ));
    }
    if !resolved.is_file() {
        return Err(format!(
            "COPY source {source} is not a file; use volumes for directories"
        ));
    }
    std::fs::read(&resolved).map_err(|e| format!("COPY source {source} cannot be read: {e}"))
}

/// `ENV K=V K2="v 2"` or the legacy `ENV K V`.
fn parse_env(args: &str) -> Option<Vec<(String, String)>> {
    let args = args.trim();
    if args.is_empty() {
        return None;
    }
    let first_word = args.split_whitespace().next().unwrap_or_default();
    if !first_word.contains('=') {
        let (key, value) = args.split_once(char::is_whitespace)?;
        return Some(vec![(key.to_string(), value.trim().to_string())]);
    }
    let mut pairs = Vec::new();
    let mut chars = args.chars().peekable();
    while chars.peek().is_some() {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        if key.is_empty() {
            break;
        }
        let mut value = String::new();
        let mut quote: Option<char> = None;
        while let Some(&c) = chars.peek() {
            match (quote, c) {
                (None, '"' | '\'') => quote = Some(c),
                (Some(q), c) if c == q => quote = None,
                (None, c) if c.is_whitespace() => break,
                (_, '\\') => {
                    chars.next();
                    if let Some(escaped) = chars.peek() {
                        value.push(*escaped);
                    }
                }
                _ => value.push(c),
            }
            chars.next();
        }
        pairs.push((key.trim().to_string(), value));
    }
    Some(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("app.conf"), "listen 80\n").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        dir
    }

    #[test]
    fn translates_supported_instructions_in_order() {
        let dir = context();
        let text = "# build\nFROM ubuntu:noble AS base\nENV A=1 B=\"two words\"\nWORKDIR /srv\nRUN apt-get update && \\\n    apt-get install -y nginx\nRUN [\"echo\", \"hi there\"]\nCOPY --chown=www:www app.conf conf/\n";
        let p = translate(text, dir.path()).unwrap();
        assert_eq!(p.base_image.as_deref(), Some("ubuntu:noble"));
        assert_eq!(
            p.environment,
            vec![("A".into(), "1".into()), ("B".into(), "two words".into())]
        );
        assert_eq!(
            p.runcmd,
            vec![
                GuestCommand::Shell("mkdir -p /srv".into()),
                GuestCommand::Shell("export A=1; export B='two words'; cd /srv && apt-get update &&  apt-get install -y nginx".into()),
                GuestCommand::Shell("export A=1; export B='two words'; cd /srv && echo 'hi there'".into()),
            ]
        );
        assert_eq!(p.write_files[0].path, "/srv/conf/app.conf");
        assert_eq!(p.write_files[0].owner.as_deref(), Some("www:www"));
        assert_eq!(p.write_files[0].content, "bGlzdGVuIDgwCg==");
    }

    #[test]
    fn unsupported_instructions_fail_with_advice() {
        let dir = context();
        for (instruction, hint) in [
            ("EXPOSE 80", "ports"),
            ("HEALTHCHECK CMD true", "healthcheck"),
            ("CMD [\"nginx\"]", "runcmd"),
            ("ENTRYPOINT nginx", "systemd units"),
            ("STOPSIGNAL TERM", "only FROM, RUN"),
        ] {
            let errors =
                translate(&format!("FROM debian\n{instruction}\n"), dir.path()).unwrap_err();
            assert_eq!(errors[0].line, 2);
            assert!(
                errors[0].message.contains(hint),
                "{instruction}: {}",
                errors[0].message
            );
        }
    }

    #[test]
    fn copy_sources_must_be_files_inside_the_context() {
        let dir = context();
        let errors = translate(
            "COPY ../etc/passwd /x\nCOPY sub /y\nCOPY missing /z\n",
            dir.path(),
        )
        .unwrap_err();
        let messages: Vec<&str> = errors.iter().map(|e| e.message.as_str()).collect();
        assert_eq!(errors.iter().map(|e| e.line).collect::<Vec<_>>(), [1, 2, 3]);
        assert!(messages[0].contains("cannot be read") || messages[0].contains("outside"));
        assert!(messages[1].contains("not a file"));
        assert!(messages[2].contains("cannot be read"));
    }
}
