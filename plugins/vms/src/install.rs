//! `holos install` and `holos uninstall`: the project's systemd unit
//! (`holos_runtime::ops::install` writes its text), placed in the system's
//! or the user's unit directory and enabled with `systemctl`.
//!
//! In test mode (`HOLO_ROOT_DIR` set and not `/`) units go below the root:
//! `systemctl --root=ROOT` enables a system unit there, offline, and the
//! `systemctl --user` calls, which cannot work below a root, are only
//! reported. Nothing outside the root is written and no running systemd is
//! asked.

use std::path::{Path, PathBuf};

use holo_plugin::process::Command;
use holos_compose::load::Options;
use holos_runtime::ops::install::{self, Scope, UnitRequest};
use holos_runtime::settings::HostSettings;

use crate::cli::{InstallArgs, UninstallArgs};
use crate::compose_project::{project_name, resolve};

fn scope(system: bool, user: bool) -> Scope {
    if system {
        Scope::System
    } else if user || !nix::unistd::geteuid().is_root() {
        Scope::User
    } else {
        Scope::System
    }
}

/// Where the unit of `project` lives, and the root `systemctl` works on
/// (`Some` in test mode).
fn placement(
    settings: &HostSettings,
    scope: Scope,
    project: &str,
) -> Result<(PathBuf, Option<PathBuf>), String> {
    let mut dir = install::unit_dir(scope, &settings.system_root, |key| std::env::var_os(key))?;
    let test_root = (settings.system_root != Path::new("/")).then(|| settings.system_root.clone());
    if let (Some(root), Scope::User) = (&test_root, scope) {
        dir = root.join(dir.strip_prefix("/").unwrap_or(&dir));
    }
    Ok((dir.join(install::unit_name(project)), test_root))
}

/// The `systemctl` argv for `verb UNIT` in this scope, and whether to
/// `daemon-reload` first (a running systemd only).
fn systemctl(scope: Scope, test_root: Option<&Path>, verb: &str, unit: &str) -> Vec<Vec<String>> {
    let mut base = vec!["systemctl".to_string()];
    base.extend(scope.systemctl_flag().map(String::from));
    if let (Some(root), Scope::System) = (test_root, scope) {
        base.push(format!("--root={}", root.display()));
        return vec![[base, vec![verb.into(), unit.into()]].concat()];
    }
    vec![
        [base.clone(), vec!["daemon-reload".into()]].concat(),
        [base, vec![verb.into(), unit.into()]].concat(),
    ]
}

/// Runs each command; with `dry_run` only says what it would run.
/// `test_root` set: a `systemctl --user` call is reported, not run.
fn run_all(
    commands: &[Vec<String>],
    dry_run: bool,
    test_root: Option<&Path>,
) -> Result<(), String> {
    for argv in commands {
        if dry_run {
            eprintln!("holos: would run: {}", argv.join(" "));
            continue;
        }
        if test_root.is_some() && argv.iter().any(|a| a == "--user") {
            eprintln!(
                "holos: test mode (HOLO_ROOT_DIR): not running {}",
                argv.join(" ")
            );
            continue;
        }
        let finished = Command::new(&argv[0])
            .args(&argv[1..])
            .run()
            .map_err(|e| format!("cannot run {}: {e}", argv.join(" ")))?;
        if !finished.success() {
            return Err(format!(
                "{} failed: {}",
                argv.join(" "),
                finished.stderr_tail(5).trim()
            ));
        }
    }
    Ok(())
}

