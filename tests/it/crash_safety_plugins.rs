//! Every plugin that writes survives `holo apply` runs killed with SIGKILL
//! at random moments: holo-file, holo-scaffold (with a `post` command that
//! rewrites files), holo-archive (without `creates`) and holo-exec with
//! `creates`. Each round changes the desired state, kills a run at a
//! moment drawn from a seeded generator (set HOLO_CRASH_SEED to replay a
//! failure; the seed is printed), and checks that:
//!
//! - every target holds the old or the new content, never a torn mix;
//! - the next apply converges without `--force`, with no "requires
//!   --force" and no error;
//! - no temporary or staging file of ours is left in the root;
//! - the apply after that changes nothing.
//!
//! Archives are built with the system's `tar` and served over HTTP on
//! 127.0.0.1 by test-support's server.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use test_support::http::{Route, Server, sha256};

const HOLO: &str = env!("CARGO_BIN_EXE_holo");
const ROUNDS: u32 = 8;

/// xorshift64*: reproducible kill moments without a dependency.
struct Random(u64);

impl Random {
    fn seeded() -> Random {
        let seed = std::env::var("HOLO_CRASH_SEED")
            .ok()
            .and_then(|text| text.parse().ok())
            .unwrap_or(0x5eed_c0de_2026);
        eprintln!("HOLO_CRASH_SEED={seed}");
        Random(seed | 1)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % bound.max(1)
    }
}

/// The directory of the workspace's binaries, with the plugins under test.
fn build_plugins() -> PathBuf {
    for plugin in ["holo-file", "holo-scaffold", "holo-archive", "holo-exec"] {
        test_support::binary(plugin);
    }
    test_support::profile_dir()
}

/// One plugin's scenario: the resources of version `round`, and what each
/// target may hold.
trait Scenario {
    fn name(&self) -> &'static str;
    /// Writes the resources (and templates) for `round`.
    fn declare(&self, tree: &Tree, round: u32);
    /// Targets and the contents they may hold after a killed run of
    /// `round` (the old and the new), `None` standing for missing.
    fn allowed(&self, tree: &Tree, round: u32) -> Vec<(PathBuf, Vec<Option<String>>)>;
    /// What every target holds once `round` converged.
    fn converged(&self, tree: &Tree, round: u32) -> Vec<(PathBuf, String)>;
}

struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new(plugins: &Path) -> Tree {
        let tree = Tree {
            dir: tempfile::tempdir().expect("tempdir"),
        };
        let root = tree.root();
        for dir in [
            "run",
            "etc",
            "srv",
            "opt",
            "usr/share/holo/file",
            "usr/share/holo/scaffold",
            "usr/share/holo/archive",
            "usr/share/holo/exec",
        ] {
            fs::create_dir_all(root.join(dir)).expect("mkdir");
        }
        fs::create_dir_all(tree.dir.path().join("tmp")).expect("mkdir");
        let mut holorc = String::new();
        for id in ["file", "scaffold", "archive", "exec"] {
            holorc.push_str(&format!(
                "plugin {id}={}\n",
                plugins.join(format!("holo-{id}")).display()
            ));
        }
        fs::write(root.join("etc/holorc"), holorc).expect("holorc");
        let me = fs::metadata(tree.dir.path()).expect("stat");
        fs::write(
            root.join("etc/passwd"),
            format!("app:x:{}:{}::/srv:/bin/sh\n", me.uid(), me.gid()),
        )
        .expect("passwd");
        fs::write(root.join("etc/group"), format!("app:x:{}:\n", me.gid())).expect("group");
        tree
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    /// Where commands started by a run note their pid, so that a kill
    /// takes them too (they run in process groups of their own).
    fn pids(&self) -> PathBuf {
        self.dir.path().join("pids")
    }

    fn write(&self, relative: &str, text: &str) {
        let path = self.root().join(relative);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, text).expect("write");
    }

    fn apply(&self) -> Command {
        let mut command = Command::new(HOLO);
        command
            .arg("apply")
            .env("HOLO_ROOT_DIR", self.root())
            .env("TMPDIR", self.dir.path().join("tmp"))
            .env_remove("HOLO_NO_BATCH");
        command
    }
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Kills holo's process group and the groups of the commands it started.
fn kill_all(tree: &Tree, group: Pid) {
    let _ = killpg(group, Signal::SIGKILL);
    for pid in fs::read_to_string(tree.pids())
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse::<i32>().ok())
    {
        let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
    let _ = fs::remove_file(tree.pids());
}

