//! The crate's integration tests, one binary: one module per area.

// Test code: a failed step fails the test, so the helpers may unwrap as
// well as the #[test] functions (clippy.toml allows those).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod containment;
mod converge;
mod go_engine;
mod go_no_value;
mod includes;
mod load_errors;
mod oneoff;
mod render_memory;
mod scaffold;
mod url_source;
