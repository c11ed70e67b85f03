//! The dnf provider against the real dnf and rpm (Debian ships both),
//! through the real `holo apply` with `HOLO_ROOT_DIR=/`. It runs only with
//! `HOLO_TEST_REAL_DNF=1` (as root), because it writes holo's own files below
//! `/`; the packages go into an rpm install root of the test's own.
//!
//! A tiny package is built at three versions with `rpmbuild` and published
//! with `createrepo_c`. Wrappers named `dnf` and `rpm`, first on PATH, add
//! only `--installroot`/`--root` and the test's repository, so the plugin's
//! command lines are otherwise the real ones. Needs the Debian packages
//! `rpm`, `dnf` and `createrepo-c`, and the `holo` driver built.

use crate::common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Holo, Restore, declare_package, enabled, install_plugin, run};

const PACKAGE: &str = "holo-test-rpm";
const VERSIONS: &[&str] = &["1.0", "1.1", "2.0"];
const ENTITY: &str = "package:holo-test-rpm";

fn build_repository(dir: &Path) -> PathBuf {
    let top = dir.join("rpmbuild");
    let specs = top.join("SPECS");
    fs::create_dir_all(&specs).expect("SPECS dir");
    for version in VERSIONS {
        let spec = specs.join(format!("{PACKAGE}-{version}.spec"));
        fs::write(
            &spec,
            format!(
                "Name: {PACKAGE}\nVersion: {version}\nRelease: 1\nSummary: throwaway\n\
                 License: MIT\nBuildArch: noarch\n%description\nthrowaway package for holo-package's real dnf test\n\
                 %install\nmkdir -p %{{buildroot}}/usr/share/{PACKAGE}\n\
                 echo {version} > %{{buildroot}}/usr/share/{PACKAGE}/VERSION\n\
                 %files\n/usr/share/{PACKAGE}/VERSION\n"
            ),
        )
        .expect("spec");
        let topdir = format!("_topdir {}", top.display());
        let spec = spec.display().to_string();
        run(
            "rpmbuild",
            &["--define", &topdir, "--nodeps", "-bb", &spec],
            None,
        );
    }
    let repo = dir.join("repo");
    fs::create_dir_all(&repo).expect("repo dir");
    for entry in fs::read_dir(top.join("RPMS/noarch")).expect("built rpms") {
        let path = entry.expect("dir entry").path();
        fs::copy(&path, repo.join(path.file_name().expect("file name"))).expect("copy rpm");
    }
    run("createrepo_c", &["-q", &repo.display().to_string()], None);
    repo
}

fn write_wrappers(dir: &Path, repo: &Path) -> PathBuf {
    let (bin, root, repos) = (dir.join("bin"), dir.join("root"), dir.join("repos"));
    for d in [&bin, &root, &repos] {
        fs::create_dir_all(d).expect("wrapper dirs");
    }
    fs::write(
        repos.join("holo-test.repo"),
        format!(
            "[holo-test]\nname=holo test\nbaseurl=file://{}\ngpgcheck=0\n",
            repo.display()
        ),
    )
    .expect("repo file");
    let wrappers = [
        (
            "dnf",
            format!(
                "exec /usr/bin/dnf --installroot={} --setopt=reposdir={} --setopt=cachedir={} --releasever=1 \"$@\"",
                root.display(),
                repos.display(),
                dir.join("cache").display()
            ),
        ),
        (
            "rpm",
            format!("exec /usr/bin/rpm --root={} \"$@\"", root.display()),
        ),
    ];
    for (name, body) in wrappers {
        let path = bin.join(name);
        fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("wrapper");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    bin
}

/// The package's `VERSION-RELEASE` if the test's install root has it.
fn rpm_installed_version(bin: &Path) -> Option<String> {
    let output = Command::new(bin.join("rpm"))
        .args(["-q", "--queryformat", "%{VERSION}-%{RELEASE}", PACKAGE])
        .output()
        .expect("run rpm");
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

#[test]
fn real_dnf_install_latest_downgrade_heal_remove_scrub() {
    if !enabled("HOLO_TEST_REAL_DNF", "dnf") {
        return;
    }
    let plugin = PathBuf::from(env!("CARGO_BIN_EXE_holo-package"));
    let scratch = tempfile::tempdir().expect("tempdir");
    let repo = build_repository(scratch.path());
    let bin = write_wrappers(scratch.path(), &repo);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let holo = Holo::new(
        &plugin,
        ENTITY,
        vec![
            ("PATH".into(), path),
            ("HOLO_PACKAGE_LISTS_MAX_AGE".into(), "0".into()),
        ],
    );

    let mut restore = Restore::default();
    let resource = install_plugin(&mut restore, &plugin, ENTITY);
    let declare = |restore: &mut Restore, ensure: &str| {
        declare_package(restore, &resource, PACKAGE, "dnf", ensure);
    };
    let installed = || rpm_installed_version(&bin);

    declare(&mut restore, "1.0-1");
    holo.apply_expecting(installed, Some("1.0-1"));
    holo.apply_changes_nothing();

    declare(&mut restore, "latest");
    holo.apply_expecting(installed, Some("2.0-1"));

    // A version without a release: dnf picks the release, and it verifies.
    declare(&mut restore, "1.1");
    let output = holo.apply();
    assert!(
        output.contains("dnf downgrade -y") || output.contains("Downgrad"),
        "{output}"
    );
    assert_eq!(installed().as_deref(), Some("1.1-1"), "{output}");

    run(
        &bin.join("rpm").display().to_string(),
        &["-e", PACKAGE],
        None,
    );
    assert_eq!(installed(), None);
    holo.apply_expecting(installed, Some("1.1-1"));

    declare(&mut restore, "absent");
    holo.apply_expecting(installed, None);

    declare(&mut restore, "present");
    holo.apply_expecting(installed, Some("2.0-1"));
    fs::remove_file(&resource).expect("delete the resource");
    let output = holo.apply();
    assert!(
        output.contains("Scrubbing package:holo-test-rpm"),
        "{output}"
    );
    assert_eq!(installed(), None, "{output}");
}
