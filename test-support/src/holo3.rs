//! Holo 3 (the Go reference implementation), built offline from its
//! checkout for the tests that compare with it or switch a root between it
//! and us.

use std::path::Path;
use std::process::Command;

/// Builds Holo 3 from the checkout `source` with the Go toolchain `go`
/// into `binary`, offline (vendored modules, no proxy, no toolchain
/// download), with the build cache in `go_cache` (a test passes a
/// directory below `CARGO_TARGET_TMPDIR`; `GOCACHE` wins when set). One
/// binary is the driver and every Go plugin: it acts as the one it is run
/// as (`holo`, `holo-files`, `holo-users-groups`, `holo-ssh-keys`), so
/// link it under those names.
#[track_caller]
pub fn build(source: &Path, go: &Path, binary: &Path, go_cache: &Path) {
    let built = Command::new(go)
        .args(["build", "-o"])
        .arg(binary)
        .arg(".")
        .current_dir(source)
        .env("GOFLAGS", "-mod=vendor")
        .env("GOPROXY", "off")
        .env("GOTOOLCHAIN", "local")
        .env(
            "GOCACHE",
            std::env::var_os("GOCACHE").unwrap_or_else(|| go_cache.into()),
        )
        .output()
        .unwrap_or_else(|err| panic!("cannot run {}: {err}", go.display()));
    assert!(
        built.status.success(),
        "building Holo 3 in {} failed:\n{}",
        source.display(),
        String::from_utf8_lossy(&built.stderr)
    );
}
