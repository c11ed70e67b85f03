//! The crate's integration tests, one binary: one module per area.

mod containment;
mod converge;
#[path = "../../../sdk/tests/it/escapes.rs"]
mod escapes;
mod scaffold;
