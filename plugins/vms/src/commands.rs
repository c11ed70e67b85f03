//! The runtime's `holos` commands: up, down, stop, start, ps, logs, exec
//! and console. Each finds the project (from the compose file, or `-p`, or
//! the `down PROJECT` argument), runs, and prints `holos: …` messages on
//! stderr; errors exit 1.

use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use holos_compose::load::Options;
use holos_runtime::host;
use holos_runtime::images::cache::{self as image_cache, PullOptions};
use holos_runtime::images::verify as image_verify;
use holos_runtime::lifecycle::{self, UpRequest};
use holos_runtime::ops::{control, devices, doctor, inspect, snapshots, volumes};
use holos_runtime::settings::HostSettings;
use holos_runtime::ssh;
use holos_runtime::state::ProjectRecord;

use crate::cli::{
    ConsoleArgs, ExecArgs, HolosCommand, LogsArgs, PsArgs, SnapshotsCommand, VerifyArgs,
    VolumesCommand,
};
use crate::compose_project::{describe, project_name, resolve};

/// The byte Ctrl-] sends: it detaches the console.
const DETACH: u8 = 0x1d;
/// How long `stats` measures CPU use over.
const STATS_SAMPLE: Duration = Duration::from_millis(500);
/// How long `exec` waits for sshd unless `-w` says otherwise.
const EXEC_WAIT: Duration = Duration::from_secs(60);

/// Runs a runtime command; `None` for the commands that are not runtime ones.
pub fn run(command: &HolosCommand, options: &Options) -> Option<ExitCode> {
    let result = match command {
        HolosCommand::Up(args) => up(options, &args.services, args.no_wait, args.quiet),
        HolosCommand::Down(args) => with_runtime(|rt| {
            let project = match &args.project {
                Some(name) => name.clone(),
                None => project_name(options)?,
            };
            lifecycle::down(rt, &project)?;
            if args.volumes {
                remove_volumes(rt, &project)?;
            }
            Ok(())
        }),
        HolosCommand::Stop(args) => with_project(options, |rt, project| {
            lifecycle::stop(rt, project, args.service.as_deref())
        }),
        HolosCommand::Start(args) => with_project(options, |rt, project| {
            lifecycle::start(rt, project, args.service.as_deref())
        }),
        verb if verb.is_control_verb() => control_command(options, command),
        HolosCommand::Ps(args) => with_runtime(|rt| ps(rt, options, args)),
        HolosCommand::Logs(args) => with_runtime(|rt| logs(rt, options, args)),
        HolosCommand::Exec(args) => return Some(exec(options, args)),
        HolosCommand::Console(args) => with_runtime(|rt| console(rt, options, args)),
        HolosCommand::Inspect(args) if inspects_a_project(options, &args.instance) => {
            with_runtime(|rt| inspect_project(rt, &args.instance, args.json))
        }
        HolosCommand::Inspect(args) => with_runtime(|rt| {
            let record = load(rt, options)?;
            let view = inspect::view(
                &rt.layout,
                lifecycle::find_instance(&record, &args.instance)?,
            );
            print(&if args.json {
                inspect::to_json(&view)
            } else {
                inspect::readable(&view)
            })
        }),
        HolosCommand::Volumes(VolumesCommand::Ls(args)) => with_runtime(|rt| {
            let list = volumes::list(&rt.layout, &project_name(options)?)?;
            print(&if args.json {
                inspect::to_json(&list)
            } else {
                volumes::table(&list)
            })
        }),
        HolosCommand::Volumes(VolumesCommand::Rm(args)) => with_project(options, |rt, project| {
            volumes::remove(&rt.layout, project, &args.name)
        }),
        HolosCommand::Volumes(command) => with_runtime(|rt| volumes_command(rt, options, command)),
        HolosCommand::Snapshots(command) => {
            with_runtime(|rt| snapshots_command(rt, options, command))
        }
        HolosCommand::Doctor(args) => {
            return Some(doctor::run(HostSettings::from_env(), args.json));
        }
        HolosCommand::Devices(args) => with_runtime(|rt| {
            let mut list = devices::list(&devices::sysfs(&rt.system_root))?;
            if args.gpu {
                list = devices::gpus(&list);
            }
            print(&if args.json {
                inspect::to_json(&list)
            } else {
                devices::table(&list, args.gpu)
            })
        }),
        HolosCommand::Verify(args) => return Some(verify(options, args)),
        HolosCommand::Install(args) => crate::install::install(options, args),
        HolosCommand::Import(args) => crate::import::run(args),
        HolosCommand::Uninstall(args) => crate::install::uninstall(options, args),
        HolosCommand::Images(_) | HolosCommand::Pull(_) | HolosCommand::Lock(_) => {
            with_runtime(|rt| images_command(rt, options, command))
        }
        _ => return None,
    };
    Some(match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("holos: {message}");
            ExitCode::FAILURE
        }
    })
}

