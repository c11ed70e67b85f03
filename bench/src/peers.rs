//! holo against its peers on the same job: N managed files (content, owner,
//! group and mode) and their parent directory as a resource, applied by
//! holo with holo-file, by Puppet (`puppet apply`) and by CFEngine
//! (`cf-agent -K`), each in a temporary directory of its own. Every round
//! times a first apply and a no-op apply of each tool, the tools taking
//! turns, and the medians are printed with their ratios. A peer that is not
//! installed is skipped with a line that says so. Entry point: [`run`].
//!
//! The floor of a no-op run is what any tool must do at least: read every
//! file (`sha256sum`) and look at its attributes (`stat`), timed in the
//! same rounds, twice: through `xargs` (several processes of each), and
//! the tight floor, one `sha256sum` and one `stat` process over all files.
//! The ratios to the floors are given of the medians and, paired, as the
//! median of each round's ratio. holo's peak memory is its largest process
//! (the driver or a plugin) in the no-op. Per-process mode is held against a bare process start per
//! entity, twice: our driver with `HOLO_NO_BATCH=1`, and Holo 3's Go driver
//! (which has no batch) running our holo-file, built from the Holo 3 source
//! tree named by `HOLO3_SOURCE` with Go (skipped, saying so, without them).
//! Each driver also runs `holo-null`, a plugin that does nothing per entity,
//! on N entities: the driver's own floor, so that the time a driver takes
//! per entity splits into its own and holo-file's.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::file::write_bench_user;
use crate::util::{release_binaries, root_with_plugins, time_holo};

/// Rounds per size; the median of each figure is printed.
const ROUNDS: usize = 3;

struct Figures {
    label: &'static str,
    first: Vec<Duration>,
    noop: Vec<Duration>,
}

impl Figures {
    fn new(label: &'static str) -> Self {
        Figures {
            label,
            first: Vec::new(),
            noop: Vec::new(),
        }
    }
}

fn median(times: &[Duration]) -> Option<Duration> {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted.get(sorted.len() / 2).copied()
}

fn secs(time: Option<Duration>) -> String {
    time.map_or_else(|| "-".to_string(), |t| format!("{:.3} s", t.as_secs_f64()))
}

fn ratio(a: Option<Duration>, b: Option<Duration>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if !b.is_zero() => format!("{:.2}", a.as_secs_f64() / b.as_secs_f64()),
        _ => "-".to_string(),
    }
}

/// The tools of the comparison, found once.
struct Tools {
    bin: PathBuf,
    /// `BENCH_OLD_BIN`: the holo and holo-file of an older build.
    old_bin: Option<PathBuf>,
    puppet: Option<PathBuf>,
    cfengine: Option<PathBuf>,
    holo3: Option<Holo3>,
    user: String,
    group: String,
    /// `BENCH_SKIP`: what to leave out, comma-separated.
    skip: String,
    rounds: usize,
}

/// One size's figures, over all rounds.
struct SizeFigures {
    holo: Figures,
    holo_old: Figures,
    per_process: Figures,
    holo3: Figures,
    holo3_null: Figures,
    per_process_null: Figures,
    puppet: Figures,
    cfengine: Figures,
    floor: Vec<Duration>,
    /// One `sha256sum` and one `stat` process over all files.
    tight_floor: Vec<Duration>,
    /// holo's no-op over each floor, round by round.
    paired_floor: Vec<f64>,
    paired_tight: Vec<f64>,
    paired_tight_old: Vec<f64>,
    /// The largest resident set of holo's no-op (driver or plugin), KiB.
    peak_kib: Vec<u64>,
    spawn: Vec<Duration>,
}

