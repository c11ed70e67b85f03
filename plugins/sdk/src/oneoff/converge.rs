//! `ensure` from flags and a plugin's own resource tree: under holo's run
//! lock, in a private run directory, every entity applied in the order and
//! with the skips of `holo apply`, and stopped by a signal as it is.

use super::child::{Ran, run_child};
use super::ensured::{EnsureResult, Ensured, keep_ensured, state_dir_for};
use super::flags::Flags;
use super::lock;
use super::report::{Printer, report};
use super::request::EnsureRequest;
use super::run_dir::RunDir;
use super::session::{OpenSession, locate};
use crate::entity::scan_and_cache;
use crate::env::Env;
use crate::error::{Error, Result};
use crate::plugin::{Plugin, Scanned};
use crate::process::{interrupted_by, signal_name};
use holo_protocol::order::{Earlier, Gate};
use holo_protocol::session::Record;
use std::cell::RefCell;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Instant, SystemTime};

/// The exit code of a run that could not start (the lock is held), as
/// `holo apply` gives it.
const EXIT_FATAL: u8 = 255;

/// `holo-ID ensure NAME --PROPERTY VALUE ...`.
pub(crate) fn ensure<P: Plugin>(plugin: &P, env: &Env, args: &[String]) -> Result<ExitCode> {
    let command = format!("holo-{} ensure", P::ID);
    let Some(flags) = Flags::of(plugin) else {
        return Err(Error::new(format!(
            "{command}: holo-{} has no one-off ensure; declare the resource in a resource file and run holo apply",
            P::ID
        )));
    };
    let (request, session_flag) = flags.parse_with_session(&command, args)?;
    let session = locate(session_flag.as_deref());
    if session.is_none() {
        refuse_references(&command, &request)?;
    }
    converge(plugin, env, &command, &request, session)
}

/// Outside a session, `--require` and `--subscribe` have nothing to refer
/// to: a one-off knows no other entity's result.
fn refuse_references(command: &str, request: &EnsureRequest) -> Result<()> {
    let given = request
        .flags_given
        .iter()
        .find(|(property, _)| property == "require" || property == "subscribe");
    let Some((property, flag)) = given else {
        return Ok(());
    };
    let what = if property == "require" {
        "skip this one when what it names failed"
    } else {
        "refresh this one when what it names changed"
    };
    Err(Error::new(format!(
        "{command}: {flag} needs a session: outside one, a one-off knows no earlier result to {what}; start one with eval \"$(holo session new)\" (or set HOLO_SESSION to a directory of yours) and run the one-offs in it, or declare them in resource files for holo apply"
    )))
}

/// Converges what `request` declares as `holo apply` would, printing what
/// it prints and giving its exit code: every entity of the resources, in
/// `REQUIRES` order, each skipped when one it requires failed. For a
/// plugin's own `ensure` (see [`Plugin::subcommand`]); `command` names the
/// one-off in messages.
pub fn run_ensure<P: Plugin>(
    plugin: &P,
    env: &Env,
    command: &str,
    request: &EnsureRequest,
) -> Result<ExitCode> {
    converge(plugin, env, command, request, locate(None))
}

fn converge<P: Plugin>(
    plugin: &P,
    env: &Env,
    command: &str,
    request: &EnsureRequest,
    session: Option<(PathBuf, String)>,
) -> Result<ExitCode> {
    // From here on a signal ends the run as it ends holo apply.
    crate::process::handle_interrupts()?;
    let mut printer = Printer::default();
    let Some(_lock) = lock::acquire(env, &mut printer) else {
        return Ok(ExitCode::from(EXIT_FATAL));
    };
    // Dropped before the lock: removed while no other run can start.
    let run_dir = RunDir::create(env, request)?;
    // Locked after the run lock, as long as the run.
    let session = session
        .map(|(dir, source)| OpenSession::open(env, command, &dir, &source))
        .transpose()?;
    let run = Run {
        plugin,
        env,
        command,
        request,
        run_dir: &run_dir,
        session: RefCell::new(session),
    };
    let (entities, state_dir) = run.scan()?;
    let order = run.order(&entities)?;
    let mut results: Vec<Option<EnsureResult>> = vec![None; entities.len()];
    for index in order {
        if interrupted_by().is_some() {
            break;
        }
        let result = run.apply_one(&mut printer, &entities, &results, index, &state_dir)?;
        results[index] = Some(result);
    }
    if let Some(signal) = interrupted_by() {
        printer.write(
            true,
            format!("!! interrupted by {}\n", signal_name(signal)).as_bytes(),
        );
        return Ok(ExitCode::from(
            u8::try_from(128 + signal).unwrap_or(u8::MAX),
        ));
    }
    Ok(exit_code(&results, request.noop))
}

/// `holo apply`'s exit code for these results.
fn exit_code(results: &[Option<EnsureResult>], noop: bool) -> ExitCode {
    let failed = results.iter().any(|result| {
        matches!(
            result,
            Some(EnsureResult::Failed | EnsureResult::NeedsForce)
        )
    });
    let changed = results.contains(&Some(EnsureResult::Changed));
    if failed {
        ExitCode::from(1)
    } else if noop && changed {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

/// The name of a result in the session, as the run report names it.
fn result_name(result: EnsureResult, skipped: bool) -> &'static str {
    match result {
        _ if skipped => "skipped",
        EnsureResult::Changed => "changed",
        EnsureResult::NotChanged => "unchanged",
        EnsureResult::Failed => "failed",
        EnsureResult::NeedsForce => "needs_force",
    }
}

/// One one-off run.
struct Run<'a, P: Plugin> {
    plugin: &'a P,
    env: &'a Env,
    command: &'a str,
    request: &'a EnsureRequest,
    run_dir: &'a RunDir,
    /// The session the one-off runs in, if any.
    session: RefCell<Option<OpenSession>>,
}

