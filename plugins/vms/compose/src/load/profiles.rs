//! Profiles: which services are active, as Compose decides it.
//!
//! A service without `profiles` is always active. One with profiles is
//! active when any of them is enabled with `--profile` or
//! `COMPOSE_PROFILES`; `*` enables every profile.

use crate::yaml::Node;

/// The enabled profiles from the command line and `COMPOSE_PROFILES`.
pub fn enabled_profiles(cli: &[String], compose_profiles: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = cli
        .iter()
        .flat_map(|p| p.split(','))
        .chain(compose_profiles.unwrap_or_default().split(','))
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The profiles a service (its YAML node) lists.
pub fn profiles_of(service: &Node) -> Vec<&str> {
    service
        .get("profiles")
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .filter_map(Node::as_str)
        .collect()
}

/// Whether a service (its YAML node) is active.
pub fn is_active(service: &Node, enabled: &[String]) -> bool {
    let Some(profiles) = service.get("profiles").and_then(Node::as_seq) else {
        return true;
    };
    if profiles.is_empty() {
        return true;
    }
    enabled.iter().any(|e| e == "*")
        || profiles
            .iter()
            .filter_map(Node::as_str)
            .any(|p| enabled.iter().any(|e| e == p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_str;
    use std::path::Path;

    #[test]
    fn services_follow_their_profiles() {
        let doc = parse_str(
            "a: {}\nb: {profiles: [debug]}\nc: {profiles: [x, y]}\n",
            Path::new("t.yaml"),
        )
        .unwrap();
        let active = |name: &str, enabled: &[String]| is_active(doc.get(name).unwrap(), enabled);
        let none = enabled_profiles(&[], None);
        assert!(active("a", &none) && !active("b", &none) && !active("c", &none));
        let debug = enabled_profiles(&["debug".into()], None);
        assert!(active("b", &debug) && !active("c", &debug));
        let env = enabled_profiles(&[], Some("y, z"));
        assert!(active("c", &env) && !active("b", &env));
        let all = enabled_profiles(&[], Some("*"));
        assert!(active("b", &all) && active("c", &all));
    }
}