/// The Compose verbs beyond up and down: restart, pause, unpause, kill,
/// rm, wait, port, cp and ssh-config.
fn control_command(options: &Options, command: &HolosCommand) -> Result<(), String> {
    match command {
        HolosCommand::Restart(args) => with_project(options, |rt, project| {
            control::restart(rt, project, args.service.as_deref())
        }),
        HolosCommand::Pause(args) => with_project(options, |rt, project| {
            control::pause(rt, project, args.service.as_deref(), true)
        }),
        HolosCommand::Unpause(args) => with_project(options, |rt, project| {
            control::pause(rt, project, args.service.as_deref(), false)
        }),
        HolosCommand::Kill(args) => with_project(options, |rt, project| {
            control::kill(rt, project, args.service.as_deref(), args.signal)
        }),
        HolosCommand::Rm(args) => with_project(options, |rt, project| {
            control::remove_stopped(rt, project, args.service.as_deref())
        }),
        HolosCommand::Wait(args) => with_project(options, |rt, project| {
            control::wait(&rt.layout, project, args.service.as_deref())
        }),
        HolosCommand::Port(args) => with_runtime(|rt| {
            let record = load(rt, options)?;
            let address = control::port(&record, &args.instance, args.port, &args.protocol)?;
            print(&format!("{address}\n"))
        }),
        HolosCommand::Cp(args) => with_runtime(|rt| cp(rt, options, args)),
        HolosCommand::Top(args) => with_runtime(|rt| top(rt, options, args.service.as_deref())),
        HolosCommand::Stats(args) => with_runtime(|rt| {
            let record = load(rt, options)?;
            let rows = control::stats(&record, args.service.as_deref(), STATS_SAMPLE)?;
            print(&if args.json {
                inspect::to_json(&rows)
            } else {
                control::stats_table(&rows)
            })
        }),
        HolosCommand::SshConfig(args) => with_runtime(|rt| {
            let record = load(rt, options)?;
            print(&control::ssh_config(
                &rt.layout,
                &record,
                args.instance.as_deref(),
            )?)
        }),
        _ => Ok(()),
    }
}

/// `holos snapshots create|list|restore|rm|export`.
fn snapshots_command(
    settings: &HostSettings,
    options: &Options,
    command: &SnapshotsCommand,
) -> Result<(), String> {
    let layout = &settings.layout;
    let project = project_name(options)?;
    match command {
        SnapshotsCommand::Create(args) => {
            let name = snapshots::create(layout, &project, &args.instance, args.name.as_deref())?;
            eprintln!("holos: {}: created snapshot {name}", args.instance);
            print(&format!("{name}\n"))
        }
        SnapshotsCommand::List(args) => {
            let list = snapshots::list(layout, &project, &args.instance)?;
            print(&if args.json {
                inspect::to_json(&list)
            } else {
                snapshots::table(&list)
            })
        }
        SnapshotsCommand::Restore(args) => Ok(snapshots::restore(
            settings,
            &project,
            &args.instance,
            &args.name,
            args.force,
        )?),
        SnapshotsCommand::Rm(args) => {
            snapshots::remove(layout, &project, &args.instance, &args.name)?;
            eprintln!("holos: {}: removed snapshot {}", args.instance, args.name);
            Ok(())
        }
        SnapshotsCommand::Export(args) => {
            let output = args
                .output
                .clone()
                .unwrap_or_else(|| format!("{}-{}.qcow2", args.instance, args.name).into());
            snapshots::export(layout, &project, &args.instance, &args.name, &output)?;
            eprintln!("holos: wrote {}", output.display());
            Ok(())
        }
    }
}