impl SizeFigures {
    fn new() -> Self {
        SizeFigures {
            holo: Figures::new("holo (batch)"),
            holo_old: Figures::new("holo before (batch)"),
            per_process: Figures::new("holo (HOLO_NO_BATCH=1)"),
            holo3: Figures::new("Holo 3 driver, holo-file"),
            holo3_null: Figures::new("Holo 3 driver, holo-null"),
            per_process_null: Figures::new("HOLO_NO_BATCH=1, holo-null"),
            puppet: Figures::new("Puppet"),
            cfengine: Figures::new("CFEngine"),
            floor: Vec::new(),
            tight_floor: Vec::new(),
            paired_floor: Vec::new(),
            paired_tight: Vec::new(),
            paired_tight_old: Vec::new(),
            peak_kib: Vec::new(),
            spawn: Vec::new(),
        }
    }
}

/// Runs the comparison for each size in `sizes`.
pub fn run(sizes: &[usize]) -> Result<(), String> {
    let tools = Tools::find()?;
    for &n in sizes {
        let mut figures = SizeFigures::new();
        // Every tree stays until the size is done: ext4 skips inodes freed
        // in the last minutes when it allocates, so a tree deleted just
        // before a run makes that run's file creations scan past them.
        let mut kept = Vec::new();
        for _ in 0..tools.rounds {
            tools.round(n, &mut figures, &mut kept)?;
        }
        print_size(n, &figures, tools.holo3.is_some());
        drop(kept);
    }
    Ok(())
}

impl Tools {
    /// The release binaries and the peers that are installed (and not
    /// left out), each one missing said so.
    fn find() -> Result<Tools, String> {
        let bin = release_binaries(&["holo", "holo-file", "bench"])?;
        // BENCH_SKIP=puppet,cfengine,per-process,holo3 leaves those out;
        // BENCH_OLD_BIN=DIR adds the holo and holo-file of an older build.
        let skip = std::env::var("BENCH_SKIP").unwrap_or_default();
        let skipped = |what: &str| skip.split(',').any(|item| item.trim() == what);
        let old_bin = std::env::var_os("BENCH_OLD_BIN").map(PathBuf::from);
        let puppet = which("puppet").filter(|_| !skipped("puppet"));
        let cfengine = which("cf-agent")
            .filter(|_| which("cf-key").is_some())
            .filter(|_| !skipped("cfengine"));
        println!(
            "# holo against Puppet and CFEngine: N files with content, owner, group, mode and their directory"
        );
        let rounds = std::env::var("BENCH_ROUNDS")
            .ok()
            .and_then(|text| text.parse().ok())
            .unwrap_or(ROUNDS);
        println!("# {rounds} rounds per size, tools in turn; medians");
        if skipped("puppet") {
            println!("# skipped Puppet: BENCH_SKIP");
        } else if puppet.is_none() {
            println!("# skipped Puppet: `puppet` is not installed (apt-get install puppet-agent)");
        }
        if skipped("cfengine") {
            println!("# skipped CFEngine: BENCH_SKIP");
        } else if cfengine.is_none() {
            println!(
                "# skipped CFEngine: `cf-agent`/`cf-key` are not installed (apt-get install cfengine3)"
            );
        }
        let holo3 = if skipped("holo3") {
            None
        } else {
            build_holo3()?
        };
        let (user, group) = current_user_and_group()?;
        Ok(Tools {
            bin,
            old_bin,
            puppet,
            cfengine,
            holo3,
            user,
            group,
            skip,
            rounds,
        })
    }

    fn skipped(&self, what: &str) -> bool {
        self.skip.split(',').any(|item| item.trim() == what)
    }

