//! The built-in image aliases (`share/images.toml`, compiled in).
//!
//! Resolving `image:` happens here: an alias with an optional tag, or a
//! local disk image whose format comes from `image_format` or its extension.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::manifest::Image;

const IMAGES_TOML: &str = include_str!("../../../../share/images.toml");

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageTable {
    pub image: Vec<ImageAlias>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageAlias {
    pub alias: String,
    pub os: String,
    pub user: String,
    pub min_memory_mb: u64,
    pub default_tag: String,
    pub tags: BTreeMap<String, ImageTag>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageTag {
    /// Other names of this tag, such as the version number of a release
    /// named by its code name (`24.04` for `noble`).
    #[serde(default)]
    pub also: Vec<String>,
    pub url: String,
    pub format: String,
    pub checksum_url: String,
    pub checksum_type: String,
}

/// The compiled-in table. A broken table is a build defect, caught by the
/// test below, so callers get an empty table rather than a panic.
pub fn table() -> &'static ImageTable {
    static TABLE: std::sync::OnceLock<ImageTable> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| toml::from_str(IMAGES_TOML).unwrap_or(ImageTable { image: Vec::new() }))
}

impl ImageTable {
    pub fn find(&self, alias: &str) -> Option<&ImageAlias> {
        self.image.iter().find(|i| i.alias == alias)
    }

    pub fn aliases(&self) -> Vec<&str> {
        self.image.iter().map(|i| i.alias.as_str()).collect()
    }
}

impl ImageTag {
    /// The digest of `checksum_type` (the table check makes it known).
    pub fn algorithm(&self) -> holo_checksum::Algorithm {
        holo_checksum::Algorithm::parse(&self.checksum_type)
            .unwrap_or(holo_checksum::Algorithm::Sha256)
    }
}

/// The aliases the table must have (the compose file reference names them).
pub const REQUIRED_ALIASES: [&str; 8] = [
    "alpine",
    "arch",
    "debian",
    "ubuntu",
    "fedora",
    "almalinux",
    "rocky",
    "centos-stream",
];

