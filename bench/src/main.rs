//! Benchmarks that anyone can run: `cargo run --release -p bench -- NAME`.
//! They measure; they assert nothing. Each builds the release binaries first
//! and runs them as a user would, against a fresh temporary root.

mod driver;
mod file;
mod inplace;
mod util;

const USAGE: &str = "\
Usage: cargo run --release -p bench -- BENCH [SIZES]

Benchmarks:
  driver    holo scan/apply over the trivial SDK plugin holo-demo (batch and
            per-entity), the driver's own cost per entity, and parsing a
            scan report
  file      holo-file over N generated [[file]] resources: scan, first
            apply, no-op apply (batch and per-entity), diff
  inplace   holo scan with and without a 1 GiB file among an inplace
            plugin's resources (SIZES is ignored)
  all       every benchmark

The holos compose model has its own: cargo bench -p holo-vms (200 services).

SIZES is a comma-separated list of entity counts (default: 1000,10000).
";

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(name) = args.first() else {
        eprint!("{USAGE}");
        return std::process::ExitCode::from(2);
    };
    let sizes: Vec<usize> = match args.get(1) {
        Some(list) => match list.split(',').map(str::parse).collect() {
            Ok(sizes) => sizes,
            Err(_) => {
                eprintln!("bench: SIZES must be numbers separated by commas, got {list}");
                return std::process::ExitCode::from(2);
            }
        },
        None => vec![1000, 10000],
    };
    let result = match name.as_str() {
        "driver" => driver::run(&sizes),
        "file" => file::run(&sizes),
        "inplace" => inplace::run(),
        "all" => driver::run(&sizes)
            .and_then(|()| file::run(&sizes))
            .and_then(|()| inplace::run()),
        "--help" | "-h" | "help" => {
            print!("{USAGE}");
            return std::process::ExitCode::SUCCESS;
        }
        other => Err(format!("unknown benchmark {other}; see --help")),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("bench: {message}");
            std::process::ExitCode::FAILURE
        }
    }
}
