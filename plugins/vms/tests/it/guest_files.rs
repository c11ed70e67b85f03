//! `configs` and `secrets` delivered into the guest: the definitions
//! (`file:`, `content:`, `environment:`), the references (target, uid, gid,
//! mode), the defaults (secrets 0400 under /run/secrets, configs 0444 at
//! `/NAME`), the errors, and redaction: a secret never reaches `holos
//! config` output, resolved or not.

use crate::common;
use common::{Fixture, project};
use holos_compose::manifest::{GuestFileKind, REDACTED};

const SECRET: &str = "s3cr3t-inline-value";
const ENV_SECRET: &str = "s3cr3t-from-the-environment";

fn fixture() -> Fixture {
    Fixture::new(&[
        (
            "holos.yaml",
            &format!(
                "services:\n  app:\n    image: debian\n    configs:\n      - app_conf\n      - source: inline_conf\n        target: /etc/app/inline.conf\n        uid: \"1000\"\n        gid: 1001\n        mode: 0640\n    secrets:\n      - db_password\n      - source: api_token\n        target: token\n      - source: from_env\n        target: /etc/app/env-secret\n        mode: 0440\nconfigs:\n  app_conf:\n    file: ./conf/app.conf\n  inline_conf:\n    content: |\n      port=80\nsecrets:\n  db_password:\n    file: ./db_password.txt\n  api_token:\n    content: {SECRET}\n  from_env:\n    environment: APP_SECRET\n  unused:\n    file: ./does-not-exist\n"
            ),
        ),
        ("conf/app.conf", "a=1\n"),
        ("db_password.txt", "pw-from-a-file\n"),
    ])
    .env("APP_SECRET", ENV_SECRET)
}

/// Kind, source, target, uid, gid, mode, content.
type Row<'a> = (GuestFileKind, &'a str, &'a str, u32, u32, &'a str, &'a [u8]);

#[test]
fn configs_and_secrets_resolve_with_their_targets_owners_and_modes() {
    let m = fixture().manifest();
    let files: Vec<Row> = m.services[0]
        .files
        .iter()
        .map(|f| {
            (
                f.kind,
                f.source.as_str(),
                f.target.as_str(),
                f.uid,
                f.gid,
                f.mode.as_str(),
                f.content.bytes.as_slice(),
            )
        })
        .collect();
    use GuestFileKind::{Config, Secret};
    assert_eq!(
        files,
        [
            (Config, "app_conf", "/app_conf", 0, 0, "0444", &b"a=1\n"[..]),
            (
                Config,
                "inline_conf",
                "/etc/app/inline.conf",
                1000,
                1001,
                "0640",
                b"port=80\n"
            ),
            (
                Secret,
                "db_password",
                "/run/secrets/db_password",
                0,
                0,
                "0400",
                b"pw-from-a-file\n"
            ),
            (
                Secret,
                "api_token",
                "/run/secrets/token",
                0,
                0,
                "0400",
                SECRET.as_bytes()
            ),
            (
                Secret,
                "from_env",
                "/etc/app/env-secret",
                0,
                0,
                "0440",
                ENV_SECRET.as_bytes()
            ),
        ]
    );
}

#[test]
fn secrets_never_reach_the_config_output() {
    let f = fixture();
    let config = f.config();
    assert!(!config.contains(SECRET), "{config}");
    assert!(config.contains(REDACTED), "{config}");
    for format in ["yaml", "json"] {
        let out = assert_cmd::Command::cargo_bin("holos")
            .unwrap()
            .current_dir(f.path())
            .env_clear()
            .env("APP_SECRET", ENV_SECRET)
            .args(["config", "--resolved", "--format", format])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        for secret in [SECRET, ENV_SECRET, "pw-from-a-file"] {
            assert!(!text.contains(secret), "{format}: {secret} in\n{text}");
        }
        assert!(text.contains("port=80"), "configs are shown: {text}");
        assert!(text.contains(REDACTED), "{text}");
    }
}

#[test]
fn bad_definitions_and_references_name_their_place() {
    let errors = Fixture::new(&[(
        "holos.yaml",
        "services:\n  a:\n    image: debian\n    secrets: [missing, gone, ext, noenv, both]\n    configs: [{source: c, mode: rw, uid: root}]\nconfigs:\n  c: {content: x}\nsecrets:\n  gone: {file: ./nope}\n  ext: {external: true}\n  noenv: {environment: UNSET_VAR}\n  both: {file: ./a, content: b}\n",
    )])
    .errors();
    for expected in [
        "holos.yaml:4:15: services.a.secrets[0]: unknown secret \"missing\"; declare it under the top-level secrets:",
        "holos.yaml:9:16: secrets.gone.file: cannot read DIR/nope: No such file or directory (os error 2); create the file or fix the path",
        "holos.yaml:10:19: secrets.ext.external: an external secret lives in a Swarm, which holos cannot read; give it file:, content: or environment:",
        "holos.yaml:11:24: secrets.noenv.environment: the variable UNSET_VAR is not set; set it in the environment or in .env",
        "holos.yaml:12:9: secrets.both: gives file, content: keep exactly one of file:, content: or environment:",
        "holos.yaml:5:42: services.a.configs[0].uid: \"root\" is not a numeric uid; write a number such as \"1000\"",
        "holos.yaml:5:33: services.a.configs[0].mode: \"rw\" is not a file mode; write it in octal, such as 0440",
    ] {
        assert!(errors.contains(expected), "{expected}\nnot in:\n{errors}");
    }
    // An unused definition is not read.
    project("services:\n  a: {image: debian}\nsecrets:\n  s: {file: ./nope}\n").manifest();
}
