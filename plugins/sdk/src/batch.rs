//! The `batch` extension: `apply-batch`, `force-apply-batch` and
//! `noop-batch` apply many entities in one process.
//!
//! stdin lists one entity per line ([`BatchLine`]). For each entity the SDK
//! captures fds 1 and 2 (so child processes are captured too), runs the same
//! handler as the per-process operations, and writes its final
//! [`BatchRecord`] on FD 3. A line may name earlier lines it requires or
//! subscribes to (`batch-order`): the entity is skipped with the driver's
//! message when one of them failed, and refreshed when a subscribed one
//! changed, exactly as the driver would between per-entity calls.
//!
//! Capture uses one pair of pipes for as long as no entity leaves a process
//! behind. A collector thread reads them as data arrives (so big output
//! never blocks the handler), and at the end of each entity the main thread
//! drains whatever is left. When the driver announced `batch-stream`, output
//! that waited longer than [`STREAM_DELAY`] is sent at once as a record
//! without `exit`, so that a person sees a slow entity's output while it runs.
//!
//! A process that an entity leaves behind (a daemon, a background child of
//! a command) keeps the pipes it inherited. The batch process is a child
//! subreaper, so such a process stays its child; when one exists at the end
//! of an entity, fds 1 and 2 move to fresh pipes and the old ones are
//! retired: the collector keeps reading them and drops what arrives, as
//! holo drops what a per-entity call's leftover writes after the plugin
//! exited. So that output never lands in a later entity's record, and the
//! writer never meets a closed pipe while the batch runs.
//!
//! Records of entities that printed nothing and changed nothing are collected
//! into larger FD 3 writes (a no-op run of thousands of entities is then a
//! few dozen writes); every other record is written as soon as it is known.

use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::ExitCode;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use holo_protocol::{BatchLine, BatchRecord, Stream, extension, fd3};
use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use crate::atomic;
use crate::cache;
use crate::entity::{EntityResult, apply_entity, ensure_cache, fail, print_error};
use crate::env::Env;
use crate::error::{Error, Result};
use crate::plugin::{Mode, Plugin};
use crate::report;

/// Exit code of a handler that panicked, as for a process that panics.
const PANIC_EXIT: u8 = 101;

/// Bytes of quiet records held back before one write on FD 3.
const PENDING_LIMIT: usize = 32 * 1024;

/// Entities in a batch from which state records go to the record journal:
/// a smaller batch keeps a file per record, which is as quick there and
/// easier to read.
const JOURNAL_FROM_ENTITIES: usize = 64;

/// How long captured output may wait before it is streamed to the driver.
/// Output of an entity that finishes sooner goes in its final record.
const STREAM_DELAY: Duration = Duration::from_millis(50);

/// One line of the batch input: its 1-based line number, the entity id,
/// and the parsed line or why it cannot be read.
type InputLine<'a> = (usize, String, std::result::Result<BatchLine<'a>, Error>);

fn parse_input(input: &str) -> Vec<InputLine<'_>> {
    input
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| {
            let id = line.split('\t').next().unwrap_or_default().to_string();
            (
                index + 1,
                id,
                BatchLine::parse(line, index + 1).map_err(Error::new),
            )
        })
        .collect()
}

/// What became of an entity, as far as the entities that reference it care.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Done {
    /// Failed or skipped: entities that require it are skipped.
    Failed,
    /// Changed: entities that subscribe to it are refreshed.
    Changed,
    Unchanged,
}

