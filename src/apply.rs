//! `holo apply [--force|--noop]`: the lock, skipping and refresh of the order
//! extension, per-entity calls and batches, and rendering each entity's
//! output exactly as Holo 3 does.

use crate::output::{Output, Stream};
use crate::plugin::{Chunk, Plugin, StderrLines};
use crate::run_dir::RunDir;
use crate::scan::Entity;
use holo_protocol::order::{Earlier, Gate};
use holo_protocol::{BatchLine, BatchRecord, extension, fd3};
use std::collections::HashMap;

use holo_protocol::fast_hash::FastMap;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    Apply,
    Force,
    Noop,
    /// `--monitor-only`: `noop` with `HOLO_MONITOR_ONLY=1`, so a plugin
    /// that declares `monitor` runs only the health checks.
    Monitor,
}

impl Mode {
    /// The mode as the run report names it.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Apply => "apply",
            Mode::Force => "force",
            Mode::Noop => "noop",
            Mode::Monitor => "monitor",
        }
    }

    /// The extension a plugin needs for this mode, if any.
    fn extension(self) -> Option<&'static str> {
        match self {
            Mode::Noop => Some(extension::NOOP),
            Mode::Monitor => Some(extension::MONITOR),
            Mode::Apply | Mode::Force => None,
        }
    }

    /// The option of this mode, for the message about a plugin without
    /// its extension.
    fn option(self) -> &'static str {
        match self {
            Mode::Monitor => "--monitor-only",
            _ => "--noop",
        }
    }

    /// What the plugin's environment gets in this mode.
    fn env(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Mode::Monitor => &[("HOLO_MONITOR_ONLY", "1")],
            _ => &[],
        }
    }

    fn operation(self) -> &'static str {
        match self {
            Mode::Apply => "apply",
            Mode::Force => "force-apply",
            Mode::Noop | Mode::Monitor => "noop",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Outcome {
    Unchanged,
    Changed,
    Failed,
    NeedsForce,
    /// Skipped because a requirement failed; counts as a failure downstream.
    Skipped,
    /// The plugin cannot do `--noop` (or `--monitor-only`).
    NotSupported,
    /// A signal cut its plugin short.
    Interrupted,
    /// The run was interrupted before it got to the entity.
    NotStarted,
}

/// Everything an apply run needs to see.
pub struct Context<'a> {
    pub plugins: &'a [Plugin],
    pub run_dir: &'a RunDir,
    pub entities: &'a [Entity],
}

/// The outcome of every entity, in apply order, with the time it took and
/// the health checks it ran.
pub struct Applied {
    pub outcomes: Vec<Outcome>,
    pub durations: Vec<Duration>,
    pub checks: Vec<Vec<CheckResult>>,
}

/// One health check's result, as the plugin reported it on FD 3.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckResult {
    pub name: String,
    /// `OK`, `WARNING`, `CRITICAL` or `UNKNOWN`.
    pub state: String,
}

/// The health check results among an entity's FD 3 lines.
fn check_results(fd3: &str) -> Vec<CheckResult> {
    fd3.lines()
        .filter_map(fd3::parse_health_check_line)
        .map(|(state, name)| CheckResult {
            name: name.to_string(),
            state: state.to_string(),
        })
        .collect()
}

/// Applies every entity of the context, in order. The caller holds the lock.
pub fn run(ctx: &Context, out: &mut Output, mode: Mode) -> Applied {
    apply_all(ctx, out, mode)
}

/// 0 when all is well; 1 on failures, skips and needed `--force`; with
/// `--noop`, 2 when something would change.
pub fn exit_code(mode: Mode, outcomes: &[Outcome]) -> i32 {
    let bad = outcomes.iter().any(|o| {
        matches!(
            o,
            Outcome::Failed | Outcome::Skipped | Outcome::NeedsForce | Outcome::Interrupted
        )
    });
    if bad {
        1
    } else if mode == Mode::Noop && outcomes.contains(&Outcome::Changed) {
        2
    } else {
        0
    }
}

