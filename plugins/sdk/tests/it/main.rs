//! The crate's integration tests, one binary: one module per area.

mod probe;
mod resources_no_panic;
mod state_long_ids;
mod templates;
