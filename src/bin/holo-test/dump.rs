//! The tree dump format of Holo's fixture suites: reading a `source-tree` dump
//! into a directory, and dumping a directory back into that text form.
//!
//! A dump is a sequence of sections, each ending with a line of 40 dashes:
//! `file      0644 ./path` followed by the content, `symlink   0777 ./path`
//! followed by the target, and `directory 0755 ./path/`. When a file does not
//! end with a newline, the separator follows its last line directly, so the
//! reader treats any line ending in the separator as the end of a section.

use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Component, Path, PathBuf};

/// The line that ends every section.
pub const SEPARATOR: &[u8] = b"----------------------------------------";

/// Materializes the dump `text` below `dest`. `origin` names the dump in
/// error messages, which also carry the line number.
pub fn materialize(text: &[u8], dest: &Path, origin: &Path) -> Result<(), String> {
    let fail = |line: usize, message: &str| format!("{}:{}: {}", origin.display(), line, message);
    let mut lines = text.split(|byte| *byte == b'\n').enumerate();
    // directory modes are applied last, so that a read-only directory can
    // still receive the entries listed below it
    let mut directory_modes: Vec<(PathBuf, u32)> = Vec::new();

    while let Some((index, header)) = lines.next() {
        let header_line = index + 1;
        let header = header.trim_ascii();
        if header.is_empty() {
            continue;
        }
        let (kind, rest) = split_field(header);
        let (mode, path) = split_field(rest);
        if mode.is_empty() || path.is_empty() {
            return Err(fail(
                header_line,
                "incomplete section header: expected `TYPE MODE ./PATH`",
            ));
        }
        let mode = std::str::from_utf8(mode)
            .ok()
            .and_then(|mode| u32::from_str_radix(mode, 8).ok())
            .filter(|mode| *mode <= 0o7777)
            .ok_or_else(|| fail(header_line, "the mode must be an octal number such as 0644"))?;
        let relative = safe_relative_path(path).ok_or_else(|| {
            fail(
                header_line,
                "the path must be relative to the tree (like ./etc/holorc) and must not contain `..`",
            )
        })?;
        let target = dest.join(&relative);
        let io_fail = |err: io::Error| {
            fail(
                header_line,
                &format!("cannot create {}: {}", target.display(), err),
            )
        };

        match kind {
            b"file" => {
                let mut content = Vec::new();
                loop {
                    let Some((_, line)) = lines.next() else {
                        return Err(fail(
                            header_line,
                            "this file section is not closed by a separator line (40 dashes)",
                        ));
                    };
                    if let Some(last_line) = line.strip_suffix(SEPARATOR) {
                        content.extend_from_slice(last_line);
                        break;
                    }
                    content.extend_from_slice(line);
                    content.push(b'\n');
                }
                create_parent(&target).map_err(io_fail)?;
                remove_existing(&target).map_err(io_fail)?;
                fs::write(&target, &content).map_err(io_fail)?;
                fs::set_permissions(&target, fs::Permissions::from_mode(mode)).map_err(io_fail)?;
            }
            b"symlink" => {
                let link_target = match lines.next() {
                    Some((_, line)) if !line.is_empty() => line,
                    _ => return Err(fail(header_line + 1, "missing symlink target")),
                };
                expect_separator(lines.next()).map_err(|line| {
                    fail(
                        line.unwrap_or(header_line + 2),
                        "expected a separator line (40 dashes) after the symlink target",
                    )
                })?;
                create_parent(&target).map_err(io_fail)?;
                remove_existing(&target).map_err(io_fail)?;
                symlink(std::ffi::OsStr::from_bytes(link_target), &target).map_err(io_fail)?;
            }
            b"directory" => {
                expect_separator(lines.next()).map_err(|line| {
                    fail(
                        line.unwrap_or(header_line + 1),
                        "expected a separator line (40 dashes) after the directory header",
                    )
                })?;
                fs::create_dir_all(&target).map_err(io_fail)?;
                directory_modes.push((target, mode));
            }
            _ => {
                return Err(fail(
                    header_line,
                    "unknown section type: expected `file`, `symlink` or `directory`",
                ));
            }
        }
    }

    for (directory, mode) in directory_modes.iter().rev() {
        fs::set_permissions(directory, fs::Permissions::from_mode(*mode))
            .map_err(|err| format!("cannot set the mode of {}: {}", directory.display(), err))?;
    }
    Ok(())
}