/// Starts an apply and kills it after `delay`; true when it was running.
fn run_and_kill(tree: &Tree, delay: Duration) -> bool {
    let mut child = tree
        .apply()
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start holo apply");
    let group = Pid::from_raw(i32::try_from(child.id()).expect("pid fits"));
    let started = Instant::now();
    while started.elapsed() < delay {
        if child.try_wait().expect("poll").is_some() {
            kill_all(tree, group);
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    kill_all(tree, group);
    child.wait().expect("reap holo");
    let gone_by = Instant::now() + Duration::from_secs(10);
    while killpg(group, None).is_ok() {
        assert!(Instant::now() < gone_by, "the killed run does not end");
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

/// Names of ours that must not outlive a converged run: atomic writes,
/// archive staging, downloads in progress.
fn strays(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("list").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if name.starts_with(".holo-tmp-")
            || name.starts_with(".holo-archive-")
            || name.starts_with(".app.tar.gz-")
            || name.ends_with(".part")
        {
            found.push(path.clone());
        }
        if entry.file_type().expect("type").is_dir() {
            strays(&path, found);
        }
    }
}

fn check_not_torn(tree: &Tree, scenario: &dyn Scenario, round: u32) {
    for (path, allowed) in scenario.allowed(tree, round) {
        let current = match fs::read_to_string(&path) {
            Ok(text) => Some(text),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
            Err(err) => panic!("{}: {err}", path.display()),
        };
        assert!(
            allowed.contains(&current),
            "{} round {round}: {} is torn: {current:?}, expected one of {allowed:?}",
            scenario.name(),
            path.display()
        );
    }
}

fn check_converges(tree: &Tree, scenario: &dyn Scenario, round: u32) {
    let converged = tree.apply().output().expect("run holo apply");
    let shown = text(&converged);
    assert_eq!(
        converged.status.code(),
        Some(0),
        "{} round {round}: {shown}",
        scenario.name()
    );
    for bad in [
        "!!",
        "requires --force",
        "modified by user",
        "deleted by user",
    ] {
        assert!(
            !shown.contains(bad),
            "{} round {round}: {bad:?} in {shown}",
            scenario.name()
        );
    }
    for (path, wanted) in scenario.converged(tree, round) {
        assert_eq!(
            fs::read_to_string(&path).ok().as_deref(),
            Some(wanted.as_str()),
            "{} round {round}: {}",
            scenario.name(),
            path.display()
        );
    }
    let mut found = Vec::new();
    strays(&tree.root(), &mut found);
    assert!(
        found.is_empty(),
        "{} round {round}: left behind: {found:?}",
        scenario.name()
    );
    let again = tree.apply().output().expect("run holo apply");
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert!(
        !String::from_utf8_lossy(&again.stdout).contains("Working on"),
        "{} round {round}: a converged tree changes nothing: {}",
        scenario.name(),
        text(&again)
    );
}

/// Version 0 converged, then rounds of: change, killed run, checks.
fn kill_at_random(scenario: &dyn Scenario) {
    let plugins = build_plugins();
    let tree = Tree::new(&plugins);
    let mut random = Random::seeded();
    scenario.declare(&tree, 0);
    let started = Instant::now();
    check_converges(&tree, scenario, 0);
    // The converging run and the no-op run after it.
    let full_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(1000) / 2;
    let mut killed_runs = 0;
    for round in 1..=ROUNDS {
        scenario.declare(&tree, round);
        let delay = Duration::from_millis(10 + random.below(full_ms + full_ms / 2));
        if run_and_kill(&tree, delay) {
            killed_runs += 1;
        }
        check_not_torn(&tree, scenario, round);
        check_converges(&tree, scenario, round);
    }
    eprintln!(
        "{}: {killed_runs} of {ROUNDS} runs killed midway (a full run takes {full_ms} ms)",
        scenario.name()
    );
    assert!(killed_runs > 0, "{}: no kill landed", scenario.name());
}

const FILES: u32 = 30;

fn file_content(index: u32, round: u32) -> String {
    format!("file {index}, version {round}\n").repeat(50)
}

struct Files;

impl Scenario for Files {
    fn name(&self) -> &'static str {
        "holo-file"
    }

    fn declare(&self, tree: &Tree, round: u32) {
        let mut resources = String::new();
        for index in 0..FILES {
            if round == 0 {
                tree.write(&format!("srv/files/f{index}"), "before holo\n");
            }
            resources.push_str(&format!(
                "[[file]]\nname = \"/srv/files/f{index}\"\ncontent = {:?}\nowner = \"app\"\ngroup = \"app\"\nmode = \"0644\"\n\n",
                file_content(index, round)
            ));
        }
        tree.write("usr/share/holo/file/files.toml", &resources);
    }

    fn allowed(&self, tree: &Tree, round: u32) -> Vec<(PathBuf, Vec<Option<String>>)> {
        (0..FILES)
            .map(|index| {
                (
                    tree.root().join(format!("srv/files/f{index}")),
                    vec![
                        Some(file_content(index, round - 1)),
                        Some(file_content(index, round)),
                    ],
                )
            })
            .collect()
    }

    fn converged(&self, tree: &Tree, round: u32) -> Vec<(PathBuf, String)> {
        (0..FILES)
            .map(|index| {
                (
                    tree.root().join(format!("srv/files/f{index}")),
                    file_content(index, round),
                )
            })
            .collect()
    }
}

fn template_content(index: u32, round: u32) -> String {
    format!("template {index}, version {round}\n").repeat(20)
}

/// What the post command makes of a rendered `.sh` file.
const POSTED: &str = "# posted\n";

struct Scaffold;

impl Scaffold {
    fn target(tree: &Tree, index: u32) -> (PathBuf, bool) {
        let with_post = index.is_multiple_of(3);
        let name = if with_post {
            format!("srv/scaffold/t{index}.sh")
        } else {
            format!("srv/scaffold/t{index}.conf")
        };
        (tree.root().join(name), with_post)
    }
}

impl Scenario for Scaffold {
    fn name(&self) -> &'static str {
        "holo-scaffold"
    }

    fn declare(&self, tree: &Tree, round: u32) {
        for index in 0..FILES {
            let (target, _) = Scaffold::target(tree, index);
            let name = target.file_name().expect("name").to_string_lossy();
            tree.write(
                &format!("usr/share/holo/scaffold/app/{name}"),
                &template_content(index, round),
            );
        }
        let post = format!(
            "sh -c 'echo $$ >> {}; sleep 0.02; echo \"# posted\" >> \"$1\"' post",
            tree.pids().display()
        );
        tree.write(
            "usr/share/holo/scaffold/app.toml",
            &format!(
                "[[scaffold]]\nname = \"/srv/scaffold\"\nsource = \"app\"\npost = [{{ \"*.sh\" = {post:?} }}]\n"
            ),
        );
    }

    fn allowed(&self, tree: &Tree, round: u32) -> Vec<(PathBuf, Vec<Option<String>>)> {
        (0..FILES)
            .map(|index| {
                let (target, with_post) = Scaffold::target(tree, index);
                let old = template_content(index, round - 1);
                let new = template_content(index, round);
                let allowed = if with_post {
                    // Rendered, and post not run yet, is allowed between.
                    vec![
                        Some(format!("{old}{POSTED}")),
                        Some(new.clone()),
                        Some(format!("{new}{POSTED}")),
                    ]
                } else {
                    vec![Some(old), Some(new)]
                };
                (target, allowed)
            })
            .collect()
    }

    fn converged(&self, tree: &Tree, round: u32) -> Vec<(PathBuf, String)> {
        (0..FILES)
            .map(|index| {
                let (target, with_post) = Scaffold::target(tree, index);
                let new = template_content(index, round);
                (
                    target,
                    if with_post {
                        format!("{new}{POSTED}")
                    } else {
                        new
                    },
                )
            })
            .collect()
    }
}

fn archive_content(index: u32, round: u32) -> String {
    format!("archive file {index}, version {round}\n").repeat(100)
}

struct Archive {
    server: Server,
    /// Per round: URL and checksum.
    versions: Vec<(String, String)>,
}

impl Archive {
    /// Builds every round's archive with `tar` and serves it.
    fn new() -> Archive {
        let server = Server::start();
        let work = tempfile::tempdir().expect("tempdir");
        let mut versions = Vec::new();
        for round in 0..=ROUNDS {
            let tree = work.path().join(format!("v{round}"));
            for index in 0..FILES * 3 {
                let path = tree.join(format!("app/d{}/f{index}", index / 10));
                fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
                fs::write(&path, archive_content(index, round)).expect("write");
            }
            let archive = work.path().join(format!("v{round}.tar.gz"));
            let status = Command::new("tar")
                .arg("-czf")
                .arg(&archive)
                .arg("-C")
                .arg(&tree)
                .arg("app")
                .status()
                .expect("run tar");
            assert!(status.success(), "tar failed");
            let bytes = fs::read(&archive).expect("archive");
            let checksum = sha256(&bytes);
            versions.push((
                server.serve(&format!("/v{round}/app.tar.gz"), Route::body(bytes)),
                checksum,
            ));
        }
        Archive { server, versions }
    }

    fn targets(tree: &Tree) -> impl Iterator<Item = (u32, PathBuf)> + '_ {
        (0..FILES * 3).map(move |index| {
            (
                index,
                tree.root()
                    .join(format!("srv/archive/app/d{}/f{index}", index / 10)),
            )
        })
    }
}

