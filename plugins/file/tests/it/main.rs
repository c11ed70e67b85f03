//! The crate's integration tests, one binary: one module per area.

mod conditions;
mod containment;
#[path = "../../../sdk/tests/it/escapes.rs"]
mod escapes;
mod interrupted_apply;
mod man_messages;
mod non_utf8_names;
mod ownership;
mod properties;
mod source_containment;
