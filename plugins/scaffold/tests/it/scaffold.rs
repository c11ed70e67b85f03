//! holo-scaffold across several runs, which fixture cases cannot show: a
//! file its `post` command rewrote stays stable, noop counts, and a
//! scaffold whose resource is deleted is scrubbed (edited files stay), and
//! removal carries on past a file it cannot remove.

use std::fs;
use std::path::PathBuf;
use test_support::plugin_run::PluginRun;

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
            &format!("[[scaffold]]\nname = \"/srv/app\"\nsource = \"app\"\nengine = \"minijinja\"\ndata = {{ name = \"shop\" }}\n{extra}"),
        );
    }

    /// Scan, then `OPERATION ENTITY`, with FD 3 captured; both must succeed.
    fn op(&self, operation: &str) -> Run {
        let (run, success) = self.op_status(operation);
        assert!(success, "{operation}: {}", run.stderr);
        run
    }

    /// Scan (which must succeed), then `OPERATION ENTITY`, and whether
    /// that succeeded.
    fn op_status(&self, operation: &str) -> (Run, bool) {
        let fd3 = self.dir.path().join("fd3");
        let mut outputs = Vec::new();
        for args in [vec!["scan"], vec![operation, "scaffold:/srv/app"]] {
            let output = PluginRun::new(
                env!("CARGO_BIN_EXE_holo-scaffold"),
                "scaffold",
                &self.path(""),
            )
            .args(&args)
            .fd3_to(&fd3)
            .output();
            assert!(
                output.status.success() || args[0] != "scan",
                "{args:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            outputs.push(output);
        }
        let last = outputs.pop().expect("two runs");
        let run = Run {
            stdout: String::from_utf8_lossy(&last.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&last.stderr).into_owned(),
            fd3: fs::read_to_string(&fd3).unwrap_or_default(),
        };
        (run, last.status.success())
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

/// A managed file that cannot be removed: replaced by a non-empty
/// directory, which unlink refuses even for root.
fn block_removal(root: &Root, relative: &str) {
    fs::remove_file(root.path(relative)).expect("remove file");
    root.write(&format!("{relative}/inside"), "x\n");
}

#[test]
fn absent_removes_the_other_files_when_one_cannot_be_removed() {
    let root = Root::new();
    root.write("usr/share/holo/scaffold/app/b.txt", "b\n");
    root.write("usr/share/holo/scaffold/app/c.txt", "c\n");
    root.declare("protect = false\n");
    root.op("apply");
    block_removal(&root, "srv/app/b.txt");
    block_removal(&root, "srv/app/notes.txt");
    root.declare("protect = false\nensure = \"absent\"\n");
    let (run, success) = root.op_status("apply");
    assert!(!success, "{}", run.stdout);
    for gone in ["srv/app/c.txt", "srv/app/sub/shop.conf"] {
        assert!(!root.path(gone).exists(), "{gone} is removed all the same");
    }
    assert!(
        run.stdout.contains("Removed /srv/app/c.txt"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr
            .contains("2 of the files in /srv/app could not be removed")
            && run.stderr.contains("cannot remove /srv/app/b.txt: ")
            && run.stderr.contains("cannot remove /srv/app/notes.txt: "),
        "{}",
        run.stderr
    );
    // Once the cause is gone, the next apply finishes the job.
    fs::remove_dir_all(root.path("srv/app/b.txt")).expect("unblock");
    root.write("srv/app/b.txt", "b\n");
    fs::remove_dir_all(root.path("srv/app/notes.txt")).expect("unblock");
    root.write("srv/app/notes.txt", "status: draft\n");
    let again = root.op("apply");
    assert!(
        again.stdout.contains("Removed /srv/app/b.txt"),
        "{}",
        again.stdout
    );
    assert!(!root.path("srv/app").exists());
}

#[test]
fn purge_removes_what_replaced_a_file_and_the_directories_it_emptied() {
    let root = Root::new();
    root.write("usr/share/holo/scaffold/app/b.txt", "b\n");
    root.write("usr/share/holo/scaffold/app/c.txt", "c\n");
    root.declare("protect = false\npurge = true\n");
    root.op("apply");
    fs::remove_file(root.path("usr/share/holo/scaffold/app/b.txt")).expect("rm");
    fs::remove_file(root.path("usr/share/holo/scaffold/app/c.txt")).expect("rm");
    // As CCM: every file the source does not produce goes, whoever put it
    // there, and a directory the purge emptied goes with it.
    block_removal(&root, "srv/app/b.txt");
    let (run, success) = root.op_status("apply");
    assert!(success, "{}", run.stderr);
    assert_eq!(
        run.stdout, "Purged /srv/app/b.txt/inside\nPurged /srv/app/c.txt\n",
        "{}",
        run.stderr
    );
    assert!(!root.path("srv/app/b.txt").exists());
    assert!(root.path("srv/app").is_dir(), "the target stays");
}
