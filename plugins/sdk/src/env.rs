//! The `HOLO_*` environment a plugin runs in, with the defaults of
//! holo-plugin-interface(7) for a plugin that is run by hand.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};
use crate::root_fs::RootFs;

/// The plugin interface version this SDK speaks.
pub use holo_protocol::API_VERSION;

/// The environment of one plugin process.
#[derive(Debug)]
pub struct Env {
    /// The plugin id, e.g. `file`.
    pub plugin_id: String,
    /// `HOLO_API_VERSION`, 3 when unset.
    pub api_version: u32,
    /// `HOLO_ROOT_DIR`, `/` when unset or empty.
    pub root: PathBuf,
    /// True when `HOLO_ROOT_DIR` is set and is not `/`.
    pub test_mode: bool,
    /// `HOLO_RESOURCE_DIR`: where the resources are (a temporary copy under the driver).
    pub resource_dir: PathBuf,
    /// `HOLO_RESOURCE_ORIGIN`: the static resource directory that `resource_dir` copies.
    pub resource_origin: PathBuf,
    /// `HOLO_STATE_DIR`: persistent per-plugin state.
    pub state_dir: PathBuf,
    /// `HOLO_CACHE_DIR`: scratch space that lives for one driver run.
    pub cache_dir: PathBuf,
    /// `HOLO_EXTENSIONS`: the extensions the driver understands.
    pub extensions: Vec<String>,
    /// `HOLO_REFRESH=1`: a subscribed entity changed in this run.
    pub refresh: bool,
    /// `HOLO_MONITOR_ONLY=1`: run only the health checks (`holo apply
    /// --monitor-only`); nothing is applied.
    pub monitor_only: bool,
    /// Keeps a private cache directory alive when the plugin runs by hand.
    _private_cache: Option<tempfile::TempDir>,
    /// The root, opened by the first [`Env::root_fs`].
    pub(crate) opened_root: OpenedRoot,
}

/// The root opened once for an [`Env`].
#[derive(Default)]
pub(crate) struct OpenedRoot(std::sync::OnceLock<RootFs>);

impl OpenedRoot {
    pub(crate) fn get(&self) -> Option<&RootFs> {
        self.0.get()
    }

    pub(crate) fn set(&self, opened: RootFs) -> std::result::Result<(), ()> {
        self.0.set(opened).map_err(drop)
    }
}

impl std::fmt::Debug for OpenedRoot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "opened"
        } else {
            "not opened"
        })
    }
}

impl Env {
    /// File access as this environment asks for: contained in the root in
    /// test mode. The root is opened once per `Env`: a batch asks for it
    /// several times per entity.
    pub fn root_fs(&self) -> Result<RootFs> {
        if !self.test_mode {
            return Ok(RootFs::unconfined());
        }
        if let Some(opened) = self.opened_root.get() {
            return Ok(opened.clone());
        }
        let opened = RootFs::contained_in(&self.root)
            .map_err(|err| Error::io("open the root directory", &self.root, &err))?;
        let _ = self.opened_root.set(opened.clone());
        Ok(opened)
    }

    /// Reads the environment of this process for plugin `plugin_id`.
    pub fn from_process(plugin_id: &str) -> Result<Env> {
        Env::from_lookup(plugin_id, |key| std::env::var_os(key))
    }