/// `holos volumes export|import|snapshot|snapshots|snapshot-rm|snapshot-restore|resize`.
fn volumes_command(
    settings: &HostSettings,
    options: &Options,
    command: &VolumesCommand,
) -> Result<(), String> {
    let layout = &settings.layout;
    let project = project_name(options)?;
    match command {
        VolumesCommand::Export(args) => {
            let output = args
                .output
                .clone()
                .unwrap_or_else(|| format!("{}.qcow2", args.name).into());
            volumes::export(
                layout,
                &project,
                &args.name,
                args.snapshot.as_deref(),
                &output,
            )?;
            eprintln!("holos: wrote {}", output.display());
        }
        VolumesCommand::Import(args) => {
            let path = volumes::import(layout, &project, &args.name, &args.file, args.force)?;
            eprintln!(
                "holos: volume {} is now a copy of {} ({})",
                args.name,
                args.file.display(),
                path.display()
            );
        }
        VolumesCommand::Snapshot(args) => {
            let name = volumes::snapshot(layout, &project, &args.name, args.snapshot.as_deref())?;
            eprintln!("holos: volume {}: created snapshot {name}", args.name);
            return print(&format!("{name}\n"));
        }
        VolumesCommand::Snapshots(args) => {
            let list = volumes::snapshots(layout, &project, &args.name)?;
            return print(&if args.json {
                inspect::to_json(&list)
            } else {
                snapshots::table(&list)
            });
        }
        VolumesCommand::SnapshotRm(args) => {
            volumes::snapshot_remove(layout, &project, &args.name, &args.snapshot)?;
            eprintln!(
                "holos: volume {}: removed snapshot {}",
                args.name, args.snapshot
            );
        }
        VolumesCommand::SnapshotRestore(args) => {
            volumes::snapshot_restore(layout, &project, &args.name, &args.snapshot)?;
            eprintln!(
                "holos: volume {}: restored to snapshot {}",
                args.name, args.snapshot
            );
        }
        VolumesCommand::Resize(args) => {
            let resized = volumes::resize(layout, &project, &args.name, args.size)?;
            let (before, after) = volumes::human_pair(resized.before, args.size);
            let grown = format!("volume {} grown from {before} to {after}", args.name);
            match resized.growth {
                volumes::Growth::Unchanged => eprintln!(
                    "holos: volume {} is {} already; nothing to do",
                    args.name,
                    volumes::human_bytes(resized.before)
                ),
                volumes::Growth::Offline => eprintln!(
                    "holos: {grown} while no instance runs with it; the guest grows its file system at its next boot"
                ),
                volumes::Growth::Online { instance } => eprintln!(
                    "holos: {grown} online: in running {instance} (QMP block_resize), and its file system with resize2fs in the guest"
                ),
                volumes::Growth::DiskOnly { instance, reason } => eprintln!(
                    "holos: {grown} online: in running {instance} (QMP block_resize); its file system could not be grown now ({reason}), so the guest grows it at its next boot"
                ),
            }
        }
        VolumesCommand::Ls(_) | VolumesCommand::Rm(_) => {}
    }
    Ok(())
}

/// `holos images`, `holos pull [IMAGE...]` and `holos lock`.
fn images_command(
    settings: &HostSettings,
    options: &Options,
    command: &HolosCommand,
) -> Result<(), String> {
    let layout = &settings.layout;
    let mut stdout = std::io::stdout().lock();
    match command {
        HolosCommand::Images(args) => {
            let text = if args.json {
                let rows = image_cache::image_rows(layout);
                let mut text = serde_json::to_string_pretty(&rows)
                    .map_err(|e| format!("cannot write the images as JSON: {e}"))?;
                text.push('\n');
                text
            } else {
                image_cache::images_table(layout)
            };
            // A closed stdout (holos images | head) is not an error.
            let _ = stdout.write_all(text.as_bytes());
        }
        HolosCommand::Pull(args) => {
            let pull_options = PullOptions::from_env()?;
            let references = if args.images.is_empty() {
                let (_, manifest) = resolve(options)?;
                let mut references: Vec<String> = manifest
                    .services
                    .iter()
                    .filter(|s| s.image.path.is_none())
                    .map(|s| image_cache::lock_key(&s.image, Path::new(&manifest.directory)))
                    .collect();
                references.sort();
                references.dedup();
                if references.is_empty() {
                    eprintln!(
                        "holos: project {} uses no image alias; nothing to pull",
                        manifest.project
                    );
                }
                references
            } else {
                args.images.clone()
            };
            for reference in &references {
                if holos_compose::images::is_image_path(reference) {
                    return Err(format!(
                        "{reference} is a local image file; holos pulls only the built-in aliases (`holos images` lists them)"
                    ));
                }
                let image = image_cache::pull(layout, reference, &pull_options)?;
                let _ = writeln!(stdout, "{}", image.path.display());
            }
        }
        HolosCommand::Lock(_) => {
            let (_, manifest) = resolve(options)?;
            let written = image_cache::write_lock(layout, &manifest)?;
            eprintln!("holos: wrote {}", written.display());
        }
        _ => {}
    }
    Ok(())
}

