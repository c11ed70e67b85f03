//! Operation dispatch: turns `holo-ID OPERATION [ENTITY]` into calls of the
//! plugin's trait methods, and their results into stdout, stderr, FD 3 and
//! the exit code.

use std::io::Write;
use std::process::ExitCode;

use crate::batch;
use crate::common;
use crate::entity::{apply_entity, entity_from_cache, fail, scan_cache_and_report};
use crate::env::{API_VERSION, Env};
use crate::error::{Error, Result};
use crate::plugin::{EntityCtx, Extension, Mode, Plugin};
use crate::report;

/// Runs the plugin with this process's arguments and environment. A plugin's
/// `main` is just `holo_plugin::run(MyPlugin)`.
pub fn run<P: Plugin>(plugin: P) -> ExitCode {
    restore_default_sigpipe();
    keep_large_blocks_on_the_heap();
    let mut args = Vec::new();
    for arg in std::env::args_os().skip(1) {
        match arg.into_string() {
            Ok(arg) => args.push(arg),
            Err(raw) => {
                return fail(&Error::new(format!(
                    "argument {} is not valid UTF-8; entity ids and operations are UTF-8 text",
                    raw.to_string_lossy()
                )));
            }
        }
    }
    run_with_args(&plugin, &args)
}

fn declares<P: Plugin>(extension: Extension) -> bool {
    P::EXTENSIONS.contains(&extension)
}

fn info<P: Plugin>() -> String {
    let mut text = format!("MIN_API_VERSION={API_VERSION}\nMAX_API_VERSION={API_VERSION}\n");
    let mut names: Vec<&str> = P::EXTENSIONS.iter().map(|ext| ext.name()).collect();
    // The SDK's batch resolves references inside the batch itself.
    if declares::<P>(Extension::Batch) {
        names.push(holo_protocol::extension::BATCH_ORDER);
    }
    // Every SDK plugin holds the run's lock and keeps it from its commands
    // (see `process::keep_run_lock_from_commands`).
    names.push(holo_protocol::extension::RUN_LOCK);
    // The SDK runs the health checks (`common::guarded_apply`).
    names.push(holo_protocol::extension::MONITOR);
    text.push_str(&format!("EXTENSIONS={}\n", names.join(",")));
    text
}

fn usage<P: Plugin>(operation: &str) -> Error {
    Error::new(format!(
        "usage: holo-{} {operation} ENTITY (exactly one entity id)",
        P::ID
    ))
}

/// The operations only the driver calls: run by hand, without the
/// driver's environment, they would read a default resource directory
/// and silently find nothing.
fn is_protocol_word(operation: &str) -> bool {
    matches!(
        operation,
        "scan"
            | "diff"
            | "apply"
            | "force-apply"
            | "noop"
            | "apply-batch"
            | "force-apply-batch"
            | "noop-batch"
    )
}

/// Whether the plugin has the one-off `ensure` and `status`: those on
/// tables do (they declare property types); the others give their own or
/// none, so the usage offers them only where they exist.
fn has_one_offs<P: Plugin>(plugin: &P) -> bool {
    !plugin.property_types().is_empty()
}

/// `holo-ID ensure NAME --PROPERTY VALUE... or holo-ID status NAME`.
fn one_off_usage<P: Plugin>() -> String {
    format!(
        "holo-{0} ensure NAME --PROPERTY VALUE... or holo-{0} status NAME",
        P::ID
    )
}

fn run_by_hand<P: Plugin>(plugin: &P, operation: &str) -> Error {
    let mut text = format!(
        "holo-{id} is a holo plugin: run it through holo (holo scan, holo diff, holo apply), or set HOLO_RESOURCE_DIR (and HOLO_ROOT_DIR, HOLO_STATE_DIR, HOLO_CACHE_DIR) as holo-plugin-interface(7) says to call `{operation}` by hand",
        id = P::ID
    );
    if has_one_offs(plugin) {
        text += &format!("\nfor a one-off without holo: {}", one_off_usage::<P>());
    }
    Error::new(text)
}

fn no_operation<P: Plugin>(plugin: &P) -> Error {
    let mut text = format!(
        "usage: holo-{} info|scan|apply ENTITY|force-apply ENTITY|diff ENTITY; this program is run by holo(8)",
        P::ID
    );
    if has_one_offs(plugin) {
        text += &format!("; by hand: {}", one_off_usage::<P>());
    }
    Error::new(text)
}

