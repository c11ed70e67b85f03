//! holos's crates follow its layers: the app (holo-vms) depends on the
//! runtime, the runtime on the compose model and the SDK, never back; clap
//! appears only in the app, and the compose model is a pure library: no
//! HTTP client, TLS or process runner (not even through the SDK). Read from
//! `cargo tree`.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// The packages `crate_name` depends on as a library (normal edges only,
/// itself included), by name.
fn normal_dependencies(crate_name: &str) -> BTreeSet<String> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let output = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["tree", "--offline", "-e", "normal", "--prefix", "none"])
        .args(["--format", "{p}", "-p", crate_name])
        .current_dir(&workspace)
        .output()
        .expect("run cargo tree");
    assert!(
        output.status.success(),
        "cargo tree -p {crate_name}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

#[test]
fn the_app_depends_on_the_runtime_the_runtime_on_compose_never_back() {
    let app = normal_dependencies("holo-vms");
    assert!(app.contains("holos-runtime") && app.contains("holos-compose") && app.contains("clap"));

    let runtime = normal_dependencies("holos-runtime");
    assert!(runtime.contains("holos-compose"), "{runtime:?}");
    let compose = normal_dependencies("holos-compose");
    assert!(compose.contains("holo-checksum"), "{compose:?}");
    for (name, dependencies, above) in [
        (
            "holos-runtime",
            &runtime,
            &["holo-vms", "clap", "clap_complete"][..],
        ),
        (
            "holos-compose",
            &compose,
            &["holo-vms", "holos-runtime", "clap", "clap_complete"][..],
        ),
    ] {
        for forbidden in above {
            assert!(
                !dependencies.contains(*forbidden),
                "{name} depends on {forbidden}: the layers are app, runtime, compose, SDK, never back"
            );
        }
    }
}

#[test]
fn the_compose_model_needs_no_http_client_tls_or_process_runner() {
    let compose = normal_dependencies("holos-compose");
    for forbidden in [
        "holo-plugin",
        "ureq",
        "rustls",
        "ring",
        "process-wrap",
        "nix",
    ] {
        assert!(
            !compose.contains(forbidden),
            "holos-compose depends on {forbidden}: the compose model is a pure library \
             (checksum algorithms come from holo-checksum, not the SDK's download feature)"
        );
    }
}
