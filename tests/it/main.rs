//! The crate's integration tests, one binary: one module per area.

// Test code: a failed step fails the test, so the helpers may unwrap as
// well as the #[test] functions (clippy.toml allows those).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod ccm_cli;
mod ccm_session;
mod completions;
mod crash_safety;
mod crash_safety_plugins;
mod diff_vs_git;
mod driver_admin;
mod driver_extensions;
mod driver_in_root;
mod driver_inplace;
mod driver_interrupt;
mod driver_interrupt_commands;
mod driver_limits;
mod driver_messages;
mod driver_no_hang;
mod driver_resources;
mod driver_run_lock;
mod driver_streaming;
mod fixture_readmes;
mod fixtures;
mod fleet;
mod holo3_suite;
mod holo3_switch;
mod import_ccm;
mod lints;
mod man_pages;
mod monitor_only;
mod noop_state_dirs;
mod oneoff_equivalence;
mod oneoff_safety;
mod packaging;
mod parsers_no_panic;
mod plugin_shape;
mod quickstart_demo;
mod readme_quickstart;
mod root;
mod run_report;
mod scan_limits;
mod staged_commit;
mod workspace;
