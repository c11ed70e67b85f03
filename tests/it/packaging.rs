//! The distribution packaging in packaging/. Everywhere: the Debian source
//! package, the Arch PKGBUILD and the RPM spec install the same paths, and
//! those agree with packaging/plugins.list. Ignored by default, and then
//! only as root with `HOLO_TEST_REAL_PACKAGING=1` on a Debian machine with
//! dpkg-buildpackage: the real thing, on this machine (build, lintian,
//! `dpkg -i`, use, `dpkg --purge`, nothing of ours left). With
//! `HOLO_PREBUILT_RELEASE=1` the package build reuses the release binaries
//! already in target/release instead of building them again.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Installed paths per package; directories end with `/`.
type Paths = BTreeMap<String, BTreeSet<String>>;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(repo().join(relative))
        .unwrap_or_else(|e| panic!("cannot read {relative}: {e}"))
}

/// The lines of a debhelper-style list: no blanks, no `#` comments.
fn entries(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
}

struct Plugin {
    id: String,
    snippet: Option<String>,
}

/// packaging/plugins.list: `ID SNIPPET`, with `-` for no snippet shipped.
fn plugins() -> Vec<Plugin> {
    entries(&read("packaging/plugins.list"))
        .enumerate()
        .map(|(n, line)| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            assert!(
                fields.len() == 2,
                "packaging/plugins.list entry {}: want `ID SNIPPET` (SNIPPET - for none), got {line:?}",
                n + 1
            );
            Plugin {
                id: fields[0].to_string(),
                snippet: (fields[1] != "-").then(|| fields[1].to_string()),
            }
        })
        .collect()
}

fn debian_packages() -> Vec<String> {
    read("packaging/debian/control")
        .lines()
        .filter_map(|l| l.strip_prefix("Package:"))
        .map(|p| p.trim().to_string())
        .collect()
}

/// Paths that differ between distributions only by convention: Debian's
/// bookworm units in /lib, zsh's vendor directory, compressed man pages.
fn canonical(path: &str) -> String {
    let path = match path.strip_prefix("/lib/systemd/") {
        Some(rest) => format!("/usr/lib/systemd/{rest}"),
        None => path.to_string(),
    };
    let path = path.replace(
        "/usr/share/zsh/vendor-completions/",
        "/usr/share/zsh/site-functions/",
    );
    path.trim_end_matches('*')
        .trim_end_matches(".gz")
        .to_string()
}

fn canonical_all(paths: &Paths) -> Paths {
    paths
        .iter()
        .map(|(p, set)| (p.clone(), set.iter().map(|s| canonical(s)).collect()))
        .collect()
}

/// What debian/PKG.{install,manpages,dirs} install, in Debian's paths.
fn debian_paths() -> Paths {
    let mut all = Paths::new();
    for package in debian_packages() {
        let file = |ext: &str| {
            std::fs::read_to_string(repo().join(format!("packaging/debian/{package}.{ext}")))
                .unwrap_or_default()
        };
        let set = all.entry(package.clone()).or_default();
        for line in entries(&file("install")) {
            let (source, dest) = line.split_once(' ').unwrap_or_else(|| {
                panic!("debian/{package}.install: want `SOURCE DEST` in {line:?}")
            });
            let name = Path::new(source).file_name().unwrap().to_string_lossy();
            set.insert(format!("/{}/{name}", dest.trim().trim_matches('/')));
        }
        for page in entries(&file("manpages")) {
            let name = Path::new(page).file_name().unwrap().to_string_lossy();
            let section = name.rsplit('.').next().unwrap();
            set.insert(format!("/usr/share/man/man{section}/{name}.gz"));
        }
        for dir in entries(&file("dirs")) {
            set.insert(format!("/{}/", dir.trim_matches('/')));
        }
    }
    all
}

