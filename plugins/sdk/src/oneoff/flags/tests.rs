use super::*;
use crate::oneoff::probe::property_types;
use crate::oneoff::test_demo::Demo;

fn flags() -> Flags {
    Flags::new(
        "demo",
        property_types::<Demo>(),
        vec!["present", "absent"],
        &[("version", "ensure")],
    )
}

fn document(request: &EnsureRequest) -> &str {
    match request.resources.as_slice() {
        [ResourceEntry::File { content, .. }] => content,
        other => panic!("one file, not {other:?}"),
    }
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|arg| arg.to_string()).collect()
}

#[test]
fn flags_become_a_typed_table() {
    let request = flags()
        .parse(
            "holo-demo ensure",
            &args(&[
                "x",
                "--mode",
                "0644",
                "--force",
                "--returns",
                "0",
                "--returns=3",
                "--data",
                "{ port = 80 }",
                "--timeout",
                "5",
                "--absent",
                "--require",
                "file:/a",
                "--noop",
            ]),
        )
        .expect("parses");
    assert!(request.noop && !request.force);
    let table: toml::Table = document(&request).parse().expect("toml");
    let demo = &table["demo"][0];
    assert_eq!(demo["name"].as_str(), Some("x"));
    assert_eq!(demo["mode"].as_str(), Some("0644"));
    assert_eq!(demo["force"].as_bool(), Some(true));
    assert_eq!(demo["returns"].as_array().map(Vec::len), Some(2));
    assert_eq!(demo["returns"][1].as_integer(), Some(3));
    assert_eq!(demo["data"]["port"].as_integer(), Some(80));
    assert_eq!(demo["timeout"].as_integer(), Some(5));
    assert_eq!(demo["ensure"].as_str(), Some("absent"));
    assert_eq!(demo["require"][0].as_str(), Some("file:/a"));
}

#[test]
fn negations_aliases_and_mistakes() {
    let flags = flags();
    let parse = |list: &[&str]| flags.parse("holo-demo ensure", &args(list));
    let request = parse(&["x", "--no-force", "--version", "1.2"]).expect("parses");
    let table: toml::Table = document(&request).parse().expect("toml");
    assert_eq!(table["demo"][0]["force"].as_bool(), Some(false));
    assert_eq!(table["demo"][0]["ensure"].as_str(), Some("1.2"));
    let message = |list: &[&str]| parse(list).expect_err("fails").message().to_string();
    assert!(message(&["x", "--forse"]).contains("unknown flag --forse (did you mean --force?)"));
    assert_eq!(
        message(&["x", "--timeout"]),
        "holo-demo ensure: --timeout needs a value"
    );
    assert_eq!(
        message(&["x", "--absent", "--ensure", "present"]),
        "holo-demo ensure: --absent and --ensure both set ensure; give one of them"
    );
    assert!(message(&["x", "y"]).contains("\"y\" is a second name"));
    assert_eq!(
        message(&["x", "--force", "maybe"]),
        "holo-demo ensure: --force is a switch and takes no separate value (\"maybe\" follows it); write --force, --force=true or --force=false"
    );
    assert!(message(&["--force"]).starts_with("usage: holo-demo ensure NAME"));
    assert!(message(&["x", "--name", "y"]).contains("first argument"));
    assert_eq!(
        message(&["x", "--force=maybe"]),
        "holo-demo ensure: --force: expected true or false, got \"maybe\""
    );
    assert_eq!(
        message(&["x", "--protect=yes"]),
        "holo-demo ensure: --protect: expected true or false, got \"yes\""
    );
    assert_eq!(
        message(&["x", "--timeout", "soon"]),
        "holo-demo ensure: --timeout: expected an integer, got \"soon\""
    );
    assert_eq!(
        message(&["x", "--returns", "0", "--returns", "x"]),
        "holo-demo ensure: --returns: expected an integer, got \"x\" (a list: give --returns once per element)"
    );
    assert_eq!(
        message(&["x", "--data", "port = 80"]),
        "holo-demo ensure: --data: expected an inline TOML table such as '{ key = \"value\" }', got \"port = 80\""
    );
}

#[test]
fn a_value_is_read_from_a_file_without_its_final_newline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "p4ss word\n").expect("write");
    let data = dir.path().join("data.toml");
    std::fs::write(&data, "port = 80\n").expect("write");
    let secret = secret.display().to_string();
    let data = data.display().to_string();
    let request = flags()
        .parse(
            "holo-demo ensure",
            &args(&["x", "--mode-file", &secret, "--data-file", &data]),
        )
        .expect("parses");
    let table: toml::Table = document(&request).parse().expect("toml");
    assert_eq!(table["demo"][0]["mode"].as_str(), Some("p4ss word"));
    assert_eq!(table["demo"][0]["data"]["port"].as_integer(), Some(80));
    let message = |list: &[&str]| {
        flags()
            .parse("holo-demo ensure", &args(list))
            .expect_err("fails")
            .message()
            .to_string()
    };
    assert_eq!(
        message(&["x", "--mode", "1", "--mode-file", &secret]),
        "holo-demo ensure: --mode and --mode-file both set mode; give one of them"
    );
    assert!(
        message(&["x", "--mode-file", "/nonexistent/x"])
            .starts_with("holo-demo ensure: --mode-file: cannot read /nonexistent/x: "),
    );
    assert!(message(&["x", "--timeout-file", &secret]).contains("unknown flag --timeout-file"));
}

