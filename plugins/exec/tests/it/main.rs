//! The crate's integration tests, one binary: one module per area.

// Test code: a failed step fails the test, so the helpers may unwrap as
// well as the #[test] functions (clippy.toml allows those).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod bounded;
mod containment;
mod creates_after_failure;
mod cwd_containment;
mod daemons;
mod guard_messages;
mod oneoff;
mod support;
