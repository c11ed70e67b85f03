//! How an entity is printed, as Holo 3 prints it: the header of its report
//! and the paragraphs between reports. The driver (`holo scan`, `holo
//! apply`) and the one-off `ensure` of the SDK both print with these.

/// Holo 3's `PrintReport` header: `VERB ID (reason)`, or `ID (reason)`
/// without a verb, then the info lines right-aligned to the verb (or to 12
/// columns). `id` is as shown (the driver may make it bold).
pub fn report_header(verb: Option<&str>, id: &str, reason: &str, info: &[(&str, &str)]) -> String {
    let mut text = String::new();
    let width = match verb.filter(|verb| !verb.is_empty()) {
        Some(verb) => {
            text.push_str(verb);
            text.push(' ');
            verb.len()
        }
        None => 12,
    };
    text.push_str(id);
    if !reason.is_empty() {
        text.push_str(" (");
        text.push_str(reason);
        text.push(')');
    }
    text.push('\n');
    for (key, value) in info {
        text.push_str(&format!("{key:>width$} {value}\n"));
    }
    text
}

/// The paragraph discipline shared by stdout and stderr: a blank line
/// before the first output, and the newlines at the end of what was
/// written last, on either stream, counted so that a paragraph ends with
/// exactly one blank line.
#[derive(Debug, Default, Clone)]
pub struct Paragraphs {
    had_output: bool,
    trailing_newlines: usize,
}

impl Paragraphs {
    /// Records `bytes` (not empty) about to be written; true when the
    /// blank line before the first output goes first.
    pub fn observe(&mut self, bytes: &[u8]) -> bool {
        let first = !self.had_output;
        self.had_output = true;
        let count = bytes.iter().rev().take_while(|b| **b == b'\n').count();
        if count == bytes.len() {
            self.trailing_newlines += count;
        } else {
            self.trailing_newlines = count;
        }
        first
    }

    /// How many newlines end the paragraph (none before any output).
    pub fn missing_newlines(&self) -> usize {
        if self.had_output {
            2usize.saturating_sub(self.trailing_newlines)
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_lines_align_to_the_verb_or_to_12_columns() {
        let info = [("found in", "/a.toml"), ("with", "x")];
        assert_eq!(
            report_header(Some("Working on"), "file:/a", "", &info),
            "Working on file:/a\n  found in /a.toml\n      with x\n"
        );
        assert_eq!(
            report_header(None, "file:/a", "gone", &info[..1]),
            "file:/a (gone)\n    found in /a.toml\n"
        );
    }

    #[test]
    fn a_paragraph_ends_with_one_blank_line_across_writes() {
        let mut paragraphs = Paragraphs::default();
        assert_eq!(paragraphs.missing_newlines(), 0);
        assert!(paragraphs.observe(b"a\n"));
        assert_eq!(paragraphs.missing_newlines(), 1);
        assert!(!paragraphs.observe(b"\n"));
        assert_eq!(paragraphs.missing_newlines(), 0);
        paragraphs.observe(b"b");
        assert_eq!(paragraphs.missing_newlines(), 2);
    }
}