    /// One round at size `n`: every tool in turn, a first apply and a
    /// no-op apply each.
    fn round(
        &self,
        n: usize,
        figures: &mut SizeFigures,
        kept: &mut Vec<tempfile::TempDir>,
    ) -> Result<(), String> {
        let bin = &self.bin;
        let no_batch = &[("HOLO_NO_BATCH", "1")][..];
        let mut runs = vec![(&mut figures.holo, bin.as_path(), &[][..])];
        if let Some(old) = &self.old_bin {
            runs.push((&mut figures.holo_old, old.as_path(), &[][..]));
        }
        if !self.skipped("per-process") {
            runs.push((&mut figures.per_process, bin.as_path(), no_batch));
            let root = null_root(bin, n)?;
            for times in [
                &mut figures.per_process_null.first,
                &mut figures.per_process_null.noop,
            ] {
                times.push(time_holo(bin, root.path(), &["apply"], no_batch, &[0])?);
            }
            kept.push(root);
        }
        for (index, (tool, bin, env)) in runs.into_iter().enumerate() {
            let root = root_with_plugins(bin, &["file"])?;
            write_holo_fixture(root.path(), n)?;
            settle();
            tool.first
                .push(time_holo(bin, root.path(), &["apply"], env, &[0])?);
            check_written(&root.path().join("srv/bench"), n)?;
            if index == 0 {
                let (noop, peak) = time_holo_peak(bin, root.path())?;
                tool.noop.push(noop);
                figures.peak_kib.push(peak);
                let dir = root.path().join("srv/bench");
                let (floor, tight) = (time_floor(&dir)?, time_tight_floor(&dir)?);
                figures.floor.push(floor);
                figures.tight_floor.push(tight);
                figures
                    .paired_floor
                    .push(noop.as_secs_f64() / floor.as_secs_f64());
                figures
                    .paired_tight
                    .push(noop.as_secs_f64() / tight.as_secs_f64());
            } else {
                let noop = time_holo(bin, root.path(), &["apply"], env, &[0])?;
                tool.noop.push(noop);
                if let (1, Some(tight)) = (index, figures.tight_floor.last()) {
                    // The older build, against this round's floor.
                    let ratio = noop.as_secs_f64() / tight.as_secs_f64();
                    figures.paired_tight_old.push(ratio);
                }
            }
            kept.push(root);
        }
        if let Some(holo3) = &self.holo3 {
            self.round_holo3(holo3, n, figures, kept)?;
        }
        self.round_peers(n, figures, kept)?;
        if !self.skipped("per-process") || self.holo3.is_some() {
            figures.spawn.push(time_spawns(n)?);
        }
        Ok(())
    }

    /// Holo 3's driver with our holo-file, and with holo-null.
    fn round_holo3(
        &self,
        holo3: &Holo3,
        n: usize,
        figures: &mut SizeFigures,
        kept: &mut Vec<tempfile::TempDir>,
    ) -> Result<(), String> {
        let root = root_with_plugins(&self.bin, &["file"])?;
        write_holo_fixture(root.path(), n)?;
        std::fs::create_dir_all(root.path().join("usr/share/holo/generators"))
            .map_err(|e| e.to_string())?;
        settle();
        figures
            .holo3
            .first
            .push(time_holo3(&holo3.driver, root.path())?);
        check_written(&root.path().join("srv/bench"), n)?;
        figures
            .holo3
            .noop
            .push(time_holo3(&holo3.driver, root.path())?);
        kept.push(root);
        let root = null_root(&self.bin, n)?;
        figures
            .holo3_null
            .first
            .push(time_holo3(&holo3.driver, root.path())?);
        figures
            .holo3_null
            .noop
            .push(time_holo3(&holo3.driver, root.path())?);
        kept.push(root);
        Ok(())
    }

    /// Puppet and CFEngine, where installed.
    fn round_peers(
        &self,
        n: usize,
        figures: &mut SizeFigures,
        kept: &mut Vec<tempfile::TempDir>,
    ) -> Result<(), String> {
        if let Some(puppet) = &self.puppet {
            let work = tempfile::tempdir().map_err(|e| e.to_string())?;
            let manifest = write_puppet_fixture(work.path(), n, &self.user, &self.group)?;
            settle();
            figures
                .puppet
                .first
                .push(time_puppet(puppet, work.path(), &manifest)?);
            check_written(&work.path().join("files"), n)?;
            figures
                .puppet
                .noop
                .push(time_puppet(puppet, work.path(), &manifest)?);
            kept.push(work);
        }
        if let Some(agent) = &self.cfengine {
            let work = tempfile::tempdir().map_err(|e| e.to_string())?;
            let policy = write_cfengine_fixture(work.path(), agent, n, &self.user, &self.group)?;
            settle();
            figures
                .cfengine
                .first
                .push(time_cfengine(work.path(), &policy)?);
            check_written(&work.path().join("files"), n)?;
            figures
                .cfengine
                .noop
                .push(time_cfengine(work.path(), &policy)?);
            kept.push(work);
        }
        Ok(())
    }
}

