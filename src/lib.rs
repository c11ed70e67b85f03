//! The holo driver.
