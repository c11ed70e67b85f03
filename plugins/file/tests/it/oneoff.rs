//! `holo-file ensure PATH --PROPERTY VALUE` converges one file from flags as
//! `holo apply` would converge the same `[[file]]` table, and `holo-file
//! status PATH` prints the table that declares what is there.

use std::fs;
use std::path::Path;

use test_support::oneoff::{OneOffRoot, text};

fn root() -> OneOffRoot {
    let root = OneOffRoot::new("holo-file");
    root.write("etc/passwd", "root:x:0:0::/root:/bin/sh\n")
        .write("etc/group", "root:x:0:\n");
    root
}

const MOTD: &[&str] = &[
    "ensure",
    "/etc/motd",
    "--content",
    "hello\n",
    "--owner",
    "root",
    "--group",
    "root",
    "--mode",
    "0640",
];

#[test]
fn ensure_converges_once_and_then_reports_nothing() {
    let root = root();
    let first = root.run(MOTD);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let stdout = text(&first.stdout);
    assert!(
        stdout.starts_with("\nWorking on file:/etc/motd\n  found in holo-file ensure\n"),
        "{stdout}"
    );
    assert!(stdout.contains("      mode 0640\n"), "{stdout}");
    assert_eq!(
        fs::read_to_string(root.path("/etc/motd")).expect("motd"),
        "hello\n"
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(root.path("/etc/motd"))
        .expect("stat")
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777, 0o640);
    // One-off records are kept apart from holo's, so that the next holo run
    // does not scrub the file as a deleted resource.
    assert!(root.path("/var/lib/holo/ensure/file").is_dir());
    assert!(!root.path("/var/lib/holo/file").exists());
    let second = root.run(MOTD);
    assert_eq!(second.status.code(), Some(0));
    assert_eq!(text(&second.stdout), "");
    assert_eq!(text(&second.stderr), "");
}

#[test]
fn ensure_protects_manual_edits_like_holo_apply() {
    let root = root();
    assert_eq!(root.run(MOTD).status.code(), Some(0));
    fs::write(root.path("/etc/motd"), "edited\n").expect("edit");
    let refused = root.run(MOTD);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        text(&refused.stderr)
            .contains("!! Entity has been modified by user (use --force to overwrite)"),
        "{}",
        text(&refused.stderr)
    );
    assert_eq!(
        fs::read_to_string(root.path("/etc/motd")).expect("motd"),
        "edited\n"
    );
    let mut forced = MOTD.to_vec();
    forced.push("--force-apply");
    assert_eq!(root.run(&forced).status.code(), Some(0));
    assert_eq!(
        fs::read_to_string(root.path("/etc/motd")).expect("motd"),
        "hello\n"
    );
}

#[test]
fn ensure_uses_holos_records_when_holo_manages_the_entity() {
    let root = root();
    let records = root.path("/var/lib/holo/file");
    fs::create_dir_all(&records).expect("mkdir");
    fs::write(root.path("/etc/motd"), "hello\n").expect("motd");
    // What holo-file leaves after applying MOTD: the checksum of "hello\n".
    fs::write(
        records.join("file:%2Fetc%2Fmotd.toml"),
        "version = 1\nensure = \"present\"\nchecksum = \"sha256:5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03\"\nowner = 0\ngroup = 0\nmode = \"0600\"\n\n[original]\nkind = \"none\"\n",
    )
    .expect("record");
    let output = root.run(MOTD);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(!root.path("/var/lib/holo/ensure").exists());
    let record = fs::read_to_string(records.join("file:%2Fetc%2Fmotd.toml")).expect("record");
    assert!(record.contains("mode = \"0640\""), "{record}");
}

#[test]
fn noop_changes_nothing_and_exits_2() {
    let root = root();
    let mut noop = MOTD.to_vec();
    noop.push("--noop");
    let output = root.run(&noop);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    assert!(text(&output.stdout).starts_with("\nWorking on file:/etc/motd\n"));
    assert!(!root.path("/etc/motd").exists());
}