/// What each package_NAME() of the PKGBUILD installs, and its backup files.
fn arch_paths() -> (Paths, BTreeSet<String>) {
    let text = read("packaging/arch/PKGBUILD");
    let mut all = Paths::new();
    let mut backups = BTreeSet::new();
    let mut current: Option<String> = None;
    for line in text.lines().map(str::trim) {
        if let Some(name) = line
            .strip_prefix("package_")
            .and_then(|l| l.strip_suffix("() {"))
        {
            current = Some(name.to_string());
            all.entry(name.to_string()).or_default();
            continue;
        }
        if line == "}" {
            current = None;
        }
        let Some(package) = &current else { continue };
        if let Some(list) = line
            .strip_prefix("backup=(")
            .and_then(|l| l.strip_suffix(')'))
        {
            backups.extend(list.split_whitespace().map(|p| format!("/{p}")));
        }
        if let Some(args) = line.strip_prefix("install ") {
            let words: Vec<String> = args
                .split_whitespace()
                .map(|w| w.trim_matches('"').to_string())
                .collect();
            let in_package = |w: &String| w.strip_prefix("$pkgdir").map(str::to_string);
            let set = all.get_mut(package).unwrap();
            if words.iter().any(|w| w == "-d") {
                set.extend(words.iter().filter_map(in_package).map(|d| format!("{d}/")));
            } else {
                let dest = words.last().and_then(in_package).unwrap_or_else(|| {
                    panic!("PKGBUILD package_{package}: install without a \"$pkgdir/...\" target: {line}")
                });
                set.insert(dest);
            }
        }
    }
    (all, backups)
}

/// The rpm macros the spec uses in %files, as Fedora defines them.
fn expand_rpm(path: &str) -> String {
    let mut out = path.to_string();
    for (macro_name, value) in [
        ("%{_bindir}", "/usr/bin"),
        ("%{_sysconfdir}", "/etc"),
        ("%{_datadir}", "/usr/share"),
        ("%{_mandir}", "/usr/share/man"),
        ("%{_prefix}", "/usr"),
    ] {
        out = out.replace(macro_name, value);
    }
    assert!(
        !out.contains('%'),
        "packaging/rpm/holo.spec %files: unknown macro in {path}; add it to expand_rpm"
    );
    out
}

/// What each %files section of the spec names, and its %config files.
fn rpm_paths() -> (Paths, BTreeSet<String>) {
    let text = read("packaging/rpm/holo.spec");
    let mut all = Paths::new();
    let mut configs = BTreeSet::new();
    let mut current: Option<String> = None;
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("%files") {
            let name = rest
                .trim()
                .strip_prefix("-n ")
                .map_or("holo".to_string(), |n| n.trim().to_string());
            all.entry(name.clone()).or_default();
            current = Some(name);
            continue;
        }
        if [
            "%package",
            "%description",
            "%prep",
            "%build",
            "%install",
            "%changelog",
        ]
        .iter()
        .any(|s| line.starts_with(s))
        {
            current = None;
        }
        let Some(package) = &current else { continue };
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let set = all.get_mut(package).unwrap();
        if let Some(dir) = line.strip_prefix("%dir ") {
            set.insert(format!("{}/", expand_rpm(dir.trim())));
        } else if let Some(file) = line.strip_prefix("%config(noreplace) ") {
            configs.insert(expand_rpm(file.trim()));
            set.insert(expand_rpm(file.trim()));
        } else {
            set.insert(expand_rpm(line));
        }
    }
    (all, configs)
}

/// Per package: what `other` names that Debian does not, and the reverse.
fn differences(debian: &Paths, other: &Paths) -> Vec<String> {
    let names: BTreeSet<&String> = debian.keys().chain(other.keys()).collect();
    let mut out = Vec::new();
    let empty = BTreeSet::new();
    for name in names {
        let (d, o) = (
            debian.get(name).unwrap_or(&empty),
            other.get(name).unwrap_or(&empty),
        );
        for path in d.difference(o) {
            out.push(format!("{name}: {path} only in Debian"));
        }
        for path in o.difference(d) {
            out.push(format!("{name}: {path} not in Debian"));
        }
    }
    out
}

