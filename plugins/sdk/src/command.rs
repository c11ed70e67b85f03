//! Command lines for people: shell quoting for messages, and the
//! `MOCK: <exact command line>` line that test-mode mocks print instead of
//! running a system command. Commands themselves run through
//! [`crate::process`].

/// Quotes one argument for a POSIX shell, leaving plain words unquoted.
pub fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(&b));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// The shell-quoted command line for `argv`.
pub fn command_line<S: AsRef<str>>(argv: &[S]) -> String {
    argv.iter()
        .map(|arg| shell_quote(arg.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Prints `MOCK: <command line>` on stdout, as test-mode mocks do.
pub fn mock<S: AsRef<str>>(argv: &[S]) {
    println!("MOCK: {}", command_line(argv));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_keeps_words_and_quotes_the_rest() {
        assert_eq!(
            command_line(&[
                "apt-get",
                "install",
                "-y",
                "nginx=1.24.0-1",
                "a b",
                "it's",
                ""
            ]),
            r"apt-get install -y nginx=1.24.0-1 'a b' 'it'\''s' ''"
        );
    }
}