/// Runs a batch operation; see the module documentation.
pub(crate) fn run<P: Plugin>(plugin: &P, env: &Env, mode: Mode) -> ExitCode {
    let mut input = String::new();
    if let Err(err) = std::io::stdin().read_to_string(&mut input) {
        return fail(&Error::new(format!(
            "cannot read the batch entity list from stdin: {err}; the driver sends one entity id per line"
        )));
    }
    // Children (package managers...) must not read what is left of stdin.
    if let Ok(null) = std::fs::File::open("/dev/null") {
        let _ = nix::unistd::dup2_stdin(&null);
    }
    let lines = parse_input(&input);
    crate::root_fs::reuse_parents();
    let loaded = std::thread::scope(|scope| {
        // The record journal, which the first entity reads, is read beside
        // the scan cache.
        let _ = std::thread::Builder::new()
            .name("holo-journal".to_string())
            .spawn_scoped(scope, || crate::state::preload_journal(env));
        ensure_cache(plugin, env).and_then(|()| cache::Loaded::read(env))
    });
    let loaded = match loaded {
        Ok(loaded) => loaded,
        Err(err) => return fail(&err),
    };
    let capture = match Capture::start(env.has_extension(extension::BATCH_STREAM)) {
        Ok(capture) => capture,
        Err(err) => return fail(&err),
    };
    // By line number: the entity id and what became of it.
    let mut done: Vec<Option<(&str, Done)>> = vec![None; input.lines().count() + 1];
    let mut staged = Staging::begin(plugin, env, mode, lines.len());
    for (number, id, line) in &lines {
        // An interrupted batch starts no further entity; the driver reports
        // those without a record.
        if crate::process::interrupted_by().is_some() {
            break;
        }
        capture.begin(id);
        if let Err(err) = staged.commit_before(line.as_ref().ok(), &capture, &mut done) {
            capture.stop();
            return fail(&err);
        }
        atomic::set_staging_owner(*number);
        let failed_requirement = line.as_ref().ok().and_then(|line| {
            line.requires
                .iter()
                .chain(&line.subscribes)
                .find_map(|earlier| match done[*earlier] {
                    Some((required, Done::Failed)) => Some(required),
                    _ => None,
                })
        });
        let result = if let Some(required) = failed_requirement {
            // The driver's own words for a skip, as in per-entity calls.
            print_error(&Error::new(holo_protocol::skipped_message(required)));
            None
        } else {
            let entity = match line {
                Err(err) => Err(err.clone()),
                Ok(line) => {
                    let refresh = line.refresh
                        || line
                            .subscribes
                            .iter()
                            .any(|earlier| matches!(done[*earlier], Some((_, Done::Changed))));
                    loaded.lookup(env, &line.id, refresh)
                }
            };
            let applied =
                catch_unwind(AssertUnwindSafe(|| apply_entity(plugin, env, entity, mode)))
                    .unwrap_or(EntityResult::empty(PANIC_EXIT));
            Some(applied)
        };
        done[*number] = Some((
            id,
            match &result {
                None => Done::Failed,
                Some(result) if result.exit != 0 => Done::Failed,
                Some(result) if result.fd3.is_none() => Done::Changed,
                Some(_) => Done::Unchanged,
            },
        ));
        let sent = capture
            .finish(id, result.as_ref())
            .and_then(|(record, quiet)| staged.send(*number, record, quiet, &capture, &mut done));
        if let Err(err) = sent {
            capture.stop();
            return fail(&err);
        }
    }
    if let Err(err) = staged.end(&capture, &mut done) {
        capture.stop();
        return fail(&err);
    }
    capture.stop();
    match capture.flush_pending() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => fail(&err),
    }
}

/// The records of a batch whose writes are staged ([`Plugin::STAGES_WRITES`]):
/// a record is sent only once the entity's writes are in place, so the
/// driver never hears of a change that a kill could still undo.
struct Staging {
    active: bool,
    /// Final records waiting for the commit, by line number.
    held: Vec<(usize, BatchRecord<'static>)>,
}

impl Staging {
    fn begin<P: Plugin>(_plugin: &P, env: &Env, mode: Mode, entities: usize) -> Staging {
        let active = P::STAGES_WRITES && mode != Mode::Noop;
        if active {
            // Test mode only: where a commit kills itself, and a smaller
            // batch, so that tests can interrupt a run between commits.
            let test_var = |name: &str| env.test_mode.then(|| std::env::var(name).ok()).flatten();
            let files_limit = test_var("HOLO_TEST_STAGED_FILES").and_then(|text| text.parse().ok());
            let journal_from = test_var("HOLO_TEST_JOURNAL_FROM")
                .and_then(|text| text.parse().ok())
                .unwrap_or(JOURNAL_FROM_ENTITIES);
            atomic::begin_staging(
                test_var("HOLO_TEST_KILL_AT"),
                files_limit,
                entities >= journal_from,
            );
        }
        Staging {
            active,
            held: Vec::new(),
        }
    }

