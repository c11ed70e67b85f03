//! holo-scaffold always converges on the next run, and stays inside the
//! root in test mode: a run killed during a `post` command, a failed
//! `post` command, purge next to files of other entities, `absent` with an
//! edited file, an empty template directory, template trees that point
//! outside the root, and template names that are not UTF-8.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use test_support::plugin_run::PluginRun;

const ENTITY: &str = "scaffold:/srv/app";

struct Root {
    dir: tempfile::TempDir,
}

struct Run {
    ok: bool,
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
        fs::create_dir_all(root.path("tmp/cache")).expect("cache");
        root
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join("root").join(relative)
    }

    /// A path beside the root, which nothing may touch.
    fn host(&self, relative: &str) -> PathBuf {
        self.dir.path().join("host").join(relative)
    }

    fn write(&self, relative: &str, text: &str) {
        write(&self.path(relative), text);
    }

    fn read(&self, relative: &str) -> String {
        let path = self.path(relative);
        fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
    }

    fn declare(&self, properties: &str) {
        self.write(
            "usr/share/holo/scaffold/app.toml",
            &format!("[[scaffold]]\nname = \"/srv/app\"\n{properties}"),
        );
    }

    fn command(&self, args: &[&str]) -> Command {
        PluginRun::new(
            env!("CARGO_BIN_EXE_holo-scaffold"),
            "scaffold",
            &self.path(""),
        )
        .args(args)
        .fd3_to(self.dir.path().join("fd3"))
        .command()
    }

    fn run(&self, args: &[&str]) -> Run {
        let output: Output = self.command(args).output().expect("run holo-scaffold");
        Run {
            ok: output.status.success(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            fd3: fs::read_to_string(self.dir.path().join("fd3")).unwrap_or_default(),
        }
    }

    /// Scan, then `OPERATION` on the scaffold.
    fn op(&self, operation: &str) -> Run {
        let scan = self.run(&["scan"]);
        assert!(scan.ok, "scan: {}", scan.stderr);
        self.run(&[operation, ENTITY])
    }
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(path, text).expect("write");
}

#[test]
fn a_run_killed_during_post_runs_post_again_and_never_claims_an_edit() {
    let root = Root::new();
    root.write("usr/share/holo/scaffold/app/run.sh", "echo one\n");
    let post_pid = root.path("post-pid");
    root.declare(&format!(
        "source = \"app\"\npost = [{{ \"*.sh\" = \"sh -c 'echo $$ > {}; sleep 4; echo \\\"# formatted\\\" >> \\\"$1\\\"' post {{}}\" }}]\n",
        post_pid.display()
    ));
    assert!(root.op("apply").ok);
    assert_eq!(root.read("srv/app/run.sh"), "echo one\n# formatted\n");

    // A new template version; the run is killed while post sleeps.
    root.write("usr/share/holo/scaffold/app/run.sh", "echo two\n");
    assert!(root.run(&["scan"]).ok);
    let mut child = root
        .command(&["apply", ENTITY])
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start apply");
    let _ = fs::remove_file(&post_pid);
    let started = Instant::now();
    let post = loop {
        if let Some(pid) = fs::read_to_string(&post_pid)
            .ok()
            .and_then(|text| text.trim().parse::<i32>().ok())
        {
            break pid;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "post never ran"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    // The whole run goes, as a power cut would take it: holo's group and
    // the post command's own group.
    let kill = nix::sys::signal::Signal::SIGKILL;
    let group = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    nix::sys::signal::killpg(group, kill).expect("kill");
    let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(post), kill);
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(post), kill);
    child.wait().expect("reap");
    assert!(
        test_support::process::gone_within(post as u32, Duration::from_secs(10)),
        "post outlived SIGKILL"
    );
    assert_eq!(root.read("srv/app/run.sh"), "echo two\n", "post was cut");

    // The next apply renders again and runs post, without --force.
    let recovery = root.op("apply");
    assert!(recovery.ok, "{}", recovery.stderr);
    assert_eq!(recovery.fd3, "", "{}", recovery.stdout);
    assert_eq!(root.read("srv/app/run.sh"), "echo two\n# formatted\n");
    assert_eq!(root.op("apply").fd3, "not changed\n");
    // Later template changes are plain changes, not edits by a user.
    root.write("usr/share/holo/scaffold/app/run.sh", "echo three\n");
    let next = root.op("apply");
    assert!(
        next.ok && next.fd3.is_empty(),
        "{} {}",
        next.fd3,
        next.stderr
    );
    assert_eq!(root.read("srv/app/run.sh"), "echo three\n# formatted\n");
}

