//! Where holo-files faces the system: files and links (`fs.rs`), the
//! repository and the stored bases (`repository.rs`), holoscripts and
//! patches (`filter.rs`), and the package managers' leftovers
//! (`platform.rs`).

pub mod filter;
pub mod fs;
pub mod platform;
pub mod repository;
