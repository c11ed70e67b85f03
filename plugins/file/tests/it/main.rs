//! The crate's integration tests, one binary: one module per area.

mod containment;
#[path = "../../../sdk/tests/it/escapes.rs"]
mod escapes;
mod interrupted_apply;
mod ownership;
mod properties;
