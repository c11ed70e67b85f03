//! The crate's integration tests, one binary: one module per area.

// Test code: a failed step fails the test, so the helpers may unwrap as
// well as the #[test] functions (clippy.toml allows those).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod containment;
mod oneoff;
mod plugin_process;
mod real_apt;
mod real_dnf;
mod version_compare_cli;
mod version_compare_dpkg;
mod versions;