#[test]
fn debian_arch_and_rpm_install_the_same_paths_as_plugins_list_says() {
    let debian = debian_paths();
    let plugins = plugins();

    let mut expected_packages: Vec<String> =
        plugins.iter().map(|p| format!("holo-{}", p.id)).collect();
    expected_packages.insert(0, "holo".to_string());
    assert_eq!(
        debian_packages(),
        expected_packages,
        "debian/control must have a stanza per line of packaging/plugins.list, in its order"
    );

    for plugin in &plugins {
        check_plugin_package(plugin, &debian);
    }
    // Every page in man/ is shipped by exactly one package.
    check_man_pages(&debian);

    // Every source a .install or .manpages file names is in the tree (the
    // build products come from target/ and debian/generated-completions).
    for package in debian_packages() {
        for ext in ["install", "manpages"] {
            let text =
                std::fs::read_to_string(repo().join(format!("packaging/debian/{package}.{ext}")))
                    .unwrap_or_default();
            for line in entries(&text) {
                let source = line.split_whitespace().next().unwrap();
                if source.starts_with("target/") || source.starts_with("debian/generated") {
                    continue;
                }
                assert!(
                    repo().join(source).exists(),
                    "debian/{package}.{ext} names {source}, which does not exist"
                );
            }
        }
    }

    let debian = canonical_all(&debian);
    let debian_configs: BTreeSet<String> = debian
        .values()
        .flatten()
        .filter(|p| p.starts_with("/etc/") && !p.ends_with('/'))
        .cloned()
        .collect();
    let (arch, backups) = arch_paths();
    let diff = differences(&debian, &canonical_all(&arch));
    assert!(
        diff.is_empty(),
        "packaging/arch/PKGBUILD:\n{}",
        diff.join("\n")
    );
    assert_eq!(
        backups, debian_configs,
        "PKGBUILD backup= must list the holorc snippets"
    );
    let (rpm, configs) = rpm_paths();
    let diff = differences(&debian, &canonical_all(&rpm));
    assert!(
        diff.is_empty(),
        "packaging/rpm/holo.spec:\n{}",
        diff.join("\n")
    );
    assert_eq!(
        configs, debian_configs,
        "the spec must mark the holorc snippets %config(noreplace)"
    );

    // One version everywhere.
    let version = env!("CARGO_PKG_VERSION");
    assert!(read("packaging/debian/changelog").starts_with(&format!("holo ({version})")));
    assert!(read("packaging/arch/PKGBUILD").contains(&format!("\npkgver={version}\n")));
    assert!(read("packaging/rpm/holo.spec").contains(&format!("\nVersion:        {version}\n")));
}

/// A plugin's package installs its binary, data directory, man page and
/// (only if plugins.list ships one) its holorc snippet, and purges its state.
fn check_plugin_package(plugin: &Plugin, debian: &Paths) {
    let package = format!("holo-{}", plugin.id);
    let set = &debian[&package];
    for path in [
        format!("/usr/lib/holo/holo-{}", plugin.id),
        format!("/usr/share/holo/{}/", plugin.id),
        format!("/usr/share/man/man8/holo-{}.8.gz", plugin.id),
    ] {
        assert!(set.contains(&path), "{package} does not install {path}");
    }
    let snippets: Vec<&String> = set
        .iter()
        .filter(|p| p.starts_with("/etc/holorc.d/"))
        .collect();
    match &plugin.snippet {
        Some(snippet) => {
            assert_eq!(
                snippets,
                [&format!("/etc/holorc.d/{snippet}")],
                "packaging/plugins.list ships {snippet}: debian/{package}.install (and the PKGBUILD and spec) must install it"
            );
            let text = read(&format!("holorc.d/{snippet}"));
            assert!(
                entries(&text).any(|l| l == format!("plugin {}", plugin.id)),
                "holorc.d/{snippet} does not say `plugin {}`",
                plugin.id
            );
        }
        None => assert!(
            snippets.is_empty(),
            "{package} installs {snippets:?}, but packaging/plugins.list ships no snippet"
        ),
    }
    let postrm = repo().join(format!("packaging/debian/{package}.postrm"));
    let mode = std::fs::metadata(&postrm)
        .unwrap_or_else(|e| panic!("{}: {e}", postrm.display()))
        .permissions()
        .mode();
    assert!(mode & 0o111 != 0, "{} is not executable", postrm.display());
    let script = std::fs::read_to_string(&postrm).unwrap();
    assert!(
        script.contains("\"$1\" = purge") && script.contains("/var/lib/holo/"),
        "{} must remove the state directory on purge only",
        postrm.display()
    );
}

