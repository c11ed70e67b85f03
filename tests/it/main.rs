//! The crate's integration tests, one binary: one module per area.

mod completions;
mod crash_safety;
mod diff_vs_git;
mod driver_admin;
mod driver_extensions;
mod driver_inplace;
mod driver_no_hang;
mod driver_resources;
mod driver_streaming;
mod fixture_readmes;
mod fixtures;
mod fleet;
mod holo3_suite;
mod man_pages;
mod packaging;
mod parsers_no_panic;
mod quickstart_demo;
mod readme_quickstart;
mod root;
mod run_report;