/// The medians of size `n`, per tool, and their ratios.
fn print_size(n: usize, figures: &SizeFigures, with_holo3: bool) {
    println!();
    println!("N = {n}");
    println!("{:<26} {:>12} {:>12}", "tool", "first", "no-op");
    for tool in [
        &figures.holo,
        &figures.holo_old,
        &figures.per_process,
        &figures.per_process_null,
        &figures.holo3,
        &figures.holo3_null,
        &figures.puppet,
        &figures.cfengine,
    ] {
        if tool.first.is_empty() {
            continue;
        }
        println!(
            "{:<26} {:>12} {:>12}   per file {:.1} µs / {:.1} µs",
            tool.label,
            secs(median(&tool.first)),
            secs(median(&tool.noop)),
            per_file(median(&tool.first), n),
            per_file(median(&tool.noop), n),
        );
    }
    println!(
        "{:<26} {:>12} {:>12}",
        "floor (sha256sum + stat)",
        "",
        secs(median(&figures.floor))
    );
    println!(
        "{:<26} {:>12} {:>12}",
        "tight floor (1 + 1 proc)",
        "",
        secs(median(&figures.tight_floor))
    );
    println!(
        "{:<26} {:>12} {:>12}",
        "N bare process starts",
        "",
        secs(median(&figures.spawn))
    );
    print_ratios(figures, with_holo3);
    print_floor_ratios(figures);
    println!("load average after N = {n}: {}", load_average());
}

/// holo's no-op against both floors, of the medians and paired by round,
/// and its peak memory.
fn print_floor_ratios(figures: &SizeFigures) {
    let noop = median(&figures.holo.noop);
    let paired = |ratios: &[f64]| {
        let mut sorted = ratios.to_vec();
        sorted.sort_by(f64::total_cmp);
        sorted
            .get(sorted.len() / 2)
            .map_or_else(|| "-".to_string(), |ratio| format!("{ratio:.2}"))
    };
    println!(
        "holo no-op / floor {} (paired {}); holo no-op / tight floor {} (paired {}); peak memory of the no-op {}",
        ratio(noop, median(&figures.floor)),
        paired(&figures.paired_floor),
        ratio(noop, median(&figures.tight_floor)),
        paired(&figures.paired_tight),
        {
            let mut peaks = figures.peak_kib.clone();
            peaks.sort_unstable();
            peaks.get(peaks.len() / 2).map_or_else(
                || "-".to_string(),
                |kib| format!("{:.1} MB", *kib as f64 / 1024.0),
            )
        },
    );
    if !figures.holo_old.noop.is_empty() {
        println!(
            "holo before: no-op / tight floor {} (paired {})",
            ratio(median(&figures.holo_old.noop), median(&figures.tight_floor)),
            paired(&figures.paired_tight_old),
        );
    }
}

