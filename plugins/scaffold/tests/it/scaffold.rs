//! holo-scaffold across several runs, which fixture cases cannot show: a
//! file its `post` command rewrote stays stable, noop counts, and a
//! scaffold whose resource is deleted is scrubbed (edited files stay).

use std::fs;
use std::path::PathBuf;

struct Root {
    dir: tempfile::TempDir,
}

struct Run {
    stdout: String,
    stderr: String,
    fd3: String,
}

impl Root {
    fn new() -> Root {
        let root = Root {
            dir: tempfile::tempdir().expect("tempdir"),
        };
        root.write("etc/hostname", "web01\n");
        root.write("usr/share/holo/scaffold/app/notes.txt", "status: draft\n");
        root.write(
            "usr/share/holo/scaffold/app/sub/{{ data.name }}.conf",
            "name={{ data.name }}\n",
        );
        fs::create_dir_all(root.path("tmp/cache")).expect("cache");
        root
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join("root").join(relative)
    }

    fn write(&self, relative: &str, text: &str) {
        let path = self.path(relative);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, text).expect("write");
    }

    fn declare(&self, extra: &str) {
        self.write(
            "usr/share/holo/scaffold/app.toml",
            &format!("[[scaffold]]\nname = \"/srv/app\"\nsource = \"app\"\ndata = {{ name = \"shop\" }}\n{extra}"),
        );
    }

    /// Scan, then `OPERATION ENTITY`, with FD 3 captured.
    fn op(&self, operation: &str) -> Run {
        let fd3 = self.dir.path().join("fd3");
        let mut outputs = Vec::new();
        for args in [vec!["scan"], vec![operation, "scaffold:/srv/app"]] {
            let output = std::process::Command::new("sh")
                .arg("-c")
                .arg("exec \"$0\" \"$@\" 3>\"$FD3_FILE\"")
                .arg(env!("CARGO_BIN_EXE_holo-scaffold"))
                .args(&args)
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("FD3_FILE", &fd3)
                .env("HOLO_ROOT_DIR", self.path(""))
                .env("HOLO_RESOURCE_DIR", self.path("usr/share/holo/scaffold"))
                .env("HOLO_STATE_DIR", self.path("var/lib/holo/scaffold"))
                .env("HOLO_CACHE_DIR", self.path("tmp/cache"))
                .output()
                .expect("run holo-scaffold");
            assert!(
                output.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            outputs.push(output);
        }
        let last = outputs.pop().expect("two runs");
        Run {
            stdout: String::from_utf8_lossy(&last.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&last.stderr).into_owned(),
            fd3: fs::read_to_string(&fd3).unwrap_or_default(),
        }
    }
}

#[test]
fn a_file_rewritten_by_post_stays_stable() {
    let root = Root::new();
    root.declare("post = [{ \"*.txt\" = \"sed -i s/draft/final/\" }]\n");
    assert_eq!(
        root.op("noop").stdout,
        "Would have changed 2 scaffold files\n"
    );
    let apply = root.op("apply");
    assert_eq!(
        apply.stdout,
        "Rendered /srv/app/notes.txt\nRendered /srv/app/sub/shop.conf\n"
    );
    assert_eq!(
        fs::read_to_string(root.path("srv/app/notes.txt")).expect("notes"),
        "status: final\n"
    );
    let again = root.op("apply");
    assert_eq!(again.fd3, "not changed\n", "{}", again.stdout);
    assert_eq!(root.op("noop").fd3, "not changed\n");
    // A change of the template is a change again.
    root.write("usr/share/holo/scaffold/app/notes.txt", "status: draft 2\n");
    assert_eq!(
        root.op("noop").stdout,
        "Would have changed 1 scaffold files\n"
    );
}

#[test]
fn absent_counts_and_removes_only_managed_files() {
    let root = Root::new();
    root.declare("");
    root.op("apply");
    root.write("srv/app/sub/local.conf", "mine\n");
    root.declare("ensure = \"absent\"\n");
    assert_eq!(
        root.op("noop").stdout,
        "Would have removed 2 scaffold files\n"
    );
    root.op("apply");
    assert!(!root.path("srv/app/notes.txt").exists());
    assert!(!root.path("srv/app/sub/shop.conf").exists());
    assert!(
        root.path("srv/app/sub/local.conf").exists(),
        "unrelated files stay"
    );
    assert_eq!(root.op("apply").fd3, "not changed\n");
}

#[test]
fn a_deleted_resource_is_scrubbed_keeping_edited_files() {
    let root = Root::new();
    root.declare("");
    root.op("apply");
    root.write("srv/app/notes.txt", "edited by hand\n");
    fs::remove_file(root.path("usr/share/holo/scaffold/app.toml")).expect("delete resource");
    let scrub = root.op("apply");
    assert!(
        scrub.stderr.contains("/srv/app/notes.txt was edited"),
        "{}",
        scrub.stderr
    );
    assert!(
        !root.path("srv/app/sub").exists(),
        "the emptied directory goes"
    );
    assert_eq!(
        fs::read_to_string(root.path("srv/app/notes.txt")).expect("kept"),
        "edited by hand\n"
    );
    assert!(
        fs::read_dir(root.path("var/lib/holo/scaffold"))
            .expect("state")
            .next()
            .is_none(),
        "the record is gone"
    );
}

#[test]
fn files_edited_by_hand_need_force() {
    let root = Root::new();
    root.declare("");
    root.op("apply");
    root.write("srv/app/notes.txt", "edited by hand\n");
    assert_eq!(root.op("apply").fd3, "requires --force to overwrite\n");
    assert_eq!(
        fs::read_to_string(root.path("srv/app/notes.txt")).expect("kept"),
        "edited by hand\n"
    );
    fs::remove_file(root.path("srv/app/sub/shop.conf")).expect("delete");
    assert_eq!(root.op("apply").fd3, "requires --force to restore\n");
    root.op("force-apply");
    assert_eq!(
        fs::read_to_string(root.path("srv/app/notes.txt")).expect("restored"),
        "status: draft\n"
    );
    assert!(root.path("srv/app/sub/shop.conf").exists());
    // protect = false converges without asking.
    root.write("srv/app/notes.txt", "edited again\n");
    root.declare("protect = false\n");
    assert_eq!(root.op("apply").stdout, "Rendered /srv/app/notes.txt\n");
}