#[test]
fn a_failed_post_command_runs_again_until_it_succeeds() {
    let root = Root::new();
    root.write("usr/share/holo/scaffold/app/run.sh", "echo hi\n");
    root.write("usr/share/holo/scaffold/app/plain.txt", "plain\n");
    root.declare("source = \"app\"\npost = [{ \"*.sh\" = \"false\" }]\n");
    let failed = root.op("apply");
    assert!(!failed.ok, "{}", failed.stdout);
    assert!(
        failed.stderr.contains("runs again on the next apply"),
        "{}",
        failed.stderr
    );
    let again = root.op("apply");
    assert!(!again.ok, "the failed command runs again: {}", again.stdout);
    assert!(again.stdout.contains("Rendered /srv/app/run.sh"));
    assert!(
        !again.stdout.contains("plain.txt"),
        "finished files are done: {}",
        again.stdout
    );
    root.declare("source = \"app\"\npost = [{ \"*.sh\" = \"chmod 0755\" }]\n");
    let fixed = root.op("apply");
    assert!(fixed.ok, "{}", fixed.stderr);
    assert_eq!(fixed.stdout, "Rendered /srv/app/run.sh\n");
    assert_eq!(root.op("apply").fd3, "not changed\n");
}

#[test]
fn purge_removes_a_stale_file_but_not_one_another_entity_of_the_run_manages() {
    let root = Root::new();
    root.write("usr/share/holo/scaffold/app/a.conf", "a\n");
    root.declare("source = \"app\"\npurge = true\n");
    // A hand install left one file; holo-file manages another in this run.
    root.write("srv/app/stale.conf", "stale\n");
    root.write("srv/app/b", "holo-file's\n");
    root.write(
        "tmp/cache/run-entities",
        "scaffold:/srv/app\t/usr/share/holo/scaffold/app.toml:1\nfile:/srv/app/b\t/usr/share/holo/file/b.toml:4\n",
    );
    assert!(root.run(&["scan"]).ok);
    let apply: Output = root
        .command(&["apply", ENTITY])
        .env("HOLO_RUN_ENTITIES", root.path("tmp/cache/run-entities"))
        .output()
        .expect("apply");
    let stdout = String::from_utf8_lossy(&apply.stdout);
    let stderr = String::from_utf8_lossy(&apply.stderr);
    assert!(apply.status.success(), "{stderr}");
    assert_eq!(
        stdout,
        "Rendered /srv/app/a.conf\nPurged /srv/app/stale.conf\n"
    );
    assert_eq!(
        stderr,
        ">> scaffold:/srv/app (found in /usr/share/holo/scaffold/app.toml:1) has purge = true, but /srv/app/b is managed by file:/srv/app/b (found in /usr/share/holo/file/b.toml:4) in this run, so it is not purged; move that file out of /srv/app, or set purge = false\n"
    );
    assert_eq!(root.read("srv/app/b"), "holo-file's\n");
    assert!(!root.path("srv/app/stale.conf").exists());
    // Without the run's entities (Holo 3's driver), CCM's purge is all
    // there is.
    assert!(root.run(&["scan"]).ok);
    let alone = root.run(&["apply", ENTITY]);
    assert_eq!(alone.stdout, "Purged /srv/app/b\n", "{}", alone.stderr);
}

#[test]
fn purge_leaves_a_file_it_wrote_and_someone_edited_unless_forced() {
    let root = Root::new();
    root.write("usr/share/holo/scaffold/app/a.conf", "a\n");
    root.write("usr/share/holo/scaffold/app/old.conf", "old\n");
    root.declare("source = \"app\"\npurge = true\n");
    assert!(root.op("apply").ok);
    root.write("srv/app/old.conf", "edited\n");
    fs::remove_file(root.path("usr/share/holo/scaffold/app/old.conf")).expect("rm");
    let kept = root.op("apply");
    assert_eq!(
        kept.fd3, "requires --force to overwrite\n",
        "{}",
        kept.stdout
    );
    assert_eq!(root.read("srv/app/old.conf"), "edited\n");
}

#[test]
fn a_leftover_is_purged_once_purge_is_turned_on() {
    let root = Root::new();
    root.write("usr/share/holo/scaffold/app/a.conf", "a\n");
    root.write("usr/share/holo/scaffold/app/old.conf", "old\n");
    root.declare("source = \"app\"\n");
    assert!(root.op("apply").ok);
    fs::remove_file(root.path("usr/share/holo/scaffold/app/old.conf")).expect("rm");
    assert_eq!(root.op("apply").fd3, "not changed\n");
    root.declare("source = \"app\"\npurge = true\n");
    assert_eq!(root.op("apply").stdout, "Purged /srv/app/old.conf\n");
}

