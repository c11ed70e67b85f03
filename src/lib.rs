//! The holo driver.
pub mod diff;