fn run_with_args<P: Plugin>(plugin: &P, args: &[String]) -> ExitCode {
    let Some(operation) = args.first().map(String::as_str) else {
        return fail(&no_operation(plugin));
    };
    report::prepare_fd3();
    crate::process::keep_run_lock_from_commands();
    if operation == "info" {
        print!("{}", info::<P>());
        return flush_stdout();
    }
    if operation == "properties" {
        for (section, names) in plugin.properties() {
            for name in names {
                println!("{section} {name}");
            }
        }
        return flush_stdout();
    }
    // A root or a resource directory in the environment means someone set
    // it up on purpose, as holo-plugin-interface(7) shows for a run by hand.
    let set_up = ["HOLO_RESOURCE_DIR", "HOLO_ROOT_DIR"]
        .iter()
        .any(|key| std::env::var_os(key).is_some());
    if is_protocol_word(operation) && !set_up {
        return fail(&run_by_hand(plugin, operation));
    }
    let env = match Env::from_process(P::ID) {
        Ok(env) => env,
        Err(err) => return fail(&err),
    };
    let rest = &args[1..];
    let entity_mode = match operation {
        "apply" => Some(Mode::Apply),
        "force-apply" => Some(Mode::Force),
        "noop" if declares::<P>(Extension::Noop) => Some(Mode::Noop),
        _ => None,
    };
    let batch_mode = match operation {
        "apply-batch" => Some(Mode::Apply),
        "force-apply-batch" => Some(Mode::Force),
        "noop-batch" if declares::<P>(Extension::Noop) => Some(Mode::Noop),
        _ => None,
    }
    .filter(|_| declares::<P>(Extension::Batch));
    let is_protocol_operation =
        operation == "scan" || operation == "diff" || entity_mode.is_some() || batch_mode.is_some();
    if operation == "ensure" || operation == "status" {
        // A plugin whose resources are not tables gives its own.
        let result = match (plugin.subcommand(&env, operation, rest), operation) {
            (Some(result), _) => result,
            (None, "ensure") => crate::oneoff::ensure(plugin, &env, rest),
            (None, _) => crate::oneoff::status(plugin, &env, rest),
        };
        return result.unwrap_or_else(|err| fail(&err));
    }
    if !is_protocol_operation {
        return match plugin.subcommand(&env, operation, rest) {
            Some(Ok(code)) => code,
            Some(Err(err)) => fail(&err),
            None => fail(&Error::new(format!("unknown operation: {operation}"))),
        };
    }
    run_protocol_operation(plugin, &env, operation, rest, entity_mode, batch_mode)
}

/// `scan`, `diff`, `apply`, `force-apply`, `noop` and the batches.
fn run_protocol_operation<P: Plugin>(
    plugin: &P,
    env: &Env,
    operation: &str,
    rest: &[String],
    entity_mode: Option<Mode>,
    batch_mode: Option<Mode>,
) -> ExitCode {
    // A plugin never outlives its driver: when holo is killed outright, the
    // plugin goes too (and with it the commands it runs, see process.rs).
    // SAFETY: PR_SET_PDEATHSIG takes one integer argument.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
    }
    // The driver passes SIGTERM/SIGINT/SIGHUP on: an apply ends the command
    // it runs and starts no other. Scan and diff end at once (the driver
    // kills what they started).
    if (entity_mode.is_some() || batch_mode.is_some())
        && let Err(err) = crate::process::handle_interrupts()
    {
        return fail(&err);
    }
    if env.api_version != API_VERSION {
        return fail(&Error::new(format!(
            "holo-{} speaks plugin API version {API_VERSION}, but HOLO_API_VERSION={}; use a holo driver that speaks version {API_VERSION}",
            P::ID,
            env.api_version
        )));
    }
    if operation == "scan" {
        return match scan(plugin, env) {
            Ok(()) => flush_stdout(),
            Err(err) => fail(&err),
        };
    }
    if let Some(mode) = batch_mode {
        return batch::run(plugin, env, mode);
    }
    let [id] = rest else {
        return fail(&usage::<P>(operation));
    };
    let entity = entity_from_cache::<P>(plugin, env, id, env.refresh);
    if let Some(mode) = entity_mode {
        // A process per entity: each directory is swept once per run.
        crate::cache::share_sweeps(env);
        let result = apply_entity(plugin, env, entity, mode);
        if let Err(err) = result.fd3_lines().try_for_each(report::fd3_message) {
            return fail(&err);
        }
        let _ = std::io::stdout().flush();
        return ExitCode::from(result.exit);
    }
    diff_entity(plugin, env, entity)
}

