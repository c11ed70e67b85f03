//! The keys holos accepts at each level of the compose file.
//!
//! One table drives the strict-key check (unknown keys are errors, `x-*`
//! keys are ignored) and the "did you mean" suggestions.

pub const TOP_LEVEL: &[&str] = &[
    "version", "name", "include", "services", "volumes", "networks", "configs", "secrets", "models",
];

/// Service fields that map to manifest fields.
pub const SERVICE_MAPPED: &[&str] = &[
    "image",
    "image_os",
    "image_format",
    "build",
    "dockerfile",
    "command",
    "entrypoint",
    "working_dir",
    "user",
    "replicas",
    "scale",
    "deploy",
    "hostname",
    "domainname",
    "cpus",
    "mem_limit",
    "vm",
    "ports",
    "volumes",
    "devices",
    "depends_on",
    "labels",
    "label_file",
    "extra_hosts",
    "environment",
    "env_file",
    "cloud_init",
    "stop_grace_period",
    "healthcheck",
    "post_start",
    "pre_stop",
    "profiles",
    "extends",
    "configs",
    "secrets",
];

/// Service fields accepted for Compose compatibility and kept as metadata.
pub const SERVICE_METADATA: &[&str] = &[
    "container_name",
    "platform",
    "pull_policy",
    "pull_refresh_after",
    "restart",
    "stop_signal",
    "oom_kill_disable",
    "pids_limit",
    "init",
    "privileged",
    "read_only",
    "tty",
    "stdin_open",
    "cap_add",
    "cap_drop",
    "cgroup",
    "cgroup_parent",
    "cpu_count",
    "cpu_percent",
    "cpu_period",
    "cpu_quota",
    "cpu_rt_period",
    "cpu_rt_runtime",
    "cpu_shares",
    "cpuset",
    "credential_spec",
    "isolation",
    "ipc",
    "pid",
    "mem_reservation",
    "mem_swappiness",
    "memswap_limit",
    "oom_score_adj",
    "runtime",
    "security_opt",
    "shm_size",
    "storage_opt",
    "sysctls",
    "tmpfs",
    "ulimits",
    "uts",
    "userns_mode",
    "blkio_config",
    "device_cgroup_rules",
    "device_read_bps",
    "device_read_iops",
    "device_write_bps",
    "device_write_iops",
    "annotations",
    "attach",
    "dns",
    "dns_opt",
    "dns_search",
    "develop",
    "expose",
    "external_links",
    "gpus",
    "group_add",
    "links",
    "logging",
    "mac_address",
    "network_mode",
    "provider",
    "use_api_socket",
    "volumes_from",
    "networks",
    "models",
];

pub const VM: &[&str] = &[
    "vcpu",
    "memory_mb",
    "machine",
    "cpu_model",
    "uefi",
    "extra_args",
    "disk_size",
];

pub const CLOUD_INIT: &[&str] = &[
    "user",
    "ssh_authorized_keys",
    "packages",
    "write_files",
    "bootcmd",
    "runcmd",
    "hostname",
];

pub const WRITE_FILE: &[&str] = &[
    "path",
    "content",
    "encoding",
    "owner",
    "permissions",
    "append",
    "defer",
];

pub const BUILD: &[&str] = &[
    "context",
    "dockerfile",
    "dockerfile_inline",
    "args",
    "ssh",
    "cache_from",
    "cache_to",
    "extra_hosts",
    "isolation",
    "labels",
    "no_cache",
    "pull",
    "provenance",
    "sbom",
    "shm_size",
    "tags",
    "target",
    "ulimits",
    "platforms",
    "additional_contexts",
    "network",
    "secrets",
    "privileged",
    "entitlements",
];

pub const DEPLOY: &[&str] = &[
    "mode",
    "replicas",
    "labels",
    "update_config",
    "rollback_config",
    "resources",
    "restart_policy",
    "placement",
    "endpoint_mode",
];

pub const RESOURCES: &[&str] = &["limits", "reservations"];
pub const LIMITS: &[&str] = &["cpus", "memory", "pids", "devices", "generic_resources"];

pub const HEALTHCHECK: &[&str] = &[
    "test",
    "interval",
    "timeout",
    "retries",
    "start_period",
    "start_interval",
    "disable",
];

pub const PORT_LONG: &[&str] = &[
    "target",
    "published",
    "host_ip",
    "protocol",
    "app_protocol",
    "mode",
    "name",
];

