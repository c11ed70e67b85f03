//! The cache directory, generators and the virtual resource root: static
//! resources from `$ROOT/usr/share/holo/ID` plus generated ones, and the
//! translation of their paths back to what users see.

use crate::output::{Output, Stream};
use crate::paths;
use crate::plugin::{Chunk, StderrLines};
use sha2::Digest;
use std::collections::HashMap;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

/// The run's cache directory `${TMPDIR:-/tmp}/holo.DIGITS`.
pub struct RunDir {
    pub root: String,
    pub cache: String,
    pub virtual_root: String,
    abs_virtual_root: String,
    /// Resource path relative to the virtual root → generator path (relative
    /// to the generators dir); absent or empty means a static resource.
    generator_for: HashMap<String, String>,
}

impl RunDir {
    pub fn create(root: &str) -> Result<RunDir, String> {
        let tmp = std::env::var("TMPDIR")
            .ok()
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| "/tmp".to_string());
        let cache = paths::clean(&make_cache_dir(&tmp)?);
        let virtual_root = paths::join(&cache, "generated-resources");
        std::fs::create_dir(&virtual_root)
            .map_err(|e| format!("mkdir {virtual_root}: {}", paths::errno_text(&e)))?;
        let abs_virtual_root = std::fs::canonicalize(&virtual_root)
            .map(|p| paths::display(&p))
            .unwrap_or_else(|_| virtual_root.clone());
        Ok(RunDir {
            root: root.to_string(),
            cache,
            virtual_root,
            abs_virtual_root,
            generator_for: HashMap::new(),
        })
    }

    /// Runs every executable regular file below `usr/share/holo/generators`
    /// in lexical order. A missing directory means no generators.
    pub fn run_generators(&mut self, out: &mut Output) -> Result<(), String> {
        let dir = paths::join(&self.root, "usr/share/holo/generators");
        let mut generators = Vec::new();
        collect_files(Path::new(&dir), &mut generators, false)
            .map_err(|e| format!("cannot read {dir}: {}", paths::errno_text(&e)))?;
        for generator in generators {
            let meta = std::fs::metadata(&generator);
            if !meta.is_ok_and(|m| m.permissions().mode() & 0o111 != 0) {
                continue;
            }
            self.run_generator(&dir, &generator, out)?;
        }
        Ok(())
    }

    fn run_generator(
        &mut self,
        dir: &str,
        generator: &str,
        out: &mut Output,
    ) -> Result<(), String> {
        // Holo 3's name: the SHA-256 of the generator's path, in hex.
        let digest = sha2::Sha256::digest(generator.as_bytes());
        let name: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
        let cache = paths::join(&self.cache, &name);
        std::fs::create_dir_all(&cache)
            .map_err(|e| format!("mkdir {cache}: {}", paths::errno_text(&e)))?;
        let resource_root = paths::join(&self.root, "usr/share/holo");
        let runner = crate::plugin::Plugin::generator(
            generator,
            &[
                ("HOLO_CACHE_DIR", &cache),
                ("HOLO_RESOURCE_ROOT", &resource_root),
                ("OUT", &self.virtual_root),
            ],
        );
        // Stdout and stderr in one pipe, in their order; each line is shown
        // as it arrives (Holo 3 shows them all at the end).
        let mut lines = StderrLines::default();
        let mut show = |line: &[u8]| {
            let text = String::from_utf8_lossy(line);
            let line = text.trim();
            if !line.is_empty() {
                out.warn(Stream::Err, &format!("output from {generator}: {line}"));
            }
        };
        let result = runner.run(&[], &[], None, false, |chunk| match chunk {
            Chunk::Stdout(bytes) | Chunk::Stderr(bytes) => lines.push(bytes, &mut show),
            Chunk::Fd3(_) => {}
        });
        lines.finish(&mut show);
        let status = result.map_err(|e| match e.kind() {
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted => e.to_string(),
            _ => format!("could not run {generator}: {}", paths::errno_text(&e)),
        })?;
        if !status.success() {
            return Err(format!(
                "could not run {generator}: {}",
                crate::plugin::describe_status(status)
            ));
        }
        let relative = generator
            .strip_prefix(&format!("{dir}/"))
            .unwrap_or(generator)
            .to_string();
        let mut produced = Vec::new();
        collect_files(Path::new(&self.virtual_root), &mut produced, true).map_err(|e| {
            format!(
                "cannot read {}: {}",
                self.virtual_root,
                paths::errno_text(&e)
            )
        })?;
        let prefix = format!("{}/", self.virtual_root);
        for file in produced {
            let rel = file.strip_prefix(&prefix).unwrap_or(&file).to_string();
            self.generator_for
                .entry(rel)
                .or_insert_with(|| relative.clone());
        }
        Ok(())
    }

    /// Copies `$ROOT/usr/share/holo/ID` into the virtual root, below what the
    /// generators made (a generated file wins).
    pub fn add_static_resources(&mut self, plugin_id: &str) -> Result<(), String> {
        let source = paths::join(&self.root, &format!("usr/share/holo/{plugin_id}"));
        match std::fs::metadata(&source) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(format!("cannot open {source}: not a directory!")),
            Err(e) => {
                return Err(format!(
                    "cannot open {source}: stat {source}: {}",
                    paths::errno_text(&e)
                ));
            }
        }
        let target = paths::join(&self.virtual_root, plugin_id);
        copy_tree(Path::new(&source), Path::new(&target)).map_err(|e| {
            format!(
                "cannot copy {source} to {target}: {}",
                paths::errno_text(&e)
            )
        })
    }

    /// Whether a generator wrote anything for this plugin.
    pub fn generated_for(&self, plugin_id: &str) -> bool {
        let prefix = format!("{plugin_id}/");
        self.generator_for
            .iter()
            .any(|(path, generator)| path.starts_with(&prefix) && !generator.is_empty())
    }

    /// Holo 3's `TranslateIfResourcePath`; most values are no resource
    /// paths and come back borrowed.
    pub fn translate<'a>(&self, input: &'a str) -> std::borrow::Cow<'a, str> {
        let rel = input
            .strip_prefix(&self.virtual_root)
            .and_then(|r| r.strip_prefix('/'))
            .or_else(|| {
                input
                    .strip_prefix(&self.abs_virtual_root)
                    .and_then(|r| r.strip_prefix('/'))
            });
        let Some(rel) = rel.filter(|r| !r.is_empty()) else {
            return input.into();
        };
        let translated = match self.generator_for.get(rel).filter(|g| !g.is_empty()) {
            Some(generator) => format!(
                "{}::{rel}",
                paths::join(
                    &self.root,
                    &format!("usr/share/holo/generators/{generator}")
                )
            ),
            None => paths::join(&self.root, &format!("usr/share/holo/{rel}")),
        };
        translated.into()
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.cache);
    }
}

