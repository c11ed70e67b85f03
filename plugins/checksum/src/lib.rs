//! holo-checksum: the digest algorithms a download can be checked against.
//!
//! A crate of its own with no dependencies, so that holos's compose model
//! can check a configured `checksum_type` without the SDK (and its HTTP
//! client and process runner); the SDK re-exports [`Algorithm`] from its
//! `download` module.

/// A digest algorithm a download can be checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    Sha256,
    Sha512,
}

impl Algorithm {
    /// `sha256` or `sha512`, as the name is written in configuration.
    pub fn parse(name: &str) -> Option<Algorithm> {
        match name.to_ascii_lowercase().as_str() {
            "sha256" => Some(Algorithm::Sha256),
            "sha512" => Some(Algorithm::Sha512),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Sha256 => "sha256",
            Algorithm::Sha512 => "sha512",
        }
    }

    /// Length of a digest in hex digits.
    pub fn hex_len(self) -> usize {
        match self {
            Algorithm::Sha256 => 64,
            Algorithm::Sha512 => 128,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Algorithm;

    #[test]
    fn names_parse_in_any_case_and_unknown_ones_do_not() {
        assert_eq!(Algorithm::parse("SHA512"), Some(Algorithm::Sha512));
        assert_eq!(Algorithm::parse("sha256"), Some(Algorithm::Sha256));
        assert_eq!(Algorithm::parse("md5"), None);
    }

    #[test]
    fn a_name_parses_back_to_its_algorithm_and_knows_its_hex_length() {
        for algorithm in [Algorithm::Sha256, Algorithm::Sha512] {
            assert_eq!(Algorithm::parse(algorithm.name()), Some(algorithm));
        }
        assert_eq!(Algorithm::Sha256.hex_len(), 64);
        assert_eq!(Algorithm::Sha512.hex_len(), 128);
    }
}
