//! The `[[package]]` resource: its properties, their validation, and the
//! choice of provider. Errors here are plain text; the caller prefixes the
//! resource file and line.

use std::fmt;

use holo_plugin::resources::Resource;
use serde::{Deserialize, Serialize};

use crate::version::{deb, rpm};

/// The `ensure` property.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", from = "String")]
pub enum Ensure {
    Present,
    Absent,
    Latest,
    Version(String),
}

impl Ensure {
    pub fn as_str(&self) -> &str {
        match self {
            Ensure::Present => "present",
            Ensure::Absent => "absent",
            Ensure::Latest => "latest",
            Ensure::Version(version) => version,
        }
    }
}

impl From<String> for Ensure {
    fn from(raw: String) -> Self {
        match raw.as_str() {
            "present" => Ensure::Present,
            "absent" => Ensure::Absent,
            "latest" => Ensure::Latest,
            _ => Ensure::Version(raw),
        }
    }
}

impl From<Ensure> for String {
    fn from(ensure: Ensure) -> Self {
        ensure.as_str().to_owned()
    }
}

impl fmt::Display for Ensure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which package manager converges the package.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    Apt,
    Dnf,
}

impl ProviderKind {
    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::Apt => "apt",
            ProviderKind::Dnf => "dnf",
        }
    }

    fn parse(raw: &str) -> Result<Self, String> {
        match raw {
            "apt" => Ok(ProviderKind::Apt),
            "dnf" => Ok(ProviderKind::Dnf),
            other => Err(format!(
                "unknown provider {other:?}: use \"apt\" or \"dnf\", or leave it out to choose from the facts"
            )),
        }
    }
}

/// A `[[package]]` table as written in a resource file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct PackageTable {
    pub name: String,
    pub ensure: Option<String>,
    pub provider: Option<String>,
    /// Filled from the common `protect` property, which the SDK takes out.
    #[serde(skip)]
    pub protect: Option<bool>,
}

impl Resource for PackageTable {
    const KIND: &'static str = "package";
    fn entity_id(&self) -> String {
        format!("package:{}", self.name)
    }
}

/// The validated desired state of one package: what scan hands to apply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackageSpec {
    pub name: String,
    pub ensure: Ensure,
    pub provider: ProviderKind,
    /// Holo's protection of manual changes; packages converge by default.
    pub protect: bool,
}

/// What the provider choice looks at when a resource names none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderHints {
    /// `os.id` and the words of `os.id_like`.
    pub os_ids: Vec<String>,
    pub apt_on_path: bool,
    pub dnf_on_path: bool,
    /// In test mode, where PATH is not searched: the mock's database as
    /// messages show it.
    pub mock_database: Option<String>,
}

const APT_FAMILY: &[&str] = &["debian", "ubuntu"];
const DNF_FAMILY: &[&str] = &[
    "fedora",
    "rhel",
    "centos",
    "rocky",
    "almalinux",
    "ol",
    "amzn",
];

/// Chooses the provider: the resource's own, else the OS family from the
/// facts, else the one package manager found on PATH.
pub fn choose_provider(
    explicit: Option<&str>,
    hints: &ProviderHints,
) -> Result<ProviderKind, String> {
    if let Some(explicit) = explicit {
        return ProviderKind::parse(explicit);
    }
    for id in &hints.os_ids {
        if APT_FAMILY.contains(&id.as_str()) {
            return Ok(ProviderKind::Apt);
        }
        if DNF_FAMILY.contains(&id.as_str()) {
            return Ok(ProviderKind::Dnf);
        }
    }
    match (hints.apt_on_path, hints.dnf_on_path) {
        (true, false) => Ok(ProviderKind::Apt),
        (false, true) => Ok(ProviderKind::Dnf),
        _ => {
            let os = if hints.os_ids.is_empty() {
                "os-release names no distribution".to_owned()
            } else {
                format!("os-release names {}", hints.os_ids.join(", "))
            };
            Err(match &hints.mock_database {
                None => format!(
                    "cannot choose a package provider ({os}; apt-get {}, dnf {} on PATH): set provider = \"apt\" or \"dnf\"",
                    found(hints.apt_on_path),
                    found(hints.dnf_on_path),
                ),
                Some(database) => format!(
                    "cannot choose a package provider ({os}; test mode does not search PATH, its mock apt and dnf use the package database {database}): set provider = \"apt\" or \"dnf\", or ID=debian or ID=fedora in $HOLO_ROOT_DIR/etc/os-release; create the database with [[installed]] and [[available]] tables as holo-package(8) shows under TEST MODE"
                ),
            })
        }
    }
}

