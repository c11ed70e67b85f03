//! One entity's way through the SDK: the scan cache it is read from, the
//! guarded apply and how its error is printed. The per-process operations
//! and the batch both go through here, so both give the same bytes.

use std::io::Write;
use std::process::ExitCode;

use crate::cache;
use crate::common;
use crate::env::Env;
use crate::error::{Error, Result};
use crate::plugin::{EntityCtx, Mode, Plugin};
use crate::report;

/// Prints every line of `err` as `!! line` on stderr and returns exit code 1.
pub fn fail(err: &Error) -> ExitCode {
    print_error(err);
    ExitCode::from(1)
}

pub(crate) fn print_error(err: &Error) {
    let mut text = String::new();
    for line in err.message().lines() {
        text.push_str("!! ");
        text.push_str(line);
        text.push('\n');
    }
    // Flush stdout first so that the order of the two streams is kept.
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// Makes sure the scan cache exists; a plugin run by hand scans first.
pub(crate) fn ensure_cache<P: Plugin>(plugin: &P, env: &Env) -> Result<()> {
    if cache::exists(env) {
        return Ok(());
    }
    scan_and_cache(plugin, env).map(drop)
}

/// Scans, adds what the common properties show, and caches the result.
pub(crate) fn scan_and_cache<P: Plugin>(plugin: &P, env: &Env) -> Result<Scans<P::Spec>> {
    scan_cache_and_report(plugin, env, None).map(|(entities, _)| entities)
}

/// What a plugin's scan found.
type Scans<S> = Vec<crate::Scanned<S>>;

/// [`scan_and_cache`], and with `report_order` (whether the report has
/// `REQUIRES:` lines) the scan report's text too, built on a thread of its
/// own while the cache is written: the two take a fifth of a large scan
/// and read the same entities.
pub(crate) fn scan_cache_and_report<P: Plugin>(
    plugin: &P,
    env: &Env,
    report_order: Option<bool>,
) -> Result<(Scans<P::Spec>, Option<String>)> {
    let mut entities = plugin.scan(env)?;
    // Adds `alias:` and `skipped:` lines, which the cache does not hold.
    common::store(env, &mut entities)?;
    let Some(with_order) = report_order else {
        cache::store(env, &entities)?;
        return Ok((entities, None));
    };
    let entities_ref = &entities;
    let (stored, report) = std::thread::scope(|scope| {
        let builder = std::thread::Builder::new()
            .name("holo-report".to_string())
            .spawn_scoped(scope, move || report::scan_report(entities_ref, with_order));
        let stored = cache::store(env, entities_ref);
        let report = match builder {
            Ok(builder) => builder
                .join()
                .unwrap_or_else(|_| Err(Error::new("building the scan report failed"))),
            Err(_) => report::scan_report(entities_ref, with_order),
        };
        (stored, report)
    });
    stored?;
    Ok((entities, Some(report?)))
}

pub(crate) fn entity_from_cache<P: Plugin>(
    plugin: &P,
    env: &Env,
    id: &str,
    refresh: bool,
) -> Result<EntityCtx<P::Spec>> {
    ensure_cache(plugin, env)?;
    cache::lookup(env, id, refresh)
}

/// What one entity's apply gave: the exit code, the FD 3 message and the
/// FD 3 lines of its health checks.
pub(crate) struct EntityResult {
    pub(crate) exit: u8,
    pub(crate) fd3: Option<&'static str>,
    pub(crate) checks: Vec<String>,
}

impl EntityResult {
    /// An entity that ended without a result of its own.
    pub(crate) fn empty(exit: u8) -> EntityResult {
        EntityResult {
            exit,
            fd3: None,
            checks: Vec::new(),
        }
    }

    /// Every FD 3 line: the message, then the checks.
    pub(crate) fn fd3_lines(&self) -> impl Iterator<Item = &str> {
        self.fd3
            .into_iter()
            .chain(self.checks.iter().map(String::as_str))
    }
}

/// Applies one entity, printing an error as `!! msg`. Shared by the
/// per-process operations and the batch, so both give the same bytes.
pub(crate) fn apply_entity<P: Plugin>(
    plugin: &P,
    env: &Env,
    entity: Result<EntityCtx<P::Spec>>,
    mode: Mode,
) -> EntityResult {
    let entity = match entity {
        Ok(entity) => entity,
        Err(err) => {
            print_error(&err);
            return EntityResult::empty(1);
        }
    };
    let (outcome, checks) =
        common::guarded_apply(env, &entity.id, mode, || plugin.apply(env, &entity, mode));
    let checks = common::check_lines(env, &checks);
    match outcome {
        Ok(outcome) => EntityResult {
            exit: 0,
            fd3: outcome.fd3_message(),
            checks,
        },
        Err(err) => {
            print_error(&err);
            EntityResult {
                exit: 1,
                fd3: None,
                checks,
            }
        }
    }
}
