//! Benchmarks that anyone can run: `cargo run --release -p bench -- NAME`.
//! They measure; they assert nothing. Each builds the release binaries first
//! and runs them as a user would, against a fresh temporary root.

mod driver;
mod file;
mod file_dependent;
mod file_versus;
mod files;
mod holos_labels;
mod inplace;
mod long_line;
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
  files     holo-files (Holo 3's plugin): a no-op apply over N repository
            files with our driver and plugin, Holo 3's driver and our
            plugin, and Holo 3's pair (built from HOLO3_SOURCE with Go;
            left out without; one round, up to BENCH_HOLO3_MAX files,
            default 2000); default SIZES 1000,1600,10000
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
            the no-op floors (sha256sum + stat through xargs, and the tight
            floor: one process of each) with holo's ratios to both, of the
            medians and paired by round, holo's peak memory in the no-op,
            and per-process mode against
            bare process starts and against holo-null, a plugin that does
            nothing per entity (each driver's own floor); a peer that is
            not installed is skipped.
            BENCH_SKIP=puppet,cfengine,per-process leaves some out,
            BENCH_OLD_BIN=DIR adds an older build's holo and holo-file,
            BENCH_ROUNDS=N sets the rounds, TMPDIR the file system
  long-line [OLD_DIR] [SIZES]
            one line of N MB without a newline through holo-exec's
            logoutput, a plugin's stderr and one FD 3 batch record; with
            OLD_DIR (an older build's holo and holo-exec) both builds;
            SIZES in MB (default: 10,50,100)
  holos-labels
            holos validate of one service with N labels, in one file and
            with an override file of N more (default: 10000,80000,200000)
  all       driver, file, file-dependent and inplace

The holos compose model has its own: cargo bench -p holo-vms (200 services).

SIZES is a comma-separated list of entity counts (default: 1000,10000).
";

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(name) = args.first() else {
        eprint!("{USAGE}");
        return std::process::ExitCode::from(2);
    };
    // long-line takes an optional OLD_DIR before its sizes.
    let long_line_old = (name == "long-line")
        .then(|| args.get(1).filter(|arg| std::path::Path::new(arg).is_dir()))
        .flatten();
    let default_sizes: &[usize] = match name.as_str() {
        "file-versus" => &[10000],
        "long-line" => &[10, 50, 100],
        "holos-labels" => &[10000, 80000, 200000],
        "files" => &[1000, 1600, 10000],
        _ => &[1000, 10000],
    };
    let sizes_arg = if name == "file-versus" || long_line_old.is_some() {
        2
    } else {
        1
    };
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
        "files" => files::run(&sizes),
        "inplace" => inplace::run(),
        "long-line" => long_line::run(long_line_old.map(std::path::Path::new), &sizes),
        "peers" => peers::run(&sizes),
        "file-dependent" => file_dependent::run(&sizes),
        "holos-labels" => holos_labels::run(&sizes),
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