    /// Commits before an entity that requires or subscribes to one whose
    /// writes are staged (it may read them), and when the batch is full.
    fn commit_before(
        &mut self,
        line: Option<&BatchLine<'_>>,
        capture: &Capture,
        done: &mut [Option<(&str, Done)>],
    ) -> Result<()> {
        if !self.active || self.held.is_empty() {
            return Ok(());
        }
        let reads_staged = line.is_some_and(|line| {
            line.requires
                .iter()
                .chain(&line.subscribes)
                .any(|earlier| atomic::staged_visible_for(*earlier))
        });
        if reads_staged || atomic::staging_full() {
            self.release(atomic::commit_and_take_failures(), capture, done)?;
        }
        Ok(())
    }

    /// Sends the record now, or holds it while writes are staged.
    fn send(
        &mut self,
        number: usize,
        record: BatchRecord<'static>,
        quiet: bool,
        capture: &Capture,
        done: &mut [Option<(&str, Done)>],
    ) -> Result<()> {
        if !self.active {
            return capture.send(&record, quiet);
        }
        if atomic::staged_pending() {
            self.held.push((number, record));
            return Ok(());
        }
        if self.held.is_empty() {
            return capture.send(&record, quiet);
        }
        // The plugin committed on its own; records keep their order.
        self.held.push((number, record));
        self.release(atomic::commit_and_take_failures(), capture, done)
    }

    /// Commits what is left and closes the staging batch.
    fn end(&mut self, capture: &Capture, done: &mut [Option<(&str, Done)>]) -> Result<()> {
        if !self.active {
            return Ok(());
        }
        self.release(atomic::end_staging(), capture, done)
    }

