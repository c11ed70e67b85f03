//! The crate's integration tests, one binary: one module per area.

// Test code: a failed step fails the test, so the helpers may unwrap as
// well as the #[test] functions (clippy.toml allows those).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod conditions;
mod containment;
mod interrupted_apply;
mod man_messages;
mod non_utf8_names;
mod oneoff;
mod ownership;
mod parse_cache;
mod properties;
mod render_budget;
mod shared_sweeps;
mod source_containment;
mod support;
mod walk_links;
