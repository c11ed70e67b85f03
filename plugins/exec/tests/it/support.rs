//! What the test modules share.

use std::path::Path;
use test_support::escapes::Escapes;

/// `holo-exec ARGS` with holo's environment for the root of `escapes`.
pub fn run(escapes: &Escapes, args: &[&str]) -> std::process::Output {
    escapes
        .plugin(Path::new(env!("CARGO_BIN_EXE_holo-exec")), "exec")
        .args(args)
        .output()
}