#[test]
fn bad_flags_name_the_flag_and_what_to_do() {
    let root = root();
    let typo = root.run(&["ensure", "/etc/motd", "--modee", "0644"]);
    assert_eq!(typo.status.code(), Some(1));
    assert!(
        text(&typo.stderr).starts_with(
            "!! holo-file ensure: unknown flag --modee (did you mean --mode?); the flags are the properties of a [[file]] table: --ensure, --content"
        ),
        "{}",
        text(&typo.stderr)
    );
    // A bad value gets the message the same table gets in a resource file.
    let invalid = root.run(&["ensure", "/etc/motd", "--owner", "root", "--group", "root"]);
    assert_eq!(invalid.status.code(), Some(1));
    assert_eq!(
        text(&invalid.stderr),
        "!! holo-file ensure: property `mode`: `mode` is required unless ensure = \"absent\" or \"link\", so that no file gets default permissions; add it\n"
    );
    assert!(!root.path("/etc/motd").exists());
}

#[test]
fn ensure_values_are_flags_of_their_own() {
    let root = root();
    let output = root.run(&[
        "ensure",
        "/srv/data",
        "--directory",
        "--owner",
        "0",
        "--group",
        "0",
        "--mode",
        "0750",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(root.path("/srv/data").is_dir());
    let link = root.run(&["ensure", "/srv/current", "--link", "--target", "data"]);
    assert_eq!(link.status.code(), Some(0), "{}", text(&link.stderr));
    assert_eq!(
        fs::read_link(root.path("/srv/current")).expect("link"),
        Path::new("data")
    );
}

#[test]
fn status_prints_the_table_that_declares_the_file() {
    let root = root();
    fs::write(
        root.path("/etc/sshd_config"),
        "Port 22\nBanner {{ none }}\n",
    )
    .expect("write");
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(
        root.path("/etc/sshd_config"),
        fs::Permissions::from_mode(0o600),
    )
    .expect("chmod");
    let output = root.run(&["status", "/etc/sshd_config"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let uid = std::os::unix::fs::MetadataExt::uid(
        &fs::metadata(root.path("/etc/sshd_config")).expect("stat"),
    );
    let owner = if uid == 0 {
        "\"root\"".to_string()
    } else {
        uid.to_string()
    };
    let gid = std::os::unix::fs::MetadataExt::gid(
        &fs::metadata(root.path("/etc/sshd_config")).expect("stat"),
    );
    let group = if gid == 0 {
        "\"root\"".to_string()
    } else {
        gid.to_string()
    };
    assert_eq!(
        text(&output.stdout),
        format!(
            "[[file]]\nname = \"/etc/sshd_config\"\ncontent = \"\"\"\nPort 22\nBanner {{{{ none }}}}\n\"\"\"\nensure = \"present\"\ngroup = {group}\nmode = \"0600\"\nowner = {owner}\ntemplate = false\n"
        )
    );
    // The table is ready for a resource file: ensure with it changes nothing.
    let table: toml::Table = toml::from_str(&text(&output.stdout)).expect("toml");
    let file = &table["file"][0];
    let again = root.run(&[
        "ensure",
        "/etc/sshd_config",
        "--content",
        file["content"].as_str().expect("content"),
        "--owner",
        file["owner"].to_string().trim_matches('"'),
        "--group",
        file["group"].to_string().trim_matches('"'),
        "--mode",
        "0600",
        "--template=false",
    ]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    assert_eq!(
        fs::read_to_string(root.path("/etc/sshd_config")).expect("read"),
        "Port 22\nBanner {{ none }}\n"
    );
    let absent = root.run(&["status", "/etc/nothing"]);
    assert_eq!(
        text(&absent.stdout),
        "[[file]]\nname = \"/etc/nothing\"\nensure = \"absent\"\n"
    );
}

#[test]
fn ensure_holds_the_lock_of_a_holo_run() {
    // Holo 3's words, as holo apply prints them: a live holder (pid 1,
    // older than the lock) keeps it.
    let root = root();
    fs::create_dir_all(root.path("/run")).expect("mkdir");
    fs::write(root.path("/run/holo.pid"), "1\n").expect("lock");
    let output = root.run(MOTD);
    assert_eq!(output.status.code(), Some(255));
    let lock = root.path("/run/holo.pid");
    let lock = lock.display();
    assert_eq!(
        text(&output.stderr),
        format!(
            "!! Cannot create lock file {lock}: open {lock}: file exists\nThis usually means that another instance of Holo is currently running.\nIf not, you can try to delete the lock file manually.\n"
        )
    );
    assert!(!root.path("/etc/motd").exists());
    fs::remove_file(root.path("/run/holo.pid")).expect("unlock");
    assert_eq!(root.run(MOTD).status.code(), Some(0));
    // Released at the end.
    assert!(!root.path("/run/holo.pid").exists());
}
