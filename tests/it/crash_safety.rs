//! A first `holo apply` of holo-file files, killed with SIGKILL (driver
//! and plugin together, as a power cut or a cgroup kill would) at several
//! moments. After each kill every target holds its old content or its new
//! content, never a torn mix; the next apply converges with every original
//! saved; and no temporary file of ours is left anywhere in the root.
//!
//! Two trees: a few thousand files on tmpfs, and a smaller one on the disk
//! of the temp directory, where each write waits for its fsync, so that a
//! kill nearly always lands while a temporary file exists.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

const HOLO: &str = env!("CARGO_BIN_EXE_holo");

/// When a run is killed: during the scan, or once this many entities have
/// their state record (they finished), plus a few milliseconds that vary,
/// so that kills land in different steps of a write.
#[derive(Debug, Clone, Copy)]
enum KillWhen {
    Scanning,
    Applied(usize, u64),
}

/// Kill moments spread over a run of `files` entities.
fn kills(files: usize) -> [KillWhen; 5] {
    [
        KillWhen::Scanning,
        KillWhen::Applied(1, 0),
        KillWhen::Applied(files / 4, 1),
        KillWhen::Applied(files / 2, 3),
        KillWhen::Applied(files * 3 / 4, 2),
    ]
}

/// holo-file from the workspace's build, beside the driver under test.
fn holo_file() -> PathBuf {
    test_support::binary("holo-file")
}

fn old_content(index: usize) -> String {
    format!("old content of file {index}, as the machine had it\n").repeat(40)
}

fn new_content(index: usize) -> String {
    format!("new content of file {index}, as the resource says\n").repeat(40)
}

/// Ten files to a directory.
fn target(root: &Path, index: usize) -> PathBuf {
    root.join(format!("srv/d{}/f{index}", index / 10))
}

/// A test root: even files exist with old content, odd ones do not.
struct Tree {
    dir: tempfile::TempDir,
    plugin: PathBuf,
    files: usize,
}

impl Tree {
    fn new(files: usize, parent: Option<&Path>) -> Tree {
        let dir = match parent {
            Some(parent) => tempfile::tempdir_in(parent),
            None => tempfile::tempdir(),
        };
        let tree = Tree {
            dir: dir.expect("tempdir"),
            plugin: holo_file(),
            files,
        };
        let root = tree.root();
        for dir in ["run", "usr/share/holo/file", "etc"] {
            fs::create_dir_all(root.join(dir)).expect("mkdir");
        }
        fs::create_dir_all(tree.cache_parent()).expect("mkdir");
        fs::write(
            root.join("etc/holorc"),
            format!("plugin file={}\n", tree.plugin.display()),
        )
        .expect("holorc");
        let me = fs::metadata(tree.dir.path()).expect("stat");
        let mut resources = String::new();
        for index in 0..files {
            resources.push_str(&format!(
                "[[file]]\nname = \"/{}\"\ncontent = {:?}\nowner = \"{}\"\ngroup = \"{}\"\nmode = \"0644\"\n\n",
                target(Path::new(""), index).display(),
                new_content(index),
                me.uid(),
                me.gid()
            ));
            let path = target(&root, index);
            fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            if index % 2 == 0 {
                fs::write(&path, old_content(index)).expect("old file");
            }
        }
        fs::write(root.join("usr/share/holo/file/files.toml"), resources).expect("resources");
        tree
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    /// TMPDIR, outside the root: the run's cache directory is the
    /// driver's to clean, not what this test is about.
    fn cache_parent(&self) -> PathBuf {
        self.dir.path().join("tmp")
    }

    fn apply(&self) -> Command {
        let mut command = Command::new(HOLO);
        command
            .arg("apply")
            .env("HOLO_ROOT_DIR", self.root())
            .env("TMPDIR", self.cache_parent())
            // Commits of a few files each, so that kills land between them.
            .env("HOLO_TEST_STAGED_FILES", "16")
            .env_remove("HOLO_NO_BATCH");
        command
    }

    /// How many entities have a state record (finished their apply).
    fn records(&self) -> usize {
        crate::staged_commit::records(&self.root())
    }

    /// How many targets have their new content; panics on a torn one.
    fn count_new_and_check_none_is_torn(&self) -> usize {
        let root = self.root();
        let mut new = 0;
        for index in 0..self.files {
            let path = target(&root, index);
            match fs::read_to_string(&path) {
                Ok(text) if text == new_content(index) => new += 1,
                Ok(text) if index % 2 == 0 && text == old_content(index) => {}
                Ok(text) => panic!(
                    "{} is torn: {} bytes that are neither the old nor the new content",
                    path.display(),
                    text.len()
                ),
                Err(err) if err.kind() == std::io::ErrorKind::NotFound && index % 2 == 1 => {}
                Err(err) => panic!("{}: {err}", path.display()),
            }
        }
        new
    }
}

/// Every path below `dir` whose name starts like our temporary files.
fn temp_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("list") {
        let entry = entry.expect("entry");
        let path = entry.path();
        if entry
            .file_name()
            .to_string_lossy()
            .starts_with(".holo-tmp-")
        {
            found.push(path.clone());
        }
        if entry.file_type().expect("type").is_dir() {
            temp_files(&path, found);
        }
    }
}

