//! holo-vms: the `holos` command line and the holo plugin, on the compose
//! model of holos-compose.
//!
//! `plugin` is the holo plugin on the SDK, `cli` the `holos` command line
//! (one binary answers to both names), `state_dir` the root of the
//! runtime's state, and `runtime` turns a manifest into running QEMU
//! instances and back.

pub mod cli;
pub mod plugin;
pub mod runtime;
pub mod state_dir;
