//! The crate's integration tests, one binary: one module per area. The
//! tests that run the `holos` binary live with holo-vms.

mod no_panic;
