//! The crate's integration tests, one binary: one module per area. The
//! tests that run `holos` (against a fake or a real QEMU) live with
//! holo-vms.

mod runtime_builders;