pub const VOLUME_LONG: &[&str] = &[
    "type",
    "source",
    "target",
    "read_only",
    "bind",
    "volume",
    "tmpfs",
    "image",
    "consistency",
];

pub const VOLUME_TYPES: &[&str] = &["bind", "volume", "tmpfs", "image", "npipe", "cluster"];

pub const DEPENDS_ON_LONG: &[&str] = &["condition", "restart", "required"];

pub const DEPENDS_ON_CONDITIONS: &[&str] = &[
    "service_started",
    "service_healthy",
    "service_completed_successfully",
];

pub const HOOK: &[&str] = &[
    "command",
    "user",
    "privileged",
    "working_dir",
    "environment",
];

pub const ENV_FILE_LONG: &[&str] = &["path", "required", "format"];

pub const TOP_VOLUME: &[&str] = &[
    "size",
    "name",
    "driver",
    "driver_opts",
    "external",
    "labels",
];

pub const EXTENDS: &[&str] = &["service", "file"];

/// A top-level `networks` entry.
pub const TOP_NETWORK: &[&str] = &[
    "driver",
    "driver_opts",
    "attachable",
    "enable_ipv4",
    "enable_ipv6",
    "external",
    "internal",
    "ipam",
    "labels",
    "name",
];

/// A service's entry under `networks:` in the mapping form.
pub const SERVICE_NETWORK: &[&str] = &[
    "aliases",
    "ipv4_address",
    "ipv6_address",
    "link_local_ips",
    "mac_address",
    "driver_opts",
    "priority",
    "gw_priority",
    "interface_name",
];

/// A top-level `configs` or `secrets` entry.
pub const TOP_CONFIG: &[&str] = &[
    "file",
    "content",
    "environment",
    "external",
    "name",
    "labels",
    "driver",
    "driver_opts",
    "template_driver",
];

/// A service's `configs` or `secrets` entry in the long form.
pub const FILE_REFERENCE: &[&str] = &["source", "target", "uid", "gid", "mode"];

/// An `include` entry in the long form.
pub const INCLUDE_LONG: &[&str] = &["path", "project_directory", "env_file"];

/// A `devices` entry that passes a PCI device through.
pub const DEVICE_PCI: &[&str] = &["pci", "rom_file"];

/// A `devices` entry in Compose's long form, kept as metadata.
pub const DEVICE_LONG: &[&str] = &["source", "target", "permissions"];

/// The keys of the `x-holo` mapping of a service, which holo-vms reads.
pub const X_HOLO: &[&str] = &["protect"];

/// The keys of the top-level `x-holo` mapping: a service's, and whether
/// config and secret files may lie outside the project directory.
pub const X_HOLO_TOP: &[&str] = &["protect", "allow_host_files"];

/// The keys of the `x-holo` mapping of a config or secret definition.
pub const X_HOLO_FILE: &[&str] = &["allow_host_files"];

/// Every table above by where it applies, for `holo-vms properties` (the
/// man page test checks that holos.yaml(5) names each key).
pub const SECTIONS: &[(&str, &[&str])] = &[
    ("top-level", TOP_LEVEL),
    ("service", SERVICE_MAPPED),
    ("service-metadata", SERVICE_METADATA),
    ("vm", VM),
    ("cloud_init", CLOUD_INIT),
    ("cloud_init.write_files", WRITE_FILE),
    ("build", BUILD),
    ("deploy", DEPLOY),
    ("deploy.resources", RESOURCES),
    ("deploy.resources.limits", LIMITS),
    ("healthcheck", HEALTHCHECK),
    ("ports", PORT_LONG),
    ("volumes", VOLUME_LONG),
    ("volumes.type", VOLUME_TYPES),
    ("depends_on", DEPENDS_ON_LONG),
    ("depends_on.condition", DEPENDS_ON_CONDITIONS),
    ("post_start", HOOK),
    ("env_file", ENV_FILE_LONG),
    ("top-level.volumes", TOP_VOLUME),
    ("top-level.configs", TOP_CONFIG),
    ("top-level.networks", TOP_NETWORK),
    ("networks", SERVICE_NETWORK),
    ("configs", FILE_REFERENCE),
    ("extends", EXTENDS),
    ("include", INCLUDE_LONG),
    ("devices", DEVICE_PCI),
    ("devices-metadata", DEVICE_LONG),
    ("x-holo", X_HOLO),
    ("top-level.x-holo", X_HOLO_TOP),
    ("top-level.configs.x-holo", X_HOLO_FILE),
];
