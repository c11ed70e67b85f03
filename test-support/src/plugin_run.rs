//! A plugin process as `holo` starts it: the `HOLO_*` environment of
//! holo-plugin-interface(7) over an environment that holds only `PATH`,
//! with the plugin's directories below a test root.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The plugin interface version the tests speak.
const API_VERSION: &str = "3";

/// One plugin run being set up; [`PluginRun::command`] gives the process.
#[derive(Clone, Debug)]
pub struct PluginRun {
    program: PathBuf,
    args: Vec<OsString>,
    env: BTreeMap<String, Option<OsString>>,
    inherit: bool,
    fd3: Option<PathBuf>,
}

impl PluginRun {
    /// `program`, the plugin for resource kind `id`, on `root`:
    /// `HOLO_API_VERSION=3`, `HOLO_ROOT_DIR=ROOT`,
    /// `HOLO_RESOURCE_DIR=ROOT/usr/share/holo/ID`,
    /// `HOLO_STATE_DIR=ROOT/var/lib/holo/ID` and
    /// `HOLO_CACHE_DIR=ROOT/tmp/cache`; nothing else but `PATH`.
    pub fn new(program: impl Into<PathBuf>, id: &str, root: &Path) -> PluginRun {
        let run = PluginRun {
            program: program.into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            inherit: false,
            fd3: None,
        };
        run.api_version(API_VERSION)
            .env("HOLO_ROOT_DIR", root)
            .resource_dir(root.join("usr/share/holo").join(id))
            .state_dir(root.join("var/lib/holo").join(id))
            .cache_dir(root.join("tmp/cache"))
    }

    /// The workspace binary `name` (`holo-file`), for resource kind `id`.
    #[track_caller]
    pub fn binary(name: &str, id: &str, root: &Path) -> PluginRun {
        PluginRun::new(crate::binary(name), id, root)
    }

    /// Appends arguments (the operation and entity: `apply`, `file:/etc/x`).
    pub fn args<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(mut self, args: I) -> PluginRun {
        self.args
            .extend(args.into_iter().map(|arg| arg.as_ref().to_os_string()));
        self
    }

    /// `HOLO_RESOURCE_DIR`.
    pub fn resource_dir(self, dir: impl AsRef<OsStr>) -> PluginRun {
        self.env("HOLO_RESOURCE_DIR", dir)
    }

    /// `HOLO_RESOURCE_ORIGIN` (where generated resources came from).
    pub fn resource_origin(self, dir: impl AsRef<OsStr>) -> PluginRun {
        self.env("HOLO_RESOURCE_ORIGIN", dir)
    }

    /// `HOLO_STATE_DIR`.
    pub fn state_dir(self, dir: impl AsRef<OsStr>) -> PluginRun {
        self.env("HOLO_STATE_DIR", dir)
    }

    /// `HOLO_CACHE_DIR`.
    pub fn cache_dir(self, dir: impl AsRef<OsStr>) -> PluginRun {
        self.env("HOLO_CACHE_DIR", dir)
    }

    /// `HOLO_API_VERSION`.
    pub fn api_version(self, version: &str) -> PluginRun {
        self.env("HOLO_API_VERSION", version)
    }

    /// `HOLO_EXTENSIONS` (`noop,order,batch`).
    pub fn extensions(self, extensions: &str) -> PluginRun {
        self.env("HOLO_EXTENSIONS", extensions)
    }

    /// Sets any variable (`HOLO_TEST_KILL_AT`, `TMPDIR`, …).
    pub fn env(mut self, key: &str, value: impl AsRef<OsStr>) -> PluginRun {
        self.env
            .insert(key.to_string(), Some(value.as_ref().to_os_string()));
        self
    }

    /// Leaves `key` unset (a plugin run by hand lacks it).
    pub fn without(mut self, key: &str) -> PluginRun {
        self.env.insert(key.to_string(), None);
        self
    }

    /// Keeps the test's own environment below the `HOLO_*` variables.
    pub fn inherit_env(mut self) -> PluginRun {
        self.inherit = true;
        self
    }

    /// Writes what the plugin sends on FD 3 (the scan report, the batch
    /// results) to `file`, as `holo` reads it from its pipe.
    pub fn fd3_to(mut self, file: impl Into<PathBuf>) -> PluginRun {
        self.fd3 = Some(file.into());
        self
    }

    /// The process to spawn.
    pub fn command(&self) -> Command {
        let mut command = match &self.fd3 {
            None => Command::new(&self.program),
            Some(file) => {
                let mut shell = Command::new("sh");
                shell
                    .args(["-c", r#"exec "$0" "$@" 3>"$FD3_FILE""#])
                    .arg(&self.program)
                    .env("FD3_FILE", file);
                shell
            }
        };
        command.args(&self.args);
        if !self.inherit {
            let fd3 = self.fd3.as_ref().map(|file| ("FD3_FILE", file));
            command
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default());
            if let Some((key, file)) = fd3 {
                command.env(key, file);
            }
        }
        for (key, value) in &self.env {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        command
    }

    /// Runs the plugin to its end and collects its output.
    #[track_caller]
    pub fn output(&self) -> Output {
        self.command()
            .output()
            .unwrap_or_else(|err| panic!("cannot run {}: {err}", self.program.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(command: &Command) -> BTreeMap<String, Option<String>> {
        command
            .get_envs()
            .map(|(key, value)| {
                let value = value.map(|v| v.to_string_lossy().into_owned());
                (key.to_string_lossy().into_owned(), value)
            })
            .collect()
    }

    #[test]
    fn the_environment_is_holo_s_below_the_root() {
        let run = PluginRun::new("/bin/echo", "file", Path::new("/r"))
            .args(["apply", "file:/etc/x"])
            .extensions("noop,order")
            .without("HOLO_STATE_DIR");
        let command = run.command();
        assert_eq!(command.get_program(), "/bin/echo");
        let env = env_of(&command);
        let set = |key: &str| env.get(key).cloned().flatten();
        assert_eq!(set("HOLO_API_VERSION").as_deref(), Some("3"));
        assert_eq!(set("HOLO_ROOT_DIR").as_deref(), Some("/r"));
        assert_eq!(
            set("HOLO_RESOURCE_DIR").as_deref(),
            Some("/r/usr/share/holo/file")
        );
        assert_eq!(set("HOLO_CACHE_DIR").as_deref(), Some("/r/tmp/cache"));
        assert_eq!(set("HOLO_EXTENSIONS").as_deref(), Some("noop,order"));
        assert_eq!(set("HOLO_STATE_DIR"), None);
        assert_eq!(
            String::from_utf8_lossy(&run.output().stdout),
            "apply file:/etc/x\n"
        );
    }

    #[test]
    fn fd3_goes_to_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fd3 = dir.path().join("fd3");
        let output = PluginRun::new("sh", "x", dir.path())
            .args(["-c", "echo report >&3"])
            .fd3_to(&fd3)
            .output();
        assert!(output.status.success(), "{output:?}");
        assert_eq!(std::fs::read_to_string(&fd3).expect("fd3"), "report\n");
    }
}