    /// Sends the held records once their writes are committed; an entity
    /// whose write failed gets the error and a failed record.
    fn release(
        &mut self,
        failures: Vec<(usize, Error)>,
        capture: &Capture,
        done: &mut [Option<(&str, Done)>],
    ) -> Result<()> {
        for (number, mut record) in self.held.drain(..) {
            let mut failed = false;
            for (_, err) in failures.iter().filter(|(owner, _)| *owner == number) {
                let mut text = String::new();
                for line in err.message().lines() {
                    text.push_str("!! ");
                    text.push_str(line);
                    text.push('\n');
                }
                record
                    .output
                    .push((Stream::Err, holo_protocol::encode_chunk(text.as_bytes())));
                failed = true;
            }
            if failed && record.exit == Some(0) {
                record.exit = Some(1);
                record.fd3 = Some(Vec::new());
                if let Some(Some((_, state))) = done.get_mut(number) {
                    *state = Done::Failed;
                }
            }
            capture.send(&record, false)?;
        }
        Ok(())
    }
}

type Chunks = Vec<(Stream, Vec<u8>)>;

/// What the main thread and the collector share.
struct Shared {
    /// Output captured and not yet sent, in arrival order.
    chunks: Chunks,
    /// When the oldest of `chunks` arrived.
    oldest: Option<Instant>,
    /// The entity that runs now, when output is streamed.
    streaming: Option<String>,
    /// Quiet records held back for one larger FD 3 write.
    pending: Vec<u8>,
    /// An FD 3 write of the collector that failed.
    error: Option<Error>,
    /// The read ends of the pipes on fds 1 and 2.
    current: [Arc<OwnedFd>; 2],
    /// Read ends of earlier pipes that a process left behind by an entity
    /// still holds; what arrives there belongs to no entity and is dropped.
    retired: Vec<Arc<OwnedFd>>,
}

impl Shared {
    /// Sends the held-back records, then a record without `exit` with the
    /// output so far of the entity that runs.
    fn stream(&mut self) -> Result<()> {
        let Some(entity) = self.streaming.as_deref() else {
            return Ok(());
        };
        let record = BatchRecord {
            entity: entity.into(),
            output: encode(std::mem::take(&mut self.chunks)),
            fd3: None,
            exit: None,
            skipped: false,
        };
        self.oldest = None;
        append_record(&mut self.pending, &record)?;
        report::fd3_write(&std::mem::take(&mut self.pending))
    }
}

fn encode(chunks: Chunks) -> Vec<(Stream, String)> {
    chunks
        .into_iter()
        .map(|(stream, bytes)| (stream, holo_protocol::encode_chunk(&bytes)))
        .collect()
}

fn append_record(buffer: &mut Vec<u8>, record: &BatchRecord) -> Result<()> {
    serde_json::to_writer(&mut *buffer, record).map_err(|err| {
        Error::new(format!(
            "entity {}: cannot encode the batch record: {err}",
            record.entity
        ))
    })?;
    buffer.push(b'\n');
    Ok(())
}

/// fds 1 and 2 pointed at pipes, with a collector thread reading them.
struct Capture {
    shared: Arc<Mutex<Shared>>,
    /// Written to when the pipes change, so that the collector polls the new ones.
    wake: OwnedFd,
    /// The driver announced `batch-stream`.
    streaming: bool,
    saved_stdout: OwnedFd,
    saved_stderr: OwnedFd,
}

fn sys_error(what: &str, err: Errno) -> Error {
    Error::new(format!("cannot {what} for the batch: {err}"))
}

/// A close-on-exec duplicate of `fd`, so that children do not inherit it.
fn dup_cloexec(fd: BorrowedFd<'_>) -> Result<OwnedFd> {
    let raw = fcntl(fd, FcntlArg::F_DUPFD_CLOEXEC(3))
        .map_err(|err| sys_error("save stdout/stderr", err))?;
    // SAFETY: F_DUPFD_CLOEXEC returned a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

fn nonblocking_pipe() -> Result<(OwnedFd, OwnedFd)> {
    let (reader, writer) =
        nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(|err| sys_error("create a pipe", err))?;
    fcntl(&reader, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))
        .map_err(|err| sys_error("configure a pipe", err))?;
    Ok((reader, writer))
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Reads everything available from `fd` into `chunks`; false at end of file.
fn drain(fd: BorrowedFd<'_>, stream: Stream, chunks: &mut Chunks) -> bool {
    let mut buf = [0u8; 16384];
    loop {
        match nix::unistd::read(fd, &mut buf) {
            Ok(0) => return false,
            Ok(n) => match chunks.last_mut() {
                Some((last, bytes)) if *last == stream => bytes.extend_from_slice(&buf[..n]),
                _ => chunks.push((stream, buf[..n].to_vec())),
            },
            Err(Errno::EINTR) => continue,
            Err(Errno::EAGAIN) => return true,
            Err(_) => return false,
        }
    }
}

/// Reads and drops everything available from a retired pipe; false at end
/// of file.
fn discard(fd: BorrowedFd<'_>) -> bool {
    let mut buf = [0u8; 16384];
    loop {
        match nix::unistd::read(fd, &mut buf) {
            Ok(0) => return false,
            Ok(_) | Err(Errno::EINTR) => continue,
            Err(Errno::EAGAIN) => return true,
            Err(_) => return false,
        }
    }
}

/// When output waiting in `shared` must be streamed: `None` for no limit.
fn stream_timeout(shared: &mut Shared) -> PollTimeout {
    match shared.oldest.filter(|_| shared.streaming.is_some()) {
        Some(oldest) if oldest.elapsed() >= STREAM_DELAY => {
            if let Err(err) = shared.stream() {
                shared.error.get_or_insert(err);
            }
            PollTimeout::NONE
        }
        Some(oldest) => {
            let left = STREAM_DELAY.saturating_sub(oldest.elapsed());
            // at least 1 ms, so that the loop never spins
            PollTimeout::try_from(left.max(Duration::from_millis(1))).unwrap_or(PollTimeout::MAX)
        }
        None => PollTimeout::NONE,
    }
}

/// The collector thread: reads the pipes as data arrives and, when
/// streaming, sends output that waited [`STREAM_DELAY`]. Ends when the
/// current pipes are closed and no retired pipe is left.
fn collect(shared: &Mutex<Shared>, wake: &OwnedFd) {
    let streams = [Stream::Out, Stream::Err];
    // end of file seen on the current pipes (reset when they change)
    let mut current_open = [true, true];
    let mut seen: Option<Arc<OwnedFd>> = None;
    loop {
        let (timeout, current, retired) = {
            let mut guard = lock(shared);
            if !seen
                .as_ref()
                .is_some_and(|fd| Arc::ptr_eq(fd, &guard.current[0]))
            {
                seen = Some(Arc::clone(&guard.current[0]));
                current_open = [true, true];
            }
            if current_open == [false, false] && guard.retired.is_empty() {
                return;
            }
            let timeout = stream_timeout(&mut guard);
            (timeout, guard.current.clone(), guard.retired.clone())
        };
        let mut fds: Vec<PollFd<'_>> = vec![PollFd::new(wake.as_fd(), PollFlags::POLLIN)];
        let polled: Vec<usize> = (0..2).filter(|i| current_open[*i]).collect();
        for index in &polled {
            fds.push(PollFd::new(current[*index].as_fd(), PollFlags::POLLIN));
        }
        for fd in &retired {
            fds.push(PollFd::new(fd.as_fd(), PollFlags::POLLIN));
        }
        match poll(&mut fds, timeout) {
            Ok(_) => {}
            Err(Errno::EINTR) => continue,
            Err(_) => return,
        }
        let ready: Vec<bool> = fds
            .iter()
            .map(|fd| fd.revents().is_some_and(|r| !r.is_empty()))
            .collect();
        if ready[0] {
            discard(wake.as_fd());
        }
        let mut guard = lock(shared);
        for (slot, index) in polled.iter().enumerate() {
            if ready[1 + slot] {
                current_open[*index] =
                    drain(current[*index].as_fd(), streams[*index], &mut guard.chunks);
            }
        }
        for (slot, fd) in retired.iter().enumerate() {
            if ready[1 + polled.len() + slot] && !discard(fd.as_fd()) {
                guard.retired.retain(|kept| !Arc::ptr_eq(kept, fd));
            }
        }
        if !guard.chunks.is_empty() && guard.oldest.is_none() {
            guard.oldest = Some(Instant::now());
        }
    }
}

/// Points fds 1 and 2 at new pipes; returns their read ends.
fn redirect_to_new_pipes() -> Result<[Arc<OwnedFd>; 2]> {
    let (out_reader, out_writer) = nonblocking_pipe()?;
    let (err_reader, err_writer) = nonblocking_pipe()?;
    nix::unistd::dup2_stdout(&out_writer).map_err(|err| sys_error("redirect stdout", err))?;
    nix::unistd::dup2_stderr(&err_writer).map_err(|err| sys_error("redirect stderr", err))?;
    // Only fds 1 and 2 keep the write ends open from here on.
    drop((out_writer, err_writer));
    Ok([Arc::new(out_reader), Arc::new(err_reader)])
}

/// Whether a process is still around that an entity started: a daemon, or
/// a background child of a command. The batch process is a child subreaper,
/// so such orphans are its children. Exited ones are reaped here.
fn leftover_processes() -> bool {
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => return true,
            Ok(_) | Err(Errno::EINTR) => continue,
            Err(_) => return false,
        }
    }
}