fn apply_all(ctx: &Context, out: &mut Output, mode: Mode) -> Applied {
    let entities = ctx.entities;
    let position: FastMap<&str, usize> = entities
        .iter()
        .enumerate()
        .map(|(i, e)| (e.id.as_str(), i))
        .collect();
    let deps: Vec<Vec<usize>> = entities
        .iter()
        .map(|e| {
            e.requires
                .iter()
                .chain(&e.subscribes)
                .filter_map(|id| position.get(id.as_str()).copied())
                .collect()
        })
        .collect();
    let batching = std::env::var_os("HOLO_NO_BATCH").is_none_or(|v| v.is_empty() || v == "0");
    let mut outcomes: Vec<Option<Outcome>> = vec![None; entities.len()];
    let mut durations: Vec<Duration> = vec![Duration::ZERO; entities.len()];
    let mut checks: Vec<Vec<CheckResult>> = vec![Vec::new(); entities.len()];
    let mut results = Results {
        outcomes: &mut outcomes,
        durations: &mut durations,
        checks: &mut checks,
    };
    let mut start = 0;
    // An interrupted run starts no further entity.
    while start < entities.len() && crate::interrupt::signal().is_none() {
        let plugin = &ctx.plugins[entities[start].plugin];
        let can_batch = batching && plugin.has_extension(extension::BATCH);
        // A plugin with batch-order gets references into the batch on its
        // stdin lines; without it, the run is cut at them.
        let ordered_batch = can_batch && plugin.has_extension(extension::BATCH_ORDER);
        let mut end = start + 1;
        if can_batch {
            while end < entities.len()
                && entities[end].plugin == entities[start].plugin
                && (ordered_batch || !deps[end].iter().any(|d| (start..end).contains(d)))
            {
                end += 1;
            }
        }
        // Entities that are skipped end the pending run, so that the output
        // keeps the apply order whether or not batching is on.
        let mut pending = PendingRun::default();
        for index in start..end {
            let entity = &entities[index];
            // Health checks do not depend on each other.
            let failed = |outcomes: &[Option<Outcome>]| {
                if mode == Mode::Monitor {
                    return None;
                }
                match gate(entity, &position, outcomes) {
                    Gate::Skip { failed } => position.get(failed).copied(),
                    Gate::Run { .. } => None,
                }
            };
            let skip_noop = mode
                .extension()
                .is_some_and(|needed| !plugin.has_extension(needed));
            if failed(results.outcomes).is_none() && !skip_noop {
                pending.push(index, entity, &position, results.outcomes);
                continue;
            }
            // Every requirement is known once the pending ones have run, so
            // the skip names the same entity as in per-entity calls.
            run_pending(ctx, out, plugin, mode, &mut pending, &mut results);
            let outcomes = &mut results.outcomes;
            if let Some(failed) = failed(outcomes) {
                let mut view = EntityView::new(entity);
                view.prologue(out);
                out.error(
                    Stream::Err,
                    &holo_protocol::skipped_message(&entities[failed].id),
                );
                outcomes[index] = Some(Outcome::Skipped);
            } else {
                out.warn(
                    Stream::Err,
                    &format!(
                        "Skipping {}: plugin {} does not support {}",
                        entity.id,
                        plugin.id,
                        mode.option()
                    ),
                );
                outcomes[index] = Some(Outcome::NotSupported);
            }
            out.end_paragraph(Stream::Out);
            out.flush();
        }
        run_pending(ctx, out, plugin, mode, &mut pending, &mut results);
        start = end;
    }
    Applied {
        outcomes: outcomes
            .into_iter()
            .map(|o| match o {
                Some(outcome) => outcome,
                None if crate::interrupt::signal().is_some() => Outcome::NotStarted,
                None => Outcome::Failed,
            })
            .collect(),
        durations,
        checks,
    }
}

/// holo-protocol's rule for `entity`, from the outcomes so far.
fn gate<'e>(
    entity: &'e Entity,
    position: &FastMap<&str, usize>,
    outcomes: &[Option<Outcome>],
) -> Gate<'e> {
    holo_protocol::order::gate(&entity.requires, &entity.subscribes, |id| {
        match outcomes[*position.get(id)?]? {
            Outcome::Changed => Some(Earlier::Changed),
            Outcome::Failed | Outcome::Skipped => Some(Earlier::Failed),
            _ => Some(Earlier::Unchanged),
        }
    })
}

