//! holos-compose: the holos compose model. Files go in; a typed
//! [`Manifest`] or a list of diagnostics comes out. No processes, no
//! command line.
//!
//! `load` reads `holos.yaml` as Docker Compose does (files, `.env`,
//! interpolation, include, extends, profiles, merging) and `decode`
//! resolves the merged tree into the [`manifest::Manifest`]. `yaml` keeps
//! source positions for every error and `diag` reports them; `network`,
//! `dockerfile` and `images` hold the derived parts.

pub mod decode;
pub mod diag;
pub mod dockerfile;
pub mod images;
pub mod keys;
pub mod load;
pub mod manifest;
pub mod network;
pub mod yaml;

pub use diag::Diag;
pub use manifest::Manifest;

/// Loads and resolves a project in one call, with no prior IP allocations.
/// Errors come sorted by file and position.
pub fn resolve(options: &load::Options) -> Result<(load::Project, Manifest), Vec<Diag>> {
    resolve_with_allocations(options, &network::Allocations::default())
}

/// Like [`resolve`], keeping the addresses (and named networks' subnets)
/// the runtime already assigned, so that running instances keep theirs.
pub fn resolve_with_allocations(
    options: &load::Options,
    existing_ips: &network::Allocations,
) -> Result<(load::Project, Manifest), Vec<Diag>> {
    let sorted = |mut diags: Vec<Diag>| {
        diags.sort_by(|a, b| {
            (&a.pos.file, a.pos.line, a.pos.col).cmp(&(&b.pos.file, b.pos.line, b.pos.col))
        });
        diags
    };
    let project = load::load(options).map_err(sorted)?;
    // A failed resolve keeps the load's warnings: an unset variable is
    // often why a value is wrong (an image alias "").
    let manifest = decode::resolve(&project, existing_ips).map_err(|errors| {
        let mut diags = project.warnings.clone();
        diags.extend(errors);
        sorted(diags)
    })?;
    Ok((project, manifest))
}