/// `diff ENTITY`: the entity's diff on fd 3, as files with the
/// `diff-files` extension.
fn diff_entity<P: Plugin>(plugin: &P, env: &Env, entity: Result<EntityCtx<P::Spec>>) -> ExitCode {
    if env.has_extension(holo_protocol::extension::DIFF_FILES) {
        let diffs = |entity: EntityCtx<P::Spec>| match common::is_skipped(env, &entity.id)? {
            true => Ok(Vec::new()),
            false => plugin.diff_files(env, &entity),
        };
        return match entity.and_then(diffs) {
            Ok(diffs) if diffs.is_empty() => flush_stdout(),
            Ok(diffs) => match report::fd3_diff_files(&diffs, env) {
                Ok(()) => flush_stdout(),
                Err(err) => fail(&err),
            },
            Err(err) => fail(&err),
        };
    }
    let diff = |entity: EntityCtx<P::Spec>| match common::is_skipped(env, &entity.id)? {
        true => Ok(None),
        false => plugin.diff_with_header(env, &entity),
    };
    match entity.and_then(diff) {
        Ok(Some(diff)) => match report::fd3_diff(&diff.desired, &diff.current, &diff.header, env) {
            Ok(()) => flush_stdout(),
            Err(err) => fail(&err),
        },
        Ok(None) => flush_stdout(),
        Err(err) => fail(&err),
    }
}

fn flush_stdout() -> ExitCode {
    match std::io::stdout().flush() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let _ = writeln!(std::io::stderr(), "!! cannot write to stdout: {err}");
            ExitCode::from(1)
        }
    }
}

/// The scan operation: scan, cache, report.
fn scan<P: Plugin>(plugin: &P, env: &Env) -> Result<()> {
    let (entities, report) = scan_cache_and_report(plugin, env, Some(env.has_extension("order")))?;
    let written =
        report::write_report_text(&mut std::io::stdout().lock(), &report.unwrap_or_default());
    // The process ends with the scan: freeing every entity one by one
    // would cost as much as a tenth of the scan.
    std::mem::forget(entities);
    written
}

/// A plugin process is short and holds a whole scan or batch in memory.
/// glibc would map each large block on its own and unmap it when freed,
/// so that every growth of a buffer faults in fresh pages (a third of the
/// scan of 50,000 entities): large blocks come from the heap instead, and
/// freed memory stays for the next one until the process ends.
fn keep_large_blocks_on_the_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; it is called before
    // any thread is spawned.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
    }
}

/// Rust ignores SIGPIPE, so `println!` into a closed pipe (`holo-file scan |
/// head`) would panic. Like other command-line tools, a plugin ends quietly
/// there instead. The driver and the SDK's own batch pipes read to the end,
/// so this never cuts a normal run short.
fn restore_default_sigpipe() {
    // SAFETY: setting a signal disposition to its default at start-up, before
    // any thread is spawned.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Minimal;

    impl Plugin for Minimal {
        const ID: &'static str = "minimal";
        const EXTENSIONS: &'static [Extension] = &[Extension::Order];
        type Spec = ();
        fn scan(&self, _env: &Env) -> Result<Vec<crate::Scanned<()>>> {
            Ok(Vec::new())
        }
        fn apply(&self, _: &Env, _: &EntityCtx<()>, _: Mode) -> Result<crate::Outcome> {
            Ok(crate::Outcome::NotChanged)
        }
        fn subcommand(&self, _: &Env, name: &str, args: &[String]) -> Option<Result<ExitCode>> {
            match name {
                "exit-with" => Some(
                    args.first()
                        .and_then(|code| code.parse::<u8>().ok())
                        .map(ExitCode::from)
                        .ok_or_else(|| Error::new("usage: exit-with CODE")),
                ),
                _ => None,
            }
        }
    }

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|arg| arg.to_string()).collect()
    }

    #[test]
    fn subcommands_are_routed_and_unknown_operations_fail() {
        assert_eq!(
            run_with_args(&Minimal, &args(&["exit-with", "7"])),
            ExitCode::from(7)
        );
        assert_eq!(
            run_with_args(&Minimal, &args(&["exit-with"])),
            ExitCode::from(1)
        );
        assert_eq!(run_with_args(&Minimal, &args(&["nope"])), ExitCode::from(1));
        // Minimal does not declare noop or batch, so those are unknown too.
        assert_eq!(
            run_with_args(&Minimal, &args(&["noop", "x:y"])),
            ExitCode::from(1)
        );
        assert_eq!(
            run_with_args(&Minimal, &args(&["apply-batch"])),
            ExitCode::from(1)
        );
    }

    #[test]
    fn info_lists_versions_and_declared_extensions() {
        assert_eq!(
            info::<Minimal>(),
            "MIN_API_VERSION=3\nMAX_API_VERSION=3\nEXTENSIONS=order,run-lock,monitor\n"
        );
    }
}