/// The outcome and the time taken of each entity so far, by index.
struct Results<'a> {
    outcomes: &'a mut [Option<Outcome>],
    durations: &'a mut [Duration],
    checks: &'a mut [Vec<CheckResult>],
}

/// The entities of a run that wait to be applied together. References to
/// entities that already ran are resolved here; those to pending entities
/// become line numbers of the batch, for the plugin to resolve.
#[derive(Default)]
struct PendingRun {
    entries: Vec<Pending>,
    /// Entity index to its 1-based line in the batch.
    line_of: FastMap<usize, usize>,
}

struct Pending {
    index: usize,
    /// A subscribed entity that already ran changed.
    refresh: bool,
    requires: Vec<usize>,
    subscribes: Vec<usize>,
}

impl PendingRun {
    fn push(
        &mut self,
        index: usize,
        entity: &Entity,
        position: &FastMap<&str, usize>,
        outcomes: &[Option<Outcome>],
    ) {
        let pending_lines = |ids: &[String]| -> Vec<usize> {
            ids.iter()
                .filter_map(|id| position.get(id.as_str()))
                .filter_map(|p| self.line_of.get(p).copied())
                .collect()
        };
        let entry = Pending {
            index,
            refresh: gate(entity, position, outcomes) == Gate::Run { refresh: true },
            requires: pending_lines(&entity.requires),
            subscribes: pending_lines(&entity.subscribes),
        };
        self.entries.push(entry);
        self.line_of.insert(index, self.entries.len());
    }
}

/// Applies the pending entities: one batch call for two or more, else a
/// call of their own.
fn run_pending(
    ctx: &Context,
    out: &mut Output,
    plugin: &Plugin,
    mode: Mode,
    pending: &mut PendingRun,
    results: &mut Results,
) {
    let Results {
        outcomes,
        durations,
        checks,
    } = results;
    if crate::interrupt::signal().is_some() {
        *pending = PendingRun::default();
        return;
    }
    match pending.entries.as_slice() {
        [] => {}
        [single] => {
            let entity = &ctx.entities[single.index];
            let started = Instant::now();
            let (outcome, entity_checks) =
                run_single(ctx, out, plugin, mode, entity, single.refresh);
            outcomes[single.index] = Some(outcome);
            checks[single.index] = entity_checks;
            durations[single.index] = started.elapsed();
        }
        many => {
            let results = run_batch(ctx, out, plugin, mode, many);
            for (entry, (outcome, duration, entity_checks)) in many.iter().zip(results) {
                outcomes[entry.index] = Some(outcome);
                durations[entry.index] = duration;
                checks[entry.index] = entity_checks;
            }
        }
    }
    *pending = PendingRun::default();
}

/// Renders one entity: the report as a prologue before its first output,
/// plugin stderr colourised line by line, and the FD 3 verdict.
struct EntityView<'e> {
    entity: &'e Entity,
    prologue_done: bool,
    stderr: StderrLines,
}

impl<'e> EntityView<'e> {
    fn new(entity: &'e Entity) -> Self {
        EntityView {
            entity,
            prologue_done: false,
            stderr: StderrLines::default(),
        }
    }

    fn prologue(&mut self, out: &mut Output) {
        if !self.prologue_done {
            self.prologue_done = true;
            crate::entity_report::print_report(out, self.entity, true);
        }
    }

    fn stdout(&mut self, out: &mut Output, bytes: &[u8]) {
        if !bytes.is_empty() {
            self.prologue(out);
            out.write(Stream::Out, bytes);
        }
    }

    fn stderr(&mut self, out: &mut Output, bytes: &[u8]) {
        let mut stderr = std::mem::take(&mut self.stderr);
        stderr.push(bytes, &mut |line| self.stderr_line(out, line));
        self.stderr = stderr;
    }

