//! What `ssh-keygen -l` prints for a key: `BITS SHA256:HASH COMMENT (TYPE)`,
//! computed here so that the plugin needs no OpenSSH.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use sha2::{Digest, Sha256};

use crate::model::KeyLine;

/// The `ssh-keygen -l` line of `key`, or why it cannot be read.
pub fn describe(key: &KeyLine) -> Result<String, String> {
    let blob = STANDARD
        .decode(key.identity.data.as_bytes())
        .map_err(|_| "the key data (the field after the type) is not base64".to_string())?;
    let key_type = key.identity.key_type.as_str();
    let (label, bits) = label_and_bits(key_type, &blob)?;
    let hash = STANDARD_NO_PAD.encode(Sha256::digest(&blob));
    let comment = match key.comment.as_str() {
        "" => "no comment",
        comment => comment,
    };
    Ok(format!("{bits} SHA256:{hash} {comment} ({label})"))
}

/// The type label and size ssh-keygen shows for a key of `key_type`.
fn label_and_bits(key_type: &str, blob: &[u8]) -> Result<(String, usize), String> {
    let mut fields = Fields(blob);
    let named = fields.string()?;
    if named != key_type.as_bytes() {
        return Err(format!(
            "the key data is a {} key, but the line says {key_type}",
            String::from_utf8_lossy(named)
        ));
    }
    let base = key_type.strip_suffix("-cert-v01@openssh.com");
    if base.is_some() {
        // A certificate: a nonce comes before the key's own fields.
        fields.string()?;
    }
    let (label, bits) = match base.unwrap_or(key_type) {
        "ssh-rsa" => {
            fields.string()?;
            ("RSA", bit_length(fields.string()?))
        }
        "ssh-dss" => ("DSA", bit_length(fields.string()?)),
        "ssh-ed25519" => ("ED25519", 256),
        "ssh-ed448" => ("ED448", 456),
        "sk-ssh-ed25519@openssh.com" => ("ED25519-SK", 256),
        "sk-ecdsa-sha2-nistp256@openssh.com" => ("ECDSA-SK", 256),
        other if other.starts_with("ecdsa-sha2-") => ("ECDSA", curve_bits(fields.string()?)?),
        other => return Err(format!("key type {other} is not known")),
    };
    let label = match base {
        Some(_) => format!("{label}-CERT"),
        None => label.to_string(),
    };
    Ok((label, bits))
}

fn curve_bits(curve: &[u8]) -> Result<usize, String> {
    match curve {
        b"nistp256" => Ok(256),
        b"nistp384" => Ok(384),
        b"nistp521" => Ok(521),
        other => Err(format!(
            "curve {} is not known",
            String::from_utf8_lossy(other)
        )),
    }
}

/// The bits of an mpint without its leading zeros.
fn bit_length(number: &[u8]) -> usize {
    let digits: Vec<u8> = number.iter().copied().skip_while(|b| *b == 0).collect();
    match digits.first() {
        Some(first) => digits.len() * 8 - first.leading_zeros() as usize,
        None => 0,
    }
}

/// The length-prefixed fields of a key blob.
struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    fn string(&mut self) -> Result<&'a [u8], String> {
        let truncated = || "the key data ends early".to_string();
        let (len, rest) = self.0.split_first_chunk::<4>().ok_or_else(truncated)?;
        let len = u32::from_be_bytes(*len) as usize;
        if rest.len() < len {
            return Err(truncated());
        }
        let (field, rest) = rest.split_at(len);
        self.0 = rest;
        Ok(field)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// key0 of Holo 3's ssh-keys fixtures and what ssh-keygen -l says of it.
    const KEY0: &str = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC9lA02DybCuFKOMhcvCTgUphvpGht1waGT93RvqXYBTGKUcJYz09abjaArAv/dQGnX8gjYogwzXvre5tRZiLaGvpMBRQvozSU9NVQSZs4Qv6wXGEqS7eFc7A+sCQFBhFy7H86woJhWa47L7c7TzX0OD9mjksJrH8AZON4Vv3gUDJjQqfAx8HAF8l96VHuaM+DVnYYcZjRUTyt1kLH40Wi/v/R8LF74Nq9Ah72I8KGEHOB+4xoz5VX3flur1md2MYOdBFOOwFERJMqjp3ZQ2KErdq/UcPE92O89yIMGbaACL9pObh3K3oR5SHitw2nz4oveunZh0yOfLsubIazfHoIn user@key0";

    #[test]
    fn an_rsa_key_is_described_as_ssh_keygen_does() {
        let key = KeyLine::parse(KEY0).unwrap();
        assert_eq!(
            describe(&key).unwrap(),
            "2048 SHA256:BPwneuiBV/tqWEUSKBdXI1uFAgwP5J5Opw17Gw7xEkY user@key0 (RSA)"
        );
    }

    #[test]
    fn a_key_without_comment_says_no_comment() {
        let line = KEY0.trim_end_matches(" user@key0");
        let described = describe(&KeyLine::parse(line).unwrap()).unwrap();
        assert!(described.ends_with(" no comment (RSA)"), "{described}");
    }

    #[test]
    fn an_ed25519_key_has_256_bits() {
        let mut blob = Vec::new();
        for field in [b"ssh-ed25519".as_slice(), &[7u8; 32]] {
            blob.extend_from_slice(&(field.len() as u32).to_be_bytes());
            blob.extend_from_slice(field);
        }
        let line = format!("ssh-ed25519 {} me", STANDARD.encode(&blob));
        let described = describe(&KeyLine::parse(&line).unwrap()).unwrap();
        assert!(described.starts_with("256 SHA256:"), "{described}");
        assert!(described.ends_with(" me (ED25519)"), "{described}");
    }

    #[test]
    fn a_type_that_does_not_match_the_data_is_refused() {
        let line = KEY0.replacen("ssh-rsa", "ssh-ed25519", 1);
        let err = describe(&KeyLine::parse(&line).unwrap()).unwrap_err();
        assert!(err.contains("is a ssh-rsa key"), "{err}");
    }

    #[test]
    fn data_that_is_not_base64_is_refused() {
        let err = describe(&KeyLine::parse("ssh-rsa !!!! x").unwrap()).unwrap_err();
        assert!(err.contains("not base64"), "{err}");
    }
}
