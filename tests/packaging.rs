//! The Debian packages from packaging/debian/build-debs: each plugin package
//! drops its binary, its holorc snippet and its resource directory, and a
//! root made only of the unpacked packages runs `holo apply`.

use std::path::Path;
use std::process::Command;

#[test]
fn unpacked_packages_make_a_working_holo() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = tempfile::tempdir().unwrap();
    let build = Command::new(repo.join("packaging/debian/build-debs"))
        .args(["--profile", "debug"])
        .arg(out.path())
        .output()
        .expect("build-debs runs");
    assert!(
        build.status.success(),
        "build-debs failed:\n{}",
        String::from_utf8_lossy(&build.stderr)
    );
    let mut debs: Vec<String> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    debs.sort_by_key(|d| d.split('_').next().unwrap_or("").to_string());
    let names: Vec<&str> = debs.iter().map(|d| d.split('_').next().unwrap()).collect();
    assert_eq!(names, ["holo", "holo-file", "holo-package", "holo-vms"]);

    let root = tempfile::tempdir().unwrap();
    for deb in &debs {
        let status = Command::new("dpkg-deb")
            .arg("-x")
            .arg(out.path().join(deb))
            .arg(root.path())
            .status()
            .unwrap();
        assert!(status.success(), "dpkg-deb -x {deb}");
    }
    let root = root.path();
    for path in [
        "usr/bin/holo",
        "usr/bin/holo-test",
        "usr/bin/holos",
        "usr/lib/holo/holo-file",
        "usr/lib/holo/holo-package",
        "usr/lib/holo/holo-vms",
        "etc/holorc.d/10-package",
        "etc/holorc.d/20-file",
        "usr/share/man/man8/holo.8.gz",
        "usr/share/man/man8/holo-vms.8.gz",
        "usr/share/man/man1/holos.1.gz",
        "usr/share/man/man5/holorc.5.gz",
    ] {
        assert!(root.join(path).exists(), "{path} is not in the packages");
    }
    for id in ["file", "package", "vms"] {
        assert!(
            root.join("usr/share/holo").join(id).is_dir(),
            "resource dir {id}"
        );
    }
    let conffiles = Command::new("dpkg-deb")
        .args(["-I"])
        .arg(out.path().join(&debs[1]))
        .arg("conffiles")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&conffiles.stdout),
        "/etc/holorc.d/20-file\n"
    );

    // The unpacked root is a test-mode root: declare one file and apply it.
    std::fs::create_dir_all(root.join("tmp")).unwrap();
    std::fs::create_dir_all(root.join("run")).unwrap();
    std::fs::write(root.join("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n").unwrap();
    std::fs::write(root.join("etc/group"), "root:x:0:\n").unwrap();
    std::fs::write(
        root.join("usr/share/holo/file/motd.toml"),
        "[[file]]\nname = \"/etc/motd\"\ncontent = \"hello\\n\"\nowner = \"root\"\ngroup = \"root\"\nmode = \"0644\"\n",
    )
    .unwrap();
    let apply = Command::new(root.join("usr/bin/holo"))
        .arg("apply")
        .env("HOLO_ROOT_DIR", root)
        .env("TMPDIR", root.join("tmp"))
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&apply.stdout),
        String::from_utf8_lossy(&apply.stderr)
    );
    assert_eq!(apply.status.code(), Some(0), "{text}");
    assert!(!text.contains("!!"), "{text}");
    assert!(text.contains("file:/etc/motd"), "{text}");
    assert_eq!(
        std::fs::read_to_string(root.join("etc/motd")).unwrap(),
        "hello\n"
    );
}