fn found(on_path: bool) -> &'static str {
    if on_path { "found" } else { "not found" }
}

/// The longest package name accepted (with its `:ARCH`): far above any
/// real package's, so that a runaway value is refused at scan.
pub const NAME_MAX: usize = 255;

/// Package names: `^[a-zA-Z0-9._+:~-]+$` of at most [`NAME_MAX`] bytes, and
/// not starting with `-`, which the package manager would read as an option.
pub fn validate_name(name: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "._+:~-".contains(c);
    if name.is_empty() {
        return Err("package name is empty: set name = \"PACKAGE\"".to_owned());
    }
    if let Some(message) = holo_plugin::limits::over_limit("package name", name, NAME_MAX) {
        return Err(message);
    }
    if let Some(bad) = name.chars().find(|&c| !allowed(c)) {
        return Err(format!(
            "invalid package name: character {bad:?} is not allowed (use letters, digits and ._+:~-)"
        ));
    }
    if name.starts_with('-') {
        return Err(
            "invalid package name: it must not start with '-', which the package manager would read as an option"
                .to_owned(),
        );
    }
    Ok(())
}

const SHELL_METACHARACTERS: &str = ";|&$`'\"\\<>(){}[]*?!#=,/";

/// Parses `ensure`; a version must be free of shell metacharacters and
/// whitespace and valid for the provider.
pub fn parse_ensure(raw: Option<&str>, provider: ProviderKind) -> Result<Ensure, String> {
    let ensure = Ensure::from(raw.unwrap_or("present").to_owned());
    let Ensure::Version(version) = &ensure else {
        return Ok(ensure);
    };
    if let Some(bad) = version
        .chars()
        .find(|&c| c.is_whitespace() || c.is_control() || SHELL_METACHARACTERS.contains(c))
    {
        return Err(format!(
            "invalid ensure {version:?}: character {bad:?} is not allowed in a version; use present, absent, latest or a version"
        ));
    }
    if let Some(message) = foreign_keyword(version) {
        return Err(message);
    }
    // A version starts with a digit in practice; a word close to a keyword
    // is a typo (`lastest`), not a version to ask the package manager for.
    let typo = (!version.starts_with(|c: char| c.is_ascii_digit()))
        .then(|| holo_plugin::resources::closest(version, &["present", "absent", "latest"]))
        .flatten();
    if let Some(keyword) = typo {
        return Err(format!(
            "ensure = {version:?} is not known (did you mean {keyword:?}?); use \"present\", \"absent\", \"latest\" or a version"
        ));
    }
    match provider {
        ProviderKind::Apt => deb::validate_strict(version).map_err(|e| e.to_string())?,
        ProviderKind::Dnf => rpm::validate(version).map_err(|e| e.to_string())?,
    }
    Ok(ensure)
}

/// Puppet's `ensure` words that CCM and holo spell otherwise: a user coming
/// from Puppet types them, and they are no versions.
fn foreign_keyword(word: &str) -> Option<String> {
    let ours = match word {
        "installed" => "present",
        "purged" => "absent",
        _ => return None,
    };
    Some(format!(
        "ensure = {word:?} is Puppet's word (did you mean {ours:?}?); use \"present\", \"absent\", \"latest\" or a version"
    ))
}