/// Creates `TMPDIR/holo.` + decimal digits, as Go's `os.MkdirTemp(TMPDIR,
/// "holo.")` does for Holo 3: fixture suites normalise `holo.[0-9]+` in
/// their expected output. `mkdir` fails on an existing name, so a collision
/// (or a name planted by another user) only costs another try.
fn make_cache_dir(tmp: &str) -> Result<String, String> {
    // Go's joinPath: no cleaning, so messages show TMPDIR as given.
    let prefix = if tmp.ends_with('/') {
        format!("{tmp}holo.")
    } else {
        format!("{tmp}/holo.")
    };
    for _ in 0..10_000 {
        let name = format!("{prefix}{}", random_u32());
        match std::fs::DirBuilder::new().mode(0o700).create(&name) {
            Ok(()) => return Ok(name),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                if e.kind() == std::io::ErrorKind::NotFound
                    && let Err(stat) = std::fs::metadata(tmp)
                    && stat.kind() == std::io::ErrorKind::NotFound
                {
                    return Err(format!("stat {tmp}: {}", paths::errno_text(&stat)));
                }
                return Err(format!("mkdir {name}: {}", paths::errno_text(&e)));
            }
        }
    }
    Err(format!("mkdirtemp {prefix}*: file already exists"))
}

/// A random number for a directory name; not a secret, because `mkdir`
/// refuses names that exist.
fn random_u32() -> u32 {
    let mut bytes = [0u8; 4];
    // SAFETY: getrandom writes at most `bytes.len()` bytes into the buffer.
    let filled = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if filled == 4 {
        return u32::from_ne_bytes(bytes);
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    nanos ^ std::process::id().rotate_left(16)
}

/// Regular files below `dir` (with `any_kind`, every non-directory), depth
/// first with each directory's entries in byte order, as Go's `filepath.Walk`.
fn collect_files(dir: &Path, files: &mut Vec<String>, any_kind: bool) -> std::io::Result<()> {
    let mut entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries.collect::<std::io::Result<Vec<_>>>()?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let kind = entry.file_type()?;
        let path = paths::join(&paths::display(dir), &entry.file_name().to_string_lossy());
        if kind.is_dir() {
            collect_files(Path::new(&path), files, any_kind)?;
        } else if kind.is_file() || any_kind {
            files.push(path);
        }
    }
    Ok(())
}