/// Every page in man/ is shipped by exactly one package.
fn check_man_pages(debian: &Paths) {
    let mut pages: Vec<String> = std::fs::read_dir(repo().join("man"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| {
            name.rsplit('.')
                .next()
                .is_some_and(|s| s.len() == 1 && s.chars().all(|c| c.is_ascii_digit()))
        })
        .collect();
    pages.sort();
    for page in &pages {
        let section = page.rsplit('.').next().unwrap();
        let installed = format!("/usr/share/man/man{section}/{page}.gz");
        let shipping: Vec<&String> = debian
            .iter()
            .filter(|(_, set)| set.contains(&installed))
            .map(|(package, _)| package)
            .collect();
        assert_eq!(
            shipping.len(),
            1,
            "man/{page} must be in exactly one debian/PACKAGE.manpages (and the PKGBUILD and spec), found in {shipping:?}"
        );
    }
}

/// The release build every packaging runs (Debian rules, PKGBUILD, RPM
/// spec, CI): the `cargo build --release` line of each.
fn release_builds() -> Vec<(&'static str, String)> {
    [
        "packaging/debian/rules",
        "packaging/arch/PKGBUILD",
        "packaging/rpm/holo.spec",
        ".ci/run",
    ]
    .into_iter()
    .flat_map(|file| {
        read(file)
            .lines()
            .map(str::trim)
            .filter(|line| line.starts_with("cargo build --release"))
            .map(|line| (file, line.to_string()))
            .collect::<Vec<_>>()
    })
    .collect()
}

/// No production crate has a test-double binary: every binary of a
/// published crate is one the Debian packages ship (the other packagings
/// agree with Debian, checked above), and the crates that are not published
/// (test doubles, benchmarks) are left out of every release build, so
/// neither the packages nor `cargo install` carry them.
#[test]
fn production_crates_build_only_shipped_binaries() {
    let metadata = crate::workspace::metadata();
    let shipped: BTreeSet<String> = debian_packages()
        .iter()
        .flat_map(|package| {
            let install = read(&format!("packaging/debian/{package}.install"));
            entries(&install)
                .filter_map(|line| line.strip_prefix("target/release/"))
                .filter_map(|rest| rest.split_whitespace().next())
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    let builds = release_builds();
    assert_eq!(
        builds.len(),
        4,
        "one release build per packaging and CI: {builds:?}"
    );
    let mut unpublished_with_binaries = 0;
    for package in metadata["packages"].as_array().expect("packages") {
        let name = package["name"].as_str().expect("package name");
        let binaries: Vec<&str> = package["targets"]
            .as_array()
            .expect("targets")
            .iter()
            .filter(|target| {
                target["kind"]
                    .as_array()
                    .is_some_and(|kinds| kinds.iter().any(|k| k == "bin"))
            })
            .map(|target| target["name"].as_str().expect("target name"))
            .collect();
        // `publish = false` reads as an empty list of registries.
        let published = package["publish"]
            .as_array()
            .is_none_or(|registries| !registries.is_empty());
        if published {
            for binary in &binaries {
                assert!(
                    shipped.contains(*binary),
                    "crate {name} builds the binary {binary}, which no package ships: \
                     a test double or tool goes into a crate of its own with `publish = false`"
                );
            }
        } else if !binaries.is_empty() {
            unpublished_with_binaries += 1;
            for (file, build) in &builds {
                assert!(
                    build
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .windows(2)
                        .any(|w| w == ["--exclude", name]),
                    "{file}: the release build must leave out the unpublished crate {name} \
                     (--exclude {name}): {build}"
                );
            }
        }
    }
    assert!(
        unpublished_with_binaries >= 3,
        "the test doubles and the benchmarks are crates of their own"
    );
}

// ---- the real Debian test ------------------------------------------------

fn run(command: &mut Command) -> Output {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{command:?} failed:\n{text}");
    output
}

fn has_command(name: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// dpkg's status abbreviation (`ii `, `rc `, ...), empty when unknown.
fn dpkg_status(package: &str) -> String {
    Command::new("dpkg-query")
        .args(["-W", "-f=${db:Status-Abbrev}", package])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// Machine paths that our packages or `holo apply` create.
const HOLO_DIRS: [&str; 4] = [
    "/etc/holorc.d",
    "/usr/lib/holo",
    "/usr/share/holo",
    "/var/lib/holo",
];

/// What this machine lacks for the test, or what on it the test would
/// destroy; `None` when it can run.
fn what_is_missing(packages: &[String]) -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("not root (dpkg -i needs it; CI runs as root)".into());
    }
    for tool in ["dpkg-buildpackage", "dh", "lintian", "man"] {
        if !has_command(tool) {
            return Some(format!("{tool} is not installed (.ci/run installs it)"));
        }
    }
    for dep in ["qemu-system-x86", "qemu-utils", "openssh-client"] {
        if !dpkg_status(dep).starts_with("ii") {
            return Some(format!("holo-vms needs {dep} (.ci/run installs it)"));
        }
    }
    for package in packages {
        let status = dpkg_status(package);
        if !status.is_empty() && !status.starts_with("un") {
            return Some(format!(
                "{package} is on this machine ({status}); the test would purge it"
            ));
        }
    }
    HOLO_DIRS
        .iter()
        .find(|d| Path::new(d).exists())
        .map(|d| format!("{d} exists on this machine; the test would remove it"))
}

/// Purges what was installed and removes the test's own files, also when an
/// assertion failed halfway; and cleans the build out of packaging/debian.
struct Cleanup {
    packages: Vec<String>,
    files: Vec<PathBuf>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        // Our own files first, or dpkg could not remove their directories.
        for path in &self.files {
            remove(path);
        }
        if !self.packages.is_empty() {
            let _ = Command::new("dpkg")
                .arg("--purge")
                .args(&self.packages)
                .status();
        }
        let _ = Command::new("debian/rules")
            .arg("clean")
            .current_dir(repo())
            .output();
    }
}

/// Minimal resources for each plugin, so `holo scan` shows it was loaded:
/// plugin ID, the entity, the resource. The resource is
/// `/usr/share/holo/ID/holo-packaging-test.toml`, except for vms, whose
/// resources are `PROJECT/holos.yaml`, and Holo 3's files, ssh-keys and
/// run-scripts, whose resources are not TOML (see [`sample_path`]); scanning
/// them boots nothing and changes nothing. A plugin added to
/// packaging/plugins.list needs one here.
const SAMPLES: [(&str, &str, &str); 11] = [
    (
        "vms",
        "vm:holo-packaging-test/web",
        "services:\n  web:\n    image: alpine\n    ports: [\"8080:80\"]\n",
    ),
    (
        "package",
        "package:holo-packaging-test",
        "[[package]]\nname = \"holo-packaging-test\"\n",
    ),
    (
        "service",
        "service:holo-packaging-test",
        "[[service]]\nname = \"holo-packaging-test\"\n",
    ),
    (
        "exec",
        "exec:holo-packaging-test",
        "[[exec]]\nname = \"holo-packaging-test\"\ncommand = \"true\"\n",
    ),
    (
        "archive",
        "archive:/opt/holo-packaging-test.tar.gz",
        "[[archive]]\nname = \"/opt/holo-packaging-test.tar.gz\"\nurl = \"https://example.org/holo-packaging-test.tar.gz\"\nowner = \"root\"\ngroup = \"root\"\n",
    ),
    (
        "scaffold",
        "scaffold:/etc/holo-packaging-test.d",
        "[[scaffold]]\nname = \"/etc/holo-packaging-test.d\"\nsource = \"holo-packaging-test\"\n",
    ),
    (
        "file",
        "file:/etc/holo-packaging-test",
        "[[file]]\nname = \"/etc/holo-packaging-test\"\ncontent = \"applied by holo\\n\"\nowner = \"root\"\ngroup = \"root\"\nmode = \"0644\"\n",
    ),
    (
        "files",
        "file:/etc/holo-packaging-test-files.conf",
        "applied by holo-files\n",
    ),
    (
        "users-groups",
        "group:holo-packaging-test",
        "[[group]]\nname = \"holo-packaging-test\"\n",
    ),
    (
        "ssh-keys",
        "ssh-keyset:nobody/holo-packaging-test",
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcH holo-packaging-test\n",
    ),
    (
        "run-scripts",
        "script:holo-packaging-test",
        "#!/bin/sh\nexit 0\n",
    ),
];

/// Where the sample resource of plugin `id` goes, and what the test removes
/// afterwards (the file, or for vms the project directory holding it).
fn sample_path(id: &str) -> (PathBuf, PathBuf) {
    let resources = PathBuf::from(format!("/usr/share/holo/{id}"));
    if id == "vms" {
        let project = resources.join("holo-packaging-test");
        (project.join("holos.yaml"), project)
    } else if id == "files" {
        let layer = resources.join("00-holo-packaging-test");
        (layer.join("etc/holo-packaging-test-files.conf"), layer)
    } else if id == "ssh-keys" {
        let user = resources.join("nobody");
        (user.join("holo-packaging-test.pub"), user)
    } else if id == "run-scripts" {
        let script = resources.join("holo-packaging-test");
        (script.clone(), script)
    } else {
        let file = resources.join("holo-packaging-test.toml");
        (file.clone(), file)
    }
}

/// Removes a file or a whole directory the test made.
fn remove(path: &Path) {
    if path.is_dir() {
        let _ = std::fs::remove_dir_all(path);
    } else {
        let _ = std::fs::remove_file(path);
    }
}

#[test]
#[ignore = "needs root, debhelper, lintian and HOLO_TEST_REAL_PACKAGING=1 (installs and purges packages)"]
fn debian_packages_build_install_work_and_purge_without_a_trace() {
    test_support::require_consent(
        "HOLO_TEST_REAL_PACKAGING",
        "builds, installs and purges the Debian packages",
    );
    let started = std::time::Instant::now();
    let packages = debian_packages();
    // Two runs at once would fight over dpkg: take turns.
    let lock_file = std::fs::File::create(std::env::temp_dir().join("holo-packaging-test.lock"))
        .expect("lock file");
    let _lock = nix::fcntl::Flock::lock(lock_file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| e)
        .expect("lock");
    if let Some(reason) = what_is_missing(&packages) {
        test_support::missing(
            "root, dpkg-buildpackage, debhelper, lintian, man, holo-vms's dependencies and no holo installed",
            &reason,
        );
    }
    let mut cleanup = Cleanup {
        packages: Vec::new(),
        files: vec![PathBuf::from("/etc/holo-packaging-test")],
    };

    // 1. Build, and lintian clean of errors.
    let (out, debs, built) = build_debs(packages.as_slice());
    println!("built in {:?}", started.elapsed());
    // 2. Each .deb holds what debian/PKG.* say, with the snippets as conffiles.
    let contents = deb_contents(&debs, &built);
    // 3. Install on this machine, and use it.
    cleanup.packages = packages.clone();
    run(Command::new("dpkg").arg("-i").args(&debs));
    let samples = install_samples(&mut cleanup);
    use_installed(&samples);
    // 4. Remove keeps the state and the conffile; purge takes everything.
    remove_and_purge(&packages, &samples, &contents, &mut cleanup);
    drop(out);
    println!("packaging test took {:?}", started.elapsed());
}

/// The packages built into a temporary directory, lintian clean of errors:
/// the directory, the .debs and their package names, both sorted.
fn build_debs(packages: &[String]) -> (tempfile::TempDir, Vec<PathBuf>, Vec<String>) {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().display().to_string();
    run(Command::new("dpkg-buildpackage")
        .args(["-us", "-uc", "-b"])
        .arg(format!("--buildinfo-option=-u{dir}"))
        .arg(format!("--changes-option=-u{dir}"))
        .arg(format!("--buildinfo-file={dir}/holo.buildinfo"))
        .arg(format!("--changes-file={dir}/holo.changes"))
        .env("HOLO_DEB_DESTDIR", out.path())
        // dbgsym packages would double the build and lintian time and disk.
        .env("DEB_BUILD_OPTIONS", "noautodbgsym")
        .current_dir(repo()));

    let lintian = run(Command::new("lintian")
        .args(["--fail-on", "error", "--tag-display-limit", "0"])
        .arg(out.path().join("holo.changes")));
    println!("lintian:\n{}", String::from_utf8_lossy(&lintian.stdout));

    let mut debs: Vec<PathBuf> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "deb"))
        .collect();
    let package_of = |deb: &PathBuf| {
        let name = deb.file_name().unwrap().to_string_lossy();
        name.split('_').next().unwrap().to_string()
    };
    debs.sort_by_key(package_of);
    let built: Vec<String> = debs.iter().map(package_of).collect();
    let mut expected = packages.to_vec();
    expected.sort();
    assert_eq!(built, expected);
    (out, debs, built)
}

