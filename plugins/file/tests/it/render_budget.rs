//! A template's output is bounded: `max_render_size` (default 64 MiB) per
//! render; a template that writes more fails at its FILE:LINE before it
//! holds more than that.

use std::path::Path;
use std::time::{Duration, Instant};

use test_support::plugin_run::PluginRun;

/// `holo-file scan` on `root`, with holo's environment.
fn scan_run(root: &Path) -> PluginRun {
    PluginRun::new(assert_cmd::cargo::cargo_bin!("holo-file"), "file", root)
        .cache_dir(root.join("tmp/holo.1"))
        .args(["scan"])
}

fn scan(root: &Path) -> (bool, String, Duration) {
    let started = Instant::now();
    let out = scan_run(root).output();
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.success(), text, started.elapsed())
}

fn resource(root: &Path, toml: &str) -> std::path::PathBuf {
    let dir = root.join("usr/share/holo/file");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("big.toml");
    std::fs::write(&path, toml).unwrap();
    path
}

#[test]
fn a_content_template_past_max_render_size_fails_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = resource(
        dir.path(),
        "[[file]]\nname = \"/etc/big\"\nmax_render_size = \"1K\"\ncontent = \"\"\"\nhead\n{% for i in range(2000) %}x{% endfor %}\n\"\"\"\n",
    );
    let (ok, text, _) = scan(dir.path());
    assert!(!ok, "{text}");
    assert!(
        text.contains(&format!("{}:", file.display()))
            && text.contains(
                "property content: the template renders more than 1024 bytes (max_render_size)"
            ),
        "{text}"
    );
    // Within the budget it renders.
    resource(
        dir.path(),
        "[[file]]\nname = \"/etc/big\"\nowner = \"root\"\ngroup = \"root\"\nmode = \"0644\"\nmax_render_size = 4096\ncontent = \"{% for i in range(2000) %}x{% endfor %}\"\n",
    );
    let (ok, text, _) = scan(dir.path());
    assert!(ok, "{text}");
    // A budget that is no size is refused at its line.
    resource(
        dir.path(),
        "[[file]]\nname = \"/etc/big\"\nmax_render_size = \"lots\"\ncontent = \"x\"\n",
    );
    let (ok, text, _) = scan(dir.path());
    assert!(
        !ok && text.contains("big.toml:3: max_render_size must be a size in bytes"),
        "{text}"
    );
}

#[test]
fn the_default_budget_stops_a_template_at_64_mib() {
    let dir = tempfile::tempdir().unwrap();
    // 64 KiB written 2000 times: 125 MiB unless stopped.
    resource(
        dir.path(),
        "[[file]]\nname = \"/etc/big\"\ncontent = \"{% set s = 'x' * 65536 %}{% for i in range(2000) %}{{ s }}{% endfor %}\"\n",
    );
    let (ok, text, took) = scan(dir.path());
    assert!(!ok, "{text}");
    assert!(
        text.contains("the template renders more than 67108864 bytes (max_render_size)"),
        "{text}"
    );
    assert!(took < Duration::from_secs(30), "{took:?}");
}

/// The memory bound of a render with `max_render_size = "1M"`: 4 times it
/// and 64 MiB.
const LIMIT_1M: u64 = (4 << 20) + (64 << 20);

/// A string doubled into a variable and never written is no output, but it
/// is memory (a `set` inside a loop lasts one iteration in minijinja, so a
/// namespace carries the string from one to the next): the render stops once it holds 4 times max_render_size and
/// 64 MiB, naming the property and its file, and the plugin never grows
/// much past that.
#[test]
fn a_string_doubled_into_a_variable_stops_at_the_memory_bound() {
    for operator in ["~", "+"] {
        let dir = tempfile::tempdir().unwrap();
        let file = resource(
            dir.path(),
            &format!(
                "[[file]]\nname = \"/etc/big\"\nowner = \"root\"\ngroup = \"root\"\nmode = \"0644\"\nmax_render_size = \"1M\"\ncontent = \"{{% set ns = namespace(s = 'x') %}}{{% for i in range(40) %}}{{% set ns.s = ns.s {operator} ns.s %}}{{% endfor %}}done\"\n"
            ),
        );
        let run = test_support::process::run_measured(
            scan_run(dir.path()).command(),
            dir.path(),
            "holo-file scan",
            Duration::from_secs(120),
        );
        assert_eq!(run.code, 1, "{operator}: {}", run.stderr);
        assert!(
            run.stderr.contains(&format!(
                "{}:7: property content: the template takes more than {LIMIT_1M} bytes of memory to render (4 times max_render_size and 64 MiB)",
                file.display()
            )) && run.stderr.contains("raise max_render_size on this resource"),
            "{operator}: {}",
            run.stderr
        );
        assert!(
            run.peak < 2 * LIMIT_1M,
            "{operator}: peak {} bytes, bound {LIMIT_1M}",
            run.peak
        );
    }
}