/// `holos verify`: exits 1 when an image does not match.
fn verify(options: &Options, args: &VerifyArgs) -> ExitCode {
    let verdicts = with_runtime(|rt| {
        Ok(if args.all {
            image_verify::all(&rt.layout)
        } else if !args.images.is_empty() {
            image_verify::named(&rt.layout, &args.images)?
        } else {
            let (_, manifest) = resolve(options)?;
            image_verify::project(&rt.layout, &manifest)?
        })
    });
    let verdicts = match verdicts {
        Ok(verdicts) => verdicts,
        Err(message) => {
            eprintln!("holos: {message}");
            return ExitCode::FAILURE;
        }
    };
    let _ = print(&if args.json {
        inspect::to_json(&verdicts)
    } else {
        image_verify::report(&verdicts)
    });
    let failed = verdicts.iter().filter(|v| v.failed()).count();
    if failed > 0 {
        eprintln!(
            "holos: {failed} of {} image check{} failed",
            verdicts.len(),
            if verdicts.len() == 1 { "" } else { "s" }
        );
        return ExitCode::FAILURE;
    }
    if verdicts.is_empty() {
        eprintln!("holos: no cached image to verify");
    }
    ExitCode::SUCCESS
}

fn with_runtime<T>(body: impl FnOnce(&HostSettings) -> Result<T, String>) -> Result<T, String> {
    body(&HostSettings::from_env()?)
}

/// Runs a runtime operation on the project the command acts on.
fn with_project(
    options: &Options,
    operation: impl FnOnce(&HostSettings, &str) -> Result<(), holos_runtime::error::Error>,
) -> Result<(), String> {
    with_runtime(|rt| Ok(operation(rt, &project_name(options)?)?))
}

fn up(options: &Options, services: &[String], no_wait: bool, quiet: bool) -> Result<(), String> {
    let runtime = HostSettings::from_env()?;
    let layout = &runtime.layout;
    // Resolve once with the addresses the running instances already have.
    let (project, first) = resolve(options)?;
    let record = ProjectRecord::load(layout, &first.project)?;
    let manifest = match &record {
        Some(record) if !record.instances.is_empty() => {
            holos_compose::resolve_with_allocations(options, &record.allocated_ips())
                .map_err(|diags| describe(&diags))?
                .1
        }
        _ => first,
    };
    for warning in &project.warnings {
        eprintln!("warning: {warning}");
    }
    if !quiet {
        for note in holos_compose::load::notes::quiet_semantics(&project) {
            eprintln!("{note}");
        }
        for note in holos_compose::load::notes::disabled_by_profiles(&project) {
            eprintln!("{note}");
        }
    }
    let request = UpRequest {
        manifest: &manifest,
        files: project
            .files
            .iter()
            .map(|f| f.display().to_string())
            .collect(),
        services: services.to_vec(),
        no_wait,
        without_dependencies: false,
    };
    Ok(lifecycle::up(&runtime, &request)?)
}

/// Whether `name`, the first word of `exec` or `logs`, names a project of
/// the state directory: only where no compose project is at hand (no `-f`,
/// no `-p`, no compose file here), as after `holos run`.
fn names_a_recorded_project(settings: &HostSettings, options: &Options, name: &str) -> bool {
    no_compose_project(options) && settings.layout.projects().iter().any(|p| p == name)
}

fn recorded(settings: &HostSettings, project: &str) -> Result<ProjectRecord, String> {
    ProjectRecord::load(&settings.layout, project)?
        .ok_or_else(|| format!("project {project} has no instances; create them with holos up"))
}