#[test]
fn absent_removal_of_an_edited_file_requires_force() {
    let root = Root::new();
    root.write("usr/share/holo/scaffold/app/a.conf", "a\n");
    root.declare("source = \"app\"\n");
    assert!(root.op("apply").ok);
    root.write("srv/app/a.conf", "edited by the admin\n");
    root.declare("source = \"app\"\nensure = \"absent\"\n");
    let apply = root.op("apply");
    assert_eq!(apply.fd3, "requires --force to overwrite\n");
    assert_eq!(root.read("srv/app/a.conf"), "edited by the admin\n");
    let forced = root.op("force-apply");
    assert!(forced.ok, "{}", forced.stderr);
    assert!(!root.path("srv/app/a.conf").exists());
}

#[test]
fn an_empty_template_directory_converges() {
    let root = Root::new();
    fs::create_dir_all(root.path("usr/share/holo/scaffold/app")).expect("mkdir");
    root.declare("source = \"app\"\n");
    let apply = root.op("apply");
    assert!(apply.ok, "{}", apply.stderr);
    assert!(root.path("srv/app").is_dir());
    assert_eq!(root.op("apply").fd3, "not changed\n");
}

#[test]
fn a_source_outside_the_resource_directory_is_never_read_from_the_host() {
    let root = Root::new();
    write(&root.host("etc/ssh/ssh_host_key"), "host secret\n");
    root.declare("source = \"../../../../../../etc/ssh\"\n");
    let scan = root.run(&["scan"]);
    assert!(!scan.ok);
    assert!(
        scan.stderr.contains("app.toml:1") && scan.stderr.contains("\"..\""),
        "{}",
        scan.stderr
    );
    // An absolute source is read inside the root in test mode.
    let absolute = root.host("etc/ssh");
    root.declare(&format!("source = \"{}\"\n", absolute.display()));
    let scan = root.run(&["scan"]);
    assert!(!scan.ok, "the host directory is not read");
    assert!(scan.stderr.contains("not a directory"), "{}", scan.stderr);
    let below_root = absolute.strip_prefix("/").expect("absolute");
    root.write(
        &format!("{}/inside.conf", below_root.display()),
        "from the root\n",
    );
    assert!(root.op("apply").ok);
    assert_eq!(root.read("srv/app/inside.conf"), "from the root\n");
    assert!(!root.path("srv/app/ssh_host_key").exists());
}

#[test]
fn a_symlink_in_the_template_tree_is_never_followed_to_a_host_file() {
    let root = Root::new();
    let secret = root.host("secret");
    write(&secret, "host secret\n");
    root.write("usr/share/holo/scaffold/app/a.conf", "a\n");
    std::os::unix::fs::symlink(&secret, root.path("usr/share/holo/scaffold/app/leak"))
        .expect("symlink");
    root.declare("source = \"app\"\n");
    let scan = root.run(&["scan"]);
    assert!(!scan.ok);
    assert!(
        scan.stderr.contains("leak") && scan.stderr.contains("outside the template directory"),
        "{}",
        scan.stderr
    );
    assert!(!root.path("srv/app").exists());
}

#[test]
fn a_post_command_gets_the_path_resolved_inside_the_root() {
    let root = Root::new();
    // srv/app/sub -> HOST/dir: inside the root that is ROOT/HOST/dir.
    let host_dir = root.host("dir");
    fs::create_dir_all(&host_dir).expect("mkdir");
    fs::create_dir_all(root.path("srv/app")).expect("mkdir");
    std::os::unix::fs::symlink(&host_dir, root.path("srv/app/sub")).expect("symlink");
    let counterpart = root.path(
        host_dir
            .strip_prefix("/")
            .expect("absolute")
            .to_str()
            .expect("utf8"),
    );
    fs::create_dir_all(&counterpart).expect("mkdir");
    root.write("usr/share/holo/scaffold/app/sub/x.sh", "x\n");
    root.declare(
        "source = \"app\"\npost = [{ \"*.sh\" = \"sh -c 'echo posted >> \\\"$1\\\"' post {}\" }]\n",
    );
    let apply = root.op("apply");
    assert!(apply.ok, "{}", apply.stderr);
    assert_eq!(
        fs::read_dir(&host_dir).expect("ls").count(),
        0,
        "nothing was written on the host"
    );
    assert_eq!(
        fs::read_to_string(counterpart.join("x.sh")).expect("inside"),
        "x\nposted\n"
    );
}

#[test]
fn a_template_name_that_is_not_utf8_is_refused_with_its_path() {
    use std::os::unix::ffi::OsStrExt;
    let root = Root::new();
    let dir = root.path("usr/share/holo/scaffold/app");
    fs::create_dir_all(&dir).expect("mkdir");
    fs::write(dir.join(std::ffi::OsStr::from_bytes(b"caf\xe9.txt")), "x\n").expect("write");
    root.declare("source = \"app\"\n");
    let scan = root.run(&["scan"]);
    assert!(!scan.ok);
    assert!(
        scan.stderr.contains("caf\\xe9.txt") && scan.stderr.contains("rename"),
        "{}",
        scan.stderr
    );
}
