//! The cache directory, generators and the virtual resource root: static
//! resources from `$ROOT/usr/share/holo/ID` plus generated ones, and the
//! translation of their paths back to what users see.

use crate::output::{Output, Stream};
use crate::paths;
use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Mutex;

/// Paths to remove on exit, including on SIGINT and SIGTERM.
pub static CLEANUP: Mutex<Vec<String>> = Mutex::new(Vec::new());

pub fn register_cleanup(path: &str) {
    if let Ok(mut list) = CLEANUP.lock() {
        list.push(path.to_string());
    }
}

pub fn unregister_cleanup(path: &str) {
    if let Ok(mut list) = CLEANUP.lock() {
        list.retain(|p| p != path);
    }
}

/// Removes what is registered: a file (the lock) or a directory (the cache).
pub fn run_cleanup() {
    if let Ok(mut list) = CLEANUP.lock() {
        for path in list.drain(..).rev() {
            let p = Path::new(&path);
            if p.is_dir() {
                let _ = std::fs::remove_dir_all(p);
            } else {
                let _ = std::fs::remove_file(p);
            }
        }
    }
}

/// The run's cache directory `${TMPDIR:-/tmp}/holo.XXXXXX`.
pub struct Runtime {
    pub root: String,
    pub cache: String,
    pub virtual_root: String,
    abs_virtual_root: String,
    /// Resource path relative to the virtual root → generator path (relative
    /// to the generators dir); absent or empty means a static resource.
    generator_for: HashMap<String, String>,
}

impl Runtime {
    pub fn create(root: &str) -> Result<Runtime, String> {
        let tmp = std::env::var("TMPDIR")
            .ok()
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| "/tmp".to_string());
        let template = paths::join(&tmp, "holo.XXXXXX");
        let cache = nix::unistd::mkdtemp(Path::new(&template))
            .map_err(|e| format!("mkdir {template}: {}", e.desc().to_lowercase()))?;
        let cache = paths::clean(&paths::display(&cache));
        register_cleanup(&cache);
        let virtual_root = paths::join(&cache, "generated-resources");
        std::fs::create_dir(&virtual_root)
            .map_err(|e| format!("mkdir {virtual_root}: {}", paths::errno_text(&e)))?;
        let abs_virtual_root = std::fs::canonicalize(&virtual_root)
            .map(|p| paths::display(&p))
            .unwrap_or_else(|_| virtual_root.clone());
        Ok(Runtime {
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
        let cache = paths::join(
            &self.cache,
            &format!("generator-{}", stable_hash(generator)),
        );
        std::fs::create_dir_all(&cache)
            .map_err(|e| format!("mkdir {cache}: {}", paths::errno_text(&e)))?;
        // One pipe for stdout and stderr keeps their order, as Go's
        // CombinedOutput does.
        let run = || -> std::io::Result<(std::process::ExitStatus, Vec<u8>)> {
            let (mut reader, writer) = std::io::pipe()?;
            let mut child = std::process::Command::new(generator)
                .env("HOLO_CACHE_DIR", &cache)
                .env(
                    "HOLO_RESOURCE_ROOT",
                    paths::join(&self.root, "usr/share/holo"),
                )
                .env("OUT", &self.virtual_root)
                .stdin(std::process::Stdio::null())
                .stdout(writer.try_clone()?)
                .stderr(writer)
                .spawn()?;
            let mut combined = Vec::new();
            std::io::Read::read_to_end(&mut reader, &mut combined)?;
            Ok((child.wait()?, combined))
        };
        let (status, combined) =
            run().map_err(|e| format!("could not run {generator}: {}", paths::errno_text(&e)))?;
        for line in String::from_utf8_lossy(&combined).lines() {
            let line = line.trim();
            if !line.is_empty() {
                out.warn(Stream::Err, &format!("output from {generator}: {line}"));
            }
        }
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

    /// Holo 3's `TranslateIfResourcePath`.
    pub fn translate(&self, input: &str) -> String {
        let rel = input
            .strip_prefix(&self.virtual_root)
            .and_then(|r| r.strip_prefix('/'))
            .or_else(|| {
                input
                    .strip_prefix(&self.abs_virtual_root)
                    .and_then(|r| r.strip_prefix('/'))
            });
        let Some(rel) = rel.filter(|r| !r.is_empty()) else {
            return input.to_string();
        };
        match self.generator_for.get(rel).filter(|g| !g.is_empty()) {
            Some(generator) => format!(
                "{}::{rel}",
                paths::join(
                    &self.root,
                    &format!("usr/share/holo/generators/{generator}")
                )
            ),
            None => paths::join(&self.root, &format!("usr/share/holo/{rel}")),
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.cache);
        unregister_cleanup(&self.cache);
    }
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
            let mode = entry.metadata()?.permissions().mode();
            std::fs::copy(&from, &to)?;
            let exec = if mode & 0o111 != 0 { 0o755 } else { 0o644 };
            std::fs::set_permissions(&to, std::fs::Permissions::from_mode(exec))?;
        }
    }
    Ok(())
}

/// A stable, distinct name per generator path for its cache directory.
fn stable_hash(text: &str) -> String {
    // FNV-1a: no cryptographic strength needed here.
    let mut hash: u64 = 0xcbf29ce484222325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x100000001b3);
    }
    format!("{hash:016x}")
}