impl Scenario for Archive {
    fn name(&self) -> &'static str {
        "holo-archive"
    }

    fn declare(&self, tree: &Tree, round: u32) {
        let _ = &self.server;
        let (url, checksum) = &self.versions[round as usize];
        tree.write(
            "usr/share/holo/archive/app.toml",
            &format!(
                "[[archive]]\nname = \"/opt/app.tar.gz\"\nurl = \"{url}\"\nchecksum = \"{checksum}\"\nowner = \"app\"\ngroup = \"app\"\nextract_parent = \"/srv/archive\"\n"
            ),
        );
    }

    fn allowed(&self, tree: &Tree, round: u32) -> Vec<(PathBuf, Vec<Option<String>>)> {
        Archive::targets(tree)
            .map(|(index, path)| {
                (
                    path,
                    vec![
                        Some(archive_content(index, round - 1)),
                        Some(archive_content(index, round)),
                    ],
                )
            })
            .collect()
    }

    fn converged(&self, tree: &Tree, round: u32) -> Vec<(PathBuf, String)> {
        Archive::targets(tree)
            .map(|(index, path)| (path, archive_content(index, round)))
            .collect()
    }
}

const EXECS: u32 = 5;

struct Exec;

impl Exec {
    fn marker(tree: &Tree, index: u32, round: u32) -> PathBuf {
        tree.root().join(format!("srv/exec/r{round}-{index}"))
    }
}

