//! The `inplace` extension: `holo scan` over the SDK plugin
//! `holo-demo` (which declares `inplace`) with and without a real 1 GiB
//! file in its resource directory. The driver must not copy it, so the
//! difference should stay below 20 ms. For contrast, a plugin that declares
//! nothing gets Holo 3's copy of the same file.

use crate::util::{release_binaries, root_with_plugins, time_holo};
use std::io::Write;
use std::path::Path;
use std::time::Duration;

const GIB: usize = 1 << 30;
const ROUNDS: usize = 15;

/// A plugin in shell that declares no extension: the driver copies its
/// resources as Holo 3 does.
const COPIED_PLUGIN: &str = "#!/bin/sh\n\
    case \"$1\" in info) echo MIN_API_VERSION=3; echo MAX_API_VERSION=3 ;; esac\n";

pub fn run() -> Result<(), String> {
    let bin = release_binaries(&["holo", "holo-demo"])?;
    println!("# inplace benchmark (release build, holo-demo plugin, median of {ROUNDS})");
    let root = root_with_plugins(&bin, &["demo"])?;
    let root = root.path();
    let resources = root.join("usr/share/holo/demo");
    let mut toml = String::new();
    for i in 0..100 {
        toml.push_str(&format!("[[demo]]\nname = \"e{i:03}\"\nvalue = \"v{i}\"\n"));
    }
    std::fs::write(resources.join("demo.toml"), toml).map_err(|e| e.to_string())?;

    // A real file with real blocks, written once; a rename moves it in and
    // out of the resource directory.
    let parked = root.join("big.img");
    let in_resources = resources.join("big.img");
    write_big_file(&parked)?;

    let mut without = Vec::new();
    let mut with = Vec::new();
    time_holo(&bin, root, &["scan"], &[], &[0])?; // warm-up
    for _ in 0..ROUNDS {
        without.push(time_holo(&bin, root, &["scan"], &[], &[0])?);
        std::fs::rename(&parked, &in_resources).map_err(|e| e.to_string())?;
        with.push(time_holo(&bin, root, &["scan"], &[], &[0])?);
        std::fs::rename(&in_resources, &parked).map_err(|e| e.to_string())?;
    }
    let (without, with) = (median(&mut without), median(&mut with));
    let extra = with.as_secs_f64() - without.as_secs_f64();
    println!(
        "{:<52} {:>9.1} ms",
        "holo scan, holo-demo (inplace)",
        ms(without)
    );
    println!(
        "{:<52} {:>9.1} ms",
        "  with a 1 GiB file among its resources",
        ms(with)
    );
    println!(
        "{:<52} {:>9.1} ms   (target: < 20 ms)",
        "  difference",
        extra * 1e3
    );

    // Holo 3's behaviour for a plugin that declares nothing.
    let copied = root.join("usr/share/holo/copied");
    std::fs::create_dir_all(&copied).map_err(|e| e.to_string())?;
    std::fs::hard_link(&parked, copied.join("big.img")).map_err(|e| e.to_string())?;
    let binary = root.join("usr/lib/holo/holo-copied");
    std::fs::write(&binary, COPIED_PLUGIN).map_err(|e| e.to_string())?;
    set_executable(&binary)?;
    std::fs::write(root.join("etc/holorc"), "plugin copied\n").map_err(|e| e.to_string())?;
    let copy = time_holo(&bin, root, &["scan"], &[], &[0])?;
    println!(
        "{:<52} {:>9.1} ms",
        "holo scan, a plugin without inplace (copies 1 GiB)",
        ms(copy)
    );
    Ok(())
}

fn write_big_file(path: &Path) -> Result<(), String> {
    let mut file = std::fs::File::create(path).map_err(|e| e.to_string())?;
    // Not zeros, so that no layer can store it sparsely.
    let chunk: Vec<u8> = (0..(1 << 20)).map(|i: u32| (i % 251) as u8 + 1).collect();
    for _ in 0..GIB / chunk.len() {
        file.write_all(&chunk).map_err(|e| e.to_string())?;
    }
    file.sync_all().map_err(|e| e.to_string())
}

fn set_executable(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| e.to_string())
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}
