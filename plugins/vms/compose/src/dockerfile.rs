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

/// One instruction: its first line number, its text with continuation
/// lines joined, and the bodies of the BuildKit heredocs it opens.
struct Logical {
    line: usize,
    text: String,
    heredocs: Vec<Heredoc>,
}

/// `<<EOF`, `<<-EOF` (leading tabs stripped) or `<<'EOF'` / `<<"EOF"`
/// (quoted: nothing in the body is expanded).
#[derive(Debug, PartialEq)]
struct Heredoc {
    delimiter: String,
    quoted: bool,
    strip_tabs: bool,
    /// The body lines, each ending in a newline.
    body: String,
}

/// A delimiter is a word; `.` and `-` let `COPY <<app.conf /etc/` name
/// the file.
fn is_delimiter_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_.-".contains(c)
}

/// The heredocs an instruction line opens, in order, and the line without
/// their markers. `<<<` is a shell here-string, not a heredoc.
fn heredoc_markers(text: &str) -> (Vec<Heredoc>, String) {
    let mut found = Vec::new();
    let mut plain = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("<<") {
        plain.push_str(&rest[..at]);
        let marker = &rest[at..];
        let mut after = &marker[2..];
        if after.starts_with('<') {
            let len = marker.len() - marker.trim_start_matches('<').len();
            plain.push_str(&marker[..len]);
            rest = &marker[len..];
            continue;
        }
        let strip_tabs = after.starts_with('-');
        if strip_tabs {
            after = &after[1..];
        }
        after = after.trim_start_matches([' ', '\t']);
        let (word, quoted, tail) = match after.chars().next() {
            Some(q @ ('\'' | '"')) => match after[1..].find(q) {
                Some(end) => (&after[1..=end], true, &after[end + 2..]),
                None => ("", true, after),
            },
            _ => {
                let len = after
                    .find(|c: char| !is_delimiter_char(c))
                    .unwrap_or(after.len());
                (&after[..len], false, &after[len..])
            }
        };
        let is_word = word.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            && word.chars().all(is_delimiter_char);
        if is_word {
            found.push(Heredoc {
                delimiter: word.to_string(),
                quoted,
                strip_tabs,
                body: String::new(),
            });
            rest = tail;
        } else {
            plain.push_str("<<");
            rest = &marker[2..];
        }
    }
    plain.push_str(rest);
    (found, plain)
}

/// Joins continuation lines and reads heredoc bodies; an unclosed heredoc
/// is an error at its instruction.
fn logical_lines(text: &str) -> (Vec<Logical>, Vec<DockerfileError>) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    let mut current = String::new();
    let mut start = 0;
    let mut lines = text.lines().enumerate();
    while let Some((i, raw)) = lines.next() {
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
            continue;
        }
        current.push_str(trimmed);
        let text = std::mem::take(&mut current);
        let keyword = text.split_whitespace().next().unwrap_or_default();
        let mut heredocs = if ["RUN", "COPY"].contains(&keyword.to_ascii_uppercase().as_str()) {
            heredoc_markers(&text).0
        } else {
            Vec::new()
        };
        for heredoc in &mut heredocs {
            let mut closed = false;
            for (_, body_line) in lines.by_ref() {
                let line = if heredoc.strip_tabs {
                    body_line.trim_start_matches('\t')
                } else {
                    body_line
                };
                if line == heredoc.delimiter {
                    closed = true;
                    break;
                }
                heredoc.body.push_str(line);
                heredoc.body.push('\n');
            }
            if !closed {
                errors.push(DockerfileError {
                    line: start,
                    message: format!(
                        "the heredoc <<{0} is never closed; end it with a line holding only {0}",
                        heredoc.delimiter
                    ),
                });
            }
        }
        out.push(Logical {
            line: start,
            text,
            heredocs,
        });
    }
    if !current.trim().is_empty() {
        out.push(Logical {
            line: start,
            text: current,
            heredocs: Vec::new(),
        });
    }
    (out, errors)
}

/// The instruction's arguments without its heredoc markers.
fn without_markers(args: &str) -> String {
    heredoc_markers(args).1.trim().to_string()
}

