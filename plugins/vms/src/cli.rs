//! The `holos` command line: the clap types of every command. `holos.rs`
//! runs them.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Parser, Debug)]
#[command(
    name = "holos",
    version,
    about = "Run Docker Compose style projects as QEMU VMs"
)]
pub struct Cli {
    /// `-f` before the command.
    #[command(flatten)]
    pub file_args: FileArgs,
    /// Project name, used when the file sets no `name`.
    #[arg(short = 'p', long = "project-name", global = true)]
    pub project_name: Option<String>,
    /// Enable a profile; repeat for several.
    #[arg(long = "profile", global = true)]
    pub profiles: Vec<String>,
    /// The state directory (instances, volumes, images, keys); wins over HOLOS_STATE_DIR.
    #[arg(long = "state-dir", global = true, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// How long to wait for another holos command on the same project (120s by default).
    #[arg(long = "lock-timeout", global = true, value_name = "WAIT", value_parser = parse_wait)]
    pub lock_timeout: Option<Duration>,
    #[command(subcommand)]
    pub command: HolosCommand,
}

impl HolosCommand {
    /// The Compose verbs beyond up and down, which act on recorded
    /// instances: restart, pause, unpause, kill, rm, wait, port, cp and
    /// ssh-config.
    pub fn is_control_verb(&self) -> bool {
        matches!(
            self,
            HolosCommand::Restart(_)
                | HolosCommand::Pause(_)
                | HolosCommand::Unpause(_)
                | HolosCommand::Kill(_)
                | HolosCommand::Rm(_)
                | HolosCommand::Wait(_)
                | HolosCommand::Port(_)
                | HolosCommand::Cp(_)
                | HolosCommand::SshConfig(_)
                | HolosCommand::Stats(_)
                | HolosCommand::Top(_)
        )
    }
}

impl Cli {
    /// The compose files: those given before the command, then those after.
    pub fn files(&self) -> Vec<PathBuf> {
        let after = match &self.command {
            HolosCommand::Config { file_args, .. }
            | HolosCommand::Validate { file_args, .. }
            | HolosCommand::Up(UpArgs { file_args, .. })
            | HolosCommand::Down(DownArgs { file_args, .. })
            | HolosCommand::Stop(ServiceArgs { file_args, .. })
            | HolosCommand::Start(ServiceArgs { file_args, .. })
            | HolosCommand::Restart(ServiceArgs { file_args, .. })
            | HolosCommand::Pause(ServiceArgs { file_args, .. })
            | HolosCommand::Unpause(ServiceArgs { file_args, .. })
            | HolosCommand::Rm(ServiceArgs { file_args, .. })
            | HolosCommand::Wait(ServiceArgs { file_args, .. })
            | HolosCommand::Top(ServiceArgs { file_args, .. })
            | HolosCommand::Kill(KillArgs { file_args, .. })
            | HolosCommand::Port(PortArgs { file_args, .. })
            | HolosCommand::SshConfig(SshConfigArgs { file_args, .. })
            | HolosCommand::Cp(CpArgs { file_args, .. })
            | HolosCommand::Stats(StatsArgs { file_args, .. })
            | HolosCommand::Ps(PsArgs { file_args, .. })
            | HolosCommand::Exec(ExecArgs { file_args, .. })
            | HolosCommand::Console(ConsoleArgs { file_args, .. })
            | HolosCommand::Pull(PullArgs { file_args, .. })
            | HolosCommand::Lock(LockArgs { file_args })
            | HolosCommand::Verify(VerifyArgs { file_args, .. })
            | HolosCommand::Install(InstallArgs { file_args, .. })
            | HolosCommand::Uninstall(UninstallArgs { file_args, .. })
            | HolosCommand::Inspect(InspectArgs { file_args, .. })
            | HolosCommand::Volumes(VolumesCommand::Ls(VolumesLsArgs { file_args, .. }))
            | HolosCommand::Volumes(VolumesCommand::Rm(VolumesRmArgs { file_args, .. }))
            | HolosCommand::Volumes(
                VolumesCommand::Export(VolumeExportArgs { file_args, .. })
                | VolumesCommand::Import(VolumeImportArgs { file_args, .. })
                | VolumesCommand::Snapshot(VolumeSnapshotArgs { file_args, .. })
                | VolumesCommand::Snapshots(VolumeSnapshotsArgs { file_args, .. })
                | VolumesCommand::SnapshotRm(VolumeSnapshotNamedArgs { file_args, .. })
                | VolumesCommand::SnapshotRestore(VolumeSnapshotNamedArgs { file_args, .. })
                | VolumesCommand::Resize(VolumeResizeArgs { file_args, .. }),
            )
            | HolosCommand::Snapshots(
                SnapshotsCommand::Create(SnapshotArgs { file_args, .. })
                | SnapshotsCommand::List(SnapshotsListArgs { file_args, .. })
                | SnapshotsCommand::Restore(SnapshotRestoreArgs { file_args, .. })
                | SnapshotsCommand::Rm(SnapshotNamedArgs { file_args, .. })
                | SnapshotsCommand::Export(SnapshotExportArgs { file_args, .. }),
            ) => &file_args.files,
            HolosCommand::Logs(logs) => &logs.files,
            HolosCommand::Images(_)
            | HolosCommand::Version(_)
            | HolosCommand::Doctor(_)
            | HolosCommand::Devices(_)
            | HolosCommand::Import(_)
            | HolosCommand::Run { .. }
            | HolosCommand::Completions { .. } => &Vec::new(),
        };
        [&self.file_args.files[..], &after[..]].concat()
    }
}

