//! The integration tests of the fake QEMU, one binary: one module per area.
//! They also make `cargo test --workspace` build the fake, which the tests
//! of holo-vms run.

// Test code: a failed step fails the test, so the helpers may unwrap as
// well as the #[test] functions (clippy.toml allows those).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod fake_qemu;
