//! `holos volumes export|import|snapshot|snapshots|snapshot-rm|
//! snapshot-restore|resize` with the fake QEMU (online snapshots through
//! QMP) and the real qemu-img: what needs the volume closed refuses while a
//! running instance attaches it, naming the instance.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::runtime_support;
use runtime_support::qemu_img::{info, same_contents, snapshot_names, write_pattern};
use runtime_support::{Project, Qemu, fails, stdout};

const COMPOSE: &str = "name: vols\nservices:\n  db:\n    image: ./base.qcow2\n    stop_grace_period: 1s\n    volumes: [data:/var/lib/db]\nvolumes:\n  data: {size: 16M}\n";

/// The `sh -c` scripts of the seed's bootcmd.
fn bootcmd_scripts(seed: &Path) -> Vec<String> {
    use hadris_iso::read::IsoImage;
    use saphyr::{LoadableYamlNode, Yaml};
    let iso = IsoImage::open(std::fs::File::open(seed).unwrap()).unwrap();
    let entry = iso.find_path("user-data").unwrap().expect("user-data");
    let user_data = String::from_utf8(iso.read_file(&entry).unwrap()).unwrap();
    let docs = Yaml::load_from_str(&user_data).unwrap();
    docs[0]["bootcmd"]
        .as_vec()
        .expect("bootcmd")
        .iter()
        .filter_map(|c| c.as_vec().and_then(|argv| argv.get(2)))
        .filter_map(|s| s.as_str().map(str::to_string))
        .collect()
}

#[test]
#[ignore = "needs qemu-img and qemu-io"]
fn volume_snapshots_exports_imports_and_resizes_refuse_a_running_user_where_they_must() {
    test_support::require_tools(&["qemu-img", "qemu-io"], "apt-get install qemu-utils");
    let p = Project::new(COMPOSE, Qemu::Fake);
    p.ok(&["up", "--no-wait"]);
    let data = p.state().join("volumes/vols/data.qcow2");
    assert_boot_grows_the_volume(&p);

    // Online: the snapshot goes through the running QEMU's vol0 drive.
    assert_eq!(stdout(&p, &["volumes", "snapshot", "data", "s1"]), "s1\n");
    assert_eq!(snapshot_names(&data), ["s1"]);
    let said = fails(&p, &["volumes", "snapshot", "data", "s1"]);
    assert!(
        said.contains("volume data already has a snapshot s1"),
        "{said}"
    );
    let listed: Value =
        serde_json::from_str(&stdout(&p, &["volumes", "snapshots", "data", "--json"])).unwrap();
    assert_eq!(listed[0]["name"], "s1");
    p.ok(&["volumes", "snapshot", "data", "s2"]);
    p.ok(&["volumes", "snapshot-rm", "data", "s2"]);
    assert_eq!(snapshot_names(&data), ["s1"]);

    // What needs the volume closed names the running instance.
    for (args, what) in [
        (
            &["volumes", "snapshot-restore", "data", "s1"][..],
            "restore",
        ),
        (&["volumes", "export", "data"][..], "export"),
    ] {
        let said = fails(&p, args);
        assert!(
            said.contains(&format!(
                "cannot {what} volume data of project vols: db-0 running and attaches it; stop it with holos stop first"
            )),
            "{args:?}: {said}"
        );
    }
    let exported = p.path().join("s1.qcow2");
    p.ok(&[
        "volumes",
        "export",
        "data",
        "--snapshot",
        "s1",
        "-o",
        exported.to_str().unwrap(),
    ]);
    assert_eq!(info(&exported)["backing-filename"], Value::Null);

    p.ok(&["stop"]);
    write_pattern(&data, "qcow2", "0xab");
    assert!(!same_contents(&exported, &data));
    p.ok(&["volumes", "snapshot-restore", "data", "s1"]);
    assert!(same_contents(&exported, &data), "the volume is back at s1");
    let said = fails(&p, &["volumes", "snapshot-restore", "data", "nope"]);
    assert!(
        said.contains("volume data has no snapshot \"nope\"; it has: s1"),
        "{said}"
    );

    // Grow only, while stopped.
    let said = p.ok(&["volumes", "resize", "data", "32M"]);
    assert!(
        said.contains(
            "volume data grown from 16.0 MiB to 32.0 MiB while no instance runs with it; the guest grows its file system at its next boot"
        ),
        "{said}"
    );
    assert_eq!(info(&data)["virtual-size"], 32 * 1024 * 1024);
    let said = fails(&p, &["volumes", "resize", "data", "8M"]);
    assert!(
        said.contains("volume data is 32.0 MiB and holos only grows volumes"),
        "{said}"
    );

    let raw = import_replaces_the_volume(&p, &data);

    // Started again, it attaches the volume, which can no longer be replaced.
    p.ok(&["start"]);
    let said = fails(
        &p,
        &[
            "volumes",
            "import",
            "data",
            raw.to_str().unwrap(),
            "--force",
        ],
    );
    assert!(
        said.contains("cannot replace volume data of project vols: db-0 running"),
        "{said}"
    );
}