/// Checks that each .deb holds what debian/PKG.* say, with the snippets as
/// conffiles; every path the packages hold.
fn deb_contents(debs: &[PathBuf], built: &[String]) -> BTreeSet<String> {
    let listed = debian_paths();
    let mut contents = BTreeSet::new();
    for (deb, package) in debs.iter().zip(built) {
        let list = run(Command::new("dpkg-deb").arg("-c").arg(deb));
        let paths: BTreeSet<String> = String::from_utf8_lossy(&list.stdout)
            .lines()
            .filter_map(|l| l.split_whitespace().nth(5))
            .map(|p| p.trim_start_matches('.').to_string())
            .filter(|p| p != "/")
            .collect();
        for path in &listed[package] {
            assert!(
                paths.contains(path),
                "{package}.deb lacks {path}: {paths:?}"
            );
        }
        let conffiles = Command::new("dpkg-deb")
            .arg("-I")
            .arg(deb)
            .arg("conffiles")
            .output()
            .unwrap();
        let conffiles: BTreeSet<String> = String::from_utf8_lossy(&conffiles.stdout)
            .lines()
            .map(str::to_string)
            .collect();
        let etc: BTreeSet<String> = listed[package]
            .iter()
            .filter(|p| p.starts_with("/etc/") && !p.ends_with('/'))
            .cloned()
            .collect();
        assert_eq!(conffiles, etc, "{package} conffiles");
        contents.extend(paths);
    }
    contents
}

