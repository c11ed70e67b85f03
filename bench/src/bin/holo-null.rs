//! A plugin that does nothing per entity, for the floor of per-process
//! mode: `scan` reports as many entities as `$HOLO_RESOURCE_DIR/count`
//! says, and `apply ENTITY` only tells the driver that nothing changed.
//! Timed under a driver, it leaves the driver's own cost per entity and
//! one process start.

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("info") => {
            print!("MIN_API_VERSION=3\nMAX_API_VERSION=3\n");
            ExitCode::SUCCESS
        }
        Some("scan") => {
            let dir = std::env::var_os("HOLO_RESOURCE_DIR").unwrap_or_default();
            let count: usize = std::fs::read_to_string(std::path::Path::new(&dir).join("count"))
                .ok()
                .and_then(|text| text.trim().parse().ok())
                .unwrap_or(0);
            let mut out = String::with_capacity(count * 24);
            for index in 0..count {
                out.push_str(&format!("ENTITY: null:e{index:06}\n"));
            }
            match std::io::stdout().lock().write_all(out.as_bytes()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::FAILURE,
            }
        }
        Some("apply" | "force-apply") if args.len() == 2 => {
            // SAFETY: FD 3 is the driver's pipe for this message; it is
            // written once and closed with the process.
            let written = unsafe { libc::write(3, b"not changed\n".as_ptr().cast(), 12) };
            if written == 12 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        _ => {
            eprintln!("usage: holo-null info|scan|apply ENTITY (run by a holo driver)");
            ExitCode::FAILURE
        }
    }
}
