//! The apt provider against the real apt-get and dpkg, through the real
//! `holo apply` with `HOLO_ROOT_DIR=/`. It changes the machine, so it runs
//! only with `HOLO_TEST_REAL_APT=1` (as root; CI sets it) and restores what
//! it touched at the end, also when it fails.
//!
//! A tiny package is built at three versions with `dpkg-deb`, published as a
//! local `file:` repository with `apt-ftparchive`, and apt is pointed at only
//! that repository through `APT_CONFIG`. Needs the Debian packages `dpkg`,
//! `apt` and `apt-utils`, and the `holo` driver built beside `holo-package`.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Holo, Restore, declare_package, enabled, install_plugin, run};

const PACKAGE: &str = "holo-test-pkg";
const VERSIONS: &[&str] = &["1.0-1", "1.1-1", "2.0-1"];
const ENTITY: &str = "package:holo-test-pkg";

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

#[test]
fn real_apt_install_latest_downgrade_heal_remove_scrub() {
    if !enabled("HOLO_TEST_REAL_APT", "apt") {
        return;
    }
    let plugin = PathBuf::from(env!("CARGO_BIN_EXE_holo-package"));
    assert_eq!(
        dpkg_installed_version(),
        None,
        "{PACKAGE} must not be installed before the test"
    );

    let scratch = tempfile::tempdir().expect("tempdir");
    let repo = build_repository(scratch.path());
    let config = apt_config(&scratch.path().join("apt"), &repo);
    let holo = Holo::new(
        &plugin,
        ENTITY,
        vec![
            ("APT_CONFIG".into(), config.display().to_string()),
            // The test's lists start empty: always refresh once per run.
            ("HOLO_PACKAGE_LISTS_MAX_AGE".into(), "0".into()),
        ],
    );

    let mut restore = Restore::default();
    restore
        .cleanup
        .push(("dpkg".into(), vec!["--purge".into(), PACKAGE.into()]));
    let resource = install_plugin(&mut restore, &plugin, ENTITY);
    let declare = |restore: &mut Restore, ensure: &str| {
        declare_package(restore, &resource, PACKAGE, "apt", ensure);
    };

    // Install a pinned version.
    declare(&mut restore, "1.0-1");
    let output = holo.apply();
    assert!(
        output.contains("Working on package:holo-test-pkg"),
        "{output}"
    );
    assert_eq!(
        dpkg_installed_version().as_deref(),
        Some("1.0-1"),
        "{output}"
    );
    holo.apply_changes_nothing();

    // latest upgrades to the repository's newest.
    declare(&mut restore, "latest");
    holo.apply_expecting(dpkg_installed_version, Some("2.0-1"));

    // A pin to an older version is a real downgrade.
    declare(&mut restore, "1.1-1");
    holo.apply_expecting(dpkg_installed_version, Some("1.1-1"));

    // Self-healing after an admin's `dpkg -r`.
    run("dpkg", &["-r", PACKAGE], None);
    assert_eq!(dpkg_installed_version(), None);
    holo.apply_expecting(dpkg_installed_version, Some("1.1-1"));

    // Removal.
    declare(&mut restore, "absent");
    holo.apply_expecting(dpkg_installed_version, None);

    // Installed again, then the resource is deleted: scrubbing removes it.
    declare(&mut restore, "present");
    holo.apply_expecting(dpkg_installed_version, Some("2.0-1"));
    fs::remove_file(&resource).expect("delete the resource");
    let output = holo.apply();
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
