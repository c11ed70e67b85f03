//! Benchmarks that anyone can run: `cargo run --release -p bench -- NAME`.
//! They measure; they assert nothing. Each builds the release binaries first
//! and runs them as a user would, against a fresh temporary root.

mod driver;
mod file;
mod file_dependent;
mod file_versus;
mod inplace;
mod peers;
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
  file-dependent
            holo-file no-op apply: N/10 directories with 9 files each that
            require their directory, against N independent files
  file-versus OLD_DIR
            holo-file no-op apply with this build and with the holo and
            holo-file in OLD_DIR (an older build's target/release),
            alternately; SIZES follow OLD_DIR (default: 10000)
  peers     holo-file against Puppet (puppet apply) and CFEngine
            (cf-agent -K) on N files with content, owner, group, mode and
            their directory: first and no-op apply, medians of 3 rounds,
            the no-op floor (sha256sum + stat) and per-process mode against
            bare process starts; a peer that is not installed is skipped.
            BENCH_SKIP=puppet,cfengine,per-process leaves some out,
            BENCH_OLD_BIN=DIR adds an older build's holo and holo-file,
            BENCH_ROUNDS=N sets the rounds, TMPDIR the file system
  all       every benchmark (not file-versus, not peers)

The holos compose model has its own: cargo bench -p holo-vms (200 services).

SIZES is a comma-separated list of entity counts (default: 1000,10000).
";

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(name) = args.first() else {
        eprint!("{USAGE}");
        return std::process::ExitCode::from(2);
    };
    let default_sizes: &[usize] = if name == "file-versus" {
        &[10000]
    } else {
        &[1000, 10000]
    };
    let sizes_arg = if name == "file-versus" { 2 } else { 1 };
    let sizes = match parse_sizes(args.get(sizes_arg), default_sizes) {
        Ok(sizes) => sizes,
        Err(message) => {
            eprintln!("bench: {message}");
            return std::process::ExitCode::from(2);
        }
    };
    let result = match name.as_str() {
        "driver" => driver::run(&sizes),
        "file" => file::run(&sizes),
        "inplace" => inplace::run(),
        "peers" => peers::run(&sizes),
        "file-dependent" => file_dependent::run(&sizes),
        "file-versus" => match args.get(1) {
            Some(old) => file_versus::run(std::path::Path::new(old), &sizes),
            None => {
                eprint!("{USAGE}");
                return std::process::ExitCode::from(2);
            }
        },
        "all" => driver::run(&sizes)
            .and_then(|()| file::run(&sizes))
            .and_then(|()| file_dependent::run(&sizes))
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

/// SIZES: entity counts separated by commas, or `default` when not given.
fn parse_sizes(list: Option<&String>, default: &[usize]) -> Result<Vec<usize>, String> {
    match list {
        Some(list) => list
            .split(',')
            .map(str::parse)
            .collect::<Result<_, _>>()
            .map_err(|_| format!("SIZES must be numbers separated by commas, got {list}")),
        None => Ok(default.to_vec()),
    }
}
