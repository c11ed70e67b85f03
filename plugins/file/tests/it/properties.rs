//! Properties over arbitrary input: the validators never panic and agree
//! with their documented rules, and the decision table and the list of
//! differing properties never contradict each other.

use holo_file::apply::{Action, Kind, Observed, Wanted, decide, differences};
use holo_file::model::{Ensure, format_mode, parse_mode, validate_path};
use proptest::prelude::*;

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::Absent),
        Just(Kind::File),
        Just(Kind::Directory),
        Just(Kind::Link),
        Just(Kind::Other)
    ]
}

fn ensure() -> impl Strategy<Value = Ensure> {
    prop_oneof![
        Just(Ensure::Present),
        Just(Ensure::Absent),
        Just(Ensure::Directory),
        Just(Ensure::Link)
    ]
}

fn checksum() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None),
        Just(Some("sha256:a".to_string())),
        Just(Some("sha256:b".to_string()))
    ]
}

proptest! {
    #[test]
    fn parse_mode_accepts_exactly_octal_up_to_07777(text in "(0[oO])?[0-9a-z]{0,6}") {
        match parse_mode(&text) {
            Ok(mode) => {
                prop_assert!(mode <= 0o7777);
                prop_assert_eq!(parse_mode(&format_mode(mode)), Ok(mode));
            }
            Err(message) => prop_assert!(!message.is_empty()),
        }
    }

    #[test]
    fn every_mode_up_to_07777_round_trips(mode in 0u32..=0o7777) {
        prop_assert_eq!(parse_mode(&format_mode(mode)), Ok(mode));
        prop_assert_eq!(parse_mode(&format!("0o{mode:o}")), Ok(mode));
    }

    #[test]
    fn accepted_paths_are_absolute_and_clean(path in "[/a.]{0,12}") {
        if validate_path(&path).is_ok() {
            prop_assert!(path.starts_with('/') && path.len() > 1);
            prop_assert!(!path.ends_with('/') && !path.contains("//"));
            prop_assert!(!path.split('/').any(|part| part == "." || part == ".."));
        }
    }

    #[test]
    fn nothing_to_do_exactly_when_nothing_differs(
        ensure in ensure(),
        wanted_sum in checksum(),
        current_kind in kind(),
        current_sum in checksum(),
        uid in 0u32..2, gid in 0u32..2, mode in prop_oneof![Just(0o644u32), Just(0o600u32)],
        target in prop_oneof![Just(None), Just(Some("/a")), Just(Some("../b"))],
    ) {
        let target = target.map(std::path::PathBuf::from);
        let link = ensure == Ensure::Link;
        let wanted = Wanted {
            ensure,
            checksum: wanted_sum,
            uid: Some(0),
            gid: Some(0),
            mode: (!link).then_some(0o644),
            target: link.then(|| std::path::PathBuf::from("/a")),
        };
        let current = Observed { kind: current_kind, checksum: current_sum, uid, gid, mode, target };
        let action = decide(&wanted, &current);
        prop_assert_eq!(action == Action::None, differences(&wanted, &current).is_empty());
        if action != Action::None {
            let expected = match ensure {
                Ensure::Absent => Action::Remove,
                Ensure::Directory => Action::CreateDirectory,
                Ensure::Present => Action::Store,
                Ensure::Link => Action::Link,
            };
            prop_assert_eq!(action, expected);
        }
    }
}
