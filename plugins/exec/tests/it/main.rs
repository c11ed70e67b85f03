//! The crate's integration tests, one binary: one module per area.

mod containment;
mod daemons;
#[path = "../../../sdk/tests/it/escapes.rs"]
mod escapes;