/// Everything wrong with a table, one sentence each: missing or duplicate
/// aliases, a default tag that is not a tag, an unknown OS family, format
/// or checksum type, names that cannot be part of a file name, URLs that
/// are not HTTPS or whose checksum lives on another host (a mirror maps
/// hosts), a zero minimum memory.
pub fn table_problems(table: &ImageTable) -> Vec<String> {
    let mut problems = Vec::new();
    let safe = |text: &str| {
        !text.is_empty()
            && text
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
    };
    let host = |url: &str| {
        url.strip_prefix("https://")
            .and_then(|rest| rest.split('/').next())
            .map(str::to_string)
    };
    for required in REQUIRED_ALIASES {
        if table.find(required).is_none() {
            problems.push(format!("alias {required} is missing"));
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for image in &table.image {
        let alias = &image.alias;
        if !seen.insert(alias.as_str()) {
            problems.push(format!("alias {alias} appears twice"));
        }
        if !safe(alias) {
            problems.push(format!(
                "alias {alias:?} must be lower case letters, digits, . and -"
            ));
        }
        if !image.tags.contains_key(&image.default_tag) {
            problems.push(format!(
                "{alias}: default tag {} is not one of its tags",
                image.default_tag
            ));
        }
        if !OS_FAMILIES.contains(&image.os.as_str()) {
            problems.push(format!(
                "{alias}: os {:?} is not one of {OS_FAMILIES:?}",
                image.os
            ));
        }
        if image.user.is_empty() || image.min_memory_mb == 0 {
            problems.push(format!("{alias}: user and min_memory_mb must be set"));
        }
        let mut names = std::collections::BTreeSet::new();
        for (name, tag) in &image.tags {
            let what = format!("{alias}:{name}");
            for name in std::iter::once(name).chain(&tag.also) {
                if !safe(name) {
                    problems.push(format!(
                        "{alias}:{name}: tag must be lower case letters, digits, . and -"
                    ));
                }
                if !names.insert(name.as_str()) {
                    problems.push(format!("{alias}:{name}: the tag is named twice"));
                }
            }
            if !FORMATS.contains(&tag.format.as_str()) {
                problems.push(format!(
                    "{what}: format {:?} is not one of {FORMATS:?}",
                    tag.format
                ));
            }
            if holo_checksum::Algorithm::parse(&tag.checksum_type).is_none() {
                problems.push(format!(
                    "{what}: checksum_type {:?} is not sha256 or sha512",
                    tag.checksum_type
                ));
            }
            match (host(&tag.url), host(&tag.checksum_url)) {
                (Some(image_host), Some(sum_host)) if image_host == sum_host => {}
                (Some(_), Some(_)) => problems.push(format!(
                    "{what}: the checksum must come from the image's host"
                )),
                _ => problems.push(format!(
                    "{what}: url and checksum_url must be https:// URLs"
                )),
            }
            if tag.url.ends_with('/') || tag.url == tag.checksum_url {
                problems.push(format!("{what}: url must name the image file"));
            }
        }
    }
    problems
}

pub const OS_FAMILIES: [&str; 2] = ["systemd", "openrc"];
pub const FORMATS: [&str; 6] = ["qcow2", "raw", "vmdk", "vdi", "vhdx", "qed"];

/// Disk image format from a file extension.
pub fn format_from_extension(path: &str) -> Option<&'static str> {
    let ext = path.rsplit_once('.')?.1.to_ascii_lowercase();
    match ext.as_str() {
        "qcow2" | "qcow" => Some("qcow2"),
        "img" | "raw" => Some("raw"),
        "vmdk" => Some("vmdk"),
        "vdi" => Some("vdi"),
        "vhdx" => Some("vhdx"),
        "qed" => Some("qed"),
        _ => None,
    }
}

/// A string that names a local path rather than an alias or a volume name.
pub fn is_local_path(text: &str) -> bool {
    text.starts_with('/')
        || text.starts_with("./")
        || text.starts_with("../")
        || text.starts_with("~/")
        || text == "."
        || text == ".."
}

/// Whether `image:` names a local file rather than an alias.
pub fn is_image_path(text: &str) -> bool {
    is_local_path(text) || format_from_extension(text).is_some()
}

/// Resolves an alias reference. Errors list what is known.
pub fn resolve_alias(reference: &str) -> Result<(Image, &'static ImageAlias), String> {
    let table = table();
    let (name, tag) = match reference.split_once(':') {
        Some((n, t)) => (n, Some(t)),
        None => (reference, None),
    };
    let Some(alias) = table.find(name) else {
        let hint = crate::diag::did_you_mean(name, table.aliases())
            .map(|a| format!("did you mean {a:?}? "))
            .unwrap_or_default();
        return Err(format!(
            "unknown image alias {name:?}; {hint}use one of {} or a local image path such as ./disk.qcow2",
            table.aliases().join(", ")
        ));
    };
    let tag = tag.unwrap_or(&alias.default_tag);
    let found = alias
        .tags
        .iter()
        .find(|(name, entry)| *name == tag || entry.also.iter().any(|a| a == tag));
    let Some((tag, tag_entry)) = found else {
        let tags: Vec<&str> = alias
            .tags
            .iter()
            .flat_map(|(name, entry)| {
                std::iter::once(name.as_str()).chain(entry.also.iter().map(String::as_str))
            })
            .collect();
        return Err(format!(
            "image {name} has no tag {tag:?}; use one of {}",
            tags.join(", ")
        ));
    };
    Ok((
        Image {
            reference: reference.to_string(),
            alias: Some(alias.alias.clone()),
            tag: Some(tag.to_string()),
            path: None,
            format: tag_entry.format.clone(),
            os: alias.os.clone(),
        },
        alias,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_table_is_complete_and_consistent() {
        let table: ImageTable = toml::from_str(IMAGES_TOML).expect("share/images.toml parses");
        assert_eq!(table_problems(&table), Vec::<String>::new());
        assert_eq!(table.image.len(), REQUIRED_ALIASES.len());
        // The compiled-in table is the same one.
        assert_eq!(self::table().aliases(), table.aliases());
    }

    #[test]
    fn table_check_finds_each_kind_of_problem() {
        let bad: ImageTable = toml::from_str(
            r#"
[[image]]
alias = "ubuntu"
os = "sysv"
user = "u"
min_memory_mb = 512
default_tag = "lts"
[image.tags.Noble]
url = "http://a.example/x.img"
format = "iso"
checksum_url = "https://b.example/SUMS"
checksum_type = "md5"
[[image]]
alias = "ubuntu"
os = "systemd"
user = "u"
min_memory_mb = 512
default_tag = "a"
[image.tags.a]
also = ["a"]
url = "https://a.example/x.img"
format = "qcow2"
checksum_url = "https://b.example/SUMS"
checksum_type = "sha256"
"#,
        )
        .expect("parses");
        let text = table_problems(&bad).join("\n");
        for expected in [
            "alias alpine is missing",
            "alias ubuntu appears twice",
            "default tag lts is not one of its tags",
            "os \"sysv\"",
            "ubuntu:Noble: tag must be lower case",
            "format \"iso\"",
            "checksum_type \"md5\"",
            "ubuntu:Noble: url and checksum_url must be https://",
            "ubuntu:a: the checksum must come from the image's host",
            "ubuntu:a: the tag is named twice",
        ] {
            assert!(text.contains(expected), "{expected} not in:\n{text}");
        }
        let unknown = toml::from_str::<ImageTable>(
            "[[image]]\nalias = \"a\"\nos = \"systemd\"\nuser = \"u\"\nmin_memory_mb = 1\ndefault_tag = \"t\"\nmirror = \"x\"\n[image.tags.t]\nurl = \"u\"\nformat = \"qcow2\"\nchecksum_url = \"c\"\nchecksum_type = \"sha256\"\n",
        );
        assert!(unknown.is_err(), "unknown keys are refused");
    }

    #[test]
    fn resolves_aliases_and_reports_unknown_ones() {
        let (image, _) = resolve_alias("ubuntu:noble").unwrap();
        assert_eq!(
            (image.alias.as_deref(), image.tag.as_deref()),
            (Some("ubuntu"), Some("noble"))
        );
        assert_eq!(resolve_alias("alpine").unwrap().0.os, "openrc");
        let err = resolve_alias("ubuntoo").unwrap_err();
        assert!(
            err.contains("alpine") && err.contains("centos-stream"),
            "{err}"
        );
        assert!(resolve_alias("ubuntu:warty").unwrap_err().contains("noble"));
    }

    #[test]
    fn infers_formats_from_extensions() {
        assert_eq!(format_from_extension("./db.qcow2"), Some("qcow2"));
        assert_eq!(format_from_extension("disk.IMG"), Some("raw"));
        assert_eq!(format_from_extension("ubuntu:noble"), None);
        assert!(is_image_path("postgres-cloud.qcow2") && !is_image_path("alpine"));
    }
}
