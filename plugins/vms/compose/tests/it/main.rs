//! The crate's integration tests, one binary: one module per area. The
//! tests that run the `holos` binary live with holo-vms.

// Test code: a failed step fails the test, so the helpers may unwrap as
// well as the #[test] functions (clippy.toml allows those).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod no_panic;
