//! The cloud-init NoCloud documents of one instance: `meta-data`,
//! `user-data` (`#cloud-config`) and `network-config` (netplan v2).
//!
//! `runcmd` (first boot only) first mounts the volumes and shares, so that
//! every command sees them as a container's command sees its volumes, then
//! runs the Dockerfile steps and the service's own runcmd, then enables and
//! starts the service's command (entrypoint and command), then post_start.
//! The command runs again at every boot: a systemd unit (or OpenRC
//! `local.d` script) runs a script that mounts first, then execs it. A read-write volume gets `mkfs.ext4` only when `blkid`
//! finds no filesystem on it; a read-only one is never formatted and mounts
//! `ro,nofail`. A mount that fails prints `holos: failed to mount volume …`
//! to the console and exits non-zero.
//!
//! `bootcmd` first repairs the SSH host keys (see [`SSH_HOST_KEY_REPAIR`]),
//! then runs the service's own `bootcmd`.

use serde_json::{Map, Value, json};

use holo_plugin::command::shell_quote;

use crate::spec::{BindShare, InstanceSpec, VolumeAttachment};
use crate::yaml_out::to_yaml;
use holos_compose::manifest::{
    GuestCommand, GuestFile, GuestFileKind, HostEntry, Service, WriteFile,
};

/// What goes on the seed disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeedDocuments {
    pub meta_data: String,
    pub user_data: String,
    pub network_config: String,
}

/// Everything outside the instance spec that the documents need.
pub struct SeedInputs<'a> {
    pub spec: &'a InstanceSpec,
    pub service: &'a Service,
    pub hostname: &'a str,
    /// The instance's `/etc/hosts` entries (`Manifest::hosts_for`).
    pub hosts: &'a [HostEntry],
    /// The project's public key, one `ssh-ed25519 …` line.
    pub public_key: &'a str,
}

pub fn render(inputs: &SeedInputs) -> SeedDocuments {
    SeedDocuments {
        meta_data: meta_data(inputs),
        user_data: user_data(inputs),
        network_config: network_config(inputs.spec),
    }
}

fn meta_data(inputs: &SeedInputs) -> String {
    to_yaml(&json!({
        "instance-id": format!("holos-{}-{}", inputs.spec.project, inputs.spec.name),
        "local-hostname": inputs.hostname,
    }))
}

fn user_data(inputs: &SeedInputs) -> String {
    let spec = inputs.spec;
    let cloud = &inputs.service.cloud_init;
    let mut doc = Map::new();
    doc.insert("hostname".into(), json!(inputs.hostname));
    if let Some(fqdn) = &cloud.fqdn {
        doc.insert("fqdn".into(), json!(fqdn));
    }
    doc.insert("preserve_hostname".into(), json!(false));
    // holos writes /etc/hosts itself, with every instance of the project.
    doc.insert("manage_etc_hosts".into(), json!(false));
    doc.insert("ssh_pwauth".into(), json!(false));
    // A larger root disk: grow the root partition and file system into it
    // (cloud-init's defaults on most images, said out loud here).
    if spec.disk_size_bytes.is_some() {
        doc.insert(
            "growpart".into(),
            json!({"mode": "auto", "devices": ["/"], "ignore_growroot_disabled": false}),
        );
        doc.insert("resize_rootfs".into(), json!(true));
    }
    if !cloud.packages.is_empty() {
        doc.insert("package_update".into(), json!(true));
        doc.insert("packages".into(), json!(cloud.packages));
    }
    // The project's key first: holos reaches the guest with it.
    let mut keys = vec![inputs.public_key.trim()];
    for key in &cloud.ssh_authorized_keys {
        if !keys.contains(&key.as_str()) {
            keys.push(key);
        }
    }
    let mut user = json!({
        "name": spec.user,
        "lock_passwd": true,
        "sudo": "ALL=(ALL) NOPASSWD:ALL",
        "ssh_authorized_keys": keys,
    });
    if spec.user == "root" {
        doc.insert("disable_root".into(), json!(false));
        if let Some(map) = user.as_object_mut() {
            map.remove("sudo");
        }
    }
    doc.insert("users".into(), json!([user]));

    let mut files = vec![
        json!({"path": "/etc/hosts", "permissions": "0644", "content": hosts_file(inputs)}),
        json!({"path": "/etc/environment", "permissions": "0644",
               "content": environment_file(&inputs.service.environment)}),
    ];
    files.extend(cloud.write_files.iter().map(write_file));
    if let Some(text) = &cloud.command {
        files.extend(service_command_files(inputs, text));
    }
    doc.insert("write_files".into(), Value::Array(files));
    // The host-key repair first: it runs at every boot, before sshd.
    let mut bootcmd = vec![sh(SSH_HOST_KEY_REPAIR)];
    // After `holos volumes resize`, the next boot grows the file system.
    bootcmd.extend(
        spec.volumes
            .iter()
            .filter(|v| !v.read_only)
            .map(|v| sh(&volume_grow_script(v))),
    );
    // Configs and secrets at every boot: a target below /run is gone after
    // a reboot. Before the service's bootcmd, which may read them.
    bootcmd.extend(
        inputs
            .service
            .files
            .iter()
            .map(|f| sh(&guest_file_script(f))),
    );
    bootcmd.extend(cloud.bootcmd.iter().map(command));
    doc.insert("bootcmd".into(), Value::Array(bootcmd));
    // Mounts first: a command that writes below a volume's target must
    // write into the volume, not into the root disk the mount then hides.
    let mut runcmd: Vec<Value> = spec
        .volumes
        .iter()
        .map(|v| sh(&volume_mount_script(v)))
        .collect();
    runcmd.extend(spec.binds.iter().map(|b| sh(&share_mount_script(b))));
    runcmd.extend(cloud.runcmd.iter().map(command));
    if cloud.command.is_some() {
        runcmd.push(sh(SERVICE_COMMAND_ENABLE));
    }
    runcmd.extend(cloud.post_start.iter().map(command));
    if !runcmd.is_empty() {
        doc.insert("runcmd".into(), Value::Array(runcmd));
    }
    format!("#cloud-config\n{}", to_yaml(&Value::Object(doc)))
}

