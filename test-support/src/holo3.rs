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

/// Builds Holo 3 from `source` into `output` with `go`, offline
/// (`-mod=vendor`, no proxy, the local toolchain); the Go build cache is
/// kept in the target directory unless `GOCACHE` says otherwise.
#[track_caller]
pub fn build(source: &Path, go: &Path, output: &Path) {
    let go_cache = crate::profile_dir().parent().map_or_else(
        || PathBuf::from("holo3-go-cache"),
        |target| target.join("tmp/holo3-go-cache"),
    );
    let build = Command::new(go)
        .args(["build", "-o"])
        .arg(output)
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
        build.status.success(),
        "building Holo 3 in {} failed:\n{}",
        source.display(),
        String::from_utf8_lossy(&build.stderr)
    );
}
