//! One-off `ensure` and `status` from the shell: `holo-ID ensure NAME
//! --PROPERTY VALUE ...` converges one resource given as flags, and
//! `holo-ID status NAME` prints the current state as the table that would
//! declare it.
//!
//! `ensure` writes the flags as a one-table resource file into a private
//! run directory and takes it through the path of a holo run: the SDK's
//! scan (templates, common properties, validation), then the plugin's own
//! `apply ENTITY` operation in a child process with the scan cache, FD 3
//! and the `HOLO_*` environment a driver would give it. The child's output
//! is printed as `holo apply` prints an entity, and the exit code is the one
//! `holo apply` would give. The rules both share live once: the run lock
//! (holo-runlock), the apply order and its cycle message and how an entity
//! is printed (holo-protocol), the common properties (`resources.rs`).
//!
//! Root and state: the root is `HOLO_ROOT_DIR` (`/` when unset; the plugin
//! gets it without `./` and a trailing `/`, as from the driver), as for a
//! holo run. When holo already manages the entity (its state directory,
//! `HOLO_STATE_DIR` or `ROOT/var/lib/holo/ID`, has a record for it), that
//! state directory is used, so protection of manual edits is holo's own.
//! Otherwise the records go to `ROOT/var/lib/holo/ensure/ID`: repeated
//! one-offs still see each other's records, and the next holo run does not
//! take the entity for a deleted resource and scrub it.
//!
//! The run: the one-off takes holo's run lock, `ROOT/run/holo.pid`, as
//! `holo apply` does (a stale lock is taken over). Under it, the scan cache
//! and the generated resource file (which may hold secrets) live in a
//! private run directory, `ROOT/var/cache/holo/ensure/ID.PID` (0700, its
//! files 0600), never in a shared temporary directory; it is removed at the
//! end, and the next one-off removes what a killed one left there.
//! SIGTERM, SIGINT and SIGHUP end the one-off as they end `holo apply`: the
//! signal is passed on to the plugin's apply (which ends its command's
//! process group), the run directory and the lock are removed, and the exit
//! code is 128+signal.
//!
//! Each run that is not a noop keeps, for a plugin that asks for it
//! ([`Plugin::ensured_table`]), the table the flags gave and how it went,
//! an [`Ensured`], in `ROOT/var/lib/holo/ensure/ID.ensured`, readable by
//! its owner only, which `status` of a kind whose state cannot be read
//! back from the system (a command, a rendered tree) reads.
//!
//! A plugin whose resources are not one table per entity (holo-vms: a
//! compose project) answers `ensure` itself and hands a resource tree to
//! [`run_ensure`], which applies every entity in it in `REQUIRES` order, as
//! the driver does, skipping one whose requirement failed.
//!
//! `status` prints a [`StatusTable`](crate::plugin::StatusTable): what the
//! plugin read back, with notes and the properties to fill in as comments;
//! it exits 3 when there are properties to fill in.

mod child;
mod converge;
mod ensured;
mod flags;
mod lock;
mod messages;
mod probe;
mod report;
mod request;
mod run_dir;
mod secrets;
mod session;
mod status;
#[cfg(test)]
mod test_demo;

pub(crate) use converge::ensure;
pub use converge::run_ensure;
pub use ensured::{EnsureResult, Ensured, ensured, record_env};
pub use flags::{Flags, OneOffSyntax};
pub use probe::property_types;
pub use request::{EnsureRequest, ResourceEntry};
pub(crate) use status::status;
pub use status::{render_status, status_table};

/// The table `status` gives and its values, for plugins.
pub use toml::{Table, Value};

// Defined beside `Plugin`, whose `property_types` returns it.
pub use crate::plugin::ValueType;