/// Recreates directories, copies files (contents and executable bit) and
/// symlinks (as symlinks: plugins give them meaning). Existing files win.
fn copy_tree(source: &Path, target: &Path) -> std::io::Result<()> {
    match std::fs::create_dir(target) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    for entry in std::fs::read_dir(source)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let from = entry.path();
        let to = target.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&from, &to)?;
        } else if std::fs::symlink_metadata(&to).is_ok() {
            continue;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&from)?, &to)?;
        } else if !kind.is_file() {
            // a FIFO or device would block or make no sense as a resource
            return Err(std::io::Error::other(format!(
                "{} is not a regular file, directory or symlink; remove it",
                from.display()
            )));
        } else {
            // Holo 3's mode for a copied resource: private, executable when
            // the owner could execute the source.
            let mode = entry.metadata()?.permissions().mode();
            std::fs::copy(&from, &to)?;
            let copied = 0o600 | (mode & 0o100);
            std::fs::set_permissions(&to, std::fs::Permissions::from_mode(copied))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_dir_is_holo_dot_decimal_digits_and_private() {
        let tmp = tempfile::tempdir().unwrap();
        let tmp = tmp.path().to_str().unwrap();
        let first = make_cache_dir(tmp).unwrap();
        let second = make_cache_dir(&format!("{tmp}/")).unwrap();
        assert_ne!(first, second);
        for dir in [&first, &second] {
            let digits = dir.strip_prefix(&format!("{tmp}/holo.")).unwrap();
            assert!(
                !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()),
                "{dir}"
            );
            let mode = std::fs::metadata(dir).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700);
        }
    }

    #[test]
    fn missing_tmpdir_is_named_as_go_does() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = format!("{}/nope", tmp.path().to_str().unwrap());
        assert_eq!(
            make_cache_dir(&missing).unwrap_err(),
            format!("stat {missing}: no such file or directory")
        );
    }

    #[test]
    fn static_resources_get_holo3_modes() {
        let tmp = tempfile::tempdir().unwrap();
        let source = tmp.path().join("source");
        std::fs::create_dir(&source).unwrap();
        for (name, mode) in [("plain", 0o644), ("script", 0o755), ("group-x", 0o654)] {
            let path = source.join(name);
            std::fs::write(&path, name).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        let target = tmp.path().join("target");
        copy_tree(&source, &target).unwrap();
        let mode = |name: &str| {
            std::fs::metadata(target.join(name))
                .unwrap()
                .permissions()
                .mode()
                & 0o7777
        };
        assert_eq!(mode("plain"), 0o600);
        assert_eq!(mode("script"), 0o700);
        assert_eq!(mode("group-x"), 0o600);
        assert_eq!(std::fs::read(target.join("script")).unwrap(), b"script");
    }
}
