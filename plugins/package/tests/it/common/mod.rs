//! What the real package manager tests share: running commands, putting
//! the machine back, and `holo apply` with `HOLO_ROOT_DIR=/`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn run(program: &str, args: &[&str], cwd: Option<&Path>) -> String {
    let mut command = Command::new(program);
    command.args(args);
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    let output = command.output().unwrap_or_else(|e| {
        panic!("cannot run {program}: {e}; install the package that provides it")
    });
    assert!(
        output.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Puts back every file and directory the test created or replaced.
#[derive(Default)]
pub struct Restore {
    /// Runs at the end to remove what the package manager installed.
    pub cleanup: Vec<(String, Vec<String>)>,
    files: Vec<(PathBuf, Option<Vec<u8>>)>,
    created_dirs: Vec<PathBuf>,
}

impl Restore {
    pub fn create_dirs(&mut self, dir: &Path) {
        let mut missing = Vec::new();
        let mut cursor = Some(dir);
        while let Some(path) = cursor {
            if path.exists() {
                break;
            }
            missing.push(path.to_path_buf());
            cursor = path.parent();
        }
        for path in missing.into_iter().rev() {
            fs::create_dir(&path).unwrap_or_else(|e| panic!("mkdir {}: {e}", path.display()));
            self.created_dirs.push(path);
        }
    }

    pub fn write(&mut self, path: &Path, text: &str) {
        if !self.files.iter().any(|(known, _)| known == path) {
            self.files.push((path.to_path_buf(), fs::read(path).ok()));
        }
        self.create_dirs(path.parent().expect("absolute path"));
        fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }

    pub fn forget_on_exit(&mut self, path: &Path) {
        if !self.files.iter().any(|(known, _)| known == path) {
            self.files.push((path.to_path_buf(), fs::read(path).ok()));
        }
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        for (program, args) in &self.cleanup {
            let _ = Command::new(program).args(args).output();
        }
        for (path, original) in self.files.iter().rev() {
            let _ = match original {
                Some(bytes) => fs::write(path, bytes),
                None => fs::remove_file(path).or(Ok(())),
            };
        }
        for dir in self.created_dirs.iter().rev() {
            let _ = fs::remove_dir(dir);
        }
    }
}

/// The `holo` driver beside `holo-package`, run on the real root.
pub struct Holo {
    pub driver: PathBuf,
    pub entity: String,
    pub env: Vec<(String, String)>,
}

impl Holo {
    /// Finds the driver; it must have been built (`cargo build -p holo`).
    pub fn new(plugin: &Path, entity: &str, env: Vec<(String, String)>) -> Holo {
        let driver = plugin.with_file_name("holo");
        assert!(
            driver.is_file(),
            "{} is missing: build the driver first (cargo build -p holo)",
            driver.display()
        );
        Holo {
            driver,
            entity: entity.to_owned(),
            env,
        }
    }

    /// `holo apply ENTITY` with `HOLO_ROOT_DIR=/`; returns its output.
    pub fn apply(&self) -> String {
        let output = Command::new(&self.driver)
            .args(["apply", &self.entity])
            .env("HOLO_ROOT_DIR", "/")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .output()
            .expect("run holo");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(output.status.success(), "holo apply failed:\n{text}");
        eprintln!("--- holo apply {}:{text}", self.entity);
        text
    }

    /// `holo apply`, then the package's installed version (from
    /// `installed`) must be `expected`; returns the apply's output.
    #[track_caller]
    pub fn apply_expecting(
        &self,
        installed: impl Fn() -> Option<String>,
        expected: Option<&str>,
    ) -> String {
        let output = self.apply();
        assert_eq!(installed().as_deref(), expected, "{output}");
        output
    }

    /// Applies again: the previous apply converged, so nothing is worked on.
    #[track_caller]
    pub fn apply_changes_nothing(&self) {
        let again = self.apply();
        assert!(
            !again.contains("Working on"),
            "a second apply changes nothing:\n{again}"
        );
    }
}

/// Declares the plugin in `/etc/holorc.d/10-package` and returns the
/// resource file to write the test's `[[package]]` into.
pub fn install_plugin(restore: &mut Restore, plugin: &Path, entity: &str) -> PathBuf {
    restore.write(
        Path::new("/etc/holorc.d/10-package"),
        &format!("plugin package={}\n", plugin.display()),
    );
    let record = format!("/var/lib/holo/package/{entity}.toml");
    restore.forget_on_exit(Path::new(&record));
    // Every `holo apply` writes its run report; the machine keeps its own.
    restore.forget_on_exit(Path::new("/var/lib/holo/last-run.json"));
    restore.create_dirs(Path::new("/var/lib/holo/package"));
    PathBuf::from("/usr/share/holo/package/zz-real-package-test.toml")
}

/// Writes the test's one `[[package]]` into `resource`.
pub fn declare_package(
    restore: &mut Restore,
    resource: &Path,
    package: &str,
    provider: &str,
    ensure: &str,
) {
    restore.write(
        resource,
        &format!(
            "[[package]]\nname = \"{package}\"\nprovider = \"{provider}\"\nensure = \"{ensure}\"\n"
        ),
    );
}
