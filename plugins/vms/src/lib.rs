//! holo-vms: the holos compose model (and, in later issues, its runtime).
//!
//! `compose` loads `holos.yaml` as Docker Compose does (files, `.env`,
//! interpolation, include, extends, profiles, merging) and `compose::decode`
//! resolves it into the typed [`manifest::Manifest`]. `yaml` keeps source
//! positions for every error; `network`, `dockerfile` and `images` hold the
//! derived parts. `plugin` is the holo plugin on the SDK, `cli` the `holos`
//! command line (one binary answers to both names), `state_dir` the root of
//! the runtime's state.

pub mod cli;
pub mod compose;
pub mod diag;
pub mod dockerfile;
pub mod images;
pub mod manifest;
pub mod network;
pub mod plugin;
pub mod state_dir;
pub mod yaml;

use std::collections::BTreeMap;

pub use diag::Diag;
pub use manifest::Manifest;

/// Loads and resolves a project in one call, with no prior IP allocations.
/// Errors come sorted by file and position.
pub fn resolve(options: &compose::Options) -> Result<(compose::Project, Manifest), Vec<Diag>> {
    resolve_with_allocations(options, &BTreeMap::new())
}

/// Like [`resolve`], keeping the instance IPs the runtime already assigned
/// (instance name to address), so that running instances keep theirs.
pub fn resolve_with_allocations(
    options: &compose::Options,
    existing_ips: &BTreeMap<String, std::net::Ipv4Addr>,
) -> Result<(compose::Project, Manifest), Vec<Diag>> {
    let sorted = |mut diags: Vec<Diag>| {
        diags.sort_by(|a, b| {
            (&a.pos.file, a.pos.line, a.pos.col).cmp(&(&b.pos.file, b.pos.line, b.pos.col))
        });
        diags
    };
    let project = compose::load(options).map_err(sorted)?;
    let manifest = compose::decode::resolve(&project, existing_ips).map_err(sorted)?;
    Ok((project, manifest))
}