/// Dumps the tree below `root`, in byte order of the names. The entries at
/// the relative paths in `excluded` are left out, but still count as
/// children of their parent directory.
pub fn dump(root: &Path, excluded: &[&Path]) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    dump_directory(root, Path::new(""), b".", excluded, &mut out)?;
    Ok(out)
}

/// Appends the entries of `directory` to `out`; returns whether the
/// directory had any entries (dumped or excluded).
fn dump_directory(
    directory: &Path,
    relative: &Path,
    prefix: &[u8],
    excluded: &[&Path],
    out: &mut Vec<u8>,
) -> io::Result<bool> {
    let mut names: Vec<_> = fs::read_dir(directory)?
        .map(|entry| entry.map(|entry| entry.file_name()))
        .collect::<io::Result<_>>()?;
    names.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));

    let mut had_entries = false;
    for name in names {
        let path = directory.join(&name);
        let entry_relative = relative.join(&name);
        if excluded.contains(&entry_relative.as_path()) {
            had_entries = true;
            continue;
        }
        let mut entry_prefix = prefix.to_vec();
        entry_prefix.push(b'/');
        entry_prefix.extend_from_slice(name.as_bytes());

        let metadata = fs::symlink_metadata(&path)?;
        let mode = format!("0{:o}", metadata.permissions().mode() & 0o7777);
        let file_type = metadata.file_type();
        if file_type.is_symlink() {
            out.extend_from_slice(b"symlink   0777 ");
            out.extend_from_slice(&entry_prefix);
            out.push(b'\n');
            out.extend_from_slice(fs::read_link(&path)?.as_os_str().as_bytes());
            out.push(b'\n');
        } else if file_type.is_file() {
            out.extend_from_slice(format!("file      {mode} ").as_bytes());
            out.extend_from_slice(&entry_prefix);
            out.push(b'\n');
            out.extend_from_slice(&fs::read(&path)?);
        } else if file_type.is_dir() {
            let mut children = Vec::new();
            let had_children = dump_directory(
                &path,
                &entry_relative,
                &entry_prefix,
                excluded,
                &mut children,
            )?;
            // a 0755 directory with children is implied by them (as in Holo)
            if !had_children || mode != "0755" {
                out.extend_from_slice(format!("directory {mode} ").as_bytes());
                out.extend_from_slice(&entry_prefix);
                out.extend_from_slice(b"/\n");
                out.extend_from_slice(SEPARATOR);
                out.push(b'\n');
            }
            out.extend_from_slice(&children);
            had_entries = true;
            continue;
        } else {
            // sockets, FIFOs and devices have no dump form (Holo skips them too)
            continue;
        }
        out.extend_from_slice(SEPARATOR);
        out.push(b'\n');
        had_entries = true;
    }
    Ok(had_entries)
}

/// Splits off the first whitespace-separated field; the rest is trimmed.
fn split_field(text: &[u8]) -> (&[u8], &[u8]) {
    let end = text
        .iter()
        .position(|byte| byte.is_ascii_whitespace())
        .unwrap_or(text.len());
    (&text[..end], text[end..].trim_ascii())
}

/// Turns `./etc/holorc` into `etc/holorc`; refuses anything that could leave
/// the tree.
fn safe_relative_path(path: &[u8]) -> Option<PathBuf> {
    let mut result = PathBuf::new();
    for component in Path::new(std::ffi::OsStr::from_bytes(path)).components() {
        match component {
            Component::Normal(part) => result.push(part),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!result.as_os_str().is_empty()).then_some(result)
}

/// Accepts a line made of dashes only; on mismatch, returns its line number.
fn expect_separator(line: Option<(usize, &[u8])>) -> Result<(), Option<usize>> {
    match line {
        Some((_, line)) if !line.is_empty() && line.iter().all(|byte| *byte == b'-') => Ok(()),
        Some((index, _)) => Err(Some(index + 1)),
        None => Err(None),
    }
}

fn create_parent(path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(parent) => fs::create_dir_all(parent),
        None => Ok(()),
    }
}

