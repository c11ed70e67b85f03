//! `holo import-ccm MANIFEST.yaml [--to DIR]`: a CCM manifest as holo
//! resource files and data.

/// Entry point of `holo import-ccm`; returns the exit code.
pub fn main(_args: &[String]) -> i32 {
    2
}