/// The demo kind with CCM's syntax: `NAME [ENSURE] [MODE]`, one provider,
/// `--data KEY:VALUE` and `--post KEY=VALUE` entries.
fn ccm_flags() -> Flags {
    let mut flags = Flags::new(
        "demo",
        property_types::<Demo>(),
        vec!["present", "absent"],
        &[("exec-if", "mode")],
    );
    flags.syntax = OneOffSyntax {
        positionals: &["ensure", "mode"],
        provider: Some("posix"),
        entry_flags: &["data", "post"],
    };
    flags
}

fn ccm_table(list: &[&str]) -> toml::Table {
    let request = ccm_flags()
        .parse("holo-demo ensure", &args(list))
        .expect("parses");
    let table: toml::Table = document(&request).parse().expect("toml");
    table["demo"][0].as_table().expect("table").clone()
}

fn ccm_message(list: &[&str]) -> String {
    ccm_flags()
        .parse("holo-demo ensure", &args(list))
        .expect_err("fails")
        .message()
        .to_string()
}

#[test]
fn bare_words_after_the_name_give_the_positional_properties() {
    let table = ccm_table(&["x", "5.8", "0644"]);
    assert_eq!(table["ensure"].as_str(), Some("5.8"));
    assert_eq!(table["mode"].as_str(), Some("0644"));
    assert_eq!(
        ccm_message(&["x", "5.8", "0644", "more"]),
        "holo-demo ensure: \"more\" is one word too many; give NAME [ENSURE] [MODE] and the properties as --PROPERTY VALUE"
    );
    assert_eq!(
        ccm_message(&["x", "5.8", "--absent"]),
        "holo-demo ensure: ENSURE and --absent both set ensure; give one of them"
    );
}

#[test]
fn owner_user_colon_group_sets_both() {
    let table = ccm_table(&["x", "--owner", "www:web"]);
    assert_eq!(table["owner"].as_str(), Some("www"));
    assert_eq!(table["group"].as_str(), Some("web"));
    assert_eq!(ccm_table(&["x", "--owner", "www"]).get("group"), None);
    assert_eq!(
        ccm_message(&["x", "--owner", "www:web", "--group", "adm"]),
        "holo-demo ensure: --owner and --group both set group; give one of them"
    );
}

#[test]
fn check_flags_give_one_health_check() {
    let table = ccm_table(&[
        "x",
        "--check",
        "check_http -H localhost",
        "--check-tries",
        "5",
        "--check-sleep",
        "1s",
    ]);
    let check = &table["health_checks"][0];
    assert_eq!(check["command"].as_str(), Some("check_http -H localhost"));
    assert_eq!(check["tries"].as_integer(), Some(5));
    assert_eq!(check["try_sleep"].as_str(), Some("1s"));
    assert_eq!(
        ccm_message(&["x", "--check-tries", "5"]),
        "holo-demo ensure: --check-tries and --check-sleep set how --check runs; give --check COMMAND too"
    );
    assert!(ccm_message(&["x", "--check", "c", "--check-tries", "0"]).contains("1 or more"));
}

#[test]
fn provider_of_a_kind_with_one_provider() {
    assert!(
        ccm_table(&["x", "--provider", "posix"])
            .get("provider")
            .is_none()
    );
    assert_eq!(
        ccm_message(&["x", "--provider", "shell"]),
        "holo-demo ensure: --provider \"shell\": holo's demo has one provider, posix; give --provider posix or leave the flag out"
    );
}

#[test]
fn entry_flags_take_key_value_and_aliases_take_ccm_names() {
    let table = ccm_table(&[
        "x",
        "--data",
        "Authorization:Bearer t",
        "--data=Accept: */*",
        "--post",
        "*.go=go fmt {}",
        "--post",
        "{ \"*.sh\" = \"chmod +x {}\" }",
        "--exec-if",
        "0600",
    ]);
    assert_eq!(table["data"]["Authorization"].as_str(), Some("Bearer t"));
    assert_eq!(table["data"]["Accept"].as_str(), Some("*/*"));
    assert_eq!(table["post"][0]["*.go"].as_str(), Some("go fmt {}"));
    assert_eq!(table["post"][1]["*.sh"].as_str(), Some("chmod +x {}"));
    assert_eq!(table["mode"].as_str(), Some("0600"));
}

#[test]
fn short_flags_disable_and_the_session_flag() {
    let table = ccm_table(&["x", "-S", "file#/a", "--disable"]);
    assert_eq!(table["subscribe"][0].as_str(), Some("file#/a"));
    assert_eq!(table["enable"].as_bool(), Some(false));
    let (_, session) = ccm_flags()
        .parse_with_session("holo-demo ensure", &args(&["x", "--session", "/s"]))
        .expect("parses");
    assert_eq!(session.as_deref(), Some("/s"));
    assert!(
        ccm_message(&["x", "--session", ""]).contains("--session needs the session's directory")
    );
}

#[test]
fn ccm_flags_holo_does_not_have_are_refused_with_the_reason() {
    for (flag, reason) in [
        ("--hiera", "not from a Hiera file"),
        ("--read-env", "reads no .env file"),
        ("--registration", "no NATS registration store"),
        ("-R", "no NATS registration store"),
        ("--context", "no NATS registration store"),
    ] {
        let message = ccm_message(&["x", flag, "v"]);
        assert!(message.contains(reason), "{flag}: {message}");
    }
}

#[test]
fn a_bad_entry_names_both_forms() {
    assert_eq!(
        ccm_message(&["x", "--data", "port"]),
        "holo-demo ensure: --data: expected KEY:VALUE, KEY=VALUE or an inline TOML table such as '{ key = \"value\" }', got \"port\""
    );
}
