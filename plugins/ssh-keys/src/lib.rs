//! holo-ssh-keys: Holo 3's plugin of that name, in Rust. Key files
//! `USER/NAME.pub` become entities `ssh-keyset:USER/NAME`, whose keys are
//! added to the user's `~/.ssh/authorized_keys`, tagged `holo=ENTITY`.
//!
//! - [`model`]: key lines, key files and the entity id;
//! - [`fingerprint`]: what `ssh-keygen -l` prints for a key;
//! - [`apply`]: the decision table over the lines of `authorized_keys`;
//! - [`provider`]: users' home directories and the files there;
//! - [`provisioned`]: the list of provisioned entities in the state directory;
//! - [`plugin`]: the glue to the SDK.

pub mod apply;
pub mod fingerprint;
pub mod model;
pub mod plugin;
pub mod provider;
pub mod provisioned;

pub use plugin::SshKeysPlugin;
