//! `holos run IMAGE [-- CMD...]`: a one-off VM, as `docker run` starts a
//! one-off container. It has its own parser because `-p` means publish here
//! (as in `docker run`) and the project name everywhere else.
//!
//! The VM is a project of one service, written as a compose file (JSON, a
//! subset of YAML) to `runs/NAME/holos.yaml` in the state directory, so
//! that `ps`, `logs`, `exec`, `stop` and `down -p NAME` work on it as on
//! any project.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use holos_compose::load::Options;
use holos_runtime::lifecycle::{self, UpRequest};
use holos_runtime::settings::HostSettings;
use holos_runtime::ssh;
use holos_runtime::state::ProjectRecord;
use serde_json::{Map, Value, json};

/// How long a run waits for the guest's sshd before its command.
const SSH_WAIT: Duration = Duration::from_secs(900);

#[derive(Parser, Debug)]
#[command(
    name = "holos run",
    about = "Start a one-off VM from an image, like docker run"
)]
pub struct RunArgs {
    /// The state directory; wins over HOLOS_STATE_DIR.
    #[arg(long = "state-dir", value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// How long to wait for another holos command on the same project.
    #[arg(long = "lock-timeout", value_name = "WAIT", value_parser = parse_wait)]
    pub lock_timeout: Option<Duration>,
    /// The project name (as `-p` before `run`); the VM's name by default.
    #[arg(long = "project-name", value_name = "NAME")]
    pub project_name: Option<String>,
    /// Enable a profile, as for other commands (the run's one service has none).
    #[arg(long = "profile", value_name = "PROFILE")]
    pub profiles: Vec<String>,
    /// The VM's name (its service and hostname, and its project unless
    /// --project-name); run-SECONDS-PID by default.
    #[arg(long)]
    pub name: Option<String>,
    /// Virtual CPUs.
    #[arg(long)]
    pub vcpu: Option<u32>,
    /// Memory, as in the compose file (512M, 2G).
    #[arg(long, value_name = "SIZE")]
    pub memory: Option<String>,
    /// The guest user; the image's default user when not given.
    #[arg(long)]
    pub user: Option<String>,
    /// Publish a guest port, as in the compose file's ports (8080:80).
    #[arg(short = 'p', long = "publish", value_name = "PORT")]
    pub publish: Vec<String>,
    /// A named volume (NAME:/path) or a host directory (./dir:/path[:ro]).
    #[arg(short = 'v', long = "volume", value_name = "VOLUME")]
    pub volumes: Vec<String>,
    /// A package to install at first boot; repeat for several.
    #[arg(long = "pkg", value_name = "PACKAGE")]
    pub packages: Vec<String>,
    /// A shell command cloud-init runs at first boot; repeat for several.
    #[arg(long = "runcmd", value_name = "COMMAND")]
    pub runcmd: Vec<String>,
    /// Take the VM down when the command (or the shell) ends, named volumes included.
    #[arg(long)]
    pub rm: bool,
    /// Start the VM and return without waiting for its healthcheck or running anything.
    #[arg(short = 'd', long)]
    pub detach: bool,
    /// Boot with UEFI firmware (vm.uefi).
    #[arg(long)]
    pub uefi: bool,
    /// The guest OS family of a local image, as the compose file's image_os.
    #[arg(long = "image-os", value_name = "OS")]
    pub image_os: Option<String>,
    /// Pass a host PCI device through (DDDD:BB:DD.F); repeat for several.
    #[arg(long = "device", value_name = "PCI")]
    pub devices: Vec<String>,
    /// Provision the VM from a Dockerfile (its FROM names the image).
    #[arg(long = "dockerfile", value_name = "FILE")]
    pub dockerfile: Option<String>,
    /// The image: an alias (debian, ubuntu:24.04) or a disk image file;
    /// none with --dockerfile.
    #[arg(value_name = "IMAGE", required_unless_present = "dockerfile")]
    pub image: Option<String>,
    /// The command to run in the VM over SSH; a login shell when empty.
    #[arg(
        value_name = "CMD",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub command: Vec<String>,
}

fn parse_wait(text: &str) -> Result<Duration, String> {
    holos_compose::decode::reader::parse_duration_ms(text)
        .map(Duration::from_millis)
        .ok_or_else(|| format!("{text:?} is not a duration; write e.g. 30, 90s or 2m"))
}

/// The global options given before `run`.
#[derive(Debug, Default)]
pub struct Globals {
    pub files: Vec<PathBuf>,
    pub project_name: Option<String>,
    pub profiles: Vec<String>,
}