    fn finish_stderr(&mut self, out: &mut Output) {
        let mut stderr = std::mem::take(&mut self.stderr);
        stderr.finish(&mut |line| self.stderr_line(out, line));
    }

    fn stderr_line(&mut self, out: &mut Output, line: &[u8]) {
        let line = out.colorize_plugin_line(line);
        self.prologue(out);
        out.write(Stream::Err, &line);
    }

    /// An entity whose plugin a signal cut short: its output so far, and
    /// no verdict (holo says once that the run was interrupted).
    fn finish_interrupted(&mut self, out: &mut Output) -> Outcome {
        self.finish_stderr(out);
        self.prologue(out);
        out.end_paragraph(Stream::Out);
        out.flush();
        Outcome::Interrupted
    }

    /// An entity that a batch skipped because a requirement failed.
    fn finish_skipped(&mut self, out: &mut Output) -> Outcome {
        self.finish_stderr(out);
        self.prologue(out);
        out.end_paragraph(Stream::Out);
        out.flush();
        Outcome::Skipped
    }

    /// What Holo 3 does after the plugin exited.
    fn finish(
        &mut self,
        ctx: &Context,
        out: &mut Output,
        failure: Option<String>,
        fd3: &str,
    ) -> Outcome {
        self.finish_stderr(out);
        if let Some(failure) = failure {
            self.prologue(out);
            out.error(Stream::Err, &failure);
            out.end_paragraph(Stream::Out);
            out.flush();
            return Outcome::Failed;
        }
        let mut outcome = Outcome::Changed;
        let mut show_diff = false;
        for line in fd3.split('\n') {
            match line {
                fd3::NOT_CHANGED if outcome == Outcome::Changed => outcome = Outcome::Unchanged,
                fd3::REQUIRES_FORCE_OVERWRITE => {
                    self.prologue(out);
                    out.error(
                        Stream::Err,
                        "Entity has been modified by user (use --force to overwrite)",
                    );
                    outcome = Outcome::NeedsForce;
                    show_diff = true;
                }
                fd3::REQUIRES_FORCE_RESTORE => {
                    self.prologue(out);
                    out.error(
                        Stream::Err,
                        "Entity has been deleted by user (use --force to restore)",
                    );
                    outcome = Outcome::NeedsForce;
                }
                _ => {}
            }
        }
        if outcome != Outcome::Unchanged {
            self.prologue(out);
        }
        if show_diff {
            let plugin = &ctx.plugins[self.entity.plugin];
            match render_entity_diff(ctx.run_dir, plugin, self.entity, out) {
                Ok(diff) => {
                    let diff = indent(&diff);
                    self.prologue(out);
                    out.end_paragraph(Stream::Out);
                    out.write(Stream::Out, &diff);
                }
                Err(message) => {
                    self.prologue(out);
                    out.error(Stream::Err, &message);
                }
            }
        }
        out.end_paragraph(Stream::Out);
        out.flush();
        outcome
    }
}

/// Holo 3 indents the diff under a `--force` error by four spaces.
fn indent(diff: &[u8]) -> Vec<u8> {
    let mut result = Vec::with_capacity(diff.len() + 64);
    let mut at_line_start = true;
    for &byte in diff {
        if at_line_start {
            result.extend_from_slice(b"    ");
        }
        result.push(byte);
        at_line_start = byte == b'\n';
    }
    result
}

fn run_single(
    ctx: &Context,
    out: &mut Output,
    plugin: &Plugin,
    mode: Mode,
    entity: &Entity,
    refresh: bool,
) -> (Outcome, Vec<CheckResult>) {
    let mut view = EntityView::new(entity);
    let mut fd3 = Vec::new();
    let mut env = mode.env().to_vec();
    if refresh {
        env.push(("HOLO_REFRESH", "1"));
    }
    let result =
        plugin.run_streaming(
            &[mode.operation(), &entity.id],
            &env,
            None,
            true,
            |event| match event {
                Some(Chunk::Stdout(b)) => view.stdout(out, b),
                Some(Chunk::Stderr(b)) => view.stderr(out, b),
                Some(Chunk::Fd3(b)) => keep_bounded(&mut fd3, b),
                None => out.flush(),
            },
        );
    let failure = plugin.failure(&result);
    if failure.is_some() && crate::interrupt::signal().is_some() {
        return (view.finish_interrupted(out), Vec::new());
    }
    let fd3 = String::from_utf8_lossy(&fd3);
    (view.finish(ctx, out, failure, &fd3), check_results(&fd3))
}