/// `-f FILE`, accepted before and after the command. Not a global option,
/// because `logs -f` means follow, as in Docker Compose.
#[derive(Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct FileArgs {
    /// Compose file; repeat to merge several (later files win).
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

#[derive(Subcommand, Debug)]
pub enum HolosCommand {
    /// Print the normalised compose file (merged, interpolated, extended).
    Config {
        #[command(flatten)]
        file_args: FileArgs,
        /// Print the resolved manifest instead: instances, IPs, MACs, ports.
        #[arg(long)]
        resolved: bool,
        #[arg(long, value_enum, default_value_t = Format::Yaml)]
        format: Format,
    },
    /// Check the project; list every error and exit 1 if there are any.
    Validate {
        #[command(flatten)]
        file_args: FileArgs,
        /// Do not print the `>>` notes on fields that act differently in a VM.
        #[arg(short = 'q', long)]
        quiet: bool,
        /// Also check the project's vCPUs, memory and disk against the host's.
        #[arg(long)]
        capacity: bool,
        /// Also check that no other program listens on the published host ports.
        #[arg(long)]
        network: bool,
        /// Print the verdict, errors and notes as JSON on standard output.
        #[arg(long)]
        json: bool,
    },
    /// List the built-in image aliases and tags, and which are cached.
    Images(ImagesArgs),
    /// Download image aliases into the cache; the project's when none is named.
    Pull(PullArgs),
    /// Pin the project's base images by SHA-256 in holos.images.lock.
    Lock(LockArgs),
    /// Hash cached images again; compare with their records and holos.images.lock.
    Verify(VerifyArgs),
    /// Create and start the project's VMs.
    Up(UpArgs),
    /// Stop and remove the project's VMs; named volumes survive.
    Down(DownArgs),
    /// Power the VMs of a service, or of the project, down.
    Stop(ServiceArgs),
    /// Start stopped VMs again.
    Start(ServiceArgs),
    /// Stop, then start the VMs again (Compose's restart, Vagrant's reload).
    Restart(ServiceArgs),
    /// Halt the guests' CPUs (QMP stop), as Compose's pause and Vagrant's suspend.
    Pause(ServiceArgs),
    /// Resume paused guests (QMP cont), as Compose's unpause and Vagrant's resume.
    Unpause(ServiceArgs),
    /// Send a signal to the VMs' QEMU processes (SIGKILL by default), as Compose's kill.
    Kill(KillArgs),
    /// Remove stopped VMs (their disks; named volumes stay), as Compose's rm and Vagrant's destroy.
    Rm(ServiceArgs),
    /// Wait until the VMs have stopped, as Compose's wait.
    Wait(ServiceArgs),
    /// Print the host address a guest port is published on, as Compose's port.
    Port(PortArgs),
    /// Print ~/.ssh/config entries for the VMs, as Vagrant's ssh-config.
    SshConfig(SshConfigArgs),
    /// Show each running VM's status (QMP), CPU and memory use, as Compose's stats.
    Stats(StatsArgs),
    /// List the processes in each running guest (ps over SSH), as Compose's top.
    Top(ServiceArgs),
    /// List the instances: state, pid, ports, SSH port, IP.
    #[command(alias = "status")]
    Ps(PsArgs),
    /// Copy a file or directory between the host and a guest, over SSH (Compose's cp).
    Cp(CpArgs),
    /// Print the serial console log.
    Logs(LogsArgs),
    /// Run a command in an instance over SSH.
    Exec(ExecArgs),
    /// Attach to an instance's serial console; Ctrl-] detaches.
    Console(ConsoleArgs),
    /// Show one instance (pid, ports, IP, MACs, health, spec hash, paths), or a project.
    Inspect(InspectArgs),
    /// The project's named volumes: list, remove, export, import, snapshot, resize.
    #[command(subcommand)]
    Volumes(VolumesCommand),
    /// Snapshots of an instance's root disk: create, list, restore, rm, export.
    #[command(subcommand)]
    Snapshots(SnapshotsCommand),
    /// Check what this host needs to run holos; exit 1 if up cannot work.
    Doctor(DoctorArgs),
    /// List the host's PCI devices and whether each can be passed to a VM.
    Devices(DevicesArgs),
    /// Write a systemd unit that brings the project up at boot and stops it at shutdown.
    Install(InstallArgs),
    /// Disable and remove the project's systemd unit; the VMs keep running.
    Uninstall(UninstallArgs),
    /// Turn libvirt domains into a holos.yaml (from virsh dumpxml files or virsh).
    Import(ImportArgs),
    /// Start a one-off VM from an image, like docker run (see holos run --help).
    Run {
        /// [OPTIONS] IMAGE [-- CMD...]; `holos run --help` lists the options.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
    /// Print the version of holos.
    Version(VersionArgs),
    /// Print the shell completion script (the packages install it).
    #[command(hide = true)]
    Completions { shell: clap_complete::Shell },
}

/// `holos up [--no-wait] [SERVICE...]`.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct UpArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// Return once QEMU runs, without waiting for healthchecks.
    #[arg(long)]
    pub no_wait: bool,
    /// Do not print the `>>` notes on fields that act differently in a VM.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Services to start (with their dependencies); all when none is given.
    #[arg(value_name = "SERVICE")]
    pub services: Vec<String>,
}