/// holo against its peers, the floor and the bare process starts.
fn print_ratios(figures: &SizeFigures, with_holo3: bool) {
    let SizeFigures {
        holo,
        holo_old,
        per_process,
        holo3,
        holo3_null,
        per_process_null,
        puppet,
        cfengine,
        floor,
        // In print_floor_ratios.
        tight_floor: _,
        paired_floor: _,
        paired_tight: _,
        paired_tight_old: _,
        peak_kib: _,
        spawn,
    } = figures;
    let holo_first = median(&holo.first);
    let holo_noop = median(&holo.noop);
    println!(
        "ratios: holo/CFEngine first {} no-op {}; holo/Puppet first {} no-op {}; holo no-op/floor {}; per-process first/bare starts {} no-op/bare starts {}; before/now first {} no-op {}",
        ratio(holo_first, median(&cfengine.first)),
        ratio(holo_noop, median(&cfengine.noop)),
        ratio(holo_first, median(&puppet.first)),
        ratio(holo_noop, median(&puppet.noop)),
        ratio(holo_noop, median(floor)),
        ratio(median(&per_process.first), median(spawn)),
        ratio(median(&per_process.noop), median(spawn)),
        ratio(median(&holo_old.first), holo_first),
        ratio(median(&holo_old.noop), holo_noop),
    );
    if !per_process_null.noop.is_empty() {
        println!(
            "HOLO_NO_BATCH=1 per entity/bare start: holo-null {}; holo-file first {} no-op {}; holo-file no-op/holo-null {}",
            ratio(median(&per_process_null.noop), median(spawn)),
            ratio(median(&per_process.first), median(spawn)),
            ratio(median(&per_process.noop), median(spawn)),
            ratio(median(&per_process.noop), median(&per_process_null.noop)),
        );
    }
    if with_holo3 {
        println!(
            "Holo 3 driver per entity/bare start: holo-null {}; holo-file first {} no-op {}; holo-file no-op/holo-null {}",
            ratio(median(&holo3_null.noop), median(spawn)),
            ratio(median(&holo3.first), median(spawn)),
            ratio(median(&holo3.noop), median(spawn)),
            ratio(median(&holo3.noop), median(&holo3_null.noop)),
        );
    }
}

/// Writes out what earlier runs left dirty before a first apply is timed:
/// holo's commit and CFEngine's writes sync the file system, and would
/// otherwise pay for the tool that ran before them.
fn settle() {
    nix::unistd::sync();
}

/// The first three fields of /proc/loadavg: the machine is shared.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|_| "unknown".to_string())
}

/// A root with `holo-null` declaring N entities (see src/bin/holo-null.rs),
/// ready for our driver and for Holo 3's.
fn null_root(bin: &Path, n: usize) -> Result<tempfile::TempDir, String> {
    let root = root_with_plugins(bin, &["null"])?;
    std::fs::write(root.path().join("usr/share/holo/null/count"), n.to_string())
        .map_err(|e| e.to_string())?;
    std::fs::create_dir_all(root.path().join("usr/share/holo/generators"))
        .map_err(|e| e.to_string())?;
    Ok(root)
}

/// Every tool must have done the whole job: N files with their content.
fn check_written(dir: &Path, n: usize) -> Result<(), String> {
    for i in [0, n.saturating_sub(1)] {
        let path = dir.join(format!("f{i:06}.conf"));
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        if text != content(i) {
            return Err(format!("{}: unexpected content {text:?}", path.display()));
        }
    }
    let count = std::fs::read_dir(dir).map_err(|e| e.to_string())?.count();
    if count != n {
        return Err(format!("{}: {count} files, expected {n}", dir.display()));
    }
    Ok(())
}

fn per_file(time: Option<Duration>, n: usize) -> f64 {
    time.map_or(0.0, |t| t.as_secs_f64() * 1e6 / n as f64)
}

fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// The name of the user and group running the benchmark: every tool sets
/// them as owner and group, so that chown works without root.
fn current_user_and_group() -> Result<(String, String), String> {
    let uid = nix::unistd::getuid();
    let gid = nix::unistd::getgid();
    let user = nix::unistd::User::from_uid(uid)
        .map_err(|e| e.to_string())?
        .map_or_else(|| uid.to_string(), |u| u.name);
    let group = nix::unistd::Group::from_gid(gid)
        .map_err(|e| e.to_string())?
        .map_or_else(|| gid.to_string(), |g| g.name);
    Ok((user, group))
}

fn content(i: usize) -> String {
    format!("value = {i}\n")
}