/// The batch's stdin line for one entity.
fn batch_line<'a>(ctx: &'a Context, entry: &Pending) -> BatchLine<'a> {
    BatchLine {
        id: ctx.entities[entry.index].id.as_str().into(),
        refresh: entry.refresh,
        requires: entry.requires.clone(),
        subscribes: entry.subscribes.clone(),
    }
}

fn run_batch(
    ctx: &Context,
    out: &mut Output,
    plugin: &Plugin,
    mode: Mode,
    runnable: &[Pending],
) -> Vec<(Outcome, Duration, Vec<CheckResult>)> {
    let mut stdin = Vec::new();
    for entry in runnable {
        batch_line(ctx, entry).write(&mut stdin);
    }
    let mut batch = BatchRun {
        ctx,
        plugin,
        runnable,
        slot: runnable
            .iter()
            .enumerate()
            .map(|(slot, entry)| (ctx.entities[entry.index].id.as_str(), slot))
            .collect(),
        outcomes: vec![None; runnable.len()],
        durations: vec![Duration::ZERO; runnable.len()],
        checks: vec![Vec::new(); runnable.len()],
        last_result: Instant::now(),
        streaming: HashMap::new(),
    };
    let mut fd3_records = RecordLines::default();
    let mut stray_stderr: Vec<u8> = Vec::new();
    let operation = format!("{}-batch", mode.operation());
    let result = plugin.run_streaming(
        &[operation.as_str()],
        mode.env(),
        Some(stdin),
        true,
        |event| match event {
            Some(Chunk::Fd3(bytes)) => {
                fd3_records.push(bytes, &mut |line| batch.record(out, line));
            }
            Some(Chunk::Stdout(bytes)) => out.write(Stream::Out, bytes),
            Some(Chunk::Stderr(bytes)) => keep_bounded(&mut stray_stderr, bytes),
            None => out.flush(),
        },
    );
    fd3_records.finish(&mut |line| batch.record(out, line));
    if fd3_records.oversized > 0 {
        out.error(
            Stream::Err,
            &format!(
                "plugin holo-{} sent {} batch records larger than {} MiB; they were dropped",
                plugin.id,
                fd3_records.oversized,
                MAX_RECORD >> 20
            ),
        );
    }
    if !stray_stderr.is_empty() {
        let text = out.colorize_plugin_line(&stray_stderr);
        out.write(Stream::Err, &text);
    }
    let failure = plugin.failure(&result).unwrap_or_else(|| {
        format!(
            "plugin holo-{} finished {operation} without a result for this entity",
            plugin.id
        )
    });
    let checks = std::mem::take(&mut batch.checks);
    batch
        .outcomes(out, &failure)
        .into_iter()
        .zip(checks)
        .map(|((outcome, duration), checks)| (outcome, duration, checks))
        .collect()
}

/// The driver's side of one batch call: which entity each record is for,
/// the outcomes so far, and the entities whose output is streaming in.
struct BatchRun<'a> {
    ctx: &'a Context<'a>,
    plugin: &'a Plugin,
    runnable: &'a [Pending],
    slot: FastMap<&'a str, usize>,
    outcomes: Vec<Option<Outcome>>,
    /// The time from the previous final record (or the start) to this
    /// entity's: the plugin works on the entities of a batch one by one.
    durations: Vec<Duration>,
    checks: Vec<Vec<CheckResult>>,
    last_result: Instant,
    /// Entities with output records but no final record yet.
    streaming: HashMap<usize, EntityView<'a>>,
}

