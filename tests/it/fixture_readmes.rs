//! Every fixture case under `tests/cases/<suite>/<case>/` carries a
//! `README.md` that says what the case checks: without it, a reader of a
//! failing case has only the expected outputs to guess its purpose from.

use std::fs;
use std::path::Path;

use crate::fixtures::discover_cases;

#[test]
fn every_fixture_case_has_a_readme() {
    let cases_root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let cases = discover_cases(&cases_root);
    assert!(
        !cases.is_empty(),
        "no fixture cases found below {}",
        cases_root.display()
    );

    let mut problems = Vec::new();
    for case in &cases {
        let readme = case.join("README.md");
        match fs::read_to_string(&readme) {
            Ok(text) if text.trim().is_empty() => problems.push(format!(
                "{} is empty: say what the case checks and what its expected output shows",
                readme.display()
            )),
            Ok(_) => {}
            Err(err) => problems.push(format!(
                "{}: {err}; add a README.md saying what the case checks and what its expected output shows",
                readme.display()
            )),
        }
    }
    assert!(
        problems.is_empty(),
        "{} of {} fixture cases lack a README.md:\n{}",
        problems.len(),
        cases.len(),
        problems.join("\n")
    );
}
