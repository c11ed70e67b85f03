//! `holo-package version-compare deb` against the real `dpkg
//! --compare-versions`: a version dpkg refuses exits 2 with a message; one
//! it only warns about is compared anyway, with a `>>` warning and exit 0;
//! and every comparison gives dpkg's answer. Needs dpkg (every Debian
//! machine has it); without it the test fails and says so.

use std::process::Command;

/// Valid versions, versions dpkg warns about, and versions it refuses.
const VERSIONS: [&str; 14] = [
    "1.0", "1:0.9", "1.0~rc1", "1.0-1", "1.0+b1", "abc", "1_0", "1.0-a_b", "~1", "1.0-", ":1",
    "1:", "-1", "1.0 2",
];

/// What dpkg says about `a OP b`: None when it refuses a version (exit 2),
/// else whether the relation holds and whether it warned.
fn dpkg(a: &str, op: &str, b: &str) -> Option<(bool, bool)> {
    let output = Command::new("dpkg")
        .args(["--compare-versions", a, op, b])
        .output()
        .unwrap_or_else(|err| panic!("needs dpkg (dpkg --compare-versions): {err}"));
    let warned = String::from_utf8_lossy(&output.stderr).contains("warning");
    match output.status.code() {
        Some(0) => Some((true, warned)),
        Some(1) => Some((false, warned)),
        _ => None,
    }
}

#[test]
fn version_compare_deb_agrees_with_dpkg() {
    for a in VERSIONS {
        for b in VERSIONS {
            let ours = Command::new(assert_cmd::cargo::cargo_bin!("holo-package"))
                .args(["version-compare", "deb", "--", a, b])
                .output()
                .expect("holo-package runs");
            let stdout = String::from_utf8_lossy(&ours.stdout).into_owned();
            let stderr = String::from_utf8_lossy(&ours.stderr).into_owned();
            let case = format!(
                "{a:?} {b:?}: exit {:?}, {stdout:?}, {stderr:?}",
                ours.status
            );
            let Some((less, warned)) = dpkg(a, "lt", b) else {
                assert_eq!(ours.status.code(), Some(2), "dpkg refuses: {case}");
                assert!(stderr.starts_with("!! invalid Debian version"), "{case}");
                continue;
            };
            assert_eq!(ours.status.code(), Some(0), "dpkg compares: {case}");
            assert_eq!(
                stderr.starts_with(">> "),
                warned,
                "dpkg warned {warned}: {case}"
            );
            let (equal, _) = dpkg(a, "eq", b).expect("compared once");
            let expected = match (less, equal) {
                (true, _) => "-1\n",
                (false, true) => "0\n",
                (false, false) => "1\n",
            };
            assert_eq!(stdout, expected, "{case}");
        }
    }
}