impl Scenario for Exec {
    fn name(&self) -> &'static str {
        "holo-exec"
    }

    fn declare(&self, tree: &Tree, round: u32) {
        fs::create_dir_all(tree.root().join("srv/exec")).expect("mkdir");
        let mut resources = String::new();
        for index in 0..EXECS {
            let marker = Exec::marker(tree, index, round);
            // The command writes its marker atomically, beside the root.
            let temp = tree.dir.path().join(format!("exec-{round}-{index}"));
            let script = format!(
                "echo $$ >> {pids}; sleep 0.05; echo done {round} > {temp}; mv {temp} {marker}",
                pids = tree.pids().display(),
                temp = temp.display(),
                marker = marker.display()
            );
            resources.push_str(&format!(
                "[[exec]]\nname = \"marker-{index}\"\ncommand = {:?}\ncreates = \"/srv/exec/r{round}-{index}\"\n\n",
                format!("sh -c '{script}'")
            ));
        }
        tree.write("usr/share/holo/exec/exec.toml", &resources);
    }

    fn allowed(&self, tree: &Tree, round: u32) -> Vec<(PathBuf, Vec<Option<String>>)> {
        (0..EXECS)
            .map(|index| {
                (
                    Exec::marker(tree, index, round),
                    vec![None, Some(format!("done {round}\n"))],
                )
            })
            .collect()
    }

    fn converged(&self, tree: &Tree, round: u32) -> Vec<(PathBuf, String)> {
        (0..EXECS)
            .map(|index| (Exec::marker(tree, index, round), format!("done {round}\n")))
            .collect()
    }
}

#[test]
fn holo_file_survives_random_kills() {
    kill_at_random(&Files);
}

#[test]
fn holo_scaffold_survives_random_kills() {
    kill_at_random(&Scaffold);
}

#[test]
fn holo_archive_survives_random_kills() {
    kill_at_random(&Archive::new());
}

#[test]
fn holo_exec_with_creates_survives_random_kills() {
    kill_at_random(&Exec);
}
