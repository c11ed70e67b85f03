//! The integration tests of holo-demo, one binary: they exercise the SDK
//! through this plugin. Living here, they make `cargo test --workspace`
//! build the holo-demo binary that the driver's tests run too.

mod containment;
mod demo;
#[path = "../../../tests/it/escapes.rs"]
mod escapes;
