//! `holo-vms ensure PROJECT --file FILE` and `holo-vms status PROJECT`: a
//! compose project is the resource, so the one-off takes the file as it
//! is, as the resource `PROJECT/holos.yaml`, and converges every service
//! of it through the SDK's one-off run, as `holo apply` converges that
//! resource; `status` prints the compose file a recorded project was
//! brought up from, with the state of each instance as comments.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use holo_plugin::oneoff::{EnsureRequest, ResourceEntry};
use holo_plugin::{Env, Error, Result};
use holos_runtime::state::ProjectRecord;

use super::project_file::{self, COMPOSE_FILE};
use super::{InstanceState, VmsPlugin, instance_state};

const ENSURE_USAGE: &str =
    "usage: holo-vms ensure PROJECT [--file COMPOSE_FILE] [--noop] [--force-apply]";

/// `holo-vms ensure PROJECT [--file FILE] [--noop] [--force-apply]`.
pub fn ensure(plugin: &VmsPlugin, env: &Env, args: &[String]) -> Result<ExitCode> {
    let mut project = None;
    let mut file = None;
    let mut noop = false;
    let mut force = false;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--noop" => noop = true,
            "--force-apply" => force = true,
            "--file" | "-f" => {
                let value = args.next().ok_or_else(|| {
                    Error::new(format!(
                        "holo-vms ensure: --file needs a value; {ENSURE_USAGE}"
                    ))
                })?;
                file = Some(value.clone());
            }
            other => {
                if let Some(value) = other.strip_prefix("--file=") {
                    file = Some(value.to_string());
                } else if other.starts_with('-') {
                    return Err(Error::new(format!(
                        "holo-vms ensure: unknown flag {other}; {ENSURE_USAGE}"
                    )));
                } else if project.replace(other.to_string()).is_some() {
                    return Err(Error::new(format!(
                        "holo-vms ensure: {other:?} is a second project; {ENSURE_USAGE}"
                    )));
                }
            }
        }
    }
    let Some(project) = project else {
        return Err(Error::new(ENSURE_USAGE));
    };
    check_project_name(&project)?;
    let given = file.as_deref().unwrap_or(COMPOSE_FILE);
    let request = EnsureRequest {
        resources: vec![ResourceEntry::Link {
            path: Path::new(&project).join(COMPOSE_FILE),
            target: compose_file(env, given)?,
            shown: given.to_string(),
        }],
        noop,
        force,
        flags_given: Vec::new(),
    };
    holo_plugin::oneoff::run_ensure(plugin, env, "holo-vms ensure", &request)
}

/// A project name is a directory name of the resources.
fn check_project_name(project: &str) -> Result<()> {
    if project.is_empty() || project == "." || project == ".." || project.contains('/') {
        return Err(Error::new(format!(
            "holo-vms ensure: {project:?} is not a project name; give a name without / such as shop"
        )));
    }
    Ok(())
}

/// The compose file as a real path: relative to the current directory, and
/// in test mode an absolute path is below the root and the file must be
/// there.
fn compose_file(env: &Env, given: &str) -> Result<PathBuf> {
    let path = Path::new(given);
    let cwd = std::env::current_dir()
        .map_err(|err| Error::new(format!("holo-vms ensure: no current directory: {err}")))?;
    let path = if path.is_absolute() {
        env.root_join(path)
    } else {
        cwd.join(path)
    };
    let fs = env.root_fs()?;
    let real = fs
        .real_path(&path)
        .map_err(|err| Error::new(format!("holo-vms ensure: cannot read {given}: {err}")))?;
    if env.test_mode {
        let root = std::fs::canonicalize(&env.root).unwrap_or_else(|_| env.root.clone());
        if !real.starts_with(&root) {
            return Err(Error::new(format!(
                "holo-vms ensure: {given} is outside the root {}; in test mode the compose file must be below it",
                env.root.display()
            )));
        }
    }
    if !real.is_file() {
        return Err(Error::new(format!(
            "holo-vms ensure: {given} is not a file; give the compose file of the project"
        )));
    }
    Ok(real)
}

/// `holo-vms status PROJECT`: the compose file the recorded project was
/// brought up from, as it is now, after a comment per instance; exit status
/// 3 when there is no such file to show.
pub fn status(env: &Env, args: &[String]) -> Result<ExitCode> {
    let [project] = args else {
        return Err(Error::new(
            "usage: holo-vms status PROJECT (exactly one project)",
        ));
    };
    let runtime = project_file::runtime(env)?;
    let record = ProjectRecord::load(&runtime.layout, project).map_err(Error::new)?;
    let (text, whole) = status_text(env, project, record.as_ref())?;
    print!("{text}");
    use std::io::Write;
    let _ = std::io::stdout().flush();
    Ok(if whole {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(3)
    })
}

/// The text of `status` and whether it declares the whole project.
fn status_text(env: &Env, project: &str, record: Option<&ProjectRecord>) -> Result<(String, bool)> {
    let Some(record) = record else {
        return Ok((
            format!(
                "# holo-vms: no project {project} is recorded: it was never brought up, or it was taken down\n"
            ),
            false,
        ));
    };
    let files: Vec<(PathBuf, PathBuf)> = record
        .files
        .iter()
        .map(|file| project_file::recorded_file(env, file))
        .collect();
    let shown: Vec<String> = files
        .iter()
        .map(|(shown, _)| shown.display().to_string())
        .collect();
    let mut out = format!(
        "# project {project}, brought up from {}\n",
        shown.join(", ")
    );
    let mut instances: Vec<_> = record.instances.iter().collect();
    instances.sort_by_key(|(name, instance)| (instance.start_order, name.as_str()));
    for (name, _) in instances {
        let state = match instance_state(Some(record), name) {
            InstanceState::Running(pid) => format!("running (pid {pid})"),
            InstanceState::Stopped => "stopped".to_string(),
            InstanceState::Crashed => "not running: its QEMU process is gone".to_string(),
            InstanceState::Missing => "not recorded".to_string(),
        };
        out.push_str(&format!("# {name}: {state}\n"));
    }
    let [(file, host_path)] = files.as_slice() else {
        out.push_str(
            "# services: the project was brought up from several files (or none), which are not one resource; write them as one holos.yaml\n",
        );
        return Ok((out, false));
    };
    match env.root_fs()?.read_to_string(host_path) {
        Ok(text) => {
            // Inline secrets are left out, as `holos config` leaves them
            // out; the file is then shown as parsed, without its comments.
            if let Ok(mut model) = holos_compose::yaml::parse_str(&text, host_path) {
                let secrets = holos_compose::manifest::redact_inline_secrets(&mut model);
                if !secrets.is_empty() {
                    out.push_str("# the compose file as it is now, without its inline secrets:\n");
                    for name in secrets {
                        out.push_str(&format!(
                            "# secrets.{name}.content is not shown; fill it in\n"
                        ));
                    }
                    if model.get("name").is_none() {
                        out.push_str(&format!("name: {project}\n"));
                    }
                    out.push_str(&model.to_yaml_string());
                    return Ok((out, false));
                }
            }
            out.push_str("# the compose file as it is now:\n");
            let named = text.lines().any(|line| line.starts_with("name:"));
            if !named {
                out.push_str(&format!("name: {project}\n"));
            }
            out.push_str(&text);
            if !text.ends_with('\n') {
                out.push('\n');
            }
            Ok((out, true))
        }
        Err(err) => {
            out.push_str(&format!(
                "# services: the compose file {} cannot be read ({err}); write the services again\n",
                file.display()
            ));
            Ok((out, false))
        }
    }
}
