//! Where the plugin faces the system: users' home directories and the
//! `authorized_keys` files in them.

pub mod posix;
