//! An entity's report as `holo apply` prints it, with the driver's
//! header and paragraphs (holo-protocol's `entity_text`).

use super::child::Ran;
use super::ensured::EnsureResult;
use crate::plugin::Scanned;
use holo_protocol::entity_text::{Paragraphs, report_header};
use holo_runlock::Notice;
use std::io::Write;

/// Prints the entity as `holo apply` does and says how it went: nothing
/// for an entity that did not change; otherwise `Working on ID` with the
/// scan's info lines, the plugin's output, and the messages for a failure
/// or an entity that needs `--force-apply`.
pub(super) fn report<S>(
    printer: &mut Printer,
    entity: &Scanned<S>,
    ran: &Ran,
    rewrite: &dyn Fn(String) -> String,
) -> EnsureResult {
    let fd3 = String::from_utf8_lossy(&ran.fd3);
    let fd3_lines: Vec<&str> = fd3.lines().collect();
    let failed = ran.exit != Some(0);
    let unchanged = !failed
        && fd3_lines.contains(&holo_protocol::fd3::NOT_CHANGED)
        && ran.stdout.is_empty()
        && ran.stderr.is_empty();
    if unchanged {
        return EnsureResult::NotChanged;
    }
    let verb = entity
        .action
        .as_ref()
        .map_or("Working on", |action| action.verb.as_str());
    let reason = entity
        .action
        .as_ref()
        .and_then(|action| action.reason.as_deref())
        .unwrap_or_default();
    let info: Vec<(String, String)> = entity
        .info
        .iter()
        .map(|(key, value)| (key.to_string(), rewrite(value.clone())))
        .collect();
    let info: Vec<(&str, &str)> = info
        .iter()
        .map(|(key, value)| (key.as_str(), value.as_str()))
        .collect();
    let mut out = report_header(Some(verb), &entity.id, reason, &info);
    // Paragraphs as the driver prints them: a blank line after the
    // header, and the entity's output ends with one.
    out.push('\n');
    printer.write(false, out.as_bytes());
    printer.write(false, &ran.stdout);
    let mut stderr = rewrite(String::from_utf8_lossy(&ran.stderr).into_owned());
    if !stderr.is_empty() && !stderr.ends_with('\n') {
        stderr.push('\n');
    }
    printer.write(true, stderr.as_bytes());
    let mut needs_force = false;
    for line in &fd3_lines {
        let message = match *line {
            holo_protocol::fd3::REQUIRES_FORCE_OVERWRITE => {
                "!! Entity has been modified by user (use --force to overwrite)\n"
            }
            holo_protocol::fd3::REQUIRES_FORCE_RESTORE => {
                "!! Entity has been deleted by user (use --force to restore)\n"
            }
            _ => continue,
        };
        needs_force = true;
        printer.write(true, message.as_bytes());
    }
    if failed && !ran.skipped {
        let status = ran.exit.map_or("killed by a signal".to_string(), |code| {
            format!("exit status {code}")
        });
        printer.write(true, format!("!! {status}\n").as_bytes());
    }
    printer.end_paragraph();
    if failed {
        EnsureResult::Failed
    } else if needs_force {
        EnsureResult::NeedsForce
    } else {
        EnsureResult::Changed
    }
}

/// Writes to stdout or stderr as the driver's output does, with its
/// paragraphs (holo-protocol's).
#[derive(Default)]
pub(super) struct Printer {
    paragraphs: Paragraphs,
}

impl Printer {
    /// Ends the entity's paragraph with a blank line.
    pub(super) fn end_paragraph(&mut self) {
        for _ in 0..self.paragraphs.missing_newlines() {
            self.write(false, b"\n");
        }
    }

    /// A message of the run lock, as holo prints it.
    pub(super) fn notice(&mut self, notice: &Notice) {
        let line = match notice {
            Notice::Warning(text) => format!(">> {text}\n"),
            Notice::Error(text) => format!("!! {text}\n"),
            Notice::Hint(text) => format!("{text}\n"),
        };
        self.write(true, line.as_bytes());
    }

    pub(super) fn write(&mut self, to_stderr: bool, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if self.paragraphs.observe(bytes) {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(b"\n").and_then(|()| stdout.flush());
        }
        let written = if to_stderr {
            let _ = std::io::stdout().flush();
            let mut stderr = std::io::stderr().lock();
            stderr.write_all(bytes).and_then(|()| stderr.flush())
        } else {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(bytes).and_then(|()| stdout.flush())
        };
        let _ = written;
    }
}