fn load(settings: &HostSettings, options: &Options) -> Result<ProjectRecord, String> {
    let project = project_name(options)?;
    ProjectRecord::load(&settings.layout, &project)?
        .ok_or_else(|| format!("project {project} has no instances; create them with holos up"))
}

/// Whether a command names no compose project at all: no `-f`, no `-p`
/// and no compose file in the directory.
fn no_compose_project(options: &Options) -> bool {
    options.files.is_empty()
        && options.project_name.is_none()
        && holos_compose::load::discover(&options.working_dir).is_err()
}

/// `holos inspect NAME` shows a project when NAME is a recorded project and
/// not an instance or service of the compose project.
fn inspects_a_project(options: &Options, name: &str) -> bool {
    let Ok(runtime) = HostSettings::from_env() else {
        return false;
    };
    if !runtime.layout.projects().iter().any(|p| p == name) {
        return false;
    }
    let instance_here = project_name(options)
        .ok()
        .and_then(|p| ProjectRecord::load(&runtime.layout, &p).ok().flatten())
        .is_some_and(|record| lifecycle::find_instance(&record, name).is_ok());
    !instance_here
}

/// `holos inspect PROJECT [--json]`.
fn inspect_project(settings: &HostSettings, name: &str, json: bool) -> Result<(), String> {
    let Some(mut view) = holos_runtime::ops::project_view::project(&settings.layout, name)? else {
        return Err(format!(
            "project {name} has no record; create it with holos up"
        ));
    };
    // The manifest as the recorded files resolve now.
    let files: Vec<std::path::PathBuf> = view.files.iter().map(Into::into).collect();
    if !files.is_empty() && files.iter().all(|f| f.is_file()) {
        let options = Options {
            files,
            project_name: Some(name.to_string()),
            default_name: None,
            profiles: Vec::new(),
            working_dir: std::env::current_dir().unwrap_or_default(),
            environment: std::env::vars().collect(),
        };
        if let Ok((_, manifest)) = holos_compose::resolve(&options) {
            view.manifest = serde_json::to_value(&manifest).ok();
        }
    }
    print(&if json {
        inspect::to_json(&view)
    } else {
        holos_runtime::ops::project_view::readable(&view)
    })
}

fn ps(settings: &HostSettings, options: &Options, args: &PsArgs) -> Result<(), String> {
    let every_project = no_compose_project(options);
    let views = if every_project {
        holos_runtime::ops::project_view::all_instances(&settings.layout)?
    } else {
        let project = project_name(options)?;
        let record = ProjectRecord::load(&settings.layout, &project)?.unwrap_or_default();
        let mut instances: Vec<_> = record.instances.values().collect();
        instances.sort_by_key(|i| i.start_order);
        instances
            .iter()
            .map(|i| inspect::view(&settings.layout, i))
            .collect()
    };
    if args.json {
        return print(&inspect::to_json(&views));
    }
    let mut text = if every_project {
        format!("{:<20} ", "PROJECT")
    } else {
        String::new()
    };
    text.push_str(&format!(
        "{:<20} {:<8} {:<10} {:<8} {:<16} {:<30} IP\n",
        "INSTANCE", "STATE", "HEALTH", "PID", "SSH", "PORTS"
    ));
    for v in views {
        if every_project {
            text.push_str(&format!("{:<20} ", v.project));
        }
        let ports: Vec<String> = v
            .ports
            .iter()
            .map(|p| {
                format!(
                    "{}:{}->{}/{}",
                    p.host_ip, p.host_port, p.guest_port, p.protocol
                )
            })
            .collect();
        text.push_str(&format!(
            "{:<20} {:<8} {:<10} {:<8} {:<16} {:<30} {}\n",
            v.instance,
            v.state,
            v.health.unwrap_or("-"),
            v.pid.map(|p| p.to_string()).unwrap_or_else(|| "-".into()),
            format!("127.0.0.1:{}", v.ssh_port),
            if ports.is_empty() {
                "-".into()
            } else {
                ports.join(",")
            },
            v.ip
        ));
    }
    print(&text)
}

