//! The two repository entries that change the buffer instead of replacing
//! it: a `.holoscript` (the buffer on stdin, the result on stdout) and a
//! `.patch` (applied with the `patch` program).

use std::io::Write;
use std::path::Path;

use holo_plugin::process::{Command, Status};
use holo_plugin::{Env, Error, Result};

use crate::model::shown;

/// Status words as Holo 3 (Go) prints them: `exit status 1`.
fn status_text(status: Status) -> String {
    match status {
        Status::Exited(code) => format!("exit status {code}"),
        Status::Signaled(signal) => {
            format!("signal: {}", holo_plugin::process::signal_name(signal))
        }
        Status::TimedOut => "timed out".to_string(),
    }
}

/// A scratch file in the cache directory holding `content`.
fn scratch(env: &Env, content: &[u8]) -> Result<tempfile::NamedTempFile> {
    let fail = |err: std::io::Error| Error::io("write a scratch file in", &env.cache_dir, &err);
    let mut file = tempfile::NamedTempFile::new_in(&env.cache_dir).map_err(fail)?;
    file.write_all(content).map_err(fail)?;
    file.flush().map_err(fail)?;
    Ok(file)
}

/// How Holo 3 names a holoscript in its messages: below the virtual
/// resource directory, `generated-resources/ID` beside the plugin's cache
/// directory in the driver's run directory, where Holo 3 always copies the
/// repository. When holo lets us read the repository in place
/// (`inplace`), the message keeps naming it there, so that it reads as
/// under Holo 3.
fn as_holo3_names(env: &Env, script: &Path) -> String {
    let virtual_root = env
        .cache_dir
        .parent()
        .map(|run| run.join("generated-resources"));
    let in_place = env.resource_dir == env.resource_origin;
    match (virtual_root, script.strip_prefix(&env.resource_dir)) {
        (Some(root), Ok(relative)) if in_place && root.is_dir() => {
            shown(&root.join(&env.plugin_id).join(relative))
        }
        _ => shown(script),
    }
}

/// Why `script` cannot be executed, in Go's words (`fork/exec PATH:
/// permission denied`), as Holo 3 says it.
fn exec_error(env: &Env, script: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let why = match std::fs::metadata(script) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => "no such file or directory",
        Err(_) => return None,
        Ok(meta) if meta.is_dir() || meta.permissions().mode() & 0o111 == 0 => "permission denied",
        Ok(_) => "exec format error",
    };
    Some(format!("fork/exec {}: {why}", as_holo3_names(env, script)))
}

/// Pipes `input` through the holoscript at `script` and returns its
/// stdout. What it prints on stderr is passed on; a failure discards the
/// output.
pub fn holoscript(env: &Env, script: &Path, input: &[u8]) -> Result<Vec<u8>> {
    // The script may read targets written earlier in this batch: Holo 3
    // has them in place by then.
    holo_plugin::atomic::commit_staged();
    let stdin = scratch(env, input)?;
    let finished = Command::new(script)
        .stdin_file(stdin.path())
        .run()
        .map_err(|err| {
            Error::new(format!(
                "execution of {} failed: {}",
                as_holo3_names(env, script),
                exec_error(env, script).unwrap_or_else(|| err.message().to_string())
            ))
        })?;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().write_all(&finished.stderr);
    if !finished.success() {
        return Err(Error::new(format!(
            "execution of {} failed: {}",
            as_holo3_names(env, script),
            status_text(finished.status)
        )));
    }
    if finished.stdout_cut {
        return Err(Error::new(format!(
            "execution of {} failed: its output is larger than holo-files keeps in memory",
            as_holo3_names(env, script)
        )));
    }
    Ok(finished.stdout)
}

/// Applies the unified diff at `patch` to `input` with `patch` and returns
/// the result.
pub fn patch(env: &Env, patch_file: &Path, input: &[u8]) -> Result<Vec<u8>> {
    let original = scratch(env, input)?;
    let output = scratch(env, b"")?;
    let finished = Command::new("patch")
        .args([
            "--batch",
            "--silent",
            "--reject-file=-",
            "--no-backup-if-mismatch",
        ])
        .arg("--output")
        .arg(output.path())
        .arg(original.path())
        .arg(patch_file)
        .run()?;
    if !finished.success() {
        let mut said = String::from_utf8_lossy(&finished.stdout).into_owned();
        said.push_str(&String::from_utf8_lossy(&finished.stderr));
        return Err(Error::new(format!(
            "cannot apply {}: patch failed with {}: {}; make the patch fit the file it applies to",
            shown(patch_file),
            status_text(finished.status),
            said.trim()
        )));
    }
    std::fs::read(output.path()).map_err(|err| Error::io("read", output.path(), &err))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_words_for_statuses() {
        assert_eq!(status_text(Status::Exited(1)), "exit status 1");
    }
}