/// Every boot grows the mounted volume's file system to its disk: a
/// bootcmd of the seed, valid shell.
fn assert_boot_grows_the_volume(p: &Project) {
    let grow = bootcmd_scripts(&p.state().join("instances/vols/db-0/seed.iso"))
        .into_iter()
        .find(|s| s.contains("resize2fs"))
        .expect("a bootcmd that grows the volume");
    assert!(
        grow.starts_with("dev=/dev/disk/by-id/virtio-vol-data\ntarget=/var/lib/db\n"),
        "{grow}"
    );
    assert!(
        grow.contains("mountpoint -q \"$target\"")
            && grow.contains("holos: grew the file system of volume data"),
        "{grow}"
    );
    let syntax = Command::new("sh")
        .args(["-n", "-c", &grow])
        .status()
        .unwrap();
    assert!(syntax.success(), "{grow}");
}

/// Import: a raw image becomes the volume's contents, only with --force
/// over an existing volume; it exports the same. The raw image.
fn import_replaces_the_volume(p: &Project, data: &Path) -> PathBuf {
    let raw = p.path().join("disk.raw");
    std::fs::write(&raw, vec![0u8; 4 << 20]).unwrap();
    write_pattern(&raw, "raw", "0x5a");
    let said = fails(p, &["volumes", "import", "data", raw.to_str().unwrap()]);
    assert!(
        said.contains("volume data of project vols exists") && said.contains("pass --force"),
        "{said}"
    );
    p.ok(&[
        "volumes",
        "import",
        "data",
        raw.to_str().unwrap(),
        "--force",
    ]);
    assert_eq!(info(data)["format"], "qcow2");
    assert!(same_contents(&raw, data));
    p.ok(&["volumes", "import", "extra", raw.to_str().unwrap()]);
    let table = stdout(p, &["volumes", "ls"]);
    assert!(table.lines().any(|l| l.starts_with("extra ")), "{table}");
    let copy = p.path().join("data-copy.qcow2");
    p.ok(&["volumes", "export", "data", "-o", copy.to_str().unwrap()]);
    assert!(same_contents(&copy, &raw));
    raw
}

/// An `ssh` that answers as a guest whose resize2fs grew the file system:
/// logs its arguments to `$FAKE_SSH_LOG` and prints what resize2fs prints.
const GUEST_THAT_GROWS: &str = r#"#!/bin/sh
printf '%s\n' "$*" >> "$FAKE_SSH_LOG"
echo "resize2fs 1.47.0 (5-Feb-2023)"
echo "Filesystem at /dev/vdb is mounted on /var/lib/db; on-line resizing required"
echo "The filesystem on /dev/vdb is now 12288 (4k) blocks long."
"#;

