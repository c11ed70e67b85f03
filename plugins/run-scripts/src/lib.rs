//! holo-run-scripts: Holo 3's plugin of that name, in Rust. Every
//! executable in the resource directory is an entity `script:NAME`, run on
//! each apply in name order, its output shown as it comes.
//!
//! - [`model`]: the entity id and what scan hands to apply;
//! - [`apply`]: the decision table (run, dry run, refuse) and the exit code
//!   passed on;
//! - [`provider`]: running a script;
//! - [`plugin`]: the glue to the SDK.

pub mod apply;
pub mod model;
pub mod plugin;
pub mod provider;

pub use plugin::RunScriptsPlugin;