/// What a RUN with heredocs runs. Heredocs alone are the script (one with
/// a `#!` line is run by its interpreter); with a command, the shell gets
/// the command and the heredocs as written, and feeds them to it.
fn heredoc_run(args: &str, heredocs: &[Heredoc]) -> String {
    if !without_markers(args).is_empty() {
        let mut script = args.to_string();
        for heredoc in heredocs {
            script.push('\n');
            script.push_str(&heredoc.body);
            script.push_str(&heredoc.delimiter);
        }
        return script;
    }
    heredocs
        .iter()
        .map(|heredoc| {
            if heredoc.body.starts_with("#!") {
                format!(
                    "holos_script=$(mktemp) && cat > \"$holos_script\" <<'{0}'\n{1}{0}\nchmod +x \"$holos_script\" && \"$holos_script\"; holos_status=$?; rm -f \"$holos_script\"; [ $holos_status -eq 0 ]",
                    unique_delimiter(&heredoc.body),
                    heredoc.body
                )
            } else {
                heredoc.body.trim_end_matches('\n').to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A heredoc delimiter that no line of `body` equals.
fn unique_delimiter(body: &str) -> String {
    let mut delimiter = String::from("HOLOS_SCRIPT");
    while body.lines().any(|line| line == delimiter) {
        delimiter.push('_');
    }
    delimiter
}

/// Expands `$NAME` and `${NAME}` in an unquoted COPY heredoc with the
/// ENV values so far (unset ones are empty, as in BuildKit); `\$` is a
/// literal dollar sign.
fn expand_env(body: &str, environment: &[(String, String)]) -> String {
    let value = |name: &str| {
        environment
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'$') => {
                out.push('$');
                chars.next();
            }
            '$' if chars.peek() == Some(&'{') => {
                chars.next();
                let name: String = chars.by_ref().take_while(|c| *c != '}').collect();
                out.push_str(&value(&name));
            }
            '$' if chars
                .peek()
                .is_some_and(|c| c.is_ascii_alphabetic() || *c == '_') =>
            {
                let mut name = String::new();
                while let Some(&c) = chars.peek() {
                    if !(c.is_ascii_alphanumeric() || c == '_') {
                        break;
                    }
                    name.push(c);
                    chars.next();
                }
                out.push_str(&value(&name));
            }
            _ => out.push(c),
        }
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
    let mut translation = Translation {
        out: Provisioning::default(),
        workdir: None,
        context,
        context_canonical: context
            .canonicalize()
            .unwrap_or_else(|_| context.to_path_buf()),
        messages: Vec::new(),
    };
    let (instructions, mut errors) = logical_lines(text);
    for Logical {
        line,
        text: instruction,
        heredocs,
    } in instructions
    {
        let (keyword, args) = match instruction.split_once(char::is_whitespace) {
            Some((k, a)) => (k.to_ascii_uppercase(), a.trim().to_string()),
            None => (instruction.to_ascii_uppercase(), String::new()),
        };
        translation.instruction(&keyword, &args, &heredocs);
        errors.extend(
            translation
                .messages
                .drain(..)
                .map(|message| DockerfileError { line, message }),
        );
    }
    if errors.is_empty() {
        Ok(translation.out)
    } else {
        Err(errors)
    }
}

/// A Dockerfile being translated, one instruction at a time.
struct Translation<'a> {
    out: Provisioning,
    /// The directory WORKDIR set last.
    workdir: Option<String>,
    context: &'a Path,
    context_canonical: PathBuf,
    /// The current instruction's errors.
    messages: Vec<String>,
}

impl Translation<'_> {
    fn fail(&mut self, message: impl Into<String>) {
        self.messages.push(message.into());
    }

    fn instruction(&mut self, keyword: &str, args: &str, heredocs: &[Heredoc]) {
        match keyword {
            "FROM" => self.from(args),
            "RUN" => self.run(args, heredocs),
            "ENV" => match parse_env(args) {
                Some(pairs) => self.out.environment.extend(pairs),
                None => self.fail("ENV needs KEY=VALUE (or KEY VALUE)"),
            },
            "WORKDIR" => self.workdir(args),
            "ADD" => self.fail("unsupported Dockerfile instruction ADD: use COPY for local files"),
            "COPY" if !heredocs.is_empty() => self.copy_heredocs(args, heredocs),
            "COPY" => self.copy(args),
            other => self.fail(advice(other)),
        }
    }

    fn from(&mut self, args: &str) {
        let words: Vec<&str> = args
            .split_whitespace()
            .filter(|w| !w.starts_with("--"))
            .collect();
        match words.first() {
            Some(image) if self.out.base_image.is_none() => {
                self.out.base_image = Some(image.to_string())
            }
            Some(_) => self.fail("multi-stage builds are not supported: keep one FROM"),
            None => self.fail("FROM needs an image, such as FROM ubuntu:noble"),
        }
    }

    fn run(&mut self, args: &str, heredocs: &[Heredoc]) {
        if args.is_empty() {
            self.fail("RUN needs a command");
            return;
        }
        let command = match exec_form(args) {
            _ if !heredocs.is_empty() => heredoc_run(args, heredocs),
            Some(argv) => argv
                .iter()
                .map(|a| shell_quote(a))
                .collect::<Vec<_>>()
                .join(" "),
            None => args.to_string(),
        };
        let mut prefix = String::new();
        for (k, v) in &self.out.environment {
            prefix.push_str(&format!("export {k}={}; ", shell_quote(v)));
        }
        if let Some(dir) = &self.workdir {
            prefix.push_str(&format!("cd {} && ", shell_quote(dir)));
        }
        self.out
            .runcmd
            .push(GuestCommand::Shell(format!("{prefix}{command}")));
    }

    fn workdir(&mut self, args: &str) {
        if args.is_empty() {
            self.fail("WORKDIR needs a directory");
            return;
        }
        let dir = self.in_workdir(args);
        self.out.runcmd.push(GuestCommand::Shell(format!(
            "mkdir -p {}",
            shell_quote(&dir)
        )));
        self.workdir = Some(dir);
    }

    /// `path` relative to WORKDIR, unless absolute.
    fn in_workdir(&self, path: &str) -> String {
        match (&self.workdir, path.starts_with('/')) {
            (Some(base), false) => format!("{}/{path}", base.trim_end_matches('/')),
            _ => path.to_string(),
        }
    }

    /// COPY's words without its options, and its `--chown` owner.
    fn copy_words(&mut self, args: &str) -> (Vec<String>, Option<String>) {
        let mut owner = None;
        let mut words = Vec::new();
        for word in args.split_whitespace() {
            if let Some(chown) = word.strip_prefix("--chown=") {
                owner = Some(chown.to_string());
            } else if word.starts_with("--") {
                self.fail(format!("COPY option {word} is not supported; only --chown"));
            } else {
                words.push(word.to_string());
            }
        }
        (words, owner)
    }

    /// `COPY <<EOF DEST`: each heredoc becomes a file.
    fn copy_heredocs(&mut self, args: &str, heredocs: &[Heredoc]) {
        let (words, owner) = self.copy_words(&without_markers(args));
        let [dest] = words.as_slice() else {
            self.fail("COPY <<EOF needs one destination and no other source, such as COPY <<EOF /etc/app.conf");
            return;
        };
        if heredocs.len() > 1 && !dest.ends_with('/') {
            self.fail(format!(
                "COPY with {} heredocs needs a directory as its destination (ending in /), as BuildKit does: each heredoc becomes a file named after its delimiter",
                heredocs.len()
            ));
            return;
        }
        let dest = self.in_workdir(dest);
        for heredoc in heredocs {
            let body = if heredoc.quoted {
                heredoc.body.clone()
            } else {
                expand_env(&heredoc.body, &self.out.environment)
            };
            let path = if dest.ends_with('/') {
                format!("{dest}{}", heredoc.delimiter)
            } else {
                dest.clone()
            };
            self.out.write_files.push(WriteFile {
                path,
                content: body,
                owner: owner.clone(),
                ..WriteFile::default()
            });
        }
    }

    /// `COPY SOURCE... DEST`: files from the build context.
    fn copy(&mut self, args: &str) {
        let (mut words, owner) = match exec_form(args) {
            Some(list) => (list, None),
            None => self.copy_words(args),
        };
        if words.len() < 2 {
            self.fail("COPY needs a source and a destination");
            return;
        }
        let dest = words.pop().unwrap_or_default();
        let dest = self.in_workdir(&dest);
        let many = words.len() > 1;
        for source in &words {
            match read_copy_source(source, self.context, &self.context_canonical) {
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
                    self.out.write_files.push(WriteFile {
                        path,
                        content: base64::engine::general_purpose::STANDARD.encode(bytes),
                        encoding: Some("b64".into()),
                        owner: owner.clone(),
                        ..WriteFile::default()
                    });
                }
                Err(message) => self.fail(message),
            }
        }
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

    fn shell(p: &Provisioning) -> Vec<&str> {
        p.runcmd
            .iter()
            .map(|c| match c {
                GuestCommand::Shell(text) => text.as_str(),
                GuestCommand::Exec(_) => "exec form",
            })
            .collect()
    }

    #[test]
    fn run_heredocs_are_scripts_or_fed_to_their_command() {
        let dir = context();
        let text = "FROM debian\nRUN <<EOF\napt-get update\n\n# a comment\napt-get install -y nginx\nEOF\nRUN <<-EOT\n\tset -e\n\t\techo tabs\n\tEOT\nRUN python3 <<'PY' > /out\nprint(\"$HOME\")\nPY\nRUN cat <<<here\nRUN cat > /f << \"END\"\nx\nEND\n";
        let p = translate(text, dir.path()).unwrap();
        assert_eq!(
            shell(&p),
            [
                "apt-get update\n\n# a comment\napt-get install -y nginx",
                "set -e\necho tabs",
                "python3 <<'PY' > /out\nprint(\"$HOME\")\nPY",
                "cat <<<here",
                "cat > /f << \"END\"\nx\nEND",
            ]
        );
    }

    #[test]
    fn a_heredoc_with_a_shebang_runs_under_its_interpreter() {
        let dir = context();
        let text =
            "RUN <<EOF\n#!/bin/sh -e\necho \"$0\" | grep -q /tmp/ && echo from-a-file\nEOF\n";
        let p = translate(text, dir.path()).unwrap();
        let out = std::process::Command::new("sh")
            .args(["-c", shell(&p)[0]])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "from-a-file\n");
    }

    #[test]
    fn copy_heredocs_become_files() {
        let dir = context();
        let text = "ENV PORT=8080\nWORKDIR /srv\nCOPY <<EOF app.conf\nlisten $PORT ${PORT} \\$PORT $UNSET.\nEOF\nCOPY --chown=www <<'EOF' /etc/raw\nkeep $PORT\nEOF\nCOPY <<a.txt <<b.txt /var/www/\nA\na.txt\nB\nb.txt\n";
        let p = translate(text, dir.path()).unwrap();
        let files: Vec<(&str, &str, Option<&str>)> = p
            .write_files
            .iter()
            .map(|f| (f.path.as_str(), f.content.as_str(), f.owner.as_deref()))
            .collect();
        assert_eq!(
            files,
            [
                ("/srv/app.conf", "listen 8080 8080 $PORT .\n", None),
                ("/etc/raw", "keep $PORT\n", Some("www")),
                ("/var/www/a.txt", "A\n", None),
                ("/var/www/b.txt", "B\n", None),
            ]
        );
        assert!(p.write_files.iter().all(|f| f.encoding.is_none()));
    }

    #[test]
    fn odd_markers_are_left_to_the_shell() {
        for text in [
            "<<", "<<-", "<<'", "<<\"a", "<<'é'", "<<<<", "a <<- \t", "<<é", "<<''",
        ] {
            let (found, plain) = heredoc_markers(text);
            assert!(found.is_empty(), "{text}");
            assert_eq!(plain, text);
        }
    }

    #[test]
    fn an_unclosed_heredoc_names_its_instruction() {
        let dir = context();
        let errors = translate("FROM debian\nRUN <<EOF\necho hi\nEOF \n", dir.path()).unwrap_err();
        assert_eq!(
            errors,
            [DockerfileError {
                line: 2,
                message: "the heredoc <<EOF is never closed; end it with a line holding only EOF"
                    .into()
            }]
        );
        let errors = translate("COPY <<EOF\nx\nEOF\n", dir.path()).unwrap_err();
        assert!(
            errors[0].message.contains("needs one destination"),
            "{errors:?}"
        );
        let errors = translate("COPY <<A <<B /etc/app.conf\na\nA\nb\nB\n", dir.path()).unwrap_err();
        assert!(
            errors[0]
                .message
                .contains("needs a directory as its destination"),
            "{errors:?}"
        );
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
