//! Where the plugin faces the system: running a script.

pub mod posix;