/// `holos run ARGS` (ARGS after `run`), with the global options given
/// before it; an option after `run` wins over the same one before.
pub fn main(args: impl IntoIterator<Item = OsString>, globals: Globals) -> ExitCode {
    let argv = std::iter::once(OsString::from("holos run")).chain(args);
    let args = match RunArgs::try_parse_from(argv) {
        Ok(args) => args,
        Err(err) => {
            let _ = err.print();
            return ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(2));
        }
    };
    if let Some(dir) = &args.state_dir {
        holos_runtime::state_dir::use_state_dir(dir);
    }
    if let Some(limit) = args.lock_timeout {
        holos_runtime::state::use_lock_timeout(limit);
    }
    if let Some(file) = globals.files.first() {
        eprintln!(
            "holos: run reads no compose file (it writes its own), but -f {} was given; \
             drop -f, or use holos up for a project",
            file.display()
        );
        return ExitCode::from(2);
    }
    let mut args = args;
    if args.project_name.is_none() {
        args.project_name = globals.project_name;
    }
    args.profiles.splice(0..0, globals.profiles);
    match run(&args) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("holos: {message}");
            ExitCode::FAILURE
        }
    }
}

/// A path argument made absolute, since the compose file lives elsewhere.
fn absolute(text: &str, cwd: &Path) -> String {
    cwd.join(text).display().to_string()
}

fn is_path(text: &str) -> bool {
    text.starts_with('.') || text.starts_with('/') || text.starts_with('~')
}

/// The compose file of the run, as JSON: project `name`, one service
/// `service_name`.
pub fn compose(
    args: &RunArgs,
    name: &str,
    service_name: &str,
    cwd: &Path,
) -> Result<Value, String> {
    let mut service = Map::new();
    if let Some(image) = &args.image {
        let image = if holos_compose::images::is_image_path(image) || is_path(image) {
            absolute(image, cwd)
        } else {
            image.clone()
        };
        service.insert("image".into(), json!(image));
    }
    if let Some(file) = &args.dockerfile {
        service.insert("dockerfile".into(), json!(absolute(file, cwd)));
    }
    if let Some(os) = &args.image_os {
        service.insert("image_os".into(), json!(os));
    }
    if !args.devices.is_empty() {
        let devices: Vec<Value> = args.devices.iter().map(|pci| json!({"pci": pci})).collect();
        service.insert("devices".into(), Value::Array(devices));
    }
    service.insert("hostname".into(), json!(service_name));
    let mut vm = Map::new();
    if args.uefi {
        vm.insert("uefi".into(), json!(true));
    }
    if let Some(vcpu) = args.vcpu {
        vm.insert("vcpu".into(), json!(vcpu));
    }
    if let Some(memory) = &args.memory {
        let bytes = holos_compose::decode::reader::parse_bytes(memory)
            .ok_or_else(|| format!("--memory {memory:?} is not a size; write e.g. 512M or 2G"))?;
        vm.insert("memory_mb".into(), json!(bytes / (1024 * 1024)));
    }
    if !vm.is_empty() {
        service.insert("vm".into(), Value::Object(vm));
    }
    if !args.publish.is_empty() {
        service.insert("ports".into(), json!(args.publish));
    }
    let mut named = Map::new();
    let mut volumes = Vec::new();
    for volume in &args.volumes {
        let Some((source, rest)) = volume.split_once(':') else {
            return Err(format!(
                "-v {volume:?} has no target; write NAME:/path or ./dir:/path"
            ));
        };
        if is_path(source) {
            volumes.push(format!("{}:{rest}", absolute(source, cwd)));
        } else {
            named.insert(source.to_string(), json!({}));
            volumes.push(volume.clone());
        }
    }
    if !volumes.is_empty() {
        service.insert("volumes".into(), json!(volumes));
    }
    let mut cloud = Map::new();
    if let Some(user) = &args.user {
        cloud.insert("user".into(), json!(user));
    }
    if !args.packages.is_empty() {
        cloud.insert("packages".into(), json!(args.packages));
    }
    if !args.runcmd.is_empty() {
        cloud.insert("runcmd".into(), json!(args.runcmd));
    }
    if !cloud.is_empty() {
        service.insert("cloud_init".into(), Value::Object(cloud));
    }
    let mut file = json!({
        "name": name,
        "services": { service_name: Value::Object(service) },
    });
    if !named.is_empty() {
        file["volumes"] = Value::Object(named);
    }
    Ok(file)
}

