//! A string doubled into a variable and never written is bounded in every
//! engine: Go's functions refuse a result past `max_render_size` at the
//! template's line, and the SDK stops a render (minijinja's `~`, which has
//! no hook) once it holds 4 times `max_render_size` and 64 MiB. Under the
//! driver, the plugin's message is shown, and once the template is fixed
//! the next apply converges.

use std::fs;
use std::path::Path;
use std::time::Duration;

use test_support::plugin_run::PluginRun;
use test_support::process::{Measured, run_measured};

/// The memory bound with `max_render_size = "1M"`.
const LIMIT_1M: u64 = (4 << 20) + (64 << 20);

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(path, text).expect("write");
}

/// A scaffold `/srv/NAME` of `engine` whose one file is `template`.
fn declare(root: &Path, name: &str, engine: &str, template: &str) {
    write(
        &root.join(format!("usr/share/holo/scaffold/{name}.toml")),
        &format!(
            "[[scaffold]]\nname = \"/srv/{name}\"\nsource = \"{name}\"\nengine = \"{engine}\"\nmax_render_size = \"1M\"\n"
        ),
    );
    write(
        &root.join(format!("usr/share/holo/scaffold/{name}/file.conf")),
        template,
    );
}

/// Scan, then `apply scaffold:/srv/NAME`, measured; the scan when it
/// fails (the scan renders too).
fn apply(root: &Path, name: &str) -> Measured {
    let plugin = |args: &[&str]| {
        PluginRun::new(env!("CARGO_BIN_EXE_holo-scaffold"), "scaffold", root)
            .cache_dir(root.join("tmp/holo.1"))
            .args(args)
            .command()
    };
    let scan = run_measured(plugin(&["scan"]), root, "scan", Duration::from_secs(60));
    if scan.code != 0 {
        return scan;
    }
    let entity = format!("scaffold:/srv/{name}");
    run_measured(
        plugin(&["apply", &entity]),
        root,
        "apply",
        Duration::from_secs(120),
    )
}

#[test]
fn go_functions_refuse_a_doubled_string_past_the_budget_at_its_line() {
    for (function, doubled) in [
        ("printf", "printf \"%s%s\" $s $s"),
        ("cat", "cat $s $s"),
        ("join", "join $s (list \"\" \"\" \"\")"),
        ("replace", "replace \"x\" \"xx\" $s"),
        ("repeat", "repeat 2 $s"),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let template = format!(
            "first line\n{{{{ $s := \"x\" }}}}{{{{ range $i := until 40 }}}}{{{{ $s = {doubled} }}}}{{{{ end }}}}done\n"
        );
        declare(dir.path(), "app", "go", &template);
        let run = apply(dir.path(), "app");
        let file = dir.path().join("usr/share/holo/scaffold/app/file.conf");
        assert!(
            run.code != 0
                && run.stderr.contains(&format!(
                    "{}:2: cannot render the content: {function}: the result is more than 1048576 bytes (max_render_size)",
                    file.display()
                ))
                && run.stderr.contains("raise max_render_size on this resource"),
            "{function}: {}",
            run.stderr
        );
        assert!(run.peak < 2 * LIMIT_1M, "{function}: peak {}", run.peak);
        assert!(!dir.path().join("srv/app/file.conf").exists());
    }
}

#[test]
fn a_minijinja_string_doubled_into_a_namespace_stops_at_the_memory_bound() {
    let dir = tempfile::tempdir().expect("tempdir");
    declare(
        dir.path(),
        "app",
        "minijinja",
        "{% set ns = namespace(s = 'x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}done\n",
    );
    let run = apply(dir.path(), "app");
    let file = dir.path().join("usr/share/holo/scaffold/app/file.conf");
    assert!(
        run.code == 1
            && run.stderr.contains(&format!(
                "{}: the template takes more than {LIMIT_1M} bytes of memory to render",
                file.display()
            )),
        "{}",
        run.stderr
    );
    assert!(run.peak < 2 * LIMIT_1M, "peak {}", run.peak);
}

/// `holo apply` with holo-scaffold, in one batch.
fn holo_apply(root: &Path) -> std::process::Output {
    write(
        &root.join("etc/holorc"),
        &format!(
            "plugin scaffold={}\n",
            test_support::binary("holo-scaffold").display()
        ),
    );
    fs::create_dir_all(root.join("run")).expect("run");
    fs::create_dir_all(root.join("tmp")).expect("tmp");
    std::process::Command::new(test_support::binary("holo"))
        .arg("apply")
        .env("HOLO_ROOT_DIR", root)
        .env("TMPDIR", root.join("tmp"))
        .env("NO_COLOR", "1")
        .output()
        .expect("holo")
}

#[test]
fn the_driver_shows_the_message_and_the_fixed_template_converges() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(&root.join("etc/hostname"), "web01\n");
    declare(root, "a", "minijinja", "fine\n");
    let doubling = "{% set ns = namespace(s = 'x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}done\n";
    declare(root, "b", "minijinja", doubling);
    declare(root, "c", "minijinja", "also fine\n");
    let out = holo_apply(root);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("b/file.conf: the template takes more than")
            && text.contains("raise max_render_size on this resource"),
        "{text}"
    );
    declare(root, "b", "minijinja", "fixed\n");
    let out = holo_apply(root);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    for (name, content) in [("a", "fine\n"), ("b", "fixed\n"), ("c", "also fine\n")] {
        assert_eq!(
            fs::read_to_string(root.join(format!("srv/{name}/file.conf"))).expect("file"),
            content
        );
    }
    // Converged: a third apply has nothing to do.
    let out = holo_apply(root);
    assert!(out.status.success());
    let again = String::from_utf8_lossy(&out.stdout);
    assert!(!again.contains("Working on"), "{again}");
}

#[test]
fn jet_refuses_a_doubled_string_at_its_line() {
    for (doubled, expected) in [
        ("s + s", "a string built with + exceeds 1048576 bytes"),
        (
            "repeat(s, 2)",
            "repeat: the result would exceed 1048576 bytes",
        ),
        (
            "replace(s, \"x\", \"xx\", -1)",
            "replace: the result exceeds 1048576 bytes",
        ),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let template = format!(
            "[[ s := \"x\" ]][[ range i := ints(0, 40) ]][[ s = {doubled} ]][[ end ]]done\n"
        );
        declare(dir.path(), "app", "jet", &template);
        let run = apply(dir.path(), "app");
        assert!(
            run.code != 0 && run.stderr.contains(expected),
            "{doubled}: {}",
            run.stderr
        );
        assert!(run.peak < 2 * LIMIT_1M, "{doubled}: peak {}", run.peak);
    }
}
