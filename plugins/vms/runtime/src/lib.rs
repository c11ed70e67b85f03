//! holos-runtime: turns a resolved [`Manifest`](holos_compose::Manifest)
//! into running QEMU instances and back. It takes a manifest, never compose
//! options or command-line types.
//!
//! - `error`: the runtime's [`Error`](error::Error), which part failed with
//!   the message the user sees;
//! - `settings`: the host settings every operation needs, from the
//!   environment; `state_dir`: the root of the runtime's state;
//! - `spec`: one instance fully resolved; `plan` builds the specs from the
//!   manifest and the project record;
//! - `qemu`: its command line; `cloud_init`, `seed_iso` and `yaml_out`: its
//!   NoCloud seed;
//! - `state`: the state directory, the project record and the lock;
//! - `instance`: disks, launch and stop of one instance; `qmp` and `ssh`:
//!   talking to it; `host`: pids, ports and the accelerator;
//!   `console_times`: when each console line arrived (the stamper process
//!   and its index);
//! - `health`: healthchecks over SSH and waiting on `depends_on`;
//! - `preflight`: what `up` refuses before it starts anything, which
//!   `holos validate` checks too; `disk_format`: a disk image's format from
//!   its signature;
//! - `lifecycle`: up, stop, start and down under the lock;
//! - `images`: the image cache, `holos pull` and the base images of `up`
//!   (`cache`), and `holos.images.lock` (`lock`);
//! - `ops`: operating a project (`inspect`, `volumes`) and the host
//!   (`doctor`).

pub mod cloud_init;
pub mod console_times;
pub mod disk_format;
pub mod error;
pub mod health;
pub mod host;
pub mod images;
pub mod instance;
pub mod lifecycle;
pub mod ops;
pub mod plan;
pub mod preflight;
pub mod qemu;
pub mod qmp;
pub mod seed_iso;
pub mod settings;
pub mod spec;
pub mod ssh;
pub mod state;
pub mod state_dir;
pub mod yaml_out;
