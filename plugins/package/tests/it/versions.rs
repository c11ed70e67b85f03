//! Version ordering against CCM's vectors and, on thousands of generated
//! valid pairs, against the reference implementations on this machine:
//! `dpkg --compare-versions` (package `dpkg`) and rpm's `labelCompare`
//! through `/usr/bin/python3` (packages `rpm` and `python3-rpm`).

use std::cmp::Ordering;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Mutex, OnceLock};

use holo_package::version::{deb, generic, rpm};
use proptest::prelude::*;

fn vectors_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/ccm-version-vectors.tsv")
}

fn parse_expected(text: &str) -> Ordering {
    match text {
        "-1" => Ordering::Less,
        "0" => Ordering::Equal,
        "1" => Ordering::Greater,
        other => panic!("vector file: expected -1, 0 or 1, found {other:?}"),
    }
}

#[test]
fn every_ccm_vector_row_passes() {
    let path = vectors_path();
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let (mut deb_rows, mut gen_rows) = (0, 0);
    for (index, line) in text.lines().enumerate() {
        let fields: Vec<&str> = line.split('\t').collect();
        let at = format!("{}:{}", path.display(), index + 1);
        match fields[..] {
            ["deb", a, b, expected] => {
                let expected = parse_expected(expected);
                assert_eq!(deb::compare(a, b), expected, "{at}: compare({a}, {b})");
                assert_eq!(
                    deb::compare(b, a),
                    expected.reverse(),
                    "{at}: compare({b}, {a})"
                );
                deb_rows += 1;
            }
            ["gen", a, b, ignore, expected] => {
                let ignore = ignore == "true";
                let got = generic::compare(a, b, ignore);
                assert_eq!(
                    got,
                    parse_expected(expected),
                    "{at}: VersionCmp({a}, {b}, {ignore})"
                );
                gen_rows += 1;
            }
            _ if line.starts_with('#') || line.trim().is_empty() => {}
            _ => panic!("{at}: unrecognised vector row {line:?}"),
        }
    }
    assert!(
        deb_rows >= 18 && gen_rows >= 18,
        "too few rows read: deb {deb_rows}, gen {gen_rows}"
    );
}

fn dpkg_says(a: &str, relation: &str, b: &str) -> bool {
    let status = Command::new("dpkg")
        .args(["--compare-versions", a, relation, b])
        .status()
        .unwrap_or_else(|e| panic!("cannot run dpkg (install package dpkg): {e}"));
    match status.code() {
        Some(0) => true,
        Some(1) => false,
        _ => panic!("dpkg rejected {a:?} {relation} {b:?}: {status}"),
    }
}

fn dpkg_order(a: &str, b: &str) -> Ordering {
    if dpkg_says(a, "lt", b) {
        Ordering::Less
    } else if dpkg_says(a, "eq", b) {
        Ordering::Equal
    } else {
        Ordering::Greater
    }
}

/// One long-lived python process answering `labelCompare` line by line, so
/// that thousands of comparisons do not each pay for starting python.
struct RpmOracle {
    _child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

const RPM_ORACLE: &str = r#"
import sys, rpm
def part(s):
    return None if s == "\x00" else s
for line in sys.stdin:
    e1, v1, r1, e2, v2, r2 = (part(f) for f in line.rstrip("\n").split("\t"))
    print(rpm.labelCompare((e1, v1, r1), (e2, v2, r2)), flush=True)
"#;

fn rpm_oracle() -> &'static Mutex<RpmOracle> {
    static ORACLE: OnceLock<Mutex<RpmOracle>> = OnceLock::new();
    ORACLE.get_or_init(|| {
        let mut child = Command::new("/usr/bin/python3")
            .args(["-c", RPM_ORACLE])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run /usr/bin/python3 (install python3-rpm): {e}"));
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            panic!("python3 started without pipes");
        };
        Mutex::new(RpmOracle {
            _child: child,
            input,
            output: BufReader::new(output),
        })
    })
}

fn rpm_label_compare(a: &rpm::Evr<'_>, b: &rpm::Evr<'_>) -> Ordering {
    let field = |s: Option<&str>| s.unwrap_or("\0").to_owned();
    let line = [
        field(a.epoch),
        a.version.to_owned(),
        field(a.release),
        field(b.epoch),
        b.version.to_owned(),
        field(b.release),
    ]
    .join("\t");
    let mut oracle = rpm_oracle()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    writeln!(oracle.input, "{line}").expect("write to python3-rpm oracle");
    let mut answer = String::new();
    oracle
        .output
        .read_line(&mut answer)
        .expect("read from python3-rpm oracle");
    match answer.trim() {
        "-1" => Ordering::Less,
        "0" => Ordering::Equal,
        "1" => Ordering::Greater,
        other => panic!(
            "python3-rpm oracle answered {other:?} for {line:?}; is python3-rpm installed for /usr/bin/python3?"
        ),
    }
}

