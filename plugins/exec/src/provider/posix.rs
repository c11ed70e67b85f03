//! The posix provider: the command string is split with shell-words (quotes
//! and backslashes as a POSIX shell reads them) and run without a shell, so
//! `$USER`, globs, pipes and redirections reach the program literally.

use holo_plugin::process::Command;

/// The words of `text`, or why it cannot be split.
pub fn split(text: &str) -> Result<Vec<String>, String> {
    let words = shell_words::split(text).map_err(|_| {
        format!(
            "command {text:?} has unbalanced quotes; close the quote, or set provider = \"shell\""
        )
    })?;
    if words.is_empty() {
        return Err("no command specified; set command (or a name that is the command)".into());
    }
    Ok(words)
}

/// The command for `text`, run without a shell.
pub fn command(text: &str) -> Result<Command, String> {
    let words = split(text)?;
    Command::from_argv(&words).map_err(|err| err.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_follow_posix_quoting() {
        assert_eq!(
            split("echo hello world").unwrap(),
            ["echo", "hello", "world"]
        );
        assert_eq!(
            split("echo 'hello world'").unwrap(),
            ["echo", "hello world"]
        );
        assert_eq!(
            split("echo \"hello world\"").unwrap(),
            ["echo", "hello world"]
        );
        assert_eq!(
            split(r"echo hello\ world").unwrap(),
            ["echo", "hello world"]
        );
        assert_eq!(
            split("echo \"it's a test\"").unwrap(),
            ["echo", "it's a test"]
        );
        assert_eq!(split("/bin/echo $USER").unwrap(), ["/bin/echo", "$USER"]);
    }

    #[test]
    fn unbalanced_quotes_and_empty_commands_are_errors() {
        assert!(
            split("echo 'open")
                .unwrap_err()
                .contains("unbalanced quotes")
        );
        assert!(
            split("echo \"open")
                .unwrap_err()
                .contains("unbalanced quotes")
        );
        assert!(split("  ").unwrap_err().contains("no command specified"));
    }
}
