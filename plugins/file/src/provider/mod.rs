//! File providers. CCM's file type has one, Posix, and so do we.

pub mod posix;
