//! Holo 3 for the tests that compare with it or switch to and from it: the
//! checkout named by `HOLO3_SOURCE`, and its one Go binary (driver and Go
//! plugins, chosen by the name it is run as), built offline from the
//! checkout's vendored modules.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The Holo 3 checkout in `HOLO3_SOURCE`, or a failure naming it.
#[track_caller]
pub fn require_source() -> PathBuf {
    let source = PathBuf::from(crate::require_env(
        "HOLO3_SOURCE",
        "a checkout of holocm/holo v3, e.g. tag v3.0.1",
    ));
    assert!(
        source.join("util/holo-test").is_file() && source.join("test").is_dir(),
        "HOLO3_SOURCE={} is not a Holo 3 checkout (no util/holo-test or test/); point it at a checkout of holocm/holo v3",
        source.display()
    );
    source
}

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