impl Capture {
    fn start(streaming: bool) -> Result<Capture> {
        // Orphans of the entities' commands become our children, so that
        // `leftover_processes` sees them.
        // SAFETY: PR_SET_CHILD_SUBREAPER takes one integer argument.
        unsafe {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        }
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        let saved_stdout = dup_cloexec(std::io::stdout().as_fd())?;
        let saved_stderr = dup_cloexec(std::io::stderr().as_fd())?;
        let current = redirect_to_new_pipes()?;
        let (wake_reader, wake) = nonblocking_pipe()?;
        fcntl(&wake, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))
            .map_err(|err| sys_error("configure a pipe", err))?;
        let shared = Arc::new(Mutex::new(Shared {
            chunks: Vec::new(),
            oldest: None,
            streaming: None,
            pending: Vec::with_capacity(PENDING_LIMIT + 256),
            error: None,
            current,
            retired: Vec::new(),
        }));
        let thread_shared = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("holo-batch-collector".into())
            .spawn(move || collect(&thread_shared, &wake_reader))
            .map_err(|err| Error::new(format!("cannot start the batch output collector: {err}")))?;
        Ok(Capture {
            shared,
            wake,
            streaming,
            saved_stdout,
            saved_stderr,
        })
    }

    /// Marks the start of entity `id`: from now on its output may stream.
    fn begin(&self, id: &str) {
        if self.streaming {
            lock(&self.shared).streaming = Some(id.to_string());
        }
    }

    /// Takes everything written since the last record and gives the
    /// entity's final record, and whether it is a quiet no-op. `None` for
    /// an entity that was skipped.
    ///
    /// A process the entity left behind keeps the pipes it inherited; they
    /// are retired, so that its later output never lands in another
    /// entity's record and it never meets a closed pipe while the batch
    /// runs. Per-entity calls drop such output too.
    fn finish(
        &self,
        id: &str,
        result: Option<&EntityResult>,
    ) -> Result<(BatchRecord<'static>, bool)> {
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        let mut guard = lock(&self.shared);
        // One poll tells which pipe holds data; most entities print nothing.
        let current = guard.current.clone();
        let mut fds = [
            PollFd::new(current[0].as_fd(), PollFlags::POLLIN),
            PollFd::new(current[1].as_fd(), PollFlags::POLLIN),
        ];
        let ready = match poll(&mut fds, PollTimeout::ZERO) {
            Ok(0) => [false, false],
            Ok(_) => [0, 1].map(|i| fds[i].revents().is_some_and(|r| !r.is_empty())),
            Err(_) => [true, true],
        };
        for (index, stream) in [Stream::Out, Stream::Err].into_iter().enumerate() {
            if ready[index] {
                drain(current[index].as_fd(), stream, &mut guard.chunks);
            }
        }
        if leftover_processes() {
            let fresh = redirect_to_new_pipes()?;
            let old = std::mem::replace(&mut guard.current, fresh);
            guard.retired.extend(old);
            let _ = nix::unistd::write(&self.wake, b"x");
        }
        if let Some(err) = guard.error.take() {
            return Err(err);
        }
        guard.streaming = None;
        guard.oldest = None;
        let output = encode(std::mem::take(&mut guard.chunks));
        let skipped = EntityResult::empty(0);
        let (result, is_skipped) = match result {
            Some(result) => (result, false),
            None => (&skipped, true),
        };
        let quiet_no_change =
            output.is_empty() && result.exit == 0 && result.fd3 == Some(fd3::NOT_CHANGED);
        let record = BatchRecord {
            entity: id.to_string().into(),
            output,
            fd3: Some(
                result
                    .fd3_lines()
                    .map(|line| line.to_string().into())
                    .collect(),
            ),
            exit: Some(i32::from(result.exit)),
            skipped: is_skipped,
        };
        Ok((record, quiet_no_change))
    }

    /// Sends an entity's final record, or holds it back when it is a quiet
    /// no-op.
    fn send(&self, record: &BatchRecord<'_>, quiet_no_change: bool) -> Result<()> {
        let mut guard = lock(&self.shared);
        append_record(&mut guard.pending, record)?;
        // Records of quiet no-ops are batched into larger writes: if the
        // process dies, losing them only fails entities that did nothing.
        // Every other record is sent at once.
        if quiet_no_change && guard.pending.len() < PENDING_LIMIT {
            return Ok(());
        }
        report::fd3_write(&std::mem::take(&mut guard.pending))
    }

    /// Sends the records still held back.
    fn flush_pending(&self) -> Result<()> {
        report::fd3_write(&std::mem::take(&mut lock(&self.shared).pending))
    }

    /// Points fds 1 and 2 back at the original streams.
    fn stop(&self) {
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        let _ = nix::unistd::dup2_stdout(&self.saved_stdout);
        let _ = nix::unistd::dup2_stderr(&self.saved_stderr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_lines_carry_ids_and_refresh_flags() {
        let lines = parse_input("demo:a\n\ndemo:b\trefresh\ndemo:c\tbogus\n");
        let summary: Vec<(&str, bool, bool)> = lines
            .iter()
            .map(|(_, id, l)| (id.as_str(), l.as_ref().is_ok_and(|l| l.refresh), l.is_err()))
            .collect();
        assert_eq!(
            summary,
            [
                ("demo:a", false, false),
                ("demo:b", true, false),
                ("demo:c", false, true)
            ]
        );
        let message = lines[2]
            .2
            .as_ref()
            .err()
            .map(|e| e.message().to_string())
            .unwrap_or_default();
        assert!(
            message.contains("line 4") && message.contains("bogus"),
            "{message}"
        );
    }
}
