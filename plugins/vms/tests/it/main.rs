//! The crate's integration tests, one binary: one module per area.

mod cli;
mod common;
mod config_roundtrip;
mod crash_recovery;
mod devices;
mod dockerfile;
mod doctor;
mod e2e_debian;
mod errors;
mod features;
mod golden;
mod health;
mod images;
mod layers;
mod notes;
mod one_validator;
mod ops;
mod plugin;
mod plugin_support;
mod replica_ports;
mod runtime_boot;
mod runtime_fake;
mod runtime_lifecycle;
mod runtime_support;
mod schema;
mod up_moved_ssh_port;