/// `holos images [--json]`.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct ImagesArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `holos pull [IMAGE...]`.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct PullArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// Image aliases, `ALIAS` or `ALIAS:TAG`.
    #[arg(value_name = "IMAGE")]
    pub images: Vec<String>,
}

/// `holos lock`.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct LockArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
}

/// `holos verify [IMAGE...|--all] [--json]`.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// Every image in the cache, whatever project uses it.
    #[arg(long, conflicts_with = "images")]
    pub all: bool,
    /// Print JSON instead of a report.
    #[arg(long)]
    pub json: bool,
    /// Image aliases, `ALIAS` or `ALIAS:TAG`; the project's images when none
    /// is named (then also against holos.images.lock).
    #[arg(value_name = "IMAGE")]
    pub images: Vec<String>,
}

/// `holos down [PROJECT]`.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct DownArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// The project to take down; the compose file's project when not given.
    #[arg(value_name = "PROJECT")]
    pub project: Option<String>,
    /// Also remove the project's named volumes, as Compose's down -v.
    #[arg(short = 'v', long)]
    pub volumes: bool,
}

/// `holos kill [-s SIGNAL] [SERVICE]`.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct KillArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// The signal, by name (SIGTERM, TERM) or number.
    #[arg(short = 's', long, value_name = "SIGNAL", default_value = "SIGKILL", value_parser = parse_signal)]
    pub signal: nix::sys::signal::Signal,
    /// One service; every service of the project when not given.
    #[arg(value_name = "SERVICE")]
    pub service: Option<String>,
}

/// `holos port SERVICE|INSTANCE PORT [--protocol tcp|udp]`.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct PortArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// The instance, such as web-0 (a service name means its first instance).
    #[arg(value_name = "SERVICE|INSTANCE")]
    pub instance: String,
    /// The guest port.
    #[arg(value_name = "PORT")]
    pub port: u16,
    /// tcp or udp.
    #[arg(long, default_value = "tcp", value_parser = ["tcp", "udp"])]
    pub protocol: String,
}

