//! The crate's integration tests, one binary: one module per area.

mod bounded;
mod containment;
mod creates_after_failure;
mod cwd_containment;
mod daemons;
#[path = "../../../sdk/tests/it/escapes.rs"]
mod escapes;