/// holo-file's resources: the directory `/srv/bench` and N files in it
/// that require it.
fn write_holo_fixture(root: &Path, n: usize) -> Result<(), String> {
    write_bench_user(root)?;
    std::fs::remove_dir(root.join("srv/bench")).map_err(|e| e.to_string())?;
    let mut toml = String::with_capacity(n * 140);
    toml.push_str("[[file]]\nname = \"/srv/bench\"\nensure = \"directory\"\nowner = \"bench\"\ngroup = \"bench\"\nmode = \"0755\"\n\n");
    for i in 0..n {
        toml.push_str(&format!(
            "[[file]]\nname = \"/srv/bench/f{i:06}.conf\"\ncontent = {:?}\nowner = \"bench\"\ngroup = \"bench\"\nmode = \"0644\"\nrequire = [\"file:/srv/bench\"]\n\n",
            content(i)
        ));
    }
    std::fs::write(root.join("usr/share/holo/file/bench.toml"), toml).map_err(|e| e.to_string())
}

/// A manifest with the directory and N file resources below `work/files`.
fn write_puppet_fixture(work: &Path, n: usize, user: &str, group: &str) -> Result<PathBuf, String> {
    let dir = work.join("files");
    let mut manifest = String::with_capacity(n * 160);
    manifest.push_str(&format!(
        "file {{ '{}': ensure => directory, owner => '{user}', group => '{group}', mode => '0755' }}\n",
        dir.display()
    ));
    for i in 0..n {
        manifest.push_str(&format!(
            "file {{ '{}/f{i:06}.conf': ensure => file, content => \"value = {i}\\n\", owner => '{user}', group => '{group}', mode => '0644' }}\n",
            dir.display()
        ));
    }
    let path = work.join("site.pp");
    std::fs::write(&path, manifest).map_err(|e| e.to_string())?;
    for sub in ["conf", "var", "code", "log", "run"] {
        std::fs::create_dir_all(work.join(sub)).map_err(|e| e.to_string())?;
    }
    Ok(path)
}

fn time_puppet(puppet: &Path, work: &Path, manifest: &Path) -> Result<Duration, String> {
    let mut command = Command::new(puppet);
    command.arg("apply");
    for (flag, sub) in [
        ("--confdir", "conf"),
        ("--vardir", "var"),
        ("--codedir", "code"),
        ("--logdir", "log"),
        ("--rundir", "run"),
    ] {
        command.arg(flag).arg(work.join(sub));
    }
    command
        .args(["--detailed-exitcodes", "--color=false"])
        .arg(manifest);
    // --detailed-exitcodes: 0 nothing changed, 2 changes applied.
    timed(&mut command, &[0, 2], "puppet apply")
}

/// A CFEngine work directory (`bin/` links to the installed binaries, a key
/// made by `cf-key`) and a policy with the directory and N files below
/// `work/files`.
fn write_cfengine_fixture(
    work: &Path,
    agent: &Path,
    n: usize,
    user: &str,
    group: &str,
) -> Result<PathBuf, String> {
    let bin_dir = work.join("bin");
    std::fs::create_dir_all(&bin_dir).map_err(|e| e.to_string())?;
    let installed = agent.parent().unwrap_or(Path::new("/usr/bin"));
    for program in ["cf-agent", "cf-promises", "cf-key"] {
        let target = installed.join(program);
        if target.is_file() {
            std::os::unix::fs::symlink(&target, bin_dir.join(program))
                .map_err(|e| e.to_string())?;
        }
    }
    for sub in ["inputs", "ppkeys", "state", "outputs"] {
        std::fs::create_dir_all(work.join(sub)).map_err(|e| e.to_string())?;
    }
    // cf-agent refuses a key directory that others can read.
    for private in ["ppkeys", "state"] {
        std::fs::set_permissions(
            work.join(private),
            std::os::unix::fs::PermissionsExt::from_mode(0o700),
        )
        .map_err(|e| e.to_string())?;
    }
    let mut key = Command::new(bin_dir.join("cf-key"));
    key.arg("-f").arg(work.join("ppkeys/localhost"));
    timed(&mut key, &[0], "cf-key")?;
    let dir = work.join("files");
    let mut policy = String::with_capacity(n * 120);
    policy.push_str("body common control\n{\n  bundlesequence => { \"bench\" };\n}\n\n");
    policy.push_str(&format!(
        "body perms p(m)\n{{\n  mode => \"$(m)\";\n  rxdirs => \"false\";\n  owners => {{ \"{user}\" }};\n  groups => {{ \"{group}\" }};\n}}\n\n"
    ));
    policy.push_str("bundle agent bench\n{\n  files:\n");
    policy.push_str(&format!(
        "    \"{}/.\" create => \"true\", perms => p(\"0755\");\n",
        dir.display()
    ));
    for i in 0..n {
        policy.push_str(&format!(
            "    \"{}/f{i:06}.conf\" create => \"true\", content => \"value = {i}$(const.n)\", perms => p(\"0644\");\n",
            dir.display()
        ));
    }
    policy.push_str("}\n");
    let path = work.join("inputs/promises.cf");
    std::fs::write(&path, policy).map_err(|e| e.to_string())?;
    Ok(path)
}