/// `holos cp INSTANCE:PATH HOSTPATH` or `holos cp HOSTPATH INSTANCE:PATH`.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct CpArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// Where to copy from: a host path, or INSTANCE:PATH in a guest.
    #[arg(value_name = "SOURCE")]
    pub source: String,
    /// Where to copy to: a host path, or INSTANCE:PATH in a guest.
    #[arg(value_name = "TARGET")]
    pub target: String,
}

/// `holos stats [SERVICE] [--json]`.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct StatsArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// One service; every service of the project when not given.
    #[arg(value_name = "SERVICE")]
    pub service: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `holos ssh-config [INSTANCE]`.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct SshConfigArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// One instance (a service name means its first); all when not given.
    #[arg(value_name = "INSTANCE")]
    pub instance: Option<String>,
}

/// `holos stop [SERVICE]` and `holos start [SERVICE]`.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct ServiceArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// One service; every service of the project when not given.
    #[arg(value_name = "SERVICE")]
    pub service: Option<String>,
}

/// `holos ps [--json]`.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct PsArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `holos logs [SERVICE|INSTANCE] [-f] [-t] [--since T] [--until T]`.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct LogsArgs {
    /// Compose file (only the long form here: `-f` is follow).
    #[arg(long = "file", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// A service (all its instances) or one instance; all when not given.
    #[arg(value_name = "SERVICE|INSTANCE")]
    pub target: Option<String>,
    /// Keep printing what the console writes.
    #[arg(short = 'f', long)]
    pub follow: bool,
    /// Start with the last N lines of each log (all by default).
    #[arg(short = 'n', long = "tail", value_name = "N")]
    pub tail: Option<usize>,
    /// Only lines that arrived at or after TIME: RFC 3339 (2026-11-28T10:00:00Z),
    /// Unix seconds, or a duration before now (42m, 1h30m).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Only lines that arrived at or before TIME (the forms of --since).
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// Start each line with the RFC 3339 time it arrived at.
    #[arg(short = 't', long)]
    pub timestamps: bool,
    /// Leave out the INSTANCE | prefix of each line.
    #[arg(long)]
    pub no_log_prefix: bool,
    /// Print each line as a JSON object: {"instance": ..., "time": ..., "line": ...}.
    #[arg(long)]
    pub json: bool,
}

/// `holos exec INSTANCE [-u USER] [-w WAIT] [-- CMD...]`.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct ExecArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// The instance, such as web-0.
    #[arg(value_name = "INSTANCE")]
    pub instance: String,
    /// The guest user to log in as; the service's cloud-init user by default.
    #[arg(short = 'u', long)]
    pub user: Option<String>,
    /// How long to wait for the guest's sshd (30, 90s, 2m).
    #[arg(short = 'w', long, value_name = "WAIT", value_parser = parse_wait)]
    pub wait: Option<Duration>,
    /// Set an environment variable for the command; repeat for several.
    #[arg(short = 'e', long = "env", value_name = "KEY=VAL")]
    pub env: Vec<String>,
    /// The directory in the guest to run the command in.
    #[arg(long = "workdir", value_name = "DIR")]
    pub workdir: Option<String>,
    /// The command and its arguments, passed on exactly; a login shell when empty.
    #[arg(
        value_name = "CMD",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub command: Vec<OsString>,
}

/// `holos console INSTANCE`.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct ConsoleArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// The instance, such as web-0.
    #[arg(value_name = "INSTANCE")]
    pub instance: String,
}

/// `holos inspect INSTANCE|PROJECT [--json]`.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct InspectArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// The instance, such as web-0 (a service name means its first
    /// instance), or a project of the state directory.
    #[arg(value_name = "INSTANCE|PROJECT")]
    pub instance: String,
    /// Print JSON (the objects of `ps --json`).
    #[arg(long)]
    pub json: bool,
}

