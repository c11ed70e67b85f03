//! Property tests: the holorc and scan-report parsers never panic, whatever
//! the input, and their results keep their invariants.

use proptest::prelude::*;

/// Lines built from the pieces the parsers look at, so that the interesting
/// branches are reached often, plus arbitrary text.
fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "(ENTITY|SOURCE|ACTION|REQUIRES|SUBSCRIBES|found at|plugin|#)?[:= ]{0,3}[a-z0-9:/().=# -]{0,20}",
        "plugin [a-zA-Z0-9_=./-]{0,12}",
        "ENTITY: [a-z/.]{0,3}[a-z]{1,5}:[a-z]{1,5}",
        "ACTION: [A-Za-z ]{0,8}(\\([a-z( )]{0,8}\\))?",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn holorc_parser_never_panics(lines in proptest::collection::vec(line(), 0..12)) {
        let text = lines.join("\n");
        let (decls, _) = holo::holorc::parse("etc/holorc", &text, "./target/");
        for decl in decls {
            prop_assert!(holo::holorc::is_valid_plugin_id(&decl.id));
            prop_assert!(!decl.binary.is_empty());
        }
    }

    #[test]
    fn scan_report_parser_never_panics(lines in proptest::collection::vec(line(), 0..20), order in any::<bool>()) {
        let text = lines.join("\n");
        match holo::scan::parse_report(0, "x", &text, order, &|s| s.into()) {
            Ok(entities) => {
                for entity in entities {
                    prop_assert!(!entity.id.is_empty());
                    prop_assert!(!entity.action_verb.is_empty());
                    if !order {
                        prop_assert!(entity.requires.is_empty() && entity.subscribes.is_empty());
                    }
                }
            }
            Err(errors) => prop_assert!(!errors.is_empty()),
        }
    }
}