fn time_cfengine(work: &Path, policy: &Path) -> Result<Duration, String> {
    let mut command = Command::new(work.join("bin/cf-agent"));
    command.arg("-K").arg("-w").arg(work).arg("-f").arg(policy);
    timed(&mut command, &[0], "cf-agent")
}

/// `sha256sum` and `stat` of every file below `dir`.
fn time_floor(dir: &Path) -> Result<Duration, String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .collect();
    files.sort();
    let list = dir.with_extension("list");
    let mut text = String::new();
    for file in &files {
        text.push_str(&file.to_string_lossy());
        text.push('\n');
    }
    std::fs::write(&list, text).map_err(|e| e.to_string())?;
    let start = Instant::now();
    for program in ["sha256sum", "stat"] {
        let mut command = Command::new("xargs");
        command.arg("-a").arg(&list).arg(program);
        command.stdout(Stdio::null());
        let status = command.status().map_err(|e| e.to_string())?;
        if !status.success() {
            return Err(format!("xargs {program} failed"));
        }
    }
    let elapsed = start.elapsed();
    let _ = std::fs::remove_file(&list);
    Ok(elapsed)
}

/// One `sha256sum` and one `stat` process over every file below `dir`,
/// named relative to it. The stack limit is raised first: it bounds the
/// argument list, which for 100,000 names passes the default 2 MB.
fn time_tight_floor(dir: &Path) -> Result<Duration, String> {
    let mut names: Vec<std::ffi::OsString> = std::fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .filter_map(|entry| entry.ok().map(|e| e.file_name()))
        .collect();
    names.sort();
    raise_stack_limit();
    let start = Instant::now();
    for program in ["sha256sum", "stat"] {
        let status = Command::new(program)
            .arg("--")
            .args(&names)
            .current_dir(dir)
            .stdout(Stdio::null())
            .status()
            .map_err(|e| format!("{program} with {} names: {e}", names.len()))?;
        if !status.success() {
            return Err(format!("{program} failed"));
        }
    }
    Ok(start.elapsed())
}

/// Lifts the soft stack limit to 64 MiB (or the hard limit): the kernel
/// takes a quarter of it, up to 6 MiB, for a new program's arguments.
fn raise_stack_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write `limit`.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_STACK, &mut limit) == 0 {
            let wanted = (64 << 20).min(limit.rlim_max);
            if limit.rlim_cur < wanted {
                limit.rlim_cur = wanted;
                libc::setrlimit(libc::RLIMIT_STACK, &limit);
            }
        }
    }
}

