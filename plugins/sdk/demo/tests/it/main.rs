//! The integration tests of holo-demo, one binary: they exercise the SDK
//! through this plugin. Living here, they make `cargo test --workspace`
//! build the holo-demo binary that the driver's tests run too.

// Test code: a failed step fails the test, so the helpers may unwrap as
// well as the #[test] functions (clippy.toml allows those).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod containment;
mod demo;
