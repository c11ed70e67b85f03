//! The compose project a `holos` command acts on, and its errors as
//! `validate` prints them.

use std::collections::BTreeMap;

use holos_compose::load::Options;

/// The environment as interpolation sees it. Never panics: a variable whose
/// name is not UTF-8 cannot be named in a compose file and is left out; a
/// value that is not UTF-8 is taken with U+FFFD for the invalid bytes.
pub fn process_environment() -> BTreeMap<String, String> {
    std::env::vars_os()
        .filter_map(|(key, value)| {
            let key = key.into_string().ok()?;
            Some((key, value.to_string_lossy().into_owned()))
        })
        .collect()
}

/// Resolves the compose project, printing its errors the way `validate` does.
pub(crate) fn resolve(
    options: &Options,
) -> Result<(holos_compose::load::Project, holos_compose::Manifest), String> {
    let (project, manifest) = holos_compose::resolve(options).map_err(|diags| describe(&diags))?;
    match unknown_profile(options, &project) {
        Some(message) => Err(message),
        None => Ok((project, manifest)),
    }
}

/// A `--profile` that no service of the project has, named with the
/// profiles it has (`*`, every profile, is always known).
pub fn unknown_profile(
    options: &Options,
    project: &holos_compose::load::Project,
) -> Option<String> {
    use holos_compose::load::profiles::profiles_of;
    let services = project
        .model
        .get("services")
        .and_then(|s| s.as_map())
        .into_iter()
        .flatten()
        .chain(&project.inactive);
    let mut known: Vec<&str> = services
        .flat_map(|(_, service)| profiles_of(service))
        .collect();
    known.sort_unstable();
    known.dedup();
    let unknown = options
        .profiles
        .iter()
        .flat_map(|p| p.split(','))
        .find(|p| *p != "*" && !known.contains(p))?;
    Some(if known.is_empty() {
        format!(
            "--profile {unknown}: no service of project {} has this profile; it has no profiles",
            project.name
        )
    } else {
        format!(
            "--profile {unknown}: no service of project {} has this profile; its profiles: {}",
            project.name,
            known.join(", ")
        )
    })
}

pub(crate) fn describe(diags: &[holos_compose::Diag]) -> String {
    let lines: Vec<String> = diags.iter().map(ToString::to_string).collect();
    format!(
        "the compose project has {} error{}:\n{}",
        diags.len(),
        if diags.len() == 1 { "" } else { "s" },
        lines.join("\n")
    )
}

/// The project a command acts on: the compose project's name (its `name:`,
/// else `-p`, else its directory), or `-p` alone when there is no compose
/// file to read (a project can be stopped after its file is gone).
pub(crate) fn project_name(options: &Options) -> Result<String, String> {
    match resolve(options) {
        Ok((_, manifest)) => Ok(manifest.project),
        Err(_) if options.files.is_empty() && options.project_name.is_some() => {
            Ok(options.project_name.clone().unwrap_or_default())
        }
        Err(message) => Err(message),
    }
}