impl<P: Plugin> Run<'_, P> {
    fn rewrite(&self, text: String) -> String {
        self.run_dir
            .messages
            .rewrite(&Error::new(text), self.command)
            .message()
            .to_string()
    }

    /// The entities of the resources, by id, with the records of the
    /// state directory they belong to.
    fn scan(&self) -> Result<(Vec<Scanned<P::Spec>>, PathBuf)> {
        let found = self.scan_with(&self.run_dir.no_state)?;
        let ids: Vec<&str> = found.iter().map(|entity| entity.id.as_str()).collect();
        let state_dir = state_dir_for(self.env, &ids);
        Ok((self.scan_with(&state_dir)?, state_dir))
    }

    fn scan_with(&self, state_dir: &Path) -> Result<Vec<Scanned<P::Spec>>> {
        let run_env = self.run_dir.env(P::ID, state_dir)?;
        let mut entities: Vec<Scanned<P::Spec>> = scan_and_cache(self.plugin, &run_env)
            .map_err(|err| self.run_dir.messages.rewrite(&err, self.command))?
            .into_iter()
            .filter(|entity| !entity.sources.is_empty())
            .collect();
        if entities.is_empty() {
            return Err(Error::new(format!(
                "{}: the resources declare no entity",
                self.command
            )));
        }
        entities.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(entities)
    }

    /// The order of `holo apply` (holo-protocol's), by id, then each
    /// entity after those it requires or subscribes to.
    fn order(&self, entities: &[Scanned<P::Spec>]) -> Result<Vec<usize>> {
        let ids: Vec<&str> = entities.iter().map(|entity| entity.id.as_str()).collect();
        let deps: Vec<Vec<&str>> = entities
            .iter()
            .map(|entity| {
                entity
                    .requires
                    .iter()
                    .chain(&entity.subscribes)
                    .map(String::as_str)
                    .collect()
            })
            .collect();
        holo_protocol::order::sort(&ids, &deps)
            .map_err(|cycle| Error::new(holo_protocol::order::cycle_message(&cycle)))
    }

    /// Applies entity `index` (or skips it when one it requires failed),
    /// prints it, and keeps what `status` reads.
    fn apply_one(
        &self,
        printer: &mut Printer,
        entities: &[Scanned<P::Spec>],
        results: &[Option<EnsureResult>],
        index: usize,
        state_dir: &Path,
    ) -> Result<EnsureResult> {
        let entity = &entities[index];
        let gate = self.gate(entity, entities, results);
        let operation = match (self.request.noop, self.request.force) {
            (true, _) => "noop",
            (false, true) => "force-apply",
            (false, false) => "apply",
        };
        let started = (SystemTime::now(), Instant::now());
        let ran = match gate {
            Gate::Skip { failed } => Ran::skipped(failed),
            Gate::Run { refresh } => {
                let mut variables = self.run_dir.variables(state_dir);
                if refresh {
                    variables.push(("HOLO_REFRESH", OsString::from("1")));
                }
                run_child(&variables, operation, &entity.id)?
            }
        };
        let rewrite = |text: String| self.rewrite(text);
        let result = report(printer, entity, &ran, &rewrite);
        self.record(&entity.id, result, ran.skipped, started)?;
        let table = self
            .request
            .flags_table()
            .and_then(|table| self.plugin.ensured_table(table));
        if let (Some(table), false, false) = (table, self.request.noop, ran.skipped) {
            let message = (result == EnsureResult::Failed).then(|| ran.first_error(&rewrite));
            let ensured = Ensured {
                table,
                at: 0,
                result,
                message: message.flatten(),
            };
            keep_ensured(self.env, &entity.id, &ensured)?;
        }
        Ok(result)
    }

    /// holo-protocol's rule for `entity`: by the results of this run, else
    /// of the session's earlier one-offs.
    fn gate<'e>(
        &self,
        entity: &'e Scanned<P::Spec>,
        entities: &[Scanned<P::Spec>],
        results: &[Option<EnsureResult>],
    ) -> Gate<'e> {
        let session = self.session.borrow();
        holo_protocol::order::gate(&entity.requires, &entity.subscribes, |id| {
            match entities.iter().position(|other| other.id == id) {
                Some(other) => results[other].map(|result| match result {
                    EnsureResult::Changed => Earlier::Changed,
                    EnsureResult::Failed => Earlier::Failed,
                    EnsureResult::NotChanged | EnsureResult::NeedsForce => Earlier::Unchanged,
                }),
                None => session.as_ref()?.earlier(id),
            }
        })
    }

    /// Keeps how the entity went in the session (not for `--noop`, which
    /// changed nothing that a later one-off could refresh from).
    fn record(
        &self,
        id: &str,
        result: EnsureResult,
        skipped: bool,
        (start, clock): (SystemTime, Instant),
    ) -> Result<()> {
        let mut session = self.session.borrow_mut();
        let Some(session) = session.as_mut().filter(|_| !self.request.noop) else {
            return Ok(());
        };
        let millis =
            |duration: std::time::Duration| u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        let record = Record {
            id: id.to_string(),
            plugin: P::ID.to_string(),
            result: result_name(result, skipped).to_string(),
            start_ms: millis(
                start
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .unwrap_or_default(),
            ),
            duration_ms: millis(clock.elapsed()),
        };
        session.record(record)
    }
}