impl BatchRun<'_> {
    /// Each entity's outcome and time; those without a result get one:
    /// in an interrupted run the entity that was cut is interrupted and
    /// the rest were not started, otherwise each failed with `failure`.
    fn outcomes(self, out: &mut Output, failure: &str) -> Vec<(Outcome, Duration)> {
        let BatchRun {
            ctx,
            runnable,
            outcomes,
            durations,
            last_result,
            mut streaming,
            ..
        } = self;
        // Entities without a result waited from the last result to the end.
        let unfinished = last_result.elapsed();
        let interrupted = crate::interrupt::signal().is_some();
        // An entity whose own record says it was interrupted is the one that
        // was cut: the plugin started none after it, so the rest never began.
        let mut cut = outcomes
            .iter()
            .any(|outcome| matches!(outcome, Some(Outcome::Interrupted)));
        outcomes
            .into_iter()
            .zip(durations)
            .enumerate()
            .map(|(slot_index, (outcome, duration))| match outcome {
                Some(outcome) => (outcome, duration),
                None if interrupted && cut => (Outcome::NotStarted, Duration::ZERO),
                // Else the first entity without a result is the one that was
                // cut (its plugin was killed in it).
                None if interrupted => {
                    cut = true;
                    let entity = &ctx.entities[runnable[slot_index].index];
                    let mut view = streaming
                        .remove(&slot_index)
                        .unwrap_or_else(|| EntityView::new(entity));
                    (view.finish_interrupted(out), unfinished)
                }
                None => {
                    let entity = &ctx.entities[runnable[slot_index].index];
                    let mut view = streaming
                        .remove(&slot_index)
                        .unwrap_or_else(|| EntityView::new(entity));
                    let outcome = view.finish(ctx, out, Some(failure.to_string()), "");
                    (outcome, unfinished)
                }
            })
            .collect()
    }

    /// Renders one FD 3 line: output so far, or the entity's final record.
    fn record(&mut self, out: &mut Output, line: &[u8]) {
        let record: BatchRecord = match serde_json::from_slice(line) {
            Ok(record) => record,
            Err(e) => {
                out.error(
                    Stream::Err,
                    &format!(
                        "plugin holo-{} sent a malformed batch record ({e})",
                        self.plugin.id
                    ),
                );
                return;
            }
        };
        let slot = self.slot.get(record.entity.as_ref()).copied();
        let Some(slot) = slot.filter(|slot| self.outcomes[*slot].is_none()) else {
            out.error(
                Stream::Err,
                &format!(
                    "plugin holo-{} sent a batch record for {}, which was not requested or is already finished",
                    self.plugin.id, record.entity
                ),
            );
            return;
        };
        let entity = &self.ctx.entities[self.runnable[slot].index];
        let mut view = self
            .streaming
            .remove(&slot)
            .unwrap_or_else(|| EntityView::new(entity));
        for (stream, data) in &record.output {
            let bytes = holo_protocol::decode_chunk(data).unwrap_or_default();
            match stream {
                holo_protocol::Stream::Err => view.stderr(out, &bytes),
                holo_protocol::Stream::Out => view.stdout(out, &bytes),
            }
        }
        let Some(exit) = record.exit else {
            self.streaming.insert(slot, view);
            return;
        };
        let now = Instant::now();
        self.durations[slot] = now - self.last_result;
        self.last_result = now;
        // Each entity of a batch gets the whole timeout.
        self.plugin.restart_timer();
        if exit != 0 && crate::interrupt::signal().is_some() {
            self.outcomes[slot] = Some(view.finish_interrupted(out));
            return;
        }
        if record.skipped {
            // The output holds the plugin's `!! skipped: ...` line.
            self.outcomes[slot] = Some(view.finish_skipped(out));
            return;
        }
        let failure = (exit != 0).then(|| format!("exit status {exit}"));
        let fd3 = record.fd3.unwrap_or_default().join("\n");
        self.checks[slot] = check_results(&fd3);
        self.outcomes[slot] = Some(view.finish(self.ctx, out, failure, &fd3));
    }
}

