//! The crate's integration tests, one binary: one module per area.

mod common;
mod containment;
#[path = "../../../sdk/tests/it/escapes.rs"]
mod escapes;
mod plugin_process;
mod real_apt;
mod real_dnf;
mod version_compare_cli;
mod version_compare_dpkg;
mod versions;