fn run(args: &RunArgs) -> Result<ExitCode, String> {
    let runtime = HostSettings::from_env()?;
    let name = match args.project_name.as_ref().or(args.name.as_ref()) {
        Some(name) => name.clone(),
        // The pid tells apart runs started in the same second.
        None => format!(
            "run-{}-{}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            std::process::id()
        ),
    };
    let vm = args.name.clone().unwrap_or_else(|| name.clone());
    if ProjectRecord::load(&runtime.layout, &name)?.is_some() {
        return Err(format!(
            "a project named {name} exists; pick another --name or remove it with holos down {name}"
        ));
    }
    let cwd = std::env::current_dir().map_err(|e| format!("no current directory: {e}"))?;
    let dir = runtime.layout.root.join("runs").join(&name);
    holos_runtime::state::make_private_dir(&dir)?;
    let file = dir.join("holos.yaml");
    let text = serde_json::to_string_pretty(&compose(args, &name, &vm, &cwd)?)
        .map_err(|e| format!("cannot write the compose file: {e}"))?;
    std::fs::write(&file, text).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    let options = Options {
        files: vec![file.clone()],
        project_name: Some(name.clone()),
        default_name: None,
        profiles: args.profiles.clone(),
        working_dir: dir.clone(),
        environment: crate::compose_project::process_environment(),
    };
    let result = start_and_run(&runtime, &options, args, &name, &vm);
    if args.rm {
        // A run that failed before up recorded an instance has nothing to
        // take down, and `down` would say so in a line of its own.
        let down = match ProjectRecord::load(&runtime.layout, &name) {
            Ok(Some(_)) => lifecycle::down(&runtime, &name),
            Ok(None) => Ok(()),
            Err(e) => Err(e),
        };
        remove_volumes(&runtime, &name);
        let _ = std::fs::remove_dir_all(&dir);
        down?;
        // Nothing of the run is left: `down` keeps a project's key and lock.
        if let Some(keys) = runtime.layout.ssh_key(&name).parent() {
            let _ = std::fs::remove_dir_all(keys);
        }
        let _ = std::fs::remove_file(runtime.layout.lock(&name));
    } else if result.is_ok() && args.detach {
        println!("{name}");
    }
    result
}

fn start_and_run(
    settings: &HostSettings,
    options: &Options,
    args: &RunArgs,
    name: &str,
    vm: &str,
) -> Result<ExitCode, String> {
    let (project, manifest) = holos_compose::resolve(options).map_err(|diags| {
        let lines: Vec<String> = diags.iter().map(|d| as_flag(d, args, vm)).collect();
        lines.join("\n")
    })?;
    let request = UpRequest {
        manifest: &manifest,
        files: project
            .files
            .iter()
            .map(|f| f.display().to_string())
            .collect(),
        services: Vec::new(),
        no_wait: args.detach,
        without_dependencies: false,
    };
    lifecycle::up(settings, &request)?;
    if args.detach {
        return Ok(ExitCode::SUCCESS);
    }
    let record = ProjectRecord::load(&settings.layout, name)?
        .ok_or_else(|| format!("{name} has no record after up"))?;
    let instance = lifecycle::find_instance(&record, vm)?;
    ssh::wait_for_sshd(instance.spec.ssh_port, SSH_WAIT)
        .map_err(|e| format!("{}: {e}", instance.spec.name))?;
    let key = settings.layout.ssh_key(name);
    // The command may need what cloud-init brings (--packages, --runcmd).
    if let Some(warning) = ssh::wait_for_cloud_init(&key, &instance.spec, SSH_WAIT) {
        eprintln!("holos: {warning}");
    }
    let tty = args.command.is_empty() && nix::unistd::isatty(std::io::stdin()).unwrap_or(false);
    let mut command = std::process::Command::new("ssh");
    command.args(ssh::ssh_args(
        &key,
        &instance.spec,
        &instance.spec.user,
        tty,
    ));
    if !args.command.is_empty() {
        command
            .arg("--")
            .arg(ssh::remote_command_line(&args.command));
    }
    let status = command
        .status()
        .map_err(|e| format!("cannot run ssh: {e}; holos run needs openssh-client"))?;
    Ok(ExitCode::from(
        status
            .code()
            .and_then(|c| u8::try_from(c).ok())
            .unwrap_or(255),
    ))
}