/// `holos install`.
pub fn install(options: &Options, args: &InstallArgs) -> Result<(), String> {
    let runtime = HostSettings::from_env()?;
    let (project, manifest) = resolve(options)?;
    let scope = scope(args.system, args.user);
    if scope == Scope::User && args.system {
        return Err("--system and --user exclude each other".into());
    }
    let holos = std::env::current_exe()
        .map_err(|e| format!("cannot tell where this holos program is: {e}"))?;
    // The binary may be installed as holo-vms with holos a link to it: the
    // path it runs from then needs the `holos` subcommand.
    let holos_subcommand =
        (!crate::cli::invoked_as_holos(holos.as_os_str())).then(|| "holos".to_string());
    let files = project
        .files
        .iter()
        .map(|f| options.working_dir.join(f))
        .collect();
    let request = UnitRequest {
        project: manifest.project.clone(),
        holos,
        holos_subcommand,
        files,
        profiles: options.profiles.clone(),
        directory: options.working_dir.join(&project.directory),
        state_dir: runtime.layout.root.clone(),
        scope,
        stop_timeout_secs: install::stop_timeout_secs(&manifest),
    };
    let text = install::unit_text(&request)?;
    let (path, test_root) = placement(&runtime, scope, &manifest.project)?;
    let unit = install::unit_name(&manifest.project);
    if args.dry_run {
        eprintln!("holos: would write {}", path.display());
        print!("{text}");
    } else {
        let rewritten = path.exists();
        let dir = path.parent().unwrap_or(Path::new("/"));
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        holo_plugin::atomic::write(
            &holo_plugin::root_fs::RootFs::unconfined(),
            &path,
            text.as_bytes(),
            &holo_plugin::atomic::WriteOptions::mode(0o644),
        )
        .map_err(|e| e.to_string())?;
        eprintln!("holos: wrote {}", path.display());
        // systemd keeps a loaded unit's old text until it reloads; with
        // --enable the reload is part of enabling.
        if rewritten && !args.enable && test_root.is_none() {
            let mut reload = vec!["systemctl".to_string()];
            reload.extend(scope.systemctl_flag().map(String::from));
            reload.push("daemon-reload".into());
            run_all(&[reload], false, None)?;
        }
    }
    let enable = systemctl(scope, test_root.as_deref(), "enable", &unit);
    if args.enable {
        run_all(&enable, args.dry_run, test_root.as_deref())?;
        if !args.dry_run {
            eprintln!(
                "holos: enabled {unit}: project {} comes up at boot",
                manifest.project
            );
        }
    } else {
        let last = enable.last().map(|argv| argv.join(" ")).unwrap_or_default();
        eprintln!("holos: to bring the project up at boot: {last}");
    }
    if scope == Scope::User {
        eprintln!(
            "holos: a user unit starts at boot only with lingering on: loginctl enable-linger {}",
            std::env::var("USER").unwrap_or_else(|_| "USER".into())
        );
    }
    Ok(())
}

/// `holos uninstall`: disables and removes the unit; the VMs keep running
/// (`holos down` takes them down).
pub fn uninstall(options: &Options, args: &UninstallArgs) -> Result<(), String> {
    let runtime = HostSettings::from_env()?;
    let project = project_name(options)?;
    let scope = scope(args.system, args.user);
    let (path, test_root) = placement(&runtime, scope, &project)?;
    let unit = install::unit_name(&project);
    if !path.exists() {
        return Err(format!(
            "project {project} has no unit {}; nothing to uninstall (the other scope is --{})",
            path.display(),
            if scope == Scope::System {
                "user"
            } else {
                "system"
            }
        ));
    }
    // Disable while the file is there, so systemctl finds its [Install].
    let mut commands = systemctl(scope, test_root.as_deref(), "disable", &unit);
    if commands.len() > 1 {
        commands.remove(0); // daemon-reload comes after the removal
    }
    run_all(&commands, args.dry_run, test_root.as_deref())?;
    if args.dry_run {
        eprintln!("holos: would remove {}", path.display());
        return Ok(());
    }
    std::fs::remove_file(&path).map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
    eprintln!("holos: removed {}", path.display());
    if test_root.is_none() || scope == Scope::User {
        let mut reload = vec!["systemctl".to_string()];
        reload.extend(scope.systemctl_flag().map(String::from));
        reload.push("daemon-reload".into());
        run_all(&[reload], false, test_root.as_deref())?;
    }
    Ok(())
}
