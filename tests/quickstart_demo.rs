//! The README's first Quickstart command, `share/examples/demo`, works on a
//! clean checkout: it builds the workspace, applies the example root in test
//! mode and changes nothing in the repository.

use std::path::Path;
use std::process::Command;

#[test]
fn the_demo_applies_the_example_root_cleanly() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let before = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["status", "--porcelain", "share"])
        .output();
    let output = Command::new(repo.join("share/examples/demo"))
        .env_remove("HOLO_ROOT_DIR")
        .output()
        .expect("the demo script runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(!text.contains("!!"), "{text}");
    for entity in [
        "package:nginx",
        "package:vim",
        "file:/etc/motd",
        "file:/srv/www/index.html",
    ] {
        assert!(text.contains(entity), "{entity} missing:\n{text}");
    }
    assert!(
        text.contains("MOCK: apt-get install -y -q -o DPkg::Options::=--force-confold nginx"),
        "{text}"
    );
    // the repository is untouched (when git can tell)
    if let (Ok(before), Ok(after)) = (
        before,
        Command::new("git")
            .arg("-C")
            .arg(repo)
            .args(["status", "--porcelain", "share"])
            .output(),
    ) {
        assert_eq!(before.stdout, after.stdout, "the demo changed share/");
    }
    let root = text
        .lines()
        .find_map(|l| l.strip_prefix("example root: "))
        .expect("the demo names its root");
    let motd = std::fs::read_to_string(Path::new(root).join("etc/motd")).expect("motd written");
    assert!(
        motd.starts_with("Welcome to web01 (Debian GNU/Linux 12 (bookworm), 2 CPUs)."),
        "{motd}"
    );
    let _ = std::fs::remove_dir_all(root);
}