/// `holos volumes ls|rm`.
#[derive(Subcommand, Debug, Clone, PartialEq, Eq)]
pub enum VolumesCommand {
    /// List the volumes: size on disk, the instances that attach them.
    Ls(VolumesLsArgs),
    /// Remove a volume that no instance attaches.
    Rm(VolumesRmArgs),
    /// Write a volume, or one of its snapshots, as a standalone qcow2.
    Export(VolumeExportArgs),
    /// Make a volume a qcow2 copy of a disk image file.
    Import(VolumeImportArgs),
    /// Snapshot a volume, online through QMP when a running instance attaches it.
    Snapshot(VolumeSnapshotArgs),
    /// List a volume's snapshots.
    Snapshots(VolumeSnapshotsArgs),
    /// Remove a snapshot of a volume.
    SnapshotRm(VolumeSnapshotNamedArgs),
    /// Revert a volume to a snapshot (no running instance may attach it).
    SnapshotRestore(VolumeSnapshotNamedArgs),
    /// Grow a volume: online (QMP, then resize2fs over SSH) while an instance runs with it, else at its next boot.
    Resize(VolumeResizeArgs),
}

#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct VolumeExportArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// The volume, as named in the compose file.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// Export this snapshot of the volume instead of its current contents.
    #[arg(long, value_name = "SNAPSHOT")]
    pub snapshot: Option<String>,
    /// The qcow2 to write (it must not exist); NAME.qcow2 when not given.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct VolumeImportArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// The volume, as named in the compose file.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// The disk image to copy (qcow2, raw, or any format qemu-img reads).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Replace the contents of an existing volume.
    #[arg(long)]
    pub force: bool,
}

#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct VolumeSnapshotArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// The volume, as named in the compose file.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// The snapshot's name; NAME-SECONDS when not given.
    #[arg(value_name = "SNAPSHOT")]
    pub snapshot: Option<String>,
}

#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct VolumeSnapshotsArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// The volume, as named in the compose file.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct VolumeSnapshotNamedArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// The volume, as named in the compose file.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// The snapshot's name.
    #[arg(value_name = "SNAPSHOT")]
    pub snapshot: String,
}

#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct VolumeResizeArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// The volume, as named in the compose file.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// The new size, as in the compose file (10G, 512M, bytes); never smaller.
    #[arg(value_name = "SIZE", value_parser = parse_size)]
    pub size: u64,
}

#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct VolumesLsArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct VolumesRmArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// The volume, as named in the compose file.
    #[arg(value_name = "NAME")]
    pub name: String,
}

/// `holos snapshots create|list|restore|rm|export INSTANCE [NAME]`.
#[derive(Subcommand, Debug, Clone, PartialEq, Eq)]
pub enum SnapshotsCommand {
    /// Snapshot the root disk, online through QMP when the instance runs.
    Create(SnapshotArgs),
    /// List the root disk's snapshots.
    #[command(alias = "ls")]
    List(SnapshotsListArgs),
    /// Stop the instance if it runs, revert its root disk, start it again.
    Restore(SnapshotRestoreArgs),
    /// Remove a snapshot.
    Rm(SnapshotNamedArgs),
    /// Write the disk as it was at a snapshot as a standalone qcow2.
    Export(SnapshotExportArgs),
}

#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct SnapshotArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// The instance, such as web-0 (a service name means its first instance).
    #[arg(value_name = "INSTANCE")]
    pub instance: String,
    /// The snapshot's name; INSTANCE-SECONDS when not given.
    #[arg(value_name = "NAME")]
    pub name: Option<String>,
}

#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct SnapshotsListArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// The instance, such as web-0 (a service name means its first instance).
    #[arg(value_name = "INSTANCE")]
    pub instance: String,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct SnapshotNamedArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// The instance, such as web-0 (a service name means its first instance).
    #[arg(value_name = "INSTANCE")]
    pub instance: String,
    /// The snapshot's name.
    #[arg(value_name = "NAME")]
    pub name: String,
}

#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct SnapshotRestoreArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// The instance, such as web-0 (a service name means its first instance).
    #[arg(value_name = "INSTANCE")]
    pub instance: String,
    /// The snapshot's name.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// Restore even though a volume of the instance changed since the snapshot.
    #[arg(long)]
    pub force: bool,
}

