//! holo-users-groups: Holo 3's plugin of that name, in Rust. It provisions
//! `[[user]]` and `[[group]]` definitions through useradd, usermod,
//! userdel, groupadd, groupmod and groupdel, with Holo 3's base and
//! provisioned images.
//!
//! - [`model`]: an entity's attributes, the definitions and their stacking;
//! - [`definitions`]: reading the definition files with Holo 3's messages;
//! - [`image`]: the base and provisioned images, and the old `state.toml`;
//! - [`apply`]: the decisions as plain functions;
//! - [`provider`]: the shadow tools and the account databases;
//! - [`plugin`]: the glue to the SDK (scan, apply, noop, diff, scrubbing).

pub mod apply;
pub mod definitions;
pub mod image;
pub mod model;
pub mod plugin;
pub mod provider;

pub use plugin::UsersGroupsPlugin;
