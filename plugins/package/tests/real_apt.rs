//! The apt provider against the real apt-get and dpkg, through the real
//! `holo apply` with `HOLO_ROOT_DIR=/`. It changes the machine, so it runs
//! only with `HOLO_TEST_REAL_APT=1` (as root; CI sets it) and restores what
//! it touched at the end, also when it fails.
//!
//! A tiny package is built at three versions with `dpkg-deb`, published as a
//! local `file:` repository with `apt-ftparchive`, and apt is pointed at only
//! that repository through `APT_CONFIG`. Needs the Debian packages `dpkg`,
//! `apt` and `apt-utils`, and the `holo` driver built beside `holo-package`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const PACKAGE: &str = "holo-test-pkg";
const VERSIONS: &[&str] = &["1.0-1", "1.1-1", "2.0-1"];
const ENTITY: &str = "package:holo-test-pkg";

fn run(program: &str, args: &[&str], cwd: Option<&Path>) -> String {
    let mut command = Command::new(program);
    command.args(args);
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e} (install dpkg, apt and apt-utils)"));
    assert!(
        output.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The package's version if dpkg has it installed.
fn dpkg_installed_version() -> Option<String> {
    let output = Command::new("dpkg-query")
        .args(["-W", "-f=${Version} ${db:Status-Status}", PACKAGE])
        .output()
        .expect("run dpkg-query");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (version, status) = text.split_once(' ')?;
    (status == "installed").then(|| version.to_owned())
}

/// Puts back every file and directory the test created or replaced.
#[derive(Default)]
struct Restore {
    files: Vec<(PathBuf, Option<Vec<u8>>)>,
    created_dirs: Vec<PathBuf>,
}

impl Restore {
    fn create_dirs(&mut self, dir: &Path) {
        let mut missing = Vec::new();
        let mut cursor = Some(dir);
        while let Some(path) = cursor {
            if path.exists() {
                break;
            }
            missing.push(path.to_path_buf());
            cursor = path.parent();
        }
        for path in missing.into_iter().rev() {
            fs::create_dir(&path).unwrap_or_else(|e| panic!("mkdir {}: {e}", path.display()));
            self.created_dirs.push(path);
        }
    }

    fn write(&mut self, path: &Path, text: &str) {
        if !self.files.iter().any(|(known, _)| known == path) {
            self.files.push((path.to_path_buf(), fs::read(path).ok()));
        }
        self.create_dirs(path.parent().expect("absolute path"));
        fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }

    fn forget_on_exit(&mut self, path: &Path) {
        if !self.files.iter().any(|(known, _)| known == path) {
            self.files.push((path.to_path_buf(), fs::read(path).ok()));
        }
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = Command::new("dpkg").args(["--purge", PACKAGE]).output();
        for (path, original) in self.files.iter().rev() {
            let _ = match original {
                Some(bytes) => fs::write(path, bytes),
                None => fs::remove_file(path).or(Ok(())),
            };
        }
        for dir in self.created_dirs.iter().rev() {
            let _ = fs::remove_dir(dir);
        }
    }
}

fn build_repository(dir: &Path) -> PathBuf {
    let repo = dir.join("repo");
    fs::create_dir_all(&repo).expect("repo dir");
    for version in VERSIONS {
        let root = dir.join(format!("build-{version}"));
        fs::create_dir_all(root.join("DEBIAN")).expect("DEBIAN dir");
        fs::create_dir_all(root.join("usr/share/holo-test-pkg")).expect("payload dir");
        fs::write(root.join("usr/share/holo-test-pkg/VERSION"), version).expect("payload");
        fs::write(
            root.join("DEBIAN/control"),
            format!(
                "Package: {PACKAGE}\nVersion: {version}\nArchitecture: all\n\
                 Maintainer: holo tests <root@localhost>\n\
                 Description: throwaway package for holo-package's real apt test\n"
            ),
        )
        .expect("control");
        let deb = repo.join(format!("{PACKAGE}_{version}_all.deb"));
        let (root, deb) = (root.display().to_string(), deb.display().to_string());
        run(
            "dpkg-deb",
            &["--root-owner-group", "--build", &root, &deb],
            None,
        );
    }
    let packages = run("apt-ftparchive", &["packages", "."], Some(&repo));
    fs::write(repo.join("Packages"), packages).expect("Packages index");
    // A Release file tells apt which indexes exist, so it probes no others.
    let release = run("apt-ftparchive", &["release", "."], Some(&repo));
    fs::write(repo.join("Release"), release).expect("Release file");
    repo
}

fn apt_config(dir: &Path, repo: &Path) -> PathBuf {
    for sub in [
        "lists/partial",
        "cache/archives/partial",
        "sources.list.d",
        "apt.conf.d",
    ] {
        fs::create_dir_all(dir.join(sub)).expect("apt dirs");
    }
    fs::write(
        dir.join("sources.list"),
        format!("deb [trusted=yes] file:{} ./\n", repo.display()),
    )
    .expect("sources.list");
    let config = dir.join("apt.conf");
    let d = dir.display();
    fs::write(
        &config,
        format!(
            "Dir::Etc::SourceList \"{d}/sources.list\";\n\
             Dir::Etc::SourceParts \"{d}/sources.list.d\";\n\
             Dir::Etc::Parts \"{d}/apt.conf.d\";\n\
             Dir::State::Lists \"{d}/lists\";\n\
             Dir::Cache \"{d}/cache\";\n\
             Acquire::Languages \"none\";\n"
        ),
    )
    .expect("apt.conf");
    config
}

struct Holo {
    driver: PathBuf,
    apt_config: PathBuf,
}

impl Holo {
    /// `holo apply [--force] package:holo-test-pkg`; returns its output.
    fn apply(&self, extra: &[&str]) -> String {
        let output = Command::new(&self.driver)
            .arg("apply")
            .args(extra)
            .arg(ENTITY)
            .env("HOLO_ROOT_DIR", "/")
            .env("APT_CONFIG", &self.apt_config)
            .env("HOLO_PACKAGE_LISTS_MAX_AGE", "0")
            .output()
            .expect("run holo");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(output.status.success(), "holo apply failed:\n{text}");
        eprintln!("--- holo apply {extra:?}:{text}");
        text
    }
}

#[test]
fn real_apt_install_latest_downgrade_heal_remove_scrub() {
    if std::env::var("HOLO_TEST_REAL_APT").as_deref() != Ok("1") {
        eprintln!("skipped: set HOLO_TEST_REAL_APT=1 (as root) to run the real apt test");
        return;
    }
    let plugin = PathBuf::from(env!("CARGO_BIN_EXE_holo-package"));
    let driver = plugin.with_file_name("holo");
    assert!(
        driver.is_file(),
        "{} is missing: build the driver first (cargo build -p holo)",
        driver.display()
    );
    assert_eq!(
        dpkg_installed_version(),
        None,
        "{PACKAGE} must not be installed before the test"
    );

    let scratch = tempfile::tempdir().expect("tempdir");
    let repo = build_repository(scratch.path());
    let holo = Holo {
        driver,
        apt_config: apt_config(&scratch.path().join("apt"), &repo),
    };

    let mut restore = Restore::default();
    restore.write(
        Path::new("/etc/holorc.d/10-package"),
        &format!("plugin package={}\n", plugin.display()),
    );
    let resource = Path::new("/usr/share/holo/package/zz-real-apt-test.toml");
    restore.forget_on_exit(Path::new(
        "/var/lib/holo/package/package:holo-test-pkg.toml",
    ));
    restore.create_dirs(Path::new("/var/lib/holo/package"));
    let declare = |restore: &mut Restore, ensure: &str| {
        restore.write(
            resource,
            &format!(
                "[[package]]\nname = \"{PACKAGE}\"\nprovider = \"apt\"\nensure = \"{ensure}\"\n"
            ),
        );
    };

    // Install a pinned version.
    declare(&mut restore, "1.0-1");
    let output = holo.apply(&[]);
    assert!(
        output.contains("Working on package:holo-test-pkg"),
        "{output}"
    );
    assert_eq!(
        dpkg_installed_version().as_deref(),
        Some("1.0-1"),
        "{output}"
    );
    let again = holo.apply(&[]);
    assert!(
        !again.contains("Working on"),
        "a second apply changes nothing:\n{again}"
    );

    // latest upgrades to the repository's newest.
    declare(&mut restore, "latest");
    let output = holo.apply(&[]);
    assert_eq!(
        dpkg_installed_version().as_deref(),
        Some("2.0-1"),
        "{output}"
    );

    // A pin to an older version is a real downgrade.
    declare(&mut restore, "1.1-1");
    let output = holo.apply(&[]);
    assert_eq!(
        dpkg_installed_version().as_deref(),
        Some("1.1-1"),
        "{output}"
    );

    // Self-healing after an admin's `dpkg -r`.
    run("dpkg", &["-r", PACKAGE], None);
    assert_eq!(dpkg_installed_version(), None);
    let output = holo.apply(&[]);
    assert_eq!(
        dpkg_installed_version().as_deref(),
        Some("1.1-1"),
        "{output}"
    );

    // Removal.
    declare(&mut restore, "absent");
    let output = holo.apply(&[]);
    assert_eq!(dpkg_installed_version(), None, "{output}");

    // Installed again, then the resource is deleted: scrubbing removes it.
    declare(&mut restore, "present");
    let output = holo.apply(&[]);
    assert_eq!(
        dpkg_installed_version().as_deref(),
        Some("2.0-1"),
        "{output}"
    );
    fs::remove_file(resource).expect("delete the resource");
    let output = holo.apply(&[]);
    assert!(
        output.contains("Scrubbing package:holo-test-pkg"),
        "{output}"
    );
    assert_eq!(dpkg_installed_version(), None, "{output}");
    assert!(
        !Path::new("/var/lib/holo/package/package:holo-test-pkg.toml").exists(),
        "the state record is gone after scrubbing"
    );
    drop(restore);
    assert_eq!(dpkg_installed_version(), None, "the machine is restored");
}