/// A sample resource for each plugin with a snippet (and the scaffold's
/// template directory): plugin id, entity and the paths made.
fn install_samples(cleanup: &mut Cleanup) -> Vec<(String, &'static str, Vec<PathBuf>)> {
    let plugins = plugins();
    let mut samples = Vec::new();
    for plugin in plugins.iter().filter(|p| p.snippet.is_some()) {
        let (_, entity, sample) = SAMPLES
            .iter()
            .find(|(id, _, _)| *id == plugin.id)
            .unwrap_or_else(|| panic!("add a sample resource for plugin {} to SAMPLES", plugin.id));
        let (path, made_first) = sample_path(&plugin.id);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(&path, sample).unwrap();
        cleanup.files.push(made_first.clone());
        let mut made = vec![made_first];
        if plugin.id == "scaffold" {
            // The template directory the scaffold renders.
            let templates = PathBuf::from("/usr/share/holo/scaffold/holo-packaging-test");
            std::fs::create_dir_all(&templates).unwrap();
            std::fs::write(templates.join("app.conf"), "port = 8080\n").unwrap();
            cleanup.files.push(templates.clone());
            made.push(templates);
        }
        samples.push((plugin.id.clone(), *entity, made));
    }
    samples
}

/// holo scan sees every sample, the man pages and units are in place, and
/// holo apply applies the file sample (the others are removed first: they
/// would act on the machine).
fn use_installed(samples: &[(String, &'static str, Vec<PathBuf>)]) {
    let holo = |args: &[&str]| {
        Command::new("/usr/bin/holo")
            .args(args)
            .env_remove("HOLO_ROOT_DIR")
            .output()
            .unwrap()
    };
    let scan = holo(&["scan", "--short"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&scan.stdout),
        String::from_utf8_lossy(&scan.stderr),
    );
    assert!(scan.status.success(), "holo scan:\n{stdout}{stderr}");
    // `>>` notes may come (the scaffold's template directory draws one);
    // no plugin may fail or be skipped.
    assert!(
        !stderr.contains("!!") && !stderr.contains("Skipping plugin"),
        "holo scan complains:\n{stderr}"
    );
    for (_, entity, _) in samples {
        assert!(
            stdout.lines().any(|l| l == *entity),
            "holo scan lacks {entity}:\n{stdout}"
        );
    }
    let man = run(Command::new("man").args(["-w", "holo", "holorc", "holo-data", "holo-file"]));
    assert_eq!(
        String::from_utf8_lossy(&man.stdout),
        "/usr/share/man/man8/holo.8.gz\n/usr/share/man/man5/holorc.5.gz\n/usr/share/man/man5/holo-data.5.gz\n/usr/share/man/man8/holo-file.8.gz\n"
    );
    if has_command("systemd-analyze") {
        // Checks the units' syntax, ExecStart= and Documentation= man page.
        run(Command::new("systemd-analyze").args([
            "verify",
            "/lib/systemd/system/holo-apply.service",
            "/lib/systemd/system/holo-apply.timer",
        ]));
    }
    assert!(
        !Path::new("/etc/systemd/system/timers.target.wants/holo-apply.timer").exists(),
        "holo-apply.timer must ship disabled"
    );
    // Only the file resource stays for apply: the others would act on the machine.
    for (id, _, made) in samples {
        if id != "file" {
            made.iter().for_each(|path| remove(path));
        }
    }
    let apply = holo(&["apply"]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&apply.stdout),
        String::from_utf8_lossy(&apply.stderr)
    );
    assert_eq!(apply.status.code(), Some(0), "holo apply:\n{text}");
    assert!(text.contains("file:/etc/holo-packaging-test"), "{text}");
    assert_eq!(
        std::fs::read_to_string("/etc/holo-packaging-test").unwrap(),
        "applied by holo\n"
    );
    assert!(
        Path::new("/var/lib/holo/file").is_dir(),
        "holo-file keeps no state"
    );
}

/// dpkg --remove keeps the state and the conffile; --purge takes
/// everything the packages installed.
fn remove_and_purge(
    packages: &[String],
    samples: &[(String, &'static str, Vec<PathBuf>)],
    contents: &BTreeSet<String>,
    cleanup: &mut Cleanup,
) {
    run(Command::new("dpkg").args(["--remove", "holo-file"]));
    assert!(
        Path::new("/var/lib/holo/file").is_dir(),
        "remove took the state"
    );
    assert!(
        Path::new("/etc/holorc.d/20-file").exists(),
        "remove took the conffile"
    );
    for (_, _, made) in samples {
        made.iter().for_each(|path| remove(path));
    }
    run(Command::new("dpkg").arg("--purge").args(packages));
    cleanup.packages.clear();
    for package in packages {
        let status = dpkg_status(package);
        assert!(
            status.is_empty() || status.starts_with("un"),
            "{package}: {status}"
        );
    }
    let left: Vec<&String> = contents
        .iter()
        .filter(|p| p.contains("holo"))
        .filter(|p| Path::new(p.as_str()).symlink_metadata().is_ok())
        .collect();
    assert!(left.is_empty(), "left after purge: {left:?}");
    for dir in HOLO_DIRS {
        assert!(!Path::new(dir).exists(), "{dir} is left after purge");
    }
}
