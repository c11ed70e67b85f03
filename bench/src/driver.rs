//! The driver's benchmark: `holo scan` and `holo apply` over the
//! trivial SDK plugin `holo-demo`, with and without the batch extension; the
//! driver's own cost per entity beyond the plugin process; and parsing a
//! scan report in-process.

use crate::util::{release_binaries, report, root_with_plugins, scan_and_applies, time_holo};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

pub fn run(sizes: &[usize]) -> Result<(), String> {
    let bin = release_binaries(&["holo", "holo-demo"])?;
    println!("# driver benchmark (release build, holo-demo plugin)");
    for &n in sizes {
        let root = root_with_plugins(&bin, &["demo"])?;
        let mut toml = String::with_capacity(n * 40);
        for i in 0..n {
            toml.push_str(&format!("[[demo]]\nname = \"e{i:06}\"\nvalue = \"v{i}\"\n"));
        }
        std::fs::write(root.path().join("usr/share/holo/demo/demo.toml"), toml)
            .map_err(|e| e.to_string())?;
        let root = root.path();
        let no_batch = scan_and_applies(&bin, root, n)?;
        let direct = time_plugin_calls(&bin, root, n)?;
        report("  of which plugin processes alone", n, direct);
        let own = no_batch.saturating_sub(direct);
        report("  driver's own cost (difference)", n, own);
        report("holo diff", n, time_holo(&bin, root, &["diff"], &[], &[0])?);
    }
    for &n in sizes {
        parse_report_bench(n);
    }
    Ok(())
}

/// Spawns `holo-demo apply ID` n times the way the driver does (FD 3 pipe,
/// stdout/stderr pipes), with the cache that a scan leaves, to isolate the
/// plugin's process cost from the driver's.
fn time_plugin_calls(bin: &Path, root: &Path, n: usize) -> Result<std::time::Duration, String> {
    let cache = tempfile::tempdir().map_err(|e| e.to_string())?;
    let resources = cache.path().join("resources");
    std::fs::create_dir_all(&resources).map_err(|e| e.to_string())?;
    std::fs::copy(
        root.join("usr/share/holo/demo/demo.toml"),
        resources.join("demo.toml"),
    )
    .map_err(|e| e.to_string())?;
    let plugin = bin.join("holo-demo");
    let envs = [
        ("HOLO_API_VERSION", "3".to_string()),
        ("HOLO_ROOT_DIR", root.display().to_string()),
        (
            "HOLO_CACHE_DIR",
            cache.path().join("cache").display().to_string(),
        ),
        ("HOLO_RESOURCE_DIR", resources.display().to_string()),
        (
            "HOLO_STATE_DIR",
            root.join("var/lib/holo/demo").display().to_string(),
        ),
        ("HOLO_EXTENSIONS", "noop,order,batch".to_string()),
    ];
    std::fs::create_dir_all(cache.path().join("cache")).map_err(|e| e.to_string())?;
    let status = Command::new(&plugin)
        .arg("scan")
        .envs(envs.iter().map(|(k, v)| (*k, v)))
        .stdout(Stdio::null())
        .status()
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err("holo-demo scan failed".to_string());
    }
    let start = Instant::now();
    for i in 0..n {
        let output = Command::new(&plugin)
            .args(["apply", &format!("demo:e{i:06}")])
            .envs(envs.iter().map(|(k, v)| (*k, v)))
            .stdin(Stdio::null())
            .output()
            .map_err(|e| e.to_string())?;
        if !output.status.success() {
            return Err(format!(
                "holo-demo apply failed: {}",
                String::from_utf8_lossy(&output.stderr)
            ));
        }
    }
    Ok(start.elapsed())
}

fn parse_report_bench(n: usize) {
    let mut text = String::with_capacity(n * 120);
    for i in 0..n {
        text.push_str(&format!(
            "ENTITY: demo:e{i:06}\nSOURCE: /tmp/holo.x/generated-resources/demo/demo.toml\nfound in: /tmp/holo.x/generated-resources/demo/demo.toml:{i}\n"
        ));
    }
    // As the driver's: a copy for each resource path, the rest borrowed.
    fn translate(s: &str) -> std::borrow::Cow<'_, str> {
        match s.starts_with("/tmp/holo.x/") {
            true => s.to_string().into(),
            false => s.into(),
        }
    }
    let runs = 5;
    let start = Instant::now();
    for _ in 0..runs {
        let parsed = holo::scan::parse_report(0, "demo", &text, true, &translate);
        assert!(parsed.is_ok_and(|e| e.len() == n));
    }
    report(
        "parse a scan report (in-process)",
        n,
        start.elapsed() / runs,
    );
}
