//! Test mode stays inside the root: holo-scaffold resolves every target
//! path as if `HOLO_ROOT_DIR` were `/`, so a symlinked target parent
//! (absolute, or relative and climbing with `..`) never leads a render,
//! purge or scrub outside it.

use test_support::escapes;

use std::fs;
use std::path::{Path, PathBuf};

use escapes::{Escapes, write};

fn run(escapes: &Escapes, args: &[&str]) -> std::process::Output {
    escapes
        .plugin(Path::new(env!("CARGO_BIN_EXE_holo-scaffold")), "scaffold")
        .args(args)
        .output()
}

fn succeed(escapes: &Escapes, args: &[&str]) {
    let output = run(escapes, args);
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn read(path: PathBuf) -> String {
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

const ENTITIES: [&str; 2] = ["scaffold:/srv/outdir/app", "scaffold:/srv/up/app"];

#[test]
fn symlinks_in_the_root_never_lead_holo_scaffold_outside_it() {
    let escapes = Escapes::new();
    write(&escapes.path("etc/hostname"), "web01\n");
    fs::create_dir_all(escapes.path("tmp/holo.1")).expect("cache");
    // srv/outdir -> /…/elsewhere: inside the root that is ROOT/…/elsewhere.
    escapes.link_elsewhere("srv/outdir");
    let counterpart = escapes.elsewhere_in_root().join("app");
    // srv/up -> ../../..: inside the root that climbs to ROOT itself.
    escapes.link("srv/up", Path::new("../../.."));
    // The same names outside the root hold files a purge or a read would
    // touch if the links were followed on the host.
    write(&escapes.elsewhere().join("app/notes.txt"), "host notes\n");
    write(&escapes.elsewhere().join("app/stray.txt"), "host stray\n");
    write(
        &escapes.dir.path().join("a/b/app/stray.txt"),
        "host stray\n",
    );
    write(&counterpart.join("stray.txt"), "root stray\n");
    write(&escapes.path("app/stray.txt"), "root stray\n");
    write(
        &escapes.path("usr/share/holo/scaffold/app/notes.txt"),
        "rendered notes\n",
    );
    write(
        &escapes.path("usr/share/holo/scaffold/app/sub/deep.conf"),
        "deep\n",
    );
    write(
        &escapes.path("usr/share/holo/scaffold/app.toml"),
        r#"
[[scaffold]]
name = "/srv/outdir/app"
source = "app"
purge = true

[[scaffold]]
name = "/srv/up/app"
source = "app"
purge = true
"#,
    );
    let before = escapes.outside_the_root();

    succeed(&escapes, &["scan"]);
    for entity in ENTITIES {
        succeed(&escapes, &["apply", entity]);
    }
    assert_eq!(
        escapes.outside_the_root(),
        before,
        "nothing outside HOLO_ROOT_DIR changed"
    );
    for target in [counterpart.clone(), escapes.path("app")] {
        assert_eq!(read(target.join("notes.txt")), "rendered notes\n");
        assert_eq!(read(target.join("sub/deep.conf")), "deep\n");
        // Purge removes, as CCM's, the file the scaffold never wrote, in
        // the root; its namesakes outside the root stay (checked above).
        assert!(!target.join("stray.txt").exists());
    }

    // A second apply finds both targets stable through the same links.
    succeed(&escapes, &["scan"]);
    for entity in ENTITIES {
        let output = run(&escapes, &["apply", entity]);
        assert!(output.status.success());
        assert_eq!(output.stdout, b"", "{entity} is stable");
    }

    // Scrubbing removes the rendered files inside the root only, and none
    // the scaffold did not write.
    for target in [counterpart.clone(), escapes.path("app")] {
        write(&target.join("stray.txt"), "root stray\n");
    }
    fs::remove_file(escapes.path("usr/share/holo/scaffold/app.toml")).expect("rm");
    succeed(&escapes, &["scan"]);
    for entity in ENTITIES {
        succeed(&escapes, &["apply", entity]);
    }
    for target in [counterpart.clone(), escapes.path("app")] {
        assert!(
            !target.join("notes.txt").exists() && !target.join("sub").exists(),
            "scrubbed: {}",
            target.display()
        );
        assert_eq!(read(target.join("stray.txt")), "root stray\n");
    }
    assert_eq!(escapes.outside_the_root(), before);
}
