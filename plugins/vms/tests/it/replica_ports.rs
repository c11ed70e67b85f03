//! What holos.yaml(5) says about a fixed host port with `replicas: 2`
//! holds: replica N publishes on the declared host port + N, as
//! `holos config --resolved` shows; and the page says it.

use std::process::Command;

#[test]
fn a_fixed_host_port_is_shifted_per_replica_as_the_page_says() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("holos.yaml");
    std::fs::write(
        &file,
        "services:\n  web:\n    image: debian\n    replicas: 2\n    ports: [\"9000:80\"]\n",
    )
    .expect("write");
    let output = Command::new(assert_cmd::cargo::cargo_bin!("holos"))
        .arg("-f")
        .arg(&file)
        .args(["config", "--resolved", "--format", "json"])
        .output()
        .expect("holos runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let resolved: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let host_ports: Vec<u64> = resolved["services"][0]["instances"]
        .as_array()
        .expect("instances")
        .iter()
        .map(|instance| {
            instance["ports"][0]["host_port"]
                .as_u64()
                .expect("host port")
        })
        .collect();
    assert_eq!(host_ports, [9000, 9001]);

    let page = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../man/holos.yaml.5"),
    )
    .expect("the page is readable");
    let page = page.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        page.contains("forwards 9000 to the first instance and 9001 to the second"),
        "holos.yaml(5) must say how replicas shift a fixed host port"
    );
}
