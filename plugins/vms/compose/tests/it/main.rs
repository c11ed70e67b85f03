//! The crate's integration tests, one binary: one module per area, each
//! resolving projects through the library. The tests that run the `holos`
//! binary or its `config` output live with holo-vms.

// Test code: a failed step fails the test, so the helpers may unwrap as
// well as the #[test] functions (clippy.toml allows those).
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod common;
mod dockerfile;
mod errors;
mod features;
mod guest_files;
mod networks;
mod no_panic;
mod notes;
mod schema;
mod upstream_files;