/// The script that runs the service's command: it mounts the volumes and
/// shares first (each step does nothing when already mounted), then execs
/// the command, so at every boot the command sees its volumes.
pub const SERVICE_COMMAND_SCRIPT: &str = "/usr/local/lib/holos/service-command";
/// The systemd unit that runs [`SERVICE_COMMAND_SCRIPT`] at every boot.
pub const SERVICE_COMMAND_UNIT: &str = "/etc/systemd/system/holos-service-command.service";
/// First boot, after the first-boot commands: the command is enabled for
/// every boot and started now, through systemd when it runs, else through
/// OpenRC's `local.d` (its `local` service runs `*.start` at every boot),
/// else (neither) in the foreground, as a plain first-boot command.
const SERVICE_COMMAND_ENABLE: &str = r#"if [ -d /run/systemd/system ]; then
  systemctl daemon-reload && systemctl enable holos-service-command.service && systemctl start --no-block holos-service-command.service
elif [ -d /etc/local.d ] || command -v rc-update >/dev/null 2>&1; then
  mkdir -p /etc/local.d
  printf '#!/bin/sh\n%s >>/var/log/holos-service-command.log 2>&1 &\n' /usr/local/lib/holos/service-command > /etc/local.d/holos-service-command.start
  chmod 0755 /etc/local.d/holos-service-command.start
  rc-update add local default >/dev/null 2>&1
  /etc/local.d/holos-service-command.start
else
  exec /usr/local/lib/holos/service-command
fi"#;

/// The script and the systemd unit of the service's command.
fn service_command_files(inputs: &SeedInputs, text: &str) -> Vec<Value> {
    let spec = inputs.spec;
    let mut script = String::from(
        "#!/bin/sh\n# holos: the service's command, at every boot after the mounts.\n",
    );
    for volume in &spec.volumes {
        script.push_str(&format!("(\n{}) || exit 1\n", volume_mount_script(volume)));
    }
    for share in &spec.binds {
        script.push_str(&format!("(\n{}) || exit 1\n", share_mount_script(share)));
    }
    // systemd reads /etc/environment itself (EnvironmentFile).
    script.push_str(
        "if [ -z \"$INVOCATION_ID\" ] && [ -r /etc/environment ]; then set -a; . /etc/environment; set +a; fi\n",
    );
    script.push_str(&format!("exec sh -c {}\n", shell_quote(text)));
    let unit = format!(
        "[Unit]\nDescription=holos: the command of service {service}\nAfter=local-fs.target remote-fs.target network-online.target cloud-init.service\nWants=network-online.target\n\n[Service]\nType=simple\n# A command that daemonizes keeps running, as it did at first boot.\nRemainAfterExit=yes\nEnvironmentFile=-/etc/environment\nExecStart={SERVICE_COMMAND_SCRIPT}\nStandardOutput=journal+console\nStandardError=journal+console\n\n[Install]\nWantedBy=multi-user.target\n",
        service = inputs.service.name
    );
    vec![
        json!({"path": SERVICE_COMMAND_SCRIPT, "permissions": "0755", "content": script}),
        json!({"path": SERVICE_COMMAND_UNIT, "permissions": "0644", "content": unit}),
    ]
}

