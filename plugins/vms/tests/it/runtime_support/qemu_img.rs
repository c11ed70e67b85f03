//! The real qemu-img and qemu-io on the test's disk images (`-U`: a running
//! fake QEMU holds no lock, but this is what a real one would need).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Runs `command`, which must succeed; its stdout.
fn succeeded(command: &mut Command) -> Vec<u8> {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `qemu-img info` of `image`, as JSON.
pub fn info(image: &Path) -> Value {
    let out = succeeded(
        Command::new("qemu-img")
            .args(["info", "-U", "--output=json"])
            .arg(image),
    );
    serde_json::from_slice(&out).unwrap()
}

/// The internal snapshots' names that qemu-img reads from `image`.
pub fn snapshot_names(image: &Path) -> Vec<String> {
    info(image)["snapshots"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect()
}

/// Writes 64 KiB of `pattern` (a byte such as `0xab`) at the start of `image`.
pub fn write_pattern(image: &Path, format: &str, pattern: &str) {
    succeeded(
        Command::new("qemu-io")
            .args(["-f", format, "-c", &format!("write -P {pattern} 0 64k")])
            .arg(image),
    );
}

/// Whether two images hold the same guest-visible bytes.
pub fn same_contents(a: &Path, b: &Path) -> bool {
    let out = Command::new("qemu-img")
        .args(["compare", "-U"])
        .arg(a)
        .arg(b)
        .output()
        .unwrap();
    match out.status.code() {
        Some(0) => true,
        Some(1) => false,
        other => panic!(
            "qemu-img compare: {other:?} {}",
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}
