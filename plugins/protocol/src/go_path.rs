//! Go's lexical path cleaning (`path.Clean`, `filepath.Clean` on Unix):
//! the driver prints paths byte for byte as Holo 3 does with it, and
//! holo-scaffold's Go templates offer it as sprig's `clean`.

/// The shortest path with the same meaning, by lexical processing alone:
/// repeated slashes collapse, `.` elements vanish, `..` eats the previous
/// element (and stays at the start of a relative path).
pub fn clean(path: &str) -> String {
    if path.is_empty() {
        return ".".to_string();
    }
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_string(),
        (false, false) => joined,
    }
}

#[cfg(test)]
mod tests {
    use super::clean;

    #[test]
    fn clean_matches_go() {
        assert_eq!(clean("./target/"), "target");
        assert_eq!(clean("./target//usr/../etc"), "target/etc");
        assert_eq!(clean("/"), "/");
        assert_eq!(clean("/.."), "/");
        assert_eq!(clean("../a"), "../a");
        assert_eq!(clean("a/../.."), "..");
        assert_eq!(clean(""), ".");
    }
}