/// Writes one config or secret: through a temporary file that only root
/// can read until it has its owner and mode, then renamed into place.
fn guest_file_script(file: &GuestFile) -> String {
    use base64::Engine;
    let target = shell_quote(&file.target);
    let parent = match file.target.rsplit_once('/') {
        Some(("", _)) | None => "/".to_string(),
        Some((dir, _)) => dir.to_string(),
    };
    let kind = match file.kind {
        GuestFileKind::Config => "config",
        GuestFileKind::Secret => "secret",
    };
    let message = shell_quote(&format!(
        "holos: cannot write {kind} {} at {}",
        file.source, file.target
    ));
    format!(
        "fail() {{ echo {message} >&2; echo {message} >/dev/console 2>/dev/null; exit 1; }}
         umask 022; mkdir -p {} || fail
         umask 077; tmp={target}.holos-new
         printf %s {} | base64 -d > \"$tmp\" || fail
         chown {}:{} \"$tmp\" && chmod {} \"$tmp\" && mv -f \"$tmp\" {target} || fail
",
        shell_quote(&parent),
        base64::engine::general_purpose::STANDARD.encode(&file.content.bytes),
        file.uid,
        file.gid,
        file.mode,
    )
}

/// Every boot: a host key that is empty or unreadable (a crash right after
/// cloud-init generated it leaves zero-size files) is made again, of its
/// type; keys that read fine are left alone. Without any key at all after
/// cloud-init's ssh module ran for this instance (its semaphore is there),
/// `ssh-keygen -A` makes them; at first boot that module makes them itself.
/// cloud-init runs `bootcmd` before sshd starts; should sshd have failed
/// already, it is started again.
pub const SSH_HOST_KEY_REPAIR: &str = r#"command -v ssh-keygen >/dev/null 2>&1 || exit 0
[ -d /etc/ssh ] || exit 0
repaired=
for key in /etc/ssh/ssh_host_*_key; do
  [ -e "$key" ] || continue
  if ! ssh-keygen -y -P '' -f "$key" </dev/null >/dev/null 2>&1 || [ ! -s "$key.pub" ]; then
    type=${key#/etc/ssh/ssh_host_}; type=${type%_key}
    echo "holos: regenerating the broken SSH host key $key" >&2
    rm -f "$key" "$key.pub"
    ssh-keygen -q -t "$type" -N '' -f "$key" </dev/null && repaired=1
  fi
done
if ! ls /etc/ssh/ssh_host_*_key >/dev/null 2>&1 && [ -e /var/lib/cloud/instance/sem/config_ssh ]; then
  echo "holos: no SSH host key, making them" >&2
  ssh-keygen -A && repaired=1
fi
[ -n "$repaired" ] && command -v systemctl >/dev/null 2>&1 || exit 0
for unit in ssh.service sshd.service; do
  if systemctl is-failed --quiet "$unit" 2>/dev/null; then
    systemctl reset-failed "$unit"; systemctl --no-block restart "$unit"
  fi
done
exit 0"#;

fn network_config(spec: &InstanceSpec) -> String {
    let mut user = json!({
        "match": {"macaddress": spec.mac_user},
        "dhcp4": true,
    });
    if !spec.dns_search.is_empty() {
        user["nameservers"] = json!({"search": spec.dns_search});
    }
    let mut ethernets = Map::new();
    ethernets.insert("user0".into(), user);
    if spec.networks.is_empty() {
        ethernets.insert(
            "internal0".into(),
            json!({
                "match": {"macaddress": spec.mac_internal},
                "dhcp4": false,
                "addresses": [format!("{}/24", spec.ip)],
            }),
        );
    }
    for (index, nic) in spec.networks.iter().enumerate() {
        let entry = match nic.ip {
            Some(ip) => json!({
                "match": {"macaddress": nic.mac},
                "dhcp4": false,
                "addresses": [format!("{ip}/{}", nic.prefix)],
            }),
            // The bridge's DHCP; its routes must not take the default one.
            None => json!({
                "match": {"macaddress": nic.mac},
                "dhcp4": true,
                "dhcp4-overrides": {"use-routes": false, "use-dns": false},
            }),
        };
        ethernets.insert(format!("internal{index}"), entry);
    }
    to_yaml(&json!({
        "version": 2,
        "ethernets": Value::Object(ethernets),
    }))
}

fn hosts_file(inputs: &SeedInputs) -> String {
    let mut text = String::from("127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n");
    text.push_str(&format!("127.0.1.1 {}\n", inputs.hostname));
    for entry in inputs.hosts.iter().chain(&inputs.service.extra_hosts) {
        text.push_str(&format!("{} {}\n", entry.ip, entry.names.join(" ")));
    }
    text
}

/// `KEY="value"` lines as pam_env reads them.
fn environment_file(environment: &std::collections::BTreeMap<String, String>) -> String {
    environment
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"\n", v.replace('"', "\\\"")))
        .collect()
}