/// Valid Debian versions over a small alphabet, so that pairs often share
/// prefixes and exercise `~`, letters, zeros and separators.
fn debian_version() -> impl Strategy<Value = String> {
    (
        proptest::option::weighted(0.2, "[0-9]{1,2}"),
        "[0-9][0-9ab.+~]{0,7}",
        proptest::option::weighted(0.6, "[0-9ab.+~]{1,5}"),
        proptest::option::weighted(0.2, "-[0-9][0-9a.]{0,3}"),
    )
        .prop_map(|(epoch, upstream, revision, inner_hyphen)| {
            let mut version = String::new();
            if let Some(epoch) = epoch {
                version += &format!("{epoch}:");
            }
            version += &upstream;
            if let Some(revision) = revision {
                // A hyphen inside the upstream part is valid only with a revision.
                version += inner_hyphen.as_deref().unwrap_or("");
                version += &format!("-{revision}");
            }
            version
        })
}

/// A second version that is often close to the first: identical, padded
/// with zeros, extended by `~`, `+` or a letter, or unrelated.
fn related_pair<S: Strategy<Value = String>>(
    version: fn() -> S,
) -> impl Strategy<Value = (String, String)> {
    (version(), version(), 0..6usize, "[~+a.0]{1,2}").prop_map(|(a, other, how, extra)| {
        let b = match how {
            0 => a.clone(),
            1 => a.replacen('.', ".0", 1),
            2 => format!("{a}{extra}"),
            3 => a.replacen(|c: char| c.is_ascii_digit(), "0", 1),
            _ => other,
        };
        (a, b)
    })
}

fn rpm_evr() -> impl Strategy<Value = String> {
    (
        proptest::option::weighted(0.2, "[0-9]{1,2}"),
        "[0-9a-c._~^]{1,8}",
        proptest::option::weighted(0.7, "[0-9a-c._~^]{1,5}"),
    )
        .prop_map(|(epoch, version, release)| {
            let mut evr = epoch.map(|e| format!("{e}:")).unwrap_or_default();
            evr += &version;
            if let Some(release) = release {
                evr += &format!("-{release}");
            }
            evr
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn debian_order_agrees_with_dpkg((a, b) in related_pair(debian_version)) {
        prop_assert!(deb::validate_strict(&a).is_ok(), "generator made invalid {a:?}");
        prop_assert!(deb::validate_strict(&b).is_ok(), "generator made invalid {b:?}");
        prop_assert_eq!(deb::compare(&a, &b), dpkg_order(&a, &b), "{} vs {}", a, b);
    }

    #[test]
    fn rpm_order_agrees_with_label_compare((a, b) in related_pair(rpm_evr)) {
        prop_assert!(rpm::validate(&a).is_ok(), "generator made invalid {a:?}");
        prop_assert!(rpm::validate(&b).is_ok(), "generator made invalid {b:?}");
        let expected = rpm_label_compare(&rpm::split(&a), &rpm::split(&b));
        prop_assert_eq!(rpm::compare(&a, &b), expected, "{} vs {}", a, b);
    }

    #[test]
    fn debian_order_is_antisymmetric((a, b) in related_pair(debian_version)) {
        prop_assert_eq!(deb::compare(&a, &b), deb::compare(&b, &a).reverse());
    }

    #[test]
    fn no_ordering_or_validation_panics_on_any_input(a in ".{0,12}", b in "[0-9a-z.~^+:_-]{0,12}") {
        for (x, y) in [(a.as_str(), b.as_str()), (b.as_str(), a.as_str())] {
            let _ = deb::compare(x, y);
            let _ = rpm::compare(x, y);
            let _ = generic::compare(x, y, true);
            let _ = generic::compare(x, y, false);
            let _ = deb::validate_strict(x);
            let _ = rpm::validate(x);
        }
        prop_assert_eq!(rpm::compare(&a, &b), rpm::compare(&b, &a).reverse());
        let args = vec!["generic".to_owned(), a.clone(), b.clone()];
        let outcome = holo_package::version::version_compare_command(&args);
        prop_assert!(outcome.exit_code == 0 || outcome.exit_code == 2);
    }
}
