//! The shell provider: the whole command string goes to `/bin/sh -c`, with
//! pipes, redirections, variables and globs.

use holo_plugin::process::Command;

/// `/bin/sh -c TEXT`.
pub fn command(text: &str) -> Result<Command, String> {
    if text.trim().is_empty() {
        return Err("no command to execute; set command (or a name that is the command)".into());
    }
    Ok(Command::shell(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shell_gets_the_whole_string() {
        let done = command("printf '%s' \"a b\" | tr a-z A-Z")
            .unwrap()
            .run()
            .expect("runs");
        assert_eq!(done.stdout, b"A B");
        assert!(command(" ").unwrap_err().contains("no command to execute"));
    }
}
