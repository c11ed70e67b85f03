//! The crate's integration tests, one binary: one module per area.

// Test code: a failed step fails the test, so the helpers may unwrap as
// well as the #[test] functions (clippy.toml allows those).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli;
pub mod common;
mod compose_verbs;
mod config_roundtrip;
mod crash_recovery;
mod devices;
mod doctor;
mod e2e_debian;
mod extra_hosts;
mod flags;
mod global_flags;
mod golden;
mod guest_files;
mod health;
mod host_files;
mod host_overrides;
mod images;
mod import;
mod install;
mod interrupted_up;
mod layers;
mod logs_times;
mod networks;
mod notes;
mod one_off;
mod one_validator;
mod ops;
mod plugin;
mod plugin_oneoff;
mod plugin_support;
mod preflight;
mod project_flag;
mod projects;
mod replica_ports;
mod runtime_boot;
mod runtime_fake;
mod runtime_lifecycle;
mod runtime_support;
mod snapshots;
mod udp_ports;
mod up_moved_ssh_port;
mod upstream_files;
mod validate_host;
mod verify;
mod volume_ops;
