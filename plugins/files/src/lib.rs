//! holo-files: Holo 3's plugin of that name, in Rust: files below
//! `/usr/share/holo/files/DISAMBIGUATOR/` provisioned over the files that
//! packages installed (holo-files(8)).

pub mod apply;
pub mod converge;
pub mod model;
pub mod plugin;
pub mod provider;

pub use plugin::FilesPlugin;
