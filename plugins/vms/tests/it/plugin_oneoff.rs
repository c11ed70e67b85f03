//! `holo-vms ensure PROJECT --file FILE` against `holo apply` of the same
//! project as a resource, in two roots with the fake QEMU: the same output
//! (but for the `found in` line and the root's path), exit status and VMs;
//! then `holo-vms status PROJECT` of what each brought up.

use crate::plugin_support;

use std::process::Output;
use std::time::Duration;

use plugin_support::Root;

/// Two services, `app` after `db`.
fn shop(root: &Root) -> String {
    format!(
        "services:\n  app:\n    image: {image}\n    image_format: qcow2\n    image_os: systemd\n    replicas: 2\n    depends_on: [db]\n  db:\n    image: {image}\n    image_format: qcow2\n    image_os: systemd\n",
        image = root.image(),
    )
}

/// Exit status and output without `found in` lines, the root as `ROOT`,
/// and pids and ports, which differ from run to run, as `N`.
fn comparable(root: &Root, output: &Output) -> (Option<i32>, String, String) {
    let shown = root.path().display().to_string();
    let stdout: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|line| !line.trim_start().starts_with("found in "))
        .map(|line| line.replace(&shown, "ROOT"))
        .collect();
    (
        output.status.code(),
        stdout.join("\n"),
        numbers_after(
            &String::from_utf8_lossy(&output.stderr).replace(&shown, "ROOT"),
            &["(pid ", "127.0.0.1:"],
        ),
    )
}

/// `text` with the digits that follow each of `marks` replaced by `N`.
fn numbers_after(text: &str, marks: &[&str]) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some((at, mark)) = marks
        .iter()
        .filter_map(|mark| rest.find(mark).map(|at| (at, *mark)))
        .min()
    {
        out.push_str(&rest[..at + mark.len()]);
        rest = rest[at + mark.len()..].trim_start_matches(|c: char| c.is_ascii_digit());
        out.push('N');
    }
    out.push_str(rest);
    out
}

fn ensure(root: &Root, args: &[&str]) -> Output {
    let mut all = vec!["ensure"];
    all.extend(args);
    root.run_within(root.plugin(&all), Duration::from_secs(60))
}

