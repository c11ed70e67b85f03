//! A script of the resource directory as an entity, `script:NAME`.

use serde::{Deserialize, Serialize};

/// The prefix of every entity id of this plugin.
pub const ENTITY_PREFIX: &str = "script:";

/// The entity id of the script named `name`.
pub fn entity_id(name: &str) -> String {
    format!("{ENTITY_PREFIX}{name}")
}

/// What scan hands to apply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Script {
    /// The file's name in the resource directory.
    pub name: String,
    /// Whether it has an execute bit (after following a symlink).
    pub executable: bool,
}

/// Whether a directory entry is taken as a script: hidden files (`.keep`)
/// are not.
pub fn is_script_name(name: &str) -> bool {
    !name.is_empty() && !name.starts_with('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_entity_id_is_the_file_name() {
        assert_eq!(entity_id("01-setup.sh"), "script:01-setup.sh");
    }

    #[test]
    fn hidden_files_are_not_scripts() {
        assert!(is_script_name("01-setup.sh"));
        assert!(!is_script_name(".keep"));
    }
}
