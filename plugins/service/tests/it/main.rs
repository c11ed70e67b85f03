//! The crate's integration tests, one binary: one module per area.

mod duplicate_units;
mod systemd_provider;
