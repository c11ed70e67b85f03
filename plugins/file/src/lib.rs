//! holo-file: files and directories with CCM's file semantics (ensure,
//! content or source, owner, group, mode) and Holo's protection of manual
//! edits, as a Holo plugin built on the `holo-plugin` SDK.
//!
//! [`model`] validates `[[file]]` tables, [`apply`] holds the decisions as
//! plain functions, [`provider::posix`] touches the filesystem, [`converge`]
//! ties them together per entity, [`state`] is the record it keeps and
//! [`plugin`] is the glue to the SDK.

pub mod apply;
pub mod converge;
pub mod model;
pub mod plugin;
pub mod provider;
pub mod state;

pub use plugin::FilePlugin;
