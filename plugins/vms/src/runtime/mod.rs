//! The VM runtime: turns a resolved manifest into running QEMU instances
//! and back.
//!
//! `spec` is one instance fully resolved; `qemu` its command line;
//! `cloud_init` and `seed_iso` its NoCloud seed; `yaml_out` the YAML those
//! documents are written in.

pub mod cloud_init;
pub mod plan;
pub mod qemu;
pub mod seed_iso;
pub mod spec;
pub mod state;
pub mod yaml_out;
