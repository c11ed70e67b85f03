//! holo-archive: the `archive` plugin for holo. It downloads `[[archive]]`
//! resources over HTTP(S) with checksums, extracts `.tar.gz`, `.tar` and
//! `.zip` archives natively and safely, and cleans up after itself, with the
//! semantics of CCM's archive type.
//!
//! - [`model`]: properties and validation (credentials stay out of the spec);
//! - [`apply`]: the state checks and the decision matrix as plain functions;
//! - [`provider::http`]: status on disk and the download;
//! - extraction: the SDK's `extract` (staged, refusing anything that leaves
//!   `extract_parent`), shared with holo-scaffold;
//! - [`in_root`]: real paths inside the root for the download and the extraction;
//! - [`plugin`]: the glue to the SDK (scan, apply, noop, diff, records).

pub mod apply;
pub mod in_root;
pub mod model;
pub mod plugin;
pub mod provider;

pub use plugin::ArchivePlugin;