fn status(root: &Root, project: &str) -> (Option<i32>, String) {
    let out = root.plugin(&["status", project]).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

fn project_record(root: &Root) -> (std::path::PathBuf, serde_json::Value) {
    let path = root.path().join("var/lib/holos/projects/shop.json");
    let text = std::fs::read_to_string(&path).expect("project record");
    (path, serde_json::from_str(&text).expect("json"))
}

fn recorded_files(root: &Root) -> Vec<String> {
    let (_, record) = project_record(root);
    record["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|file| file.as_str().expect("a path").to_string())
        .collect()
}

fn set_recorded_files(root: &Root, file: &str) {
    let (path, mut record) = project_record(root);
    record["files"] = serde_json::json!([file]);
    std::fs::write(&path, serde_json::to_string_pretty(&record).unwrap()).unwrap();
}

#[test]
fn ensure_is_holo_apply_of_the_project_and_status_shows_it() {
    let applied = Root::new();
    let ensured = Root::new();
    applied.compose("shop", &shop(&applied));
    let file = ensured.path().join("srv/shop/compose.yaml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, shop(&ensured)).unwrap();
    for round in ["first", "second"] {
        let by_holo = applied.run_within(applied.holo(&["apply"]), Duration::from_secs(60));
        let by_flags = ensure(&ensured, &["shop", "--file", "/srv/shop/compose.yaml"]);
        assert_eq!(
            comparable(&ensured, &by_flags),
            comparable(&applied, &by_holo),
            "{round} run: ensure (left) and holo apply (right) differ"
        );
        if round == "first" {
            let text = String::from_utf8_lossy(&by_flags.stdout);
            let db = text.find("Working on vm:shop/db").expect("db applied");
            let app = text.find("Working on vm:shop/app").expect("app applied");
            assert!(db < app, "the dependency comes first:\n{text}");
            // As given, not resolved below the root.
            assert!(
                text.contains("\n  found in /srv/shop/compose.yaml\n"),
                "{text}"
            );
        }
    }
    assert!(applied.pids("shop").iter().all(|(_, pid)| pid.is_some()));
    a_killed_vm_is_started_again_by_both(&applied, &ensured);
    let pids = ensured.pids("shop");
    assert_eq!(pids.len(), 3, "{pids:?}");
    assert!(pids.iter().all(|(_, pid)| pid.is_some()), "{pids:?}");
    // One-off records: the next holo run does not scrub the project.
    assert!(
        ensured
            .path()
            .join("var/lib/holo/ensure/vms/vm:shop%2Fapp.toml")
            .is_file()
    );
    let (code, text) = ensured.holo_text(&["apply"]);
    assert_eq!(code, 0, "{text}");
    assert!(!text.contains("Stopping"), "{text}");
    assert_eq!(ensured.pids("shop"), pids);

    // In test mode the project record holds the compose file's path below
    // the root, and status reads it there.
    assert_eq!(recorded_files(&ensured), ["/srv/shop/compose.yaml"]);
    assert_eq!(
        recorded_files(&applied),
        ["/usr/share/holo/vms/shop/holos.yaml"]
    );
    let (code, text) = status(&ensured, "shop");
    assert_eq!(code, Some(0), "{text}");
    let header = "# project shop, brought up from /srv/shop/compose.yaml\n";
    assert!(text.starts_with(header), "{text}");
    for (name, pid) in &pids {
        assert!(
            text.contains(&format!("# {name}: running (pid {})\n", pid.unwrap())),
            "{text}"
        );
    }
    assert!(
        text.ends_with(&format!(
            "# the compose file as it is now:\nname: shop\n{}",
            shop(&ensured)
        )),
        "{text}"
    );
    // A record written before, with the host path, reads the same.
    let real = std::fs::canonicalize(&file).unwrap();
    set_recorded_files(&ensured, &real.display().to_string());
    assert_eq!(status(&ensured, "shop"), (code, text));
    let (code, text) = status(&applied, "shop");
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.starts_with("# project shop, brought up from /usr/share/holo/vms/shop/holos.yaml\n"),
        "{text}"
    );

    // A stopped instance shows as such.
    ensured.holos_ok(&["-p", "shop", "stop", "db"]);
    let (_, text) = status(&ensured, "shop");
    assert!(text.contains("# db-0: stopped\n"), "{text}");
}

/// A killed VM: --noop says so in both ways and changes nothing; the next
/// run starts it again in both.
fn a_killed_vm_is_started_again_by_both(applied: &Root, ensured: &Root) {
    for root in [applied, ensured] {
        plugin_support::kill(root.pid("shop", "app-1").expect("app-1 runs"));
    }
    let by_holo = applied.run_within(applied.holo(&["apply", "--noop"]), Duration::from_secs(60));
    let by_flags = ensure(
        ensured,
        &["shop", "--file", "/srv/shop/compose.yaml", "--noop"],
    );
    assert_eq!(
        comparable(ensured, &by_flags),
        comparable(applied, &by_holo),
        "--noop: ensure (left) and holo apply (right) differ"
    );
    assert_eq!(by_flags.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&by_flags.stdout)
            .contains("Would have started 1 instance of app\n")
    );
    assert_eq!(ensured.pid("shop", "app-1"), None);
    let by_holo = applied.run_within(applied.holo(&["apply"]), Duration::from_secs(60));
    let by_flags = ensure(ensured, &["shop", "--file", "/srv/shop/compose.yaml"]);
    assert_eq!(
        comparable(ensured, &by_flags),
        comparable(applied, &by_holo),
        "restart: ensure (left) and holo apply (right) differ"
    );
}

#[test]
fn status_of_an_unknown_project_and_bad_ensure_arguments() {
    let root = Root::new();
    let (code, text) = status(&root, "none");
    assert_eq!(code, Some(3), "{text}");
    assert_eq!(
        text,
        "# holo-vms: no project none is recorded: it was never brought up, or it was taken down\n"
    );
    let missing = ensure(&root, &["shop", "--file", "/srv/none.yaml"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&missing.stderr)
            .starts_with("!! holo-vms ensure: cannot read /srv/none.yaml: "),
        "{}",
        String::from_utf8_lossy(&missing.stderr)
    );
    let usage = ensure(&root, &["--file", "x.yaml"]);
    assert_eq!(
        String::from_utf8_lossy(&usage.stderr),
        "!! usage: holo-vms ensure PROJECT [--file COMPOSE_FILE] [--noop] [--force-apply]\n"
    );
    // A compose error names the given file and line.
    std::fs::create_dir_all(root.path().join("srv")).unwrap();
    std::fs::write(
        root.path().join("srv/bad.yaml"),
        "services:\n  app: {imagee: x}\n",
    )
    .unwrap();
    let bad = ensure(&root, &["shop", "--file", "/srv/bad.yaml", "--noop"]);
    assert_eq!(bad.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("srv/bad.yaml:2:"), "{stderr}");
}

#[test]
fn a_failed_service_skips_its_dependents_as_in_holo_apply() {
    let applied = Root::new();
    let ensured = Root::new();
    let failing = |root: &Root| {
        shop(root).replace(
            "  db:\n",
            "  db:\n    healthcheck:\n      test: [\"test\", \"-e\", \"/nonexistent\"]\n      interval: 100ms\n      retries: 1\n",
        )
    };
    applied.compose("shop", &failing(&applied));
    std::fs::create_dir_all(ensured.path().join("srv")).unwrap();
    std::fs::write(ensured.path().join("srv/shop.yaml"), failing(&ensured)).unwrap();
    let by_holo = applied.run_within(applied.holo(&["apply"]), Duration::from_secs(120));
    let by_flags = ensure(&ensured, &["shop", "--file", "/srv/shop.yaml"]);
    let (code, _, stderr) = comparable(&ensured, &by_flags);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("!! skipped: required entity vm:shop/db failed in this run\n"),
        "{stderr}"
    );
    assert_eq!(
        comparable(&ensured, &by_flags),
        comparable(&applied, &by_holo),
        "ensure (left) and holo apply (right) differ"
    );
}

/// A secret given inline in the compose file is not shown: status prints
/// the file as parsed with the secret redacted, says what to fill in, and
/// exits 3, since the table is not the whole project.
#[test]
fn status_leaves_out_inline_secrets() {
    let root = Root::new();
    let file = root.path().join("srv/vault/compose.yaml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(
        &file,
        format!(
            "# the vault\nservices:\n  app:\n    image: {image}\n    image_format: qcow2\n    image_os: systemd\n    secrets: [token]\nsecrets:\n  token:\n    content: hunter2-in-the-file\n",
            image = root.image()
        ),
    )
    .unwrap();
    let out = ensure(&root, &["vault", "--file", "/srv/vault/compose.yaml"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (code, text) = status(&root, "vault");
    assert_eq!(code, Some(3), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
    assert!(
        text.contains(
            "# the compose file as it is now, without its inline secrets:\n# secrets.token.content is not shown; fill it in\nname: vault\n"
        ),
        "{text}"
    );
    assert!(
        text.ends_with("secrets:\n  token:\n    content: \"<redacted>\"\n"),
        "{text}"
    );
    assert!(text.contains("secrets:\n      - token"), "{text}");
}