#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct SnapshotExportArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// The instance, such as web-0 (a service name means its first instance).
    #[arg(value_name = "INSTANCE")]
    pub instance: String,
    /// The snapshot's name.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// The qcow2 to write (it must not exist); INSTANCE-NAME.qcow2 when not given.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `holos install [--system|--user] [--enable] [--dry-run]`.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct InstallArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// A system unit (/etc/systemd/system); the default for root.
    #[arg(long, conflicts_with = "user")]
    pub system: bool,
    /// A user unit (~/.config/systemd/user); the default for other users.
    #[arg(long)]
    pub user: bool,
    /// Also enable the unit (systemctl enable), so that it starts at boot.
    #[arg(long)]
    pub enable: bool,
    /// Print the unit and what would be run; write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// `holos uninstall [--system|--user] [--dry-run]`.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct UninstallArgs {
    #[command(flatten)]
    pub file_args: FileArgs,
    /// The system unit; the default for root.
    #[arg(long, conflicts_with = "user")]
    pub system: bool,
    /// The user unit; the default for other users.
    #[arg(long)]
    pub user: bool,
    /// Say what would be run and removed; change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// `holos import --xml FILE... | --connect URI [DOMAIN...] [-o FILE]`.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct ImportArgs {
    /// A domain's XML, as `virsh dumpxml` prints it; repeat for several.
    #[arg(
        long = "xml",
        value_name = "FILE",
        required_unless_present_any = ["connect", "domains", "all"],
        conflicts_with_all = ["connect", "domains", "all"]
    )]
    pub xml: Vec<PathBuf>,
    /// Read the domains from libvirt with `virsh -c URI dumpxml`; virsh's
    /// default connection when not given.
    #[arg(long, value_name = "URI")]
    pub connect: Option<String>,
    /// The domains to import from libvirt (all of them with --all, or with
    /// --connect when none is named).
    #[arg(value_name = "DOMAIN")]
    pub domains: Vec<String>,
    /// Import every domain of the libvirt connection (virsh list --all).
    #[arg(long, conflicts_with = "domains")]
    pub all: bool,
    /// Write the compose file here instead of printing it.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `holos version [--short]`.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct VersionArgs {
    /// Print only the version number.
    #[arg(long)]
    pub short: bool,
}

/// `holos doctor [--json]`.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct DoctorArgs {
    /// Print JSON instead of a report.
    #[arg(long)]
    pub json: bool,
}

/// `holos devices [--gpu] [--json]`.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct DevicesArgs {
    /// Only display controllers and the functions of their IOMMU groups,
    /// with what to do for each that cannot be passed through yet.
    #[arg(long)]
    pub gpu: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Where the command `run` stands in `args` (without the program name):
/// the first word that is neither an option nor the value of one.
pub fn run_position(args: &[OsString]) -> Option<usize> {
    let command = <Cli as clap::CommandFactory>::command();
    let takes_value: Vec<&clap::Arg> = command
        .get_arguments()
        .filter(|arg| arg.get_action().takes_values())
        .collect();
    let long_takes_value = |name: &str| takes_value.iter().any(|arg| arg.get_long() == Some(name));
    let short_takes_value = |c: char| takes_value.iter().any(|arg| arg.get_short() == Some(c));
    let mut at = 0;
    while let Some(word) = args.get(at) {
        let word = word.to_string_lossy();
        let skip_value = if word == "--" {
            return None;
        } else if let Some(long) = word.strip_prefix("--") {
            !long.contains('=') && long_takes_value(long)
        } else if let Some(shorts) = word.strip_prefix('-').filter(|s| !s.is_empty()) {
            // `-fFILE` carries its value; `-f FILE` takes the next word.
            shorts.chars().next().is_some_and(short_takes_value) && shorts.chars().count() == 1
        } else {
            return (word == "run").then_some(at);
        };
        at += if skip_value { 2 } else { 1 };
    }
    None
}

/// `-w WAIT`: a Compose duration (a bare number is seconds).
fn parse_wait(text: &str) -> Result<Duration, String> {
    holos_compose::decode::reader::parse_duration_ms(text)
        .map(Duration::from_millis)
        .ok_or_else(|| format!("{text:?} is not a duration; write e.g. 30, 90s or 2m"))
}

