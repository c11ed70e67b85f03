//! Holo 3's output discipline: one paragraph tracker shared by stdout and
//! stderr, `!!` errors and `>>` warnings, and colour only on a terminal.
//!
//! Stdout is buffered (a 10,000-entity scan would otherwise cost a syscall per
//! line) and flushed before anything goes to stderr, so `2>&1` interleaves
//! exactly as Holo 3's unbuffered writes do. It is also flushed whenever the
//! driver waits for a plugin (see `Plugin::run_streaming`), and at every line
//! on a terminal, so that output shows while it happens.

use std::io::{IsTerminal, Write};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Stream {
    Out,
    Err,
}

const BOLD_RED: &str = "\x1b[1;31m";
const BOLD_YELLOW: &str = "\x1b[1;33m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// The shared paragraph writer.
pub struct Output {
    /// Shared with the SDK's one-off, which prints entities as holo does.
    paragraphs: holo_protocol::entity_text::Paragraphs,
    stdout_buffer: Vec<u8>,
    /// Stdout is a terminal: flush at every line.
    line_buffered: bool,
    color_out: bool,
    color_err: bool,
}

impl Default for Output {
    fn default() -> Self {
        Self::new()
    }
}

impl Output {
    pub fn new() -> Self {
        let allowed = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        let terminal = std::io::stdout().is_terminal();
        Output {
            paragraphs: Default::default(),
            stdout_buffer: Vec::with_capacity(64 * 1024),
            line_buffered: terminal,
            color_out: allowed && terminal,
            color_err: allowed && std::io::stderr().is_terminal(),
        }
    }

    pub fn color(&self, stream: Stream) -> bool {
        match stream {
            Stream::Out => self.color_out,
            Stream::Err => self.color_err,
        }
    }

    fn observe(&mut self, bytes: &[u8]) {
        if self.paragraphs.observe(bytes) {
            self.stdout_buffer.push(b'\n');
        }
    }

    /// A tracked write: counts towards paragraphs.
    pub fn write(&mut self, stream: Stream, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.observe(bytes);
        self.raw(stream, bytes);
    }

    /// An untracked write (Holo 3 writes some output past its paragraph
    /// writer: diffs, `scan --short`, `Unrecognized argument`).
    pub fn raw(&mut self, stream: Stream, bytes: &[u8]) {
        match stream {
            Stream::Out => {
                self.stdout_buffer.extend_from_slice(bytes);
                if self.stdout_buffer.len() > 256 * 1024
                    || (self.line_buffered && bytes.contains(&b'\n'))
                {
                    self.flush();
                }
            }
            Stream::Err => {
                self.flush();
                let _ = std::io::stderr().write_all(bytes);
            }
        }
    }

    pub fn flush(&mut self) {
        if !self.stdout_buffer.is_empty() {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(&self.stdout_buffer);
            let _ = out.flush();
            self.stdout_buffer.clear();
        }
    }

    /// Ends the paragraph: newlines until the output ends in a blank line.
    pub fn end_paragraph(&mut self, stream: Stream) {
        for _ in 0..self.paragraphs.missing_newlines() {
            self.write(stream, b"\n");
        }
    }

    pub fn error(&mut self, stream: Stream, message: &str) {
        let line = self.styled(stream, "!! ", message, BOLD_RED);
        self.write(stream, line.as_bytes());
    }

    pub fn warn(&mut self, stream: Stream, message: &str) {
        let line = self.styled(stream, ">> ", message, BOLD_YELLOW);
        self.write(stream, line.as_bytes());
    }

    fn styled(&self, stream: Stream, prefix: &str, message: &str, color: &str) -> String {
        let message = message.strip_suffix('\n').unwrap_or(message);
        if self.color(stream) {
            format!("{color}{prefix}{message}{RESET}\n")
        } else {
            format!("{prefix}{message}\n")
        }
    }

    pub fn bold(&self, stream: Stream, text: &str) -> String {
        if self.color(stream) {
            format!("{BOLD}{text}{RESET}")
        } else {
            text.to_string()
        }
    }

    /// Colours a complete line of plugin stderr as Holo 3 does.
    pub fn colorize_plugin_line(&self, line: &[u8]) -> Vec<u8> {
        if !self.color_err {
            return line.to_vec();
        }
        let color = if line.starts_with(b"!! ") {
            BOLD_RED
        } else if line.starts_with(b">> ") {
            BOLD_YELLOW
        } else {
            return line.to_vec();
        };
        let (body, newline) = match line.strip_suffix(b"\n") {
            Some(body) => (body, "\n"),
            None => (line, ""),
        };
        let mut out = Vec::with_capacity(line.len() + 12);
        out.extend_from_slice(color.as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(RESET.as_bytes());
        out.extend_from_slice(newline.as_bytes());
        out
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        self.flush();
    }
}
