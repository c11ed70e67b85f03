//! Printing entities as Holo 3 does: the human report (scan and apply
//! headers) and the porcelain scan report.

use crate::output::{Output, Stream};
use crate::scan::{DEFAULT_VERB, Entity};

/// Holo 3's `PrintReport`: `VERB ID (reason)` or the bold ID, then the info
/// lines right-aligned to the verb (or to 12 columns), then a blank line.
pub fn print_report(out: &mut Output, entity: &Entity, with_action: bool) {
    let verb = with_action.then_some(entity.action_verb.as_ref());
    let info: Vec<(&str, &str)> = entity.info.iter().collect();
    let id = out.bold(Stream::Out, &entity.id);
    let text = holo_protocol::entity_text::report_header(verb, &id, &entity.action_reason, &info);
    out.write(Stream::Out, text.as_bytes());
    out.end_paragraph(Stream::Out);
}

/// Holo 3's `PrintScanReport`, the `--porcelain` form.
pub fn print_porcelain(out: &mut Output, entity: &Entity) {
    let mut text = format!("ENTITY: {}\n", entity.id);
    if !entity.action_reason.is_empty() {
        text.push_str(&format!(
            "ACTION: {} ({})\n",
            entity.action_verb, entity.action_reason
        ));
    } else if entity.action_verb != DEFAULT_VERB {
        text.push_str(&format!("ACTION: {}\n", entity.action_verb));
    }
    for source in &entity.sources {
        text.push_str(&format!("SOURCE: {source}\n"));
    }
    for (key, value) in entity.info.iter() {
        text.push_str(&format!("{key}: {value}\n"));
    }
    out.write(Stream::Out, text.as_bytes());
    out.end_paragraph(Stream::Out);
}
