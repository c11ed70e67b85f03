//! holo-exec: the `exec` plugin for holo. It runs `[[exec]]` commands with
//! CCM's idempotency controls (`creates`, `refresh_only`, subscribe
//! refreshes, `returns`) plus `onlyif`/`unless_command`, through the posix
//! provider (no shell) or the shell provider (`/bin/sh -c`).
//!
//! - [`model`]: properties and validation;
//! - [`apply`]: the decision table as plain functions, and running the command;
//! - [`provider`]: posix and shell;
//! - [`plugin`]: the glue to the SDK (scan and apply).
//!
//! Test mode does not sandbox anything: commands really run, with the root as
//! their default working directory and `creates` looked up below the root.

pub mod apply;
pub mod model;
pub mod plugin;
pub mod provider;

pub use plugin::ExecPlugin;
