//! The glue to the SDK: scan lists the scripts, apply runs one.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use holo_plugin::{EntityCtx, Env, Error, Extension, Mode, Outcome, Plugin, Result, Scanned};

use crate::apply::{self, Decision};
use crate::model::{self, Script};
use crate::provider::posix;

/// Holo 3's `holo-run-scripts`.
pub struct RunScriptsPlugin;

impl Plugin for RunScriptsPlugin {
    const ID: &'static str = "run-scripts";
    /// No batch: a script writes to the plugin's own stdout and stderr, and
    /// only a process per entity keeps the two in the order they came.
    const EXTENSIONS: &'static [Extension] = &[Extension::Noop];
    type Spec = Script;

    fn scan(&self, env: &Env) -> Result<Vec<Scanned<Script>>> {
        let fs = env.root_fs()?;
        let dir = &env.resource_dir;
        let mut names: Vec<String> = match fs.read_dir_names(dir) {
            Ok(names) => names
                .into_iter()
                .filter_map(|n| n.into_string().ok())
                .collect(),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(err) => return Err(Error::new(format!("cannot list {}: {err}", dir.display()))),
        };
        names.retain(|name| model::is_script_name(name));
        names.sort();
        let mut found = Vec::new();
        for name in names {
            let path = dir.join(&name);
            // Follows a symlink: a link to a script is a script.
            let Ok(meta) = fs.metadata(&path) else {
                continue;
            };
            if !meta.is_file() {
                continue;
            }
            let script = Script {
                name: name.clone(),
                executable: meta.permissions().mode() & 0o111 != 0,
            };
            let shown = env.origin_of(&path).display().to_string();
            found.push(
                Scanned::new(model::entity_id(&name), script)
                    .source(&path)
                    .action("Executing", None)
                    .info("found at", shown),
            );
        }
        Ok(found)
    }

    fn apply(&self, env: &Env, entity: &EntityCtx<Script>, mode: Mode) -> Result<Outcome> {
        let Some(script) = &entity.spec else {
            return Ok(Outcome::NotChanged);
        };
        let path = env.resource_dir.join(&script.name);
        match apply::decide(mode, script.executable) {
            Decision::NotExecutable => Err(Error::new(format!(
                "{} is not executable; make it so (chmod +x) or remove it from {}",
                env.origin_of(&path).display(),
                env.origin_of(&env.resource_dir).display()
            ))),
            Decision::WouldRun => Ok(Outcome::Changed),
            Decision::Run => run(env, &path),
        }
    }
}

/// Runs the script; when it fails, the plugin exits with its exit code and
/// no message of its own, so the driver shows `!! exit status N` as Holo 3
/// did (no batch: see `EXTENSIONS`).
fn run(env: &Env, path: &Path) -> Result<Outcome> {
    let status = posix::run_script(&env.root_fs()?, path)?;
    match apply::failure_exit_code(status) {
        None => Ok(Outcome::Changed),
        Some(code) => {
            let _ = std::io::stdout().flush();
            std::process::exit(i32::from(code))
        }
    }
}