/// Like `ln -sf` and `install`: a later section replaces an earlier entry.
fn remove_existing(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(metadata) if metadata.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
file      0644 ./etc/holorc
plugin shell
----------------------------------------
symlink   0777 ./etc/link
holorc
----------------------------------------
file      0600 ./etc/no-newline
last line----------------------------------------
directory 0700 ./etc/private/
----------------------------------------
directory 0755 ./run/
----------------------------------------
file      0755 ./usr/bin/tool
#!/bin/sh
----------------------------------------
";

    #[test]
    fn a_dump_round_trips_through_a_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        materialize(SAMPLE.as_bytes(), dir.path(), Path::new("source-tree")).expect("valid dump");
        assert_eq!(
            fs::read(dir.path().join("etc/no-newline")).expect("file"),
            b"last line"
        );
        let mode = fs::metadata(dir.path().join("etc/private"))
            .expect("dir")
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o700);
        let dumped = dump(dir.path(), &[]).expect("dump");
        assert_eq!(String::from_utf8_lossy(&dumped), SAMPLE);
    }

    #[test]
    fn excluded_entries_are_left_out_but_imply_their_parent() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::create_dir_all(dir.path().join("usr/lib/holo")).expect("mkdir");
        fs::write(dir.path().join("usr/lib/holo/holo-x"), "x").expect("write");
        let dumped = dump(dir.path(), &[Path::new("usr/lib/holo")]).expect("dump");
        assert_eq!(String::from_utf8_lossy(&dumped), "");
    }

    proptest::proptest! {
        /// Any input either materializes or gives an error; it never panics
        /// and never writes outside the destination.
        #[test]
        fn arbitrary_dumps_never_panic(lines in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::strategy::Just("file      0644 ./etc/a".to_string()),
                proptest::strategy::Just("file 0600 ./etc/a/b".to_string()),
                proptest::strategy::Just("directory 0700 ./etc/".to_string()),
                proptest::strategy::Just("symlink   0777 ./etc/l".to_string()),
                proptest::strategy::Just("file 0644 ../../escape".to_string()),
                proptest::strategy::Just(String::from_utf8_lossy(SEPARATOR).into_owned()),
                proptest::strategy::Just(String::new()),
                "[ -~]{0,50}",
            ],
            0..30,
        )) {
            let dir = tempfile::tempdir().expect("tempdir");
            let dest = dir.path().join("root");
            fs::create_dir(&dest).expect("mkdir");
            let _ = materialize(lines.join("\n").as_bytes(), &dest, Path::new("source-tree"));
            let outside: Vec<_> = fs::read_dir(dir.path()).expect("list").collect();
            proptest::prop_assert_eq!(outside.len(), 1);
            make_writable_for_cleanup(&dest);
        }
    }

    /// Lets the tempdir cleanup remove directories the dump made read-only.
    fn make_writable_for_cleanup(directory: &Path) {
        let _ = fs::set_permissions(directory, fs::Permissions::from_mode(0o755));
        for entry in fs::read_dir(directory).into_iter().flatten().flatten() {
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                make_writable_for_cleanup(&entry.path());
            }
        }
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cases: &[(&str, &str)] = &[
            (
                "file 0644 ./a\nx\n",
                "source-tree:1: this file section is not closed",
            ),
            ("\nblob 0644 ./a\n", "source-tree:2: unknown section type"),
            (
                "file 0644 ../escape\n",
                "source-tree:1: the path must be relative",
            ),
            (
                "file 0644 /etc/x\n",
                "source-tree:1: the path must be relative",
            ),
            (
                "file 9z9 ./a\n",
                "source-tree:1: the mode must be an octal number",
            ),
            ("file\n", "source-tree:1: incomplete section header"),
            (
                "symlink 0777 ./l\n\n",
                "source-tree:2: missing symlink target",
            ),
            (
                "directory 0755 ./d/\nx\n",
                "source-tree:2: expected a separator line",
            ),
        ];
        for (text, expected) in cases {
            let err =
                materialize(text.as_bytes(), dir.path(), Path::new("source-tree")).expect_err(text);
            assert!(err.starts_with(expected), "{text:?} gave {err:?}");
        }
    }
}