/// An error in the compose file that run wrote, said of the flag (and its
/// value) that put the field there; other errors as they are.
fn as_flag(diag: &holos_compose::Diag, args: &RunArgs, vm: &str) -> String {
    let Some(field) = diag.path.strip_prefix(&format!("services.{vm}.")) else {
        return diag.to_string();
    };
    let item = |list: &[String], rest: &str| {
        rest.strip_prefix('[')
            .and_then(|r| r.split_once(']'))
            .and_then(|(index, _)| index.parse::<usize>().ok())
            .and_then(|index| list.get(index))
            .map(|value| format!("{value:?}"))
    };
    let flag = if field == "vm.vcpu" {
        args.vcpu.map(|v| format!("--vcpu {v}"))
    } else if field == "vm.memory_mb" {
        args.memory.as_ref().map(|v| format!("--memory {v:?}"))
    } else if let Some(rest) = field.strip_prefix("ports") {
        item(&args.publish, rest).map(|v| format!("-p {v}"))
    } else if let Some(rest) = field.strip_prefix("volumes") {
        item(&args.volumes, rest).map(|v| format!("-v {v}"))
    } else if let Some(rest) = field.strip_prefix("cloud_init.packages") {
        item(&args.packages, rest).map(|v| format!("--pkg {v}"))
    } else if let Some(rest) = field.strip_prefix("cloud_init.runcmd") {
        item(&args.runcmd, rest).map(|v| format!("--runcmd {v}"))
    } else if field == "cloud_init.user" {
        args.user.as_ref().map(|v| format!("--user {v:?}"))
    } else if let Some(rest) = field.strip_prefix("devices") {
        item(&args.devices, rest).map(|v| format!("--device {v}"))
    } else if field == "image_os" {
        args.image_os.as_ref().map(|v| format!("--image-os {v:?}"))
    } else if field == "dockerfile" {
        args.dockerfile
            .as_ref()
            .map(|v| format!("--dockerfile {v:?}"))
    } else if field == "vm.uefi" {
        Some("--uefi".to_string())
    } else if field.starts_with("image") {
        args.image.as_ref().map(|v| format!("IMAGE {v:?}"))
    } else {
        None
    };
    match flag {
        Some(flag) => format!("{flag}: {}", diag.message),
        None => diag.to_string(),
    }
}

/// `--rm`: the run's named volumes go with it, as `docker run --rm`
/// removes a container's anonymous volumes.
fn remove_volumes(settings: &HostSettings, name: &str) {
    let dir = settings.layout.project_volumes(name);
    let _ = std::fs::remove_dir_all(dir);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compose_file_carries_every_flag() {
        let args = RunArgs::try_parse_from([
            "holos run",
            "--name",
            "box",
            "--vcpu",
            "2",
            "--memory",
            "1G",
            "--user",
            "ann",
            "-p",
            "8080:80",
            "-v",
            "data:/srv",
            "-v",
            "./www:/var/www:ro",
            "--pkg",
            "nginx",
            "--runcmd",
            "echo hi",
            "--rm",
            "./disk.qcow2",
            "--",
            "ls",
            "-la",
        ])
        .unwrap();
        assert_eq!(args.command, ["ls", "-la"]);
        let file = compose(&args, "box", "box", Path::new("/work")).unwrap();
        assert_eq!(
            file,
            json!({
                "name": "box",
                "services": {"box": {
                    "image": "/work/./disk.qcow2",
                    "hostname": "box",
                    "vm": {"vcpu": 2, "memory_mb": 1024},
                    "ports": ["8080:80"],
                    "volumes": ["data:/srv", "/work/./www:/var/www:ro"],
                    "cloud_init": {"user": "ann", "packages": ["nginx"], "runcmd": ["echo hi"]},
                }},
                "volumes": {"data": {}},
            })
        );
        let upstream = RunArgs::try_parse_from([
            "holos run",
            "--uefi",
            "--image-os",
            "alpine",
            "--device",
            "0000:01:00.0",
            "--dockerfile",
            "./Dockerfile",
        ])
        .unwrap();
        let file = compose(&upstream, "u", "u", Path::new("/work")).unwrap();
        assert_eq!(
            file["services"]["u"],
            json!({
                "dockerfile": "/work/./Dockerfile",
                "image_os": "alpine",
                "devices": [{"pci": "0000:01:00.0"}],
                "hostname": "u",
                "vm": {"uefi": true},
            })
        );
        assert!(
            RunArgs::try_parse_from(["holos run"]).is_err(),
            "IMAGE or --dockerfile"
        );
        let alias = RunArgs::try_parse_from(["holos run", "debian"]).unwrap();
        assert_eq!(
            compose(&alias, "r", "r", Path::new("/"))
                .unwrap()
                .pointer("/services/r/image"),
            Some(&json!("debian"))
        );
    }
}
