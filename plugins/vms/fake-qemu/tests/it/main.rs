//! The integration tests of the fake QEMU, one binary: one module per area.
//! They also make `cargo test --workspace` build the fake, which the tests
//! of holo-vms run.

mod fake_qemu;
