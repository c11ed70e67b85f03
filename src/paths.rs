//! Path helpers that reproduce how Holo 3 (Go's `filepath`) prints paths, so
//! that every path we show or pass on is byte-identical to Holo 3's.

use std::path::Path;

/// Lexically cleans a path as Go's `filepath.Clean` does (the rule is
/// holo-protocol's, which holo-scaffold's Go templates share).
pub use holo_protocol::go_path::clean;

/// Joins and cleans, as Go's `filepath.Join`.
pub fn join(base: &str, rel: &str) -> String {
    if base.is_empty() {
        return clean(rel);
    }
    clean(&format!("{base}/{rel}"))
}

/// Holo 3's `normalizePath`: strips a leading `./` and a trailing `/`. A
/// path that would become empty (`./`) stays `.`: an empty HOLO_ROOT_DIR
/// would mean `/` to a plugin.
pub fn normalize(path: &str) -> String {
    if path == "/" {
        return path.to_string();
    }
    let path = path.strip_prefix("./").unwrap_or(path);
    let path = path.strip_suffix('/').unwrap_or(path);
    if path.is_empty() {
        ".".to_string()
    } else {
        path.to_string()
    }
}

/// Lossy conversion for display and for the environment of plugins.
pub fn display(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// Go-style error text for an errno: `file exists`, `no such file or directory`
/// (the lock's crate owns the wording).
pub use holo_runlock::errno_text;

#[cfg(test)]
mod tests {
    use super::*;

    // `clean` itself is tested where it is defined, holo-protocol's go_path.
    #[test]
    fn join_cleans_as_go() {
        assert_eq!(
            join("./target/", "usr/lib/holo/holo-x"),
            "target/usr/lib/holo/holo-x"
        );
        assert_eq!(join("/", "usr/lib/holo/holo-x"), "/usr/lib/holo/holo-x");
    }

    #[test]
    fn normalize_strips_dot_slash_and_trailing_slash() {
        assert_eq!(normalize("./target/"), "target");
        assert_eq!(normalize("/"), "/");
        assert_eq!(
            normalize("target/tmp/holo.1/file"),
            "target/tmp/holo.1/file"
        );
    }

    #[test]
    fn errno_text_is_lowercase_like_go() {
        let err = std::io::Error::from_raw_os_error(libc::EEXIST);
        assert_eq!(errno_text(&err), "file exists");
        let err = std::io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(errno_text(&err), "no such file or directory");
    }
}