    /// Reads the environment through `lookup` (tests pass a map here).
    pub fn from_lookup(plugin_id: &str, lookup: impl Fn(&str) -> Option<OsString>) -> Result<Env> {
        let non_empty = |key: &str| lookup(key).filter(|value| !value.is_empty());
        let api_version = match non_empty("HOLO_API_VERSION") {
            None => API_VERSION,
            Some(raw) => raw
                .to_str()
                .and_then(|s| s.trim().parse().ok())
                .ok_or_else(|| {
                    Error::new(format!(
                        "HOLO_API_VERSION={} is not a number; unset it or set it to {API_VERSION}",
                        raw.to_string_lossy()
                    ))
                })?,
        };
        let root = non_empty("HOLO_ROOT_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/"));
        let test_mode = root != Path::new("/");
        let below_root = |rel: &str| join_below(&root, Path::new(rel));
        let (cache_dir, private_cache) = match non_empty("HOLO_CACHE_DIR") {
            Some(dir) => (PathBuf::from(dir), None),
            None => {
                // Run by hand: a fresh cache, so that nothing stale is reused.
                // If none can be made, subcommands that need no cache still
                // work; writing the scan cache then fails naming the path.
                // Owner-only: a one-off's flags may hold secrets.
                match tempfile::Builder::new()
                    .prefix(&format!("holo-{plugin_id}."))
                    .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
                    .tempdir()
                {
                    Ok(dir) => (dir.path().to_path_buf(), Some(dir)),
                    Err(_) => (
                        std::env::temp_dir().join(format!("holo-{plugin_id}.unavailable")),
                        None,
                    ),
                }
            }
        };
        let resource_origin = non_empty("HOLO_RESOURCE_ORIGIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| below_root(&format!("usr/share/holo/{plugin_id}")));
        let resource_dir = match non_empty("HOLO_RESOURCE_DIR") {
            Some(dir) => PathBuf::from(dir),
            None => {
                let generated = cache_dir.join("generated-resources").join(plugin_id);
                if generated.is_dir() {
                    generated
                } else {
                    resource_origin.clone()
                }
            }
        };
        let state_dir = non_empty("HOLO_STATE_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| below_root(&format!("var/lib/holo/{plugin_id}")));
        let extensions = non_empty("HOLO_EXTENSIONS")
            .map(|raw| {
                raw.to_string_lossy()
                    .split(',')
                    .map(|ext| ext.trim().to_string())
                    .filter(|ext| !ext.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let refresh = non_empty("HOLO_REFRESH").is_some_and(|value| value != "0");
        let monitor_only = non_empty("HOLO_MONITOR_ONLY").is_some_and(|value| value != "0");
        Ok(Env {
            plugin_id: plugin_id.to_string(),
            api_version,
            root,
            test_mode,
            resource_dir,
            resource_origin,
            state_dir,
            cache_dir,
            extensions,
            refresh,
            monitor_only,
            _private_cache: private_cache,
            opened_root: OpenedRoot::default(),
        })
    }

    /// Joins an absolute system path below the root: `/etc/motd` becomes
    /// `$HOLO_ROOT_DIR/etc/motd` (unchanged when the root is `/`).
    pub fn root_join(&self, path: impl AsRef<Path>) -> PathBuf {
        join_below(&self.root, path.as_ref())
    }

    /// Maps a path below `HOLO_RESOURCE_DIR` to the same path below
    /// `HOLO_RESOURCE_ORIGIN`, for messages and for anything that outlives the
    /// run. Other paths are returned unchanged.
    pub fn origin_of(&self, path: impl AsRef<Path>) -> PathBuf {
        let path = path.as_ref();
        match path.strip_prefix(&self.resource_dir) {
            Ok(rel) if rel.as_os_str().is_empty() => self.resource_origin.clone(),
            Ok(rel) => self.resource_origin.join(rel),
            Err(_) => path.to_path_buf(),
        }
    }

    /// True when the driver announced extension `name` in `HOLO_EXTENSIONS`.
    pub fn has_extension(&self, name: &str) -> bool {
        self.extensions.iter().any(|ext| ext == name)
    }
}

/// `root` joined with `path` taken as relative (leading `/` dropped, `..`
/// cannot climb above the root).
fn join_below(root: &Path, path: &Path) -> PathBuf {
    let mut joined = root.to_path_buf();
    for component in path.components() {
        match component {
            Component::Normal(part) => joined.push(part),
            Component::ParentDir => {
                if joined != root {
                    joined.pop();
                }
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    joined
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_with(vars: &[(&str, &str)]) -> Env {
        let map: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        Env::from_lookup("demo", |key| map.get(key).cloned()).expect("valid environment")
    }

    #[test]
    fn unset_root_is_slash_and_not_test_mode() {
        let env = env_with(&[("HOLO_CACHE_DIR", "/tmp/c")]);
        assert_eq!(env.root, Path::new("/"));
        assert!(!env.test_mode);
        assert_eq!(env.state_dir, Path::new("/var/lib/holo/demo"));
        assert_eq!(env.resource_dir, Path::new("/usr/share/holo/demo"));
        assert_eq!(env.api_version, 3);
        assert!(!env.refresh);
    }

    #[test]
    fn root_other_than_slash_is_test_mode_and_joins_below() {
        let env = env_with(&[("HOLO_ROOT_DIR", "target"), ("HOLO_CACHE_DIR", "/tmp/c")]);
        assert!(env.test_mode);
        assert_eq!(env.root_join("/etc/motd"), Path::new("target/etc/motd"));
        assert_eq!(env.root_join("/../../etc/x"), Path::new("target/etc/x"));
        assert_eq!(env.state_dir, Path::new("target/var/lib/holo/demo"));
    }

    #[test]
    fn resource_paths_map_back_to_origin() {
        let env = env_with(&[
            ("HOLO_ROOT_DIR", "/r"),
            ("HOLO_CACHE_DIR", "/tmp/c"),
            ("HOLO_RESOURCE_DIR", "/tmp/c/generated-resources/demo"),
            ("HOLO_RESOURCE_ORIGIN", "/r/usr/share/holo/demo"),
        ]);
        assert_eq!(
            env.origin_of("/tmp/c/generated-resources/demo/a/b.toml"),
            Path::new("/r/usr/share/holo/demo/a/b.toml")
        );
        assert_eq!(env.origin_of("/elsewhere/x"), Path::new("/elsewhere/x"));
    }

    #[test]
    fn extensions_and_refresh_are_read() {
        let env = env_with(&[
            ("HOLO_CACHE_DIR", "/tmp/c"),
            ("HOLO_EXTENSIONS", "noop, order,batch"),
            ("HOLO_REFRESH", "1"),
        ]);
        assert!(env.has_extension("order") && env.has_extension("batch"));
        assert!(!env.has_extension("ord"));
        assert!(env.refresh);
    }

    #[test]
    fn unset_cache_dir_gives_a_private_directory() {
        let env = env_with(&[]);
        assert!(env.cache_dir.is_dir());
        let kept = env.cache_dir.clone();
        drop(env);
        assert!(!kept.exists());
    }

    #[test]
    fn bad_api_version_is_an_error_naming_the_variable() {
        let map: HashMap<&str, OsString> = [("HOLO_API_VERSION", OsString::from("three"))].into();
        let err = Env::from_lookup("demo", |key| map.get(key).cloned()).expect_err("must fail");
        assert!(err.message().contains("HOLO_API_VERSION=three"));
    }
}