/// Validates one table into a spec. An error comes with the property it is
/// about, so that the message can cite that property's own line.
pub fn validate(
    table: &PackageTable,
    hints: &ProviderHints,
) -> Result<PackageSpec, (&'static str, String)> {
    validate_name(&table.name).map_err(|message| ("name", message))?;
    let provider = choose_provider(table.provider.as_deref(), hints)
        .map_err(|message| ("provider", message))?;
    let ensure =
        parse_ensure(table.ensure.as_deref(), provider).map_err(|message| ("ensure", message))?;
    Ok(PackageSpec {
        name: table.name.clone(),
        ensure,
        provider,
        protect: table.protect.unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn puppets_installed_gets_a_did_you_mean_present() {
        let error = parse_ensure(Some("installed"), ProviderKind::Apt).unwrap_err();
        assert_eq!(
            error,
            "ensure = \"installed\" is Puppet's word (did you mean \"present\"?); use \"present\", \"absent\", \"latest\" or a version"
        );
        let error = parse_ensure(Some("purged"), ProviderKind::Dnf).unwrap_err();
        assert!(error.contains("did you mean \"absent\"?"), "{error}");
    }

    #[test]
    fn a_misspelt_keyword_gets_a_did_you_mean() {
        let error = parse_ensure(Some("lastest"), ProviderKind::Apt).unwrap_err();
        assert!(error.contains("did you mean \"latest\"?"), "{error}");
        assert!(parse_ensure(Some("1.2-3"), ProviderKind::Apt).is_ok());
    }

    fn debian() -> ProviderHints {
        ProviderHints {
            os_ids: vec!["debian".into()],
            ..ProviderHints::default()
        }
    }

    #[test]
    fn names_follow_the_seed_pattern() {
        assert!(validate_name("libstdc++6").is_ok());
        assert!(validate_name("python3.11:amd64").is_ok());
        assert!(validate_name("").is_err());
        for bad in ["vim;rm", "a b", "x$y", "a/b", "'q'", "-oAPT::x=1"] {
            assert!(validate_name(bad).is_err(), "{bad} must be rejected");
        }
        let message = validate_name("vim;rm").unwrap_err();
        assert!(message.contains("';'"), "{message}");
    }

    #[test]
    fn ensure_keywords_and_versions() {
        assert_eq!(parse_ensure(None, ProviderKind::Apt), Ok(Ensure::Present));
        assert_eq!(
            parse_ensure(Some("latest"), ProviderKind::Apt),
            Ok(Ensure::Latest)
        );
        assert_eq!(
            parse_ensure(Some("absent"), ProviderKind::Dnf),
            Ok(Ensure::Absent)
        );
        assert_eq!(
            parse_ensure(Some("1:2.0-3"), ProviderKind::Apt),
            Ok(Ensure::Version("1:2.0-3".into()))
        );
        assert!(parse_ensure(Some("1.0; reboot"), ProviderKind::Apt).is_err());
        assert!(parse_ensure(Some("$(id)"), ProviderKind::Dnf).is_err());
        assert!(parse_ensure(Some("1.0-"), ProviderKind::Apt).is_err());
        assert!(parse_ensure(Some("1.0-1-2"), ProviderKind::Dnf).is_err());
        assert!(parse_ensure(Some("1.0~rc1^git2-1.fc39"), ProviderKind::Dnf).is_ok());
    }

    #[test]
    fn provider_comes_from_resource_then_os_then_path() {
        assert_eq!(
            choose_provider(Some("dnf"), &debian()),
            Ok(ProviderKind::Dnf)
        );
        assert_eq!(choose_provider(None, &debian()), Ok(ProviderKind::Apt));
        let rocky = ProviderHints {
            os_ids: vec![
                "rocky".into(),
                "rhel".into(),
                "centos".into(),
                "fedora".into(),
            ],
            ..ProviderHints::default()
        };
        assert_eq!(choose_provider(None, &rocky), Ok(ProviderKind::Dnf));
        let unknown_with_dnf = ProviderHints {
            os_ids: vec!["nixos".into()],
            dnf_on_path: true,
            ..ProviderHints::default()
        };
        assert_eq!(
            choose_provider(None, &unknown_with_dnf),
            Ok(ProviderKind::Dnf)
        );
        let message = choose_provider(None, &ProviderHints::default()).unwrap_err();
        assert!(message.contains("set provider"), "{message}");
        assert!(message.contains("on PATH"), "{message}");
        let test_mode = ProviderHints {
            os_ids: vec!["nixos".into()],
            mock_database: Some("root/var/lib/holo-mock/packages.toml".into()),
            ..ProviderHints::default()
        };
        let message = choose_provider(None, &test_mode).unwrap_err();
        assert!(!message.contains("on PATH"), "{message}");
        assert!(
            message.contains("test mode does not search PATH")
                && message.contains("root/var/lib/holo-mock/packages.toml")
                && message.contains("[[available]]"),
            "{message}"
        );
        assert!(choose_provider(Some("yum"), &debian()).is_err());
    }

    #[test]
    fn spec_round_trips_through_serde() {
        let spec = validate(
            &PackageTable {
                name: "vim".into(),
                ensure: Some("2:9.0-1".into()),
                ..PackageTable::default()
            },
            &debian(),
        )
        .expect("valid");
        let json = serde_json::to_string(&spec).expect("serialises");
        assert!(json.contains("\"ensure\":\"2:9.0-1\""), "{json}");
        let back: PackageSpec = serde_json::from_str(&json).expect("deserialises");
        assert_eq!(back, spec);
    }
}
