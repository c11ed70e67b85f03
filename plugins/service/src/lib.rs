//! holo-service: the `service` plugin for holo. It converges `[[service]]`
//! resources (running state, then boot configuration) through systemctl,
//! or in test mode through a mock that keeps unit state below the root.
//!
//! - [`model`]: properties and validation;
//! - [`apply`]: CCM's decision tables as plain functions;
//! - [`provider`]: systemd and the test-mode mock;
//! - [`plugin`]: the glue to the SDK (scan, apply, noop, diff, state records).

pub mod apply;
pub mod model;
pub mod plugin;
pub mod provider;

pub use plugin::ServicePlugin;
