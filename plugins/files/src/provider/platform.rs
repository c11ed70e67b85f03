//! The package managers' leftovers next to a target: which suffixes the
//! distribution's package manager uses (from `ID` and `ID_LIKE` in the
//! root's os-release), and finding those files.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use holo_plugin::root_fs::RootFs;
use holo_plugin::{Env, Error, Result};

use crate::apply::Update;

/// The suffixes of one package manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Leftovers {
    /// The new default configuration beside the target.
    pub beside: Option<&'static str>,
    /// The old target, saved when the new default was written over it.
    pub saved_old: Option<&'static str>,
    /// The target saved when its package was removed.
    pub saved_on_removal: Option<&'static str>,
    /// Whether `saved_on_removal` also comes numbered (`.pacsave.2`).
    pub numbered: bool,
}

/// The leftovers of the distribution family named by os-release's `ID`
/// or, failing that, one of the words of `ID_LIKE`. `unittest` (Holo 3's
/// test suite) and unknown distributions have none.
pub fn leftovers_for(id: &str, id_like: &str) -> Leftovers {
    std::iter::once(id)
        .chain(id_like.split_whitespace())
        .find_map(family)
        .unwrap_or_default()
}

fn family(name: &str) -> Option<Leftovers> {
    let leftovers = match name {
        "arch" => Leftovers {
            beside: Some(".pacnew"),
            saved_old: None,
            saved_on_removal: Some(".pacsave"),
            numbered: true,
        },
        "debian" => Leftovers {
            beside: Some(".dpkg-dist"),
            saved_old: Some(".dpkg-old"),
            saved_on_removal: Some(".dpkg-old"),
            numbered: false,
        },
        "fedora" | "suse" | "opensuse" | "rhel" | "centos" | "mageia" => Leftovers {
            beside: Some(".rpmnew"),
            saved_old: Some(".rpmsave"),
            saved_on_removal: Some(".rpmsave"),
            numbered: false,
        },
        "alpine" => Leftovers {
            beside: Some(".apk-new"),
            ..Leftovers::default()
        },
        _ => return None,
    };
    Some(leftovers)
}

/// `ID` and `ID_LIKE` of the text of an os-release file.
pub fn parse_os_release(text: &str) -> (String, String) {
    let mut id = String::new();
    let mut id_like = String::new();
    for line in text.lines() {
        let Some((key, value)) = line.trim().split_once('=') else {
            continue;
        };
        let value = value
            .trim()
            .trim_matches(|c| c == '"' || c == '\'')
            .to_string();
        match key.trim() {
            "ID" => id = value,
            "ID_LIKE" => id_like = value,
            _ => {}
        }
    }
    (id, id_like)
}

/// The leftovers of the distribution in the root (`/etc/os-release`, else
/// `/usr/lib/os-release`).
pub fn detect(env: &Env, fs: &RootFs) -> Result<Leftovers> {
    for candidate in ["etc/os-release", "usr/lib/os-release"] {
        let path = env.root.join(candidate);
        match fs.read(&path) {
            Ok(bytes) => {
                let (id, id_like) = parse_os_release(&String::from_utf8_lossy(&bytes));
                return Ok(leftovers_for(&id, &id_like));
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => return Err(Error::io("read", &path, &err)),
        }
    }
    Ok(Leftovers::default())
}

fn with_suffix(target: &Path, suffix: &str) -> PathBuf {
    let mut name = OsString::from(target.as_os_str());
    name.push(suffix);
    PathBuf::from(name)
}

fn exists(fs: &RootFs, path: &Path) -> bool {
    fs.symlink_metadata(path)
        .is_ok_and(|meta| meta.is_file() || meta.file_type().is_symlink())
}

/// The package manager's update of `target` (a path below the root), if
/// it left one: the leftover's path and how to take it.
pub fn find_update(fs: &RootFs, leftovers: &Leftovers, target: &Path) -> Option<(Update, PathBuf)> {
    let beside = leftovers
        .beside
        .map(|suffix| (Update::Beside, with_suffix(target, suffix)));
    let saved = leftovers
        .saved_old
        .map(|suffix| (Update::SavedOld, with_suffix(target, suffix)));
    beside
        .into_iter()
        .chain(saved)
        .find(|(_, path)| exists(fs, path))
}

/// How Holo 3 names an update in `found updated target base: X -> Y`.
pub fn update_shown(
    update: Update,
    leftover: &Path,
    target: &str,
    leftovers: &Leftovers,
) -> String {
    match update {
        Update::Beside => crate::model::shown(leftover),
        Update::SavedOld => format!(
            "{target} (with {})",
            leftovers.saved_old.unwrap_or_default()
        ),
    }
}

/// The copies the package manager saved when `target`'s package was
/// removed (`.pacsave`, `.pacsave.1`, ...), sorted.
pub fn saved_on_removal(fs: &RootFs, leftovers: &Leftovers, target: &Path) -> Vec<PathBuf> {
    let (Some(suffix), Some(dir), Some(name)) = (
        leftovers.saved_on_removal,
        target.parent(),
        target.file_name(),
    ) else {
        return Vec::new();
    };
    let mut stem = name.as_bytes().to_vec();
    stem.extend_from_slice(suffix.as_bytes());
    let Ok(names) = fs.read_dir_names(dir) else {
        return Vec::new();
    };
    names
        .into_iter()
        .filter(|entry| is_saved_name(entry.as_bytes(), &stem, leftovers.numbered))
        .map(|entry| dir.join(entry))
        .filter(|path| exists(fs, path))
        .collect()
}

fn is_saved_name(name: &[u8], stem: &[u8], numbered: bool) -> bool {
    match name.strip_prefix(stem) {
        Some([]) => true,
        Some([b'.', digits @ ..]) if numbered => {
            !digits.is_empty() && digits.iter().all(u8::is_ascii_digit)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_come_from_id_then_id_like() {
        assert_eq!(leftovers_for("arch", "").beside, Some(".pacnew"));
        assert_eq!(leftovers_for("ubuntu", "debian").beside, Some(".dpkg-dist"));
        assert_eq!(
            leftovers_for("opensuse-leap", "suse opensuse").beside,
            Some(".rpmnew")
        );
        assert_eq!(leftovers_for("fedora", "").saved_old, Some(".rpmsave"));
        assert_eq!(leftovers_for("alpine", "").beside, Some(".apk-new"));
        assert_eq!(leftovers_for("unittest", ""), Leftovers::default());
    }

    #[test]
    fn os_release_values_may_be_quoted() {
        let (id, like) = parse_os_release("NAME=\"Ubuntu\"\nID=ubuntu\nID_LIKE=\"debian\"\n");
        assert_eq!((id.as_str(), like.as_str()), ("ubuntu", "debian"));
    }

    #[test]
    fn numbered_saved_copies_are_found_but_not_other_suffixes() {
        let stem = b"a.conf.pacsave";
        assert!(is_saved_name(b"a.conf.pacsave", stem, true));
        assert!(is_saved_name(b"a.conf.pacsave.2", stem, true));
        assert!(!is_saved_name(b"a.conf.pacsave.u", stem, true));
        assert!(!is_saved_name(b"a.conf.pacsave.", stem, true));
        assert!(!is_saved_name(b"a.conf.pacsave.2", stem, false));
    }
}
