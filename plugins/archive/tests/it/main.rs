//! The crate's integration tests, one binary: one module per area.

mod archive;
mod bombs_and_kills;
mod containment;
mod credentials;
mod directories;
#[path = "../../../sdk/tests/it/escapes.rs"]
mod escapes;
mod support;