/// A no-op `holo apply` on `root`: its wall time and the peak resident
/// set of holo or any plugin it ran, in KiB (from `wait4`, which gives a
/// child's largest, its own or that of a child it waited for).
fn time_holo_peak(bin: &Path, root: &Path) -> Result<(Duration, u64), String> {
    let stderr_path = root.join("tmp/bench-stderr");
    let stderr = std::fs::File::create(&stderr_path).map_err(|e| e.to_string())?;
    let mut command = Command::new(bin.join("holo"));
    command
        .arg("apply")
        .env("HOLO_ROOT_DIR", root)
        .env("TMPDIR", root.join("tmp"))
        .env_remove("HOLO_NO_BATCH")
        .stdout(Stdio::null())
        .stderr(stderr);
    let start = Instant::now();
    let child = command.spawn().map_err(|e| format!("holo apply: {e}"))?;
    let pid = libc::pid_t::try_from(child.id()).map_err(|e| e.to_string())?;
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, which `child` does not wait for.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let elapsed = start.elapsed();
    drop(child);
    if waited != pid || !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        let text = std::fs::read_to_string(&stderr_path).unwrap_or_default();
        return Err(format!("no-op holo apply failed ({status}):\n{text}"));
    }
    Ok((elapsed, u64::try_from(usage.ru_maxrss).unwrap_or(0)))
}

/// Holo 3's Go driver, built for this run.
struct Holo3 {
    driver: PathBuf,
    /// Holds the build.
    _dir: tempfile::TempDir,
}

/// Builds Holo 3's driver from `HOLO3_SOURCE` offline, as its Makefile
/// does; `None`, saying why, without the source or Go.
fn build_holo3() -> Result<Option<Holo3>, String> {
    let Some(source) = std::env::var_os("HOLO3_SOURCE").map(PathBuf::from) else {
        println!("# skipped Holo 3's driver: set HOLO3_SOURCE to a Holo 3 source tree");
        return Ok(None);
    };
    let go = which("go").or_else(|| {
        let debian = PathBuf::from("/usr/lib/go-1.19/bin/go");
        debian.is_file().then_some(debian)
    });
    let Some(go) = go else {
        println!("# skipped Holo 3's driver: Go is not installed (apt-get install golang-1.19-go)");
        return Ok(None);
    };
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let driver = dir.path().join("holo3");
    let output = Command::new(&go)
        .args(["build", "-o"])
        .arg(&driver)
        .arg(".")
        .current_dir(&source)
        .env("GOFLAGS", "-mod=vendor")
        .env("GOPROXY", "off")
        .env("GOTOOLCHAIN", "local")
        .env(
            "GOCACHE",
            std::env::var_os("GOCACHE").unwrap_or_else(|| dir.path().join("go-cache").into()),
        )
        .output()
        .map_err(|e| format!("{}: {e}", go.display()))?;
    if !output.status.success() {
        return Err(format!(
            "building Holo 3 in {} failed:\n{}",
            source.display(),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    println!("# Holo 3's driver built from {}", source.display());
    Ok(Some(Holo3 { driver, _dir: dir }))
}

/// One `holo apply` of Holo 3's driver: a holo-file process per entity.
fn time_holo3(driver: &Path, root: &Path) -> Result<Duration, String> {
    let mut command = Command::new(driver);
    command
        .arg("apply")
        .env("HOLO_ROOT_DIR", root)
        .env("TMPDIR", root.join("tmp"))
        .stdout(Stdio::null());
    timed(&mut command, &[0], "Holo 3's holo apply")
}

/// N starts of `true`, one after another: the floor of a process per entity.
fn time_spawns(n: usize) -> Result<Duration, String> {
    let start = Instant::now();
    for _ in 0..n {
        let status = Command::new("true").status().map_err(|e| e.to_string())?;
        if !status.success() {
            return Err("true failed".to_string());
        }
    }
    Ok(start.elapsed())
}

fn timed(command: &mut Command, ok_codes: &[i32], what: &str) -> Result<Duration, String> {
    let start = Instant::now();
    let output = command.output().map_err(|e| format!("{what}: {e}"))?;
    let elapsed = start.elapsed();
    let code = output.status.code().unwrap_or(-1);
    if !ok_codes.contains(&code) {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: String = stderr
            .lines()
            .rev()
            .take(20)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n");
        return Err(format!("{what} exited with {code}:\n{tail}"));
    }
    Ok(elapsed)
}