/// `volumes resize` on a volume that a running instance attaches: QMP
/// `block_resize` on its drive grows the disk at once, then resize2fs runs
/// in the guest over SSH; when the guest cannot grow the file system now,
/// the next boot does, and the message says which happened.
#[test]
#[ignore = "needs qemu-img"]
fn resize_grows_a_volume_online_and_says_how() {
    use std::os::unix::fs::PermissionsExt;
    runtime_support::require_qemu_img();
    let p = Project::new(COMPOSE, Qemu::Fake);
    let ssh = p.path().join("bin/ssh");
    let install_ssh = |script: &str| {
        std::fs::write(&ssh, script).unwrap();
        std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    // The tests' ssh runs the remote command on this host, where the
    // volume's disk is not: the guest half fails and says why.
    install_ssh(crate::plugin_support::FAKE_SSH);
    let log = p.path().join("ssh.log");
    let resize = |size: &str| {
        let out = p
            .holos(&["volumes", "resize", "data", size])
            .env("FAKE_SSH_LOG", &log)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{said}");
        said
    };
    p.ok(&["up", "--no-wait"]);
    let data = p.state().join("volumes/vols/data.qcow2");
    let said = resize("32M");
    assert!(
        said.contains(
            "volume data grown from 16.0 MiB to 32.0 MiB online: in running db-0 (QMP block_resize); its file system could not be grown now (/dev/disk/by-id/virtio-vol-data is not in the guest), so the guest grows it at its next boot"
        ),
        "{said}"
    );
    assert_eq!(info(&data)["virtual-size"], 32 * 1024 * 1024);
    let call = std::fs::read_to_string(&log).unwrap();
    let port = p.ps()[0]["ssh_port"].to_string();
    assert!(
        call.contains(&format!("-p {port} "))
            && call.contains("sudo -n sh -c")
            && call.contains("resize2fs"),
        "{call}"
    );

    install_ssh(GUEST_THAT_GROWS);
    let said = resize("48M");
    assert!(
        said.contains(
            "volume data grown from 32.0 MiB to 48.0 MiB online: in running db-0 (QMP block_resize), and its file system with resize2fs in the guest"
        ),
        "{said}"
    );
    assert_eq!(info(&data)["virtual-size"], 48 * 1024 * 1024);
    let said = resize("48M");
    assert!(
        said.contains("volume data is 48.0 MiB already; nothing to do"),
        "{said}"
    );
    let calls = std::fs::read_to_string(&log)
        .unwrap()
        .matches("BatchMode=yes")
        .count();
    assert_eq!(calls, 2, "nothing to grow, no ssh");
    p.ok_with(p.holos(&["down"]).env("FAKE_QEMU_POWERDOWN_DELAY_MS", "0"));
}

/// The children of `pid` (from `/proc/*/stat`).
fn children_of(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
        let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        if after_name.split_whitespace().nth(1) == Some(pid.to_string().as_str()) {
            found.push(child);
        }
    }
    found
}

/// The bytes written so far to any file of `dir`.
fn bytes_in(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

#[test]
#[ignore = "needs qemu-img"]
fn an_export_killed_midway_leaves_no_file_under_the_final_name_and_the_next_one_is_whole() {
    runtime_support::require_qemu_img();
    let p = Project::new(COMPOSE, Qemu::Fake);
    // 96 MiB of data that does not compress: the copy takes a while.
    let raw = p.path().join("random.raw");
    let mut bytes = vec![0u8; 96 << 20];
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    for chunk in bytes.chunks_mut(8) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        chunk.copy_from_slice(&state.to_le_bytes()[..chunk.len()]);
    }
    std::fs::write(&raw, &bytes).unwrap();
    drop(bytes);
    p.ok(&["volumes", "import", "data", raw.to_str().unwrap()]);
    let out_dir = p.path().join("exports");
    std::fs::create_dir(&out_dir).unwrap();
    let target = out_dir.join("data.qcow2");

    let mut export = p
        .holos(&["volumes", "export", "data", "-o", target.to_str().unwrap()])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let copier = loop {
        let children = children_of(export.id());
        if !children.is_empty() && bytes_in(&out_dir) > 1 << 20 {
            break children;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the export never started writing"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    // As a closed terminal or a stopped unit ends it: holos and its qemu-img.
    for pid in std::iter::once(export.id()).chain(copier) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    export.wait().unwrap();
    assert!(
        !target.exists(),
        "a killed export left {} under the final name",
        target.display()
    );

    p.ok(&["volumes", "export", "data", "-o", target.to_str().unwrap()]);
    let data = p.state().join("volumes/vols/data.qcow2");
    assert!(
        same_contents(&target, &data),
        "the export holds the volume's data"
    );
    let names: Vec<String> = std::fs::read_dir(&out_dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        ["data.qcow2"],
        "the killed export's partial file is cleaned"
    );
}

/// `volumes import` of a file that is no disk image is refused with the
/// reason; a resize by a few bytes says the exact sizes, which the rounded
/// ones would show as equal.
#[test]
#[ignore = "needs qemu-img"]
fn import_refuses_a_text_file_and_a_small_resize_shows_exact_sizes() {
    runtime_support::require_qemu_img();
    let p = Project::new(COMPOSE, Qemu::Fake);
    let text = p.path().join("notes.txt");
    std::fs::write(&text, "not a disk\n").unwrap();
    let said = fails(&p, &["volumes", "import", "data", text.to_str().unwrap()]);
    assert!(
        said.contains("notes.txt is not a disk image (no format's signature, and its size is not a whole number of 512-byte sectors)"),
        "{said}"
    );
    assert!(!p.state().join("volumes/vols/data.qcow2").exists());

    p.ok(&["up", "--no-wait"]);
    p.ok(&["stop"]);
    let said = p.ok(&["volumes", "resize", "data", "16777728"]);
    assert!(
        said.contains(
            "volume data grown from 16.0 MiB (16777216 bytes) to 16.0 MiB (16777728 bytes)"
        ),
        "{said}"
    );
}
