//! What a disk image file is, from its first bytes: the format's signature,
//! or raw for a file of whole 512-byte sectors. A file that is neither (a
//! text file, an empty file) is not a disk image.

use std::io::Read;
use std::path::Path;

/// The signatures of the formats `image_format` accepts, but raw.
const SIGNATURES: [(&str, usize, &[u8]); 6] = [
    ("qcow2", 0, b"QFI\xfb"),
    ("qed", 0, b"QED\0"),
    ("vhdx", 0, b"vhdxfile"),
    ("vmdk", 0, b"KDMV"),
    ("vmdk", 0, b"# Disk DescriptorFile"),
    ("vdi", 0x40, b"\x7f\x10\xda\xbe"),
];

/// What [`sniff`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sniffed {
    /// A format's signature, or `raw`.
    Format(&'static str),
    /// No signature, and a size that is not a whole number of sectors.
    NotADisk,
}

/// The format of the image at `path`, and its virtual size where the
/// format says it cheaply (qcow2's header, a raw file's length).
pub fn sniff(path: &Path) -> std::io::Result<(Sniffed, Option<u64>)> {
    let mut file = std::fs::File::open(path)?;
    let length = file.metadata()?.len();
    let mut head = Vec::with_capacity(0x48);
    file.by_ref().take(0x48).read_to_end(&mut head)?;
    let found = SIGNATURES.iter().find(|(_, at, magic)| {
        head.get(*at..*at + magic.len())
            .is_some_and(|bytes| bytes == *magic)
    });
    Ok(match found {
        Some(("qcow2", _, _)) => (Sniffed::Format("qcow2"), qcow2_size(&head)),
        Some((format, _, _)) => (Sniffed::Format(format), None),
        None if length > 0 && length % 512 == 0 => (Sniffed::Format("raw"), Some(length)),
        None => (Sniffed::NotADisk, None),
    })
}

/// The virtual size in a qcow2 header (big-endian, bytes 24 to 32).
fn qcow2_size(head: &[u8]) -> Option<u64> {
    let bytes: [u8; 8] = head.get(24..32)?.try_into().ok()?;
    Some(u64::from_be_bytes(bytes))
}

/// Why `path` cannot be used as a disk of `declared` format, if it cannot.
pub fn mismatch(path: &Path, declared: &str) -> Option<String> {
    let (found, _) = match sniff(path) {
        Ok(sniffed) => sniffed,
        Err(e) => return Some(format!("cannot read {}: {e}", path.display())),
    };
    match found {
        Sniffed::NotADisk => Some(format!(
            "{} is not a disk image (no format's signature, and its size is not a whole number of 512-byte sectors)",
            path.display()
        )),
        // A raw image may hold anything, a signature too: only a raw
        // file declared as another format is certainly wrong.
        Sniffed::Format(format) if format != declared => Some(format!(
            "{} is a {format} image, not {declared} as image_format says; set image_format: {format}",
            path.display()
        )),
        Sniffed::Format(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sniffed(bytes: &[u8]) -> (Sniffed, Option<u64>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("disk");
        std::fs::write(&path, bytes).expect("write");
        sniff(&path).expect("sniff")
    }

    #[test]
    fn signatures_name_the_format_and_qcow2_its_virtual_size() {
        let mut qcow2 = b"QFI\xfb\0\0\0\x03".to_vec();
        qcow2.resize(24, 0);
        qcow2.extend_from_slice(&(64u64 << 20).to_be_bytes());
        assert_eq!(sniffed(&qcow2), (Sniffed::Format("qcow2"), Some(64 << 20)));
        assert_eq!(sniffed(&[0; 1024]), (Sniffed::Format("raw"), Some(1024)));
        assert_eq!(sniffed(b"not a disk\n"), (Sniffed::NotADisk, None));
        assert_eq!(sniffed(b""), (Sniffed::NotADisk, None));
        let mut vdi = vec![0; 0x40];
        vdi.extend_from_slice(b"\x7f\x10\xda\xbe");
        assert_eq!(sniffed(&vdi).0, Sniffed::Format("vdi"));
    }
}
