//! The crate's integration tests, one binary: one module per area.

// Test code: a failed step fails the test, so the helpers may unwrap as
// well as the #[test] functions (clippy.toml allows those).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod containment;
mod holoscript_reads;
mod killed_apply;
mod patches;
mod support;
mod switch;