/// `holos top [SERVICE]`: `ps` in each running guest, over SSH, under a
/// line naming the instance.
fn top(settings: &HostSettings, options: &Options, service: Option<&str>) -> Result<(), String> {
    let record = load(settings, options)?;
    let key = settings.layout.ssh_key(&record.project);
    let mut instances: Vec<_> = record
        .instances
        .values()
        .filter(|i| service.is_none_or(|s| i.spec.service == s))
        .collect();
    if instances.is_empty() {
        return Err(format!(
            "project {} has no service {:?}",
            record.project,
            service.unwrap_or_default()
        ));
    }
    instances.sort_by_key(|i| i.start_order);
    for instance in instances {
        if host::running_pid(instance.pid, &instance.spec).is_none() {
            eprintln!("holos: {} is not running", instance.spec.label());
            continue;
        }
        let out = std::process::Command::new("ssh")
            .args(ssh::ssh_args(
                &key,
                &instance.spec,
                &instance.spec.user,
                false,
            ))
            .args(["--", "ps -eo user,pid,ppid,pcpu,pmem,etime,args"])
            .output()
            .map_err(|e| format!("cannot run ssh: {e}; holos top needs openssh-client"))?;
        if !out.status.success() {
            return Err(format!(
                "ps in {} failed ({}): {}",
                instance.spec.label(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        print(&format!("{}\n", instance.spec.name))?;
        print(&String::from_utf8_lossy(&out.stdout))?;
    }
    Ok(())
}

/// `INSTANCE:PATH`: the guest side of `cp` (a host path has no `:` before
/// its first `/`).
fn guest_side(text: &str) -> Option<(&str, &str)> {
    text.split_once(':')
        .filter(|(instance, _)| !instance.is_empty() && !instance.contains('/'))
}

/// `holos cp`: scp with the project key, as `exec` reaches the guest.
fn cp(settings: &HostSettings, options: &Options, args: &crate::cli::CpArgs) -> Result<(), String> {
    let (name, path, to_guest) = match (guest_side(&args.source), guest_side(&args.target)) {
        (Some((name, path)), None) => (name, path, false),
        (None, Some((name, path))) => (name, path, true),
        (Some(_), Some(_)) => {
            return Err("holos cp copies between the host and one guest; copy through the host in two steps".into());
        }
        (None, None) => {
            return Err(format!(
                "neither {:?} nor {:?} names a guest; write INSTANCE:PATH for the guest side (holos cp web-0:/etc/hosts ./hosts)",
                args.source, args.target
            ));
        }
    };
    let record = load(settings, options)?;
    let instance = lifecycle::find_instance(&record, name)?;
    if host::running_pid(instance.pid, &instance.spec).is_none() {
        return Err(format!(
            "{} is not running; start it with holos start {}",
            instance.spec.label(),
            instance.spec.service
        ));
    }
    let remote = format!("{}@127.0.0.1:{path}", instance.spec.user);
    let (from, to) = if to_guest {
        (args.source.as_str(), remote.as_str())
    } else {
        (remote.as_str(), args.target.as_str())
    };
    let key = settings.layout.ssh_key(&record.project);
    let status = std::process::Command::new("scp")
        .args(ssh::scp_options(&key, &instance.spec))
        .args([from, to])
        .status()
        .map_err(|e| format!("cannot run scp: {e}; holos cp needs openssh-client"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "scp from {from} to {to} failed ({status}); see its message above"
        ))
    }
}

/// `down -v`: the project's named volumes go too, as in Compose.
fn remove_volumes(settings: &HostSettings, project: &str) -> Result<(), String> {
    let dir = settings.layout.project_volumes(project);
    match std::fs::remove_dir_all(&dir) {
        Ok(()) => {
            eprintln!(
                "holos: removed the named volumes of project {project} ({})",
                dir.display()
            );
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot remove {}: {e}", dir.display())),
    }
}

/// Writes `text` to stdout; a closed stdout (`| head`) is not an error.
fn print(text: &str) -> Result<(), String> {
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    Ok(())
}

fn logs(settings: &HostSettings, options: &Options, args: &LogsArgs) -> Result<(), String> {
    let bounds = crate::logs::Bounds::parse(args)?;
    let (record, target) = match args.target.as_deref() {
        Some(name) if names_a_recorded_project(settings, options, name) => {
            (recorded(settings, name)?, None)
        }
        target => (load(settings, options)?, target),
    };
    let mut chosen: Vec<_> = record
        .instances
        .values()
        .filter(|i| target.is_none_or(|t| i.spec.name == t || i.spec.service == t))
        .collect();
    if chosen.is_empty() {
        return Err(format!(
            "project {} has no service or instance {:?}",
            record.project,
            target.unwrap_or_default()
        ));
    }
    chosen.sort_by_key(|i| i.start_order);
    crate::logs::print_logs(&chosen, args, bounds)
}

/// `holos exec`: replaces itself with `ssh`, so the exit status is the
/// remote command's (255 when ssh itself fails).
fn exec(options: &Options, args: &ExecArgs) -> ExitCode {
    let fail = |message: String| {
        eprintln!("holos: {message}");
        ExitCode::from(255)
    };
    let runtime = match HostSettings::from_env() {
        Ok(rt) => rt,
        Err(e) => return fail(e.into()),
    };
    let (record, instance_name, command) = match exec_target(&runtime, options, args) {
        Ok(found) => found,
        Err(e) => return fail(e),
    };
    let instance = match instance_name {
        Some(name) => match lifecycle::find_instance(&record, &name) {
            Ok(i) => i,
            Err(e) => return fail(e.into()),
        },
        None => match record.instances.values().min_by_key(|i| i.start_order) {
            Some(i) => i,
            None => return fail(format!("project {} has no instances", record.project)),
        },
    };
    if host::running_pid(instance.pid, &instance.spec).is_none() {
        return fail(format!(
            "{} is not running; start it with holos start {}",
            instance.spec.name, instance.spec.service
        ));
    }
    if let Err(e) = ssh::wait_for_sshd(instance.spec.ssh_port, args.wait.unwrap_or(EXEC_WAIT)) {
        return fail(format!("{}: {e}", instance.spec.name));
    }
    let mut argv: Vec<String> = Vec::new();
    for arg in &command {
        match arg.to_str() {
            Some(text) => argv.push(text.to_string()),
            None => {
                return fail(format!(
                    "argument {arg:?} is not UTF-8, which the remote shell command line cannot carry"
                ));
            }
        }
    }
    let user = args
        .user
        .clone()
        .unwrap_or_else(|| instance.spec.user.clone());
    let key = runtime.layout.ssh_key(&record.project);
    let tty = argv.is_empty() && nix::unistd::isatty(std::io::stdin()).unwrap_or(false);
    let line = match remote_line(&argv, &args.env, args.workdir.as_deref()) {
        Ok(line) => line,
        Err(e) => return fail(e),
    };
    let mut command = std::process::Command::new("ssh");
    command.args(ssh::ssh_args(&key, &instance.spec, &user, tty));
    if let Some(line) = line {
        command.arg("--").arg(line);
    }
    // Waited for, not exec'd: ssh's own failure (255) gets a word.
    let status = match command.status() {
        Ok(status) => status,
        Err(err) => {
            return fail(format!(
                "cannot run ssh: {err}; holos exec needs openssh-client"
            ));
        }
    };
    match status.code() {
        Some(255) => fail(format!(
            "ssh to {} as {user} ended with 255: ssh failed (the guest refused the login with the project's key, or the connection broke; see ssh's message above), or the command itself exited 255",
            instance.spec.label()
        )),
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(255)),
        // Ended by a signal, as a shell reports it.
        None => ExitCode::from(
            128 + status
                .signal()
                .and_then(|s| u8::try_from(s).ok())
                .unwrap_or(127),
        ),
    }
}

/// The remote command line of `exec`: the argv exactly, after `cd DIR`
/// (`--workdir`) and `export KEY=VAL` (`-e`); `None` for ssh's own login
/// shell.
fn remote_line(
    argv: &[String],
    env: &[String],
    workdir: Option<&str>,
) -> Result<Option<String>, String> {
    use holo_plugin::command::shell_quote;
    let mut steps = Vec::new();
    if let Some(dir) = workdir {
        steps.push(format!("cd {}", shell_quote(dir)));
    }
    for pair in env {
        match pair.split_once('=') {
            Some((key, _)) if !key.is_empty() && !key.contains(char::is_whitespace) => {
                steps.push(format!("export {}", shell_quote(pair)));
            }
            _ => return Err(format!("-e {pair:?} is not KEY=VAL; write e.g. -e DEBUG=1")),
        }
    }
    let body = if argv.is_empty() {
        "exec \"$SHELL\" -l".to_string()
    } else {
        ssh::remote_command_line(argv)
    };
    Ok(match (steps.is_empty(), argv.is_empty()) {
        (true, true) => None,
        (true, false) => Some(body),
        (false, _) => Some(format!("{} && {body}", steps.join(" && "))),
    })
}

/// The project, instance and command of `exec`: `exec INSTANCE [CMD...]`
/// in the compose project, or `exec PROJECT [INSTANCE [CMD...]]` for a
/// project of the state directory (its first instance when none is named).
fn exec_target(
    settings: &HostSettings,
    options: &Options,
    args: &ExecArgs,
) -> Result<(ProjectRecord, Option<String>, Vec<std::ffi::OsString>), String> {
    if !names_a_recorded_project(settings, options, &args.instance) {
        let record = load(settings, options)?;
        return Ok((record, Some(args.instance.clone()), args.command.clone()));
    }
    let record = recorded(settings, &args.instance)?;
    let mut rest = args.command.iter();
    let instance = rest
        .next()
        .filter(|word| *word != "--")
        .map(|word| word.to_string_lossy().into_owned());
    let command: Vec<_> = rest.skip_while(|word| *word == "--").cloned().collect();
    Ok((record, instance, command))
}

/// `holos console`: the serial console, raw, until Ctrl-] or the VM ends.
fn console(settings: &HostSettings, options: &Options, args: &ConsoleArgs) -> Result<(), String> {
    let record = load(settings, options)?;
    let instance = lifecycle::find_instance(&record, &args.instance)?;
    let socket_path = instance.spec.serial_socket();
    let socket = std::os::unix::net::UnixStream::connect(&socket_path).map_err(|e| {
        format!(
            "cannot attach to {} ({}): {e}; is it running? (holos ps)",
            instance.spec.name,
            socket_path.display()
        )
    })?;
    eprintln!(
        "holos: connected to {}'s console; Ctrl-] detaches",
        instance.spec.name
    );
    let _raw = RawTerminal::enter();
    let mut from_guest = socket
        .try_clone()
        .map_err(|e| format!("cannot use {}: {e}", socket_path.display()))?;
    let printer = std::thread::spawn(move || {
        let mut stdout = std::io::stdout();
        let mut buffer = [0u8; 4096];
        while let Ok(n) = from_guest.read(&mut buffer) {
            if n == 0 || stdout.write_all(&buffer[..n]).is_err() {
                break;
            }
            let _ = stdout.flush();
        }
    });
    let mut to_guest = socket;
    let mut stdin = std::io::stdin().lock();
    let mut buffer = [0u8; 1024];
    loop {
        let n = match stdin.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let input = &buffer[..n];
        let (keep, detach) = match input.iter().position(|b| *b == DETACH) {
            Some(at) => (&input[..at], true),
            None => (input, false),
        };
        if to_guest.write_all(keep).is_err() || detach {
            break;
        }
        if printer.is_finished() {
            break;
        }
    }
    let _ = to_guest.shutdown(std::net::Shutdown::Both);
    let _ = printer.join();
    drop(_raw);
    eprintln!("\r\nholos: detached from {}", instance.spec.name);
    Ok(())
}

/// Raw mode on a terminal stdin, restored on drop; nothing when stdin is
/// not a terminal.
struct RawTerminal {
    saved: Option<nix::sys::termios::Termios>,
}

impl RawTerminal {
    fn enter() -> RawTerminal {
        use nix::sys::termios::{SetArg, cfmakeraw, tcgetattr, tcsetattr};
        let stdin = std::io::stdin();
        let saved = tcgetattr(&stdin).ok();
        if let Some(saved) = &saved {
            let mut raw = saved.clone();
            cfmakeraw(&mut raw);
            let _ = tcsetattr(&stdin, SetArg::TCSANOW, &raw);
        }
        RawTerminal { saved }
    }
}

impl Drop for RawTerminal {
    fn drop(&mut self) {
        if let Some(saved) = &self.saved {
            let _ = nix::sys::termios::tcsetattr(
                std::io::stdin(),
                nix::sys::termios::SetArg::TCSANOW,
                saved,
            );
        }
    }
}
