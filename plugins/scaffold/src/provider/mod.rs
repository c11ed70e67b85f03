//! The system-facing side: URL sources fetched and extracted into the cache.

pub mod url;
