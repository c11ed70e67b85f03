//! `configs` and `secrets` delivered into the guest: the definitions
//! (`file:`, `content:`, `environment:`), the references (target, uid, gid,
//! mode), the defaults (secrets 0400 under /run/secrets, configs 0444 at
//! `/NAME`), and the errors. Redaction in `holos config` output is
//! tested with holo-vms.

use crate::common;
use common::{ENV_SECRET, Fixture, SECRET, guest_files_project, project};
use holos_compose::manifest::GuestFileKind;

/// Kind, source, target, uid, gid, mode, content.
type Row<'a> = (GuestFileKind, &'a str, &'a str, u32, u32, &'a str, &'a [u8]);

#[test]
fn configs_and_secrets_resolve_with_their_targets_owners_and_modes() {
    let m = guest_files_project().manifest();
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