/// `SIGNAL`: a name with or without `SIG`, or a number.
fn parse_signal(text: &str) -> Result<nix::sys::signal::Signal, String> {
    use std::str::FromStr;
    let upper = text.to_ascii_uppercase();
    let named = if upper.starts_with("SIG") {
        upper
    } else {
        format!("SIG{upper}")
    };
    text.parse::<i32>()
        .ok()
        .and_then(|n| nix::sys::signal::Signal::try_from(n).ok())
        .or_else(|| nix::sys::signal::Signal::from_str(&named).ok())
        .ok_or_else(|| format!("{text:?} is not a signal; write e.g. SIGTERM, TERM or 15"))
}

/// `SIZE`: a Compose byte size (`10G`, `512M`, a bare number is bytes).
fn parse_size(text: &str) -> Result<u64, String> {
    holos_compose::decode::reader::parse_bytes(text)
        .ok_or_else(|| format!("{text:?} is not a size; write e.g. 10G, 512M or 1073741824"))
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum Format {
    Yaml,
    Json,
}

/// True when the program was started under the name `holos` (a symlink or a
/// copy of the one binary counts).
pub fn invoked_as_holos(program: &std::ffi::OsStr) -> bool {
    std::path::Path::new(program).file_name() == Some(std::ffi::OsStr::new("holos"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("holos").chain(args.iter().copied()))
    }

    #[test]
    fn exec_keeps_the_command_exactly_with_or_without_the_separator() {
        let cli = parse(&[
            "exec",
            "web-0",
            "-u",
            "bob",
            "-w",
            "2m",
            "--",
            "sh",
            "-c",
            "echo a > /x",
        ])
        .expect("parses");
        let HolosCommand::Exec(exec) = cli.command else {
            panic!("not exec: {:?}", cli.command);
        };
        assert_eq!(exec.instance, "web-0");
        assert_eq!(exec.user.as_deref(), Some("bob"));
        assert_eq!(exec.wait, Some(Duration::from_secs(120)));
        assert_eq!(exec.command, ["sh", "-c", "echo a > /x"]);
        let cli = parse(&["exec", "web-0", "ls", "-la", "--", "x"]).expect("parses");
        let HolosCommand::Exec(exec) = cli.command else {
            panic!("not exec");
        };
        assert_eq!(exec.command, ["ls", "-la", "--", "x"]);
    }

    #[test]
    fn run_is_found_after_the_global_options_and_their_values() {
        let at = |args: &[&str]| run_position(&args.iter().map(OsString::from).collect::<Vec<_>>());
        assert_eq!(at(&["run", "-p", "80:80", "debian"]), Some(0));
        assert_eq!(
            at(&[
                "-p",
                "run",
                "--state-dir=s",
                "--profile",
                "x",
                "run",
                "debian"
            ]),
            Some(5)
        );
        assert_eq!(at(&["-frun", "--lock-timeout", "5", "run"]), Some(3));
        assert_eq!(at(&["ps", "run"]), None);
        assert_eq!(at(&["-f", "a.yaml", "exec", "web-0", "--", "run"]), None);
        assert_eq!(at(&["--", "run"]), None);
    }

    #[test]
    fn runtime_commands_take_the_documented_options() {
        let cli = parse(&["-f", "a.yaml", "up", "--no-wait", "web", "db"]).expect("up");
        assert_eq!(cli.files(), [PathBuf::from("a.yaml")]);
        assert!(
            matches!(&cli.command, HolosCommand::Up(up) if up.no_wait && up.services == ["web", "db"])
        );
        assert!(matches!(
            parse(&["ps", "--json"]).map(|c| c.command),
            Ok(HolosCommand::Ps(PsArgs { json: true, .. }))
        ));
        assert!(matches!(
            parse(&["logs", "web", "-f"]).map(|c| c.command),
            Ok(HolosCommand::Logs(LogsArgs { follow: true, target: Some(t), .. })) if t == "web"
        ));
        let logs = parse(&["logs", "--file", "b.yaml", "-f"]).expect("logs");
        assert_eq!(logs.files(), [PathBuf::from("b.yaml")]);
        assert!(parse(&["exec", "web-0", "-w", "soon"]).is_err());
        assert!(parse(&["console"]).is_err());
        assert!(parse(&["stop", "a", "b"]).is_err());
    }
}