/// Runs `diff ENTITY` and renders the two paths it names. `Ok(empty)` when
/// the plugin has no diff for the entity.
pub fn render_entity_diff(
    run_dir: &RunDir,
    plugin: &Plugin,
    entity: &Entity,
    out: &mut Output,
) -> Result<Vec<u8>, String> {
    let mut fd3 = Vec::new();
    let mut stderr = StderrLines::default();
    let result = plugin.run_streaming(
        &["diff", &entity.id],
        &[],
        None,
        true,
        |event| match event {
            Some(Chunk::Stdout(b)) => out.write(Stream::Out, b),
            Some(Chunk::Stderr(b)) => stderr.push(b, &mut |line| plugin_stderr_line(out, line)),
            Some(Chunk::Fd3(b)) => keep_bounded(&mut fd3, b),
            None => out.flush(),
        },
    );
    stderr.finish(&mut |line| plugin_stderr_line(out, line));
    if let Some(failure) = plugin.failure(&result) {
        return Err(failure);
    }
    let parts = diff_fields(&fd3);
    let files = diff_files(&parts)?;
    use std::os::unix::ffi::OsStrExt;
    let mut diff = Vec::new();
    for fields in files {
        let (from, to) = (
            std::path::Path::new(std::ffi::OsStr::from_bytes(fields[0])),
            std::path::Path::new(std::ffi::OsStr::from_bytes(fields[1])),
        );
        // A third field: header lines (the diff-header extension).
        let attributes = fields.get(2).copied().filter(|lines| !lines.is_empty());
        diff.extend(
            crate::diff::render_file_diff_with_header(
                from,
                to,
                &run_dir.translate(&from.to_string_lossy()),
                &run_dir.translate(&to.to_string_lossy()),
                attributes,
            )
            .map_err(|e| e.to_string())?,
        );
    }
    Ok(if out.color(Stream::Out) {
        crate::diff::colorize_diff(&diff)
    } else {
        diff
    })
}

/// The most holo keeps of a plugin's FD 3 in a per-entity call, and of the
/// stderr of a batch outside its records: both are a few lines.
const MAX_KEPT: usize = 1 << 20;

/// The largest batch record holo parses (output of an entity included).
const MAX_RECORD: usize = 256 << 20;

/// Appends up to [`MAX_KEPT`] bytes in all; the rest is dropped.
fn keep_bounded(kept: &mut Vec<u8>, bytes: &[u8]) {
    let room = MAX_KEPT.saturating_sub(kept.len());
    kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
}

/// Splits FD 3 of a batch into records. Only new bytes are searched for the
/// newline, and a record beyond [`MAX_RECORD`] is dropped as it arrives.
#[derive(Default)]
struct RecordLines {
    partial: Vec<u8>,
    /// Dropping the rest of an oversized record.
    skipping: bool,
    oversized: usize,
}

impl RecordLines {
    fn push(&mut self, mut bytes: &[u8], each: &mut dyn FnMut(&[u8])) {
        while let Some(newline) = bytes.iter().position(|b| *b == b'\n') {
            if self.skipping {
                self.skipping = false;
            } else if self.partial.is_empty() {
                each(&bytes[..newline]);
            } else {
                self.partial.extend_from_slice(&bytes[..newline]);
                each(&self.partial);
                self.partial.clear();
            }
            bytes = &bytes[newline + 1..];
        }
        if self.skipping {
            return;
        }
        self.partial.extend_from_slice(bytes);
        if self.partial.len() > MAX_RECORD {
            self.partial = Vec::new();
            self.skipping = true;
            self.oversized += 1;
        }
    }

    fn finish(&mut self, each: &mut dyn FnMut(&[u8])) {
        if !self.partial.is_empty() && !self.skipping {
            let line = std::mem::take(&mut self.partial);
            each(&line);
        }
    }
}

/// The NUL-terminated fields a `diff` wrote on FD 3 (bytes: a file name
/// need not be UTF-8); a last field without its NUL counts too.
fn diff_fields(fd3: &[u8]) -> Vec<&[u8]> {
    let mut parts: Vec<&[u8]> = fd3.split(|b| *b == 0).collect();
    if fd3.ends_with(&[0]) || fd3.is_empty() {
        parts.pop();
    }
    parts
}

