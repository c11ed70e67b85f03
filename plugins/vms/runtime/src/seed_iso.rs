//! The NoCloud seed disk: an ISO 9660 image with Joliet and Rock Ridge names
//! and the volume id `cidata`, holding `meta-data`, `user-data` and
//! `network-config`. Written in-process, so no `genisoimage` is needed.

use std::io::Cursor;

use hadris_iso::joliet::JolietLevel;
use hadris_iso::read::PathSeparator;
use hadris_iso::rrip::RripOptions;
use hadris_iso::write::options::{BaseIsoLevel, CreationFeatures, IsoFormatOptions};
use hadris_iso::write::{InputEntry, InputMetadata, InputTree, IsoImageWriter};

use crate::cloud_init::SeedDocuments;
use crate::error::Error;

/// The volume id cloud-init's NoCloud source looks for.
pub const VOLUME_ID: &str = "cidata";

/// The image bytes.
pub fn build(documents: &SeedDocuments) -> Result<Vec<u8>, Error> {
    let readable = InputMetadata {
        mode: Some(0o644),
        uid: Some(0),
        gid: Some(0),
        ..InputMetadata::default()
    };
    let entries = [
        ("meta-data", &documents.meta_data),
        ("user-data", &documents.user_data),
        ("network-config", &documents.network_config),
    ]
    .into_iter()
    .map(|(name, text)| InputEntry::file(name, text.as_bytes().to_vec()).with_metadata(readable))
    .collect();
    let options = IsoFormatOptions {
        volume_name: VOLUME_ID.to_string(),
        system_id: None,
        volume_set_id: None,
        publisher_id: None,
        preparer_id: None,
        application_id: Some("holos".to_string()),
        sector_size: 2048,
        path_separator: PathSeparator::ForwardSlash,
        // The id must stay lower-case: cloud-init matches `cidata` exactly
        // (or `CIDATA`), and blkid reports what is stored.
        strict_charset: false,
        features: CreationFeatures {
            filenames: BaseIsoLevel::Level2 {
                supports_lowercase: false,
                supports_rrip: true,
            },
            joliet: Some(JolietLevel::Level3),
            rock_ridge: Some(RripOptions::default()),
            ..CreationFeatures::default()
        },
    };
    let tree = InputTree::new(PathSeparator::ForwardSlash, entries);
    let written = IsoImageWriter::create(Cursor::new(Vec::new()), tree, options)
        .map_err(|e| Error::Instance(format!("cannot build the cloud-init seed image: {e}")))?;
    Ok(written.into_inner())
}
