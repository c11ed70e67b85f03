//! Test mode stays inside the root: holo-file resolves every path as if
//! `HOLO_ROOT_DIR` were `/`, so symlinks in the root (absolute, or relative
//! and climbing with `..`) never lead a write outside it. Targets, parent
//! directories, saved originals, state records and the owner database are
//! all reached through such links here.

use test_support::escapes;

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use escapes::{Escapes, write};

fn run(escapes: &Escapes, args: &[&str]) -> std::process::Output {
    escapes
        .plugin(assert_cmd::cargo::cargo_bin!("holo-file"), "file")
        .args(args)
        .output()
}

/// Entities whose paths go through the links out of the root.
const THROUGH_LINKS: &str = r#"
[[file]]
name = "/etc/outdir/motd"
content = "through an absolute link\n"
owner = "inroot"
group = "inroot"
mode = "0644"

[[file]]
name = "/etc/up/escaped"
content = "through a relative link\n"
owner = "inroot"
group = "inroot"
mode = "0644"

[[file]]
name = "/etc/up/orig.conf"
content = "managed\n"
owner = "inroot"
group = "inroot"
mode = "0644"

[[file]]
name = "/etc/up/made/by/holo"
ensure = "directory"
owner = "inroot"
group = "inroot"
mode = "0755"
"#;

#[test]
fn symlinks_in_the_root_never_lead_holo_file_outside_it() {
    let escapes = Escapes::new();
    let me = fs::metadata(escapes.dir.path()).expect("stat");
    // etc/outdir -> /…/elsewhere: inside the root that is ROOT/…/elsewhere.
    escapes.link_elsewhere("etc/outdir");
    let counterpart = escapes.elsewhere_in_root();
    fs::create_dir_all(&counterpart).expect("mkdir");
    // etc/up -> ../../..: inside the root that climbs to ROOT itself.
    escapes.link("etc/up", Path::new("../../.."));
    // The state directory's parent climbs the same way: var/lib/holo -> ../../..
    escapes.link("var/lib/holo", Path::new("../../.."));
    // The owner database is a link to an absolute path.
    escapes.link("etc/passwd", Path::new("/srv/passwd"));
    escapes.link("etc/group", Path::new("/srv/group"));
    write(
        &escapes.path("srv/passwd"),
        &format!("inroot:x:{}:{}::/:/bin/sh\n", me.uid(), me.gid()),
    );
    write(
        &escapes.path("srv/group"),
        &format!("inroot:x:{}:\n", me.gid()),
    );
    write(&escapes.path("orig.conf"), "the original\n");
    write(
        &escapes.path("usr/share/holo/file/links.toml"),
        THROUGH_LINKS,
    );
    let before = escapes.outside_the_root();

    let scan = run(&escapes, &["scan"]);
    assert!(
        scan.status.success(),
        "scan: {}",
        String::from_utf8_lossy(&scan.stderr)
    );
    for entity in [
        "file:/etc/outdir/motd",
        "file:/etc/up/escaped",
        "file:/etc/up/orig.conf",
        "file:/etc/up/made/by/holo",
    ] {
        let apply = run(&escapes, &["apply", entity]);
        assert!(
            apply.status.success(),
            "apply {entity}: {}",
            String::from_utf8_lossy(&apply.stderr)
        );
    }

    assert_eq!(
        escapes.outside_the_root(),
        before,
        "nothing outside HOLO_ROOT_DIR changed"
    );
    let read = |path: PathBuf| {
        fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    assert_eq!(read(counterpart.join("motd")), "through an absolute link\n");
    assert_eq!(read(escapes.path("escaped")), "through a relative link\n");
    assert_eq!(read(escapes.path("orig.conf")), "managed\n");
    assert!(escapes.path("made/by/holo").is_dir());
    // State records and the saved original went through var/lib/holo -> ROOT.
    assert_eq!(
        read(escapes.path("file/base/etc/up/orig.conf")),
        "the original\n"
    );
    assert!(
        escapes
            .path("file/file:%2Fetc%2Fup%2Fescaped.toml")
            .is_file()
    );

    // Scrubbing restores the original through the same links.
    fs::remove_file(escapes.path("usr/share/holo/file/links.toml")).expect("rm");
    let scan = run(&escapes, &["scan"]);
    assert!(scan.status.success());
    let scrub = run(&escapes, &["apply", "file:/etc/up/orig.conf"]);
    assert!(
        scrub.status.success(),
        "scrub: {}",
        String::from_utf8_lossy(&scrub.stderr)
    );
    assert_eq!(read(escapes.path("orig.conf")), "the original\n");
    assert_eq!(escapes.outside_the_root(), before);
}