/// The files of a diff: two fields, or three with header lines
/// (`diff-header`), are one file; more are files of three fields each
/// (`diff-files`). Fewer than two fields: no diff.
fn diff_files<'a, 'b>(parts: &'a [&'b [u8]]) -> Result<Vec<&'a [&'b [u8]]>, String> {
    match parts.len() {
        0 | 1 => Ok(Vec::new()),
        2 | 3 => Ok(vec![parts]),
        n if n % 3 == 0 => Ok(parts.chunks(3).collect()),
        n => Err(format!(
            "the plugin wrote {n} diff fields; several files take three fields each"
        )),
    }
}

/// A line of plugin stderr outside an entity's prologue (scan, info, diff).
pub fn plugin_stderr_line(out: &mut Output, line: &[u8]) {
    let line = out.colorize_plugin_line(line);
    out.write(Stream::Err, &line);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indent_prefixes_every_line_but_not_past_the_end() {
        assert_eq!(indent(b"a\nb\n"), b"    a\n    b\n");
        assert_eq!(indent(b"a\nb"), b"    a\n    b");
        assert_eq!(indent(b""), b"");
    }

    #[test]
    fn batch_records_split_across_reads_and_oversized_ones_are_dropped() {
        let mut lines = RecordLines::default();
        let mut seen: Vec<Vec<u8>> = Vec::new();
        lines.push(b"{\"a\"", &mut |l| seen.push(l.to_vec()));
        lines.push(b":1}\n{\"b\":2}\n{", &mut |l| seen.push(l.to_vec()));
        let big = vec![b'x'; MAX_RECORD];
        lines.push(&big, &mut |l| seen.push(l.to_vec()));
        lines.push(b"x}\n{\"c\":3}", &mut |l| seen.push(l.to_vec()));
        lines.finish(&mut |l| seen.push(l.to_vec()));
        assert_eq!(
            seen,
            vec![
                b"{\"a\":1}".to_vec(),
                b"{\"b\":2}".to_vec(),
                b"{\"c\":3}".to_vec()
            ]
        );
        assert_eq!(lines.oversized, 1);
    }

    #[test]
    fn diff_fields_make_one_file_or_files_of_three() {
        let parse = |fd3: &[u8]| {
            let parts = diff_fields(fd3);
            diff_files(&parts).map(|files| {
                files
                    .iter()
                    .map(|fields| fields.iter().map(|f| f.to_vec()).collect::<Vec<_>>())
                    .collect::<Vec<_>>()
            })
        };
        let owned = |fields: &[&str]| {
            fields
                .iter()
                .map(|f| f.as_bytes().to_vec())
                .collect::<Vec<_>>()
        };
        assert_eq!(parse(b""), Ok(vec![]));
        assert_eq!(parse(b"D\0C\0"), Ok(vec![owned(&["D", "C"])]));
        assert_eq!(parse(b"D\0C"), Ok(vec![owned(&["D", "C"])]));
        assert_eq!(parse(b"D\0C\0H\n\0"), Ok(vec![owned(&["D", "C", "H\n"])]));
        assert_eq!(
            parse(b"D1\0C1\0\0D2\0C2\0H\n\0"),
            Ok(vec![owned(&["D1", "C1", ""]), owned(&["D2", "C2", "H\n"])])
        );
        assert!(
            parse(b"D1\0C1\0\0D2\0")
                .unwrap_err()
                .contains("4 diff fields")
        );
    }

    #[test]
    fn exit_codes() {
        use Outcome::*;
        assert_eq!(exit_code(Mode::Apply, &[Unchanged, Changed]), 0);
        assert_eq!(exit_code(Mode::Apply, &[Changed, Failed]), 1);
        assert_eq!(exit_code(Mode::Apply, &[Skipped]), 1);
        assert_eq!(exit_code(Mode::Apply, &[NeedsForce]), 1);
        assert_eq!(exit_code(Mode::Noop, &[Unchanged, NotSupported]), 0);
        assert_eq!(exit_code(Mode::Noop, &[Unchanged, Changed]), 2);
        assert_eq!(exit_code(Mode::Noop, &[Changed, Failed]), 1);
    }
}
