//! holo-scaffold: the `scaffold` plugin for holo. It renders a directory of
//! templates (Jet by default, as in CCM, Go's text/template or minijinja, with
//! `facts`, `data` and `env`) into a target
//! directory, with the semantics of CCM's scaffold type: Changed, Stable and
//! Purged lists, `purge`, `skip_empty`, `post` commands, and removal of the
//! managed files for `ensure = absent`.
//!
//! - [`model`]: properties and validation;
//! - [`apply`]: the decision table and noop messages as plain functions;
//! - [`render`]: rendering the source tree and classifying the results;
//! - [`go_engine`]: Go's text/template as a [`render::TreeEngine`];
//! - [`provider::url`]: URL sources, downloaded and extracted into the cache;
//! - [`converge`]: carrying out apply, noop, scrub and diff, with the
//!   rendering and the state record;
//! - [`plugin`]: the glue to the SDK (scan, and the operations handed to
//!   [`converge`]).

pub mod apply;
pub mod converge;
pub mod go_engine;
pub mod model;
pub mod plugin;
pub mod provider;
pub mod render;

pub use plugin::ScaffoldPlugin;
