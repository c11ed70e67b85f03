//! The system-facing side: HTTP(S) downloads and the archive's status.

pub mod http;
