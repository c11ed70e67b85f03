//! `configs` and `secrets` delivered into the guest: the definitions
//! (`file:`, `content:`, `environment:`), the references (target, uid, gid,
//! mode), the defaults (secrets 0400 under /run/secrets, configs 0444 at
//! `/NAME`), the errors, and redaction: a secret never reaches `holos
//! config` output, resolved or not.

use crate::common;
use common::{ConfigOutput, ENV_SECRET, SECRET, guest_files_project};
use holos_compose::manifest::REDACTED;

#[test]
fn secrets_never_reach_the_config_output() {
    let f = guest_files_project();
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
