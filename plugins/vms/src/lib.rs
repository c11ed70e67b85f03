//! holo-vms: the holos compose model (and, in later issues, its runtime).
//!
//! `compose` loads `holos.yaml` as Docker Compose does (files, `.env`,
//! interpolation, include, extends, profiles, merging) and `compose::decode`
//! resolves it into the typed [`manifest::Manifest`]. `yaml` keeps source
//! positions for every error; `network`, `dockerfile` and `images` hold the
//! derived parts.

pub mod cli;
pub mod compose;
pub mod diag;
pub mod dockerfile;
pub mod images;
pub mod manifest;
pub mod network;
pub mod yaml;

use std::collections::BTreeMap;

pub use diag::Diag;
pub use manifest::Manifest;

/// Loads and resolves a project in one call, with no prior IP allocations.
pub fn resolve(options: &compose::Options) -> Result<(compose::Project, Manifest), Vec<Diag>> {
    let project = compose::load(options)?;
    let manifest = compose::decode::resolve(&project, &BTreeMap::new())?;
    Ok((project, manifest))
}
