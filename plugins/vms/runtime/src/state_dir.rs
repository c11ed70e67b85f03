//! Where holos keeps its state: the root directory under which the runtime
//! lays out `projects/`, `instances/`, `volumes/`, `ssh/` and `locks/`.
//!
//! The root is `holos --state-dir`, else `$HOLOS_STATE_DIR`, else `/var/lib/holos` for root, else
//! `~/.local/state/holos`. In plugin test mode (`HOLO_ROOT_DIR` set and not
//! `/`) and without `HOLOS_STATE_DIR`, it is `$HOLO_ROOT_DIR/var/lib/holos`
//! whoever runs it, so that fixtures do not depend on the user.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

/// The system-wide root, used when running as root.
pub const SYSTEM_STATE_DIR: &str = "/var/lib/holos";
/// The per-user root, below `$HOME`.
pub const USER_STATE_DIR: &str = ".local/state/holos";

/// No state root can be determined (not root, and no usable `$HOME`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateDirError(String);

impl fmt::Display for StateDirError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StateDirError {}

/// `--state-dir`, set once by the command line; it wins over the environment.
static STATE_DIR_OPTION: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Makes `dir` the state root of this process, as `HOLOS_STATE_DIR` would
/// (`holos --state-dir`). Only the first call counts.
pub fn use_state_dir(dir: &Path) {
    let _ = STATE_DIR_OPTION.set(dir.to_path_buf());
}

/// The state root for this process: `--state-dir`, else its environment and
/// effective user.
pub fn state_root() -> Result<PathBuf, StateDirError> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    if let Some(dir) = STATE_DIR_OPTION.get() {
        return Ok(cwd.join(dir));
    }
    state_root_from(
        |key| std::env::var_os(key),
        nix::unistd::geteuid().is_root(),
        &cwd,
    )
}

/// The state root for the environment `lookup`, a process that is root or
/// not, and the working directory `cwd` (which makes a relative
/// `HOLOS_STATE_DIR` absolute, since QEMU and later commands run elsewhere).
pub fn state_root_from(
    lookup: impl Fn(&str) -> Option<OsString>,
    is_root: bool,
    cwd: &Path,
) -> Result<PathBuf, StateDirError> {
    let non_empty = |key: &str| lookup(key).filter(|value| !value.is_empty());
    if let Some(dir) = non_empty("HOLOS_STATE_DIR") {
        return Ok(cwd.join(dir));
    }
    if let Some(root) = non_empty("HOLO_ROOT_DIR").map(PathBuf::from)
        && root != Path::new("/")
    {
        return Ok(cwd
            .join(root)
            .join(SYSTEM_STATE_DIR.trim_start_matches('/')));
    }
    if is_root {
        return Ok(PathBuf::from(SYSTEM_STATE_DIR));
    }
    match non_empty("HOME").map(PathBuf::from) {
        Some(home) if home.is_absolute() => Ok(home.join(USER_STATE_DIR)),
        Some(home) => Err(StateDirError(format!(
            "HOME={} is not an absolute path, so holos cannot place its state in ~/{USER_STATE_DIR}; set HOME or HOLOS_STATE_DIR",
            home.display()
        ))),
        None => Err(StateDirError(format!(
            "HOME is not set, so holos cannot place its state in ~/{USER_STATE_DIR}; set HOME or HOLOS_STATE_DIR"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::os::unix::ffi::OsStringExt;

    fn root_for(vars: &[(&str, OsString)], is_root: bool) -> Result<PathBuf, StateDirError> {
        let map: HashMap<&str, OsString> = vars.iter().cloned().collect();
        state_root_from(|key| map.get(key).cloned(), is_root, Path::new("/work"))
    }

    #[test]
    fn explicit_variable_wins_and_is_made_absolute() {
        let vars = [
            ("HOLOS_STATE_DIR", OsString::from("st")),
            ("HOLO_ROOT_DIR", OsString::from("/r")),
            ("HOME", OsString::from("/home/u")),
        ];
        assert_eq!(root_for(&vars, true), Ok(PathBuf::from("/work/st")));
        let vars = [("HOLOS_STATE_DIR", OsString::from("/srv/holos"))];
        assert_eq!(root_for(&vars, false), Ok(PathBuf::from("/srv/holos")));
    }

    #[test]
    fn root_user_gets_var_lib_and_others_their_home() {
        let home = [("HOME", OsString::from("/home/u"))];
        assert_eq!(root_for(&home, true), Ok(PathBuf::from("/var/lib/holos")));
        assert_eq!(
            root_for(&home, false),
            Ok(PathBuf::from("/home/u/.local/state/holos"))
        );
    }

    #[test]
    fn test_mode_puts_the_root_below_holo_root_dir() {
        let vars = [
            ("HOLO_ROOT_DIR", OsString::from("/tmp/fixture")),
            ("HOME", OsString::from("/home/u")),
        ];
        let expected = PathBuf::from("/tmp/fixture/var/lib/holos");
        assert_eq!(root_for(&vars, false), Ok(expected.clone()));
        assert_eq!(root_for(&vars, true), Ok(expected));
        // `/` is not test mode.
        let slash = [("HOLO_ROOT_DIR", OsString::from("/"))];
        assert_eq!(root_for(&slash, true), Ok(PathBuf::from("/var/lib/holos")));
    }

    #[test]
    fn missing_or_relative_home_is_a_clear_error() {
        let err = root_for(&[], false).expect_err("no HOME");
        assert!(err.to_string().contains("HOME is not set"), "{err}");
        assert!(err.to_string().contains("HOLOS_STATE_DIR"), "{err}");
        let err = root_for(&[("HOME", OsString::from("rel"))], false).expect_err("relative");
        assert!(err.to_string().contains("HOME=rel"), "{err}");
    }

    #[test]
    fn non_utf8_values_are_paths_like_any_other() {
        let raw = OsString::from_vec(b"/srv/\xffholos".to_vec());
        let got = root_for(&[("HOLOS_STATE_DIR", raw.clone())], false);
        assert_eq!(got, Ok(PathBuf::from(raw)));
    }
}
