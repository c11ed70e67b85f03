//! holo-package: the `package` plugin for holo. It converges `[[package]]`
//! resources through apt or dnf (or, in test mode, a mock package database),
//! and owns exact Debian, RPM and CCM-generic version ordering.
//!
//! - [`model`]: properties and validation;
//! - [`apply`]: CCM's decision table as plain functions;
//! - [`provider`]: apt, dnf and the test-mode mock;
//! - [`version`]: the orderings and `holo-package version-compare`;
//! - [`plugin`]: the glue to the SDK (scan, apply, noop, diff, scrubbing).

pub mod apply;
pub mod model;
pub mod plugin;
pub mod provider;
pub mod version;

pub use plugin::PackagePlugin;