/// Starts an apply in a process group of its own and kills the whole group
/// at the moment `when`; true when the run was still going then.
fn run_and_kill(tree: &Tree, when: KillWhen) -> bool {
    let mut child = tree
        .apply()
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start holo apply");
    let group = Pid::from_raw(i32::try_from(child.id()).expect("pid fits"));
    let started = Instant::now();
    let due = |tree: &Tree| match when {
        KillWhen::Scanning => started.elapsed() >= Duration::from_millis(50),
        KillWhen::Applied(count, _) => tree.records() >= count,
    };
    while !due(tree) {
        if child.try_wait().expect("poll").is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    if let KillWhen::Applied(_, extra_ms) = when {
        // The drawn moment of the kill: this pause is what the test varies.
        std::thread::sleep(Duration::from_millis(extra_ms));
    }
    let _ = killpg(group, Signal::SIGKILL);
    child.wait().expect("reap holo");
    // Holo's group is gone soon; its plugin has a session of its own, and
    // the next run's lock takeover waits for it (the lock is left as a
    // killed run leaves it).
    let gone_by = Instant::now() + Duration::from_secs(10);
    while killpg(group, None).is_ok() {
        assert!(
            Instant::now() < gone_by,
            "the killed run's processes do not end"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Kills applies on a tree of `files` files below `parent`, then checks
/// that the next apply converges and cleans up.
fn kill_then_converge(files: usize, parent: Option<&Path>) {
    let tree = Tree::new(files, parent);
    let mut interrupted_midway = 0;
    let mut progress = Vec::new();
    for when in kills(files) {
        let killed = run_and_kill(&tree, when);
        let new = tree.count_new_and_check_none_is_torn();
        let mut strays = Vec::new();
        temp_files(&tree.root(), &mut strays);
        progress.push((when, killed, new, strays.len()));
        if killed && 0 < new && new < files {
            interrupted_midway += 1;
        }
    }
    // (moment, killed, files with new content, temporary files left)
    eprintln!("{files} files: {progress:?}");
    assert!(
        interrupted_midway > 0,
        "no kill landed while files were being written: {progress:?}"
    );

    let converged = tree.apply().output().expect("run holo apply");
    assert_eq!(converged.status.code(), Some(0), "{}", text(&converged));
    assert!(!text(&converged).contains("!!"), "{}", text(&converged));
    assert_eq!(tree.count_new_and_check_none_is_torn(), files);
    // Every replaced file's original was kept, even where a kill came
    // between writing the target and recording that it was written.
    for index in (0..files).step_by(2) {
        let saved = tree
            .root()
            .join("var/lib/holo/file/base")
            .join(target(Path::new(""), index));
        assert_eq!(
            fs::read_to_string(&saved).ok(),
            Some(old_content(index)),
            "{} holds the original",
            saved.display()
        );
    }
    let mut strays = Vec::new();
    temp_files(&tree.root(), &mut strays);
    assert!(strays.is_empty(), "temporary files left: {strays:?}");

    let again = tree.apply().output().expect("run holo apply");
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert!(
        !String::from_utf8_lossy(&again.stdout).contains("Working on"),
        "a converged tree changes nothing: {}",
        text(&again)
    );
}

#[test]
fn thousands_of_files_on_tmpfs_survive_kills() {
    // tmpfs where there is one: with real fsyncs this many files take
    // minutes, and what is checked here does not depend on them.
    let shm = Path::new("/dev/shm");
    kill_then_converge(2000, shm.is_dir().then_some(shm));
}

#[test]
fn kills_during_fsync_bound_writes_leave_nothing_behind() {
    kill_then_converge(80, None);
}
