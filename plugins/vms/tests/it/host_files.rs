//! holo-vms, run by holo (as root in real use), reads a config or secret
//! `file:` only inside the project's directory unless the compose file
//! allows host files with `x-holo: {allow_host_files: true}`, at the top
//! level or on the definition; `holos` run by hand reads any file its user
//! may read.

use crate::plugin_support::Root;

fn compose(root: &Root, secret: &str, top: &str, definition: &str) -> std::path::PathBuf {
    root.compose(
        "vault",
        &format!(
            "services:\n  app:\n    image: {image}\n    image_format: qcow2\n    image_os: systemd\n    secrets: [token]\nsecrets:\n  token:\n    file: {secret}\n{definition}{top}",
            image = root.image()
        ),
    );
    root.path().join("usr/share/holo/vms/vault/holos.yaml")
}

#[test]
fn a_secret_outside_the_project_directory_needs_x_holo_allow_host_files() {
    let root = Root::new();
    let file = compose(&root, "/etc/hostname", "", "");
    let (code, text) = root.holo_text(&["scan"]);
    assert_ne!(code, 0, "{text}");
    assert!(
        text.contains(&format!(
            "{}:9:11: secrets.token.file: /etc/hostname is outside the project directory",
            file.display()
        )) && text.contains("x-holo: {allow_host_files: true}"),
        "{text}"
    );
    // A link inside the directory that leads out counts as what it leads to.
    std::os::unix::fs::symlink(
        "/etc/hostname",
        root.path().join("usr/share/holo/vms/vault/token"),
    )
    .unwrap();
    compose(&root, "./token", "", "");
    let (code, text) = root.holo_text(&["scan"]);
    assert_ne!(code, 0, "{text}");
    assert!(text.contains("is outside the project directory"), "{text}");

    // Allowed for the whole file, or for the one secret.
    compose(
        &root,
        "/etc/hostname",
        "x-holo: {allow_host_files: true}\n",
        "",
    );
    let (code, text) = root.holo_text(&["scan"]);
    assert_eq!(code, 0, "{text}");
    compose(
        &root,
        "/etc/hostname",
        "",
        "    x-holo: {allow_host_files: true}\n",
    );
    let (code, text) = root.holo_text(&["scan"]);
    assert_eq!(code, 0, "{text}");

    // `holos` run by hand reads the file as its user may.
    compose(&root, "/etc/hostname", "", "");
    let out = root
        .holos(&["-f", file.to_str().unwrap(), "config"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_secret_inside_the_project_directory_is_read() {
    let root = Root::new();
    std::fs::create_dir_all(root.path().join("usr/share/holo/vms/vault")).unwrap();
    std::fs::write(
        root.path().join("usr/share/holo/vms/vault/token"),
        "t0ken\n",
    )
    .unwrap();
    compose(&root, "./token", "", "");
    let (code, text) = root.holo_text(&["scan"]);
    assert_eq!(code, 0, "{text}");
}
