//! The built-in image aliases (`share/images.toml`, compiled in).
//!
//! Resolving `image:` happens here: an alias with an optional tag, or a
//! local disk image whose format comes from `image_format` or its extension.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::manifest::Image;

const IMAGES_TOML: &str = include_str!("../../../share/images.toml");

#[derive(Clone, Debug, Deserialize)]
pub struct ImageTable {
    pub image: Vec<ImageAlias>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct ImageAlias {
    pub alias: String,
    pub os: String,
    pub user: String,
    pub min_memory_mb: u64,
    pub default_tag: String,
    pub tags: BTreeMap<String, ImageTag>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct ImageTag {
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

/// Whether `image:` names a local file rather than an alias.
pub fn is_image_path(text: &str) -> bool {
    crate::compose::paths::is_local_path(text) || format_from_extension(text).is_some()
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
    let Some(tag_entry) = alias.tags.get(tag) else {
        let tags: Vec<&str> = alias.tags.keys().map(String::as_str).collect();
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
    fn table_parses_and_lists_the_seed_aliases() {
        let table: ImageTable = toml::from_str(IMAGES_TOML).expect("share/images.toml parses");
        for alias in [
            "alpine",
            "arch",
            "debian",
            "ubuntu",
            "fedora",
            "almalinux",
            "rocky",
            "centos-stream",
        ] {
            let entry = table
                .find(alias)
                .unwrap_or_else(|| panic!("{alias} missing"));
            assert!(
                entry.tags.contains_key(&entry.default_tag),
                "{alias} default tag"
            );
            assert!(OS_FAMILIES.contains(&entry.os.as_str()));
        }
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