fn write_file(file: &WriteFile) -> Value {
    let mut entry = Map::new();
    entry.insert("path".into(), json!(file.path));
    entry.insert("content".into(), json!(file.content));
    for (key, value) in [
        ("encoding", &file.encoding),
        ("owner", &file.owner),
        ("permissions", &file.permissions),
    ] {
        if let Some(value) = value {
            entry.insert(key.into(), json!(value));
        }
    }
    if file.append {
        entry.insert("append".into(), json!(true));
    }
    if file.defer {
        entry.insert("defer".into(), json!(true));
    }
    Value::Object(entry)
}

fn command(command: &GuestCommand) -> Value {
    match command {
        GuestCommand::Shell(text) => json!(text),
        GuestCommand::Exec(argv) => json!(argv),
    }
}

/// An argv entry, so cloud-init quotes it and the script needs no escaping.
fn sh(script: &str) -> Value {
    json!(["sh", "-c", script])
}

/// fstab separates fields by blanks; octal escapes keep them in a path.
fn fstab_path(path: &str) -> String {
    path.replace('\\', "\\134")
        .replace(' ', "\\040")
        .replace('\t', "\\011")
        .replace('\n', "\\012")
}

/// The `fail` helper every mount script starts with.
fn fail_helper(what: &str, target: &str) -> String {
    let message = shell_quote(&format!("holos: failed to mount {what} at {target}"));
    format!(
        "fail() {{ echo {message}\": $1\" >&2; echo {message}\": $1\" >/dev/console 2>/dev/null; exit 1; }}\n"
    )
}

fn volume_mount_script(volume: &VolumeAttachment) -> String {
    let device = volume.guest_device();
    let target = &volume.target;
    let mut script = fail_helper(&format!("volume {}", volume.name), target);
    script.push_str(&format!(
        "dev={}\ntarget={}\n",
        shell_quote(&device),
        shell_quote(target)
    ));
    // udev may create the by-id link a moment after cloud-init starts.
    script.push_str(
        "i=0\nwhile [ ! -b \"$dev\" ]; do i=$((i+1)); [ \"$i\" -gt 30 ] && fail \"no disk $dev\"; sleep 1; done\n",
    );
    let options = if volume.read_only {
        "ro,nofail"
    } else {
        script.push_str(
            "blkid \"$dev\" >/dev/null 2>&1 || mkfs.ext4 -q \"$dev\" || fail \"mkfs.ext4 $dev failed\"\n",
        );
        "defaults,nofail"
    };
    let fstab_line = format!("{} {} ext4 {options} 0 2", device, fstab_path(target));
    script.push_str(&mount_tail(&device, &fstab_line));
    script
}

/// Grows a mounted volume's ext4 to the disk's size (online, which ext4
/// allows); nothing when it already fills it or is not mounted yet.
fn volume_grow_script(volume: &VolumeAttachment) -> String {
    let message = shell_quote(&format!(
        "holos: grew the file system of volume {}",
        volume.name
    ));
    format!(
        "dev={}
target={}
if [ -b \"$dev\" ] && mountpoint -q \"$target\"; then
  out=$(resize2fs \"$dev\" 2>&1) && case \"$out\" in *'is now'*) echo {message} >/dev/console 2>/dev/null; echo {message};; esac
fi
true
",
        shell_quote(&volume.guest_device()),
        shell_quote(&volume.target)
    )
}

fn share_mount_script(share: &BindShare) -> String {
    let target = &share.target;
    let mut script = fail_helper(&format!("share {}", share.tag), target);
    script.push_str(&format!("target={}\n", shell_quote(target)));
    let read_only = if share.read_only { ",ro" } else { "" };
    let fstab_line = format!(
        "{} {} 9p trans=virtio,version=9p2000.L,msize=262144,nofail{read_only} 0 0",
        share.tag,
        fstab_path(target)
    );
    script.push_str(&mount_tail(&share.tag, &fstab_line));
    script
}

/// Creates the mount point, adds the fstab line once, and mounts.
fn mount_tail(source: &str, fstab_line: &str) -> String {
    format!(
        "mkdir -p \"$target\" || fail \"cannot create $target\"\n\
         grep -qs {} /etc/fstab || echo {} >> /etc/fstab\n\
         mountpoint -q \"$target\" || mount \"$target\" || fail \"mount exited $?\"\n",
        shell_quote(&format!("^{source} ")),
        shell_quote(fstab_line)
    )
}
