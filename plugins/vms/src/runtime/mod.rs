//! The VM runtime: turns a resolved manifest into running QEMU instances
//! and back.
//!
//! - `spec`: one instance fully resolved; `plan` builds the specs from the
//!   manifest and the project record;
//! - `qemu`: its command line; `cloud_init`, `seed_iso` and `yaml_out`: its
//!   NoCloud seed;
//! - `state`: the state directory, the project record and the lock;
//! - `instance`: disks, launch and stop of one instance; `qmp` and `ssh`:
//!   talking to it; `host`: pids, ports and the accelerator;
//! - `health`: healthchecks over SSH and waiting on `depends_on`;
//! - `image_cache`: `holos pull`, the image cache and the base images of
//!   `up`; `image_lock`: `holos.images.lock`;
//! - `project`: up, stop, start and down under the lock; `commands`: the
//!   `holos` commands on top;
//! - `inspect`, `volumes`, `doctor`: operating a project (`ps --json` and
//!   `inspect`, `volumes ls|rm`) and the host (`doctor`).

pub mod cloud_init;
pub mod commands;
pub mod doctor;
pub mod health;
pub mod host;
pub mod image_cache;
pub mod image_lock;
pub mod inspect;
pub mod instance;
pub mod plan;
pub mod project;
pub mod qemu;
pub mod qmp;
pub mod seed_iso;
pub mod spec;
pub mod ssh;
pub mod state;
pub mod volumes;
pub mod yaml_out;
